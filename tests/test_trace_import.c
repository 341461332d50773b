/* The importer (tools/readers/trace_import.h) and `timeline slices`. */
#include "support/test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/trace_event.h>

#include "recorder/snapshot_format.h"
#include "tools/readers/trace_import.h"

static void import_text(const char *text, tl_import *imp)
{
	tl_ftrace_text t;
	assert_int_equal(tl_ftrace_text_read(text, strlen(text), 0, &t, NULL), 0);
	assert_int_equal(tl_import_build(&t, NULL, imp), 0);
	tl_ftrace_text_free(&t);
}

static void import_json(const char *text, tl_import *imp)
{
	tl_json_trace j;
	tl_read_error err = {0};
	if (tl_json_read(text, strlen(text), &j, &err))
		fail_msg("json: %zu:%zu: %s", err.line, err.column, err.message);
	assert_int_equal(tl_import_build(NULL, &j, imp), 0);
	tl_json_trace_free(&j);
}

static const tl_import_slice *slice_named(const tl_import *imp, const char *name)
{
	for (size_t i = 0; i < imp->nslices; i++) {
		if (strcmp(imp->slices[i].name, name) == 0)
			return &imp->slices[i];
	}
	fail_msg("no slice named %s", name);
	return NULL;
}

#define LINE_TEXT(tid, tgid, ts, payload)                                                          \
	"  t-" #tid " (" #tgid ") [000] .... " ts ": tracing_mark_write: " payload
#define LINE(tid, tgid, ts, payload) LINE_TEXT(tid, tgid, ts, payload) "\n"

static void test_import_atrace_end_with_other_pid_leaves_begin_open(void **state)
{
	(void)state;
	tl_import imp;
	import_text(LINE(7, 10, "1.0", "B|10|a") LINE(7, 10, "2.0", "E|11"), &imp);
	assert_int_equal(slice_named(&imp, "a")->dur, -1);
	tl_import_free(&imp);
}

static void test_import_atrace_bare_end_closes_top_slice(void **state)
{
	(void)state;
	tl_import imp;
	import_text(LINE(7, 10, "1.0", "B|10|a") LINE(7, 10, "1.5", "B|10|b")
	                LINE(7, 10, "2.0", "E") LINE(8, 10, "2.5", "E"),
	            &imp);
	assert_int_equal(slice_named(&imp, "b")->dur, 500000000);
	assert_int_equal(slice_named(&imp, "a")->dur, -1);
	assert_int_equal(imp.stats[TL_STAT_SLICE_END_UNMATCHED], 1);
	tl_import_free(&imp);
}

static void test_import_atrace_lines_are_sorted_by_time(void **state)
{
	(void)state;
	tl_import imp;
	import_text(LINE(7, 10, "2.0", "E|10") LINE(7, 10, "1.0", "B|10|a"), &imp);
	assert_int_equal(slice_named(&imp, "a")->dur, 1000000000);
	tl_import_free(&imp);
}

static void test_import_atrace_depth_limit_is_counted(void **state)
{
	(void)state;
	char *text = malloc(600 * 80);
	assert_non_null(text);
	size_t n = 0;
	for (int i = 0; i < 600; i++)
		n += (size_t)sprintf(text + n, LINE(7, 10, "1.0", "B|10|s%d"), i);
	tl_import imp;
	import_text(text, &imp);
	assert_int_equal(imp.nslices, TL_IMPORT_MAX_DEPTH);
	assert_int_equal(imp.stats[TL_STAT_SLICE_MAX_DEPTH_EXCEEDED], 600 - TL_IMPORT_MAX_DEPTH);
	tl_import_free(&imp);
	free(text);
}

static void test_import_atrace_track_async_nests(void **state)
{
	(void)state;
	tl_import imp;
	import_text(LINE(7, 10, "1.0", "G|10|net|outer|5") LINE(7, 10, "1.1", "G|10|net|inner|5")
	                LINE(7, 10, "1.2", "H|10|net|5") LINE(7, 10, "1.3", "H|10|net|5"),
	            &imp);
	assert_int_equal(slice_named(&imp, "inner")->depth, 1);
	assert_int_equal(slice_named(&imp, "inner")->dur, 100000000);
	assert_int_equal(slice_named(&imp, "outer")->dur, 300000000);
	tl_import_free(&imp);
}

static void test_import_atrace_counter_on_process_track(void **state)
{
	(void)state;
	tl_import imp;
	import_text(LINE(8, 10, "1.0", "C|10|queue|5") LINE(8, 10, "1.0", "C|10|queue|1.5"), &imp);
	assert_int_equal(imp.ncounters, 1);
	assert_string_equal(imp.tracks[imp.counters[0].track].name, "queue");
	assert_int_equal(imp.tracks[imp.counters[0].track].pid, 10);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_PARSE_FAILURE], 1);
	tl_import_free(&imp);
}

static void test_import_json_end_closes_innermost_matching(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1},"
	            "{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":2},"
	            "{\"ph\":\"E\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":3},"
	            "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":4}]",
	            &imp);
	assert_int_equal(slice_named(&imp, "a")->dur, 2000);
	assert_int_equal(slice_named(&imp, "b")->dur, 2000);
	tl_import_free(&imp);
}

static void test_import_json_complete_needs_nonnegative_dur(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"ts\":1},"
	            "{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"ts\":1,\"dur\":-1}]",
	            &imp);
	assert_int_equal(imp.nslices, 0);
	assert_int_equal(imp.stats[TL_STAT_JSON_COMPLETE_MISSING_DUR], 1);
	assert_int_equal(imp.stats[TL_STAT_JSON_COMPLETE_NEGATIVE_DUR], 1);
	tl_import_free(&imp);
}

static void test_import_json_thread_instant_needs_tid(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"i\",\"name\":\"a\",\"pid\":1,\"ts\":1}]", &imp);
	assert_int_equal(imp.nslices, 0);
	assert_int_equal(imp.stats[TL_STAT_JSON_INSTANT_MISSING_TID], 1);
	tl_import_free(&imp);
}

static void test_import_json_counter_rejects_bool_and_objects(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"C\",\"name\":\"c\",\"pid\":1,\"ts\":1,"
	            "\"args\":{\"a\":true,\"b\":{\"x\":1},\"c\":null,\"d\":\"7\"}}]",
	            &imp);
	assert_int_equal(imp.ncounters, 1);
	assert_string_equal(imp.tracks[imp.counters[0].track].name, "c d");
	assert_int_equal(imp.stats[TL_STAT_JSON_COUNTER_INVALID_VALUE], 3);
	tl_import_free(&imp);
}

static void test_import_json_async_float_id_is_dropped(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"b\",\"name\":\"a\",\"cat\":\"c\",\"pid\":1,\"ts\":1,\"id\":1.5}]",
	            &imp);
	assert_int_equal(imp.nslices, 0);
	assert_int_equal(imp.stats[TL_STAT_JSON_ASYNC_MISSING_ID], 1);
	tl_import_free(&imp);
}

