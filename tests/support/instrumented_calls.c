/*
 * Code built with -finstrument-functions for tests/test_instrument.c: each
 * function's entry and exit call the hooks of timeline::instrument.
 */
#include "support/instrumented_calls.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

_Atomic int instrumented_sink; /* threads call the same functions */

void instrumented_leaf(void)
{
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

void instrumented_caller(void)
{
	instrumented_leaf();
	instrumented_leaf();
}

void instrumented_recurse(int n)
{
	if (n > 0)
		instrumented_recurse(n - 1);
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

void instrumented_spin_ns(long ns)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < ns);
}

static jmp_buf jump;

/* gcc sees no return here but longjmp, which it counts as no way out */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void jump_deep(int n)
{
	if (n > 0)
		jump_deep(n - 1);
	longjmp(jump, 1);
}
#pragma GCC diagnostic pop

void instrumented_longjmp(int depth)
{
	if (setjmp(jump) == 0)
		jump_deep(depth);
	instrumented_leaf();
}

static void *exit_inside(void *arg)
{
	(void)arg;
	instrumented_leaf();
	pthread_exit(NULL);
}

static void *thread_exits_mid_call(void *arg)
{
	return exit_inside(arg);
}

void instrumented_thread_exit(void)
{
	pthread_t t;
	pthread_create(&t, NULL, thread_exits_mid_call, NULL);
	pthread_join(t, NULL);
}

void instrumented_callback(void)
{
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

static void on_signal(int sig)
{
	(void)sig;
	instrumented_leaf();
}

void instrumented_raise(void)
{
	struct sigaction sa = {.sa_handler = on_signal}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
}

int instrumented_fork(void)
{
	return fork();
}

static void *call_times(void *arg)
{
	for (int i = 0; i < *(const int *)arg; i++)
		instrumented_caller();
	return NULL;
}

void instrumented_threads(int threads, int calls)
{
	pthread_t t[16];
	int n = threads < 16 ? threads : 16;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, call_times, &calls);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static atomic_bool busy_stop;
static atomic_ulong busy_calls;
static pthread_t busy[8];
static int busy_count;

static void *call_until_stopped(void *arg)
{
	(void)arg;
	while (!atomic_load(&busy_stop)) {
		instrumented_caller();
		atomic_fetch_add(&busy_calls, 3);
	}
	return NULL;
}

void instrumented_busy_start(int threads)
{
	atomic_store(&busy_stop, false);
	atomic_store(&busy_calls, 0);
	busy_count = threads < 8 ? threads : 8;
	for (int i = 0; i < busy_count; i++)
		pthread_create(&busy[i], NULL, call_until_stopped, NULL);
}

unsigned long instrumented_busy_stop(void)
{
	atomic_store(&busy_stop, true);
	for (int i = 0; i < busy_count; i++)
		pthread_join(busy[i], NULL);
	return atomic_load(&busy_calls);
}

static atomic_ulong storm_taken;
static atomic_bool storm_done;

static void on_storm(int sig)
{
	(void)sig;
	atomic_fetch_add(&storm_taken, 1);
	instrumented_leaf();
}

void instrumented_storm_target(int calls);
void instrumented_storm_target(int calls)
{
	for (int i = 0; i < calls; i++)
		instrumented_caller();
}

static void *storm_body(void *arg)
{
	instrumented_storm_target(*(const int *)arg);
	atomic_store(&storm_done, true);
	return NULL;
}

unsigned long instrumented_signal_storm(int calls, int signals)
{
	struct sigaction sa = {.sa_handler = on_storm}, old;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, &old);
	atomic_store(&storm_taken, 0);
	atomic_store(&storm_done, false);
	pthread_t t;
	pthread_create(&t, NULL, storm_body, &calls);
	for (int i = 0; i < signals && !atomic_load(&storm_done); i++) {
		pthread_kill(t, SIGUSR1);
		for (int spin = 0; spin < 1000; spin++)
			__asm__ __volatile__("" ::: "memory");
	}
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	return atomic_load(&storm_taken);
}

void instrumented_first_under_systrace(void)
{
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

void instrumented_pattern_included(void)
{
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

void instrumented_pattern_excluded(void)
{
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

/* Built without -fexceptions: an exception thrown below unwinds through
 * these frames with no cleanup, so their exit hooks do not run. */
static void c_inner(void (*fn)(void))
{
	fn();
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}

void instrumented_c_through(void (*fn)(void))
{
	c_inner(fn);
	atomic_fetch_add_explicit(&instrumented_sink, 1, memory_order_relaxed);
}
