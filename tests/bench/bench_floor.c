/*
 * The floors: what any recorder has to pay per event at least. A clock read,
 * and a clock read plus a 32-byte record stored into a per-thread buffer that
 * advances and wraps, like a recorder's block. Same loop shape as the
 * library kernels: BENCH_EVENTS_PER_ITER operations, then a compiler barrier.
 */
#include "bench.h"

#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define BENCH_HAVE_RDTSC 1
#else
#define BENCH_HAVE_RDTSC 0
#endif

#define BENCH_FLOOR_MASK (BENCH_FLOOR_BUFFER_BYTES - 1u)

/* A header word shaped like a recorder's (record.h): category 1, phase 'B',
 * 4 words. */
#define BENCH_FLOOR_HEADER (1ull | ((uint64_t)'B' << 16) | (4ull << 24))

static const char floor_name[] = "floor";

static inline uint64_t boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One 32-byte record at buffer + pos, then pos advances (wrapping). */
#define FLOOR_STORE(buffer, pos, ts, value)                                                        \
	do {                                                                                       \
		uint64_t *rec_ = (uint64_t *)(void *)((buffer) + (pos));                           \
		rec_[0] = (ts);                                                                    \
		rec_[1] = BENCH_FLOOR_HEADER;                                                      \
		rec_[2] = (uint64_t)(uintptr_t)floor_name;                                         \
		rec_[3] = (value);                                                                 \
		(pos) = ((pos) + BENCH_FLOOR_RECORD_BYTES) & BENCH_FLOOR_MASK;                     \
		BENCH_BARRIER();                                                                   \
	} while (0)

_Static_assert((BENCH_FLOOR_BUFFER_BYTES & BENCH_FLOOR_MASK) == 0, "buffer size: a power of 2");

void bench_floor_empty(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++)
		BENCH_BARRIER();
}

void bench_floor_clock(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(BENCH_USE(boottime_ns()));
		BENCH_BARRIER();
	}
}

void bench_floor_clock_store(uint64_t iters, bench_thread *thread)
{
	unsigned char *buffer = thread->buffer;
	size_t pos = thread->pos;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(FLOOR_STORE(buffer, pos, boottime_ns(), i));
		BENCH_BARRIER();
	}
	thread->pos = pos;
}

#if BENCH_HAVE_RDTSC
static void floor_rdtsc(uint64_t iters, bench_thread *thread)
{
	(void)thread;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(BENCH_USE(__rdtsc()));
		BENCH_BARRIER();
	}
}

static void floor_rdtsc_store(uint64_t iters, bench_thread *thread)
{
	unsigned char *buffer = thread->buffer;
	size_t pos = thread->pos;
	for (uint64_t i = 0; i < iters; i++) {
		BENCH_REPEAT8(FLOOR_STORE(buffer, pos, __rdtsc(), i));
		BENCH_BARRIER();
	}
	thread->pos = pos;
}

const bench_kernel_fn bench_floor_rdtsc = floor_rdtsc;
const bench_kernel_fn bench_floor_rdtsc_store = floor_rdtsc_store;
#else
const bench_kernel_fn bench_floor_rdtsc = NULL;
const bench_kernel_fn bench_floor_rdtsc_store = NULL;
#endif
