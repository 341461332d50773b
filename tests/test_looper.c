/*
 * The looper tracer on one thread: printer lines, dispatch slices, the
 * history, observers, slow-dispatch call trees and thread marks. The
 * watchdog's behaviour is in test_looper_threads.c.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <timeline/looper.h>
#include <timeline/timeline.h>

#include "recorder/export/trace_model.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* A recorder whose timestamps are nanoseconds, so synthetic ones are exact. */
static void init_ns_clock(tl_recorder_kind kind, size_t bytes)
{
	tl_options o = {.struct_size = sizeof o,
	                .recorder = kind,
	                .buffer_bytes = bytes,
	                .no_tsc = true,
	                .clock = TL_CLOCK_MONOTONIC};
	assert_int_equal(tl_init(&o), 0);
}

static tl_looper_options quiet_options(void)
{
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.anr_timeout_ms = 0;
	o.lag_threshold_ms = 0;
	o.slow_dispatch_ms = 0;
	return o;
}

/* ---- printer lines ------------------------------------------------------- */

static void test_printer_parses_dispatch_line(void **state)
{
	(void)state;
	const char *line =
	    ">>>>> Dispatching to Handler (android.view.Choreographer$FrameHandler) "
	    "{c6cb0e7} android.view.Choreographer$FrameDisplayEventReceiver@2a5a1b4: 0";
	tl_looper_line p;
	assert_int_equal(tl_looper_parse_line(line, strlen(line), &p), 0);
	assert_int_equal(p.kind, TL_LOOPER_LINE_BEGIN);
	assert_int_equal(p.handler_len,
	                 strlen("Handler (android.view.Choreographer$FrameHandler) {c6cb0e7}"));
	assert_memory_equal(p.handler,
	                    "Handler (android.view.Choreographer$FrameHandler) {c6cb0e7}",
	                    p.handler_len);
	assert_int_equal(p.callback_len,
	                 strlen("android.view.Choreographer$FrameDisplayEventReceiver@2a5a1b4"));
	assert_int_equal(p.what_len, 1);
	assert_memory_equal(p.what, "0", 1);
}

static void test_printer_parses_finished_line(void **state)
{
	(void)state;
	const char *line =
	    "<<<<< Finished to Handler (android.app.ActivityThread$H) {8a3c2f1} null\n";
	tl_looper_line p;
	assert_int_equal(tl_looper_parse_line(line, strlen(line), &p), 0);
	assert_int_equal(p.kind, TL_LOOPER_LINE_END);
	assert_memory_equal(p.handler, "Handler (android.app.ActivityThread$H) {8a3c2f1}",
	                    p.handler_len);
	assert_int_equal(p.callback_len, 4);
	assert_memory_equal(p.callback, "null", 4);
}

static void test_printer_accepts_custom_handler_and_colon_in_callback(void **state)
{
	(void)state;
	const char *line = ">>>>> Dispatching to MyHandler cb: with colon: 110";
	tl_looper_line p;
	assert_int_equal(tl_looper_parse_line(line, strlen(line), &p), 0);
	assert_memory_equal(p.handler, "MyHandler", p.handler_len);
	assert_int_equal(p.handler_len, 9);
	assert_int_equal(p.callback_len, strlen("cb: with colon"));
	assert_memory_equal(p.what, "110", 3);
}

static void test_printer_rejects_garbage(void **state)
{
	(void)state;
	static const char *const garbage[] = {
	    "",
	    ">",
	    ">>>>>",
	    ">>>>> Dispatching to ",
	    ">>>>> Dispatching to Handler (x) {1} null", /* no ": what" */
	    "<<<<< Finished to ",
	    ">>>>> dispatching to Handler (x) {1} null: 1", /* case matters */
	    "<<<<<Finished to Handler",
	    "random text",
	    "\xff\xfe\x00garbage",
	};
	tl_looper_line p;
	for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
		assert_int_equal(tl_looper_parse_line(garbage[i], strlen(garbage[i]), &p), -EINVAL);
	/* an embedded NUL inside the length */
	const char nul[] = ">>>>> Dispatching to H\0x cb: 1";
	assert_int_equal(tl_looper_parse_line(nul, sizeof nul - 1, &p), -EINVAL);
	/* bytes past len are never read: a prefix alone is not a line */
	assert_int_equal(tl_looper_parse_line(">>>>> Dispatching to H cb: 1", 10, &p), -EINVAL);
	assert_int_equal(tl_looper_parse_line(NULL, 0, &p), -EINVAL);
}

