/*
 * Files written whole or not at all (recorder/atomic_file.h): what appears
 * under the final name on success and on failure, where the temporary file
 * goes, and the paths written in place. A full disk is in test_faults.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/types.h>

#include "support/test_support.h"

#include "recorder/atomic_file.h"

static int write_hello(int fd, void *ctx)
{
	(void)ctx;
	return tl_write_full(fd, "hello\n", 6);
}

/* Writes half of the data, then fails as a full disk would. */
static int write_then_fail(int fd, void *ctx)
{
	(void)ctx;
	int rc = tl_write_full(fd, "partial", 7);
	return rc ? rc : -ENOSPC;
}

static char *fresh_dir(void)
{
	static char dir[4096];
	snprintf(dir, sizeof dir, "%s", tl_test_path("atomic", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	return dir;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_write_creates_the_file_with_the_data(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", fresh_dir());
	assert_int_equal(tl_atomic_file_write(path, write_hello, NULL), 0);
	char *text = tl_test_read_file(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "hello\n");
	free(text);
}

static void test_write_leaves_only_the_final_name(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	assert_int_equal(tl_atomic_file_write(path, write_hello, NULL), 0);
	assert_string_equal(tl_test_dir_entries(dir), "out.txt");
}

static void test_data_goes_to_a_hidden_temporary_file_in_the_same_directory(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	struct tl_atomic_file f;
	assert_int_equal(tl_atomic_file_open(&f, path), 0);
	assert_false(f.in_place);
	const char *names = tl_test_dir_entries(dir);
	print_message("while writing: %s\n", names);
	assert_true(strncmp(names, ".out.txt.tmp-", 13) == 0);
	assert_null(strchr(names, ' ')); /* one file, and not under the final name */
	assert_int_equal(tl_write_full(f.fd, "x", 1), 0);
	assert_int_equal(tl_atomic_file_commit(&f), 0);
	assert_string_equal(tl_test_dir_entries(dir), "out.txt");
}

static void test_failed_write_leaves_no_file(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	assert_int_equal(tl_atomic_file_write(path, write_then_fail, NULL), -ENOSPC);
	assert_string_equal(tl_test_dir_entries(dir), "");
}

static void test_failed_write_keeps_the_previous_file(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	write_file(path, "previous\n");
	assert_int_equal(tl_atomic_file_write(path, write_then_fail, NULL), -ENOSPC);
	char *text = tl_test_read_file(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "previous\n");
	free(text);
	assert_string_equal(tl_test_dir_entries(dir), "out.txt");
}

static void test_abort_removes_the_temporary_file(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	struct tl_atomic_file f;
	assert_int_equal(tl_atomic_file_open(&f, path), 0);
	assert_int_equal(tl_write_full(f.fd, "x", 1), 0);
	tl_atomic_file_abort(&f);
	assert_string_equal(tl_test_dir_entries(dir), "");
	tl_atomic_file_abort(&f); /* twice is harmless */
}

/* The directory holds these two entries and nothing else, in any order. */
static void assert_two_entries(const char *dir, const char *a, const char *b)
{
	char one[512], other[512];
	snprintf(one, sizeof one, "%s %s", a, b);
	snprintf(other, sizeof other, "%s %s", b, a);
	const char *names = tl_test_dir_entries(dir);
	if (strcmp(names, one) != 0)
		assert_string_equal(names, other);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_a_new_file_is_private_whatever_the_umask(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", fresh_dir());
	mode_t old = umask(0);
	int rc = tl_atomic_file_write(path, write_hello, NULL);
	umask(old);
	assert_int_equal(rc, 0);
	assert_int_equal(mode_of(path), 0600);
}

static void test_replacing_a_file_gives_the_mode_asked_for_not_its_own(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", fresh_dir());
	write_file(path, "previous\n");
	assert_int_equal(chmod(path, 0666), 0); /* planted, readable by all */
	assert_int_equal(tl_atomic_file_write(path, write_hello, NULL), 0);
	assert_int_equal(mode_of(path), 0600);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 6);
}

static void test_file_mode_set_gives_that_mode_exactly(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", fresh_dir());
	assert_int_equal(tl_file_mode_set(0644), 0);
	mode_t old = umask(077);
	int rc = tl_atomic_file_write(path, write_hello, NULL);
	umask(old);
	assert_int_equal(tl_file_mode_set(TL_FILE_MODE_DEFAULT), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(mode_of(path), 0644);
	assert_int_equal(tl_file_mode_set(01777), -EINVAL);
	assert_int_equal(tl_file_mode(), TL_FILE_MODE_DEFAULT);
}

static void test_directory_is_eisdir(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	assert_int_equal(tl_atomic_file_write(dir, write_hello, NULL), -EISDIR);
	assert_string_equal(tl_test_dir_entries(dir), "");
}

static void test_missing_directory_is_enoent(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/missing/out.txt", fresh_dir());
	assert_int_equal(tl_atomic_file_write(path, write_hello, NULL), -ENOENT);
}

static void test_the_null_device_is_written_in_place(void **state)
{
	(void)state;
	struct tl_atomic_file f;
	assert_int_equal(tl_atomic_file_open(&f, "/dev/null"), 0);
	assert_true(f.in_place);
	assert_int_equal(tl_write_full(f.fd, "x", 1), 0);
	assert_int_equal(tl_atomic_file_commit(&f), 0);
	struct stat st;
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

static void test_another_device_is_refused(void **state)
{
	(void)state;
	struct tl_atomic_file f;
	assert_int_equal(tl_atomic_file_open(&f, "/dev/zero"), -ENXIO);
	assert_int_equal(f.fd, -1);
	assert_int_equal(tl_atomic_file_write("/dev/full", write_hello, NULL), -ENXIO);
}

static void test_a_symbolic_link_is_refused_and_its_target_untouched(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char target[4200], link[4200];
	snprintf(target, sizeof target, "%s/target.txt", dir);
	snprintf(link, sizeof link, "%s/link.txt", dir);
	write_file(target, "previous\n");
	assert_int_equal(symlink("target.txt", link), 0);
	assert_int_equal(tl_atomic_file_write(link, write_hello, NULL), -ELOOP);
	char *text = tl_test_read_file(target, NULL);
	assert_non_null(text);
	assert_string_equal(text, "previous\n");
	free(text);
	assert_two_entries(dir, "link.txt", "target.txt");
}

static void test_a_dangling_link_is_refused_and_nothing_created(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char link[4200];
	snprintf(link, sizeof link, "%s/link.txt", dir);
	assert_int_equal(symlink("nowhere.txt", link), 0);
	assert_int_equal(tl_atomic_file_write(link, write_hello, NULL), -ELOOP);
	assert_string_equal(tl_test_dir_entries(dir), "link.txt");
}

static void test_a_fifo_is_refused_without_blocking(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char fifo[4200];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10); /* a writer that opened it would block here, with no reader */
	int rc = tl_atomic_file_write(fifo, write_hello, NULL);
	alarm(0);
	assert_int_equal(rc, -ENXIO);
	assert_string_equal(tl_test_dir_entries(dir), "fifo");
}

static void test_a_link_planted_while_writing_is_replaced_not_followed(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200], target[4200];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	snprintf(target, sizeof target, "%s/target.txt", dir);
	write_file(target, "previous\n");
	struct tl_atomic_file f;
	assert_int_equal(tl_atomic_file_open(&f, path), 0);
	assert_int_equal(symlink("target.txt", path), 0);
	assert_int_equal(tl_write_full(f.fd, "hello\n", 6), 0);
	assert_int_equal(tl_atomic_file_commit(&f), 0);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	char *text = tl_test_read_file(target, NULL);
	assert_string_equal(text, "previous\n");
	free(text);
}

static void test_a_fresh_file_is_under_its_name_at_once(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char path[4200];
	snprintf(path, sizeof path, "%s/stream.tl", dir);
	write_file(path, "an older file\n");
	int fd = tl_fresh_file_open(path);
	assert_true(fd >= 0);
	assert_string_equal(tl_test_dir_entries(dir), "stream.tl");
	assert_int_equal(tl_write_full(fd, "x", 1), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
}

static void test_a_fresh_file_refuses_what_the_atomic_file_refuses(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char link[4200], fifo[4200];
	snprintf(link, sizeof link, "%s/link.tl", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo.tl", dir);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(tl_fresh_file_open(link), -ELOOP);
	assert_int_equal(tl_fresh_file_open(fifo), -ENXIO);
	assert_int_equal(tl_fresh_file_open(dir), -EISDIR);
	assert_two_entries(dir, "fifo.tl", "link.tl");
}

static void test_refusals_are_said_in_words(void **state)
{
	(void)state;
	assert_non_null(strstr(tl_atomic_file_strerror(-ELOOP), "symbolic link"));
	assert_non_null(strstr(tl_atomic_file_strerror(-ENXIO), "not a regular file"));
	assert_string_equal(tl_atomic_file_strerror(-ENOENT), strerror(ENOENT));
	assert_non_null(strstr(tl_private_directory_strerror(-EPERM), "not private"));
}

static void test_a_private_directory_is_made_0700(void **state)
{
	(void)state;
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/dumps", fresh_dir());
	mode_t old = umask(0);
	int rc = tl_private_directory(dir);
	umask(old);
	assert_int_equal(rc, 0);
	assert_int_equal(mode_of(dir), 0700);
	assert_int_equal(tl_private_directory(dir), 0); /* again: it is ours */
}

static void test_a_directory_others_may_write_is_not_private(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	assert_int_equal(chmod(dir, 01777), 0); /* as /tmp is */
	assert_int_equal(tl_private_directory(dir), -EPERM);
	assert_int_equal(chmod(dir, 0775), 0);
	assert_int_equal(tl_private_directory(dir), -EPERM);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(tl_private_directory(dir), 0);
}

static void test_a_directory_of_another_user_is_not_private(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: giving a directory to another user needs root\n");
		skip();
	}
	const char *dir = fresh_dir();
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_equal(tl_private_directory(dir), -EPERM);
}

static void test_a_link_to_a_directory_is_not_private(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char link[4200], file[4200];
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(file, sizeof file, "%s/file", dir);
	assert_int_equal(symlink(".", link), 0);
	write_file(file, "x");
	assert_int_equal(tl_private_directory(link), -ELOOP);
	assert_int_equal(tl_private_directory(file), -ENOTDIR);
}

static void test_write_full_reports_the_errno(void **state)
{
	(void)state;
	errno = 1234;
	assert_int_equal(tl_write_full(-1, "x", 1), -EBADF);
	assert_int_equal(errno, 1234);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_creates_the_file_with_the_data),
	    cmocka_unit_test(test_write_leaves_only_the_final_name),
	    cmocka_unit_test(test_data_goes_to_a_hidden_temporary_file_in_the_same_directory),
	    cmocka_unit_test(test_failed_write_leaves_no_file),
	    cmocka_unit_test(test_failed_write_keeps_the_previous_file),
	    cmocka_unit_test(test_abort_removes_the_temporary_file),
	    cmocka_unit_test(test_a_new_file_is_private_whatever_the_umask),
	    cmocka_unit_test(test_replacing_a_file_gives_the_mode_asked_for_not_its_own),
	    cmocka_unit_test(test_file_mode_set_gives_that_mode_exactly),
	    cmocka_unit_test(test_directory_is_eisdir),
	    cmocka_unit_test(test_missing_directory_is_enoent),
	    cmocka_unit_test(test_the_null_device_is_written_in_place),
	    cmocka_unit_test(test_another_device_is_refused),
	    cmocka_unit_test(test_a_symbolic_link_is_refused_and_its_target_untouched),
	    cmocka_unit_test(test_a_dangling_link_is_refused_and_nothing_created),
	    cmocka_unit_test(test_a_fifo_is_refused_without_blocking),
	    cmocka_unit_test(test_a_link_planted_while_writing_is_replaced_not_followed),
	    cmocka_unit_test(test_a_fresh_file_is_under_its_name_at_once),
	    cmocka_unit_test(test_a_fresh_file_refuses_what_the_atomic_file_refuses),
	    cmocka_unit_test(test_refusals_are_said_in_words),
	    cmocka_unit_test(test_a_private_directory_is_made_0700),
	    cmocka_unit_test(test_a_directory_others_may_write_is_not_private),
	    cmocka_unit_test(test_a_directory_of_another_user_is_not_private),
	    cmocka_unit_test(test_a_link_to_a_directory_is_not_private),
	    cmocka_unit_test(test_write_full_reports_the_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
