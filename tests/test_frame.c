/*
 * The frame tracer: per-frame numbers, buckets, per-scene reports, fps at
 * every refresh rate and across rate switches, idle gaps, the trace events
 * it emits. Frames are fed with exact timestamps (tl_frame_record), so every
 * expected number is exact.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/frame.h>
#include <timeline/looper.h>
#include <timeline/timeline.h>

#include "recorder/export/trace_model.h"

#define MS 1000000LL
#define SEC 1000000000LL
#define T0 (1000 * SEC)

#define MAX_REPORTS 32

struct captured {
	tl_frame_report r;
	char scene[TL_FRAME_SCENE_MAX + 1];
};

static struct captured reports[MAX_REPORTS];
static size_t nreports;

static void on_report(const tl_frame_report *r, void *user)
{
	(void)user;
	assert_true(nreports < MAX_REPORTS);
	reports[nreports].r = *r;
	snprintf(reports[nreports].scene, sizeof reports[nreports].scene, "%s", r->scene);
	reports[nreports].r.scene = reports[nreports].scene;
	nreports++;
}

static int reset_reports(void **state)
{
	(void)state;
	nreports = 0;
	memset(reports, 0, sizeof reports);
	return 0;
}

static tl_frame_tracer *tracer(int64_t period_ns, unsigned min_frames)
{
	tl_frame_options o = {.struct_size = sizeof o,
	                      .refresh_period_ns = period_ns,
	                      .report_min_frames = min_frames,
	                      .report = on_report};
	tl_frame_tracer *ft = tl_frame_tracer_create(&o);
	assert_non_null(ft);
	return ft;
}

/* One frame for the vsync at vsync_ns, starting there, lasting duration. */
static tl_frame_info frame(tl_frame_tracer *ft, int64_t vsync_ns, int64_t duration,
                           int64_t period_ns)
{
	tl_frame_times t = {.struct_size = sizeof t,
	                    .vsync_ns = vsync_ns,
	                    .start_ns = vsync_ns,
	                    .end_ns = vsync_ns + duration,
	                    .period_ns = period_ns};
	tl_frame_info info;
	assert_int_equal(tl_frame_record(ft, &t, &info), 0);
	return info;
}

/* n back-to-back frames of half a period each; returns the next vsync. */
static int64_t steady(tl_frame_tracer *ft, int64_t vsync, int64_t period, size_t n)
{
	for (size_t i = 0; i < n; i++, vsync += period)
		frame(ft, vsync, period / 2, 0);
	return vsync;
}

static void test_frame_steady_rates_report_the_refresh_rate(void **state)
{
	(void)state;
	static const int64_t periods[] = {16666667, 11111111, 8333333, 6944444};
	for (size_t k = 0; k < 4; k++) {
		nreports = 0;
		int64_t p = periods[k];
		tl_frame_tracer *ft = tracer(p, 0);
		/* frames to fill the 10 s slice: ceil(10 s / P) */
		size_t n = (size_t)((10 * SEC + p - 1) / p);
		steady(ft, T0, p, n - 1);
		assert_int_equal(nreports, 0);
		steady(ft, T0 + (int64_t)(n - 1) * p, p, 1);
		assert_int_equal(nreports, 1);
		const tl_frame_report *r = &reports[0].r;
		assert_string_equal(r->scene, "default");
		assert_false(r->partial);
		assert_int_equal(r->frames, n);
		assert_int_equal(r->wall_ns, (int64_t)n * p);
		assert_true(r->fps == (double)n * 1e9 / (double)((int64_t)n * p));
		assert_true(r->fps <= 1e9 / (double)p);
		assert_int_equal(r->dropped_frames, 0);
		assert_int_equal(r->bucket_frames[TL_FRAME_BEST], n);
		assert_int_equal(r->janky_frames, 0);
		assert_int_equal(r->p50_ns, p / 2);
		assert_int_equal(r->p99_ns, p / 2);
		assert_int_equal(r->max_ns, p / 2);
		assert_int_equal(r->nperiods, 1);
		assert_int_equal(r->periods_ns[0], p);
		assert_int_equal(r->begin_ns, T0);
		tl_frame_tracer_destroy(ft);
	}
}

