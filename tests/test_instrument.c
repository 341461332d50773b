/*
 * Function instrumentation (include/timeline/instrument.h): calls of code
 * built with -finstrument-functions (support/instrumented_calls.c), through
 * the hooks of timeline::instrument, as slices in snapshots; the filters,
 * the shadow stack, re-entry; the name patterns, the looper's slow-dispatch
 * trees by name; and the example program built instrumented.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/instrumented_calls.h"
#include "support/test_support.h"

#include <timeline/instrument.h>
#include <timeline/looper.h>

#include "recorder/export/trace_model.h"
#include "recorder/snapshot_writer.h"

static int setup(void **state)
{
	(void)state;
	tl_instrument_enable(true);
	tl_instrument_set_min_duration_ns(0);
	tl_instrument_set_max_depth(0);
	assert_int_equal(tl_instrument_set_patterns(NULL, NULL), 0);
	tl_test_init(TL_RECORDER_RING, 0);
	return 0;
}

/* Skips the running test in a build without elfutils, saying why. */
static void skip_without_symbols(void)
{
#ifndef TL_HAVE_LIBELF
	print_message("skipped: built without elfutils (TIMELINE_WITH_ELFUTILS=OFF): "
	              "functions are named module+0xoffset\n");
	skip();
#endif
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static tl_instrument_stats stats(void)
{
	tl_instrument_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_instrument_stats_get(&st), 0);
	return st;
}

static bool is_function(const tl_model_event *e)
{
	return e->cat && strcmp(e->cat, "function") == 0;
}

/* The function slices of a model: counts their BEGINs and ENDs, and fails
 * unless they nest, on every thread, with each BEGIN named by its symbol
 * (module+0x... in a build without elfutils) */
static size_t balanced_calls(const tl_model *m, size_t *max_depth)
{
	size_t begins = 0, depth = 0, deepest = 0;
	uint32_t tid = 0;
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (!is_function(e))
			continue;
		if (e->tid != tid) {
			assert_int_equal(depth, 0);
			tid = e->tid;
		}
		if (e->phase == 'B') {
#ifdef TL_HAVE_LIBELF
			assert_null(strstr(e->name, "+0x"));
			assert_false(strncmp(e->name, "0x", 2) == 0);
#else
			assert_non_null(strstr(e->name, "+0x"));
#endif
			begins++;
			if (++depth > deepest)
				deepest = depth;
		} else if (e->phase == 'E') {
			assert_true(depth > 0);
			depth--;
		}
	}
	assert_int_equal(depth, 0);
	if (max_depth)
		*max_depth = deepest;
	return begins;
}

static size_t snapshot_calls(size_t *max_depth)
{
	tl_model m;
	tl_test_snapshot_model(&m);
	size_t n = balanced_calls(&m, max_depth);
	tl_model_free(&m);
	return n;
}

static void test_every_call_is_a_balanced_slice(void **state)
{
	(void)state;
	instrumented_caller();
	size_t depth;
	assert_int_equal(snapshot_calls(&depth), 3);
	assert_int_equal(depth, 2);
}

static void test_nothing_recorded_outside_a_session(void **state)
{
	(void)state;
	tl_shutdown();
	instrumented_caller(); /* after shutdown */
	tl_test_init(TL_RECORDER_RING, 0);
	assert_int_equal(snapshot_calls(NULL), 0);
}

static void test_disabled_records_nothing(void **state)
{
	(void)state;
	tl_instrument_enable(false);
	assert_false(tl_instrument_enabled());
	instrumented_caller();
	tl_instrument_enable(true);
	assert_int_equal(snapshot_calls(NULL), 0);
	instrumented_caller();
	assert_int_equal(snapshot_calls(NULL), 3);
}

static void test_recursion_nests(void **state)
{
	(void)state;
	instrumented_recurse(5);
	size_t depth;
	assert_int_equal(snapshot_calls(&depth), 6);
	assert_int_equal(depth, 6);
}

static void test_max_depth_limits_recording(void **state)
{
	(void)state;
	tl_instrument_set_max_depth(3);
	uint64_t before = stats().too_deep;
	instrumented_recurse(5);
	size_t depth;
	assert_int_equal(snapshot_calls(&depth), 3);
	assert_int_equal(depth, 3);
	assert_int_equal(stats().too_deep - before, 3);
}

