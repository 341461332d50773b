/* Categories: registration, filters, globs, the macros' enabled check. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	tl_category_set_filter("-disabled-by-default-*");
	return 0;
}

static void test_category_get_returns_same_handle(void **state)
{
	(void)state;
	tl_category *a = tl_category_get("gfx");
	tl_category *b = tl_category_get("gfx");
	assert_ptr_equal(a, b);
	assert_string_equal(a->name, "gfx");
	assert_ptr_not_equal(a, tl_category_get("audio"));
}

static void test_categories_are_off_before_init(void **state)
{
	(void)state;
	tl_category *cat = tl_category_get("before-init");
	assert_false(tl_category_enabled(cat));
	assert_false(TL_TRACE_ENABLED("before-init"));
}

static void test_categories_are_on_by_default_while_running(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	assert_true(TL_TRACE_ENABLED("plain"));
	assert_false(TL_TRACE_ENABLED("disabled-by-default-heavy"));
	tl_shutdown();
	assert_false(TL_TRACE_ENABLED("plain"));
}

static void test_filter_list_enables_only_matches(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .categories = "render*,audio"};
	assert_int_equal(tl_init(&o), 0);
	assert_true(TL_TRACE_ENABLED("render.gpu"));
	assert_true(TL_TRACE_ENABLED("audio"));
	assert_false(TL_TRACE_ENABLED("net"));
}

static void test_filter_negation_disables(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .categories = "-net*"};
	assert_int_equal(tl_init(&o), 0);
	assert_false(TL_TRACE_ENABLED("net.http"));
	assert_true(TL_TRACE_ENABLED("render"));
}

static void test_environment_filter_overrides_options(void **state)
{
	(void)state;
	setenv("TIMELINE_CATEGORIES", "io", 1);
	tl_options o = {.struct_size = sizeof o, .categories = "gfx"};
	assert_int_equal(tl_init(&o), 0);
	unsetenv("TIMELINE_CATEGORIES");
	assert_true(TL_TRACE_ENABLED("io"));
	assert_false(TL_TRACE_ENABLED("gfx"));
}

static void test_enable_and_disable_by_glob_at_runtime(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category *a = tl_category_get("game.ai");
	tl_category *b = tl_category_get("game.physics");
	assert_int_equal(tl_category_disable("game.*"), 2);
	assert_false(tl_category_enabled(a));
	assert_false(tl_category_enabled(b));
	/* a category registered later follows the filter too */
	assert_false(tl_category_enabled(tl_category_get("game.sound")));
	assert_int_equal(tl_category_enable("game.ai"), 1);
	assert_true(tl_category_enabled(a));
	assert_false(tl_category_enabled(b));
	assert_int_equal(tl_category_enable(""), -EINVAL);
}

static void test_enable_keeps_the_other_categories_on(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category *other = tl_category_get("other");
	assert_true(tl_category_enabled(other));
	assert_int_equal(tl_category_enable("fresh.gfx"), 0); /* not registered yet: no match */
	assert_true(tl_category_enabled(other));
	assert_true(TL_TRACE_ENABLED("fresh.gfx"));
}

static void test_enable_overrides_a_default_off_category(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	assert_false(TL_TRACE_ENABLED("disabled-by-default-gpu"));
	assert_int_equal(tl_category_enable("disabled-by-default-gpu"), 1);
	assert_true(TL_TRACE_ENABLED("disabled-by-default-gpu"));
}

static void test_blanks_around_filter_items_are_ignored(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .categories = " * , - net , render "};
	assert_int_equal(tl_init(&o), 0);
	assert_false(TL_TRACE_ENABLED("net"));
	assert_true(TL_TRACE_ENABLED("render"));
	assert_true(TL_TRACE_ENABLED("audio"));
}

