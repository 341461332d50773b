/*
 * timeline-bench: the frame tracer's cost per frame, in the loop shape of
 * the other kernels: four tl_frame_begin + tl_frame_end pairs per iteration
 * (BENCH_EVENTS_PER_ITER "events", so ns/pair is the cost of one frame),
 * compared with a plain begin+end. Each thread has its own tracer with the
 * default options, so the per-window counters (every 200 ms of frames) and
 * the per-slice reports (every 10 s of frames) are included at the rate a
 * 60 Hz display gives them: once per 12 and once per 600 frames.
 */
#include "bench.h"

#include <stdlib.h>

#include <timeline/frame.h>

/* The thread's tracer, created on first use. It is destroyed by the main
 * thread once the worker is joined (bench_frame_release), so the report and
 * slice it emits then are recorded, not refused as a late event of an
 * exiting thread. */
static tl_frame_tracer *thread_tracer(bench_thread *thread)
{
	if (!thread->frame_tracer) {
		tl_frame_options o = {.struct_size = sizeof o, .category = BENCH_CATEGORY};
		thread->frame_tracer = tl_frame_tracer_create(&o);
		if (!thread->frame_tracer)
			abort();
	}
	return thread->frame_tracer;
}

void bench_frame_release(bench_thread *thread)
{
	tl_frame_tracer_destroy(thread->frame_tracer);
	thread->frame_tracer = NULL;
}

#define FRAME(ft)                                                                                  \
	do {                                                                                       \
		tl_frame_begin((ft), 0);                                                           \
		tl_frame_end(ft);                                                                  \
	} while (0)

void bench_frame_begin_end(uint64_t iters, bench_thread *thread)
{
	tl_frame_tracer *ft = thread_tracer(thread);
	for (uint64_t i = 0; i < iters; i++) {
		FRAME(ft);
		FRAME(ft);
		FRAME(ft);
		FRAME(ft);
		BENCH_BARRIER();
	}
}
