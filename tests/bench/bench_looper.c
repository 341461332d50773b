/*
 * The looper tracer's dispatch: tl_looper_dispatch_begin + _end with the
 * watchdog armed (default lag and ANR thresholds), in the same loop shape
 * as the begin+end row, so the two rows compare a dispatch with two plain
 * events.
 */
#include "bench.h"

#include <stdlib.h>

#include <timeline/looper.h>

#define DISPATCH()                                                                                 \
	do {                                                                                       \
		tl_looper_dispatch_begin(loop, "dispatch");                                        \
		tl_looper_dispatch_end(loop);                                                      \
	} while (0)

void bench_looper_dispatch(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	/* one loop kept for the whole program keeps the watchdog thread up;
	 * each kernel call gets a loop of its own, as each thread would */
	static tl_looper *anchor;
	if (!__atomic_load_n(&anchor, __ATOMIC_ACQUIRE)) {
		tl_looper *a = tl_looper_create(NULL);
		tl_looper *expected = NULL;
		if (!a || !__atomic_compare_exchange_n(&anchor, &expected, a, false,
		                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			tl_looper_destroy(a);
	}
	tl_looper_options opts;
	tl_looper_options_init(&opts);
	opts.category = BENCH_CATEGORY;
	tl_looper *loop = tl_looper_create(&opts);
	if (!loop)
		abort();
	for (uint64_t i = 0; i < iters; i++) {
		DISPATCH();
		DISPATCH();
		DISPATCH();
		DISPATCH();
		BENCH_BARRIER();
	}
	tl_looper_destroy(loop);
}
