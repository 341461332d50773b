/*
 * A JSON trace read from a file is imported in two passes
 * (tl_import_read_file: an index of the events, then each event read again
 * in the importer's order). Its import must be the one tl_import_build
 * makes of the whole file read into memory: every item, arg, name and
 * count, for every JSON case of the conformance directory and for
 * generated traces that take each way through the two passes (a file
 * read into memory or mapped, ties of each kind, metadata after the
 * events, a systemTraceEvents text, a cut bare array, a syntax error).
 */
#include "support/test_support.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/json_reader.h"
#include "tools/readers/trace_import.h"

#define ALL_KINDS                                                                                  \
	(TL_PRINT_DEFAULT | TL_PRINT_ARG | TL_PRINT_PROCESS | TL_PRINT_THREAD | TL_PRINT_STAT)

/* Everything an import holds, as text; its clock too. */
static char *printed(const tl_import *imp)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	tl_import_print(imp, ALL_KINDS, f);
	fprintf(f, "clock=%d known=%d boot=%lld mono=%lld real=%lld syncs=%zu\n", (int)imp->clock,
	        imp->clock_values.known, (long long)imp->clock_values.boottime_ns,
	        (long long)imp->clock_values.monotonic_ns, (long long)imp->clock_values.realtime_ns,
	        imp->nclock_syncs);
	fclose(f);
	return text;
}

/* The import of the file read whole into memory, printed. */
static char *whole_import(const char *path)
{
	size_t len;
	char *data = tl_test_read_file(path, &len);
	assert_non_null(data);
	tl_json_trace json;
	tl_read_error err = {0};
	if (tl_json_read(data, len, &json, &err))
		fail_msg("%s: %zu:%zu: %s", path, err.line, err.column, err.message);
	free(data);
	tl_import imp;
	assert_int_equal(tl_import_build(NULL, &json, &imp), 0);
	tl_json_trace_free(&json);
	char *text = printed(&imp);
	tl_import_free(&imp);
	return text;
}

/* How the last file_import read its file, and how many runs it merged. */
static tl_import_reading last_reading;
static size_t last_runs;

/* The import of the file as tl_import_read_file reads it, printed. */
static char *file_import(const char *path)
{
	tl_import imp;
	tl_trace_format format;
	tl_read_error err = {0};
	if (tl_import_read_file(path, &imp, &format, &err))
		fail_msg("%s: %zu:%zu: %s", path, err.line, err.column, err.message);
	assert_int_equal(format, TL_TRACE_FORMAT_JSON);
	last_reading = imp.reading;
	last_runs = imp.json_runs;
	char *text = printed(&imp);
	tl_import_free(&imp);
	return text;
}

/* The file's import is the whole read's, read the way said (runs: how
 * many, 0 for any number). */
static void assert_same_import_read_as(const char *path, tl_import_reading reading, size_t runs)
{
	char *whole = whole_import(path), *file = file_import(path);
	if (strcmp(whole, file) != 0) {
		/* the first line that differs, for the failure message */
		size_t i = 0, line = 1;
		while (whole[i] && whole[i] == file[i])
			line += whole[i++] == '\n';
		fail_msg("%s: the file's import differs from the whole read's at line %zu:\n"
		         "whole: %.200s\nfile:  %.200s",
		         path, line, whole + i, file + i);
	}
	free(whole);
	free(file);
	print_message("%s: reading %d, %zu runs\n", path, (int)last_reading, last_runs);
	assert_int_equal(last_reading, reading);
	if (runs)
		assert_int_equal(last_runs, runs);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Every JSON input of the conformance directory. */
static void test_conformance_json_cases_import_the_same(void **state)
{
	(void)state;
	const char *dir = TL_SHARED_DIR "/conformance";
	DIR *d = opendir(dir);
	if (!d) {
		print_message("skipped: no conformance directory at %s (%s)\n", dir,
		              strerror(errno));
		skip();
	}
	size_t cases = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 6, ".input") != 0)
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		size_t len;
		char *data = tl_test_read_file(path, &len);
		assert_non_null(data);
		int json = tl_trace_format_sniff(data, len) == TL_TRACE_FORMAT_JSON;
		tl_json_trace t;
		int readable = json && tl_json_read(data, len, &t, NULL) == 0;
		if (readable)
			tl_json_trace_free(&t);
		free(data);
		if (!readable)
			continue;
		char *whole = whole_import(path), *file = file_import(path);
		if (strcmp(whole, file) != 0)
			fail_msg("%s: the file's import differs from the whole read's", path);
		free(whole);
		free(file);
		cases++;
	}
	closedir(d);
	print_message("%zu JSON cases\n", cases);
	assert_true(cases >= 20);
}

