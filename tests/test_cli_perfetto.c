/*
 * Perfetto's format through the CLI: `timeline convert` of the demo's
 * snapshot to it (checked against Perfetto's schema with protoc),
 * `timeline slices` reading it back to the items of the JSON export of the
 * same snapshot, and `timeline convert` reading it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

#define ALL_KINDS "slice,instant,async,counter,flow,arg,process,thread"

static const char *cli;
static char snapshot[4096]; /* a binary snapshot written by `timeline demo` */
static char json[4096];     /* its JSON export */
static char perfetto[4096]; /* its Perfetto export */

static int setup(void **state)
{
	(void)state;
	cli = tl_test_cli();
	snprintf(snapshot, sizeof snapshot, "%s", tl_test_path("perfetto-demo", ".tlsnap"));
	snprintf(json, sizeof json, "%s", tl_test_path("perfetto-demo", ".json"));
	snprintf(perfetto, sizeof perfetto, "%s", tl_test_path("perfetto-demo", ".perfetto-trace"));
	if (tl_test_run("'%s' demo --seconds 0.2 -o '%s' >/dev/null", cli, snapshot) != 0)
		return -1;
	if (tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, snapshot, json) != 0)
		return -1;
	return tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, snapshot, perfetto);
}

static char *slices_of(const char *path)
{
	const char *out = tl_test_path("slices", ".txt");
	assert_int_equal(tl_test_run("'%s' slices '%s' --kind " ALL_KINDS " >'%s'", cli, path, out),
	                 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	return text;
}

static void test_demo_perfetto_decodes_with_the_schema(void **state)
{
	(void)state;
	char *text = tl_test_perfetto_decode(perfetto);
	assert_non_null(strstr(text, "process_name: \"timeline-demo\""));
	assert_non_null(strstr(text, "thread_name: \"main\""));
	assert_non_null(strstr(text, "flow_ids:"));
	assert_non_null(strstr(text, "terminating_flow_ids:"));
	assert_non_null(strstr(text, "type: TYPE_COUNTER"));
	free(text);
}

static void test_demo_slices_of_perfetto_equal_slices_of_json(void **state)
{
	(void)state;
	char *from_json = slices_of(json);
	char *from_perfetto = slices_of(perfetto);
	assert_true(tl_test_count(from_json, "\nslice ") > 10);
	assert_true(tl_test_count(from_json, "\nflow ") > 0);
	assert_true(tl_test_count(from_json, "\nasync ") > 0);
	assert_true(tl_test_count(from_json, "\ncounter ") > 0);
	if (strcmp(from_json, from_perfetto) != 0) {
		size_t at = 0, line = 1;
		while (from_json[at] == from_perfetto[at])
			line += from_json[at++] == '\n';
		while (at > 0 && from_json[at - 1] != '\n')
			at--;
		fail_msg("line %zu differs:\nJSON:     %.300s\nPerfetto: %.300s", line,
		         from_json + at, from_perfetto + at);
	}
	free(from_json);
	free(from_perfetto);
}

static void test_convert_infers_perfetto_from_the_extension(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert", ".pftrace");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, snapshot, out),
	                 0);
	size_t len;
	char *data = tl_test_read_file(out, &len);
	assert_non_null(data);
	assert_true(len > 2);
	assert_int_equal((unsigned char)data[0], 0x0a); /* Trace.packet, length-delimited */
	free(data);
}

static void test_convert_format_perfetto_wins_over_the_extension(void **state)
{
	(void)state;
	const char *out = tl_test_path("convert", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' --format perfetto 2>/dev/null", cli,
	                             snapshot, out),
	                 0);
	free(tl_test_perfetto_decode(out));
}

static void test_convert_reads_a_perfetto_trace(void **state)
{
	(void)state;
	const char *out = tl_test_path("from-perfetto", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, perfetto, out),
	                 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"name\":\"frame\""));
	assert_non_null(strstr(text, "\"name\":\"timeline-demo\""));
	free(text);
}

static void test_slices_of_a_cut_perfetto_trace_names_the_byte(void **state)
{
	(void)state;
	size_t len;
	char *data = tl_test_read_file(perfetto, &len);
	assert_non_null(data);
	const char *cut = tl_test_path("cut", ".perfetto-trace");
	FILE *f = fopen(cut, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len - 3, f), len - 3);
	assert_int_equal(fclose(f), 0);
	free(data);
	const char *err = tl_test_path("cut", ".err");
	assert_int_equal(tl_test_run("'%s' slices '%s' >/dev/null 2>'%s'", cli, cut, err), 1);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, ": byte "));
	assert_non_null(strstr(text, "cut short"));
	free(text);
}

int main(void)
{
	if (!tl_test_cli()) {
		printf("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_demo_perfetto_decodes_with_the_schema),
	    cmocka_unit_test(test_demo_slices_of_perfetto_equal_slices_of_json),
	    cmocka_unit_test(test_convert_infers_perfetto_from_the_extension),
	    cmocka_unit_test(test_convert_format_perfetto_wins_over_the_extension),
	    cmocka_unit_test(test_convert_reads_a_perfetto_trace),
	    cmocka_unit_test(test_slices_of_a_cut_perfetto_trace_names_the_byte),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