static void test_min_duration_takes_back_short_calls(void **state)
{
	(void)state;
	/* far apart: a busy machine may hold a short call a few ms */
	tl_instrument_set_min_duration_ns(50 * 1000 * 1000);
	uint64_t before = stats().filtered;
	instrumented_caller();                     /* three short calls */
	instrumented_spin_ns(100 * 1000 * 1000L); /* one long one */
	assert_int_equal(snapshot_calls(NULL), 1);
	assert_int_equal(stats().filtered - before, 3);
}

static void test_longjmp_closes_skipped_frames(void **state)
{
	(void)state;
	uint64_t before = stats().frames_closed;
	instrumented_longjmp(3);
	/* instrumented_longjmp, four jump_deep, the leaf after the jump */
	assert_int_equal(snapshot_calls(NULL), 6);
	assert_int_equal(stats().frames_closed - before, 4);
}

/* A C++ exception thrown through C frames built without -fexceptions:
 * their exit hooks do not run; the C++ frame that catches it closes them
 * at its own exit. */
static void test_exception_through_c_frames_closes_them(void **state)
{
	(void)state;
	uint64_t before = stats().frames_closed;
	assert_int_equal(instrumented_exception_through_c(), 7);
	/* the catcher, instrumented_c_through, c_inner, the thrower (whose
	 * exit runs as the exception leaves it: C++ has the cleanup) */
	assert_int_equal(snapshot_calls(NULL), 4);
	assert_int_equal(stats().frames_closed - before, 2);
}

static pthread_key_t late_key;

static void late_destructor(void *value)
{
	(void)value;
	instrumented_leaf();
}

static void *thread_with_a_late_destructor(void *arg)
{
	(void)arg;
	pthread_setspecific(late_key, &late_key);
	instrumented_leaf();
	return NULL;
}

/* A call from a TLS destructor that runs after the hooks' own (a key made
 * after the library's: glibc runs them in key order) is not recorded, and
 * both of its hook calls are counted in after_exit. */
static void test_calls_after_a_threads_exit_are_counted(void **state)
{
	(void)state;
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	tl_instrument_stats before = stats();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, thread_with_a_late_destructor, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	tl_instrument_stats after = stats();
	pthread_key_delete(late_key);
	assert_int_equal(after.after_exit - before.after_exit, 2);
	assert_int_equal(snapshot_calls(NULL), 1); /* the thread's own call only */
}

static void test_thread_exit_closes_open_calls(void **state)
{
	(void)state;
	uint64_t before = stats().frames_closed;
	instrumented_thread_exit();
	/* the thread's body and exit_inside, left open by pthread_exit, and
	 * the leaf; instrumented_thread_exit on this thread */
	assert_int_equal(snapshot_calls(NULL), 4);
	assert_int_equal(stats().frames_closed - before, 2);
}

static void test_instrumented_signal_handler_is_recorded(void **state)
{
	(void)state;
	instrumented_raise();
	/* instrumented_raise, the handler, the leaf it calls */
	size_t depth;
	assert_int_equal(snapshot_calls(&depth), 3);
	assert_int_equal(depth, 3);
}

static void test_fork_child_records_its_own_calls(void **state)
{
	(void)state;
	instrumented_caller();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		instrumented_recurse(2);
		tl_model m;
		unsigned char *data;
		size_t len;
		int ok = tl_snapshot_to_memory(&data, &len) == 0 &&
		         tl_model_read_binary(data, len, &m, NULL, 0) == 0;
		/* the child's own three calls, balanced (the parent's are not its) */
		size_t begins = 0;
		long depth = 0;
		for (size_t i = 0; ok && i < m.nevents; i++) {
			if (!is_function(&m.events[i]))
				continue;
			begins += m.events[i].phase == 'B';
			depth += m.events[i].phase == 'B' ? 1 : m.events[i].phase == 'E' ? -1 : 0;
			ok = depth >= 0;
		}
		_exit(ok && begins == 3 && depth == 0 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(snapshot_calls(NULL), 3); /* the parent's */
}

/* The function slices of one thread of a model: fails when an END comes
 * with no call open; returns the BEGINs, *open the calls left open. */
static size_t thread_calls(const tl_model *m, uint32_t tid, long *open)
{
	size_t begins = 0;
	long depth = 0;
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->tid != tid || !is_function(e))
			continue;
		if (e->phase == 'B') {
			begins++;
			depth++;
		} else if (e->phase == 'E') {
			if (depth == 0)
				fail_msg("thread %u: a call's END with no call open", tid);
			depth--;
		}
	}
	*open = depth;
	return begins;
}

/* Every thread's calls balanced: returns their sum. */
static size_t all_threads_balanced(const tl_model *m)
{
	size_t calls = 0;
	for (size_t t = 0; t < m->nthreads; t++) {
		long open;
		calls += thread_calls(m, m->threads[t].tid, &open);
		if (open != 0)
			fail_msg("thread %u: %ld calls left open", m->threads[t].tid, open);
	}
	return calls;
}

