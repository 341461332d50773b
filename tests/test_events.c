/* What each event form records: names, copies, arguments, ids, values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

static int setup(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static const tl_model_event *find(const tl_model *m, char phase, const char *name)
{
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->phase == phase && (!name || (e->name && strcmp(e->name, name) == 0)))
			return e;
	}
	fail_msg("no '%c' event named %s", phase, name ? name : "(any)");
	return NULL;
}

static const tl_model_arg *arg(const tl_model_event *e, const char *key)
{
	for (unsigned i = 0; i < e->nargs; i++)
		if (strcmp(e->args[i].key, key) == 0)
			return &e->args[i];
	fail_msg("no argument %s", key);
	return NULL;
}

static void scoped(void)
{
	TL_TRACE_EVENT0("ev", "outer");
	{
		TL_TRACE_EVENT1("ev", "inner", "n", 7);
	}
}

static void test_scoped_event_ends_at_scope_exit(void **state)
{
	(void)state;
	scoped();
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.nevents, 4);
	assert_int_equal(m.events[0].phase, 'B');
	assert_string_equal(m.events[0].name, "outer");
	assert_int_equal(m.events[1].phase, 'B');
	assert_string_equal(m.events[1].name, "inner");
	assert_int_equal(m.events[2].phase, 'E');
	assert_int_equal(m.events[3].phase, 'E');
	assert_true(m.events[0].ts_ns <= m.events[1].ts_ns);
	assert_true(m.events[2].ts_ns <= m.events[3].ts_ns);
	assert_string_equal(m.events[0].cat, "ev");
	tl_model_free(&m);
}

static void test_numbered_begin_is_named_with_its_number(void **state)
{
	(void)state;
	TL_TRACE_EVENT_BEGIN_NUMBERED("ev", "request", 42);
	TL_TRACE_EVENT_END0("ev", "request");
	tl_emit_begin_numbered(tl_category_get("ev"), "request", UINT64_MAX);
	tl_emit_end(tl_category_get("ev"));
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.nevents, 4);
	assert_int_equal(m.events[0].phase, 'B');
	assert_string_equal(m.events[0].name, "request 42");
	assert_string_equal(m.events[0].cat, "ev");
	assert_int_equal(m.events[2].phase, 'B');
	assert_string_equal(m.events[2].name, "request 18446744073709551615");
	tl_model_free(&m);
}

static void test_typed_arguments_are_kept(void **state)
{
	(void)state;
	int local = 1;
	TL_TRACE_EVENT_BEGIN2("ev", "a", "i", (int64_t)-5, "u", (uint64_t)UINT64_MAX);
	TL_TRACE_EVENT_BEGIN2("ev", "b", "d", 2.5, "flag", (bool)true);
	TL_TRACE_EVENT_BEGIN2("ev", "c", "s", "literal", "p", (void *)&local);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *a = find(&m, 'B', "a");
	assert_int_equal(arg(a, "i")->type, TL_ARG_INT);
	assert_int_equal(arg(a, "i")->v.i, -5);
	assert_int_equal(arg(a, "u")->type, TL_ARG_UINT);
	assert_true(arg(a, "u")->v.u == UINT64_MAX);
	const tl_model_event *b = find(&m, 'B', "b");
	assert_int_equal(arg(b, "d")->type, TL_ARG_DOUBLE);
	assert_true(arg(b, "d")->v.d == 2.5);
	assert_int_equal(arg(b, "flag")->type, TL_ARG_BOOL);
	assert_int_equal(arg(b, "flag")->v.b, 1);
	const tl_model_event *c = find(&m, 'B', "c");
	assert_int_equal(arg(c, "s")->type, TL_ARG_STRING);
	assert_string_equal(arg(c, "s")->v.s, "literal");
	assert_int_equal(arg(c, "p")->type, TL_ARG_POINTER);
	assert_true(arg(c, "p")->v.p == (uint64_t)(uintptr_t)&local);
	tl_model_free(&m);
}

static void scoped_with_four_arguments(void)
{
	TL_TRACE_EVENT4("ev", "scoped4", "i", -1, "u", 2u, "d", 0.25, "s", "four");
}

/* Every form that takes arguments takes up to four, each typed. */
static void test_macros_take_up_to_four_typed_arguments(void **state)
{
	(void)state;
	char copied[] = "copied name";
	scoped_with_four_arguments();
	TL_TRACE_EVENT_BEGIN3("ev", "begin3", "a", 1, "b", 2, "c", 3);
	TL_TRACE_EVENT_END4("ev", "begin3", "w", 1, "x", 2, "y", 3, "z", (bool)true);
	TL_TRACE_EVENT_INSTANT4("ev", "instant4", TL_SCOPE_PROCESS, "a", 1, "b", 2, "c", 3, "d",
	                        (int64_t)-4);
	TL_TRACE_EVENT_COPY_INSTANT3("ev", copied, TL_SCOPE_THREAD, "a", 1, "b", 2, "c", 3);
	TL_TRACE_EVENT_ASYNC_BEGIN4("ev", "job", 5, "a", 1, "b", 2, "c", 3, "d", 4);
	TL_TRACE_EVENT_ASYNC_INSTANT3("ev", "job", 5, "a", 1, "b", 2, "c", 3);
	TL_TRACE_EVENT_ASYNC_END3("ev", "job", 5, "a", 1, "b", 2, "c", 3);
	TRACE_EVENT_COPY_BEGIN4("ev", copied, "a", 1, "b", 2, "c", 3, "d", 4);
	TRACE_EVENT_END3("ev", copied, "a", 1, "b", 2, "c", 3);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.args_dropped, 0);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *e = find(&m, 'B', "scoped4");
	assert_int_equal(e->nargs, 4);
	assert_int_equal(arg(e, "i")->type, TL_ARG_INT);
	assert_int_equal(arg(e, "u")->type, TL_ARG_UINT);
	assert_int_equal(arg(e, "d")->type, TL_ARG_DOUBLE);
	assert_int_equal(arg(e, "s")->type, TL_ARG_STRING);
	assert_string_equal(arg(e, "s")->v.s, "four");
	assert_int_equal(tl_test_count_events(&m, 'E', NULL), 3);
	assert_int_equal(find(&m, 'B', "begin3")->nargs, 3);
	assert_int_equal(arg(find(&m, 'i', "instant4"), "d")->v.i, -4);
	assert_int_equal(find(&m, 'i', "instant4")->scope, TL_EVENT_SCOPE_PROCESS);
	assert_int_equal(find(&m, 'i', "copied name")->nargs, 3);
	assert_int_equal(find(&m, 'b', "job")->nargs, 4);
	assert_int_equal(find(&m, 'n', "job")->nargs, 3);
	assert_int_equal(find(&m, 'e', "job")->nargs, 3);
	assert_int_equal(find(&m, 'B', "copied name")->nargs, 4);
	unsigned end_args = 0;
	for (size_t i = 0; i < m.nevents; i++)
		if (m.events[i].phase == 'E')
			end_args += m.events[i].nargs;
	assert_int_equal(end_args, 4 + 3);
	for (size_t i = 0; i < m.nevents; i++)
		if (m.events[i].phase == 'E' && m.events[i].nargs == 4)
			assert_int_equal(arg(&m.events[i], "z")->type, TL_ARG_BOOL);
	tl_model_free(&m);
}

