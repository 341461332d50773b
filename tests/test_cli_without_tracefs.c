/*
 * The CLI of a build without libtracefs (TIMELINE_WITH_TRACEFS=OFF): it has
 * no `record`, leaves it out of --help, and says why when it is invoked.
 * Built only in that configuration; test_cli_record tests `record` itself.
 */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cli;

/* Runs `timeline ARGS`; its standard output and error, read back, in *out
 * and *err. Returns the exit status. */
static int cli_run(const char *args, char **out, char **err)
{
	char out_log[512], err_log[512];
	snprintf(out_log, sizeof out_log, "%s", tl_test_path("no-tracefs", ".stdout"));
	snprintf(err_log, sizeof err_log, "%s", tl_test_path("no-tracefs", ".stderr"));
	int status = tl_test_run("'%s' %s >'%s' 2>'%s'", cli, args, out_log, err_log);
	*out = tl_test_read_file(out_log, NULL);
	*err = tl_test_read_file(err_log, NULL);
	assert_non_null(*out);
	assert_non_null(*err);
	return status;
}

static void test_record_says_it_was_built_without_libtracefs(void **state)
{
	(void)state;
	char *out, *err, args[600];
	snprintf(args, sizeof args, "record -o '%s' -- true", tl_test_path("no-tracefs", ".txt"));
	assert_int_equal(cli_run(args, &out, &err), 1);
	assert_string_equal(err, "timeline record: not available: this timeline was built without "
	                         "libtracefs (TIMELINE_WITH_TRACEFS=OFF)\n");
	assert_string_equal(out, "");
	free(out);
	free(err);
}

static void test_help_leaves_record_out(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(cli_run("--help", &out, &err), 0);
	assert_non_null(strstr(out, "\n  convert "));
	assert_null(strstr(out, "\n  record "));
	free(out);
	free(err);
}

int main(void)
{
	cli = tl_test_cli();
	if (!cli) {
		printf("skipped: TIMELINE_CLI is not set (the CLI was not built)\n");
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_says_it_was_built_without_libtracefs),
	    cmocka_unit_test(test_help_leaves_record_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
