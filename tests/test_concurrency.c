/* Writers on several threads while snapshots (plain and from a signal
 * handler) and shutdown run. Built under ThreadSanitizer too. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

#define WRITERS 4

struct writer {
	pthread_t thread;
	int index;
	_Atomic uint32_t tid;
	_Atomic int *stop;
	_Atomic uint64_t loops;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	atomic_store(&w->tid, (uint32_t)gettid());
	char thread_name[32];
	snprintf(thread_name, sizeof thread_name, "writer %d", w->index);
	tl_thread_set_name(thread_name);
	uint64_t i = 0;
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		char name[48];
		snprintf(name, sizeof name, "w%d-%llu", w->index, (unsigned long long)i);
		TL_TRACE_EVENT_COPY_BEGIN1("conc", name, "i", i);
		TL_TRACE_EVENT_COUNTER("conc", "loops", (int64_t)i);
		TL_TRACE_EVENT_END0("conc", name);
		i++;
		atomic_store_explicit(&w->loops, i, memory_order_relaxed);
	}
	return NULL;
}

static struct writer writers[WRITERS];
static _Atomic int stop_flag;

static void start_writers(void)
{
	atomic_store(&stop_flag, 0);
	for (int i = 0; i < WRITERS; i++) {
		writers[i].index = i;
		writers[i].stop = &stop_flag;
		atomic_store(&writers[i].loops, 0);
		atomic_store(&writers[i].tid, 0);
		assert_int_equal(pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]), 0);
	}
	/* wait until each has written something */
	for (int i = 0; i < WRITERS; i++)
		while (atomic_load(&writers[i].loops) < 10)
			usleep(100);
}

static void stop_writers(void)
{
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(writers[i].thread, NULL);
}

static int writer_of(uint32_t tid)
{
	for (int i = 0; i < WRITERS; i++)
		if (atomic_load(&writers[i].tid) == tid)
			return i;
	return -1;
}

/* Every event is whole: a copied name "w<k>-<i>" on thread k, its argument
 * equal to i, counters numeric, ends with no name. */
static void check_model_is_consistent(const tl_model *m)
{
	size_t begins = 0;
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		int k = writer_of(e->tid);
		assert_true(k >= 0);
		assert_string_equal(e->cat, "conc");
		if (e->phase == 'B') {
			int wk;
			unsigned long long n;
			assert_int_equal(sscanf(e->name, "w%d-%llu", &wk, &n), 2);
			assert_int_equal(wk, k);
			assert_int_equal(e->nargs, 1);
			assert_true(e->args[0].v.u == n);
			begins++;
		} else if (e->phase == 'C') {
			assert_string_equal(e->name, "loops");
		} else {
			assert_int_equal(e->phase, 'E');
		}
	}
	assert_true(begins > 0);
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static void test_snapshots_while_four_threads_write(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 128 * 1024);
	start_writers();
	for (int round = 0; round < 20; round++) {
		tl_model m;
		tl_test_snapshot_model(&m);
		check_model_is_consistent(&m);
		for (int i = 0; i < WRITERS; i++) {
			char expected[32];
			snprintf(expected, sizeof expected, "writer %d", i);
			const char *name = tl_model_thread_name(&m, atomic_load(&writers[i].tid));
			assert_non_null(name);
			assert_string_equal(name, expected);
		}
		tl_model_free(&m);
		usleep(2000);
	}
	stop_writers();
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_true(st.events_overwritten > 0); /* the ring wrapped meanwhile */
}

/* Each writer's begins in a startup recorder's snapshot: a prefix of what
 * it emitted (i = 0, 1, 2 ... with no gap), as the recorder stops for
 * every thread at once; their number in all. */
static size_t check_each_thread_kept_a_prefix(const tl_model *m)
{
	uint64_t next[WRITERS] = {0};
	size_t begins = 0;
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->phase != 'B')
			continue;
		int k = writer_of(e->tid);
		assert_int_equal(e->args[0].v.u, next[k]);
		next[k]++;
		begins++;
	}
	return begins;
}

