/*
 * The loop timeline-bench times under `uftrace record` and with the
 * library's hooks (bench_uftrace.c): N calls of an empty function, the
 * whole file built with -finstrument-functions. Built twice
 * (tests/bench/CMakeLists.txt): timeline-bench-loop with nothing else, for
 * uftrace to run (glibc's empty hooks when run alone), and
 * timeline-bench-loop-timeline linked with timeline::instrument, which
 * records the calls into a ring (BENCH_LOOP_TIMELINE).
 *
 * usage: LOOP N; prints the ns per call of the timed loop (the best of
 * BENCH_LOOP_SLICES slices, after a warm-up of N / 8 calls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef BENCH_LOOP_TIMELINE
#include <timeline/timeline.h>
#endif

#define BENCH_LOOP_SLICES 8

__attribute__((noinline)) void bench_loop_leaf(void);
__attribute__((noinline)) void bench_loop_leaf(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((no_instrument_function)) double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		bench_loop_leaf();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	if (n < BENCH_LOOP_SLICES) {
		fprintf(stderr, "usage: %s CALLS (at least %d)\n", argv[0], BENCH_LOOP_SLICES);
		return 2;
	}
#ifdef BENCH_LOOP_TIMELINE
	tl_options opts = {
	    .struct_size = sizeof opts, .recorder = TL_RECORDER_RING, .buffer_bytes = 1u << 20};
	if (tl_init(&opts) < 0) {
		fprintf(stderr, "%s: tl_init failed\n", argv[0]);
		return 1;
	}
#endif
	calls(n / 8);
	long slice = n / BENCH_LOOP_SLICES;
	double best = 1e300;
	for (int s = 0; s < BENCH_LOOP_SLICES; s++) {
		double start = now_ns();
		calls(slice);
		double ns = (now_ns() - start) / (double)slice;
		if (ns < best)
			best = ns;
	}
#ifdef BENCH_LOOP_TIMELINE
	tl_shutdown();
#endif
	printf("%.3f\n", best);
	return 0;
}