static void test_frame_dropped_is_whole_periods_missed(void **state)
{
	(void)state;
	const int64_t p = 16666667;
	tl_frame_tracer *ft = tracer(p, 0);
	struct {
		int64_t duration;
		int64_t lateness;
		uint64_t dropped;
	} cases[] = {
	    {p / 2, p / 2 - p, 0}, {p, 0, 0},
	    {p + 1, 1, 1},         {2 * p, p, 1},
	    {2 * p + 1, p + 1, 2}, {10 * p + 5, 9 * p + 5, 10},
	};
	int64_t vsync = T0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tl_frame_info info = frame(ft, vsync, cases[i].duration, 0);
		assert_int_equal(info.number, i + 1);
		assert_int_equal(info.duration_ns, cases[i].duration);
		assert_int_equal(info.lateness_ns, cases[i].lateness);
		assert_int_equal(info.dropped, cases[i].dropped);
		assert_int_equal(info.period_ns, p);
		vsync += 20 * p;
	}
	/* a start after the vsync counts against the vsync's deadline */
	tl_frame_times t = {.struct_size = sizeof t,
	                    .vsync_ns = vsync,
	                    .start_ns = vsync + p / 2,
	                    .end_ns = vsync + p + p / 4};
	tl_frame_info info;
	assert_int_equal(tl_frame_record(ft, &t, &info), 0);
	assert_int_equal(info.duration_ns, p - p / 2 + p / 4);
	assert_int_equal(info.dropped, 1);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_single_long_frames_fall_in_each_bucket(void **state)
{
	(void)state;
	const int64_t p = 10 * MS;
	tl_frame_tracer *ft = tracer(p, 1);
	static const struct {
		uint64_t dropped;
		tl_frame_bucket bucket;
	} cases[] = {
	    {0, TL_FRAME_BEST},     {2, TL_FRAME_BEST},   {3, TL_FRAME_NORMAL},
	    {8, TL_FRAME_NORMAL},   {9, TL_FRAME_MIDDLE}, {23, TL_FRAME_MIDDLE},
	    {24, TL_FRAME_HIGH},    {41, TL_FRAME_HIGH},  {42, TL_FRAME_FROZEN},
	    {100, TL_FRAME_FROZEN},
	};
	int64_t vsync = T0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		/* dropped d: ends d periods after its deadline */
		tl_frame_info info = frame(ft, vsync, (int64_t)(cases[i].dropped + 1) * p, 0);
		assert_int_equal(info.dropped, cases[i].dropped);
		assert_int_equal(info.bucket, cases[i].bucket);
		vsync += 200 * p;
	}
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	const tl_frame_report *r = &reports[0].r;
	assert_true(r->partial);
	assert_int_equal(r->frames, 10);
	assert_int_equal(r->bucket_frames[TL_FRAME_BEST], 2);
	assert_int_equal(r->bucket_dropped[TL_FRAME_BEST], 2);
	assert_int_equal(r->bucket_frames[TL_FRAME_NORMAL], 2);
	assert_int_equal(r->bucket_dropped[TL_FRAME_NORMAL], 11);
	assert_int_equal(r->bucket_frames[TL_FRAME_MIDDLE], 2);
	assert_int_equal(r->bucket_dropped[TL_FRAME_MIDDLE], 32);
	assert_int_equal(r->bucket_frames[TL_FRAME_HIGH], 2);
	assert_int_equal(r->bucket_dropped[TL_FRAME_HIGH], 65);
	assert_int_equal(r->bucket_frames[TL_FRAME_FROZEN], 2);
	assert_int_equal(r->bucket_dropped[TL_FRAME_FROZEN], 142);
	assert_int_equal(r->dropped_frames, 252);
	assert_int_equal(r->janky_frames, 9);
	/* wall = sum of (dropped + 1) periods */
	assert_int_equal(r->wall_ns, (252 + 10) * p);
	assert_true(r->fps == 10 * 1e9 / (double)((252 + 10) * p));
	assert_int_equal(r->max_ns, 101 * p);
	/* nearest rank over durations 1,3,4,9,10,24,25,42,43,101 periods */
	assert_int_equal(r->p50_ns, 10 * p);
	assert_int_equal(r->p90_ns, 43 * p);
	assert_int_equal(r->p99_ns, 101 * p);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_thresholds_are_options(void **state)
{
	(void)state;
	tl_frame_options o = {.struct_size = sizeof o,
	                      .refresh_rate_hz = 100,
	                      .frozen_threshold = 10,
	                      .high_threshold = 5,
	                      .middle_threshold = 2,
	                      .normal_threshold = 1};
	tl_frame_tracer *ft = tl_frame_tracer_create(&o);
	assert_non_null(ft);
	assert_int_equal(frame(ft, T0, 2 * 10 * MS, 0).bucket, TL_FRAME_NORMAL);
	assert_int_equal(frame(ft, T0 + SEC, 3 * 10 * MS, 0).bucket, TL_FRAME_MIDDLE);
	assert_int_equal(frame(ft, T0 + 2 * SEC, 11 * 10 * MS, 0).bucket, TL_FRAME_FROZEN);
	tl_frame_tracer_destroy(ft);

	o.high_threshold = 20; /* not below frozen */
	errno = 0;
	assert_null(tl_frame_tracer_create(&o));
	assert_int_equal(errno, EINVAL);
	tl_frame_options bad = {.struct_size = sizeof bad, .refresh_period_ns = -5};
	errno = 0;
	assert_null(tl_frame_tracer_create(&bad));
	assert_int_equal(errno, EINVAL);
	tl_frame_options small = {.struct_size = 4};
	errno = 0;
	assert_null(tl_frame_tracer_create(&small));
	assert_int_equal(errno, EINVAL);
}

