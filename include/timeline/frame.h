/*
 * The frame tracer: frame times, dropped frames, jank buckets and fps, per
 * scene and in real time. A client of <timeline/timeline.h> (and of the
 * library's internal tracer interface, nothing else of the core): every
 * frame, counter and report it computes is also emitted as a trace event
 * (category "frame" unless chosen otherwise), so it shows up in systrace
 * captures and in flight-recorder dumps. Definitions and formulas:
 * docs/frame.md.
 *
 * Timestamps are nanoseconds of the trace clock (tl_now_ns()). Feeding
 * Choreographer's frameTimeNanos (CLOCK_MONOTONIC) needs the library started
 * with TL_CLOCK_MONOTONIC.
 *
 * Threads: one tracer is fed by one thread at a time (the render or UI
 * thread): tl_frame_begin, tl_frame_end, tl_frame_record, the looper
 * observer and tl_frame_tracer_flush must not run concurrently on the same
 * tracer. tl_frame_set_refresh_period and tl_frame_set_scene may be called
 * from any thread at any time; the frame thread picks the change up at its
 * next frame without taking a lock unless a scene change is pending.
 * Reports are delivered on the frame thread. Nothing here is
 * async-signal-safe.
 */
#ifndef TIMELINE_FRAME_H
#define TIMELINE_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/looper.h>
#include <timeline/timeline.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Jank buckets, by the number of frames a frame dropped. */
typedef enum tl_frame_bucket {
	TL_FRAME_BEST = 0, /* below the normal threshold */
	TL_FRAME_NORMAL,   /* >= normal_threshold (default 3) */
	TL_FRAME_MIDDLE,   /* >= middle_threshold (default 9) */
	TL_FRAME_HIGH,     /* >= high_threshold (default 24) */
	TL_FRAME_FROZEN,   /* >= frozen_threshold (default 42) */
} tl_frame_bucket;

#define TL_FRAME_BUCKET_COUNT 5
/* Distinct refresh periods a report lists; more are counted, not listed. */
#define TL_FRAME_MAX_RATES 8
/* Scene names are copied and cut to this many bytes. */
#define TL_FRAME_SCENE_MAX 127

/* "DROPPED_BEST" ... "DROPPED_FROZEN" (the report's JSON keys); static
 * storage; NULL for a value out of range. */
TL_API const char *tl_frame_bucket_name(tl_frame_bucket bucket);

/*
 * One report: one scene over one time slice. Valid only during the report
 * callback (copy what you keep).
 */
typedef struct tl_frame_report {
	size_t struct_size;
	const char *scene;
	bool partial; /* flushed before its time slice was full */
	uint64_t frames;
	int64_t wall_ns;         /* wall time with frames: sum of (dropped + 1) * period */
	int64_t begin_ns;        /* start of the slice's first frame */
	int64_t end_ns;          /* end of its last frame */
	double fps;              /* frames / wall time, capped by the highest refresh rate seen */
	uint64_t dropped_frames; /* dropSum, all buckets */
	uint64_t bucket_frames[TL_FRAME_BUCKET_COUNT];  /* dropLevel */
	uint64_t bucket_dropped[TL_FRAME_BUCKET_COUNT]; /* dropSum */
	uint64_t janky_frames;                          /* frames with dropped >= 1 */
	int64_t p50_ns, p90_ns, p95_ns, p99_ns, max_ns; /* frame time (end - start) */
	unsigned nperiods;                              /* entries in periods_ns */
	int64_t periods_ns[TL_FRAME_MAX_RATES];         /* refresh periods seen, in order */
} tl_frame_report;

/* Called on the frame thread; must not call back into the same tracer. */
typedef void (*tl_frame_report_fn)(const tl_frame_report *report, void *user);

/*
 * Options for tl_frame_tracer_create(). Zero-initialise, set struct_size,
 * fill in what you need; 0 / NULL means the default. New fields are only
 * ever appended.
 */
typedef struct tl_frame_options {
	size_t struct_size;
	int64_t refresh_period_ns; /* default: from refresh_rate_hz */
	double refresh_rate_hz;    /* used when refresh_period_ns is 0; default 60 */
	/* Bucket thresholds in dropped frames; must decrease from frozen to
	 * normal. Defaults 42, 24, 9, 3. */
	unsigned frozen_threshold;
	unsigned high_threshold;
	unsigned middle_threshold;
	unsigned normal_threshold;
	int64_t report_slice_ns;    /* wall time with frames per report; default 10 s */
	unsigned report_min_frames; /* a partial slice needs this many frames; default 10 */
	int64_t realtime_window_ns; /* fps / dropped_frames counters; default 200 ms */
	tl_frame_report_fn report;  /* may be NULL */
	void *report_user;
	const char *scene;    /* initial scene (copied); default "default" */
	const char *category; /* trace category of the events; default "frame" */
} tl_frame_options;

typedef struct tl_frame_tracer tl_frame_tracer;

/*
 * Creates a tracer (opts may be NULL for the defaults). Returns NULL and
 * sets errno on failure: EINVAL for a bad option (struct_size too small,
 * a negative period, a rate below 0.001 Hz or above 1 GHz, thresholds not
 * decreasing, negative durations), ENOMEM. Any thread; not
 * async-signal-safe. Needs no session: without one, frames are still
 * measured and reported, and the trace events are ignored.
 */
