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

static void test_replacing_a_file_keeps_its_mode(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/out.txt", fresh_dir());
	write_file(path, "previous\n");
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(tl_atomic_file_write(path, write_hello, NULL), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 6);
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

static void test_device_is_written_in_place(void **state)
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

static void test_symbolic_link_is_written_through(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	char target[4200], link[4200];
	snprintf(target, sizeof target, "%s/target.txt", dir);
	snprintf(link, sizeof link, "%s/link.txt", dir);
	write_file(target, "previous\n");
	assert_int_equal(symlink("target.txt", link), 0);
	assert_int_equal(tl_atomic_file_write(link, write_hello, NULL), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	char *text = tl_test_read_file(target, NULL);
	assert_non_null(text);
	assert_string_equal(text, "hello\n");
	free(text);
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
	    cmocka_unit_test(test_replacing_a_file_keeps_its_mode),
	    cmocka_unit_test(test_directory_is_eisdir),
	    cmocka_unit_test(test_missing_directory_is_enoent),
	    cmocka_unit_test(test_device_is_written_in_place),
	    cmocka_unit_test(test_symbolic_link_is_written_through),
	    cmocka_unit_test(test_write_full_reports_the_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
