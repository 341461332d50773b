/*
 * Emitting from signal handlers: a timer storm on a thread that emits,
 * handlers nested in handlers (by timers, and three deep inside emits by
 * write-protected records), and handlers that emit while their thread
 * registers (its first event). Every event is recorded or dropped and
 * counted, exactly; with room in the buffer none is dropped; nothing
 * hangs; the snapshot holds every written event, with its thread's tid.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/categories.h"
#include "recorder/export/trace_model.h"
#include "recorder/slot.h"

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
/* The events emitted on the calling thread, its handlers' included. */
static __thread uint64_t emitted_here;

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
		emitted_here += HANDLER_EVENTS;
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

static void start_session_with(tl_recorder_kind kind, size_t bytes)
{
	tl_test_clear_environment();
	tl_options o = {.struct_size = sizeof o, .recorder = kind, .buffer_bytes = bytes};
	assert_int_equal(tl_init(&o), 0);
	sig_cat = tl_category_get("sig");
	atomic_store(&emitted, 0);
	atomic_store(&storm_until, now_ns() + 300 * 1000 * 1000);
}

/* An endless recorder with room for every event of a test. */
static void start_session(void)
{
	start_session_with(TL_RECORDER_ENDLESS, 128u * 1024 * 1024);
}

static uint64_t dropped(void)
{
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	return st.events_dropped;
}

static size_t events_of_thread(const tl_model *m, uint32_t tid)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nevents; i++)
		n += m->events[i].tid == tid;
	return n;
}

/* Every emitted event is written or dropped, and the snapshot holds every
 * written event that was not overwritten since (events_written counts
 * the overwritten ones too: docs/api.md). */
static void assert_every_event_accounted(void)
{
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	uint64_t total = atomic_load(&emitted);
	print_message("emitted %llu: written %llu, dropped %llu, overwritten %llu\n",
	              (unsigned long long)total, (unsigned long long)st.events_written,
	              (unsigned long long)st.events_dropped,
	              (unsigned long long)st.events_overwritten);
	assert_int_equal(st.events_written + st.events_dropped, total);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.nevents, st.events_written - st.events_overwritten);
	tl_model_free(&m);
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

/* Emits begin/end pairs flat out until the storm ends; counts them. */
static void emit_pairs_through_the_storm(void)
{
	uint64_t pairs = 0;
	while (now_ns() < atomic_load(&storm_until)) {
		for (int i = 0; i < 64; i++) {
			TL_TRACE_EVENT_BEGIN0("main", "work");
			TL_TRACE_EVENT_END0("main", "work");
		}
		pairs += 64;
	}
	atomic_fetch_add(&emitted, 2 * pairs);
}

/* A 20 µs SIGALRM timer whose handler emits, around the pairs above. */
static void alarm_storm(void)
{
	install(SIGALRM);
	struct itimerval every = {{0, 20}, {0, 20}};
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	emit_pairs_through_the_storm();
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	restore(SIGALRM);
}

/* A 20 µs timer whose handler emits 50 events, on the thread that emits
 * begin/end pairs flat out. */
static void test_timer_storm_on_an_emitting_thread_loses_nothing_uncounted(void **state)
{
	(void)state;
	start_session();
	alarm_storm();
	assert_every_event_accounted();
	assert_int_equal(dropped(), 0); /* the handlers' events are kept, not dropped */
	tl_model m;
	tl_test_snapshot_model(&m);
	/* the interrupted slices stay whole */
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "work"),
	                 tl_test_count_events(&m, TL_PHASE_END, NULL));
	/* every event is the thread's own: the handlers run on it */
	assert_int_equal(events_of_thread(&m, (uint32_t)syscall(SYS_gettid)), m.nevents);
	assert_true(tl_test_count_events(&m, TL_PHASE_INSTANT, "from handler") > 0);
	tl_model_free(&m);
}