TL_API tl_frame_tracer *tl_frame_tracer_create(const tl_frame_options *opts);

/* Flushes partial slices (tl_frame_tracer_flush), then frees. NULL is ok. */
TL_API void tl_frame_tracer_destroy(tl_frame_tracer *ft);

/*
 * A frame starts now, for the vsync at vsync_ns (its intended display
 * slot minus one period, Choreographer's frameTimeNanos). vsync_ns <= 0:
 * the frame is its own vsync (start time). A begin while a frame is open
 * abandons the open frame (counted, not measured).
 */
TL_API void tl_frame_begin(tl_frame_tracer *ft, int64_t vsync_ns);

/* The open frame ends now: measured, emitted, aggregated. An end with no
 * open frame is counted and ignored. */
TL_API void tl_frame_end(tl_frame_tracer *ft);

/* A frame whose timestamps are all known (trace-clock ns). */
typedef struct tl_frame_times {
	size_t struct_size;
	int64_t vsync_ns; /* intended vsync; <= 0: start_ns */
	int64_t start_ns;
	int64_t end_ns;     /* >= start_ns */
	int64_t present_ns; /* when it reached the screen; 0: unknown */
	int64_t period_ns;  /* refresh period of this frame; 0: the one in force */
} tl_frame_times;

/* What the tracer made of one frame. */
typedef struct tl_frame_info {
	uint64_t number;     /* 1 for the tracer's first frame */
	int64_t duration_ns; /* end - start */
	int64_t lateness_ns; /* end - (vsync + period); <= 0: on time */
	int64_t period_ns;
	uint64_t dropped; /* whole periods missed: max(0, ceil(lateness / period)) */
	tl_frame_bucket bucket;
} tl_frame_info;

/*
 * Records one frame after the fact; *info (may be NULL) receives the
 * result. Returns 0, or -EINVAL (NULL, struct_size too small, end before
 * start, negative period) and the frame is counted as invalid.
 */
TL_API int tl_frame_record(tl_frame_tracer *ft, const tl_frame_times *times, tl_frame_info *info);

/* The last frame measured (by any of the calls above). -ENOENT before the
 * first one. Frame thread only. */
TL_API int tl_frame_last(const tl_frame_tracer *ft, tl_frame_info *info);

/* The refresh period for the frames that start from now on (rate switch,
 * VRR). Any thread. Returns 0 or -EINVAL for period_ns <= 0. */
TL_API int tl_frame_set_refresh_period(tl_frame_tracer *ft, int64_t period_ns);

/* The aggregation key for the frames from the next one on: the string's
 * content is copied (cut at TL_FRAME_SCENE_MAX bytes). Any thread. Returns
 * 0, -EINVAL for NULL. */
TL_API int tl_frame_set_scene(tl_frame_tracer *ft, const char *scene);

/* Reports every scene's partial slice that holds at least
 * report_min_frames frames (marked partial), and resets them all. */
TL_API void tl_frame_tracer_flush(tl_frame_tracer *ft);

/*
 * Looper-fed mode: observes a loop (<timeline/looper.h>); every dispatch
 * flagged as a frame (TL_LOOPER_FRAME, tl_looper_mark_frame) is a frame from
 * its begin to its end, with its begin as its vsync; every other dispatch is
 * counted in messages_ignored and never touches the frame statistics. Same
 * threads as tl_looper_add_observer (the loop's thread, outside a dispatch).
 * One loop per tracer. Returns 0, -EINVAL, -EBUSY (already attached), or
 * what tl_looper_add_observer returns. tl_frame_tracer_destroy detaches.
 */
TL_API int tl_frame_tracer_attach_looper(tl_frame_tracer *ft, tl_looper *looper);
/* Returns 0, -EINVAL, -ENOENT when not attached. */
TL_API int tl_frame_tracer_detach_looper(tl_frame_tracer *ft);

/* Counters over the tracer's life. */
typedef struct tl_frame_stats {
	size_t struct_size;
	uint64_t frames; /* measured */
	uint64_t janky_frames;
	uint64_t dropped_frames;
	uint64_t abandoned;        /* begin while a frame was open */
	uint64_t unmatched_ends;   /* end with no open frame */
	uint64_t invalid;          /* tl_frame_record refused */
	uint64_t reports;          /* delivered */
	uint64_t reports_skipped;  /* partial slices below report_min_frames */
	uint64_t messages_ignored; /* looper dispatches that were not frames */
} tl_frame_stats;

/* Fills *out (set struct_size first). 0 or -EINVAL. Frame thread. */
TL_API int tl_frame_tracer_stats_get(const tl_frame_tracer *ft, tl_frame_stats *out);

/*
 * Writes the report as one JSON object (no newline) into buf, like
 * snprintf: returns the length it needs (excluding the NUL), and writes at
 * most size bytes, NUL included. Keys: tag, scene, partial, frames,
 * wall_ms, fps, dropped_frames, janky_frames, dropLevel, dropSum,
 * frame_time_ms {p50, p90, p95, p99, max}, refresh_rates_hz, begin_ns,
 * end_ns. Returns -EINVAL for NULL report.
 */
TL_API int tl_frame_report_json(const tl_frame_report *report, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* TIMELINE_FRAME_H */