static void test_import_json_flow_v1_non_hex_id_is_invalid(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5},"
	            "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":2,"
	            "\"id\":\"flow-1\"}]",
	            &imp);
	assert_int_equal(imp.nflows, 0);
	assert_int_equal(imp.stats[TL_STAT_FLOW_INVALID_ID], 1);
	tl_import_free(&imp);
}

/* A counter value no format written can hold, a string "inf" or "nan"
 * (or beyond a double), is counted, not imported. */
static void test_import_json_counter_value_that_is_not_finite_is_counted(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"C\",\"name\":\"c\",\"pid\":1,\"ts\":1,"
	            "\"args\":{\"a\":\"inf\",\"b\":\"-nan\",\"c\":\"1e400\",\"d\":\"1e300\"}}]",
	            &imp);
	assert_int_equal(imp.ncounters, 1);
	assert_string_equal(imp.tracks[imp.counters[0].track].name, "c d");
	assert_int_equal(imp.stats[TL_STAT_JSON_COUNTER_INVALID_VALUE], 3);
	tl_import_free(&imp);
}

static void test_import_json_flow_id_beyond_64_bits_is_invalid(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5,"
	            "\"bind_id\":\"0x1234567890abcdef1\",\"flow_out\":true},"
	            "{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":9,\"dur\":5,"
	            "\"bind_id\":\"0x234567890abcdef1\",\"flow_in\":true}]",
	            &imp);
	/* 17 hex digits were 16 once cut: not the same flow, not a flow at all */
	assert_int_equal(imp.nflows, 0);
	assert_int_equal(imp.stats[TL_STAT_FLOW_INVALID_ID], 1);
	tl_import_free(&imp);
}

static void test_import_json_flow_v1_bp_e_binds_enclosing(void **state)
{
	(void)state;
	tl_import imp;
	import_json(
	    "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5},"
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":2,\"id\":16},"
	    "{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":10,\"dur\":5},"
	    "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":2,"
	    "\"ts\":11,\"id\":\"10\"}]",
	    &imp);
	assert_int_equal(imp.nflows, 1);
	assert_string_equal(imp.slices[imp.flows[0].out].name, "a");
	assert_string_equal(imp.slices[imp.flows[0].in].name, "b");
	tl_import_free(&imp);
}

/* A v1 flow end without "bp":"e" waits for the next slice of its thread:
 * each thread's own, in the order the ends came, however many other
 * threads wait. */
static void test_import_json_flow_v1_end_binds_the_next_slice_of_its_thread(void **state)
{
	(void)state;
	tl_import imp;
	import_json(
	    "[{\"ph\":\"X\",\"name\":\"a1\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},"
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":1.5,\"id\":1},"
	    "{\"ph\":\"X\",\"name\":\"a2\",\"pid\":1,\"tid\":1,\"ts\":3,\"dur\":1},"
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":3.5,\"id\":2},"
	    "{\"ph\":\"X\",\"name\":\"a3\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1},"
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":5.5,\"id\":3},"
	    "{\"ph\":\"s\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":5.6,\"id\":4},"
	    "{\"ph\":\"f\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":4,\"ts\":9,\"id\":4},"
	    "{\"ph\":\"f\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":2,\"ts\":10,\"id\":1},"
	    "{\"ph\":\"f\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":3,\"ts\":11,\"id\":2},"
	    "{\"ph\":\"f\",\"name\":\"f\",\"cat\":\"c\",\"pid\":1,\"tid\":2,\"ts\":12,\"id\":3},"
	    "{\"ph\":\"X\",\"name\":\"on3\",\"pid\":1,\"tid\":3,\"ts\":20,\"dur\":1},"
	    "{\"ph\":\"X\",\"name\":\"on2\",\"pid\":1,\"tid\":2,\"ts\":21,\"dur\":1},"
	    "{\"ph\":\"X\",\"name\":\"later\",\"pid\":1,\"tid\":2,\"ts\":22,\"dur\":1}]",
	    &imp);
	/* tid 4's end waits on: none binds twice */
	assert_int_equal(imp.nflows, 3);
	/* tid 3's end, then tid 2's two in the order they came */
	static const char *const out[] = {"a2", "a1", "a3"}, *const in[] = {"on3", "on2", "on2"};
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(imp.slices[imp.flows[i].out].name, out[i]);
		assert_string_equal(imp.slices[imp.flows[i].in].name, in[i]);
	}
	tl_import_free(&imp);
}

static void test_import_json_flow_v2_without_direction_is_counted(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5,"
	            "\"bind_id\":3}]",
	            &imp);
	assert_int_equal(imp.stats[TL_STAT_FLOW_WITHOUT_DIRECTION], 1);
	tl_import_free(&imp);
}

/* A JSON trace with every kind of event and many ties in time: enough
 * slices for tl_import_move_to_model to give them back in several steps. */
static char *tie_heavy_json(void)
{
	size_t cap = 32u << 20, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "[");
	for (unsigned g = 0; g < 30000; g++) {
		/* each thread has two groups at each timestamp */
		unsigned tid = 1 + g % 3, ts = g / 6, name = g % 7;
		len += (size_t)snprintf(
		    text + len, cap - len,
		    "{\"ph\":\"B\",\"name\":\"b%u\",\"pid\":1,\"tid\":%u,\"ts\":%u,"
		    "\"args\":{\"k\":%u,\"s\":\"v\",\"d\":0.5,\"e\":1,\"f\":2}},"
		    "{\"ph\":\"X\",\"name\":\"x\",\"pid\":1,\"tid\":%u,\"ts\":%u,\"dur\":0,"
		    "\"bind_id\":%u,\"flow_out\":true},"
		    "{\"ph\":\"%s\",\"name\":\"c\",\"cat\":\"k\",\"id\":%u,\"pid\":1,"
		    "\"tid\":%u,\"ts\":%u,\"args\":{\"v\":%u}},"
		    "{\"ph\":\"X\",\"name\":\"y\",\"pid\":1,\"tid\":%u,\"ts\":%u,\"dur\":0,"
		    "\"bind_id\":%u,\"flow_in\":true},"
		    "{\"ph\":\"E\",\"name\":\"b%u\",\"pid\":1,\"tid\":%u,\"ts\":%u,"
		    "\"args\":{\"r\":%u}},",
		    name, tid, ts, g, tid, ts, g + 1, g % 2 ? "b" : "C", g, tid, ts, g, tid, ts, g,
		    name, tid, ts, g);
		assert_true(len < cap);
	}
	text[len - 1] = ']';
	return text;
}