/* The same storm on a small ring, which overwrites: exact counts still. */
static void test_timer_storm_on_a_ring_that_overwrites_counts_every_event(void **state)
{
	(void)state;
	start_session_with(TL_RECORDER_RING, 256 * 1024);
	/* Storms of 300 ms until the ring has wrapped: a slow build (under
	 * ThreadSanitizer, on a loaded machine) once emitted 7,778 events in
	 * one, too few to fill the ring. */
	tl_stats st = {.struct_size = sizeof st};
	for (int storm = 0; storm < 100; storm++) {
		atomic_store(&storm_until, now_ns() + 300 * 1000 * 1000);
		alarm_storm();
		assert_int_equal(tl_stats_get(&st), 0);
		if (st.events_overwritten > 0)
			break;
	}
	assert_every_event_accounted();
	assert_true(st.events_overwritten > 0);
}

/* ---- handlers nested in handlers --------------------------------------- */

/* Three timers, three signals: each handler blocks only its own signal, so
 * a handler is interrupted by the others, on top of the thread's own emit,
 * as deep as the timers happen to line up (the depth reached is printed;
 * test_handlers_inside_emits_three_levels_deep_keep_their_events drives
 * every level deterministically). */
static const int nest_signals[] = {SIGALRM, SIGVTALRM, SIGPROF};
static const int nest_timers[] = {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF};
static _Atomic int depth, deepest, deepest_level;

static void note_max(_Atomic int *max, int value)
{
	int seen = atomic_load(max);
	while (value > seen && !atomic_compare_exchange_weak(max, &seen, value))
		;
}

/* The nesting level an emit of this thread would take now: the number of
 * its levels in an emit. */
static int busy_levels(void)
{
	int n = 0;
	while (n < TL_NEST_LEVELS && tl_slot_busy(tl_slot_nested(tl_self, (unsigned)n)))
		n++;
	return n;
}

/* A slice through the macros' fast path (its call sites resolved by a run
 * outside a handler first) around instants through tl_emit. */
static void emit_nested(int signo)
{
	(void)signo;
	int saved_errno = errno;
	note_max(&deepest, atomic_fetch_add(&depth, 1) + 1);
	if (now_ns() < atomic_load_explicit(&storm_until, memory_order_relaxed)) {
		note_max(&deepest_level, busy_levels());
		TL_TRACE_EVENT_BEGIN0("sig", "handler");
		for (int i = 0; i < HANDLER_EVENTS; i++)
			tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "from handler", 0,
			        0, NULL, 0);
		TL_TRACE_EVENT_END0("sig", "handler");
		atomic_fetch_add_explicit(&emitted, HANDLER_EVENTS + 2, memory_order_relaxed);
	}
	atomic_fetch_sub(&depth, 1);
	errno = saved_errno;
}

static void test_handlers_nested_three_deep_keep_every_event(void **state)
{
	(void)state;
	start_session();
	atomic_store(&deepest, 0);
	atomic_store(&deepest_level, 0);
	emit_nested(0); /* the macros' call sites resolve outside a handler */
	atomic_store(&deepest, 0);
	for (size_t i = 0; i < 3; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = emit_nested;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		assert_int_equal(sigaction(nest_signals[i], &sa, NULL), 0);
	}
	/* periods a little apart, so the timers drift across each other */
	for (size_t i = 0; i < 3; i++) {
		struct itimerval every = {{0, 20 + 7 * (long)i}, {0, 20 + 7 * (long)i}};
		assert_int_equal(setitimer(nest_timers[i], &every, NULL), 0);
	}
	emit_pairs_through_the_storm();
	for (size_t i = 0; i < 3; i++) {
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(nest_timers[i], &off, NULL);
		restore(nest_signals[i]);
	}
	print_message("handlers nested %d deep at most; their emits reached nesting level %d\n",
	              atomic_load(&deepest), atomic_load(&deepest_level));
	assert_every_event_accounted();
	assert_int_equal(dropped(), 0);
	tl_model m;
	tl_test_snapshot_model(&m);
	/* each handler's slice, and each interrupted one, is whole */
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, NULL),
	                 tl_test_count_events(&m, TL_PHASE_END, NULL));
	tl_model_free(&m);
}

/* An emit that finds levels 0..k-1 busy (k handlers deep) is kept at level
 * k; with every level busy (a fourth handler) it is dropped and counted.
 * The kept ones are in the snapshot, on the thread. */
