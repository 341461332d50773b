/* The three buffering recorders: ring wrap, startup stop, endless cap. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

#define SMALL_BUFFER (64 * 1024)

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static tl_stats stats_now(void)
{
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	return st;
}

/* Emits n numbered instants named "e<i>" with copied names. */
static void emit_numbered(int from, int n)
{
	for (int i = from; i < from + n; i++) {
		char name[32];
		snprintf(name, sizeof name, "e%d", i);
		TL_TRACE_EVENT_COPY_INSTANT0("rec", name, TL_SCOPE_THREAD);
	}
}

static int has_instant(const tl_model *m, int i)
{
	char name[32];
	snprintf(name, sizeof name, "e%d", i);
	return tl_test_count_events(m, 'i', name) == 1;
}

static void test_ring_overwrites_oldest_block(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, SMALL_BUFFER);
	emit_numbered(0, 20000);
	tl_stats st = stats_now();
	assert_true(st.events_overwritten > 0);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.events_written, 20000);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_false(has_instant(&m, 0));    /* oldest gone */
	assert_true(has_instant(&m, 19999)); /* newest kept */
	/* what is kept is a contiguous, ordered suffix */
	size_t kept = tl_test_count_events(&m, 'i', NULL);
	assert_int_equal(kept + st.events_overwritten, 20000);
	assert_true(has_instant(&m, 20000 - (int)kept));
	tl_model_free(&m);
}

static void test_ring_keeps_thread_names_after_wrap(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, SMALL_BUFFER);
	assert_int_equal(tl_thread_set_name("a rather long thread name, well past sixteen bytes"), 0);
	emit_numbered(0, 20000);
	assert_true(stats_now().events_overwritten > 0);
	tl_model m;
	tl_test_snapshot_model(&m);
	const char *name = tl_model_thread_name(&m, (uint32_t)gettid());
	assert_non_null(name);
	assert_string_equal(name, "a rather long thread name, well past sixteen bytes");
	tl_model_free(&m);
}

struct quiet_thread {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int wrote, release;
};

static void *quiet_main(void *arg)
{
	struct quiet_thread *q = arg;
	TL_TRACE_EVENT_INSTANT0("rec", "quiet early event", TL_SCOPE_THREAD);
	pthread_mutex_lock(&q->lock);
	q->wrote = 1;
	pthread_cond_broadcast(&q->cond);
	while (!q->release)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void test_ring_never_takes_a_block_in_use(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, SMALL_BUFFER);
	struct quiet_thread q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, quiet_main, &q), 0);
	pthread_mutex_lock(&q.lock);
	while (!q.wrote)
		pthread_cond_wait(&q.cond, &q.lock);
	pthread_mutex_unlock(&q.lock);
	emit_numbered(0, 50000); /* wraps the ring many times */
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "quiet early event"), 1);
	tl_model_free(&m);
	pthread_mutex_lock(&q.lock);
	q.release = 1;
	pthread_cond_broadcast(&q.cond);
	pthread_mutex_unlock(&q.lock);
	pthread_join(t, NULL);
}

static void test_startup_stops_when_full(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_STARTUP, SMALL_BUFFER);
	emit_numbered(0, 20000);
	tl_stats st = stats_now();
	assert_true(st.events_dropped > 0);
	assert_int_equal(st.events_overwritten, 0);
	assert_int_equal(st.events_written + st.events_dropped, 20000);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_true(has_instant(&m, 0)); /* a clean prefix */
	assert_true(has_instant(&m, (int)st.events_written - 1));
	assert_false(has_instant(&m, 19999));
	tl_model_free(&m);
}

/* The fast forms fill a block to its last word and count every record:
 * 4 blocks of 4 KiB, each 64 bytes of header and 4032 of records, hold
 * exactly 4 * 252 ENDs (16 bytes) or 4 * 168 BEGINs (24 bytes). */
