/* `timeline convert` on binary snapshots: formats, outputs, and errors a
 * user gets for bad input (and `timeline slices` for a directory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/test_support.h"

static const char *cli;
static const char *snapshot; /* a binary snapshot written by `timeline demo` */

static int setup(void **state)
{
	(void)state;
	cli = tl_test_cli();
	if (!cli)
		return -1;
	static char path[4096]; /* tl_test_path reuses its buffers */
	snprintf(path, sizeof path, "%s", tl_test_path("convert-in", ".tlsnap"));
	snapshot = path;
	return tl_test_run("%s demo --seconds 0.1 -o %s >/dev/null", cli, snapshot) == 0 ? 0 : -1;
}

static void test_convert_writes_valid_json(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert", ".json");
	assert_int_equal(tl_test_run("%s convert %s -o %s 2>/dev/null", cli, snapshot, out), 0);
	assert_int_equal(tl_test_run("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
				     "assert d[\"traceEvents\"]' %s",
				     out),
			 0);
}

static void test_convert_infers_ftrace_from_the_extension(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert", ".txt");
	assert_int_equal(tl_test_run("%s convert %s -o %s 2>/dev/null", cli, snapshot, out), 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_true(strncmp(text, "# tracer: nop\n", 14) == 0);
	assert_non_null(strstr(text, ": tracing_mark_write: B|"));
	free(text);
}

static void test_convert_format_option_wins_over_the_extension(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert", ".json");
	assert_int_equal(
	    tl_test_run("%s convert %s -o %s --format ftrace 2>/dev/null", cli, snapshot, out), 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_true(strncmp(text, "# tracer: nop\n", 14) == 0);
	free(text);
}

static void test_convert_to_standard_output(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert-stdout", ".json");
	assert_int_equal(tl_test_run("%s convert %s -o - > %s 2>/dev/null", cli, snapshot, out), 0);
	assert_int_equal(
	    tl_test_run("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s", out), 0);
}

static void test_convert_names_the_file_of_a_bad_input(void **state)
{
	(void)state;
	const char *bad = tl_test_path("not-a-snapshot", ".bin");
	const char *err = tl_test_path("convert-err", ".txt");
	const char *out = tl_test_path("convert-unused", ".json");
	FILE *f = fopen(bad, "w");
	assert_non_null(f);
	fputs("\x01\x02 this is not a trace of any kind\x03", f);
	fclose(f);
	int rc = tl_test_run("%s convert %s -o %s 2> %s", cli, bad, out, err);
	assert_int_equal(rc, 1);
	char *msg = tl_test_read_file(err, NULL);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "timeline convert: "));
	assert_non_null(strstr(msg, bad));
	assert_int_equal(tl_test_count(msg, "\n"), 1); /* one line */
	free(msg);
}

static void test_convert_missing_input_is_an_error(void **state)
{
	(void)state;
	const char *err = tl_test_path("convert-err", ".txt");
	assert_int_equal(tl_test_run("%s convert /nonexistent/trace.tlsnap -o - 2> %s", cli, err), 1);
	char *msg = tl_test_read_file(err, NULL);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "/nonexistent/trace.tlsnap"));
	free(msg);
}

static void test_convert_keeps_what_a_truncated_snapshot_holds(void **state)
{
	(void)state;
	const char *cut = tl_test_path("convert-cut", ".tlsnap");
	const char *out = tl_test_path("convert-cut", ".json");
	const char *err = tl_test_path("convert-cut-err", ".txt");
	size_t len = 0;
	char *data = tl_test_read_file(snapshot, &len);
	assert_non_null(data);
	FILE *f = fopen(cut, "wb");
	assert_non_null(f);
	fwrite(data, 1, len * 2 / 3, f);
	fclose(f);
	free(data);
	assert_int_equal(tl_test_run("%s convert %s -o %s 2> %s", cli, cut, out, err), 0);
	char *msg = tl_test_read_file(err, NULL);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "warning"));
	free(msg);
	assert_int_equal(
	    tl_test_run("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s", out), 0);
}

/* Runs `timeline ARGS` with stderr to a file; its status, *msg what it said. */
static int run_cli_stderr(char **msg, const char *args)
{
	const char *err = tl_test_path("cli-err", ".txt");
	int rc = tl_test_run("%s %s 2> %s", cli, args, err);
	*msg = tl_test_read_file(err, NULL);
	assert_non_null(*msg);
	return rc;
}

