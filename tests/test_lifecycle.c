/* tl_init / tl_shutdown, options, environment, stats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/clock.h"
#include "recorder/export/trace_model.h"

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	tl_test_clear_environment();
	return 0;
}

static void test_init_defaults_to_ring(void **state)
{
	(void)state;
	assert_int_equal(tl_init(NULL), 0);
	assert_true(tl_is_running());
	assert_string_equal(tl_recorder_name(), "ring");
}

static void test_init_twice_is_ealready(void **state)
{
	(void)state;
	assert_int_equal(tl_init(NULL), 0);
	assert_int_equal(tl_init(NULL), -EALREADY);
}

static void test_environment_selects_recorder_and_size(void **state)
{
	(void)state;
	setenv("TIMELINE_RECORDER", "startup", 1);
	setenv("TIMELINE_BUFFER_KB", "64", 1);
	assert_int_equal(tl_init(NULL), 0);
	assert_string_equal(tl_recorder_name(), "startup");
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.buffer_bytes, 64 * 1024);
}

static void test_environment_unknown_recorder_is_einval(void **state)
{
	(void)state;
	setenv("TIMELINE_RECORDER", "tape", 1);
	assert_int_equal(tl_init(NULL), -EINVAL);
	assert_false(tl_is_running());
}

static void test_environment_bad_buffer_size_is_einval(void **state)
{
	(void)state;
	setenv("TIMELINE_BUFFER_KB", "12x", 1);
	assert_int_equal(tl_init(NULL), -EINVAL);
	setenv("TIMELINE_BUFFER_KB", "1", 1); /* below the minimum */
	assert_int_equal(tl_init(NULL), -EINVAL);
	assert_false(tl_is_running());
}

/* TIMELINE_NO_TSC=1 wins over no_tsc = false; where the TSC is not usable
 * the session reads the vDSO clock anyway. */
static void test_environment_no_tsc_forces_the_vdso_clock(void **state)
{
	(void)state;
	setenv("TIMELINE_NO_TSC", "1", 1);
	tl_options o = {.struct_size = sizeof o, .no_tsc = false};
	assert_int_equal(tl_init(&o), 0);
	print_message("TSC usable here: %s\n", tl_clock_tsc_usable() ? "yes" : "no");
	assert_false(tl_clock_is_tsc());
}

/* TIMELINE_NO_TSC=0 leaves the caller's no_tsc = true in force. */
static void test_environment_no_tsc_0_keeps_the_option(void **state)
{
	(void)state;
	setenv("TIMELINE_NO_TSC", "0", 1);
	tl_options o = {.struct_size = sizeof o, .no_tsc = true};
	assert_int_equal(tl_init(&o), 0);
	assert_false(tl_clock_is_tsc());
	tl_shutdown();
	o.no_tsc = false;
	assert_int_equal(tl_init(&o), 0);
	assert_int_equal(tl_clock_is_tsc(), tl_test_tsc_expected());
}

static char logged[512];

static void capture_log(tl_log_level level, const char *message, void *user)
{
	(void)level;
	(void)user;
	snprintf(logged, sizeof logged, "%s", message);
}

static void test_environment_bad_no_tsc_is_einval_and_logged(void **state)
{
	(void)state;
	setenv("TIMELINE_NO_TSC", "yes", 1);
	tl_options o = {.struct_size = sizeof o, .log = capture_log};
	logged[0] = '\0';
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_false(tl_is_running());
	assert_string_equal(logged, "TIMELINE_NO_TSC='yes': expected 1 or 0");
}

/* TIMELINE_FORCE_TSC=1 takes the TSC path wherever the CPU's TSC is
 * invariant, even where the kernel's clocksource is another. */
static void test_environment_force_tsc_takes_the_tsc_path(void **state)
{
	(void)state;
	unsetenv("TIMELINE_NO_TSC");
	setenv("TIMELINE_FORCE_TSC", "1", 1);
	tl_options o = {.struct_size = sizeof o, .no_tsc = false};
	assert_int_equal(tl_init(&o), 0);
	print_message("clocksource %s, invariant TSC: %s\n", tl_test_clocksource(),
	              tl_clock_tsc_invariant() ? "yes" : "no");
	assert_int_equal(tl_clock_is_tsc(), tl_clock_tsc_invariant());
}

/* TIMELINE_NO_TSC=1, and the option no_tsc, win over TIMELINE_FORCE_TSC=1. */
static void test_environment_no_tsc_wins_over_force_tsc(void **state)
{
	(void)state;
	setenv("TIMELINE_FORCE_TSC", "1", 1);
	setenv("TIMELINE_NO_TSC", "1", 1);
	tl_options o = {.struct_size = sizeof o, .no_tsc = false};
	assert_int_equal(tl_init(&o), 0);
	assert_false(tl_clock_is_tsc());
	tl_shutdown();
	unsetenv("TIMELINE_NO_TSC");
	o.no_tsc = true;
	assert_int_equal(tl_init(&o), 0);
	assert_false(tl_clock_is_tsc());
}