static void test_call_chain_beyond_the_stack_is_balanced(void **state)
{
	(void)state;
	uint64_t before = stats().too_deep;
	instrumented_recurse(TL_INSTRUMENT_STACK_MAX + 88); /* 601 nested calls */
	instrumented_caller(); /* the depth back at 0: recorded as usual */
	size_t depth;
	assert_int_equal(snapshot_calls(&depth), TL_INSTRUMENT_STACK_MAX + 3);
	assert_int_equal(depth, TL_INSTRUMENT_STACK_MAX);
	assert_int_equal(stats().too_deep - before, 89);
}

/* Calls spinning from 0 to twice the minimum: every call kept lasted the
 * minimum or more (in the snapshot's nanoseconds: on the vDSO path the
 * clock's own; a TSC tick converted twice may round 1 ns down); every call
 * that spun the minimum or more, and so lasted longer, is kept; every call
 * is either kept or counted as filtered. */
static void test_min_duration_keeps_no_call_shorter_than_it(void **state)
{
	(void)state;
	const long min = 20 * 1000, calls = 100;
	tl_instrument_set_min_duration_ns((uint64_t)min);
	uint64_t before = stats().filtered;
	for (long i = 0; i < calls; i++)
		instrumented_spin_ns(i * 2 * min / calls);
	tl_instrument_set_min_duration_ns(0);
	tl_model m;
	tl_test_snapshot_model(&m);
	long kept = 0, slack = tl_test_tsc_expected() ? 1 : 0;
	int64_t begin = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const tl_model_event *e = &m.events[i];
		if (!is_function(e))
			continue;
		if (e->phase == 'B') {
			begin = e->ts_ns;
			kept++;
		} else if (e->phase == 'E' && e->ts_ns - begin < min - slack) {
			fail_msg("a call of %lld ns kept, minimum %ld ns",
			         (long long)(e->ts_ns - begin), min);
		}
	}
	tl_model_free(&m);
	uint64_t filtered = stats().filtered - before;
	assert_int_equal(kept + (long)filtered, calls);
	assert_true(filtered > 0);
	long spun_the_minimum = calls / 2; /* i * 2 * min / calls >= min */
	if (kept < spun_the_minimum)
		fail_msg("%ld calls kept, %ld lasted the minimum or more", kept, spun_the_minimum);
}

static void test_threads_record_their_calls_balanced(void **state)
{
	(void)state;
	tl_shutdown();
	tl_test_init(TL_RECORDER_ENDLESS, 64u << 20); /* nothing overwritten */
	instrumented_threads(4, 1000);
	tl_model m;
	tl_test_snapshot_model(&m);
	/* instrumented_threads, and on each thread its body (call_times)
	 * and 1000 callers of three calls each */
	assert_int_equal(all_threads_balanced(&m), 1 + 4 * (1 + 3000));
	tl_model_free(&m);
}