static void test_convert_of_a_directory_says_it_is_a_directory(void **state)
{
	(void)state;
	const char *dir = tl_test_path("convert-dir", "");
	assert_int_equal(mkdir(dir, 0755), 0);
	char args[4096], *msg;
	snprintf(args, sizeof args, "convert %s -o -", dir);
	assert_int_equal(run_cli_stderr(&msg, args), 1);
	char expected[4096];
	snprintf(expected, sizeof expected, "timeline convert: %s: is a directory\n", dir);
	assert_string_equal(msg, expected);
	free(msg);
}

static void test_slices_of_a_directory_says_it_is_a_directory(void **state)
{
	(void)state;
	const char *dir = tl_test_path("slices-dir", "");
	assert_int_equal(mkdir(dir, 0755), 0);
	char args[4096], *msg, expected[4096];
	snprintf(args, sizeof args, "slices %s", dir);
	assert_int_equal(run_cli_stderr(&msg, args), 1);
	snprintf(expected, sizeof expected, "timeline slices: %s: is a directory\n", dir);
	assert_string_equal(msg, expected);
	free(msg);
	snprintf(args, sizeof args, "slices --markers %s", dir);
	assert_int_equal(run_cli_stderr(&msg, args), 1);
	assert_string_equal(msg, expected);
	free(msg);
}

static void test_convert_to_a_directory_is_an_error(void **state)
{
	(void)state;
	const char *dir = tl_test_path("convert-out-dir", "");
	assert_int_equal(mkdir(dir, 0755), 0);
	char args[4096], *msg;
	snprintf(args, sizeof args, "convert %s -o %s", snapshot, dir);
	assert_int_equal(run_cli_stderr(&msg, args), 1);
	assert_non_null(strstr(msg, "Is a directory"));
	assert_int_equal(tl_test_count(msg, "\n"), 1);
	free(msg);
}

static void test_convert_to_a_device_writes_in_place(void **state)
{
	(void)state;
	char args[4096], *msg;
	snprintf(args, sizeof args, "convert %s -o /dev/null", snapshot);
	assert_int_equal(run_cli_stderr(&msg, args), 0);
	free(msg);
	struct stat st;
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

static void test_convert_usage_errors_exit_2(void **state)
{
	(void)state;
	assert_int_equal(tl_test_run("%s convert 2>/dev/null", cli), 2);
	assert_int_equal(tl_test_run("%s convert %s 2>/dev/null", cli, snapshot), 2); /* no -o */
	assert_int_equal(tl_test_run("%s convert %s -o x --format xml 2>/dev/null", cli, snapshot), 2);
	assert_int_equal(tl_test_run("%s convert --help >/dev/null", cli), 0);
}

static void test_convert_assume_clock_leaves_a_named_clock_alone(void **state)
{
	(void)state;
	/* the demo's snapshot is on the boot clock; its JSON says so */
	const char *named = tl_test_path("convert-named-clock", ".json");
	const char *out = tl_test_path("convert-named-clock-again", ".json");
	assert_int_equal(tl_test_run("%s convert %s -o %s 2>/dev/null", cli, snapshot, named), 0);
	assert_int_equal(
	    tl_test_run("%s convert %s --assume-clock mono -o %s 2>/dev/null", cli, named, out), 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"clock\":\"boot\",\"clock_id\":7,"));
	free(text);
}

static void test_convert_assume_clock_takes_boot_or_mono_only(void **state)
{
	(void)state;
	const char *err = tl_test_path("convert-assume-clock", ".err");
	assert_int_equal(tl_test_run("%s convert %s -o - --assume-clock local >/dev/null 2>%s", cli,
	                             snapshot, err),
	                 2);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "--assume-clock: expected boot or mono, got 'local'"));
	free(text);
}

int main(void)
{
	if (!tl_test_cli()) {
		printf("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_convert_writes_valid_json),
		cmocka_unit_test(test_convert_infers_ftrace_from_the_extension),
		cmocka_unit_test(test_convert_format_option_wins_over_the_extension),
		cmocka_unit_test(test_convert_to_standard_output),
		cmocka_unit_test(test_convert_names_the_file_of_a_bad_input),
		cmocka_unit_test(test_convert_missing_input_is_an_error),
		cmocka_unit_test(test_convert_keeps_what_a_truncated_snapshot_holds),
		cmocka_unit_test(test_convert_of_a_directory_says_it_is_a_directory),
		cmocka_unit_test(test_slices_of_a_directory_says_it_is_a_directory),
		cmocka_unit_test(test_convert_to_a_directory_is_an_error),
		cmocka_unit_test(test_convert_to_a_device_writes_in_place),
		cmocka_unit_test(test_convert_usage_errors_exit_2),
		cmocka_unit_test(test_convert_assume_clock_leaves_a_named_clock_alone),
		cmocka_unit_test(test_convert_assume_clock_takes_boot_or_mono_only),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