static void test_environment_bad_force_tsc_is_einval_and_logged(void **state)
{
	(void)state;
	setenv("TIMELINE_FORCE_TSC", "on", 1);
	tl_options o = {.struct_size = sizeof o, .log = capture_log};
	logged[0] = '\0';
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_false(tl_is_running());
	assert_string_equal(logged, "TIMELINE_FORCE_TSC='on': expected 1 or 0");
}

/* tl_init with `name=value` in the environment; returns its result, the
 * log line in `logged`. */
static int init_with_environment(const char *name, const char *value)
{
	setenv(name, value, 1);
	tl_options o = {.struct_size = sizeof o, .log = capture_log};
	logged[0] = '\0';
	int rc = tl_init(&o);
	unsetenv(name);
	return rc;
}

#define BUFFER_KB_EXPECTED "expected a decimal number of KiB from 16 to 67108864"
#define BLANKS "blanks around the value are not accepted; "

static void test_environment_buffer_kb_with_a_leading_blank_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", " 16"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB=' 16': " BLANKS BUFFER_KB_EXPECTED);
}

static void test_environment_buffer_kb_with_a_trailing_blank_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "16 "), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='16 ': " BLANKS BUFFER_KB_EXPECTED);
	/* shown escaped: the refusal stays one line */
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "16\n"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='16\\n': " BLANKS BUFFER_KB_EXPECTED);
}

static void test_environment_buffer_kb_with_a_sign_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "+16"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='+16': " BUFFER_KB_EXPECTED);
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "-16"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='-16': " BUFFER_KB_EXPECTED);
}

static void test_environment_buffer_kb_below_the_minimum_says_the_minimum(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "15"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='15': " BUFFER_KB_EXPECTED);
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "16"), 0);
}

static void test_environment_buffer_kb_above_the_maximum_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "67108865"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_BUFFER_KB='67108865': " BUFFER_KB_EXPECTED);
	assert_int_equal(init_with_environment("TIMELINE_BUFFER_KB", "99999999999999999999999"),
	                 -EINVAL);
	assert_non_null(strstr(logged, BUFFER_KB_EXPECTED));
}

static void test_environment_recorder_with_blanks_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_RECORDER", "ring "), -EINVAL);
	assert_string_equal(logged, "TIMELINE_RECORDER='ring ': " BLANKS
	                            "expected ring, endless, startup, systrace, file or callback");
}

static void test_environment_no_tsc_with_blanks_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_NO_TSC", " 1"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_NO_TSC=' 1': " BLANKS "expected 1 or 0");
}

static void test_environment_categories_with_blanks_are_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_CATEGORIES", "gfx,net "), -EINVAL);
	assert_string_equal(logged, "TIMELINE_CATEGORIES='gfx,net ': " BLANKS
	                            "expected comma-separated category globs");
	/* blanks around the commas are the filter's own syntax */
	assert_int_equal(init_with_environment("TIMELINE_CATEGORIES", "-gfx, -net"), 0);
}

static void test_environment_tracefs_instance_with_blanks_is_refused(void **state)
{
	(void)state;
	assert_int_equal(init_with_environment("TIMELINE_TRACEFS_INSTANCE", "\tmine"), -EINVAL);
	assert_string_equal(logged, "TIMELINE_TRACEFS_INSTANCE='\\tmine': " BLANKS
	                            "expected a tracefs instance name");
}

static void test_options_buffer_below_the_minimum_says_the_minimum(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .buffer_bytes = 1024, .log = capture_log};
	logged[0] = '\0';
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_string_equal(logged,
	                    "buffer of 1024 bytes: too small; the minimum is 16384 bytes (16 KiB)");
}

static void test_options_buffer_of_fewer_than_two_blocks_says_the_minimum(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o,
	                .buffer_bytes = 100 * 1024,
	                .block_bytes = 64 * 1024,
	                .log = capture_log};
	logged[0] = '\0';
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_string_equal(logged, "buffer of 102400 bytes: too small for blocks of 65536 bytes; "
	                            "the minimum is two blocks, 131072 bytes");
	o.buffer_bytes = 128 * 1024;
	assert_int_equal(tl_init(&o), 0);
}

static void test_options_too_small_struct_is_einval(void **state)
{
	(void)state;
	tl_options o = {0};
	o.struct_size = 4;
	assert_int_equal(tl_init(&o), -EINVAL);
}

static void test_events_after_shutdown_are_ignored(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category *cat = tl_category_get("life");
	tl_shutdown();
	tl_emit_begin(cat, "late");
	tl_emit_end(cat);
	TL_TRACE_EVENT_INSTANT0("life", "late", TL_SCOPE_THREAD);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_written, 0);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(tl_snapshot_binary_fd(1), -ENODEV);
}

