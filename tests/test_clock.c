/* The trace clock: TSC conversion against clock_gettime, clock choice. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/clock.h"
#include "recorder/export/trace_model.h"
#include "recorder/tracer.h"

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void spin_ms(int ms)
{
	int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)ms * 1000000;
	while (clock_ns(CLOCK_MONOTONIC) < end)
		;
}

/* A session whose own options leave the TSC allowed takes the TSC path
 * exactly where the TSC is usable and TIMELINE_NO_TSC=1 is not set: the
 * forced runs of the suites (ctest's *.vdso entries) really read the vDSO. */
static void test_session_takes_the_clock_path_the_environment_asks(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING, .no_tsc = false};
	assert_int_equal(tl_init(&o), 0);
	print_message("asked: %s; the session reads the %s\n", tl_test_clock_path(),
	              tl_clock_is_tsc() ? "TSC" : "vDSO clock");
	assert_int_equal(tl_clock_is_tsc(), tl_test_tsc_expected());
}

/* The TSC path: ticks are tied to the trace clock by the calibration pair
 * taken at init, and a tick reading converts to within 1 us of the clock. */
static void test_tsc_session_converts_ticks_through_calibration_pairs(void **state)
{
	(void)state;
	tl_test_skip_unless_tsc();
	tl_test_init(TL_RECORDER_RING, 0);
	assert_true(tl_clock_is_tsc());
	tl_clock_pair pairs[TL_CLOCK_PAIRS];
	assert_true(tl_clock_pairs(pairs, TL_CLOCK_PAIRS) >= 1);
	int64_t before = clock_ns(CLOCK_BOOTTIME);
	tl_timestamp ticks = tl_now();
	int64_t after = clock_ns(CLOCK_BOOTTIME);
	int64_t ns = tl_timestamp_to_ns(ticks);
	print_message("ticks %llu -> %lld ns, between %lld and %lld\n", (unsigned long long)ticks,
	              (long long)ns, (long long)before, (long long)after);
	assert_true(ns >= before - 1000 && ns <= after + 1000);
}

/* Events stamped between two clock_gettime reads convert to within 1 us
 * of them, after the snapshot's own conversion. */
static void test_converted_timestamps_within_1us_of_boottime(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	enum { N = 50 };
	int64_t before[N], after[N];
	for (int i = 0; i < N; i++) {
		before[i] = clock_ns(CLOCK_BOOTTIME);
		TL_TRACE_EVENT_INSTANT0("clock", "tick", TL_SCOPE_THREAD);
		after[i] = clock_ns(CLOCK_BOOTTIME);
		spin_ms(2);
	}
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.clock_id, CLOCK_BOOTTIME);
	assert_int_equal(tl_test_count_events(&m, 'i', "tick"), N);
	int64_t worst = 0;
	int k = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const tl_model_event *e = &m.events[i];
		if (e->phase != 'i')
			continue;
		int64_t off = 0;
		if (e->ts_ns < before[k])
			off = before[k] - e->ts_ns;
		else if (e->ts_ns > after[k])
			off = e->ts_ns - after[k];
		if (off > worst)
			worst = off;
		k++;
	}
	print_message("worst distance from clock_gettime: %lld ns\n", (long long)worst);
	assert_true(worst <= 1000);
	tl_model_free(&m);
}

static void test_monotonic_clock_can_be_chosen(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .clock = TL_CLOCK_MONOTONIC, .no_tsc = true};
	assert_int_equal(tl_init(&o), 0);
	assert_false(tl_clock_is_tsc());
	int64_t before = clock_ns(CLOCK_MONOTONIC);
	TL_TRACE_EVENT_INSTANT0("clock", "mono", TL_SCOPE_THREAD);
	int64_t after = clock_ns(CLOCK_MONOTONIC);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.clock_id, CLOCK_MONOTONIC);
	assert_true(m.events[0].ts_ns >= before && m.events[0].ts_ns <= after);
	tl_model_free(&m);
}

/* Every fast form, with the vDSO clock chosen after a session on the default
 * clock: each record carries nanoseconds taken between `before` and `after`
 * (a TSC reading in a record would be far outside). */
