/*
 * Every file the CLI writes, as an attacker would meet it: another user
 * (nobody) plants a symbolic link to a file of root's, a dangling link into
 * a directory of root's, a FIFO or a directory at the output name, in a
 * directory of its own (where the kernel's protected_symlinks does not
 * apply), and root runs the command. Each command refuses in one line with
 * exit 1, at once, and writes nothing through what was planted. What is
 * written is 0600 unless --mode asks otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.h"

#define TRACING_DIR "/sys/kernel/tracing"
#define FRAMES TL_SOURCE_DIR "/tests/fixtures/sf_latency/janky.txt"

static char root_dir[4096]; /* root's, 0700: the victim and a dangling link's target */
static char user_dir[4096]; /* nobody's, 0755: where the output is named */
static char victim[4200];   /* root's private file */
static char input[4200];    /* a small trace to convert */
static char input2[4200];   /* another, to merge with it */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	if (!tl_test_cli()) {
		print_message("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		return -1;
	}
	snprintf(root_dir, sizeof root_dir, "%s", tl_test_path("outputs-root", ""));
	assert_int_equal(mkdir(root_dir, 0700), 0);
	snprintf(user_dir, sizeof user_dir, "%s", tl_test_path("outputs-user", ""));
	assert_int_equal(mkdir(user_dir, 0755), 0);
	snprintf(victim, sizeof victim, "%s/victim", root_dir);
	write_text(victim, "root's data\n");
	assert_int_equal(chmod(victim, 0600), 0);
	snprintf(input, sizeof input, "%s/in.json", root_dir);
	write_text(input, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2,"
	                  "\"pid\":1,\"tid\":1}]}\n");
	snprintf(input2, sizeof input2, "%s/in2.json", root_dir);
	write_text(input2, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"b\",\"ts\":5,\"dur\":2,"
	                   "\"pid\":2,\"tid\":2}]}\n");
	return 0;
}

/* Whether this process may act as another user: root, with setpriv. */
static bool as_root_with_setpriv(void)
{
	return geteuid() == 0 && tl_test_run("command -v setpriv >/dev/null") == 0;
}

enum planted { LINK_TO_VICTIM, DANGLING_LINK, FIFO, DIRECTORY };

static const char *planted_name(enum planted what)
{
	static const char *names[] = {"a link to root's file", "a dangling link", "a FIFO",
	                              "a directory"};
	return names[what];
}

/* Plants `what` at user_dir/name, as nobody when this is root with setpriv
 * (chowning user_dir to nobody first), else as this user. Returns the path. */
static const char *plant(enum planted what, const char *name)
{
	static char path[4300];
	snprintf(path, sizeof path, "%s/%s", user_dir, name);
	const char *as = "";
	if (as_root_with_setpriv()) {
		assert_int_equal(chown(user_dir, 65534, 65534), 0);
		as = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";
	}
	char dangling[4300];
	snprintf(dangling, sizeof dangling, "%s/created-through-the-link", root_dir);
	switch (what) {
	case LINK_TO_VICTIM:
		assert_int_equal(tl_test_run("%sln -s '%s' '%s'", as, victim, path), 0);
		break;
	case DANGLING_LINK:
		assert_int_equal(tl_test_run("%sln -s '%s' '%s'", as, dangling, path), 0);
		break;
	case FIFO:
		assert_int_equal(tl_test_run("%smkfifo -m 666 '%s'", as, path), 0);
		break;
	case DIRECTORY:
		assert_int_equal(tl_test_run("%smkdir '%s'", as, path), 0);
		break;
	}
	return path;
}

/* Runs `timeline ARGS` (at most 30 s: a writer blocked on a FIFO is a
 * failure, not a hang) and checks the refusal: exit 1, one line naming the
 * output, nothing written through what was planted. */
static void assert_refused(enum planted what, const char *output, const char *args)
{
	char *err = NULL;
	int rc = tl_test_run_output(NULL, &err, "timeout 30 '%s' %s", tl_test_cli(), args);
	print_message("%s: exit %d: %s", planted_name(what), rc, err ? err : "");
	assert_int_equal(rc, 1);
	/* one line says it (merge says first how it aligns its inputs) */
	assert_int_equal(tl_test_count(err, output), 1);
	assert_non_null(strstr(err, "cannot open for writing") ? err : strstr(err, "cannot write"));
	free(err);
	char *data = tl_test_read_file(victim, NULL);
	assert_string_equal(data, "root's data\n");
	free(data);
	char dangling[4300];
	snprintf(dangling, sizeof dangling, "%s/created-through-the-link", root_dir);
	struct stat st;
	assert_int_equal(lstat(dangling, &st), -1);
	assert_int_equal(lstat(output, &st), 0); /* what was planted is still there */
	assert_false(S_ISREG(st.st_mode));
}

/* Every planted kind at the output of one command. args_fmt has one %s, the
 * output's path. */
static void check_every_kind(const char *name, const char *args_fmt)
{
	for (int what = LINK_TO_VICTIM; what <= DIRECTORY; what++) {
		char leaf[64], args[20000];
		snprintf(leaf, sizeof leaf, "%d-%s", what, name);
		const char *out = plant((enum planted)what, leaf);
		snprintf(args, sizeof args, args_fmt, out);
		assert_refused((enum planted)what, out, args);
	}
}