static void test_copied_strings_survive_their_buffer(void **state)
{
	(void)state;
	char name[32], value[32];
	strcpy(name, "dynamic name");
	strcpy(value, "dynamic value");
	TL_TRACE_EVENT_COPY_BEGIN1("ev", name, "v", TL_STR_COPY(value));
	memset(name, 'x', sizeof name - 1);
	memset(value, 'y', sizeof value - 1);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *e = find(&m, 'B', "dynamic name");
	assert_string_equal(arg(e, "v")->v.s, "dynamic value");
	tl_model_free(&m);
}

static void test_long_copies_are_truncated_and_counted(void **state)
{
	(void)state;
	char name[TL_COPY_MAX * 2];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	TL_TRACE_EVENT_COPY_INSTANT1("ev", name, TL_SCOPE_THREAD, "v", TL_STR_COPY(name));
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.strings_truncated, 2);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *e = find(&m, 'i', NULL);
	assert_int_equal(strlen(e->name), TL_COPY_MAX);
	assert_int_equal(strlen(arg(e, "v")->v.s), TL_COPY_MAX);
	tl_model_free(&m);
}

static void test_truncation_keeps_utf8_sequences_whole(void **state)
{
	(void)state;
	/* "é" is two bytes: an odd offset puts a sequence across the cap */
	char name[TL_COPY_MAX + 8] = "x";
	for (size_t i = 1; i + 2 < sizeof name; i += 2)
		memcpy(name + i, "\xc3\xa9", 2);
	name[sizeof name - 1] = '\0';
	TL_TRACE_EVENT_COPY_INSTANT0("ev", name, TL_SCOPE_THREAD);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *e = find(&m, 'i', NULL);
	size_t len = strlen(e->name);
	assert_true(len <= TL_COPY_MAX);
	assert_int_equal(len % 2, 1); /* "x" + whole pairs */
	tl_model_free(&m);
}

static void test_arguments_beyond_the_maximum_are_counted(void **state)
{
	(void)state;
	tl_category *cat = tl_category_get("ev");
	tl_arg args[TL_MAX_ARGS + 2];
	for (int i = 0; i < TL_MAX_ARGS + 2; i++)
		args[i] = tl_i_arg_int("k", i);
	tl_emit(cat, TL_PHASE_INSTANT, 0, "many", 0, 0, args, TL_MAX_ARGS + 2);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.args_dropped, 2);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(find(&m, 'i', "many")->nargs, TL_MAX_ARGS);
	tl_model_free(&m);
}