static void test_fork_inside_a_call_leaves_the_child_balanced(void **state)
{
	(void)state;
	instrumented_caller();
	int pid = instrumented_fork(); /* the call's exit runs in both */
	assert_true(pid >= 0);
	if (pid == 0) {
		instrumented_caller();
		tl_model m;
		unsigned char *data;
		size_t len;
		if (tl_snapshot_to_memory(&data, &len) != 0 ||
		    tl_model_read_binary(data, len, &m, NULL, 0) != 0)
			_exit(2);
		/* the child's own calls only: no END for the fork's entry,
		 * which is the parent's; nothing left open */
		size_t begins = 0;
		long depth = 0;
		for (size_t i = 0; i < m.nevents; i++) {
			if (!is_function(&m.events[i]))
				continue;
			begins += m.events[i].phase == 'B';
			depth += m.events[i].phase == 'B' ? 1 : m.events[i].phase == 'E' ? -1 : 0;
			if (depth < 0)
				_exit(3);
		}
		_exit(depth == 0 && begins == 3 ? 0 : 4);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the parent's: the first caller's three, and the fork call */
	assert_int_equal(snapshot_calls(NULL), 4);
}

static void test_signal_storm_leaves_calls_balanced(void **state)
{
	(void)state;
	tl_shutdown();
	tl_test_init(TL_RECORDER_ENDLESS, 64u << 20); /* nothing overwritten */
	tl_instrument_stats before = stats();
	unsigned long taken = instrumented_signal_storm(100000, 5000);
	tl_model m;
	tl_test_snapshot_model(&m);
	size_t calls = all_threads_balanced(&m);
	tl_model_free(&m);
	/* instrumented_signal_storm, the thread's body (storm_body) and its
	 * target, 100000 callers; each handler and its leaf, unless they ran
	 * inside a hook, or during the thread's exit: then both calls were
	 * dropped, enter and exit alike (four hook calls counted) */
	tl_instrument_stats after = stats();
	uint64_t reentered = after.reentered - before.reentered;
	uint64_t after_exit = after.after_exit - before.after_exit;
	printf("signals taken %lu, hook calls re-entered %llu, after the thread's exit %llu\n",
	       taken, (unsigned long long)reentered, (unsigned long long)after_exit);
	assert_true(taken > 0);
	assert_int_equal(reentered % 4, 0);
	assert_int_equal(after_exit % 4, 0);
	assert_int_equal(calls + (reentered + after_exit) / 2, 3 + 3 * 100000 + 2 * taken);
}

static void test_snapshot_while_threads_call_converts_balanced(void **state)
{
	(void)state;
	tl_shutdown();
	tl_test_init(TL_RECORDER_ENDLESS, 64u << 20); /* nothing overwritten */
	instrumented_busy_start(3);
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL);
	unsigned char *data;
	size_t len;
	assert_int_equal(tl_snapshot_to_memory(&data, &len), 0);
	unsigned long made = instrumented_busy_stop();
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(data, len, &m, err, sizeof err), 0);
	free(data);
	/* on every thread, no END without its BEGIN; open at the snapshot at
	 * most the three calls a thread nests (body, caller, leaf) */
	size_t calls = 0;
	for (size_t t = 0; t < m.nthreads; t++) {
		long open;
		calls += thread_calls(&m, m.threads[t].tid, &open);
		assert_true(open >= 0 && open <= 3);
	}
	assert_true(calls > 0);
	assert_true(calls <= made + 3 * 3 + 1);
	tl_model_free(&m);
}

static unsigned callbacks;

static void on_event(const tl_event *event, void *user)
{
	(void)event;
	(void)user;
	callbacks++;
	instrumented_callback(); /* inside the hook: its calls are dropped */
}

static void test_call_inside_a_hook_is_dropped_and_counted(void **state)
{
	(void)state;
	tl_shutdown();
	tl_options o = {0};
	o.struct_size = sizeof o;
	o.recorder = TL_RECORDER_CALLBACK;
	o.callback = on_event;
	assert_int_equal(tl_init(&o), 0);
	callbacks = 0;
	uint64_t before = stats().reentered;
	instrumented_leaf();
	assert_int_equal(callbacks, 2); /* the leaf's BEGIN and END */
	assert_int_equal(stats().reentered - before, 4);
}

static void test_stats_rejects_a_short_struct(void **state)
{
	(void)state;
	tl_instrument_stats st = {.struct_size = sizeof st - 1};
	assert_int_equal(tl_instrument_stats_get(&st), -EINVAL);
	assert_int_equal(tl_instrument_stats_get(NULL), -EINVAL);
}

static void test_exclude_pattern_leaves_out_matching_functions(void **state)
{
	(void)state;
	skip_without_symbols();
	assert_int_equal(tl_instrument_set_patterns(NULL, "other, instrumented_l?af"), 0);
	uint64_t before = stats().excluded;
	instrumented_caller(); /* calls instrumented_leaf twice */
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "instrumented_caller"), 1);
	assert_int_equal(tl_test_count_events(&m, 'B', "instrumented_leaf"), 0);
	assert_int_equal(balanced_calls(&m, NULL), 1);
	tl_model_free(&m);
	assert_int_equal(stats().excluded - before, 2);
}

static void test_include_pattern_keeps_only_matching_functions(void **state)
{
	(void)state;
	skip_without_symbols();
	assert_int_equal(tl_instrument_set_patterns("instrumented_[c]*", ""), 0);
	instrumented_caller();
	instrumented_recurse(2); /* matches no include pattern */
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "instrumented_caller"), 1);
	assert_int_equal(balanced_calls(&m, NULL), 1);
	tl_model_free(&m);
}

/* Patterns are resolved to address ranges when they are set: a
 * function's very first call is decided (its name was never resolved). */
static void test_patterns_decide_a_function_first_call(void **state)
{
	(void)state;
	skip_without_symbols();
	assert_int_equal(
	    tl_instrument_set_patterns("instrumented_pattern_*", "instrumented_pattern_excluded"),
	    0);
	uint64_t before = stats().excluded;
	instrumented_pattern_included();
	instrumented_pattern_excluded();
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "instrumented_pattern_included"), 1);
	assert_int_equal(balanced_calls(&m, NULL), 1);
	tl_model_free(&m);
	assert_int_equal(stats().excluded - before, 1);
}