static void test_each_nesting_level_keeps_its_event_and_the_fifth_is_counted(void **state)
{
	(void)state;
	start_session();
	TL_TRACE_EVENT_INSTANT0("main", "registers the thread", TL_SCOPE_THREAD);
	struct tl_slot *self = tl_self;
	assert_ptr_not_equal(self, &tl_slot_none);
	static const char *const names[TL_NEST_LEVELS] = {"level 0", "level 1", "level 2",
	                                                  "level 3"};
	uint64_t before = dropped();
	for (unsigned k = 0; k <= TL_NEST_LEVELS; k++) {
		for (unsigned level = 0; level < k; level++)
			atomic_fetch_or(&tl_slot_nested(self, level)->pos, TL_SLOT_BUSY);
		tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD,
		        k < TL_NEST_LEVELS ? names[k] : "no level left", 0, 0, NULL, 0);
		for (unsigned level = 0; level < k; level++)
			atomic_fetch_and(&tl_slot_nested(self, level)->pos, ~TL_SLOT_BUSY);
	}
	assert_int_equal(dropped(), before + 1);
	tl_model m;
	tl_test_snapshot_model(&m);
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	for (unsigned k = 0; k < TL_NEST_LEVELS; k++)
		assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, names[k]), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "no level left"), 0);
	assert_int_equal(events_of_thread(&m, tid), m.nevents);
	/* in the order they were emitted: the nested ones merged by time */
	size_t at = 0;
	for (unsigned k = 0; k < TL_NEST_LEVELS; k++) {
		while (at < m.nevents && (!m.events[at].name || strcmp(m.events[at].name, names[k])))
			at++;
		assert_true(at < m.nevents);
	}
	tl_model_free(&m);
}

/* A call site whose category is new, run by a handler that interrupted its
 * thread holding the category lock: no hang, the event dropped and
 * counted, and the call site resolves on its next run. */
static void category_site(void)
{
	TL_TRACE_EVENT_INSTANT0("never seen before", "late", TL_SCOPE_THREAD);
}

static void test_a_new_category_met_inside_the_category_lock_is_dropped_not_awaited(void **state)
{
	(void)state;
	start_session();
	uint64_t before = dropped();
	tl_categories_lock(); /* as the interrupted thread holds it */
	category_site();      /* as its handler runs the call site */
	tl_categories_unlock();
	assert_int_equal(dropped(), before + 1);
	category_site();
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "late"), 1);
	tl_model_free(&m);
}

/* ---- a handler at an exact step of a thread's first event ---------------
 * Write-protected pages stop the thread at the instruction that writes
 * them, and the fault's handler runs there as a timer's would: first at
 * the placeholder slot's busy flag, set by the fast form that starts the
 * thread's first event (the handler registers the thread and emits), then
 * at the first word of that event's record (the handler emits again). */
#define STEP_EVENTS 50

static long page_size;
static void *placeholder_page, *record_page;
static _Atomic int steps_taken;

static void *page_of(const volatile void *p)
{
	return (void *)((uintptr_t)p & ~(uintptr_t)(page_size - 1));
}

static void emit_at_step(int signo, siginfo_t *info, void *context)
{
	(void)signo;
	(void)context;
	int saved_errno = errno;
	void *page = page_of(info->si_addr);
	if (page != placeholder_page && page != record_page)
		abort(); /* a fault the test did not set up */
	mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE);
	for (int i = 0; i < STEP_EVENTS; i++)
		tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "at a step", 0, 0, NULL, 0);
	atomic_fetch_add(&emitted, STEP_EVENTS);
	if (page == placeholder_page) {
		/* the thread is registered now: stop it again where the
		 * interrupted event writes its record */
		record_page = page_of(tl_slot_cur(tl_self));
		mprotect(record_page, (size_t)page_size, PROT_READ);
	}
	atomic_fetch_add(&steps_taken, 1);
	errno = saved_errno;
}

