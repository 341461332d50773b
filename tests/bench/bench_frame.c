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

#include <pthread.h>
#include <stdlib.h>

#include <timeline/frame.h>

static pthread_key_t tracer_key;
static pthread_once_t tracer_key_once = PTHREAD_ONCE_INIT;

static void tracer_release(void *ft)
{
	tl_frame_tracer_destroy(ft);
}

static void tracer_key_create(void)
{
	pthread_key_create(&tracer_key, tracer_release);
}

/* The calling thread's tracer, created on first use, freed at thread exit. */
static tl_frame_tracer *thread_tracer(void)
{
	pthread_once(&tracer_key_once, tracer_key_create);
	tl_frame_tracer *ft = pthread_getspecific(tracer_key);
	if (!ft) {
		tl_frame_options o = {.struct_size = sizeof o, .category = BENCH_CATEGORY};
		ft = tl_frame_tracer_create(&o);
		if (!ft)
			abort();
		pthread_setspecific(tracer_key, ft);
	}
	return ft;
}

#define FRAME(ft)                                                                                  \
	do {                                                                                       \
		tl_frame_begin((ft), 0);                                                           \
		tl_frame_end(ft);                                                                  \
	} while (0)

void bench_frame_begin_end(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	tl_frame_tracer *ft = thread_tracer();
	for (uint64_t i = 0; i < iters; i++) {
		FRAME(ft);
		FRAME(ft);
		FRAME(ft);
		FRAME(ft);
		BENCH_BARRIER();
	}
}