static void test_direct_emits_after_shutdown_are_ignored(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category *cat = tl_category_get("life");
	tl_emit_begin(cat, "during"); /* the thread now has a block */
	tl_shutdown();                /* which is unmapped here */
	tl_emit_begin(cat, "after");
	tl_emit_end(cat);
	tl_emit_counter(cat, "after", 1);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
}

static void test_new_session_with_another_mapping_is_safe(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	TL_TRACE_EVENT_INSTANT0("life", "one", TL_SCOPE_THREAD);
	tl_shutdown();
	tl_test_init(TL_RECORDER_ENDLESS, 64 << 20);
	tl_emit_begin(tl_category_get("life"), "two");
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_written, 1);
}

static void test_restart_records_again(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	TL_TRACE_EVENT_INSTANT0("life", "first session", TL_SCOPE_THREAD);
	tl_shutdown();
	tl_test_init(TL_RECORDER_ENDLESS, 1 << 20);
	TL_TRACE_EVENT_INSTANT0("life", "second session", TL_SCOPE_THREAD);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "first session"), 0);
	assert_int_equal(tl_test_count_events(&m, 'i', "second session"), 1);
	tl_model_free(&m);
}

static void test_stats_count_written_events(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	for (int i = 0; i < 100; i++) {
		TL_TRACE_EVENT_BEGIN0("life", "work");
		TL_TRACE_EVENT_END0("life", "work");
	}
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_written, 200);
	assert_int_equal(st.events_overwritten, 0);
	assert_int_equal(st.events_dropped, 0);
	assert_string_equal(st.recorder, "ring");
	assert_true(st.threads >= 1);
}

static void test_stats_rejects_small_struct(void **state)
{
	(void)state;
	tl_stats st = {.struct_size = 1};
	assert_int_equal(tl_stats_get(&st), -EINVAL);
	assert_int_equal(tl_stats_get(NULL), -EINVAL);
}

static void test_process_name_in_snapshot(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .process_name = "my engine"};
	assert_int_equal(tl_init(&o), 0);
	TL_TRACE_EVENT_INSTANT0("life", "x", TL_SCOPE_PROCESS);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_string_equal(m.process_name, "my engine");
	assert_int_equal(m.pid, getpid());
	tl_model_free(&m);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_init_defaults_to_ring, teardown),
		cmocka_unit_test_teardown(test_init_twice_is_ealready, teardown),
		cmocka_unit_test_teardown(test_environment_selects_recorder_and_size, teardown),
		cmocka_unit_test_teardown(test_environment_unknown_recorder_is_einval, teardown),
		cmocka_unit_test_teardown(test_environment_bad_buffer_size_is_einval, teardown),
		cmocka_unit_test_teardown(test_environment_no_tsc_forces_the_vdso_clock, teardown),
		cmocka_unit_test_teardown(test_environment_no_tsc_0_keeps_the_option, teardown),
		cmocka_unit_test_teardown(test_environment_bad_no_tsc_is_einval_and_logged,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_force_tsc_takes_the_tsc_path, teardown),
		cmocka_unit_test_teardown(test_environment_no_tsc_wins_over_force_tsc, teardown),
		cmocka_unit_test_teardown(test_environment_bad_force_tsc_is_einval_and_logged,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_buffer_kb_with_a_leading_blank_is_refused,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_buffer_kb_with_a_trailing_blank_is_refused,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_buffer_kb_with_a_sign_is_refused, teardown),
		cmocka_unit_test_teardown(
		    test_environment_buffer_kb_below_the_minimum_says_the_minimum, teardown),
		cmocka_unit_test_teardown(test_environment_buffer_kb_above_the_maximum_is_refused,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_recorder_with_blanks_is_refused, teardown),
		cmocka_unit_test_teardown(test_environment_no_tsc_with_blanks_is_refused, teardown),
		cmocka_unit_test_teardown(test_environment_categories_with_blanks_are_refused,
		                          teardown),
		cmocka_unit_test_teardown(test_environment_tracefs_instance_with_blanks_is_refused,
		                          teardown),
		cmocka_unit_test_teardown(test_options_buffer_below_the_minimum_says_the_minimum,
		                          teardown),
		cmocka_unit_test_teardown(
		    test_options_buffer_of_fewer_than_two_blocks_says_the_minimum, teardown),
		cmocka_unit_test_teardown(test_options_too_small_struct_is_einval, teardown),
		cmocka_unit_test_teardown(test_events_after_shutdown_are_ignored, teardown),
		cmocka_unit_test_teardown(test_direct_emits_after_shutdown_are_ignored, teardown),
		cmocka_unit_test_teardown(test_new_session_with_another_mapping_is_safe, teardown),
		cmocka_unit_test_teardown(test_restart_records_again, teardown),
		cmocka_unit_test_teardown(test_stats_count_written_events, teardown),
		cmocka_unit_test_teardown(test_stats_rejects_small_struct, teardown),
		cmocka_unit_test_teardown(test_process_name_in_snapshot, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