static void test_clearing_patterns_records_every_call_again(void **state)
{
	(void)state;
	skip_without_symbols();
	assert_int_equal(tl_instrument_set_patterns(NULL, "instrumented_leaf"), 0);
	assert_int_equal(tl_instrument_set_patterns(NULL, NULL), 0);
	instrumented_caller();
	assert_int_equal(snapshot_calls(NULL), 3);
}

static char slow_tree[8192];

static void capture_tree(const tl_looper_report *r, void *user)
{
	(void)user;
	snprintf(slow_tree, sizeof slow_tree, "%s", r->tree_text ? r->tree_text : "");
}

static void test_slow_dispatch_tree_names_instrumented_functions(void **state)
{
	(void)state;
	skip_without_symbols();
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.anr_timeout_ms = 0;
	o.lag_threshold_ms = 0;
	o.slow_dispatch_ms = 10;
	o.on_report = capture_tree;
	tl_looper *l = tl_looper_create(&o);
	assert_non_null(l);
	slow_tree[0] = '\0';
	tl_looper_dispatch_begin(l, "dispatch");
	instrumented_spin_ns(20 * 1000 * 1000L);
	tl_looper_dispatch_end(l);
	tl_looper_destroy(l);
	assert_non_null(strstr(slow_tree, "dispatch total="));
	assert_non_null(strstr(slow_tree, "\n  instrumented_spin_ns total="));
}

static char anr_dump[1024];

static void capture_anr_dump(const tl_looper_report *r, void *user)
{
	(void)user;
	if (r->kind == TL_LOOPER_REPORT_ANR && r->dump_path)
		snprintf(anr_dump, sizeof anr_dump, "%s", r->dump_path);
}

/* The ANR dump, written by the watchdog while the stalled call runs, names
 * it (the reader behind the JSON dump resolves it). */
static void test_anr_dump_names_the_stalled_function(void **state)
{
	(void)state;
	skip_without_symbols();
	char *dir = strdup(tl_test_path("instrument-anr", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.lag_threshold_ms = 0;
	o.slow_dispatch_ms = 0;
	o.anr_timeout_ms = 100;
	o.dump_directory = dir;
	o.dump_format = TL_LOOPER_DUMP_JSON;
	o.on_report = capture_anr_dump;
	tl_looper *l = tl_looper_create(&o);
	assert_non_null(l);
	anr_dump[0] = '\0';
	tl_looper_dispatch_begin(l, "stall");
	instrumented_spin_ns(400 * 1000 * 1000L);
	tl_looper_dispatch_end(l);
	tl_looper_destroy(l);
	char *json = tl_test_read_file(anr_dump, NULL);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"instrumented_spin_ns\""));
	free(json);
	tl_test_run("rm -rf '%s'", dir);
	free(dir);
}

#ifdef TL_INSTRUMENTED_EXAMPLE
/* Runs the example program with `env` (NAME=value ...) in its
 * environment and reads its snapshot into m; returns its function calls,
 * failing unless they are balanced. */
static size_t example_calls_with(const char *env, tl_model *m)
{
	char snap[512];
	snprintf(snap, sizeof snap, "%s", tl_test_path("instrumented-example", ".tlsnap"));
	const char *emulator = tl_test_emulator(); /* a cross build's program */
	assert_int_equal(tl_test_run("env %s %s%s%s %s >/dev/null", env, emulator ? emulator : "",
	                             emulator ? " " : "", TL_INSTRUMENTED_EXAMPLE, snap),
	                 0);
	char err[256];
	assert_int_equal(tl_model_read_binary_file(snap, m, err, sizeof err), 0);
	unlink(snap);
	return balanced_calls(m, NULL);
}

static void test_environment_turns_recording_off(void **state)
{
	(void)state;
	tl_model m;
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT=0", &m), 0);
	tl_model_free(&m);
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT=1", &m), 34);
	tl_model_free(&m);
}

static void test_environment_sets_the_maximum_depth(void **state)
{
	(void)state;
	tl_model m;
	/* main (entered before tl_init, not recorded) is depth 0: work and
	 * example_cxx_work, and the thread's two calls */
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT_MAX_DEPTH=2", &m), 4);
#ifdef TL_HAVE_LIBELF /* else named module+0xoffset */
	assert_int_equal(tl_test_count_events(&m, 'B', "fib"), 0);
	assert_int_equal(tl_test_count_events(&m, 'B', "work"), 1);
#endif
	tl_model_free(&m);
}