static void test_startup_snapshots_while_four_threads_write(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_STARTUP, 2 << 20); /* full by the first snapshots */
	start_writers();
	size_t previous = 0, when_full = 0;
	int growing_rounds = 0;
	tl_stats st = {.struct_size = sizeof st};
	int full_rounds = 0;
	for (int round = 0; round < 200 && full_rounds < 3; round++) {
		assert_int_equal(tl_stats_get(&st), 0);
		int full = st.events_dropped > 0;
		tl_model m;
		tl_test_snapshot_model(&m);
		check_model_is_consistent(&m);
		size_t begins = check_each_thread_kept_a_prefix(&m);
		/* it only grows; once full, only by the emits that had their
		 * room before it filled and commit after (one per writer at
		 * most: a writer preempted inside its emit, on a busy machine) */
		assert_true(begins >= previous);
		growing_rounds += !full;
		if (full && full_rounds++ == 0)
			when_full = begins;
		if (full)
			assert_true(begins <= when_full + WRITERS);
		previous = begins;
		for (int i = 0; i < WRITERS; i++) {
			char expected[32];
			snprintf(expected, sizeof expected, "writer %d", i);
			const char *name = tl_model_thread_name(&m, atomic_load(&writers[i].tid));
			assert_non_null(name);
			assert_string_equal(name, expected);
		}
		tl_model_free(&m);
		usleep(1000);
	}
	stop_writers();
	print_message("startup: %zu pairs kept, %llu events dropped; %d snapshots before it was "
	              "full\n",
	              previous, (unsigned long long)st.events_dropped, growing_rounds);
	assert_true(full_rounds >= 3); /* it filled */
	/* with every writer gone, nothing is in flight: what is kept is final */
	tl_model m;
	tl_test_snapshot_model(&m);
	size_t final = check_each_thread_kept_a_prefix(&m);
	tl_model_free(&m);
	print_message("startup: %zu begins when it was full, %zu at the end\n", when_full, final);
	assert_true(final >= previous && final <= when_full + WRITERS);
	tl_test_snapshot_model(&m);
	assert_int_equal(check_each_thread_kept_a_prefix(&m), final);
	tl_model_free(&m);
}

static void test_json_snapshots_while_threads_write(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_ENDLESS, 4 << 20);
	start_writers();
	for (int round = 0; round < 5; round++) {
		const char *path = tl_test_path("conc", ".json");
		assert_int_equal(tl_snapshot_json(path), 0);
		assert_int_equal(tl_test_run("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s",
					     path),
				 0);
		unlink(path);
	}
	stop_writers();
}

/* ---- the signal-safe snapshot ------------------------------------------------ */

static int signal_fd = -1;
static _Atomic int signal_rc = 1;
static _Atomic int signal_errno_kept;

static void on_signal(int signo)
{
	(void)signo;
	int saved = errno;
	errno = EAGAIN; /* a marker: the snapshot must leave errno as it found it */
	int rc = tl_snapshot_binary_fd(signal_fd);
	atomic_store(&signal_errno_kept, errno == EAGAIN);
	errno = saved;
	atomic_store(&signal_rc, rc);
}

static void test_binary_snapshot_from_a_signal_handler(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 256 * 1024);
	const char *path = tl_test_path("signal", ".tlsnap");
	signal_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(signal_fd >= 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	start_writers();
	/* interrupt a writer, in the middle of its emits */
	pthread_kill(writers[1].thread, SIGUSR1);
	for (int i = 0; i < 1000 && atomic_load(&signal_rc) == 1; i++)
		usleep(1000);
	stop_writers();
	sigaction(SIGUSR1, &old, NULL);
	close(signal_fd);
	assert_int_equal(atomic_load(&signal_rc), 0);
	assert_true(atomic_load(&signal_errno_kept));

	tl_model m;
	char err[256] = "";
	int rc = tl_model_read_binary_file(path, &m, err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_true(m.complete);
	check_model_is_consistent(&m);
	tl_model_free(&m);

	/* and the CLI converts it */
	const char *cli = tl_test_cli();
	if (cli) {
		const char *json = tl_test_path("signal", ".json");
		assert_int_equal(tl_test_run("%s convert %s -o %s", cli, path, json), 0);
		assert_int_equal(tl_test_run("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
					     "assert any(e.get(\"ph\")==\"B\" for e in d[\"traceEvents\"])' %s",
					     json),
				 0);
	}
}

static void test_shutdown_while_threads_write(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 64 * 1024);
	start_writers();
	tl_shutdown(); /* writers keep calling the macros: ignored from now on */
	usleep(5000);
	stop_writers();
	assert_false(tl_is_running());
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_snapshots_while_four_threads_write, teardown),
		cmocka_unit_test_teardown(test_startup_snapshots_while_four_threads_write, teardown),
		cmocka_unit_test_teardown(test_json_snapshots_while_threads_write, teardown),
		cmocka_unit_test_teardown(test_binary_snapshot_from_a_signal_handler, teardown),
		cmocka_unit_test_teardown(test_shutdown_while_threads_write, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