/*
 * A generated trace as the exporters write theirs, each thread's events
 * together, in time order (sorted): nested B/E with args, X slices (three
 * at one timestamp, the longest first, as the importer takes them), an E
 * and a B at one timestamp (the E first), instants, counters, async slices
 * and flows, names repeated and not, the thread names and the metadata at
 * the end. Unsorted, each frame's X come shortest first, its B before the
 * E of the same timestamp and its async slice and flow after later events:
 * the importer's order is then not the file's within a thread. Returns its
 * size.
 */
static size_t write_generated(const char *path, unsigned threads, unsigned frames, int with_x,
                              int sorted)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\":[\n");
	for (unsigned t = 0; t < threads; t++) {
		unsigned tid = 100 + t, next = 100 + (t + 1) % threads;
		for (unsigned i = 0; i < frames; i++) {
			long long ts = 1000 + 10 * (long long)i;
			char async[512] = "";
			if (i % 4 == 0)
				snprintf(
				    async, sizeof async,
				    "{\"ph\":\"b\",\"name\":\"load\",\"cat\":\"io\",\"id\":\"0x%"
				    "x\","
				    "\"pid\":7,\"tid\":%u,\"ts\":%lld},\n"
				    "{\"ph\":\"s\",\"name\":\"job\",\"id\":%u,\"pid\":7,\"tid\":%u,"
				    "\"ts\":%lld},\n",
				    i, tid, ts + 2, t * 100000 + i, tid, ts + 3);
			fprintf(
			    f,
			    "{\"ph\":\"B\",\"name\":\"frame\",\"cat\":\"gfx\",\"pid\":7,\"tid\":%u,"
			    "\"ts\":%lld,\"args\":{\"n\":%u,\"label\":\"frame %u of %u\"}},\n",
			    tid, ts, i, i, tid);
			for (int k = 1; with_x && k <= 3; k++)
				fprintf(f,
				        "{\"ph\":\"X\",\"name\":\"x%d\",\"pid\":7,\"tid\":%u,"
				        "\"ts\":%lld,"
				        "\"dur\":%d},\n",
				        k, tid, ts + 1, sorted ? 4 - k : k);
			if (sorted)
				fputs(async, f);
			const char *end = "{\"ph\":\"E\",\"pid\":7,\"tid\":%u,\"ts\":%lld},\n";
			const char *begin = "{\"ph\":\"B\",\"name\":\"second\",\"pid\":7,\"tid\":%"
			                    "u,\"ts\":%lld},\n";
			fprintf(
			    f,
			    "{\"ph\":\"B\",\"name\":\"inner\",\"pid\":7,\"tid\":%u,\"ts\":%lld},\n",
			    tid, ts + 4);
			fprintf(f, sorted ? end : begin, tid, ts + 5);
			fprintf(f, sorted ? begin : end, tid, ts + 5);
			fprintf(f, end, tid, ts + 6);
			fprintf(f,
			        "{\"ph\":\"i\",\"name\":\"vsync\",\"s\":\"t\",\"pid\":7,\"tid\":%u,"
			        "\"ts\":%lld},\n"
			        "{\"ph\":\"C\",\"name\":\"queue\",\"pid\":7,\"tid\":%u,\"ts\":%lld,"
			        "\"args\":{\"depth\":%u}},\n",
			        tid, ts + 6, tid, ts + 6, i % 5);
			if (!sorted)
				fputs(async, f);
			if (i % 4 == 0)
				fprintf(f,
				        "{\"ph\":\"f\",\"name\":\"job\",\"id\":%u,\"bp\":\"e\","
				        "\"pid\":7,"
				        "\"tid\":%u,\"ts\":%lld},\n",
				        t * 100000 + i, next, ts + 7);
			fprintf(f,
			        "{\"ph\":\"E\",\"pid\":7,\"tid\":%u,\"ts\":%lld,\"args\":{\"ok\":"
			        "true}},\n",
			        tid, ts + 8);
			if (i % 4 == 0)
				fprintf(f,
				        "{\"ph\":\"e\",\"name\":\"load\",\"cat\":\"io\",\"id\":"
				        "\"0x%x\","
				        "\"pid\":7,\"tid\":%u,\"ts\":%lld},\n",
				        i, tid, ts + 9);
		}
	}
	for (unsigned t = 0; t < threads; t++)
		fprintf(f,
		        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":%u,"
		        "\"args\":{\"name\":\"worker %u\"}},\n",
		        100 + t, t);
	fprintf(f,
	        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"args\":{\"name\":\"game\"}},\n"
	        "{}],\n\"metadata\":{\"clock\":\"mono\",\"boottime_ns\":5000,"
	        "\"monotonic_ns\":4000,\"realtime_ns\":9000}}\n");
	long size = ftell(f);
	assert_int_equal(fclose(f), 0);
	return (size_t)size;
}