static void test_println_counts_malformed_and_emits_slices(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_looper_options o = quiet_options();
	tl_looper *l = tl_looper_create(&o);
	assert_non_null(l);
	assert_int_equal(tl_looper_println(l, "nonsense"), -EINVAL);
	assert_int_equal(tl_looper_println(l, ">>>>> Dispatching to Handler (a.B) {1} null: 7"), 0);
	assert_int_equal(tl_looper_println(l, "<<<<< Finished to Handler (a.B) {1} null"), 0);
	assert_int_equal(tl_looper_println(l, "<<<<< Finished to Handler (a.B) {1} null"), 0);
	tl_looper_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_looper_stats_get(l, &st), 0);
	assert_int_equal(st.malformed_lines, 1);
	assert_int_equal(st.dispatches, 1);
	assert_int_equal(st.unbalanced, 1); /* the second end */
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "Handler (a.B) {1} null: 7"), 1);
	assert_int_equal(tl_test_count_events(&m, 'E', NULL), 1);
	tl_model_free(&m);
	tl_looper_destroy(l);
	tl_shutdown();
}

/* ---- dispatches, idle, observers ----------------------------------------- */

static void test_dispatch_and_idle_are_slices(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_looper_options o = quiet_options();
	tl_looper *l = tl_looper_create(&o);
	tl_looper_idle_begin(l);
	tl_looper_dispatch_begin(l, "work"); /* ends the idle slice */
	tl_looper_dispatch_begin(l, "nested");
	tl_looper_dispatch_end(l);
	tl_looper_dispatch_end(l);
	tl_looper_idle_begin(l);
	tl_looper_idle_end(l);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "idle"), 2);
	assert_int_equal(tl_test_count_events(&m, 'B', "work"), 1);
	assert_int_equal(tl_test_count_events(&m, 'B', "nested"), 1);
	assert_int_equal(tl_test_count_events(&m, 'E', NULL), 4);
	tl_model_free(&m);
	tl_looper_stats st = {.struct_size = sizeof st};
	tl_looper_stats_get(l, &st);
	assert_int_equal(st.dispatches, 1); /* nested ones are not counted */
	assert_int_equal(st.unbalanced, 0);
	tl_looper_destroy(l);
	tl_shutdown();
}

struct observed {
	int begins, ends, frames;
	int64_t begin_ns, end_ns, cpu_begin_ns, cpu_end_ns;
};

static void on_begin(tl_looper *l, int64_t begin_ns, void *user)
{
	(void)l;
	struct observed *o = user;
	o->begins++;
	o->begin_ns = begin_ns;
}

static void on_end(tl_looper *l, int64_t begin_ns, int64_t end_ns, int64_t cpu_begin_ns,
                   int64_t cpu_end_ns, bool is_frame, void *user)
{
	(void)l;
	struct observed *o = user;
	o->ends++;
	o->frames += is_frame;
	assert_int_equal(begin_ns, o->begin_ns);
	o->end_ns = end_ns;
	o->cpu_begin_ns = cpu_begin_ns;
	o->cpu_end_ns = cpu_end_ns;
}