static void test_environment_sets_the_minimum_duration(void **state)
{
	(void)state;
	tl_model m;
	/* every call is shorter than a second; the thread's two, closed when
	 * it exits mid-call, are not exits the filter sees */
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT_MIN_NS=1000000000", &m), 2);
#ifdef TL_HAVE_LIBELF
	assert_int_equal(tl_test_count_events(&m, 'B', "thread_body"), 1);
	assert_int_equal(tl_test_count_events(&m, 'B', "leave_thread"), 1);
#endif
	tl_model_free(&m);
}

static void test_environment_sets_name_patterns(void **state)
{
	(void)state;
	skip_without_symbols();
	tl_model m;
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT_INCLUDE=fib", &m), 25);
	assert_int_equal(tl_test_count_events(&m, 'B', "fib"), 25);
	tl_model_free(&m);
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT_EXCLUDE=fib", &m), 34 - 25);
	assert_int_equal(tl_test_count_events(&m, 'B', "fib"), 0);
	tl_model_free(&m);
	/* a library loaded with dlopen after the patterns were set: its
	 * functions' first (and only) calls are decided by name */
	assert_int_equal(example_calls_with("TIMELINE_INSTRUMENT_INCLUDE='plugin_*'", &m), 2);
	assert_int_equal(tl_test_count_events(&m, 'B', "plugin_work"), 1);
	assert_int_equal(tl_test_count_events(&m, 'B', "plugin_square"), 1);
	tl_model_free(&m);
}

/* The example program, built with -finstrument-functions and linked with
 * the shared timeline::instrument: every call in its snapshot, balanced,
 * named as the program says from its own mappings. */
static void test_example_snapshot_has_every_call_named(void **state)
{
	(void)state;
	char *snap = strdup(tl_test_path("instrumented-example", ".tlsnap"));
	char *names = strdup(tl_test_path("instrumented-example", ".txt"));
	const char *emulator = tl_test_emulator(); /* a cross build's program */
	assert_int_equal(tl_test_run("%s%s%s %s > %s", emulator ? emulator : "", emulator ? " " : "",
	                             TL_INSTRUMENTED_EXAMPLE, snap, names),
	                 0);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary_file(snap, &m, err, sizeof err), 0);
	size_t depth;
	size_t calls = balanced_calls(&m, &depth);
	size_t len;
	char *text = tl_test_read_file(names, &len);
	/* first line: the number of calls; then one function a line: its
	 * symbol, and for some a tab and its module+0xoffset name */
	char *line = strtok(text, "\n");
	assert_non_null(line);
	assert_int_equal(calls, strtoul(line, NULL, 10));
	size_t checked = 0;
	while ((line = strtok(NULL, "\n")) != NULL) {
		char *tab = strchr(line, '\t');
		if (tab)
			*tab++ = '\0';
#ifdef TL_HAVE_LIBELF
		const char *want = line;
#else
		const char *want = tab;
#endif
		if (!want)
			continue;
		assert_true(tl_test_count_events(&m, 'B', want) > 0);
		checked++;
	}
#ifdef TL_HAVE_LIBELF
	assert_int_equal(checked, 9); /* static, C++ template, dlopen'ed library */
#else
	assert_int_equal(checked, 3);
#endif
	free(text);
	tl_model_free(&m);
	unlink(snap);
	unlink(names);
	free(snap);
	free(names);
}

/* `timeline convert` names the example's calls as the in-process readers
 * do: a C++ template, a function of the dlopen'ed library. */
static void test_convert_names_the_example_functions(void **state)
{
	(void)state;
	skip_without_symbols();
	const char *cli = getenv("TIMELINE_CLI");
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		skip();
	}
	char *snap = strdup(tl_test_path("instrumented-example", ".tlsnap"));
	char *json = strdup(tl_test_path("instrumented-example", ".json"));
	const char *emulator = tl_test_emulator();
	assert_int_equal(tl_test_run("%s%s%s %s > /dev/null", emulator ? emulator : "",
	                             emulator ? " " : "", TL_INSTRUMENTED_EXAMPLE, snap),
	                 0);
	assert_int_equal(tl_test_run("%s convert %s -o %s > /dev/null", cli, snap, json), 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"int example::scaled<int>(int, int)\""));
	assert_non_null(strstr(text, "\"plugin_square\""));
	free(text);
	unlink(snap);
	unlink(json);
	free(snap);
	free(json);
}
#endif

