/*
 * Every live thread keeps its latest events in a ring of the default size,
 * up to the thread table's 1,024 threads: none is dropped entirely, even
 * when other threads own every block of the pool or keep filling blocks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"
#include "recorder/slot.h"

/* Each thread's last begin carries its index and this sequence number. */
#define PAIRS_PER_THREAD 40

struct worker {
	pthread_t thread;
	uint32_t tid;
	int index;
	int busy; /* keeps filling blocks until told to stop */
};

static pthread_barrier_t emitted_barrier, snapshot_barrier;
static _Atomic int stop_busy;
static _Atomic long busy_rounds;

static void *work(void *arg)
{
	struct worker *w = arg;
	w->tid = (uint32_t)syscall(SYS_gettid);
	for (int i = 0; i < PAIRS_PER_THREAD; i++) {
		TL_TRACE_EVENT_BEGIN2("kept", "step", "thread", w->index, "i", i);
		TL_TRACE_EVENT_END0("kept", "step");
	}
	if (w->busy) {
		/* at least one round, however late the thread starts */
		do {
			for (int i = 0; i < 256; i++) {
				TL_TRACE_EVENT_BEGIN0("kept", "busy");
				TL_TRACE_EVENT_END0("kept", "busy");
			}
			atomic_fetch_add_explicit(&busy_rounds, 1, memory_order_relaxed);
		} while (!atomic_load_explicit(&stop_busy, memory_order_relaxed));
	}
	/* alive until the snapshot is taken */
	pthread_barrier_wait(&emitted_barrier);
	pthread_barrier_wait(&snapshot_barrier);
	return NULL;
}

/* Whether the model holds a worker's latest events: its last step (i =
 * PAIRS_PER_THREAD - 1), or for a busy one, a busy pair. */
static int has_latest(const tl_model *m, const struct worker *w)
{
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->tid != w->tid || e->phase != TL_PHASE_BEGIN || !e->name)
			continue;
		if (w->busy && strcmp(e->name, "busy") == 0)
			return 1;
		if (!w->busy && strcmp(e->name, "step") == 0 && e->nargs == 2 &&
		    e->args[1].v.i == PAIRS_PER_THREAD - 1)
			return 1;
	}
	return 0;
}

/* Starts `n` workers (the first `nbusy` of them busy) on small stacks,
 * waits until each has emitted, snapshots, and counts the workers whose
 * latest events are in the snapshot. */
static int run_workers(int n, int nbusy)
{
	struct worker *w = calloc((size_t)n, sizeof *w);
	assert_non_null(w);
	assert_int_equal(pthread_barrier_init(&emitted_barrier, NULL, (unsigned)n + 1), 0);
	assert_int_equal(pthread_barrier_init(&snapshot_barrier, NULL, (unsigned)n + 1), 0);
	atomic_store(&stop_busy, 0);
	atomic_store(&busy_rounds, 0);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (int i = 0; i < n; i++) {
		w[i].index = i;
		w[i].busy = i < nbusy;
		assert_int_equal(pthread_create(&w[i].thread, &attr, work, &w[i]), 0);
	}
	pthread_attr_destroy(&attr);
	if (nbusy) {
		/* the busy ones cycle the ring meanwhile: 200 ms, and at least
		 * eight rounds each (under an emulator threads start late) */
		usleep(200 * 1000);
		while (atomic_load(&busy_rounds) < 8L * nbusy)
			usleep(10 * 1000);
		atomic_store(&stop_busy, 1);
	}
	pthread_barrier_wait(&emitted_barrier);
	tl_model m;
	tl_test_snapshot_model(&m);
	pthread_barrier_wait(&snapshot_barrier);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	int kept = 0;
	for (int i = 0; i < n; i++) {
		int k = has_latest(&m, &w[i]);
		kept += k;
		if (!k)
			print_message("worker %d (%s, tid %u) lost its latest events\n", i,
			              w[i].busy ? "busy" : "idle", w[i].tid);
	}
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	print_message("%d of %d threads kept their last events; written %llu, overwritten %llu, "
	              "dropped %llu, buffer used %llu of %llu bytes\n",
	              kept, n, (unsigned long long)st.events_written,
	              (unsigned long long)st.events_overwritten,
	              (unsigned long long)st.events_dropped,
	              (unsigned long long)st.buffer_bytes_used, (unsigned long long)st.buffer_bytes);
	assert_int_equal(st.events_dropped, 0);
	tl_model_free(&m);
	pthread_barrier_destroy(&emitted_barrier);
	pthread_barrier_destroy(&snapshot_barrier);
	free(w);
	return kept;
}

static int setup(void **state)
{
	(void)state;
	tl_test_clear_environment();
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING}; /* default size */
	assert_int_equal(tl_init(&o), 0);
	TL_TRACE_EVENT_INSTANT0("kept", "main", TL_SCOPE_THREAD); /* the main thread's slot */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

/* Every slot of the table but the main thread's, all alive at once: far
 * more threads than the default ring has blocks. */
static void test_a_full_thread_table_keeps_every_threads_latest_events(void **state)
{
	(void)state;
	int n = TL_MAX_THREADS - 1;
	assert_int_equal(run_workers(n, 0), n);
}

/* A few threads fill blocks flat out while hundreds of others, each with a
 * few events, wait: the busy ones overwrite each other, never the others'
 * last block. */
static void test_busy_threads_never_take_the_last_block_of_a_live_thread(void **state)
{
	(void)state;
	int n = 600, nbusy = 8;
	assert_int_equal(run_workers(n, nbusy), n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_a_full_thread_table_keeps_every_threads_latest_events, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_busy_threads_never_take_the_last_block_of_a_live_thread, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
