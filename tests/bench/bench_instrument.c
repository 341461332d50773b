/*
 * Instrumented calls (timeline::instrument): an empty function built with
 * -finstrument-functions, four calls (eight events: entry and exit each)
 * per iteration, as the pair kernel has four begin+end pairs. The
 * filtered kernel sets a minimum duration no call reaches, so that each
 * exit takes its entry back; the call kernel sets none. Each sets its own
 * at every start (two threads of one row set the same).
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

#include <timeline/instrument.h>

#include "recorder/tracer.h"

void bench_instrumented_leaf(void);

static void calls(uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++) {
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		BENCH_BARRIER();
	}
}

void bench_instrument_call(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	tl_instrument_set_min_duration_ns(0);
	calls(iters);
}

void bench_instrument_filtered(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	tl_instrument_set_min_duration_ns(1000u * 1000 * 1000);
	calls(iters);
}

double bench_instrument_bytes_per_event(void)
{
	tl_options opts = {
	    .struct_size = sizeof opts, .recorder = TL_RECORDER_ENDLESS, .buffer_bytes = 16u << 20};
	if (tl_init(&opts) < 0)
		return NAN;
	const uint64_t iters = 10000; /* 40000 calls: 80000 events */
	tl_instrument_set_min_duration_ns(0);
	calls(1); /* the thread's first block, the function's id */
	struct tl_thread_mark mark;
	tl_thread_mark(&mark);
	calls(iters);
	struct tl_thread_copy copy;
	double bytes = NAN;
	if (tl_thread_copy_since(&mark, &copy) == 0 && copy.intact)
		bytes = (double)(copy.nwords * sizeof(uint64_t)) /
		        (double)(iters * BENCH_EVENTS_PER_ITER);
	free(copy.words);
	tl_shutdown();
	return bytes;
}