static void test_import_move_to_model_builds_the_same_model(void **state)
{
	(void)state;
	char *text = tie_heavy_json();
	tl_import imp, moved;
	import_json(text, &imp);
	import_json(text, &moved);
	free(text);
	assert_true(imp.nslices > 60000 && imp.ncounters > 0 && imp.nflows > 0 && imp.nargs > 0);
	tl_model a, b;
	assert_int_equal(tl_import_to_model(&imp, &a), 0);
	tl_import_free(&imp);
	assert_int_equal(tl_import_move_to_model(&moved, &b), 0);
	assert_null(moved.slices); /* given back */

	assert_int_equal(a.nevents, b.nevents);
	assert_int_equal(a.stats.args_dropped, b.stats.args_dropped);
	assert_true(a.stats.args_dropped > 0);
	for (size_t i = 0; i < a.nevents; i++) {
		const tl_model_event *x = &a.events[i], *y = &b.events[i];
		assert_int_equal(x->phase, y->phase);
		assert_int_equal(x->ts_ns, y->ts_ns);
		assert_int_equal(x->end_ns, y->end_ns); /* or the counter's value */
		assert_int_equal(x->tid, y->tid);
		assert_int_equal(x->pid, y->pid);
		assert_int_equal(x->seq, y->seq);
		assert_int_equal(x->id, y->id);
		assert_int_equal(x->scope, y->scope);
		assert_string_equal(x->name ? x->name : "-", y->name ? y->name : "-");
		assert_string_equal(x->cat ? x->cat : "-", y->cat ? y->cat : "-");
		assert_int_equal(x->nargs, y->nargs);
		for (unsigned k = 0; k < x->nargs; k++) {
			assert_string_equal(x->args[k].key, y->args[k].key);
			assert_int_equal(x->args[k].type, y->args[k].type);
			if (x->args[k].type == TL_ARG_STRING)
				assert_string_equal(x->args[k].v.s, y->args[k].v.s);
			else
				assert_int_equal(x->args[k].v.i, y->args[k].v.i);
		}
	}
	tl_model_free(&a);
	tl_model_free(&b);
}

static void test_import_to_model_keeps_each_process(void **state)
{
	(void)state;
	tl_import imp;
	import_json(
	    "[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"args\":{\"name\":\"seven\"}},"
	    "{\"ph\":\"X\",\"name\":\"a\",\"pid\":7,\"tid\":70,\"ts\":1,\"dur\":5},"
	    "{\"ph\":\"X\",\"name\":\"b\",\"pid\":9,\"tid\":70,\"ts\":1,\"dur\":5}]",
	    &imp);
	tl_model model;
	assert_int_equal(tl_import_to_model(&imp, &model), 0);
	tl_import_free(&imp);

	const char *path = tl_test_path("import-model", ".json");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_json(&model, fd, NULL), 0);
	close(fd);
	tl_model_free(&model);

	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), 0);
	assert_int_equal(tl_import_slice_pid(&imp, slice_named(&imp, "a")), 7);
	assert_int_equal(tl_import_slice_pid(&imp, slice_named(&imp, "b")), 9);
	assert_int_equal(tl_import_slice_tid(&imp, slice_named(&imp, "b")), 70);
	tl_import_free(&imp);
}

static void test_import_to_model_flow_survives_export_and_import(void **state)
{
	(void)state;
	tl_import imp;
	import_json("[{\"ph\":\"X\",\"name\":\"send\",\"cat\":\"c\",\"pid\":1,\"tid\":1,"
	            "\"ts\":1,\"dur\":5,\"bind_id\":\"0x3\",\"flow_out\":true},"
	            "{\"ph\":\"X\",\"name\":\"recv\",\"cat\":\"c\",\"pid\":1,\"tid\":2,"
	            "\"ts\":10,\"dur\":5,\"bind_id\":\"0x3\",\"flow_in\":true}]",
	            &imp);
	assert_int_equal(imp.nflows, 1);
	tl_model model;
	assert_int_equal(tl_import_to_model(&imp, &model), 0);
	tl_import_free(&imp);

	const char *path = tl_test_path("import-flow", ".json");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tl_export_json(&model, fd, NULL), 0);
	close(fd);
	tl_model_free(&model);

	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), 0);
	assert_int_equal(imp.nflows, 1);
	assert_string_equal(imp.slices[imp.flows[0].out].name, "send");
	assert_string_equal(imp.slices[imp.flows[0].in].name, "recv");
	tl_import_free(&imp);
}

static void test_import_model_reads_a_snapshot_model(void **state)
{
	(void)state;
	tl_model model = {0};
	model.pid = 5;
	tl_model_event *ev = tl_model_event_append(&model);
	assert_non_null(ev);
	ev->phase = TL_PHASE_COMPLETE;
	ev->tid = 6;
	ev->ts_ns = 100;
	ev->end_ns = 300;
	ev->name = tl_model_intern(&model, "work", 4);
	tl_import imp;
	assert_int_equal(tl_import_model(&model, &imp), 0);
	const tl_import_slice *s = slice_named(&imp, "work");
	assert_int_equal(s->dur, 200);
	assert_int_equal(tl_import_slice_pid(&imp, s), 5);
	tl_import_free(&imp);
	tl_model_free(&model);
}

/* A model event of thread 6: phase, name (NULL for an END), start and end. */
static void model_event(tl_model *model, char phase, const char *name, int64_t ts, int64_t end)
{
	tl_model_event *ev = tl_model_event_append(model);
	assert_non_null(ev);
	ev->phase = phase;
	ev->tid = 6;
	ev->ts_ns = ts;
	ev->end_ns = end;
	ev->name = name ? tl_model_intern(model, name, strlen(name)) : NULL;
}

/* A thread's events come in the order they were recorded (a COMPLETE event
 * after the events it spans); they are imported in Perfetto's order: by
 * time, an END before a COMPLETE before the rest at one time, the longer
 * of two COMPLETE events first. */
static void test_import_model_orders_events_as_perfetto_does(void **state)
{
	(void)state;
	tl_model model = {0};
	model.pid = 5;
	model_event(&model, TL_PHASE_BEGIN, "child", 110, 0);
	model_event(&model, TL_PHASE_END, NULL, 120, 0);
	model_event(&model, TL_PHASE_COMPLETE, "parent", 100, 200);
	model_event(&model, TL_PHASE_COMPLETE, "short", 300, 310);
	model_event(&model, TL_PHASE_COMPLETE, "long", 300, 400);
	model_event(&model, TL_PHASE_BEGIN, "b", 600, 0);
	model_event(&model, TL_PHASE_BEGIN, "a", 500, 0);
	model_event(&model, TL_PHASE_END, NULL, 600, 0);
	model_event(&model, TL_PHASE_END, NULL, 700, 0);
	tl_import imp;
	assert_int_equal(tl_import_model(&model, &imp), 0);
	assert_int_equal(imp.nslices, 6);
	assert_int_equal(slice_named(&imp, "parent")->depth, 0);
	assert_int_equal(slice_named(&imp, "child")->depth, 1);
	assert_int_equal(slice_named(&imp, "long")->depth, 0);
	assert_int_equal(slice_named(&imp, "short")->depth, 1);
	/* the END at 600 closes "a" before "b" begins */
	assert_int_equal(slice_named(&imp, "a")->dur, 100);
	assert_int_equal(slice_named(&imp, "a")->depth, 0);
	assert_int_equal(slice_named(&imp, "b")->dur, 100);
	assert_int_equal(slice_named(&imp, "b")->depth, 0);
	/* in time order */
	for (size_t i = 1; i < imp.nslices; i++)
		assert_true(imp.slices[i - 1].ts <= imp.slices[i].ts);
	tl_import_free(&imp);
	tl_model_free(&model);
}

static char *import_printed(const tl_import *imp);

/* A snapshot file (read in place, its events ordered from their records)
 * imports to the items of its model (tl_import_model). */