static void test_frame_rate_switch_mid_run(void **state)
{
	(void)state;
	const int64_t p60 = 16666667, p120 = 8333333;
	tl_frame_options o = {.struct_size = sizeof o,
	                      .refresh_period_ns = p60,
	                      .report_slice_ns = 2 * SEC,
	                      .report = on_report};
	tl_frame_tracer *ft = tl_frame_tracer_create(&o);
	assert_non_null(ft);
	/* 60 frames at 60 Hz (1 s), then the display switches to 120 Hz */
	int64_t vsync = steady(ft, T0, p60, 60);
	assert_int_equal(tl_frame_set_refresh_period(ft, p120), 0);
	assert_int_equal(tl_frame_set_refresh_period(ft, 0), -EINVAL);
	/* 1 s - 60 * p60 + 120 * p120 >= 2 s happens at frame 121 of 120 Hz */
	vsync = steady(ft, vsync, p120, 119);
	assert_int_equal(nreports, 0);
	steady(ft, vsync, p120, 2);
	assert_int_equal(nreports, 1);
	const tl_frame_report *r = &reports[0].r;
	assert_int_equal(r->frames, 60 + 121);
	assert_int_equal(r->wall_ns, 60 * p60 + 121 * p120);
	assert_true(r->fps == 181 * 1e9 / (double)(60 * p60 + 121 * p120));
	assert_true(r->fps > 60 && r->fps < 120);
	assert_int_equal(r->nperiods, 2);
	assert_int_equal(r->periods_ns[0], p60);
	assert_int_equal(r->periods_ns[1], p120);
	assert_int_equal(r->dropped_frames, 0);
	/* the frame's own period wins over the one in force */
	tl_frame_info info = frame(ft, vsync + SEC, p60, p60);
	assert_int_equal(info.period_ns, p60);
	assert_int_equal(info.dropped, 0);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_idle_gaps_are_not_jank(void **state)
{
	(void)state;
	const int64_t p = 16666667;
	tl_frame_tracer *ft = tracer(p, 1);
	int64_t vsync = T0;
	for (int burst = 0; burst < 5; burst++) {
		vsync = steady(ft, vsync, p, 30);
		vsync += 3 * SEC; /* nothing requested for 3 s */
	}
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	const tl_frame_report *r = &reports[0].r;
	assert_int_equal(r->frames, 150);
	assert_int_equal(r->dropped_frames, 0);
	assert_int_equal(r->janky_frames, 0);
	assert_int_equal(r->wall_ns, 150 * p);
	assert_true(r->fps == 150 * 1e9 / (double)(150 * p));
	tl_frame_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.janky_frames, 0);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_scene_change_mid_slice(void **state)
{
	(void)state;
	const int64_t p = 10 * MS; /* 100 frames per second */
	tl_frame_tracer *ft = tracer(p, 5);
	assert_int_equal(tl_frame_set_scene(ft, "menu"), 0);
	int64_t vsync = steady(ft, T0, p, 500); /* 5 s of menu */
	char scene[64];
	snprintf(scene, sizeof scene, "game");
	assert_int_equal(tl_frame_set_scene(ft, scene), 0);
	memset(scene, 'x', sizeof scene - 1); /* the content was copied */
	vsync = steady(ft, vsync, p, 300);    /* 3 s of game */
	assert_int_equal(tl_frame_set_scene(ft, "menu"), 0);
	vsync = steady(ft, vsync, p, 499);
	assert_int_equal(nreports, 0);
	steady(ft, vsync, p, 1); /* menu reaches 10 s */
	assert_int_equal(nreports, 1);
	assert_string_equal(reports[0].scene, "menu");
	assert_int_equal(reports[0].r.frames, 1000);
	assert_false(reports[0].r.partial);
	assert_int_equal(reports[0].r.begin_ns, T0);

	tl_frame_tracer_destroy(ft); /* flushes game (300 frames) */
	assert_int_equal(nreports, 2);
	assert_string_equal(reports[1].scene, "game");
	assert_int_equal(reports[1].r.frames, 300);
	assert_true(reports[1].r.partial);
}

static void test_frame_partial_slice_below_min_frames_is_skipped(void **state)
{
	(void)state;
	tl_frame_tracer *ft = tracer(16666667, 10);
	steady(ft, T0, 16666667, 9);
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 0);
	tl_frame_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.reports_skipped, 1);
	assert_int_equal(st.frames, 9);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_fps_never_above_the_refresh_rate(void **state)
{
	(void)state;
	const int64_t p = 8333333;
	tl_frame_tracer *ft = tracer(p, 1);
	/* three tiny frames per vsync: more frames than the display shows */
	for (int i = 0; i < 300; i++)
		for (int j = 0; j < 3; j++)
			frame(ft, T0 + i * p, 100000, 0);
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	assert_true(reports[0].r.fps <= 1e9 / (double)p);
	assert_true(reports[0].r.fps > 119.9);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_begin_end_measures_the_clock(void **state)
{
	(void)state;
	tl_frame_tracer *ft = tracer(16666667, 1);
	tl_frame_end(ft); /* nothing open */
	int64_t before = tl_now_ns();
	tl_frame_begin(ft, before);
	tl_frame_begin(ft, before); /* abandons the first */
	tl_frame_end(ft);
	int64_t after = tl_now_ns();
	tl_frame_info info;
	assert_int_equal(tl_frame_last(ft, &info), 0);
	assert_int_equal(info.number, 1);
	assert_true(info.duration_ns >= 0 && info.duration_ns <= after - before);
	assert_int_equal(info.dropped, 0);
	tl_frame_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.frames, 1);
	assert_int_equal(st.abandoned, 1);
	assert_int_equal(st.unmatched_ends, 1);

	tl_frame_times bad = {.struct_size = sizeof bad, .start_ns = 10, .end_ns = 5};
	assert_int_equal(tl_frame_record(ft, &bad, NULL), -EINVAL);
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.invalid, 1);
	tl_frame_tracer_destroy(ft);
}