/* Under 1 MiB: read into memory, and the second pass reads the events
 * there. */
static void test_small_file_imports_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-small", ".json");
	size_t size = write_generated(path, 3, 40, 1, 1);
	assert_true(size < (1u << 20));
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 3);
}

/* Over 1 MiB: mapped and given back as it is read, and the second pass
 * reads each event from the file; over 4096 events, so that the strings
 * of the events read are freed on the way in both passes. */
static void test_mapped_file_imports_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-large", ".json");
	size_t size = write_generated(path, 4, 2000, 1, 1);
	print_message("%zu bytes\n", size);
	assert_true(size > (2u << 20));
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 4);
}

/* Without any X, ties keep the file's order. */
static void test_trace_without_complete_events_imports_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-no-x", ".json");
	write_generated(path, 3, 2000, 0, 1);
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 3);
}

/* A systemTraceEvents text is merged with the events: read whole. */
static void test_system_trace_text_imports_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-system", ".json");
	write_file(path,
	           "{\"traceEvents\":[{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":2},"
	           "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":5}],\n"
	           "\"systemTraceEvents\":\"# tracer: nop\\n"
	           "  t-1 (1) [000] .... 0.000003: tracing_mark_write: B|1|b\\n"
	           "  t-1 (1) [000] .... 0.000004: tracing_mark_write: E|1\\n\"}\n");
	assert_same_import_read_as(path, TL_READING_WHOLE, 0);
	char *file = file_import(path);
	assert_non_null(strstr(file, "name=\"b\""));
	free(file);
}

/* A bare array cut inside an event: the complete ones are kept. */
static void test_cut_bare_array_imports_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-cut", ".json");
	write_file(path, "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":3},\n"
	                 "{\"ph\":\"i\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1},\n"
	                 "{\"ph\":\"X\",\"name\":\"c\",\"pid\":1,");
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 2);
}

/* Each thread's events out of the importer's order: more runs than are
 * merged, so the events are sorted through the index (in memory and
 * mapped); and a few such threads, whose runs are merged. */
static void test_threads_out_of_order_import_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-unsorted", ".json");
	write_generated(path, 3, 200, 1, 0);
	assert_same_import_read_as(path, TL_READING_JSON_INDEX, 0);
	const char *mapped = tl_test_path("json-stream-unsorted-mapped", ".json");
	assert_true(write_generated(mapped, 4, 2000, 1, 0) > (1u << 20));
	assert_same_import_read_as(mapped, TL_READING_JSON_INDEX, 0);
	const char *few = tl_test_path("json-stream-unsorted-few", ".json");
	write_generated(few, 2, 4, 1, 0);
	assert_same_import_read_as(few, TL_READING_JSON_RUNS, 0);
	const char *no_x = tl_test_path("json-stream-unsorted-no-x", ".json");
	write_generated(no_x, 3, 2000, 0, 0);
	assert_same_import_read_as(no_x, TL_READING_JSON_INDEX, 0);
}

