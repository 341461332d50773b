/*
 * The trace clock. Records store a raw tl_timestamp: TSC ticks when the TSC
 * is invariant and the kernel itself uses it as its clocksource, otherwise
 * nanoseconds of the trace clock read through the vDSO. Ticks are turned
 * into nanoseconds at snapshot time from calibration pairs (ticks, ns) taken
 * at init, at every snapshot and, at most once a second, when a thread
 * takes a new block. Internal.
 */
#ifndef TIMELINE_CLOCK_H
#define TIMELINE_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <timeline/timeline_export.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

#define TL_HAVE_TSC 1
#else
#define TL_HAVE_TSC 0
#endif

#pragma GCC visibility push(hidden)

#define TL_CLOCK_PAIRS 64

typedef struct tl_clock_pair {
	uint64_t ticks;
	int64_t ns;
} tl_clock_pair;

/* Read-mostly state, set by tl_clock_init. */
extern _Atomic int tl_clock_use_tsc;

/* The clock choice, read by the emitters (any thread, while tl_init may
 * write it: relaxed; a stale choice fails the form's session check). */
static inline TL_NO_INSTRUMENT int tl_clock_tsc_chosen(void)
{
	return atomic_load_explicit(&tl_clock_use_tsc, memory_order_relaxed);
}
/* The session's clock (CLOCK_BOOTTIME or CLOCK_MONOTONIC): written by
 * tl_init, read by any thread (a watchdog may read it while a new session
 * starts), so atomic; read with tl_clock_id_get. */
extern _Atomic clockid_t tl_clock_id;

static inline TL_NO_INSTRUMENT clockid_t tl_clock_id_get(void)
{
	return atomic_load_explicit(&tl_clock_id, memory_order_relaxed);
}

/* The hot-path read. Async-signal-safe. */
static inline TL_NO_INSTRUMENT uint64_t tl_clock_read(void)
{
#if TL_HAVE_TSC
	if (__builtin_expect(tl_clock_tsc_chosen(), 1))
		return __rdtsc();
#endif
	struct timespec ts;
	clock_gettime(tl_clock_id_get(), &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How the TSC path is chosen: never (the vDSO path), where the kernel
 * trusts an invariant TSC (the default), or wherever the TSC is invariant
 * (TIMELINE_FORCE_TSC=1, to test the path on a machine that does not take
 * it by itself). */
typedef enum tl_clock_tsc_mode {
	TL_CLOCK_TSC_NEVER,
	TL_CLOCK_TSC_AUTO,
	TL_CLOCK_TSC_FORCED,
} tl_clock_tsc_mode;

/* Chooses the clock (id: CLOCK_BOOTTIME or CLOCK_MONOTONIC) and the path,
 * and takes the first calibration pair. */
void tl_clock_init(clockid_t id, tl_clock_tsc_mode tsc);

/* 1 when timestamps are TSC ticks (for timeline-bench and the tests). */
int tl_clock_is_tsc(void);

/* True when this machine's TSC is usable: invariant and the kernel's own
 * clocksource. */
int tl_clock_tsc_usable(void);

/* True when the CPU says its TSC is invariant (constant_tsc and
 * nonstop_tsc), whatever the kernel's clocksource. */
int tl_clock_tsc_invariant(void);

/* Nanoseconds of the trace clock now. Async-signal-safe. */
int64_t tl_clock_now_ns(void);

/* Takes a calibration pair now (ticks read on both sides of the clock read)
 * and stores it when `store` is set and the last one is older than
 * min_interval_ns; when it is not, returns at once with a rough pair. Returns the pair. Async-signal-safe; concurrent callers
 * must hold no lock in common with a signal snapshot (none needed). */
tl_clock_pair tl_clock_calibrate(int store, int64_t min_interval_ns);

/* The child of a fork: forget a store that another thread had in progress. */
void tl_clock_after_fork_child(void);

/* Copies the stored pairs, oldest first, into out[max]; returns the count.
 * Async-signal-safe (a pair being rewritten is skipped). */
size_t tl_clock_pairs(tl_clock_pair *out, size_t max);

/*
 * Converts raw ticks to ns using sorted pairs: linear interpolation between
 * the two nearest pairs, extrapolation from the first or last two outside
 * their range, a plain offset when only one pair exists. With n == 0 the
 * value is returned as is. Pure function.
 */
int64_t tl_clock_ticks_to_ns(const tl_clock_pair *pairs, size_t n, uint64_t ticks);

/* Many conversions by the same pairs, each exactly tl_clock_ticks_to_ns's:
 * the segment of the last one is kept, and its rate, for the next ones that
 * fall in it (a thread's timestamps mostly do). */
typedef struct tl_clock_converter {
	const tl_clock_pair *pairs; /* must outlive the converter */
	size_t n;
	size_t segment; /* of the last conversion; SIZE_MAX: none yet */
	double rate;
} tl_clock_converter;

void tl_clock_converter_init(tl_clock_converter *c, const tl_clock_pair *pairs, size_t n);
int64_t tl_clock_converter_ns(tl_clock_converter *c, uint64_t ticks);

#pragma GCC visibility pop

#endif /* TIMELINE_CLOCK_H */