static void check_snapshot_imports_as_its_model(const char *path)
{
	tl_import from_file, from_model;
	tl_read_error err = {0};
	tl_trace_format format;
	assert_int_equal(tl_import_read_file(path, &from_file, &format, &err), 0);
	assert_int_equal(format, TL_TRACE_FORMAT_BINARY);
	tl_model model;
	char message[256];
	assert_int_equal(tl_model_read_binary_file(path, &model, message, sizeof message), 0);
	assert_int_equal(tl_import_model(&model, &from_model), 0);
	char *a = import_printed(&from_file), *b = import_printed(&from_model);
	assert_string_equal(a, b);
	free(a);
	free(b);
	tl_import_free(&from_file);
	tl_import_free(&from_model);
	tl_model_free(&model);
}

static void test_import_reads_a_snapshot_as_its_model(void **state)
{
	(void)state;
	const char *path = tl_test_path("import-snapshot", ".tl");
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	tl_thread_set_name("importer");
	for (int i = 0; i < 300; i++) {
		TL_TRACE_EVENT_BEGIN1("imp", "frame", "i", i);
		TL_TRACE_EVENT_INSTANT0("imp", "tick", TL_EVENT_SCOPE_PROCESS);
		TL_TRACE_EVENT_COUNTER("imp", "queue", i % 5);
		if (i % 3 == 0)
			TL_TRACE_EVENT_FLOW_BEGIN0("imp", "post", (uint64_t)i);
		TL_TRACE_EVENT_ASYNC_BEGIN0("imp", "load", (uint64_t)i);
		tl_timestamp now = tl_now();
		TL_TRACE_EVENT_COMPLETE("imp", "work", now - 100, now);
		TL_TRACE_EVENT_ASYNC_END0("imp", "load", (uint64_t)i);
		TL_TRACE_EVENT_END1("imp", "frame", "done", i);
	}
	TL_TRACE_EVENT_BEGIN0("imp", "open at the snapshot");
	assert_int_equal(tl_snapshot_binary(path), 0);
	tl_shutdown();
	check_snapshot_imports_as_its_model(path);
	unlink(path);
}

/* A snapshot without events imports to no item. */
static void test_import_reads_a_snapshot_without_events(void **state)
{
	(void)state;
	const char *path = tl_test_path("import-empty-snapshot", ".tl");
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	assert_int_equal(tl_snapshot_binary(path), 0);
	tl_shutdown();
	check_snapshot_imports_as_its_model(path);
	tl_import imp;
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), 0);
	assert_true(tl_import_is_empty(&imp));
	tl_import_free(&imp);
	unlink(path);
}

/* Bytes that are not a snapshot, or a snapshot cut inside its header,
 * are -EINVAL with the reason the snapshot reader gives. */
static void test_import_snapshot_refuses_what_is_not_a_snapshot(void **state)
{
	(void)state;
	static const char text[] = "# tracer: nop\n";
	tl_import imp;
	memset(&imp, 0xa5, sizeof imp);
	char err[256] = "";
	assert_int_equal(tl_import_snapshot(text, sizeof text - 1, &imp, err, sizeof err), -EINVAL);
	assert_true(err[0] != '\0');
	char model_err[256] = "";
	tl_model model;
	assert_int_equal(tl_model_read_binary(text, sizeof text - 1, &model, model_err,
	                                      sizeof model_err),
	                 -EINVAL);
	assert_string_equal(err, model_err);

	/* a recorded snapshot cut inside its header */
	const char *path = tl_test_path("import-cut-header", ".tl");
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	TL_TRACE_EVENT_INSTANT0("imp", "one", TL_EVENT_SCOPE_THREAD);
	assert_int_equal(tl_snapshot_binary(path), 0);
	tl_shutdown();
	size_t len;
	char *data = tl_test_read_file(path, &len);
	assert_true(len > 8);
	err[0] = '\0';
	assert_int_equal(tl_import_snapshot(data, 8, &imp, err, sizeof err), -EINVAL);
	assert_true(err[0] != '\0');
	/* whole, the same bytes import */
	assert_int_equal(tl_import_snapshot(data, len, &imp, err, sizeof err), 0);
	assert_int_equal(imp.nslices, 1);
	tl_import_free(&imp);
	free(data);
	unlink(path);
}

static void test_import_model_keeps_the_snapshot_clock(void **state)
{
	(void)state;
	tl_model model = {0};
	model.clock_id = 1;
	tl_import imp;
	assert_int_equal(tl_import_model(&model, &imp), 0);
	assert_int_equal(imp.clock, TL_TRACE_CLOCK_MONO);
	tl_import_free(&imp);
	tl_model_free(&model);
}

/* The model's clock_id after importing text. */
static int clock_id_of_text(const char *text)
{
	tl_import imp;
	tl_model model;
	import_text(text, &imp);
	assert_int_equal(tl_import_to_model(&imp, &model), 0);
	int clock_id = model.clock_id;
	tl_model_free(&model);
	tl_import_free(&imp);
	return clock_id;
}

static void test_import_clock_is_the_one_the_timeline_comment_names(void **state)
{
	(void)state;
	assert_int_equal(
	    clock_id_of_text("# tracer: nop\n"
	                     "# timeline: recorder=tracefs clock=boot instance=t cpus=2\n" LINE(
	                         7, 10, "1.0", "B|10|a")),
	    7);
	assert_int_equal(
	    clock_id_of_text("# tracer: nop\n"
	                     "# timeline: recorder=ring clock=mono snapshot_ns=1\n" LINE(
	                         7, 10, "1.0", "B|10|a")),
	    1);
}

static void test_import_clock_of_text_that_does_not_name_it_is_unknown(void **state)
{
	(void)state;
	assert_int_equal(clock_id_of_text("# tracer: nop\n" LINE(7, 10, "1.0", "B|10|a")),
	                 TL_MODEL_CLOCK_UNKNOWN);
	assert_int_equal(clock_id_of_text("cpus=2\n  a-7 [000] 1.0: print: B|10|a\n"),
	                 TL_MODEL_CLOCK_UNKNOWN);
}

static void test_import_json_clock_is_its_metadata_clock(void **state)
{
	(void)state;
	tl_import imp;
	import_json("{\"traceEvents\":[],\"metadata\":{\"recorder\":\"ring\",\"clock\":\"mono\","
	            "\"clock_id\":1}}",
	            &imp);
	assert_int_equal(imp.clock, TL_TRACE_CLOCK_MONO);
	tl_import_free(&imp);
	import_json("{\"traceEvents\":[],\"metadata\":{\"clock\":{\"name\":\"boot\"}}}", &imp);
	assert_int_equal(imp.clock, TL_TRACE_CLOCK_UNKNOWN);
	tl_import_free(&imp);
	import_json("[{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1}]", &imp);
	assert_int_equal(imp.clock, TL_TRACE_CLOCK_UNKNOWN);
	tl_import_free(&imp);
}

/* A parent_ts marker with a tgid column, a realtime_ts one without (its
 * thread's later B names the process), and one of another form. */