static void test_instant_scopes(void **state)
{
	(void)state;
	TL_TRACE_EVENT_INSTANT0("ev", "t", TL_SCOPE_THREAD);
	TL_TRACE_EVENT_INSTANT0("ev", "p", TL_SCOPE_PROCESS);
	TL_TRACE_EVENT_INSTANT0("ev", "g", TL_SCOPE_GLOBAL);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(find(&m, 'i', "t")->scope, TL_EVENT_SCOPE_THREAD);
	assert_int_equal(find(&m, 'i', "p")->scope, TL_EVENT_SCOPE_PROCESS);
	assert_int_equal(find(&m, 'i', "g")->scope, TL_EVENT_SCOPE_GLOBAL);
	tl_model_free(&m);
}

static void test_async_and_flow_ids_are_64_bit(void **state)
{
	(void)state;
	uint64_t id = 0xfedcba9876543210u;
	TL_TRACE_EVENT_ASYNC_BEGIN0("ev", "load", id);
	TL_TRACE_EVENT_ASYNC_INSTANT0("ev", "load", id);
	TL_TRACE_EVENT_ASYNC_END0("ev", "load", id);
	TL_TRACE_EVENT_FLOW_BEGIN0("ev", "job", id + 1);
	TL_TRACE_EVENT_FLOW_STEP0("ev", "job", id + 1);
	TL_TRACE_EVENT_FLOW_END_GLOBAL0("ev", "job", id + 2);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_true(find(&m, 'b', "load")->id == id);
	assert_true(find(&m, 'n', "load")->id == id);
	assert_true(find(&m, 'e', "load")->id == id);
	assert_true(find(&m, 's', "job")->id == id + 1);
	assert_true(find(&m, 't', "job")->id == id + 1);
	assert_true(find(&m, 'f', "job")->id == id + 2);
	assert_int_equal(find(&m, 'f', "job")->scope, TL_EVENT_SCOPE_GLOBAL);
	assert_int_equal(find(&m, 's', "job")->scope, TL_EVENT_SCOPE_THREAD);
	tl_model_free(&m);
}

static void test_counters_integer_and_double(void **state)
{
	(void)state;
	TL_TRACE_EVENT_COUNTER("ev", "depth", (int64_t)-42);
	TL_TRACE_EVENT_COUNTER("ev", "load", 0.75);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *depth = find(&m, 'C', "depth");
	assert_false(depth->counter_is_double);
	assert_int_equal(depth->counter_i, -42);
	const tl_model_event *load = find(&m, 'C', "load");
	assert_true(load->counter_is_double);
	assert_true(fabs(load->counter_d - 0.75) < 1e-12);
	tl_model_free(&m);
}

static void test_complete_event_keeps_both_timestamps(void **state)
{
	(void)state;
	tl_timestamp start = tl_now();
	tl_timestamp end = tl_now();
	TL_TRACE_EVENT_COMPLETE("ev", "done", start, end);
	TL_TRACE_EVENT_COMPLETE("ev", "reversed", end, start);
	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *e = find(&m, 'X', "done");
	assert_true(e->end_ns >= e->ts_ns);
	assert_true(llabs(e->ts_ns - tl_timestamp_to_ns(start)) < 1000);
	const tl_model_event *r = find(&m, 'X', "reversed");
	assert_int_equal(r->ts_ns, e->ts_ns);
	assert_int_equal(r->end_ns, e->end_ns);
	tl_model_free(&m);
}

static void test_async_complete_swaps_reversed_ends(void **state)
{
	(void)state;
	tl_timestamp a = tl_now(), b = tl_now() + 1000;
	TL_TRACE_EVENT_ASYNC_COMPLETE("ev", "io", 9, b, a);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_true(find(&m, 'b', "io")->ts_ns <= find(&m, 'e', "io")->ts_ns);
	tl_model_free(&m);
}

static void test_short_macro_aliases_record(void **state)
{
	(void)state;
	TRACE_EVENT_BEGIN0("ev", "short");
	TRACE_EVENT_END0("ev", "short");
	TRACE_COUNTER1("ev", "c", 3);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "short"), 1);
	assert_int_equal(tl_test_count_events(&m, 'E', NULL), 1);
	assert_int_equal(tl_test_count_events(&m, 'C', "c"), 1);
	tl_model_free(&m);
}

static void test_unknown_phase_is_dropped_and_counted(void **state)
{
	(void)state;
	tl_emit(tl_category_get("ev"), (tl_phase)'Q', 0, "odd", 0, 0, NULL, 0);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.events_dropped, 1);
	assert_int_equal(st.events_written, 0);
}

int main(void)
{
	tl_test_clear_environment();
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_scoped_event_ends_at_scope_exit),
		T(test_numbered_begin_is_named_with_its_number),
		T(test_typed_arguments_are_kept),
		T(test_macros_take_up_to_four_typed_arguments),
		T(test_copied_strings_survive_their_buffer),
		T(test_long_copies_are_truncated_and_counted),
		T(test_truncation_keeps_utf8_sequences_whole),
		T(test_arguments_beyond_the_maximum_are_counted),
		T(test_instant_scopes),
		T(test_async_and_flow_ids_are_64_bit),
		T(test_counters_integer_and_double),
		T(test_complete_event_keeps_both_timestamps),
		T(test_async_complete_swaps_reversed_ends),
		T(test_short_macro_aliases_record),
		T(test_unknown_phase_is_dropped_and_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
