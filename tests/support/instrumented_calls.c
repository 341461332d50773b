/*
 * Code built with -finstrument-functions for tests/test_instrument.c: each
 * function's entry and exit call the hooks of timeline::instrument.
 */
#include "support/instrumented_calls.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>

volatile int instrumented_sink;

void instrumented_leaf(void)
{
	instrumented_sink++;
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
	instrumented_sink++;
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
	instrumented_sink++;
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
