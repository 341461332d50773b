/*
 * The library's events through the public macros, in the same loop shape as
 * the floors: BENCH_EVENTS_PER_ITER events, then a compiler barrier. Every
 * macro expansion is its own call site with its own cached category handle,
 * as in instrumented code.
 */
#include "bench.h"

#include <timeline/trace_event.h>

#include "recorder/clock.h"

void bench_events_disabled(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(TL_TRACE_EVENT_BEGIN0(BENCH_CATEGORY_OFF, "disabled"));
		BENCH_BARRIER();
	}
}

void bench_events_begin(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(TL_TRACE_EVENT_BEGIN0(BENCH_CATEGORY, "slice"));
		BENCH_BARRIER();
	}
}

void bench_events_end(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(TL_TRACE_EVENT_END0(BENCH_CATEGORY, "slice"));
		BENCH_BARRIER();
	}
}

#define BEGIN_END()                                                                                \
	do {                                                                                       \
		TL_TRACE_EVENT_BEGIN0(BENCH_CATEGORY, "slice");                                    \
		TL_TRACE_EVENT_END0(BENCH_CATEGORY, "slice");                                      \
	} while (0)

void bench_events_begin_end(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BEGIN_END();
		BEGIN_END();
		BEGIN_END();
		BEGIN_END();
		BENCH_BARRIER();
	}
}

/* A begin with a copied name and two arguments (an int, a copied string). */
#define COPY_BEGIN_END(thread, i)                                                                  \
	do {                                                                                       \
		TL_TRACE_EVENT_COPY_BEGIN2(BENCH_CATEGORY, (thread)->name, "index", (int)(i),      \
		                           "label", TL_STR_COPY((thread)->label));                 \
		TL_TRACE_EVENT_END0(BENCH_CATEGORY, "copied");                                     \
	} while (0)

void bench_events_copy_begin_end(uint64_t iters, bench_thread *thread)
{
	for (uint64_t i = 0; i < iters; i++) {
		COPY_BEGIN_END(thread, i);
		COPY_BEGIN_END(thread, i);
		COPY_BEGIN_END(thread, i);
		COPY_BEGIN_END(thread, i);
		BENCH_BARRIER();
	}
}

void bench_events_counter(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(TL_TRACE_EVENT_COUNTER(BENCH_CATEGORY, "counter", (int64_t)i));
		BENCH_BARRIER();
	}
}

void bench_events_clock_read(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(BENCH_USE(tl_clock_read()));
		BENCH_BARRIER();
	}
}
