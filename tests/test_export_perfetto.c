/*
 * The Perfetto exporter, fed hand-built trace models. Every output is
 * decoded by protoc against Perfetto's schema (tests/fixtures/perfetto/)
 * with no unknown field, and read back by `timeline slices`' importer to
 * the same items as the JSON export of the same model.
 */
#include "support/test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/timeline.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/perfetto_reader.h"

#define PID 1000
#define MAIN 1001
#define WORKER 1002
#define SNAPSHOT_NS 10000000LL /* 10 ms */

#include "support/model_builder.h"

/* Exports the model with an exporter into a fresh file; returns its path. */
static const char *export_to(const tl_model *model,
                             int (*exporter)(const tl_model *, int, tl_export_counts *),
                             const char *ext, tl_export_counts *counts)
{
	const char *path = tl_test_path("export", ext);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(exporter(model, fd, counts), 0);
	assert_int_equal(close(fd), 0);
	return path;
}

/* The Perfetto export of the builder's model, decoded by protoc. */
typedef struct decoded {
	const char *path;
	char *text;
	tl_export_counts counts;
} decoded;

static decoded export_decoded(builder *b)
{
	decoded d = {0};
	d.path = export_to(finish(b), tl_export_perfetto, ".perfetto-trace", &d.counts);
	d.text = tl_test_perfetto_decode(d.path);
	return d;
}

static void decoded_free(decoded *d)
{
	free(d->text);
}

/*
 * The packet (protoc's text of one "packet { ... }") that contains every
 * needle, searching from the n-th packet on; fails the test when none does.
 * Returns a malloc'd copy.
 */
static char *packet_with(const char *text, const char *const *needles, size_t nneedles)
{
	const char *p = text;
	while ((p = strstr(p, "packet {")) != NULL) {
		const char *end = strstr(p + 1, "\npacket {");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *packet = strndup(p, len);
		assert_non_null(packet);
		size_t found = 0;
		while (found < nneedles && strstr(packet, needles[found]))
			found++;
		if (found == nneedles)
			return packet;
		free(packet);
		p += len;
	}
	fail_msg("no packet has %s ... (%zu needles)\n--- decoded ---\n%s", needles[0], nneedles,
	         text);
	return NULL;
}

#define PACKET_WITH(text, ...)                                                                     \
	packet_with((text), (const char *const[]){__VA_ARGS__},                                    \
	            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("lacks %s\n--- text ---\n%s", needle, text);
}

/* The JSON and Perfetto exports of one model read back to the same items. */
static void assert_same_items_as_json(builder *b)
{
	const tl_model *model = finish(b);
	const char *json = export_to(model, tl_export_json, ".json", NULL);
	const char *perfetto = export_to(model, tl_export_perfetto, ".perfetto-trace", NULL);
	char *from_json = tl_test_slices(json);
	char *from_perfetto = tl_test_slices(perfetto);
	if (strcmp(from_json, from_perfetto) != 0)
		fail_msg("the items differ\n--- from JSON ---\n%s--- from Perfetto ---\n%s",
		         from_json, from_perfetto);
	assert_true(strlen(from_json) > 0);
	free(from_json);
	free(from_perfetto);
}

static tl_model_event *arg(tl_model_event *e, const char *key, tl_arg_type type)
{
	tl_model_arg *a = &e->args[e->nargs++];
	a->key = key;
	a->type = type;
	return e;
}

static void counter(builder *b, int64_t ts, const char *name, int is_double, double d, int64_t i)
{
	tl_model_event *e = add(b, MAIN, TL_PHASE_COUNTER, ts, name);
	e->counter_is_double = (uint8_t)is_double;
	if (is_double) /* one union: the value the event says it has */
		e->counter_d = d;
	else
		e->counter_i = i;
}