static void test_frame_report_json_keeps_matrix_keys(void **state)
{
	(void)state;
	tl_frame_tracer *ft = tracer(16666667, 1);
	assert_int_equal(tl_frame_set_scene(ft, "Main\"Activity"), 0);
	steady(ft, T0, 16666667, 10);
	frame(ft, T0 + SEC, 5 * 16666667, 0); /* 4 dropped: normal */
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	int need = tl_frame_report_json(&reports[0].r, NULL, 0);
	assert_true(need > 0);
	char *buf = malloc((size_t)need + 1);
	assert_int_equal(tl_frame_report_json(&reports[0].r, buf, (size_t)need + 1), need);
	assert_int_equal(strlen(buf), (size_t)need);
	assert_non_null(strstr(buf, "\"scene\":\"Main\\\"Activity\""));
	assert_non_null(strstr(buf, "\"dropLevel\":{\"DROPPED_FROZEN\":0,\"DROPPED_HIGH\":0,"
	                            "\"DROPPED_MIDDLE\":0,\"DROPPED_NORMAL\":1,"
	                            "\"DROPPED_BEST\":10}"));
	assert_non_null(strstr(buf, "\"dropSum\":{\"DROPPED_FROZEN\":0,\"DROPPED_HIGH\":0,"
	                            "\"DROPPED_MIDDLE\":0,\"DROPPED_NORMAL\":4,"
	                            "\"DROPPED_BEST\":0}"));
	assert_non_null(strstr(buf, "\"fps\":"));
	assert_non_null(strstr(buf, "\"refresh_rates_hz\":[60.00]"));
	/* a short buffer is cut and terminated, the needed length returned */
	char small[16];
	assert_int_equal(tl_frame_report_json(&reports[0].r, small, sizeof small), need);
	assert_int_equal(strlen(small), sizeof small - 1);
	free(buf);
	tl_frame_tracer_destroy(ft);
	assert_string_equal(tl_frame_bucket_name(TL_FRAME_FROZEN), "DROPPED_FROZEN");
	assert_null(tl_frame_bucket_name((tl_frame_bucket)TL_FRAME_BUCKET_COUNT));
}