static void test_observers_see_times_and_frames(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_looper_options o = quiet_options();
	o.measure_cpu_time = true;
	tl_looper *l = tl_looper_create(&o);
	struct observed seen = {0};
	tl_looper_observer obs = {
	    .dispatch_begin = on_begin, .dispatch_end = on_end, .user = &seen};
	assert_int_equal(tl_looper_add_observer(l, &obs), 0);
	assert_int_equal(tl_looper_add_observer(l, &obs), -EEXIST);
	int64_t before = tl_now_ns();
	tl_looper_dispatch_begin(l, "plain");
	sleep_ms(2);
	tl_looper_dispatch_end(l);
	int64_t after = tl_now_ns();
	assert_true(seen.begin_ns >= before && seen.end_ns <= after);
	assert_true(seen.end_ns - seen.begin_ns >= 2000000);
	assert_true(seen.cpu_begin_ns >= 0 && seen.cpu_end_ns >= seen.cpu_begin_ns);
	tl_looper_dispatch_begin_flags(l, "frame", TL_LOOPER_FRAME);
	tl_looper_dispatch_end(l);
	tl_looper_dispatch_begin(l, "late frame");
	tl_looper_mark_frame(l);
	tl_looper_dispatch_end(l);
	assert_int_equal(seen.begins, 3);
	assert_int_equal(seen.ends, 3);
	assert_int_equal(seen.frames, 2);
	tl_looper_stats st = {.struct_size = sizeof st};
	tl_looper_stats_get(l, &st);
	assert_int_equal(st.frames, 2);
	assert_int_equal(tl_looper_remove_observer(l, &obs), 0);
	assert_int_equal(tl_looper_remove_observer(l, &obs), -ENOENT);
	tl_looper_dispatch_begin(l, "unobserved");
	tl_looper_dispatch_end(l);
	assert_int_equal(seen.ends, 3);
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_observer_without_session_or_cpu_clock(void **state)
{
	(void)state;
	tl_looper_options o = quiet_options();
	tl_looper *l = tl_looper_create(&o); /* no session: nothing recorded */
	struct observed seen = {0};
	tl_looper_observer obs = {
	    .dispatch_begin = on_begin, .dispatch_end = on_end, .user = &seen};
	tl_looper_add_observer(l, &obs);
	tl_looper_dispatch_begin(l, "x");
	tl_looper_dispatch_end(l);
	assert_int_equal(seen.ends, 1);
	assert_true(seen.end_ns >= seen.begin_ns && seen.begin_ns > 0);
	assert_int_equal(seen.cpu_begin_ns, -1);
	assert_int_equal(seen.cpu_end_ns, -1);
	tl_looper_destroy(l);
}

/* ---- slow dispatches -------------------------------------------------------- */

struct captured {
	int reports;
	tl_looper_report_kind kind;
	bool mark_valid;
	size_t history_count;
	char text[8192];
	char json[16384];
	char key[512];
	char report[65536];
	int64_t elapsed_ns;
};

static void capture(const tl_looper_report *r, void *user)
{
	struct captured *c = user;
	c->reports++;
	c->kind = r->kind;
	c->mark_valid = r->mark_valid;
	c->history_count = r->history_count;
	c->elapsed_ns = r->elapsed_ns;
	snprintf(c->text, sizeof c->text, "%s", r->tree_text ? r->tree_text : "");
	snprintf(c->json, sizeof c->json, "%s", r->tree_json ? r->tree_json : "");
	snprintf(c->key, sizeof c->key, "%s", r->stack_key ? r->stack_key : "");
	snprintf(c->report, sizeof c->report, "%s", r->json);
}

/* A slice [start_ms, end_ms) after base with synthetic timestamps. */
static void slice_at(const tl_category *cat, const char *name, tl_timestamp base, int start_ms,
                     int end_ms)
{
	tl_emit(cat, TL_PHASE_BEGIN, 0, name, 0, base + (uint64_t)start_ms * 1000000, NULL, 0);
	tl_emit(cat, TL_PHASE_END, 0, NULL, 0, base + (uint64_t)end_ms * 1000000, NULL, 0);
}

/* Keeps name and count of every line of a tree: "  a count=1". */
static void tree_shape(const char *text, char *out, size_t size)
{
	size_t n = 0;
	for (const char *line = text; *line && n + 1 < size;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *total = strstr(line, " total=");
		const char *count = strstr(line, " count=");
		if (total && count && total < line + len) {
			n += (size_t)snprintf(out + n, size - n, "%.*s%.*s|", (int)(total - line),
			                      line, (int)(line + len - count), count);
		}
		line += len + (eol ? 1 : 0);
	}
	out[n < size ? n : size - 1] = '\0';
}

static void test_slow_dispatch_tree_has_exact_shape(void **state)
{
	(void)state;
	init_ns_clock(TL_RECORDER_RING, 1 << 20);
	struct captured c = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 10;
	o.on_report = capture;
	o.user = &c;
	tl_looper *l = tl_looper_create(&o);
	const tl_category *cat = tl_category_get("work");
	tl_looper_dispatch_begin(l, "dispatch");
	tl_timestamp base = tl_now();
	/* a [0,50) holding a1 [5,45); b [50,58); three tiny ones; c twice */
	tl_emit(cat, TL_PHASE_BEGIN, 0, "a", 0, base, NULL, 0);
	slice_at(cat, "a1", base, 5, 45);
	tl_emit(cat, TL_PHASE_END, 0, NULL, 0, base + 50000000, NULL, 0);
	slice_at(cat, "b", base, 50, 58);
	for (int i = 0; i < 3; i++)
		slice_at(cat, "tiny", base, 58 + i, 59 + i);
	slice_at(cat, "c", base, 61, 67);
	slice_at(cat, "c", base, 67, 73);
	sleep_ms(15);
	tl_looper_dispatch_end(l);

	assert_int_equal(c.reports, 1);
	assert_int_equal(c.kind, TL_LOOPER_REPORT_SLOW);
	assert_true(c.mark_valid);
	char shape[1024];
	tree_shape(c.text, shape, sizeof shape);
	assert_string_equal(shape, "dispatch count=1|  a count=1|    a1 count=1|  b count=1|"
	                           "  c count=2|");
	assert_non_null(strstr(c.text, "  a total=50.000ms self=10.000ms count=1\n"));
	assert_non_null(strstr(c.text, "    a1 total=40.000ms self=40.000ms count=1\n"));
	assert_non_null(strstr(c.text, "  c total=12.000ms self=12.000ms count=2\n"));
	assert_string_equal(c.key, "dispatch;a;a1");
	assert_non_null(strstr(c.json,
	                       "{\"name\":\"a1\",\"total_ns\":40000000,\"self_ns\":40000000,"
	                       "\"count\":1,\"children\":[]}"));
	assert_non_null(strstr(c.report, "\"kind\":\"slow\""));
	assert_non_null(strstr(c.report, "\"mark_valid\":true"));
	assert_int_equal(c.history_count, 1);

	tl_looper_stats st = {.struct_size = sizeof st};
	tl_looper_stats_get(l, &st);
	assert_int_equal(st.slow_reports, 1);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "looper.slow"), 1);
	tl_model_free(&m);
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_slow_dispatch_tree_keeps_at_most_max_nodes(void **state)
{
	(void)state;
	init_ns_clock(TL_RECORDER_RING, 1 << 20);
	struct captured c = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 5;
	o.on_report = capture;
	o.user = &c;
	tl_looper *l = tl_looper_create(&o);
	const tl_category *cat = tl_category_get("work");
	static char names[40][8];
	tl_looper_dispatch_begin(l, "many");
	tl_timestamp base = tl_now();
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "n%02d", i);
		/* n00 lasts 45 ms, n39 6 ms */
		slice_at(cat, names[i], base, 0, 45 - i);
	}
	sleep_ms(8);
	tl_looper_dispatch_end(l);
	assert_int_equal(c.reports, 1);
	assert_int_equal(tl_test_count(c.text, "\n"), 30);
	assert_non_null(strstr(c.text, "  n28 total="));
	assert_null(strstr(c.text, "  n29 total=")); /* the shortest went first */
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_slow_dispatch_under_threshold_is_not_reported(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct captured c = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 50;
	o.on_report = capture;
	o.user = &c;
	tl_looper *l = tl_looper_create(&o);
	for (int i = 0; i < 1000; i++) {
		tl_looper_dispatch_begin(l, "quick");
		tl_looper_dispatch_end(l);
	}
	tl_looper_dispatch_begin(l, "slower");
	sleep_ms(10);
	tl_looper_dispatch_end(l);
	assert_int_equal(c.reports, 0);
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_slow_dispatch_mark_invalid_after_wrap(void **state)
{
	(void)state;
	tl_options opts = {.struct_size = sizeof opts,
	                   .recorder = TL_RECORDER_RING,
	                   .buffer_bytes = 16 * 1024,
	                   .block_bytes = 4096};
	assert_int_equal(tl_init(&opts), 0);
	struct captured c = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 5;
	o.tree_min_node_ms = 0;
	o.on_report = capture;
	o.user = &c;
	tl_looper *l = tl_looper_create(&o);
	const tl_category *cat = tl_category_get("work");
	tl_looper_dispatch_begin(l, "wraps");
	for (int i = 0; i < 4000; i++) { /* ~100 KB: the 16 KB ring wraps */
		tl_emit_begin(cat, "inner");
		tl_emit_end(cat);
	}
	sleep_ms(8);
	tl_looper_dispatch_end(l);
	assert_int_equal(c.reports, 1);
	assert_false(c.mark_valid);
	assert_non_null(strstr(c.report, "\"mark_valid\":false"));
	/* what survived is still a tree under the dispatch */
	assert_true(strncmp(c.text, "wraps total=", 12) == 0);
	assert_non_null(strstr(c.text, "  inner total="));

	/* the next slow dispatch, small enough, has a valid mark again */
	c.reports = 0;
	tl_looper_dispatch_begin(l, "fits");
	tl_emit_begin(cat, "inner");
	sleep_ms(8);
	tl_emit_end(cat);
	tl_looper_dispatch_end(l);
	assert_int_equal(c.reports, 1);
	assert_true(c.mark_valid);
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_slow_dispatch_without_recorder_reports_root_only(void **state)
{
	(void)state;
	struct captured c = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 5;
	o.on_report = capture;
	o.user = &c;
	tl_looper *l = tl_looper_create(&o);
	tl_looper_dispatch_begin(l, "alone");
	sleep_ms(8);
	tl_looper_dispatch_end(l);
	assert_int_equal(c.reports, 1);
	assert_false(c.mark_valid);
	char shape[256];
	tree_shape(c.text, shape, sizeof shape);
	assert_string_equal(shape, "alone count=1|");
	assert_string_equal(c.key, "alone");
	assert_true(c.elapsed_ns >= 8000000);
	tl_looper_destroy(l);
}

struct times_capture {
	int reports;
	int64_t begin_ns; /* the history's last entry: the slow dispatch */
	int64_t duration_ns;
	int64_t step_total_ns; /* the tree's node "step", -1 when missing */
};

static void capture_times(const tl_looper_report *r, void *user)
{
	struct times_capture *t = user;
	t->reports++;
	assert_true(r->history_count >= 1);
	t->begin_ns = r->history[r->history_count - 1].begin_ns;
	t->duration_ns = r->history[r->history_count - 1].duration_ns;
	static const char key[] = "{\"name\":\"step\",\"total_ns\":";
	const char *step = strstr(r->tree_json, key);
	t->step_total_ns = step ? strtoll(step + strlen(key), NULL, 10) : -1;
}

static const tl_model_event *model_find(const tl_model *m, char phase, const char *name)
{
	for (size_t i = 0; i < m->nevents; i++)
		if (m->events[i].phase == phase && m->events[i].name &&
		    strcmp(m->events[i].name, name) == 0)
			return &m->events[i];
	return NULL;
}

/* The report converts its raw timestamps as the snapshot does, on the
 * clock the library chose (the TSC where the kernel uses it): the history's
 * times and a call's total in the tree are the snapshot's, within the
 * calibration's error. */
static void test_slow_dispatch_times_are_the_snapshots(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct times_capture t = {0};
	tl_looper_options o = quiet_options();
	o.slow_dispatch_ms = 2;
	o.tree_min_node_ms = 0;
	o.on_report = capture_times;
	o.user = &t;
	tl_looper *l = tl_looper_create(&o);
	const tl_category *cat = tl_category_get("work");
	tl_looper_dispatch_begin(l, "timed");
	tl_timestamp start = tl_now();
	sleep_ms(3);
	tl_emit_complete(cat, "step", start, tl_now());
	tl_looper_dispatch_end(l);
	assert_int_equal(t.reports, 1);

	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *begin = model_find(&m, 'B', "timed");
	const tl_model_event *step = model_find(&m, 'X', "step");
	assert_non_null(begin);
	assert_non_null(step);
	const tl_model_event *end = NULL;
	for (size_t i = 0; i < m.nevents && !end; i++)
		if (m.events[i].phase == 'E' && m.events[i].tid == begin->tid &&
		    m.events[i].seq > step->seq)
			end = &m.events[i];
	assert_non_null(end);
	assert_true(llabs(t.begin_ns - begin->ts_ns) <= 1000);
	assert_true(llabs(t.duration_ns - (end->ts_ns - begin->ts_ns)) <= 1000);
	assert_true(llabs(t.step_total_ns - (step->end_ns - step->ts_ns)) <= 1000);
	tl_model_free(&m);
	tl_looper_destroy(l);
	tl_shutdown();
}

/* ---- history ------------------------------------------------------------------- */

struct history_capture {
	size_t count;
	char first[64], last[64];
};

static void capture_history(const tl_looper_report *r, void *user)
{
	struct history_capture *h = user;
	h->count = r->history_count;
	snprintf(h->first, sizeof h->first, "%s", r->history[0].name);
	snprintf(h->last, sizeof h->last, "%s", r->history[r->history_count - 1].name);
}

static void test_history_keeps_last_n_dispatches(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct history_capture h = {0};
	tl_looper_options o = quiet_options();
	o.history_size = 5;
	o.slow_dispatch_ms = 5;
	o.on_report = capture_history;
	o.user = &h;
	tl_looper *l = tl_looper_create(&o);
	char name[32];
	for (int i = 0; i < 9; i++) {
		snprintf(name, sizeof name, "copied-%d", i);
		tl_looper_dispatch_begin_flags(l, name, TL_LOOPER_COPY_NAME);
		tl_looper_dispatch_end(l);
	}
	tl_looper_dispatch_begin(l, "slow one");
	sleep_ms(8);
	tl_looper_dispatch_end(l);
	assert_int_equal(h.count, 5);
	assert_string_equal(h.first, "copied-5");
	assert_string_equal(h.last, "slow one");
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_bad_options_are_refused(void **state)
{
	(void)state;
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.anr_timeout_ms = -1;
	errno = 0;
	assert_null(tl_looper_create(&o));
	assert_int_equal(errno, EINVAL);
	tl_looper_options_init(&o);
	o.struct_size = 8;
	errno = 0;
	assert_null(tl_looper_create(&o));
	assert_int_equal(errno, EINVAL);
	tl_looper_options_init(&o);
	assert_int_equal(o.anr_timeout_ms, 5000);
	assert_int_equal(o.lag_threshold_ms, 2000);
	assert_int_equal(o.slow_dispatch_ms, 700);
	assert_int_equal(o.history_size, 200);
	tl_looper *l = tl_looper_create(NULL);
	assert_non_null(l);
	assert_string_equal(tl_looper_name(l), "looper");
	tl_looper_destroy(l);
	tl_looper_destroy(NULL);
}

static int stop_session(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_printer_parses_dispatch_line, stop_session),
	    cmocka_unit_test_teardown(test_printer_parses_finished_line, stop_session),
	    cmocka_unit_test_teardown(test_printer_accepts_custom_handler_and_colon_in_callback,
	                              stop_session),
	    cmocka_unit_test_teardown(test_printer_rejects_garbage, stop_session),
	    cmocka_unit_test_teardown(test_println_counts_malformed_and_emits_slices, stop_session),
	    cmocka_unit_test_teardown(test_dispatch_and_idle_are_slices, stop_session),
	    cmocka_unit_test_teardown(test_observers_see_times_and_frames, stop_session),
	    cmocka_unit_test_teardown(test_observer_without_session_or_cpu_clock, stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_tree_has_exact_shape, stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_tree_keeps_at_most_max_nodes,
	                              stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_under_threshold_is_not_reported,
	                              stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_mark_invalid_after_wrap, stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_without_recorder_reports_root_only,
	                              stop_session),
	    cmocka_unit_test_teardown(test_slow_dispatch_times_are_the_snapshots, stop_session),
	    cmocka_unit_test_teardown(test_history_keeps_last_n_dispatches, stop_session),
	    cmocka_unit_test_teardown(test_bad_options_are_refused, stop_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