/* A model with every event kind, threads named and not. */
static void every_kind(builder *b)
{
	name_thread(b, MAIN, "main");
	begin(b, MAIN, 1000001, "frame");
	complete(b, MAIN, 1100003, 1300007, "update");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1200000, "job", 7, 0);
	add(b, MAIN, TL_PHASE_INSTANT, 1400000, "vsync")->scope = TL_EVENT_SCOPE_THREAD;
	add(b, MAIN, TL_PHASE_INSTANT, 1400100, "level")->scope = TL_EVENT_SCOPE_PROCESS;
	add(b, MAIN, TL_PHASE_INSTANT, 1400200, "sync")->scope = TL_EVENT_SCOPE_GLOBAL;
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1500000, "load")->id = 42;
	counter(b, 1600000, "depth", 0, 0, 3);
	counter(b, 1700000, "ms", 1, 2.5, 0);
	end(b, MAIN, 2000009);
	begin(b, WORKER, 1800000, "run");
	flow(b, WORKER, TL_PHASE_FLOW_END, 1850000, "job", 7, 0);
	add(b, WORKER, TL_PHASE_ASYNC_END, 1900000, "load")->id = 42;
	end(b, WORKER, 2100000);
	tl_model_event *e = add(b, WORKER, TL_PHASE_INSTANT, 2200000, "args");
	arg(e, "i", TL_ARG_INT)->args[0].v.i = -5;
	arg(e, "u", TL_ARG_UINT)->args[1].v.u = 18446744073709551615ull;
	arg(e, "d", TL_ARG_DOUBLE)->args[2].v.d = 0.25;
	arg(e, "s", TL_ARG_STRING)->args[3].v.s = "text";
}

/* ---------------------------------------------------------------------------
 * The stream and its sequence
 * ------------------------------------------------------------------------- */