static const char clock_sync_lines[] =
    "# tracer: nop\n"
    "  t-7 (10) [000] .... 5.000100: tracing_mark_write: "
    "trace_event_clock_sync: parent_ts=2.000050\n"
    "  t-8 (-----) [000] .... 5.000200: tracing_mark_write: "
    "trace_event_clock_sync: realtime_ts=1700000000123\n"
    "  t-8 (20) [000] .... 5.5: tracing_mark_write: B|20|a\n"
    "  t-8 (20) [000] .... 6.0: tracing_mark_write: trace_event_clock_sync: name=x y=z\n";

/* Clock sync markers are kept with their line, time and writer: the
 * process from the tgid column, or from the thread's own payloads. */
static void test_import_keeps_clock_sync_markers_and_their_writer(void **state)
{
	(void)state;
	tl_import imp;
	import_text(clock_sync_lines, &imp);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_MARKER_UNSUPPORTED], 3);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_PARSE_FAILURE], 0);
	assert_int_equal(imp.nclock_syncs, 2);
	const tl_import_clock_sync *c = &imp.clock_syncs[0];
	assert_int_equal(c->kind, TL_CLOCK_SYNC_PARENT_TS);
	assert_int_equal(c->ts, 5000100000);
	assert_int_equal(c->value_ns, 2000050000);
	assert_int_equal(c->tid, 7);
	assert_int_equal(c->pid, 10);
	assert_int_equal(c->line, 2);
	c = &imp.clock_syncs[1];
	assert_int_equal(c->kind, TL_CLOCK_SYNC_REALTIME_TS);
	assert_int_equal(c->ts, 5000200000);
	assert_int_equal(c->value_ns, 1700000000123000000);
	assert_int_equal(c->tid, 8);
	assert_int_equal(c->pid, 20); /* from its B|20 */
	tl_import_free(&imp);
}

/* The JSON exporter's clock values reach the import and its model. */
static void test_import_json_clock_values_reach_the_model(void **state)
{
	(void)state;
	tl_import imp;
	import_json(
	    "{\"traceEvents\":[{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
	    "\"ts\":1}],\"metadata\":{\"clock\":\"boot\",\"clock_id\":7,"
	    "\"boottime_ns\":5000,\"monotonic_ns\":4000,\"realtime_ns\":1700000000000000000}}",
	    &imp);
	assert_true(imp.clock_values.known);
	assert_int_equal(imp.clock_values.monotonic_ns, 4000);
	tl_model model;
	assert_int_equal(tl_import_to_model(&imp, &model), 0);
	assert_int_equal(model.boottime_ns, 5000);
	assert_int_equal(model.monotonic_ns, 4000);
	assert_int_equal(model.realtime_ns, 1700000000000000000);
	tl_model_free(&model);
	tl_import_free(&imp);
}

/* Lines 3 (a payload that does not parse, at 3 s), 4 (not an event line) and
 * 5 (a payload that does not parse, at 1 s: imported before line 3). */
static const char failing_lines[] = "# tracer: nop\n" LINE(7, 10, "2.0", "B|10|good")
    LINE(7, 10, "3.0", "X|10|bad phase") "not an event line\n" LINE(7, 10, "1.0", "C|10|c|1.5");

static void test_import_keeps_the_first_line_that_could_not_be_read(void **state)
{
	(void)state;
	tl_import imp;
	import_text(failing_lines, &imp);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_PARSE_FAILURE], 3);
	assert_int_equal(imp.first_failure_line, 3);
	assert_string_equal(imp.first_failure_text, LINE_TEXT(7, 10, "3.0", "X|10|bad phase"));
	assert_false(tl_import_is_empty(&imp));
	tl_import_free(&imp);
}

static void test_read_file_keeps_the_first_line_that_could_not_be_read_and_the_clock(void **state)
{
	(void)state;
	const char *path = tl_test_path("import-failures", ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(failing_lines, f);
	fputs("# timeline: recorder=tracefs clock=boot\n", f);
	fclose(f);
	tl_import imp;
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), 0);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_PARSE_FAILURE], 3);
	assert_int_equal(imp.first_failure_line, 3);
	assert_string_equal(imp.first_failure_text, LINE_TEXT(7, 10, "3.0", "X|10|bad phase"));
	assert_int_equal(imp.clock, TL_TRACE_CLOCK_BOOT);
	tl_import_free(&imp);
}

/* The number of the last line, left without '\n' and not read, whether
 * the text is streamed from a file or read whole. */
static void test_read_file_keeps_the_number_of_an_unterminated_last_line(void **state)
{
	(void)state;
	static const char text[] =
	    "# tracer: nop\n" LINE(7, 10, "1.0", "B|10|kept") LINE_TEXT(7, 10, "2.0", "E|10");
	tl_import imp;
	import_text(text, &imp);
	assert_int_equal(imp.unterminated_line, 3);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_UNTERMINATED_LINE], 1);
	tl_import_free(&imp);
	const char *path = tl_test_path("import-unterminated", ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), 0);
	assert_int_equal(imp.unterminated_line, 3);
	assert_int_equal(imp.nslices, 1);
	assert_int_equal(imp.slices[0].dur, -1); /* its end was the line not read */
	tl_import_free(&imp);
	unlink(path);
}

/* Reads bytes written to a file: the format the importer finds, or the
 * error's message. */
static int read_bytes_of_file(const void *bytes, size_t len, tl_trace_format *format,
                              tl_read_error *err)
{
	const char *path = tl_test_path("import-format", ".bin");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	tl_import imp;
	memset(err, 0, sizeof *err);
	int rc = tl_import_read_file(path, &imp, format, err);
	if (rc == 0)
		tl_import_free(&imp);
	unlink(path);
	return rc;
}

/* A snapshot is told by its magic, before any text rule: one whose
 * thread is named "# tracer" is no ftrace text, and one that is damaged
 * gets the snapshot reader's error, not "not a trace". */
static void test_format_of_a_snapshot_is_told_by_its_magic_first(void **state)
{
	(void)state;
	const char *path = tl_test_path("import-magic", ".tl");
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	tl_thread_set_name("# tracer: nop");
	TL_TRACE_EVENT_INSTANT0("imp", "one", TL_EVENT_SCOPE_THREAD);
	assert_int_equal(tl_snapshot_binary(path), 0);
	tl_shutdown();
	size_t len;
	char *data = tl_test_read_file(path, &len);
	assert_non_null(data);
	unlink(path);
	assert_int_equal(tl_trace_format_sniff(data, len), TL_TRACE_FORMAT_BINARY);
	tl_trace_format format;
	tl_read_error err;
	assert_int_equal(read_bytes_of_file(data, len, &format, &err), 0);
	assert_int_equal(format, TL_TRACE_FORMAT_BINARY);
	/* a chunk type and size made nonsense: the snapshot's own error */
	memset(data + TL_SNAPSHOT_HEADER_BYTES, 0xff, 16);
	assert_int_equal(read_bytes_of_file(data, len, &format, &err), -ENODATA);
	assert_int_equal(format, TL_TRACE_FORMAT_BINARY);
	assert_non_null(strstr(err.message, "snapshot is truncated at byte 32"));
	free(data);
}