/*
 * Makes a tracefs instance of this process's own for the systrace
 * recorder (TIMELINE_TRACEFS_INSTANCE) and writes its directory into dir;
 * skips the running test, saying why, without root or tracefs.
 */
static void systrace_instance(char *dir, size_t size)
{
	static const char top[] = "/sys/kernel/tracing";
	if (geteuid() != 0) {
		print_message(
		    "skipped: the systrace recorder writes to tracefs, which needs root\n");
		skip();
	}
	if (access("/sys/kernel/tracing/trace_marker", F_OK) != 0 &&
	    mount("nodev", top, "tracefs", 0, NULL) != 0) {
		print_message("skipped: tracefs is not mounted and mounting it failed: %s\n",
		              strerror(errno));
		skip();
	}
	char name[64];
	snprintf(name, sizeof name, "timeline_instrument_%d", (int)getpid());
	snprintf(dir, size, "%s/instances/%s", top, name);
	/* root with tracefs mounted: an instance that cannot be made is a
	 * failure, not a reason to skip */
	if (mkdir(dir, 0755) != 0)
		fail_msg("cannot create the tracefs instance %s: %s", dir, strerror(errno));
	setenv("TIMELINE_TRACEFS_INSTANCE", name, 1);
}

/* The very first call of a function, through the hooks, is written under
 * the systrace recorder with the function's name, not its address. */
static void test_systrace_writes_the_first_call_by_name(void **state)
{
	(void)state;
	char dir[256];
	systrace_instance(dir, sizeof dir);
	tl_shutdown();
	tl_test_init(TL_RECORDER_SYSTRACE, 0);
	instrumented_first_under_systrace();
	tl_shutdown();
	unsetenv("TIMELINE_TRACEFS_INSTANCE");
	char trace[300];
	snprintf(trace, sizeof trace, "%s/trace", dir);
	char *text = tl_test_read_file(trace, NULL);
	rmdir(dir);
	assert_non_null(text);
	char begin[64];
	snprintf(begin, sizeof begin, "tracing_mark_write: B|%d|", (int)getpid());
	const char *at = strstr(text, begin);
	assert_non_null(at);
	at += strlen(begin);
#ifdef TL_HAVE_LIBELF
	const char *name = "instrumented_first_under_systrace\n";
#else
	const char *name = "test_instrument+0x";
#endif
	if (strncmp(at, name, strlen(name)) != 0)
		fail_msg("the first call is written as %.*s", (int)strcspn(at, "\n"), at);
	assert_int_equal(tl_test_count(text, begin), 1);
	assert_int_equal(tl_test_count(text, "tracing_mark_write: E|"), 1);
	free(text);
}

/* Skips the running test when cc (a compiler's name) is not installed. */
static void skip_without_compiler(const char *cc)
{
	if (tl_test_run("command -v %s >/dev/null 2>&1", cc) != 0) {
		print_message("skipped: %s is not installed\n", cc);
		skip();
	}
}

/*
 * A program whose own hooks call the public API (support/own_hooks.c),
 * built whole with -finstrument-functions by cc against the shared
 * library: the API's inline functions must not call the hooks again (a
 * recursion that ends in a stack overflow). It records 20 events.
 */
static void own_hooks_record(const char *cc)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	print_message("skipped: a sanitizer build's shared library needs the sanitizer's runtime, "
	              "which a plain program built here does not link\n");
	skip();
#endif
	if (tl_test_emulator()) {
		print_message("skipped: a cross build's shared library is not for this machine's "
		              "compilers\n");
		skip();
	}
	skip_without_compiler(cc);
	const char *exe = tl_test_path(cc, "-own-hooks");
	const char *json = tl_test_path(cc, "-own-hooks.json");
	assert_int_equal(tl_test_run("%s -std=c11 -O2 -Wall -Werror -finstrument-functions -I%s/include "
	                             "%s/tests/support/own_hooks.c -o %s -L%s -ltimeline "
	                             "-Wl,-rpath,%s",
	                             cc, TL_SOURCE_DIR, TL_SOURCE_DIR, exe, TL_BINARY_DIR,
	                             TL_BINARY_DIR),
	                 0);
	assert_int_equal(tl_test_run("%s %s >/dev/null", exe, json), 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	/* five work slices, each a B/E pair, or one X where its begin and end
	 * share a timestamp (a clock that ticks in steps of 10 ns, as some
	 * CPUs' TSC does, stamps a short call's begin and end alike) */
	size_t pairs = tl_test_count(text, "{\"ph\":\"B\",\"name\":\"work\",\"cat\":\"own_hooks\"");
	size_t ends = tl_test_count(text, "{\"ph\":\"E\",\"name\":\"work\",\"cat\":\"own_hooks\"");
	size_t whole = tl_test_count(text, "{\"ph\":\"X\",\"name\":\"work\",\"cat\":\"own_hooks\"");
	assert_int_equal(pairs, ends);
	assert_int_equal(pairs + whole, 5);
	free(text);
}