/* Spins until at least ns have passed on the trace clock. */
static void spin_ns(int64_t ns)
{
	int64_t until = tl_now_ns() + ns;
	while (tl_now_ns() < until) {
	}
}

/* On-time begin/end frames take tl_frame_end's fast path, which keeps their
 * times raw: the report and the frame info must still say nanoseconds. */
static void test_frame_fast_path_times_reach_the_report_in_ns(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_frame_tracer *ft = tracer(16666667, 1);
	int64_t longest = 0;
	for (int i = 0; i < 40; i++) {
		int64_t before = tl_now_ns();
		tl_frame_begin(ft, 0);
		spin_ns(200000);
		tl_frame_end(ft);
		if (tl_now_ns() - before > longest)
			longest = tl_now_ns() - before;
	}
	tl_frame_info info;
	assert_int_equal(tl_frame_last(ft, &info), 0);
	assert_int_equal(info.number, 40);
	assert_true(info.duration_ns >= 200000 && info.duration_ns <= longest);
	assert_int_equal(info.lateness_ns, info.duration_ns - 16666667);
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	const tl_frame_report *r = &reports[0].r;
	assert_int_equal(r->frames, 40);
	assert_true(r->p50_ns >= 200000 && r->p50_ns <= longest);
	assert_true(r->max_ns >= r->p99_ns && r->max_ns <= longest);
	assert_true(r->end_ns > r->begin_ns && r->end_ns <= tl_now_ns());
	tl_frame_tracer_destroy(ft);
	tl_shutdown();
}

/* A tracer outlives sessions, and a new session may read another clock
 * (the TSC, then the vDSO clock, then the TSC again, where the kernel uses
 * the TSC; the vDSO clock throughout elsewhere): frame times, kept raw by
 * the fast path, still reach the frame info and the report in ns. */
static void test_frame_times_stay_ns_when_a_session_changes_the_clock(void **state)
{
	(void)state;
	tl_frame_tracer *ft = tracer(16666667, 1);
	static const bool no_tsc[] = {false, true, false};
	int64_t longest = 0;
	for (size_t session = 0; session < 3; session++) {
		tl_options o = {.struct_size = sizeof o,
		                .recorder = TL_RECORDER_RING,
		                .buffer_bytes = 1 << 20,
		                .no_tsc = no_tsc[session]};
		assert_int_equal(tl_init(&o), 0);
		for (int i = 0; i < 10; i++) {
			int64_t before = tl_now_ns();
			tl_frame_begin(ft, 0);
			spin_ns(200000);
			tl_frame_end(ft);
			if (tl_now_ns() - before > longest)
				longest = tl_now_ns() - before;
		}
		tl_frame_info info;
		assert_int_equal(tl_frame_last(ft, &info), 0);
		assert_true(info.duration_ns >= 200000 && info.duration_ns <= longest);
		tl_shutdown();
	}
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	const tl_frame_report *r = &reports[0].r;
	assert_int_equal(r->frames, 30);
	assert_true(r->p50_ns >= 200000 && r->p50_ns <= longest);
	assert_true(r->max_ns >= r->p99_ns && r->max_ns <= longest);
	assert_true(r->end_ns > r->begin_ns && r->end_ns <= tl_now_ns());
	tl_frame_tracer_destroy(ft);
}