/* A file that starts with a Trace.packet tag and holds bytes text does
 * not is a Perfetto trace, as Perfetto tells one, even when its first
 * packet does not parse: the Perfetto reader's error names the byte. */
static void test_format_of_a_damaged_perfetto_trace_is_perfetto(void **state)
{
	(void)state;
	/* a packet whose first field has wire type 7, which protobuf has not */
	static const char damaged[] = "\x0a\x06\x0f\x01\x68\x01\x50\x01";
	tl_trace_format format;
	tl_read_error err;
	assert_int_equal(tl_trace_format_sniff(damaged, sizeof damaged - 1),
	                 TL_TRACE_FORMAT_PERFETTO);
	assert_int_equal(read_bytes_of_file(damaged, sizeof damaged - 1, &format, &err), -EINVAL);
	assert_int_equal(format, TL_TRACE_FORMAT_PERFETTO);
	assert_non_null(strstr(err.message, "byte "));
	/* a line feed and then text is no Perfetto trace */
	static const char text[] = "\nnot a trace\n";
	assert_int_equal(tl_trace_format_sniff(text, sizeof text - 1), TL_TRACE_FORMAT_UNKNOWN);
	assert_int_equal(read_bytes_of_file(text, sizeof text - 1, &format, &err), -EINVAL);
	assert_non_null(strstr(err.message, "not a trace"));
}

/* A file of nothing, or nothing but white space, is said to be that. */
static void test_read_file_of_nothing_or_white_space_says_so(void **state)
{
	(void)state;
	tl_trace_format format;
	tl_read_error err;
	assert_int_equal(read_bytes_of_file("", 0, &format, &err), -EINVAL);
	assert_string_equal(err.message, "empty file: it holds no events");
	static const char *const blanks[] = {" \n", "\n\n\t\r\n", "   \n  \n"};
	for (size_t i = 0; i < sizeof blanks / sizeof blanks[0]; i++) {
		assert_int_equal(read_bytes_of_file(blanks[i], strlen(blanks[i]), &format, &err),
		                 -EINVAL);
		char want[80];
		snprintf(want, sizeof want,
		         "nothing but white space (%zu bytes): it holds no events",
		         strlen(blanks[i]));
		assert_string_equal(err.message, want);
		assert_int_equal(format, TL_TRACE_FORMAT_UNKNOWN);
	}
}

/* A snapshot read in part says what it lost in err, the read succeeding. */
static void test_read_file_notes_what_a_truncated_snapshot_lost(void **state)
{
	(void)state;
	const char *path = tl_test_path("import-truncated", ".tl");
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	for (int i = 0; i < 50; i++)
		TL_TRACE_EVENT_INSTANT0("imp", "one", TL_EVENT_SCOPE_THREAD);
	assert_int_equal(tl_snapshot_binary(path), 0);
	tl_shutdown();
	size_t len;
	char *data = tl_test_read_file(path, &len);
	assert_non_null(data);
	unlink(path);
	tl_trace_format format;
	tl_read_error err;
	assert_int_equal(read_bytes_of_file(data, len - 16, &format, &err), 0);
	assert_non_null(strstr(err.message, "snapshot is truncated"));
	assert_int_equal(read_bytes_of_file(data, len, &format, &err), 0);
	assert_string_equal(err.message, "");
	free(data);
}

/* Everything an import holds, printed; malloc'd. */
static char *import_printed(const tl_import *imp)
{
	char *printed = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&printed, &len);
	assert_non_null(mem);
	tl_import_print(imp,
	                TL_PRINT_DEFAULT | TL_PRINT_ARG | TL_PRINT_PROCESS | TL_PRINT_THREAD |
	                    TL_PRINT_STAT,
	                mem);
	fclose(mem);
	return printed;
}

/* Asserts that reading text from a file imports what the whole-buffer
 * reader and tl_import_build do; returns what was read, printed. */
static char *assert_file_reads_as_buffer(const char *text, size_t len)
{
	tl_ftrace_text t;
	tl_import imp;
	assert_int_equal(tl_ftrace_text_read(text, len, 0, &t, NULL), 0);
	assert_int_equal(tl_import_build(&t, NULL, &imp), 0);
	tl_ftrace_text_free(&t);
	char *want = import_printed(&imp);
	tl_import_free(&imp);

	const char *path = tl_test_path("import-stream", ".txt");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	tl_trace_format format;
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, &format, &err), 0);
	assert_int_equal(format, TL_TRACE_FORMAT_FTRACE);
	char *got = import_printed(&imp);
	tl_import_free(&imp);
	unlink(path);
	size_t same = 0;
	while (got[same] && got[same] == want[same])
		same++;
	if (got[same] != want[same]) {
		size_t line = same;
		while (line && got[line - 1] != '\n')
			line--;
		fail_msg("read from the file, from byte %zu:\n%.200s\nread whole:\n%.200s", line,
		         got + line, want + line);
	}
	free(want);
	return got;
}

/* A growing text buffer for the large inputs below. */
typedef struct text_buf {
	char *s;
	size_t len, cap;
} text_buf;

static void text_add(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_buf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		assert_true(n >= 0);
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		b->cap = (b->cap + (size_t)n) * 2;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
}

/*
 * Sorted systrace text of about 3 MiB, so a file reader that reads by the
 * MiB sees lines cut by its reads: a header up to "TRACE:", a "cpus=" line,
 * nested slices on threads renamed along the way, a name longer than a
 * read, kernel events, a line that does not parse and an unterminated end.
 */
static void sorted_text(text_buf *b)
{
	text_add(b, "captured by atrace\nTRACE:\ncpus=4\n# tracer: nop\n");
	for (unsigned i = 0; i < 40000; i++) {
		unsigned tid = 10 + i % 5, s = 1 + i / 1000000, us = i % 1000000;
		text_add(b, "  task%u-%u (7) [001] .... %u.%06u: tracing_mark_write: B|7|work %u\n",
		         i / 10000, tid, s, us, i);
		if (i == 20001) {
			text_add(b, "  long-%u (7) [001] .... %u.%06u: tracing_mark_write: B|7|",
			         tid, s, us);
			for (unsigned k = 0; k < (3u << 18); k++)
				text_add(b, "long");
			text_add(b, "\n  long-%u (7) [001] .... %u.%06u: tracing_mark_write: E|7\n",
			         tid, s, us);
		}
		if (i % 7 == 0)
			text_add(b, "  <idle>-0 (-----) [000] d..2 %u.%06u: sched_switch: x\n", s,
			         us);
		/* Each thread alternates one begin with a begin and two ends. */
		if (i % 2)
			text_add(b,
			         "  task-%u (7) [001] .... %u.%06u: tracing_mark_write: E|7\n"
			         "  task-%u (7) [001] .... %u.%06u: tracing_mark_write: E|7\n",
			         tid, s, us, tid, s, us);
	}
	text_add(b, "not an event line\n");
	text_add(b, "  task-10 (7) [001] .... 2.000000: tracing_mark_write: B|7|cut");
}