static void test_convert_writes_through_nothing_planted_at_its_output(void **state)
{
	(void)state;
	char fmt[4400];
	snprintf(fmt, sizeof fmt, "convert '%s' -o '%%s'", input);
	check_every_kind("out.json", fmt);
}

static void test_merge_writes_through_nothing_planted_at_its_output(void **state)
{
	(void)state;
	char fmt[9000];
	snprintf(fmt, sizeof fmt, "merge --assume-clock boot '%s' '%s' -o '%%s'", input, input2);
	check_every_kind("merged.json", fmt);
}

static void test_fps_writes_through_nothing_planted_at_its_chart(void **state)
{
	(void)state;
	check_every_kind("chart.svg", "fps '" FRAMES "' --plot '%s' >/dev/null");
}

static void test_demo_writes_through_nothing_planted_at_its_output(void **state)
{
	(void)state;
	check_every_kind("demo.json", "demo --seconds 0.05 -o '%s' >/dev/null");
}

static void test_record_writes_through_nothing_planted_at_its_output(void **state)
{
	(void)state;
#ifndef TL_HAVE_TRACEFS
	print_message("skipped: built without libtracefs: the CLI has no record\n");
	skip();
#endif
	if (geteuid() != 0) {
		print_message("skipped: timeline record needs root\n");
		skip();
	}
	if (tl_test_emulator()) {
		print_message("skipped: under %s: record starts programs of the target's kind\n",
		              tl_test_emulator());
		skip();
	}
	struct stat st;
	if (stat(TRACING_DIR "/instances", &st) != 0 &&
	    mount("nodev", TRACING_DIR, "tracefs", 0, NULL) != 0) {
		print_message("skipped: tracefs is not mounted and cannot be: %s\n",
		              strerror(errno));
		skip();
	}
	check_every_kind("capture.txt", "record --duration 0.1 -o '%s'");
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_outputs_are_private_unless_a_mode_is_asked_for(void **state)
{
	(void)state;
	char out[4300];
	snprintf(out, sizeof out, "%s/private.json", root_dir);
	assert_int_equal(tl_test_run_cli(NULL, NULL, "convert '%s' -o '%s'", input, out), 0);
	assert_int_equal(mode_of(out), 0600);
	assert_int_equal(
	    tl_test_run_cli(NULL, NULL, "convert '%s' -o '%s' --mode 0644", input, out), 0);
	assert_int_equal(mode_of(out), 0644);
	snprintf(out, sizeof out, "%s/merged.json", root_dir);
	assert_int_equal(tl_test_run_cli(NULL, NULL,
	                                 "merge --assume-clock boot '%s' '%s' -o '%s' --mode 640",
	                                 input, input2, out),
	                 0);
	assert_int_equal(mode_of(out), 0640);
	snprintf(out, sizeof out, "%s/chart.svg", root_dir);
	assert_int_equal(tl_test_run_cli(NULL, NULL, "fps '%s' --plot '%s'", FRAMES, out), 0);
	assert_int_equal(mode_of(out), 0600);
	snprintf(out, sizeof out, "%s/demo.json", root_dir);
	assert_int_equal(tl_test_run_cli(NULL, NULL, "demo --seconds 0.05 -o '%s'", out), 0);
	assert_int_equal(mode_of(out), 0600);
}

static void test_a_bad_mode_is_a_usage_error(void **state)
{
	(void)state;
	const char *bad[] = {"999", "01777", "", "0644x", "-1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		int rc =
		    tl_test_run_cli(NULL, &err, "convert '%s' -o - --mode '%s'", input, bad[i]);
		print_message("--mode '%s': exit %d: %s", bad[i], rc, err);
		assert_int_equal(rc, 2);
		assert_non_null(strstr(err, "--mode"));
		assert_int_equal(tl_test_count(err, "\n"), 1);
		free(err);
	}
}

static void test_the_null_device_and_standard_output_stay_writable(void **state)
{
	(void)state;
	assert_int_equal(tl_test_run_cli(NULL, NULL, "convert '%s' -o /dev/null", input), 0);
	char *out = NULL;
	assert_int_equal(tl_test_run_cli(&out, NULL, "convert '%s' -o -", input), 0);
	assert_non_null(strstr(out, "traceEvents"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_convert_writes_through_nothing_planted_at_its_output),
	    cmocka_unit_test(test_merge_writes_through_nothing_planted_at_its_output),
	    cmocka_unit_test(test_fps_writes_through_nothing_planted_at_its_chart),
	    cmocka_unit_test(test_demo_writes_through_nothing_planted_at_its_output),
	    cmocka_unit_test(test_record_writes_through_nothing_planted_at_its_output),
	    cmocka_unit_test(test_outputs_are_private_unless_a_mode_is_asked_for),
	    cmocka_unit_test(test_a_bad_mode_is_a_usage_error),
	    cmocka_unit_test(test_the_null_device_and_standard_output_stay_writable),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