/* On-time begin/end frames take the fast path, which counts them into the
 * slice and the window only later: slices of exactly 10 s of wall time
 * (600 frames at 60 Hz) and a window every 12 frames (200 ms) all the same. */
static void test_frame_fast_frames_fill_slices_and_windows_exactly(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 4 << 20);
	tl_frame_tracer *ft = tracer(16666667, 1);
	for (int i = 0; i < 1300; i++) {
		tl_frame_begin(ft, 0);
		tl_frame_end(ft);
	}
	assert_int_equal(nreports, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(reports[i].r.frames, 600);
		assert_int_equal(reports[i].r.wall_ns, 600 * (int64_t)16666667);
		assert_int_equal(reports[i].r.dropped_frames, 0);
	}
	tl_frame_info info;
	assert_int_equal(tl_frame_last(ft, &info), 0);
	assert_int_equal(info.number, 1300);
	assert_true(info.duration_ns >= 0 && info.duration_ns < 16666667);
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 3);
	assert_int_equal(reports[2].r.frames, 100);
	assert_int_equal(reports[2].r.wall_ns, 100 * (int64_t)16666667);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_COUNTER, "fps"), 1300 / 12);
	/* the fast path records "frame" and the number: spelled out in the snapshot */
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "frame 1"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "frame 1300"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, NULL), 1300);
	tl_model_free(&m);
	tl_frame_tracer_destroy(ft);
	tl_shutdown();
}

static const tl_model_event *find_event(const tl_model *m, char phase, const char *name)
{
	for (size_t i = 0; i < m->nevents; i++)
		if (m->events[i].phase == phase && m->events[i].name &&
		    strcmp(m->events[i].name, name) == 0)
			return &m->events[i];
	return NULL;
}

static int64_t arg_i(const tl_model_event *e, const char *key)
{
	for (unsigned i = 0; i < e->nargs; i++)
		if (strcmp(e->args[i].key, key) == 0)
			return e->args[i].v.i;
	fail_msg("no argument %s", key);
	return 0;
}

static void test_frame_events_go_through_the_timeline_api(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const int64_t p = 16666667;
	tl_frame_tracer *ft = tracer(p, 1);
	int64_t t0 = tl_now_ns() - 2 * SEC;
	int64_t vsync = steady(ft, t0, p, 20); /* 20 frames: one 200 ms window + */
	frame(ft, vsync, 4 * p, 0);            /* a janky frame: 3 dropped */
	tl_frame_tracer_flush(ft);

	tl_model m;
	tl_test_snapshot_model(&m);
	const tl_model_event *f1 = find_event(&m, TL_PHASE_COMPLETE, "frame 1");
	assert_non_null(f1);
	/* the recorder's timestamps go through the tick conversion */
	assert_true(llabs(f1->ts_ns - t0) < 100000);
	assert_true(llabs(f1->end_ns - (t0 + p / 2)) < 100000);
	assert_int_equal(f1->nargs, 0); /* started at its vsync */
	assert_non_null(find_event(&m, TL_PHASE_COMPLETE, "frame 21"));
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_COMPLETE, NULL), 21);
	const tl_model_event *jank = find_event(&m, TL_PHASE_INSTANT, "janky frame");
	assert_non_null(jank);
	assert_int_equal(arg_i(jank, "frame"), 21);
	assert_int_equal(arg_i(jank, "dropped"), 3);
	assert_int_equal(arg_i(jank, "lateness_ns"), 3 * p);
	const tl_model_event *fps = find_event(&m, TL_PHASE_COUNTER, "fps");
	assert_non_null(fps);
	assert_true(fps->counter_is_double);
	assert_true(fps->counter_d > 59.99 && fps->counter_d <= 60.0);
	assert_non_null(find_event(&m, TL_PHASE_COUNTER, "dropped_frames"));
	const tl_model_event *period = find_event(&m, TL_PHASE_COUNTER, "refresh_period_ns");
	assert_non_null(period);
	assert_int_equal(period->counter_i, p);
	assert_non_null(find_event(&m, TL_PHASE_INSTANT, "frame report"));
	tl_model_free(&m);
	tl_frame_tracer_destroy(ft);
	tl_shutdown();
}