static void test_read_file_streams_sorted_text_as_the_buffer_reader_reads_it(void **state)
{
	(void)state;
	text_buf b = {0};
	sorted_text(&b);
	char *got = assert_file_reads_as_buffer(b.s, b.len);
	assert_non_null(strstr(got, "stat name=\"systrace_kernel_event_skipped\""));
	assert_non_null(strstr(got, "stat name=\"systrace_parse_failure\" value=1"));
	assert_non_null(strstr(got, "stat name=\"systrace_unterminated_line\" value=1"));
	assert_non_null(strstr(got, "name=\"longlonglong"));
	free(got);
	free(b.s);
}

static void test_read_file_sorts_text_whose_times_go_back(void **state)
{
	(void)state;
	text_buf b = {0};
	sorted_text(&b);
	b.len -= strlen("  task-10 (7) [001] .... 2.000000: tracing_mark_write: B|7|cut");
	/* Earlier than all but the first slice: it closes "work 0" when sorted. */
	text_add(&b, "  task-10 (7) [001] .... 1.000000: tracing_mark_write: E|7\n");
	char *got = assert_file_reads_as_buffer(b.s, b.len);
	assert_non_null(strstr(got, "slice ts=1000000000 dur=0 name=\"work 0\""));
	free(got);
	free(b.s);
}

static void test_read_file_streams_html_systrace(void **state)
{
	(void)state;
	const char text[] = "<!DOCTYPE html>\n<html>\n"
	                    "<script class=\"trace-data\" type=\"application/text\">\n"
	                    "# tracer: nop\n#           TASK-PID    TGID   CPU#\n"
	                    "  a-1 (1) [0] 1.0: print: B|1|x\n"
	                    "</script>\n  a-1 (1) [0] 2.0: print: E|1\n";
	char *got = assert_file_reads_as_buffer(text, sizeof text - 1);
	assert_non_null(strstr(got, "slice ts=1000000000 dur=-1 name=\"x\""));
	free(got);
}

static void test_cli_slices_reports_malformed_json_with_position(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	const char *in = tl_test_path("bad", ".json");
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\":[\n{\"ph\":\"B\",\"name\":\"a\x02\"}]}", f);
	fclose(f);
	const char *err = tl_test_path("bad", ".err");
	assert_int_equal(tl_test_run("'%s' slices '%s' 2> '%s'", cli, in, err), 1);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, ":2:"));
	assert_int_equal(tl_test_count(text, "\n"), 1);
	free(text);
}

static void test_cli_convert_reads_systrace_text(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	const char *in = tl_test_path("in", ".systrace");
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fputs("# tracer: nop\n" LINE(7, 10, "1.000000", "B|10|work")
	          LINE(7, 10, "1.500000", "E|10"),
	      f);
	fclose(f);
	const char *out = tl_test_path("out", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s' 2>/dev/null", cli, in, out), 0);
	const char *listing = tl_test_path("out", ".txt");
	assert_int_equal(tl_test_run("'%s' slices '%s' > '%s'", cli, out, listing), 0);
	char *text = tl_test_read_file(listing, NULL);
	assert_non_null(text);
	assert_non_null(
	    strstr(text, "slice ts=1000000000 dur=500000000 name=\"work\" tid=7 pid=10"));
	free(text);
}

/* Runs `timeline CMD FILE ARGS` on text; returns the exit status, with
 * what it printed on standard output and on standard error (malloc'd). */
static int run_cli_on_text(const char *cmd, const char *text, const char *args, char **out,
                           char **err)
{
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	static char in[4096];
	snprintf(in, sizeof in, "%s", tl_test_path("unread", ".txt"));
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	const char *out_path = tl_test_path("unread", ".out");
	const char *err_path = tl_test_path("unread", ".err");
	int status =
	    tl_test_run("'%s' %s '%s' %s > '%s' 2> '%s'", cli, cmd, in, args, out_path, err_path);
	*out = tl_test_read_file(out_path, NULL);
	*err = tl_test_read_file(err_path, NULL);
	assert_non_null(*out);
	assert_non_null(*err);
	/* the message names the file */
	if (**err)
		assert_non_null(strstr(*err, in));
	return status;
}

/* Every marker fails (lines 2 and 3), and line 4 is no event line. */
static const char nothing_readable[] = "cpus=2\n"
                                       "  a-7 [000] 1.0: print: tracing_mark_write: X|7|x\n"
                                       "  a-7 [000] 2.0: print: tracing_mark_write: C|7|c|1.5\n"
                                       "not an event\n";

static const char nothing_readable_error[] =
    ": nothing could be read: 3 lines failed, the first at line 2: "
    "'  a-7 [000] 1.0: print: tracing_mark_write: X|7|x'\n";

static void test_cli_slices_fails_when_no_line_could_be_read(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(run_cli_on_text("slices", nothing_readable, "", &out, &err), 1);
	assert_true(strncmp(err, "timeline slices: ", 17) == 0);
	assert_non_null(strstr(err, nothing_readable_error));
	assert_int_equal(tl_test_count(err, "\n"), 1);
	assert_string_equal(out, "");
	free(out);
	free(err);
}

static void test_cli_convert_fails_when_no_line_could_be_read(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(run_cli_on_text("convert", nothing_readable, "-o -", &out, &err), 1);
	assert_true(strncmp(err, "timeline convert: ", 18) == 0);
	assert_non_null(strstr(err, nothing_readable_error));
	assert_int_equal(tl_test_count(err, "\n"), 1);
	assert_string_equal(out, "");
	free(out);
	free(err);
}

/* Line 3 fails, lines 2 and 4 make a slice. */
static const char partly_readable[] = "# tracer: nop\n" LINE(7, 10, "1.0", "B|10|kept")
    LINE(7, 10, "1.5", "S|10|no cookie") LINE(7, 10, "2.0", "E|10");

static const char partly_readable_warning[] =
    ": 1 line could not be read, the first at line 3: "
    "'  t-7 (10) [000] .... 1.5: tracing_mark_write: S|10|no cookie'; read the rest\n";

static void test_cli_slices_warns_of_lines_that_could_not_be_read(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(run_cli_on_text("slices", partly_readable, "", &out, &err), 0);
	assert_true(strncmp(err, "timeline slices: warning: ", 26) == 0);
	assert_non_null(strstr(err, partly_readable_warning));
	assert_int_equal(tl_test_count(err, "\n"), 1);
	assert_non_null(strstr(out, "slice ts=1000000000 dur=1000000000 name=\"kept\""));
	free(out);
	free(err);
}

static void test_cli_convert_warns_of_lines_that_could_not_be_read(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(run_cli_on_text("convert", partly_readable, "-o -", &out, &err), 0);
	assert_true(strncmp(err, "timeline convert: warning: ", 27) == 0);
	assert_non_null(strstr(err, partly_readable_warning));
	assert_non_null(strstr(out, "\"name\":\"kept\""));
	free(out);
	free(err);
}

/* A JSON trace of about 3 MiB, one event per line: slices with args,
 * instants, counters and flows on a few threads, in no time order. */
static void large_json(text_buf *b)
{
	text_add(b, "{\"traceEvents\":[\n");
	for (unsigned i = 0; i < 24000; i++) {
		unsigned tid = 10 + i % 4, ts = (i * 7919u) % 1000000u;
		text_add(b,
		         "{\"ph\":\"X\",\"name\":\"work %u\",\"cat\":\"c\",\"pid\":7,"
		         "\"tid\":%u,\"ts\":%u.5,\"dur\":2,\"args\":{\"n\":%u,\"s\":\"v%u\"}},\n",
		         i, tid, ts, i, i);
		text_add(b,
		         "{\"ph\":\"i\",\"name\":\"tick\",\"s\":\"t\",\"pid\":7,\"tid\":%u,"
		         "\"ts\":%u.75},\n",
		         tid, ts);
		if (i % 5 == 0)
			text_add(b,
			         "{\"ph\":\"C\",\"name\":\"depth\",\"pid\":7,\"ts\":%u,"
			         "\"args\":{\"v\":%u}},\n",
			         ts, i % 9);
	}
	text_add(b, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,"
	            "\"args\":{\"name\":\"big\"}}\n]}\n");
}

/* A file large enough to be mapped (trace_import.c gives its pages back
 * as it reads them) imports as the same bytes read from memory do. */
static void test_read_file_imports_a_large_json_file_as_the_buffer_reader_does(void **state)
{
	(void)state;
	text_buf b = {0};
	large_json(&b);
	assert_true(b.len > (2u << 20));
	tl_import imp;
	import_json(b.s, &imp);
	char *want = import_printed(&imp);
	tl_import_free(&imp);

	const char *path = tl_test_path("import-large", ".json");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b.s, 1, b.len, f), b.len);
	assert_int_equal(fclose(f), 0);
	tl_trace_format format;
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, &format, &err), 0);
	assert_int_equal(format, TL_TRACE_FORMAT_JSON);
	char *got = import_printed(&imp);
	tl_import_free(&imp);
	unlink(path);
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(b.s);
}