static void *first_event_stopped_at_each_step(void *arg)
{
	(void)arg;
	placeholder_page = page_of(&tl_slot_none.pos);
	if (mprotect(placeholder_page, (size_t)page_size, PROT_READ) != 0)
		return (void *)1;
	tl_emit_begin(sig_cat, "interrupted"); /* the thread's first event: a fast form */
	atomic_fetch_add(&emitted, 1);
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

static void test_a_handler_that_registers_the_thread_inside_its_first_event_loses_nothing(
    void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer runs the atomic operations in its runtime, where it
	 * does not reliably hand a fault to the program's handler */
	print_message("skipped: a fault inside ThreadSanitizer's atomics is not handed to the test\n");
	skip();
#endif
	start_session();
	page_size = sysconf(_SC_PAGESIZE);
	atomic_store(&steps_taken, 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = emit_at_step;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	pthread_t t;
	void *rc = NULL;
	/* A thread started and joined once first: the placeholder's page may
	 * hold the table of lazily bound calls, which a first call writes, and
	 * the joins below must not write it while the page is protected. */
	assert_int_equal(pthread_create(&t, NULL, nothing, NULL), 0);
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal(pthread_create(&t, NULL, first_event_stopped_at_each_step, NULL), 0);
	assert_int_equal(pthread_join(t, &rc), 0);
	sigaction(SIGSEGV, &old, NULL);
	assert_null(rc);
	assert_int_equal(atomic_load(&steps_taken), 2); /* stopped at both steps */
	assert_every_event_accounted();
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "at a step"), 2 * STEP_EVENTS);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "interrupted"), 1);
	tl_model_free(&m);
}

/* ---- handlers three deep inside emits, step by step -----------------------
 * Each nesting level's next record is write-protected: the thread's own
 * emit stops at its record, and the fault's handler (SA_NODEFER, so that
 * faults nest) emits on level 1, which stops at its record, whose handler
 * emits on level 2, and so on: handlers four deep, each inside the emit
 * of the one below, deterministically. The fourth finds every level busy:
 * its events are dropped and counted. */
#define DEEP_EVENTS 20

static void *level_lo[TL_NEST_LEVELS], *level_hi[TL_NEST_LEVELS];
static _Atomic int deep_depth, deep_deepest, deep_unknown;

/* The pages where `level`'s next record starts (two when it may cross). */
static void protect_next_record(struct tl_slot *self, unsigned level)
{
	const _Atomic uint64_t *cur = tl_slot_cur(tl_slot_nested(self, level));
	level_lo[level] = page_of(cur);
	level_hi[level] = page_of(cur + 8);
	size_t len =
	    (size_t)((char *)level_hi[level] - (char *)level_lo[level]) + (size_t)page_size;
	assert_int_equal(mprotect(level_lo[level], len, PROT_READ), 0);
}

static void emit_one_level_deeper(int signo, siginfo_t *info, void *context)
{
	(void)signo;
	(void)context;
	int saved_errno = errno;
	void *page = page_of(info->si_addr);
	int level = -1;
	for (int k = 0; k < TL_NEST_LEVELS && level < 0; k++)
		if (page == level_lo[k] || page == level_hi[k])
			level = k;
	if (level < 0) {
		atomic_store(&deep_unknown, 1);
		abort(); /* a fault the test did not set up */
	}
	size_t len =
	    (size_t)((char *)level_hi[level] - (char *)level_lo[level]) + (size_t)page_size;
	mprotect(level_lo[level], len, PROT_READ | PROT_WRITE);
	note_max(&deep_deepest, atomic_fetch_add(&deep_depth, 1) + 1);
	for (int i = 0; i < DEEP_EVENTS; i++)
		tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "deeper", 0, 0, NULL, 0);
	atomic_fetch_add(&emitted, DEEP_EVENTS);
	atomic_fetch_sub(&deep_depth, 1);
	errno = saved_errno;
}

