/*
 * Instrumented calls (timeline::instrument): an empty function built with
 * -finstrument-functions, four calls (eight events: entry and exit each)
 * per iteration, as the pair kernel has four begin+end pairs. The
 * filtered kernel sets a minimum duration no call reaches, so that each
 * exit takes its entry back.
 */
#include "bench.h"

#include <timeline/instrument.h>

void bench_instrumented_leaf(void);

void bench_instrument_call(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		bench_instrumented_leaf();
		BENCH_BARRIER();
	}
}

void bench_instrument_filtered(uint64_t iters, bench_thread *thread)
{
	tl_instrument_set_min_duration_ns(1000u * 1000 * 1000);
	bench_instrument_call(iters, thread);
	tl_instrument_set_min_duration_ns(0);
}