static void test_fast_forms_read_the_vdso_clock_when_it_is_chosen(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	TL_TRACE_EVENT0("clock", "default clock");
	tl_shutdown();

	tl_options o = {.struct_size = sizeof o, .no_tsc = true};
	assert_int_equal(tl_init(&o), 0);
	assert_false(tl_clock_is_tsc());
	tl_category *cat = tl_category_get("clock");
	int64_t before = clock_ns(CLOCK_BOOTTIME);
	tl_emit_begin(cat, "begin");
	tl_emit_end(cat);
	struct tl_thread_mark mark;
	tl_tracer_begin(cat, "begin_ts", &mark);
	tl_tracer_end(cat);
	static const char copied[16] = "begin_copy";
	tl_tracer_where out = {0, 0};
	tl_tracer_begin_copy(cat, copied, sizeof "begin_copy" - 1, &out);
	tl_tracer_end(cat);
	tl_emit_counter(cat, "counter", 5);
	tl_emit_counter_double(cat, "counter_double", 0.5);
	tl_tracer_where out_number = {0, 0};
	tl_tracer_begin_numbered(cat, "begin_number", 7, &out_number);
	tl_tracer_end(cat);
	int64_t after = clock_ns(CLOCK_BOOTTIME);

	assert_int_not_equal(out.session, 0);
	assert_true((int64_t)out.ts >= before && (int64_t)out.ts <= after);
	assert_int_not_equal(out_number.session, 0);
	assert_true((int64_t)out_number.ts >= before && (int64_t)out_number.ts <= after);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.nevents, 10);
	for (size_t i = 0; i < m.nevents; i++) {
		print_message("%c %s at %lld\n", m.events[i].phase,
		              m.events[i].name ? m.events[i].name : "", (long long)m.events[i].ts_ns);
		assert_true(m.events[i].ts_ns >= before && m.events[i].ts_ns <= after);
	}
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "begin_copy"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "begin_number 7"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_COUNTER, "counter"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_COUNTER, "counter_double"), 1);
	tl_model_free(&m);
}

static void test_snapshot_records_a_clock_snapshot(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	int64_t boot = clock_ns(CLOCK_BOOTTIME), real = clock_ns(CLOCK_REALTIME);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_true(m.boottime_ns >= boot && m.boottime_ns - boot < 1000000000);
	assert_true(m.realtime_ns >= real && m.realtime_ns - real < 1000000000);
	assert_true(m.monotonic_ns > 0);
	assert_true(llabs(m.snapshot_ns - m.boottime_ns) < 1000000);
	tl_model_free(&m);
}

