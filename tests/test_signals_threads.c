/*
 * Emitting from signal handlers: a timer storm on a thread that emits, and
 * handlers that emit while their thread registers (its first event). Every
 * event is recorded or dropped and counted, exactly; nothing hangs; the
 * snapshot holds every written event.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

#define HANDLER_EVENTS 50

/* Events emitted, by the interrupted code and by the handlers. A handler
 * runs on the thread it interrupts; the counts of different threads are
 * added atomically. */
static _Atomic uint64_t emitted;
/* After this (CLOCK_MONOTONIC ns) handlers return at once: where a handler
 * takes longer than the timer's period (a sanitizer build, a slow
 * machine), the interrupted code still gets to run and the test ends. */
static _Atomic int64_t storm_until;
/* Resolved before any handler runs: a call site's first execution
 * registers its category (a lock and an allocation), which a handler may
 * not do (docs/architecture.md, Signals). */
static tl_category *sig_cat;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void emit_from_handler(int signo)
{
	(void)signo;
	int saved_errno = errno;
	if (now_ns() < atomic_load_explicit(&storm_until, memory_order_relaxed)) {
		for (int i = 0; i < HANDLER_EVENTS; i++)
			tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "from handler", 0, 0,
			        NULL, 0);
		atomic_fetch_add_explicit(&emitted, HANDLER_EVENTS, memory_order_relaxed);
	}
	errno = saved_errno;
}

static void install(int signo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = emit_from_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(signo, &sa, NULL), 0);
}

static void restore(int signo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(signo, &sa, NULL);
}

static void start_session(void)
{
	tl_test_clear_environment();
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_ENDLESS,
	                .buffer_bytes = 128u * 1024 * 1024};
	assert_int_equal(tl_init(&o), 0);
	sig_cat = tl_category_get("sig");
	atomic_store(&emitted, 0);
	atomic_store(&storm_until, now_ns() + 300 * 1000 * 1000);
}

/* written + dropped + overwritten equals emitted, and the snapshot holds
 * every written event. */
static void assert_every_event_accounted(void)
{
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	uint64_t total = atomic_load(&emitted);
	print_message("emitted %llu: written %llu, dropped %llu, overwritten %llu\n",
	              (unsigned long long)total, (unsigned long long)st.events_written,
	              (unsigned long long)st.events_dropped,
	              (unsigned long long)st.events_overwritten);
	assert_int_equal(st.events_written + st.events_dropped + st.events_overwritten, total);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.nevents, st.events_written);
	tl_model_free(&m);
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

/* A 20 µs timer whose handler emits 50 events, on the thread that emits
 * begin/end pairs flat out. */
static void test_timer_storm_on_an_emitting_thread_loses_nothing_uncounted(void **state)
{
	(void)state;
	start_session();
	install(SIGALRM);
	struct itimerval every = {{0, 20}, {0, 20}};
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	uint64_t pairs = 0;
	while (now_ns() < atomic_load(&storm_until)) {
		for (int i = 0; i < 64; i++) {
			TL_TRACE_EVENT_BEGIN0("main", "work");
			TL_TRACE_EVENT_END0("main", "work");
		}
		pairs += 64;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	restore(SIGALRM);
	atomic_fetch_add(&emitted, 2 * pairs);
	assert_every_event_accounted();
	tl_model m;
	tl_test_snapshot_model(&m);
	/* the interrupted slices stay whole */
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "work"),
	                 tl_test_count_events(&m, TL_PHASE_END, NULL));
	tl_model_free(&m);
}

/* ---- handlers during a thread's first event ---------------------------- */

#define FIRST_THREADS 16

static void *first_events(void *arg)
{
	(void)arg;
	timer_t timer;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN;
#ifdef sigev_notify_thread_id
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		return (void *)1;
	/* armed before the thread's first event: it fires during it */
	struct itimerspec soon = {{0, 20000}, {0, 50000}};
	timer_settime(timer, 0, &soon, NULL);
	for (int i = 0; i < 2000; i++)
		TL_TRACE_EVENT_INSTANT0("first", "event", TL_SCOPE_THREAD);
	struct itimerspec off = {{0, 0}, {0, 0}};
	timer_settime(timer, 0, &off, NULL);
	timer_delete(timer);
	atomic_fetch_add(&emitted, 2000);
	return NULL;
}

static void test_handlers_during_a_threads_first_event_neither_hang_nor_lose_counts(void **state)
{
	(void)state;
	start_session();
	install(SIGRTMIN);
	pthread_t t[FIRST_THREADS];
	for (int i = 0; i < FIRST_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, first_events, NULL), 0);
	for (int i = 0; i < FIRST_THREADS; i++) {
		struct timespec deadline;
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += 60;
		void *rc = NULL;
		/* a thread that hung in its first event fails the test here */
		assert_int_equal(pthread_timedjoin_np(t[i], &rc, &deadline), 0);
		assert_null(rc);
	}
	restore(SIGRTMIN);
	assert_every_event_accounted();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(
	        test_timer_storm_on_an_emitting_thread_loses_nothing_uncounted, teardown),
	    cmocka_unit_test_teardown(
	        test_handlers_during_a_threads_first_event_neither_hang_nor_lose_counts, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