static void test_toggling_a_category_does_not_grow_without_bound(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category *cat = tl_category_get("toggled");
	for (int i = 0; i < 10000; i++) {
		assert_int_equal(tl_category_disable("toggled"), 1);
		assert_int_equal(tl_category_enable("toggled"), 1);
	}
	assert_true(tl_category_enabled(cat));
	assert_int_equal(tl_category_enable("a,b"), -EINVAL);
	assert_int_equal(tl_category_enable("-a"), -EINVAL);
}

static void test_empty_filter_disables_everything(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	assert_int_equal(tl_category_set_filter(""), 0);
	assert_false(TL_TRACE_ENABLED("anything"));
}

static void test_disabled_category_records_nothing(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	tl_category_disable("quiet");
	int evaluated = 0;
	TL_TRACE_EVENT_BEGIN1("quiet", "never", "n", ++evaluated);
	TL_TRACE_EVENT_INSTANT0("quiet", "never", TL_SCOPE_THREAD);
	TL_TRACE_EVENT_INSTANT0("loud", "kept", TL_SCOPE_THREAD);
	assert_int_equal(evaluated, 0); /* arguments are not evaluated */
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "never"), 0);
	assert_int_equal(tl_test_count_events(&m, 'i', "never"), 0);
	assert_int_equal(tl_test_count_events(&m, 'i', "kept"), 1);
	tl_model_free(&m);
}

/* ---- call sites racing on a new category -------------------------------- */

#define RACERS 4
#define RACE_ROUNDS 300

static pthread_barrier_t race_start, race_end;
static char race_name[64];
static _Atomic int race_seen_off;

static void *race_call_site(void *arg)
{
	(void)arg;
	for (int round = 0; round < RACE_ROUNDS; round++) {
		pthread_barrier_wait(&race_start);
		tl_category *cache = NULL; /* a call site's first run */
		tl_category *cat = tl_i_category_resolve(&cache, race_name);
		if (!tl_category_enabled(cat))
			atomic_fetch_add(&race_seen_off, 1);
		pthread_barrier_wait(&race_end);
	}
	return NULL;
}

/* Call sites on several threads meeting a new category at once: each gets
 * it enabled, whichever registers it and whichever finds it registered. */
static void test_call_sites_racing_on_a_new_category_all_see_it_enabled(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	atomic_store(&race_seen_off, 0);
	pthread_barrier_init(&race_start, NULL, RACERS + 1);
	pthread_barrier_init(&race_end, NULL, RACERS + 1);
	pthread_t t[RACERS];
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race_call_site, NULL), 0);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		snprintf(race_name, sizeof race_name, "race-%d", round);
		pthread_barrier_wait(&race_start);
		pthread_barrier_wait(&race_end);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&race_start);
	pthread_barrier_destroy(&race_end);
	assert_int_equal(atomic_load(&race_seen_off), 0);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_category_get_returns_same_handle, teardown),
		cmocka_unit_test_teardown(test_categories_are_off_before_init, teardown),
		cmocka_unit_test_teardown(test_categories_are_on_by_default_while_running, teardown),
		cmocka_unit_test_teardown(test_filter_list_enables_only_matches, teardown),
		cmocka_unit_test_teardown(test_filter_negation_disables, teardown),
		cmocka_unit_test_teardown(test_environment_filter_overrides_options, teardown),
		cmocka_unit_test_teardown(test_enable_and_disable_by_glob_at_runtime, teardown),
		cmocka_unit_test_teardown(test_enable_keeps_the_other_categories_on, teardown),
		cmocka_unit_test_teardown(test_enable_overrides_a_default_off_category, teardown),
		cmocka_unit_test_teardown(test_blanks_around_filter_items_are_ignored, teardown),
		cmocka_unit_test_teardown(test_toggling_a_category_does_not_grow_without_bound, teardown),
		cmocka_unit_test_teardown(test_empty_filter_disables_everything, teardown),
		cmocka_unit_test_teardown(test_disabled_category_records_nothing, teardown),
		cmocka_unit_test_teardown(
		    test_call_sites_racing_on_a_new_category_all_see_it_enabled, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