/* Events that each go back in time: a run apiece, too many to merge, so
 * the events are sorted through the index; mapped, and not. */
static void write_backwards(const char *path, unsigned events, unsigned pad)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "[");
	for (unsigned i = 0; i < events; i++)
		fprintf(f,
		        "%s{\"ph\":\"%c\",\"name\":\"e%u\",\"pid\":1,\"tid\":%u,\"ts\":%u,"
		        "\"dur\":%u,\"args\":{\"pad\":\"%*s\"}}\n",
		        i ? "," : "", i % 3 ? 'X' : 'i', i % 7, 1 + i % 5, events - i / 2, i % 4,
		        (int)pad, "");
	fprintf(f, "]\n");
	assert_int_equal(fclose(f), 0);
}

static void test_events_in_no_order_are_sorted_through_the_index(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-backwards", ".json");
	write_backwards(path, 3000, 8);
	assert_same_import_read_as(path, TL_READING_JSON_INDEX, 0);
	const char *mapped = tl_test_path("json-stream-backwards-mapped", ".json");
	write_backwards(mapped, 6000, 200);
	assert_same_import_read_as(mapped, TL_READING_JSON_INDEX, 0);
}

/* Two traceEvents arrays: a run does not go from one to the other. */
static void test_two_event_arrays_are_two_runs(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-two-arrays", ".json");
	write_file(path,
	           "{\"traceEvents\":[{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1},\n"
	           "{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":4}],\n"
	           "\"traceEvents\":[{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":6},\n"
	           "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":9}]}\n");
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 2);
}

/* Clock metadata that names a clock but not all three clock values: the
 * values are dropped as the whole read drops them. */
static void test_partial_clock_values_import_the_same(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-partial-clock", ".json");
	write_file(path, "{\"traceEvents\":[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1}],"
	                 "\"metadata\":{\"clock\":\"boot\",\"boottime_ns\":5}}\n");
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 1);
}

/* A run that starts with a metadata event is ordered on its own: the
 * event after it does not start a third run. */
static void test_run_starting_with_metadata_is_one_run(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-metadata-run", ".json");
	write_file(path, "{\"traceEvents\":[{\"ph\":\"i\",\"ts\":100,\"pid\":1,\"tid\":1}],"
	                 "\"traceEvents\":[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,"
	                 "\"tid\":2,\"args\":{\"name\":\"b\"}},"
	                 "{\"ph\":\"i\",\"ts\":5,\"pid\":1,\"tid\":2}]}\n");
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 2);
}

/* An event longer than a cursor's buffer (16 KiB), in a mapped file: the
 * buffer grows to take it. */
static void test_event_longer_than_a_buffer_is_read_whole(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-long-event", ".json");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "[");
	for (unsigned i = 0; i < 40; i++) {
		unsigned pad = i % 8 == 3 ? 100000 : 30000;
		fprintf(
		    f,
		    "%s{\"ph\":\"X\",\"name\":\"long\",\"pid\":1,\"tid\":%u,\"ts\":%u,\"dur\":1,"
		    "\"args\":{\"text\":\"%*s\"}}\n",
		    i ? "," : "", 1 + i / 20, 10 + i % 20, (int)pad, "x");
	}
	fprintf(f, "]\n");
	assert_int_equal(fclose(f), 0);
	assert_same_import_read_as(path, TL_READING_JSON_RUNS, 2);
}

/* A syntax error: the same line, column and reason as the whole read,
 * and nothing imported. */
static void test_syntax_error_is_reported_with_its_line(void **state)
{
	(void)state;
	const char *path = tl_test_path("json-stream-bad", ".json");
	write_file(path, "{\"traceEvents\":[\n"
	                 "{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":2},\n"
	                 "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":5 \"x\":1}\n"
	                 "]}\n");
	size_t len;
	char *data = tl_test_read_file(path, &len);
	tl_json_trace json;
	tl_read_error whole = {0}, file = {0};
	assert_int_equal(tl_json_read(data, len, &json, &whole), -EINVAL);
	free(data);
	tl_import imp;
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &file), -EINVAL);
	print_message("%zu:%zu: %s\n", file.line, file.column, file.message);
	assert_int_equal(file.line, 3);
	assert_int_equal(file.line, whole.line);
	assert_int_equal(file.column, whole.column);
	assert_string_equal(file.message, whole.message);
	assert_int_equal(imp.nslices, 0);
}

