/*
 * Frame statistics shared by the frame tracer and `timeline fps`:
 * percentiles, statistics over presented frames (the method of Chromium's
 * SurfaceStatsCollector, see docs/frame.md), and the reader of
 * `dumpsys SurfaceFlinger --latency` output. Internal; allocates, not
 * signal-safe.
 */
#ifndef TIMELINE_FRAME_STATS_H
#define TIMELINE_FRAME_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Nearest rank: the smallest value with at least pct % of the values at or
 * below it. sorted[] ascending; 0 when n is 0. */
int64_t tl_frame_percentile(const int64_t *sorted, size_t n, unsigned pct);

/*
 * The nearest-rank percentiles pcts[0..npcts) (ascending) of values[0..n)
 * into out, in expected linear time; reorders values. 0s when n is 0.
 */
void tl_frame_percentiles(int64_t *values, size_t n, const unsigned *pcts, size_t npcts,
                          int64_t *out);

/* Sorts values ascending in place. */
void tl_frame_sort_i64(int64_t *values, size_t n);

/* Rounds half away from zero (C round()) to int64, saturating. */
int64_t tl_frame_round(double v);

/* One presented frame: when it reached the screen, and the refresh period
 * in force for it. */
typedef struct tl_present_frame {
	int64_t present_ns;
	int64_t period_ns; /* > 0 */
} tl_present_frame;

/* Interval histogram: index k counts intervals of round(interval / period)
 * == k periods, for k from 1 to TL_PRESENT_HIST - 2; the last index counts
 * the longer ones. Index 0 is unused (shorter intervals are dropped). */
#define TL_PRESENT_HIST 8

/* A jank is an increase between consecutive intervals of at least one and
 * below this many periods; longer ones are pauses. */
#define TL_PRESENT_PAUSE_PERIODS 20

typedef struct tl_present_stats {
	size_t frames;             /* presented frames, after de-duplication */
	size_t duplicates;         /* frames dropped as repeats of a timestamp */
	int64_t first_ns, last_ns; /* first and last present */
	double fps;                /* (frames - 1) / (last - first); 0 under 2 frames */
	int64_t period_ns;         /* the most frequent period of the frames */
	size_t periods_distinct;   /* how many different periods the frames had */
	size_t intervals;          /* intervals kept (>= half a period) */
	size_t intervals_short;    /* intervals dropped (< half a period) */
	uint64_t jank_count;       /* interval increases of 1..19 periods (rounded) */
	uint64_t pauses;           /* interval increases of 20 periods or more */
	int64_t max_frame_delay;   /* the longest kept interval in periods, rounded */
	int64_t p50_ns, p90_ns, p99_ns, max_ns; /* of the kept intervals */
	uint64_t histogram[TL_PRESENT_HIST];
} tl_present_stats;

/*
 * Sorts frames by present time, merges frames with equal present times
 * (counted as duplicates), and computes the statistics. Each interval is
 * measured in the period of the later frame. Returns 0, -EINVAL for a
 * frame with a period <= 0, -ENOMEM.
 */
int tl_present_stats_compute(tl_present_frame *frames, size_t n, tl_present_stats *out);

/* ---- dumpsys SurfaceFlinger --latency ---------------------------------- */

/* A problem on one line of the input. */
typedef struct tl_sf_issue {
	size_t line; /* 1-based */
	char message[120];
} tl_sf_issue;

#define TL_SF_MAX_ISSUES 16

typedef struct tl_sf_latency {
	tl_present_frame *frames; /* presented rows, in file order (not de-duplicated) */
	size_t nframes;
	size_t dumps;                /* refresh-period lines seen */
	int64_t period_ns;           /* the first dump's */
	uint64_t rows;               /* data rows read (rejected ones included) */
	uint64_t rows_empty;         /* 0 0 0: unused slots of SurfaceFlinger's ring */
	uint64_t rows_pending;       /* actual present INT64_MAX: fence not signalled yet */
	uint64_t rows_not_presented; /* actual present 0 */
	uint64_t rows_rejected;      /* truncated, non-numeric, out of range, extra fields */
	tl_sf_issue issues[TL_SF_MAX_ISSUES]; /* the first rejected rows */
	size_t nissues;
} tl_sf_latency;

/*
 * Parses the text output of `dumpsys SurfaceFlinger --latency <layer>`,
 * possibly several dumps concatenated (each starts with its refresh-period
 * line, after a blank line or at the top). Rows are three integers
 * separated by blanks: desired present, actual present, frame ready.
 * Rows it cannot use are counted and the first TL_SF_MAX_ISSUES are kept.
 * Returns 0 (the caller frees *out with tl_sf_latency_free), -ENOMEM, or
 * -EINVAL with *fatal set: an empty input, a refresh-period line that is
 * not a positive integer, rows with no refresh period before them.
 */
int tl_sf_latency_parse(const char *data, size_t len, tl_sf_latency *out, tl_sf_issue *fatal);

/* Whether data looks like --latency output: its first non-blank line is
 * one integer. */
int tl_sf_latency_sniff(const char *data, size_t len);

void tl_sf_latency_free(tl_sf_latency *lat);

#endif /* TIMELINE_FRAME_STATS_H */