static void test_own_hooks_on_the_api_record_with_gcc(void **state)
{
	(void)state;
	own_hooks_record("gcc");
}

static void test_own_hooks_on_the_api_record_with_clang(void **state)
{
	(void)state;
	own_hooks_record("clang");
}

/*
 * The hooks' own sources built with -finstrument-functions by cc (a user
 * who builds the library with the flag; clang has no flag that undoes it):
 * nothing in them, inline functions of the headers included, calls a hook.
 */
static void hooks_built_instrumented_call_no_hook(const char *cc)
{
	skip_without_compiler(cc);
	static const char *const sources[] = {"tracers/instrument.c", "tracers/instrument_patterns.c",
	                                      "tracers/instrument/hooks.c"};
	const char *object = tl_test_path(cc, "-hooks.o");
	for (size_t i = 0; i < sizeof sources / sizeof *sources; i++) {
		assert_int_equal(tl_test_run("%s -std=c11 -O2 -D_GNU_SOURCE -DTIMELINE_BUILDING_LIBRARY "
		                             "-finstrument-functions -I%s/include -I%s -c %s/%s -o %s",
		                             cc, TL_SOURCE_DIR, TL_SOURCE_DIR, TL_SOURCE_DIR,
		                             sources[i], object),
		                 0);
		if (tl_test_run("nm -u %s | grep -q __cyg_profile_func", object) == 0)
			fail_msg("%s built by %s with -finstrument-functions calls the hooks", sources[i],
			         cc);
	}
}

static void test_hooks_built_instrumented_by_gcc_call_no_hook(void **state)
{
	(void)state;
	hooks_built_instrumented_call_no_hook("gcc");
}

static void test_hooks_built_instrumented_by_clang_call_no_hook(void **state)
{
	(void)state;
	hooks_built_instrumented_call_no_hook("clang");
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_call_is_a_balanced_slice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_recorded_outside_a_session, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_disabled_records_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recursion_nests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_depth_limits_recording, setup, teardown),
		cmocka_unit_test_setup_teardown(test_min_duration_takes_back_short_calls, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_longjmp_closes_skipped_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exception_through_c_frames_closes_them, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_thread_exit_closes_open_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_calls_after_a_threads_exit_are_counted, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_instrumented_signal_handler_is_recorded, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_fork_child_records_its_own_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_inside_a_hook_is_dropped_and_counted, setup,
		                                teardown),
		cmocka_unit_test(test_stats_rejects_a_short_struct),
		cmocka_unit_test_setup_teardown(test_systrace_writes_the_first_call_by_name, setup,
		                                teardown),
		cmocka_unit_test(test_own_hooks_on_the_api_record_with_gcc),
		cmocka_unit_test(test_own_hooks_on_the_api_record_with_clang),
		cmocka_unit_test(test_hooks_built_instrumented_by_gcc_call_no_hook),
		cmocka_unit_test(test_hooks_built_instrumented_by_clang_call_no_hook),
		cmocka_unit_test_setup_teardown(test_exclude_pattern_leaves_out_matching_functions,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_include_pattern_keeps_only_matching_functions,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_patterns_decide_a_function_first_call, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_clearing_patterns_records_every_call_again, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_slow_dispatch_tree_names_instrumented_functions,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_anr_dump_names_the_stalled_function, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_call_chain_beyond_the_stack_is_balanced, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_min_duration_keeps_no_call_shorter_than_it,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_record_their_calls_balanced, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_fork_inside_a_call_leaves_the_child_balanced,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_storm_leaves_calls_balanced, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_while_threads_call_converts_balanced,
		                                setup, teardown),
#ifdef TL_INSTRUMENTED_EXAMPLE
		cmocka_unit_test_setup_teardown(test_convert_names_the_example_functions, setup,
		                                teardown),
		cmocka_unit_test(test_environment_turns_recording_off),
		cmocka_unit_test(test_environment_sets_the_maximum_depth),
		cmocka_unit_test(test_environment_sets_the_minimum_duration),
		cmocka_unit_test(test_environment_sets_name_patterns),
		cmocka_unit_test_setup_teardown(test_example_snapshot_has_every_call_named, setup,
		                                teardown),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