/* tl_json_read_event reads one event object, and refuses anything else
 * without changing the trace. */
static void test_one_event_is_read_again(void **state)
{
	(void)state;
	tl_json_trace t = {0};
	const char *ev =
	    "{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5,\"dur\":2,\"args\":{\"k\":\"v\"}}";
	assert_int_equal(tl_json_read_event(ev, strlen(ev), &t), 0);
	assert_int_equal(t.nevents, 1);
	assert_string_equal(t.events[0].name, "a");
	assert_int_equal(t.events[0].ts, 1500);
	assert_int_equal(t.events[0].nargs, 1);
	assert_string_equal(t.args[0].value.s, "v");
	const char *bad[] = {"{}", "{\"ph\":\"X\"", "[1]", "{\"ph\":\"X\",}x"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(tl_json_read_event(bad[i], strlen(bad[i]), &t), -EINVAL);
		assert_int_equal(t.nevents, 1);
		assert_int_equal(t.nargs, 1);
		assert_int_equal(t.empty_events, 0);
	}
	tl_json_trace_free(&t);
}

/* A scan hands on each event once, in file order, and keeps none. */
static int count_event(void *ctx, const tl_json_trace *trace, const tl_json_event *e, size_t offset,
                       size_t len)
{
	size_t *seen = ctx;
	assert_int_equal(e->order, *seen);
	assert_int_equal(trace->nevents, 1);
	assert_true(len > 2 && offset > 0);
	(*seen)++;
	return *seen == 5 ? -ECANCELED : 0;
}

static void test_scan_hands_on_each_event_and_stops_when_told(void **state)
{
	(void)state;
	const char *text =
	    "[{\"ph\":\"i\",\"ts\":1},{},{\"ph\":\"i\",\"ts\":2},{\"ph\":\"i\",\"ts\":3}]";
	tl_json_trace t;
	size_t seen = 0;
	assert_int_equal(tl_json_scan(text, strlen(text), 0, count_event, &seen, &t, NULL), 0);
	assert_int_equal(seen, 3);
	assert_int_equal(t.nevents, 0);
	assert_int_equal(t.empty_events, 1);
	tl_json_trace_free(&t);
	const char *many =
	    "[{\"ph\":\"i\",\"ts\":1},{\"ph\":\"i\",\"ts\":1},{\"ph\":\"i\",\"ts\":1},"
	    "{\"ph\":\"i\",\"ts\":1},{\"ph\":\"i\",\"ts\":1},{\"ph\":\"i\",\"ts\":1}]";
	seen = 0;
	assert_int_equal(tl_json_scan(many, strlen(many), 0, count_event, &seen, &t, NULL),
	                 -ECANCELED);
	assert_int_equal(seen, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conformance_json_cases_import_the_same),
	    cmocka_unit_test(test_small_file_imports_the_same),
	    cmocka_unit_test(test_mapped_file_imports_the_same),
	    cmocka_unit_test(test_trace_without_complete_events_imports_the_same),
	    cmocka_unit_test(test_system_trace_text_imports_the_same),
	    cmocka_unit_test(test_cut_bare_array_imports_the_same),
	    cmocka_unit_test(test_threads_out_of_order_import_the_same),
	    cmocka_unit_test(test_events_in_no_order_are_sorted_through_the_index),
	    cmocka_unit_test(test_two_event_arrays_are_two_runs),
	    cmocka_unit_test(test_partial_clock_values_import_the_same),
	    cmocka_unit_test(test_run_starting_with_metadata_is_one_run),
	    cmocka_unit_test(test_event_longer_than_a_buffer_is_read_whole),
	    cmocka_unit_test(test_syntax_error_is_reported_with_its_line),
	    cmocka_unit_test(test_one_event_is_read_again),
	    cmocka_unit_test(test_scan_hands_on_each_event_and_stops_when_told),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