static void startup_holds_exactly(bool begins, uint64_t expected)
{
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_STARTUP,
	                .buffer_bytes = 16 * 1024,
	                .block_bytes = 4096};
	assert_int_equal(tl_init(&o), 0);
	for (int i = 0; i < 2000; i++) {
		if (begins)
			TL_TRACE_EVENT_BEGIN0("rec", "b");
		else
			TL_TRACE_EVENT_END0("rec", "b");
	}
	tl_stats st = stats_now();
	assert_int_equal(st.events_written, expected);
	assert_int_equal(st.events_dropped, 2000 - expected);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, begins ? TL_PHASE_BEGIN : TL_PHASE_END, NULL),
	                 expected);
	tl_model_free(&m);
	tl_shutdown();
}

static void test_startup_blocks_fill_to_their_last_word(void **state)
{
	(void)state;
	startup_holds_exactly(false, 4 * 252);
	startup_holds_exactly(true, 4 * 168);
}

static void *late_writer(void *arg)
{
	(void)arg;
	TL_TRACE_EVENT_INSTANT0("rec", "after full", TL_SCOPE_THREAD);
	return NULL;
}

static void test_startup_full_stops_every_thread(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_STARTUP, SMALL_BUFFER);
	emit_numbered(0, 20000);
	uint64_t dropped = stats_now().events_dropped;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, late_writer, NULL), 0);
	pthread_join(t, NULL);
	assert_int_equal(stats_now().events_dropped, dropped + 1);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "after full"), 0);
	tl_model_free(&m);
}

/* A thread that writes a few events, waits until the main thread has filled
 * the startup recorder, then exits. */
static atomic_int startup_full;
static void *few_then_exit(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++)
		TL_TRACE_EVENT_INSTANT0("rec", "before exit", TL_SCOPE_THREAD);
	atomic_store(&startup_full, 1);
	while (atomic_load(&startup_full) != 2)
		sched_yield();
	return NULL;
}

/* The events of a thread that exits after the startup recorder filled stay
 * written and in every snapshot: its block is let go as any thread's. */
static void test_startup_keeps_events_of_a_thread_that_exits_when_full(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_STARTUP, SMALL_BUFFER);
	atomic_store(&startup_full, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, few_then_exit, NULL), 0);
	while (atomic_load(&startup_full) != 1)
		sched_yield();
	emit_numbered(0, 20000); /* fills the recorder */
	uint64_t written = stats_now().events_written;
	atomic_store(&startup_full, 2);
	pthread_join(t, NULL);
	assert_int_equal(stats_now().events_written, written);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "before exit"), 10);
	tl_model_free(&m);
}

static void test_endless_grows_until_the_cap_then_drops(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_ENDLESS, 256 * 1024);
	emit_numbered(0, 100);
	uint64_t used_early = stats_now().buffer_bytes_used;
	emit_numbered(100, 30000);
	tl_stats st = stats_now();
	assert_true(st.buffer_bytes_used > used_early);
	assert_true(st.buffer_bytes_used <= 256 * 1024);
	assert_true(st.events_dropped > 0);
	assert_int_equal(st.events_overwritten, 0);
	assert_int_equal(st.events_written + st.events_dropped, 30100);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_true(has_instant(&m, 0));
	assert_false(has_instant(&m, 30099));
	tl_model_free(&m);
}

static void test_endless_keeps_everything_under_the_cap(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_ENDLESS, 0);
	emit_numbered(0, 50000);
	tl_stats st = stats_now();
	assert_int_equal(st.events_written, 50000);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.buffer_bytes, 256u * 1024 * 1024);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', NULL), 50000);
	tl_model_free(&m);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ring_overwrites_oldest_block, teardown),
		cmocka_unit_test_teardown(test_ring_keeps_thread_names_after_wrap, teardown),
		cmocka_unit_test_teardown(test_ring_never_takes_a_block_in_use, teardown),
		cmocka_unit_test_teardown(test_startup_stops_when_full, teardown),
		cmocka_unit_test_teardown(test_startup_full_stops_every_thread, teardown),
		cmocka_unit_test_teardown(test_startup_keeps_events_of_a_thread_that_exits_when_full,
		                          teardown),
		cmocka_unit_test_teardown(test_startup_blocks_fill_to_their_last_word, teardown),
		cmocka_unit_test_teardown(test_endless_grows_until_the_cap_then_drops, teardown),
		cmocka_unit_test_teardown(test_endless_keeps_everything_under_the_cap, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