#ifdef __SIZEOF_INT128__
/* The conversion's definition, with a 128-bit division each time. */
static int64_t reference_ticks_to_ns(const tl_clock_pair *a, const tl_clock_pair *b,
                                     uint64_t t)
{
	int forward = t >= a->ticks;
	uint64_t dt = forward ? t - a->ticks : a->ticks - t;
	int rising = b->ns >= a->ns;
	uint64_t dns = rising ? (uint64_t)b->ns - (uint64_t)a->ns : (uint64_t)a->ns - (uint64_t)b->ns;
	uint64_t span = b->ticks - a->ticks;
	unsigned __int128 q = ((unsigned __int128)dt * dns + span / 2) / span;
	uint64_t step = q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
	__int128 v = forward == rising ? (__int128)a->ns + step : (__int128)a->ns - step;
	return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

static void test_ticks_conversion_rounds_like_a_128_bit_division(void **state)
{
	(void)state;
	uint64_t x = 88172645463325252ull; /* xorshift64 */
	for (int i = 0; i < 200000; i++) {
		uint64_t r[4];
		for (int k = 0; k < 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r[k] = x;
		}
		/* magnitudes from tiny to huge, around a TSC's ratio and not */
		unsigned shift = (unsigned)(r[3] % 64);
		tl_clock_pair p[2];
		p[0].ticks = r[0] >> (r[3] >> 8) % 64;
		p[0].ns = (int64_t)(r[1] >> 2);
		uint64_t span = 1 + (r[2] >> shift);
		p[1].ticks = p[0].ticks + span > p[0].ticks ? p[0].ticks + span : UINT64_MAX;
		uint64_t dns = (r[2] >> ((r[3] >> 16) % 64)) / 4;
		p[1].ns = (int64_t)((r[3] >> 24) & 1 ? (uint64_t)p[0].ns + dns
		                                      : (uint64_t)p[0].ns - dns);
		if (p[1].ticks == p[0].ticks)
			continue;
		uint64_t t = (r[3] >> 32) & 1 ? p[0].ticks + (r[1] >> ((r[3] >> 40) % 64))
		                              : p[0].ticks - (r[0] >> ((r[3] >> 48) % 64));
		int64_t want = reference_ticks_to_ns(&p[0], &p[1], t);
		int64_t got = tl_clock_ticks_to_ns(p, 2, t);
		if (got != want)
			fail_msg("ticks %llu, pairs (%llu, %lld) (%llu, %lld): %lld, want %lld",
			         (unsigned long long)t, (unsigned long long)p[0].ticks,
			         (long long)p[0].ns, (unsigned long long)p[1].ticks,
			         (long long)p[1].ns, (long long)got, (long long)want);
	}
}

#else
static void test_ticks_conversion_rounds_like_a_128_bit_division(void **state)
{
	(void)state;
	print_message("no 128-bit integers on this target: nothing to compare with\n");
	skip();
}
#endif

static void test_clock_converter_converts_as_ticks_to_ns(void **state)
{
	(void)state;
	/* pairs with a repeated tick value and a falling ns value among them */
	const tl_clock_pair p[] = {{1000, 5000},      {4000, 6000},  {4000, 6100},
	                           {10000, 9000},     {10500, 8900}, {1u << 30, 1000000000},
	                           {3u << 30, 50000}};
	const size_t n = sizeof p / sizeof p[0];
	for (size_t count = 0; count <= n; count++) {
		tl_clock_converter c;
		tl_clock_converter_init(&c, p, count);
		uint64_t x = 2463534242u, t = 0;
		for (int i = 0; i < 100000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* mostly small steps forward, sometimes a jump anywhere */
			t = x % 16 ? t + x % 700 : x >> (x % 40);
			assert_int_equal(tl_clock_converter_ns(&c, t), tl_clock_ticks_to_ns(p, count, t));
		}
	}
}

static void test_ticks_conversion_interpolates_between_pairs(void **state)
{
	(void)state;
	tl_clock_pair p[3] = {{1000, 5000}, {3000, 6000}, {5000, 8000}};
	assert_int_equal(tl_clock_ticks_to_ns(p, 3, 1000), 5000);
	assert_int_equal(tl_clock_ticks_to_ns(p, 3, 2000), 5500);
	assert_int_equal(tl_clock_ticks_to_ns(p, 3, 4000), 7000);
	assert_int_equal(tl_clock_ticks_to_ns(p, 3, 7000), 10000); /* extrapolated */
	assert_int_equal(tl_clock_ticks_to_ns(p, 3, 0), 4500);     /* before the first */
	assert_int_equal(tl_clock_ticks_to_ns(p, 1, 1500), 5500);  /* offset only */
	assert_int_equal(tl_clock_ticks_to_ns(p, 0, 1234), 1234);  /* already ns */
}

/* A minimum duration's boundary (the instrument filter: a call shorter
 * than ns is one whose raw span is below tl_clock_map_span_raw_min): the
 * span one tick shorter converts to less than ns, the span itself to ns or
 * more, for a map of TSC ticks at an uneven rate and for nanoseconds. */
static void test_span_raw_min_is_the_shortest_span_reaching_ns(void **state)
{
	(void)state;
	tl_clock_map ticks = {.ticks = true, .ns_per_tick = 1.0 / 2.8937};
	tl_clock_map ns = {.ticks = false};
	const int64_t minimums[] = {1, 2, 3, 7, 1000, 123457, 50 * 1000 * 1000};
	for (size_t i = 0; i < sizeof minimums / sizeof minimums[0]; i++) {
		int64_t min = minimums[i];
		uint64_t raw = tl_clock_map_span_raw_min(&ticks, min);
		assert_true(raw > 0);
		assert_true(tl_clock_map_span_ns(&ticks, raw - 1) < min);
		assert_true(tl_clock_map_span_ns(&ticks, raw) >= min);
		assert_int_equal(tl_clock_map_span_raw_min(&ns, min), (uint64_t)min);
	}
	assert_int_equal(tl_clock_map_span_raw_min(&ticks, 0), 0);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_session_takes_the_clock_path_the_environment_asks,
		                          teardown),
		cmocka_unit_test_teardown(test_tsc_session_converts_ticks_through_calibration_pairs,
		                          teardown),
		cmocka_unit_test_teardown(test_converted_timestamps_within_1us_of_boottime, teardown),
		cmocka_unit_test_teardown(test_monotonic_clock_can_be_chosen, teardown),
		cmocka_unit_test_teardown(test_fast_forms_read_the_vdso_clock_when_it_is_chosen,
		                          teardown),
		cmocka_unit_test_teardown(test_snapshot_records_a_clock_snapshot, teardown),
		cmocka_unit_test(test_ticks_conversion_interpolates_between_pairs),
		cmocka_unit_test(test_ticks_conversion_rounds_like_a_128_bit_division),
		cmocka_unit_test(test_clock_converter_converts_as_ticks_to_ns),
		cmocka_unit_test(test_span_raw_min_is_the_shortest_span_reaching_ns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