static void test_handlers_inside_emits_three_levels_deep_keep_their_events(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	print_message(
	    "skipped: a fault inside ThreadSanitizer's atomics is not handed to the test\n");
	skip();
#endif
	start_session();
	page_size = sysconf(_SC_PAGESIZE);
	atomic_store(&deep_depth, 0);
	atomic_store(&deep_deepest, 0);
	/* every level gets a block: an emit with the levels below it busy */
	TL_TRACE_EVENT_INSTANT0("main", "registers the thread", TL_SCOPE_THREAD);
	struct tl_slot *self = tl_self;
	assert_ptr_not_equal(self, &tl_slot_none);
	for (unsigned k = 1; k < TL_NEST_LEVELS; k++) {
		for (unsigned level = 0; level < k; level++)
			atomic_fetch_or(&tl_slot_nested(self, level)->pos, TL_SLOT_BUSY);
		tl_emit(sig_cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "gives a level a block",
		        0, 0, NULL, 0);
		for (unsigned level = 0; level < k; level++)
			atomic_fetch_and(&tl_slot_nested(self, level)->pos, ~TL_SLOT_BUSY);
	}
	atomic_store(&emitted, TL_NEST_LEVELS);
	uint64_t before = dropped();
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = emit_one_level_deeper;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	for (unsigned k = 0; k < TL_NEST_LEVELS; k++)
		protect_next_record(self, k);
	TL_TRACE_EVENT_BEGIN0("main", "interrupted"); /* the fast form, stopped at its record */
	TL_TRACE_EVENT_END0("main", "interrupted");
	atomic_fetch_add(&emitted, 2);
	sigaction(SIGSEGV, &old, NULL);
	assert_int_equal(atomic_load(&deep_unknown), 0);
	/* a handler per level, the fourth with every level busy */
	assert_int_equal(atomic_load(&deep_deepest), TL_NEST_LEVELS);
	assert_int_equal(dropped(), before + DEEP_EVENTS);
	assert_every_event_accounted();
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "deeper"),
	                 (TL_NEST_LEVELS - 1) * DEEP_EVENTS);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "interrupted"), 1);
	assert_int_equal(events_of_thread(&m, (uint32_t)syscall(SYS_gettid)), m.nevents);
	tl_model_free(&m);
}

/* ---- handlers during a thread's first event ---------------------------- */

#define FIRST_THREADS 16

/* A thread's tid and the events emitted on it, its handlers' included. */
struct first_thread {
	uint32_t tid;
	uint64_t emitted;
};

static void *first_events(void *arg)
{
	struct first_thread *ft = arg;
	ft->tid = (uint32_t)syscall(SYS_gettid);
	emitted_here = 0;
	/* armed before the thread's first event: it fires during it */
	tl_test_thread_timer timer;
	if (tl_test_thread_timer_try_start(&timer, SIGRTMIN, 50000, 20000) != 0)
		return (void *)1;
	for (int i = 0; i < 2000; i++)
		TL_TRACE_EVENT_INSTANT0("first", "event", TL_SCOPE_THREAD);
	tl_test_thread_timer_stop(&timer);
	atomic_fetch_add(&emitted, 2000);
	ft->emitted = emitted_here + 2000;
	return NULL;
}

static void test_handlers_during_a_threads_first_event_neither_hang_nor_lose_counts(void **state)
{
	(void)state;
	start_session();
	install(SIGRTMIN);
	pthread_t t[FIRST_THREADS];
	static struct first_thread ft[FIRST_THREADS];
	memset(ft, 0, sizeof ft);
	for (int i = 0; i < FIRST_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, first_events, &ft[i]), 0);
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
	assert_int_equal(dropped(), 0); /* none lost to registration */
	/* each thread's events, its handlers' included, carry its own tid */
	tl_model m;
	tl_test_snapshot_model(&m);
	size_t of_threads = 0;
	for (int i = 0; i < FIRST_THREADS; i++) {
		assert_int_equal(events_of_thread(&m, ft[i].tid), ft[i].emitted);
		of_threads += ft[i].emitted;
	}
	assert_int_equal(of_threads, m.nevents);
	tl_model_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(
	        test_timer_storm_on_an_emitting_thread_loses_nothing_uncounted, teardown),
	    cmocka_unit_test_teardown(
	        test_timer_storm_on_a_ring_that_overwrites_counts_every_event, teardown),
	    cmocka_unit_test_teardown(test_handlers_nested_three_deep_keep_every_event, teardown),
	    cmocka_unit_test_teardown(
	        test_each_nesting_level_keeps_its_event_and_the_fifth_is_counted, teardown),
	    cmocka_unit_test_teardown(
	        test_a_new_category_met_inside_the_category_lock_is_dropped_not_awaited, teardown),
	    cmocka_unit_test_teardown(
	        test_handlers_during_a_threads_first_event_neither_hang_nor_lose_counts, teardown),
	    cmocka_unit_test_teardown(
	        test_a_handler_that_registers_the_thread_inside_its_first_event_loses_nothing,
	        teardown),
	    cmocka_unit_test_teardown(
	        test_handlers_inside_emits_three_levels_deep_keep_their_events, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