static void test_frame_looper_counts_only_frame_dispatches(void **state)
{
	(void)state;
	tl_frame_tracer *ft = tracer(16666667, 1);
	tl_looper_options lo;
	tl_looper_options_init(&lo);
	lo.anr_timeout_ms = 0;
	lo.lag_threshold_ms = 0;
	lo.slow_dispatch_ms = 0;
	tl_looper *looper = tl_looper_create(&lo);
	assert_non_null(looper);
	assert_int_equal(tl_frame_tracer_attach_looper(ft, looper), 0);
	assert_int_equal(tl_frame_tracer_attach_looper(ft, looper), -EBUSY);
	/* 30 frames, each among 50 other messages */
	for (int i = 0; i < 30; i++) {
		for (int m = 0; m < 50; m++) {
			tl_looper_dispatch_begin(looper, "message");
			tl_looper_dispatch_end(looper);
		}
		tl_looper_dispatch_begin_flags(looper, "frame", TL_LOOPER_FRAME);
		tl_looper_dispatch_end(looper);
		tl_looper_dispatch_begin(looper, "input");
		tl_looper_mark_frame(looper); /* a vsync callback inside it */
		tl_looper_dispatch_end(looper);
	}
	tl_frame_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.frames, 60);
	assert_int_equal(st.messages_ignored, 30 * 50);
	tl_frame_tracer_flush(ft);
	assert_int_equal(nreports, 1);
	assert_int_equal(reports[0].r.frames, 60);
	assert_true(reports[0].r.fps <= 1e9 / 16666667.0);
	assert_int_equal(tl_frame_tracer_detach_looper(ft), 0);
	assert_int_equal(tl_frame_tracer_detach_looper(ft), -ENOENT);
	tl_looper_dispatch_begin_flags(looper, "frame", TL_LOOPER_FRAME);
	tl_looper_dispatch_end(looper);
	assert_int_equal(tl_frame_tracer_stats_get(ft, &st), 0);
	assert_int_equal(st.frames, 60);
	tl_looper_destroy(looper);
	tl_frame_tracer_destroy(ft);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_frame_steady_rates_report_the_refresh_rate, reset_reports),
	    cmocka_unit_test_setup(test_frame_dropped_is_whole_periods_missed, reset_reports),
	    cmocka_unit_test_setup(test_frame_single_long_frames_fall_in_each_bucket,
	                           reset_reports),
	    cmocka_unit_test_setup(test_frame_thresholds_are_options, reset_reports),
	    cmocka_unit_test_setup(test_frame_rate_switch_mid_run, reset_reports),
	    cmocka_unit_test_setup(test_frame_idle_gaps_are_not_jank, reset_reports),
	    cmocka_unit_test_setup(test_frame_scene_change_mid_slice, reset_reports),
	    cmocka_unit_test_setup(test_frame_partial_slice_below_min_frames_is_skipped,
	                           reset_reports),
	    cmocka_unit_test_setup(test_frame_fps_never_above_the_refresh_rate, reset_reports),
	    cmocka_unit_test_setup(test_frame_begin_end_measures_the_clock, reset_reports),
	    cmocka_unit_test_setup(test_frame_fast_path_times_reach_the_report_in_ns,
	                           reset_reports),
	    cmocka_unit_test_setup(test_frame_fast_frames_fill_slices_and_windows_exactly,
	                           reset_reports),
	    cmocka_unit_test_setup(test_frame_times_stay_ns_when_a_session_changes_the_clock,
	                           reset_reports),
	    cmocka_unit_test_setup(test_frame_report_json_keeps_matrix_keys, reset_reports),
	    cmocka_unit_test_setup(test_frame_events_go_through_the_timeline_api, reset_reports),
	    cmocka_unit_test_setup(test_frame_looper_counts_only_frame_dispatches, reset_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