static void test_perfetto_empty_model_decodes_with_clock_and_process(void **state)
{
	(void)state;
	builder *b = builder_new();
	decoded d = export_decoded(b);
	char *clock = PACKET_WITH(
	    d.text, "clock_snapshot {", "primary_trace_clock: BUILTIN_CLOCK_BOOTTIME",
	    "clock_id: 6\n      timestamp: 10000000\n", "clock_id: 3\n      timestamp: 9999995\n");
	free(clock);
	char *process =
	    PACKET_WITH(d.text, "track_descriptor {", "pid: 1000", "process_name: \"app\"");
	free(process);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_clock_snapshot_has_realtime(void **state)
{
	(void)state;
	builder *b = builder_new();
	decoded d = export_decoded(b);
	char *clock = PACKET_WITH(d.text, "clock_snapshot {",
	                          "clock_id: 1\n      timestamp: 1700000000000000000\n");
	free(clock);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_mono_clock_is_primary_and_timestamp_clock(void **state)
{
	(void)state;
	builder *b = builder_new();
	b->model.clock_id = 1;
	decoded d = export_decoded(b);
	char *clock = PACKET_WITH(d.text, "primary_trace_clock: BUILTIN_CLOCK_MONOTONIC",
	                          "timestamp_clock_id: 3");
	free(clock);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_first_packet_clears_state_and_later_ones_need_it(void **state)
{
	(void)state;
	builder *b = builder_new();
	every_kind(b);
	decoded d = export_decoded(b);
	size_t packets = tl_test_count(d.text, "\npacket {") + 1;
	assert_int_equal(tl_test_count(d.text, "trusted_packet_sequence_id: 1\n"), packets);
	assert_int_equal(tl_test_count(d.text, "sequence_flags: 1\n"), 1);
	assert_int_equal(tl_test_count(d.text, "sequence_flags: 2\n"), packets - 1);
	const char *first_clear = strstr(d.text, "sequence_flags: 1\n");
	const char *second_packet = strstr(d.text, "\npacket {");
	assert_true(first_clear < second_packet);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_threads_described_with_names_and_fallbacks(void **state)
{
	(void)state;
	builder *b = builder_new();
	name_thread(b, MAIN, "main");
	begin(b, WORKER, 1000, "run");
	end(b, WORKER, 2000);
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "thread {", "tid: 1001", "thread_name: \"main\""));
	free(PACKET_WITH(d.text, "thread {", "tid: 1002", "thread_name: \"thread 1002\""));
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_unnamed_process_gets_pid_name(void **state)
{
	(void)state;
	builder *b = builder_new();
	b->model.process_name = "";
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "process {", "process_name: \"process 1000\""));
	decoded_free(&d);
	builder_free(b);
}

/* ---------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------- */

static void test_perfetto_slices_are_begin_end_at_exact_ns(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000001, "outer");
	begin(b, MAIN, 1500003, "inner");
	end(b, MAIN, 1700005);
	end(b, MAIN, 2000007);
	decoded d = export_decoded(b);
	const char *order[] = {"timestamp: 1000001", "type: TYPE_SLICE_BEGIN",
	                       "timestamp: 1500003", "type: TYPE_SLICE_BEGIN",
	                       "timestamp: 1700005", "type: TYPE_SLICE_END",
	                       "timestamp: 2000007", "type: TYPE_SLICE_END"};
	const char *at = d.text;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		at = strstr(at, order[i]);
		if (!at)
			fail_msg("%s missing or out of order\n%s", order[i], d.text);
	}
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_end_repeats_begin_name_and_category(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_BEGIN, 1000, "fetch")->cat = "net";
	add(b, MAIN, TL_PHASE_END, 2000, NULL)->cat = "other";
	decoded d = export_decoded(b);
	char *begin_packet = PACKET_WITH(d.text, "type: TYPE_SLICE_BEGIN");
	char *end_packet = PACKET_WITH(d.text, "type: TYPE_SLICE_END");
	assert_contains(begin_packet, "category_iids: 1\n");
	assert_contains(begin_packet, "name_iid: 1\n");
	assert_contains(end_packet, "category_iids: 1\n");
	assert_contains(end_packet, "name_iid: 1\n");
	assert_int_equal(tl_test_count(d.text, "name: \"other\""), 0);
	free(begin_packet);
	free(end_packet);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_complete_event_is_begin_and_end(void **state)
{
	(void)state;
	builder *b = builder_new();
	complete(b, MAIN, 1000123, 1999877, "work");
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "timestamp: 1000123", "type: TYPE_SLICE_BEGIN"));
	free(PACKET_WITH(d.text, "timestamp: 1999877", "type: TYPE_SLICE_END"));
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_instants_go_on_thread_process_and_global_tracks(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_INSTANT, 1000, "t")->scope = TL_EVENT_SCOPE_THREAD;
	add(b, MAIN, TL_PHASE_INSTANT, 2000, "p")->scope = TL_EVENT_SCOPE_PROCESS;
	add(b, MAIN, TL_PHASE_INSTANT, 3000, "g")->scope = TL_EVENT_SCOPE_GLOBAL;
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_INSTANT"), 3);
	free(PACKET_WITH(d.text, "timestamp: 3000", "track_uuid: 0\n"));

	tl_perfetto_trace trace;
	size_t len;
	char *data = tl_test_read_file(d.path, &len);
	assert_int_equal(tl_perfetto_read(data, len, &trace, NULL), 0);
	assert_int_equal(trace.nevents, 3);
	const tl_perfetto_track *thread = tl_perfetto_track_find(&trace, trace.events[0].track);
	const tl_perfetto_track *process = tl_perfetto_track_find(&trace, trace.events[1].track);
	assert_non_null(thread);
	assert_int_equal(thread->kind, TL_PERFETTO_TRACK_THREAD);
	assert_int_equal(thread->tid, MAIN);
	assert_non_null(process);
	assert_int_equal(process->kind, TL_PERFETTO_TRACK_PROCESS);
	assert_int_equal(process->pid, PID);
	assert_int_equal(trace.events[2].track, 0);
	tl_perfetto_trace_free(&trace);
	free(data);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_int_and_double_counters_on_a_counter_track(void **state)
{
	(void)state;
	builder *b = builder_new();
	counter(b, 1000, "depth", 0, 0, -3);
	counter(b, 2000, "depth", 0, 0, 4);
	counter(b, 3000, "ms", 1, 2.5, 0);
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "track_descriptor {", "name: \"depth value\"", "counter {"));
	free(PACKET_WITH(d.text, "track_descriptor {", "name: \"ms value\"", "counter {"));
	assert_int_equal(tl_test_count(d.text, "name: \"depth value\""), 1);
	free(PACKET_WITH(d.text, "type: TYPE_COUNTER", "counter_value: -3"));
	free(PACKET_WITH(d.text, "type: TYPE_COUNTER", "counter_value: 4"));
	free(PACKET_WITH(d.text, "type: TYPE_COUNTER", "double_counter_value: 2.5"));
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_counter_nan_left_out_and_infinity_clamped(void **state)
{
	(void)state;
	builder *b = builder_new();
	counter(b, 1000, "c", 1, NAN, 0);
	counter(b, 2000, "c", 1, INFINITY, 0);
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_COUNTER"), 1);
	assert_contains(d.text, "double_counter_value: 1.7976931348623157e+308");
	free(PACKET_WITH(d.text, "name: \"export_counter_values_non_finite\"", "int_value: 2"));
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_async_slices_get_a_track_per_id_and_category(void **state)
{
	(void)state;
	builder *b = builder_new();
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1000, "load")->id = 1;
	add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1500, "load")->id = 2;
	tl_model_event *other = add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 1600, "load");
	other->id = 1;
	other->cat = "io";
	add(b, WORKER, TL_PHASE_ASYNC_END, 2000, "load")->id = 1;
	add(b, WORKER, TL_PHASE_ASYNC_END, 2500, "load")->id = 2;
	add(b, WORKER, TL_PHASE_ASYNC_INSTANT, 2600, "step")->id = 2;
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "parent_uuid:"), 3);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_SLICE_BEGIN"), 3);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_SLICE_END"), 2);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_INSTANT"), 1);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_flows_as_flow_ids_and_terminating_flow_ids(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "submit");
	flow(b, MAIN, TL_PHASE_FLOW_BEGIN, 1100, "job", 9, 0);
	end(b, MAIN, 2000);
	begin(b, WORKER, 3000, "step");
	flow(b, WORKER, TL_PHASE_FLOW_STEP, 3100, "job", 9, 0);
	end(b, WORKER, 4000);
	begin(b, WORKER, 5000, "finish");
	flow(b, WORKER, TL_PHASE_FLOW_END, 5100, "job", 9, 0);
	end(b, WORKER, 6000);
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "flow_ids: "), 3);
	assert_int_equal(tl_test_count(d.text, "terminating_flow_ids: "), 1);
	char *first = PACKET_WITH(d.text, "timestamp: 1000\n", "flow_ids: ");
	const char *id = strstr(first, "flow_ids: ") + strlen("flow_ids: ");
	char line[64];
	snprintf(line, sizeof line, "terminating_flow_ids: %.*s", (int)strcspn(id, "\n"), id);
	free(PACKET_WITH(d.text, "timestamp: 5000\n", line));
	free(first);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_flow_step_without_begin_is_left_out(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, WORKER, 3000, "step");
	flow(b, WORKER, TL_PHASE_FLOW_STEP, 3100, "job", 9, 0);
	end(b, WORKER, 4000);
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "flow_ids: "), 0);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_every_arg_type_is_a_debug_annotation(void **state)
{
	(void)state;
	builder *b = builder_new();
	tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000, "a");
	arg(e, "i", TL_ARG_INT)->args[0].v.i = -5;
	arg(e, "u", TL_ARG_UINT)->args[1].v.u = 18446744073709551615ull;
	arg(e, "d", TL_ARG_DOUBLE)->args[2].v.d = 0.25;
	arg(e, "b", TL_ARG_BOOL)->args[3].v.b = 1;
	e = add(b, MAIN, TL_PHASE_INSTANT, 2000, "b");
	arg(e, "p", TL_ARG_POINTER)->args[0].v.p = 0x7ffd5e8c;
	arg(e, "s", TL_ARG_STRING)->args[1].v.s = "kept";
	arg(e, "c", TL_ARG_STRING_COPY)->args[2].v.s = "copied";
	decoded d = export_decoded(b);
	assert_contains(d.text, "int_value: -5");
	assert_contains(d.text, "uint_value: 18446744073709551615");
	assert_contains(d.text, "double_value: 0.25");
	assert_contains(d.text, "bool_value: true");
	assert_contains(d.text, "pointer_value: 2147311244");
	assert_contains(d.text, "string_value: \"kept\"");
	assert_contains(d.text, "string_value: \"copied\"");
	assert_int_equal(tl_test_count(d.text, "debug_annotations {"), 7);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_non_finite_double_arg_kept_as_a_double(void **state)
{
	(void)state;
	builder *b = builder_new();
	tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000, "a");
	arg(e, "nan", TL_ARG_DOUBLE)->args[0].v.d = NAN;
	arg(e, "inf", TL_ARG_DOUBLE)->args[1].v.d = -INFINITY;
	decoded d = export_decoded(b);
	assert_contains(d.text, "double_value: nan");
	assert_contains(d.text, "double_value: -inf");
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_names_and_categories_interned_once(void **state)
{
	(void)state;
	builder *b = builder_new();
	for (int i = 0; i < 10; i++) {
		tl_model_event *e = add(b, MAIN, TL_PHASE_INSTANT, 1000 + i, "tick");
		arg(e, "n", TL_ARG_INT)->args[0].v.i = i;
	}
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, " name: \"tick\""), 1);
	assert_int_equal(tl_test_count(d.text, " name: \"app\"\n"), 1);
	assert_int_equal(tl_test_count(d.text, " name: \"n\""), 1);
	assert_int_equal(tl_test_count(d.text, "name_iid: 1\n"), 20);
	char *first = PACKET_WITH(d.text, "timestamp: 1000\n", "interned_data {");
	free(first);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_open_slice_closed_at_snapshot_and_flagged(void **state)
{
	(void)state;
	builder *b = builder_new();
	begin(b, MAIN, 1000, "open");
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "type: TYPE_SLICE_BEGIN", "bool_value: true"));
	free(PACKET_WITH(d.text, "timestamp: 10000000\n", "type: TYPE_SLICE_END"));
	assert_contains(d.text, "name: \"tl_closed_at_snapshot\"");
	assert_int_equal(d.counts.unmatched_begin, 1);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_unmatched_end_dropped_and_counted(void **state)
{
	(void)state;
	builder *b = builder_new();
	end(b, MAIN, 1000);
	begin(b, MAIN, 2000, "kept");
	end(b, MAIN, 3000);
	decoded d = export_decoded(b);
	assert_int_equal(tl_test_count(d.text, "type: TYPE_SLICE_END"), 1);
	assert_int_equal(d.counts.unmatched_end, 1);
	free(PACKET_WITH(d.text, "name: \"export_unmatched_end\"", "int_value: 1"));
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_metadata_has_recorder_clock_and_stats(void **state)
{
	(void)state;
	builder *b = builder_new();
	decoded d = export_decoded(b);
	char *meta = PACKET_WITH(d.text, "chrome_events {");
	assert_contains(meta, "name: \"recorder\"\n      string_value: \"ring\"");
	assert_contains(meta, "name: \"clock\"\n      string_value: \"boot\"");
	assert_contains(meta, "name: \"events_written\"\n      int_value: 42");
	assert_contains(meta, "name: \"events_overwritten\"\n      int_value: 7");
	assert_contains(meta, "name: \"snapshot_complete\"\n      bool_value: true");
	free(meta);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_several_processes_each_described(void **state)
{
	(void)state;
	static tl_model_process processes[] = {{2000, "other"}};
	builder *b = builder_new();
	b->model.processes = processes;
	b->model.nprocesses = 1;
	begin(b, MAIN, 1000, "here");
	end(b, MAIN, 2000);
	tl_model_event *e = add(b, 2001, TL_PHASE_BEGIN, 1500, "there");
	e->pid = 2000;
	e = add(b, 2001, TL_PHASE_END, 2500, NULL);
	e->pid = 2000;
	decoded d = export_decoded(b);
	free(PACKET_WITH(d.text, "process {", "pid: 2000", "process_name: \"other\""));
	free(PACKET_WITH(d.text, "thread {", "pid: 2000", "tid: 2001"));
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_every_kind_reads_back_as_the_json_items(void **state)
{
	(void)state;
	builder *b = builder_new();
	every_kind(b);
	decoded d = export_decoded(b);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

/* ---------------------------------------------------------------------------
 * Hostile names
 * ------------------------------------------------------------------------- */

/* A model whose thread, process, event, category and arg names are name. */
static builder *named_everywhere(const char *name)
{
	builder *b = builder_new();
	b->model.process_name = name;
	name_thread(b, MAIN, name);
	tl_model_event *e = add(b, MAIN, TL_PHASE_BEGIN, 1000, name);
	e->cat = name;
	arg(e, name, TL_ARG_STRING)->args[0].v.s = name;
	add(b, MAIN, TL_PHASE_END, 2000, NULL);
	e = add(b, MAIN, TL_PHASE_INSTANT, 3000, name);
	e->cat = name;
	counter(b, 4000, name, 0, 0, 1);
	e = add(b, MAIN, TL_PHASE_ASYNC_BEGIN, 5000, name);
	e->id = 1;
	e = add(b, MAIN, TL_PHASE_ASYNC_END, 6000, name);
	e->id = 1;
	return b;
}

static void check_hostile(const char *name)
{
	builder *b = named_everywhere(name);
	decoded d = export_decoded(b);
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_empty_names_written_as_unnamed_and_default(void **state)
{
	(void)state;
	builder *b = named_everywhere("");
	decoded d = export_decoded(b);
	assert_contains(d.text, "name: \"unnamed\"");
	assert_contains(d.text, "name: \"default\"");
	assert_contains(d.text, "thread_name: \"thread 1001\"");
	assert_same_items_as_json(b);
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_names_with_bar_tab_and_newline_kept(void **state)
{
	(void)state;
	check_hostile("a|b\tc\nd\re");
	builder *b = named_everywhere("a|b\tc\nd");
	decoded d = export_decoded(b);
	assert_contains(d.text, "name: \"a|b\\tc\\nd\"");
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_invalid_utf8_replaced(void **state)
{
	(void)state;
	check_hostile("bad\xff\xc3(\xed\xa0\x80 end");
	builder *b = named_everywhere("x\xffy");
	decoded d = export_decoded(b);
	/* protoc prints U+FFFD as its octal escape */
	assert_contains(d.text, "name: \"x\\357\\277\\275y\"");
	decoded_free(&d);
	builder_free(b);
}

static void test_perfetto_very_long_names_kept_whole(void **state)
{
	(void)state;
	size_t n = 100000;
	char *name = malloc(n + 1);
	assert_non_null(name);
	for (size_t i = 0; i < n; i++)
		name[i] = (char)('a' + i % 26);
	name[n] = '\0';
	check_hostile(name);
	builder *b = named_everywhere(name);
	decoded d = export_decoded(b);
	char needle[40];
	snprintf(needle, sizeof needle, "%.20s", name + n - 20);
	assert_contains(d.text, needle);
	decoded_free(&d);
	builder_free(b);
	free(name);
}

/* ---------------------------------------------------------------------------
 * Errors and the live snapshot
 * ------------------------------------------------------------------------- */

static void test_perfetto_write_error_is_returned(void **state)
{
	(void)state;
	builder *b = builder_new();
	every_kind(b);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(tl_export_perfetto(finish(b), fds[1], NULL), -EPIPE);
	close(fds[1]);
	builder_free(b);
}

static void test_snapshot_perfetto_of_a_live_session_decodes(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_thread_set_name("perfetto-main");
	tl_emit_begin(tl_category_get("app"), "outer");
	tl_emit_end(tl_category_get("app"));
	const char *path = tl_test_path("snapshot", ".perfetto-trace");
	assert_int_equal(tl_snapshot_perfetto(path), 0);
	tl_shutdown();
	char *text = tl_test_perfetto_decode(path);
	assert_contains(text, "thread_name: \"perfetto-main\"");
	assert_contains(text, "name: \"outer\"");
	free(text);
}

static void test_snapshot_perfetto_errors(void **state)
{
	(void)state;
	assert_int_equal(tl_snapshot_perfetto(NULL), -EINVAL);
	const char *path = tl_test_path("not-running", ".perfetto-trace");
	assert_int_equal(tl_snapshot_perfetto(path), -ENODEV);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(tl_snapshot_perfetto_fd(1), -ENODEV);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_perfetto_empty_model_decodes_with_clock_and_process),
	    cmocka_unit_test(test_perfetto_clock_snapshot_has_realtime),
	    cmocka_unit_test(test_perfetto_mono_clock_is_primary_and_timestamp_clock),
	    cmocka_unit_test(test_perfetto_first_packet_clears_state_and_later_ones_need_it),
	    cmocka_unit_test(test_perfetto_threads_described_with_names_and_fallbacks),
	    cmocka_unit_test(test_perfetto_unnamed_process_gets_pid_name),
	    cmocka_unit_test(test_perfetto_slices_are_begin_end_at_exact_ns),
	    cmocka_unit_test(test_perfetto_end_repeats_begin_name_and_category),
	    cmocka_unit_test(test_perfetto_complete_event_is_begin_and_end),
	    cmocka_unit_test(test_perfetto_instants_go_on_thread_process_and_global_tracks),
	    cmocka_unit_test(test_perfetto_int_and_double_counters_on_a_counter_track),
	    cmocka_unit_test(test_perfetto_counter_nan_left_out_and_infinity_clamped),
	    cmocka_unit_test(test_perfetto_async_slices_get_a_track_per_id_and_category),
	    cmocka_unit_test(test_perfetto_flows_as_flow_ids_and_terminating_flow_ids),
	    cmocka_unit_test(test_perfetto_flow_step_without_begin_is_left_out),
	    cmocka_unit_test(test_perfetto_every_arg_type_is_a_debug_annotation),
	    cmocka_unit_test(test_perfetto_non_finite_double_arg_kept_as_a_double),
	    cmocka_unit_test(test_perfetto_names_and_categories_interned_once),
	    cmocka_unit_test(test_perfetto_open_slice_closed_at_snapshot_and_flagged),
	    cmocka_unit_test(test_perfetto_unmatched_end_dropped_and_counted),
	    cmocka_unit_test(test_perfetto_metadata_has_recorder_clock_and_stats),
	    cmocka_unit_test(test_perfetto_several_processes_each_described),
	    cmocka_unit_test(test_perfetto_every_kind_reads_back_as_the_json_items),
	    cmocka_unit_test(test_perfetto_empty_names_written_as_unnamed_and_default),
	    cmocka_unit_test(test_perfetto_names_with_bar_tab_and_newline_kept),
	    cmocka_unit_test(test_perfetto_invalid_utf8_replaced),
	    cmocka_unit_test(test_perfetto_very_long_names_kept_whole),
	    cmocka_unit_test(test_perfetto_write_error_is_returned),
	    cmocka_unit_test(test_snapshot_perfetto_of_a_live_session_decodes),
	    cmocka_unit_test(test_snapshot_perfetto_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
