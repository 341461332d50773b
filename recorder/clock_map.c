/*
 * The clock map (tracer.h): raw timestamps to nanoseconds as a line, the
 * one place that measures the TSC's rate for code that converts on its
 * own hot path (the tracers, the systrace recorder's time windows).
 *
 * The rate is measured once per clock choice: over the library's stored
 * calibration pairs when they span at least RATE_SPAN_NS, else over a
 * short wait (RATE_SPAN_NS) the first time a map is made, and shared by the
 * maps made after it. A map refines its own rate as it is refreshed.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "recorder/clock.h"
#include "recorder/tracer.h"

/* The shortest span a rate is measured over: the pairs' error (tens of ns)
 * is then within 1e-4 of it. */
#define RATE_SPAN_NS 1000000
/* A map whose prediction is this far from a fresh pair is made again. */
#define MAP_TOLERANCE_NS 1000000

/* Moved on by tl_clock_init. */
_Atomic uint32_t tl_clock_generation = 1;

/* The rate measured for the current generation, as a pair of pairs; a
 * seqlock-free handoff: written once per generation under the flag. */
static struct {
	_Atomic uint32_t generation; /* 0: none */
	tl_clock_pair first, last;
} measured;
static atomic_flag measuring = ATOMIC_FLAG_INIT;

/* Two pairs at least RATE_SPAN_NS apart, for generation gen. */
static void rate_span(uint32_t gen, tl_clock_pair *first, tl_clock_pair *last)
{
	if (atomic_load_explicit(&measured.generation, memory_order_acquire) == gen) {
		*first = measured.first;
		*last = measured.last;
		return;
	}
	tl_clock_pair stored[TL_CLOCK_PAIRS];
	size_t n = tl_clock_pairs(stored, TL_CLOCK_PAIRS);
	tl_clock_pair now = tl_clock_calibrate(0, 0);
	*first = n ? stored[0] : now;
	if (now.ns - first->ns < RATE_SPAN_NS || now.ticks <= first->ticks) {
		*first = now;
		do
			now = tl_clock_calibrate(0, 0);
		while (now.ns - first->ns < RATE_SPAN_NS);
	}
	*last = now;
	if (!atomic_flag_test_and_set_explicit(&measuring, memory_order_acquire)) {
		if (atomic_load_explicit(&measured.generation, memory_order_relaxed) != gen) {
			atomic_store_explicit(&measured.generation, 0, memory_order_relaxed);
			atomic_thread_fence(memory_order_release);
			measured.first = *first;
			measured.last = *last;
			atomic_store_explicit(&measured.generation, gen, memory_order_release);
		}
		atomic_flag_clear_explicit(&measuring, memory_order_release);
	}
}

void tl_clock_map_init(tl_clock_map *map)
{
	uint32_t gen = atomic_load_explicit(&tl_clock_generation, memory_order_relaxed);
	map->generation = gen;
	map->ticks = tl_clock_is_tsc() != 0;
	map->base_raw = 0;
	map->base_ns = 0;
	map->ns_per_tick = 1.0;
	map->anchor_raw = 0;
	map->anchor_ns = 0;
	if (!map->ticks)
		return;
	tl_clock_pair first, last;
	rate_span(gen, &first, &last);
	map->anchor_raw = first.ticks;
	map->anchor_ns = first.ns;
	map->base_raw = last.ticks;
	map->base_ns = last.ns;
	map->ns_per_tick = (double)(last.ns - first.ns) / (double)(last.ticks - first.ticks);
}

void tl_clock_map_refresh(tl_clock_map *map)
{
	if (!tl_clock_map_current(map) || map->ticks != (tl_clock_is_tsc() != 0)) {
		tl_clock_map_init(map);
		return;
	}
	if (!map->ticks)
		return;
	tl_clock_pair now = tl_clock_calibrate(0, 0);
	int64_t predicted = tl_clock_map_ns(map, now.ticks);
	if (llabs(predicted - now.ns) > MAP_TOLERANCE_NS || now.ticks <= map->anchor_raw) {
		tl_clock_map_init(map);
		return;
	}
	map->ns_per_tick =
	    (double)(now.ns - map->anchor_ns) / (double)(now.ticks - map->anchor_raw);
	map->base_raw = now.ticks;
	map->base_ns = now.ns;
}

uint64_t tl_clock_map_span_raw_max(const tl_clock_map *map, int64_t ns)
{
	if (!map->ticks)
		return (uint64_t)ns;
	uint64_t t = (uint64_t)((double)ns / map->ns_per_tick);
	while (t > 0 && tl_clock_map_span_ns(map, t) > ns)
		t--;
	while (tl_clock_map_span_ns(map, t + 1) <= ns)
		t++;
	return t;
}

uint64_t tl_clock_map_span_raw_min(const tl_clock_map *map, int64_t ns)
{
	if (ns <= 0)
		return 0;
	return tl_clock_map_span_raw_max(map, ns - 1) + 1;
}
