/*
 * No settings from the environment of a set-uid caller: a program linked
 * with the library, installed set-uid root and run by another user with
 * hostile TIMELINE_* variables, reads none of them (secure_getenv), so it
 * cannot be made to write a file the user names. The same program without
 * the set-uid bit takes them (the control: the test would see a regression).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.h"

#ifndef TL_SECURE_CHILD
#error "TL_SECURE_CHILD: the path of tests/support/secure_child.c's program"
#endif

static char dir[4096], child[4200], victim[4200];

/* A root-owned directory anyone may enter, with a copy of the child in it
 * (set-uid root when setuid is true) and a root-owned private file. */
static void prepare(bool setuid)
{
	snprintf(dir, sizeof dir, "%s", tl_test_path("secure-env", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(child, sizeof child, "%s/secure_child", dir);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	assert_int_equal(tl_test_run("cp '%s' '%s'", TL_SECURE_CHILD, child), 0);
	assert_int_equal(chmod(child, setuid ? 04755 : 0755), 0);
	int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "root's data\n", 12), 12);
	close(fd);
}

/* Runs the child as nobody with hostile settings; returns its output. */
static char *run_as_nobody(const char *file)
{
	char out[4200];
	snprintf(out, sizeof out, "%s/out.txt", dir);
	int rc = tl_test_run("setpriv --reuid=nobody --regid=nogroup --clear-groups "
	                     "env TIMELINE_RECORDER=file TIMELINE_FILE='%s' "
	                     "TIMELINE_FILE_MODE=0666 TIMELINE_BUFFER_KB=16 '%s' >'%s' 2>&1",
	                     file, child, out);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	print_message("exit %d: %s", rc, text);
	return text;
}

static void skip_unless_possible(void)
{
	if (geteuid() != 0) {
		print_message("skipped: installing a set-uid root program needs root\n");
		skip();
	}
	if (getenv("TL_TEST_EMULATOR")) {
		print_message("skipped: under an emulator the kernel runs the emulator, which is "
		              "not set-uid\n");
		skip();
	}
	if (tl_test_run("command -v setpriv >/dev/null") != 0) {
		print_message("skipped: no setpriv to run as another user\n");
		skip();
	}
}

static void test_a_set_uid_program_reads_no_setting_from_the_environment(void **state)
{
	(void)state;
	skip_unless_possible();
	prepare(true);
	char *text = run_as_nobody(victim);
	if (strstr(text, "secure=0")) {
		free(text);
		print_message("skipped: the set-uid bit has no effect here (a nosuid mount)\n");
		skip();
	}
	assert_non_null(strstr(text, "secure=1 init=0 recorder=ring"));
	assert_non_null(strstr(text, "TIMELINE_* environment is ignored"));
	free(text);
	char *data = tl_test_read_file(victim, NULL);
	assert_string_equal(data, "root's data\n");
	free(data);
}

static void test_the_same_program_without_the_bit_takes_the_settings(void **state)
{
	(void)state;
	skip_unless_possible();
	prepare(false);
	char file[4200];
	snprintf(file, sizeof file, "%s/mine", dir);
	assert_int_equal(mkdir(file, 0777), 0);
	assert_int_equal(chmod(file, 0777), 0);
	snprintf(file, sizeof file, "%s/mine/trace.tl", dir);
	char *text = run_as_nobody(file);
	assert_non_null(strstr(text, "secure=0 init=0 recorder=file"));
	assert_null(strstr(text, "ignored"));
	free(text);
	struct stat st;
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0666); /* TIMELINE_FILE_MODE taken too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_set_uid_program_reads_no_setting_from_the_environment),
	    cmocka_unit_test(test_the_same_program_without_the_bit_takes_the_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