/* An error near the end of a large JSON file names its line, after the
 * pages before it were given back. */
static void test_read_file_names_the_line_of_an_error_late_in_a_large_json_file(void **state)
{
	(void)state;
	text_buf b = {0};
	large_json(&b);
	size_t lines = 0;
	for (size_t i = 0; i < b.len; i++)
		lines += b.s[i] == '\n';
	/* the last line "]}" becomes "x}": the line before it ends the array badly */
	assert_true(b.len > 3 && b.s[b.len - 3] == ']');
	b.s[b.len - 3] = 'x';
	const char *path = tl_test_path("import-large-bad", ".json");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b.s, 1, b.len, f), b.len);
	assert_int_equal(fclose(f), 0);
	tl_import imp;
	tl_read_error err = {0};
	assert_int_equal(tl_import_read_file(path, &imp, NULL, &err), -EINVAL);
	unlink(path);
	assert_int_equal(err.line, lines);
	assert_int_equal(err.column, 1);
	free(b.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_import_atrace_end_with_other_pid_leaves_begin_open),
	    cmocka_unit_test(test_import_atrace_bare_end_closes_top_slice),
	    cmocka_unit_test(test_import_atrace_lines_are_sorted_by_time),
	    cmocka_unit_test(test_import_atrace_depth_limit_is_counted),
	    cmocka_unit_test(test_import_atrace_track_async_nests),
	    cmocka_unit_test(test_import_atrace_counter_on_process_track),
	    cmocka_unit_test(test_import_json_end_closes_innermost_matching),
	    cmocka_unit_test(test_import_json_complete_needs_nonnegative_dur),
	    cmocka_unit_test(test_import_json_thread_instant_needs_tid),
	    cmocka_unit_test(test_import_json_counter_rejects_bool_and_objects),
	    cmocka_unit_test(test_import_json_async_float_id_is_dropped),
	    cmocka_unit_test(test_import_json_flow_v1_non_hex_id_is_invalid),
	    cmocka_unit_test(test_import_json_flow_v1_bp_e_binds_enclosing),
	    cmocka_unit_test(test_import_json_flow_v1_end_binds_the_next_slice_of_its_thread),
	    cmocka_unit_test(test_import_json_flow_v2_without_direction_is_counted),
	    cmocka_unit_test(test_import_json_counter_value_that_is_not_finite_is_counted),
	    cmocka_unit_test(test_import_json_flow_id_beyond_64_bits_is_invalid),
	    cmocka_unit_test(test_import_move_to_model_builds_the_same_model),
	    cmocka_unit_test(test_import_to_model_keeps_each_process),
	    cmocka_unit_test(test_import_to_model_flow_survives_export_and_import),
	    cmocka_unit_test(test_import_model_reads_a_snapshot_model),
	    cmocka_unit_test(test_import_model_orders_events_as_perfetto_does),
	    cmocka_unit_test(test_import_reads_a_snapshot_as_its_model),
	    cmocka_unit_test(test_import_reads_a_snapshot_without_events),
	    cmocka_unit_test(test_import_snapshot_refuses_what_is_not_a_snapshot),
	    cmocka_unit_test(test_read_file_keeps_the_number_of_an_unterminated_last_line),
	    cmocka_unit_test(test_format_of_a_snapshot_is_told_by_its_magic_first),
	    cmocka_unit_test(test_format_of_a_damaged_perfetto_trace_is_perfetto),
	    cmocka_unit_test(test_read_file_of_nothing_or_white_space_says_so),
	    cmocka_unit_test(test_read_file_notes_what_a_truncated_snapshot_lost),
	    cmocka_unit_test(test_import_model_keeps_the_snapshot_clock),
	    cmocka_unit_test(test_import_clock_is_the_one_the_timeline_comment_names),
	    cmocka_unit_test(test_import_clock_of_text_that_does_not_name_it_is_unknown),
	    cmocka_unit_test(test_import_json_clock_is_its_metadata_clock),
	    cmocka_unit_test(test_import_keeps_the_first_line_that_could_not_be_read),
	    cmocka_unit_test(
	        test_read_file_keeps_the_first_line_that_could_not_be_read_and_the_clock),
	    cmocka_unit_test(test_read_file_streams_sorted_text_as_the_buffer_reader_reads_it),
	    cmocka_unit_test(test_read_file_sorts_text_whose_times_go_back),
	    cmocka_unit_test(test_read_file_streams_html_systrace),
	    cmocka_unit_test(test_cli_slices_reports_malformed_json_with_position),
	    cmocka_unit_test(test_cli_convert_reads_systrace_text),
	    cmocka_unit_test(test_cli_slices_fails_when_no_line_could_be_read),
	    cmocka_unit_test(test_import_keeps_clock_sync_markers_and_their_writer),
	    cmocka_unit_test(test_import_json_clock_values_reach_the_model),
	    cmocka_unit_test(test_cli_convert_fails_when_no_line_could_be_read),
	    cmocka_unit_test(test_cli_slices_warns_of_lines_that_could_not_be_read),
	    cmocka_unit_test(test_cli_convert_warns_of_lines_that_could_not_be_read),
	    cmocka_unit_test(test_read_file_imports_a_large_json_file_as_the_buffer_reader_does),
	    cmocka_unit_test(test_read_file_names_the_line_of_an_error_late_in_a_large_json_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
