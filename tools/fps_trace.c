/*
 * `timeline fps` on a trace: the frame slices the frame tracer recorded
 * ("frame <n>", with vsync_ns / period_ns / present_ns arguments where the
 * format keeps arguments), read through the importer from a binary
 * snapshot, Chrome JSON or ftrace text. One series per thread.
 *
 * The trace is read by name, as `timeline slices` reads it: the import
 * hands the frame slices and the period counter's samples on as it reads
 * (tl_import_read_file_to), so memory is the frames, not the trace.
 *
 * A frame's vsync is its vsync_ns argument, else its start (the frame
 * tracer leaves the argument out when the frame started at its vsync; ftrace
 * text keeps no arguments). Its present time is its present_ns argument;
 * without one, the vsync slot it made (vsync + max(1, ceil((end - vsync) /
 * period)) periods). It dropped ceil((end - (vsync + period)) / period)
 * frames when it ended after its deadline. Its period is
 * its period_ns argument, else the last refresh_period_ns counter sample of
 * its process at or before its start, else the median interval between
 * frame ends (flagged as estimated).
 */
#include "tools/fps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/readers/trace_import.h"

#define FPS_PREFIX "timeline fps"
#define PERIOD_COUNTER "refresh_period_ns"

fps_series *fps_series_add(fps_series_list *list)
{
	if (list->count == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 4;
		fps_series *grown = realloc(list->items, cap * sizeof *grown);
		if (!grown)
			return NULL;
		list->items = grown;
		list->cap = cap;
	}
	fps_series *s = &list->items[list->count++];
	memset(s, 0, sizeof *s);
	return s;
}

void fps_series_list_free(fps_series_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		fps_series *s = &list->items[i];
		if (s->latency.frames == s->presents)
			s->presents = NULL;
		free(s->presents);
		free(s->chart_ns);
		tl_sf_latency_free(&s->latency);
	}
	free(list->items);
	memset(list, 0, sizeof *list);
}

bool fps_trace_sniff(const char *data, size_t len)
{
	return tl_trace_format_sniff(data, len) != TL_TRACE_FORMAT_UNKNOWN;
}

/* "frame <digits>" */
static bool is_frame_name(const char *name)
{
	if (!name || strncmp(name, "frame ", 6) != 0 || !name[6])
		return false;
	for (const char *p = name + 6; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* One frame slice and what its arguments say. */
struct trace_frame {
	size_t thread; /* imp->threads index: its tid and pid, known at the end */
	uint32_t tid, pid;
	int64_t start, end;
	int64_t vsync, period, present; /* 0: unknown */
};

static int compare_frames(const void *a, const void *b)
{
	const struct trace_frame *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int64_t arg_int(const tl_json_value *v)
{
	if (v->type == TL_JSON_INT)
		return v->i;
	if (v->type == TL_JSON_DOUBLE)
		return (int64_t)v->d;
	return 0;
}

/* A sample of the period counter. */
struct period_sample {
	int64_t ts;
	double value;
	uint32_t pid; /* 0: any process */
};

/* The last sample of the period counter of pid at or before ts, or 0. */
static int64_t period_at(const struct period_sample *p, size_t n, uint32_t pid, int64_t ts)
{
	int64_t best_ts = INT64_MIN, value = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].ts > ts || p[i].ts < best_ts || (p[i].pid != pid && p[i].pid != 0))
			continue;
		best_ts = p[i].ts;
		value = (int64_t)(p[i].value + 0.5);
	}
	return value;
}

static int64_t median_end_interval(const struct trace_frame *f, size_t n)
{
	if (n < 2)
		return 0;
	int64_t *d = malloc((n - 1) * sizeof *d);
	if (!d)
		return 0;
	for (size_t i = 1; i < n; i++)
		d[i - 1] = f[i].end - f[i - 1].end;
	tl_frame_sort_i64(d, n - 1);
	int64_t median = tl_frame_percentile(d, n - 1, 50);
	free(d);
	return median;
}

/* Fills one series from the frames of one thread. Returns 0 or -ENOMEM. */
static int series_from_frames(fps_series *s, struct trace_frame *f, size_t n)
{
	s->from_trace = true;
	s->slices = n;
	int64_t fallback = 0;
	for (size_t i = 0; i < n; i++)
		if (f[i].period <= 0) {
			fallback = median_end_interval(f, n);
			s->period_estimated = true;
			break;
		}
	if (fallback <= 0)
		fallback = 16666667;
	s->presents = malloc(n * sizeof *s->presents);
	s->chart_ns = malloc(n * sizeof *s->chart_ns);
	int64_t *durations = malloc(n * sizeof *durations);
	if (!s->presents || !s->chart_ns || !durations) {
		free(durations);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t period = f[i].period > 0 ? f[i].period : fallback;
		/* the frame tracer writes vsync_ns only when it differs from the start */
		int64_t vsync = f[i].vsync > 0 ? f[i].vsync : f[i].start;
		int64_t present = f[i].present;
		if (present <= 0) {
			int64_t late = f[i].end - vsync;
			int64_t slots = late > period ? (late + period - 1) / period : 1;
			present = vsync + slots * period;
		}
		int64_t lateness = f[i].end - (vsync + period);
		uint64_t dropped = lateness > 0 ? (uint64_t)((lateness + period - 1) / period) : 0;
		s->dropped_frames += dropped;
		s->janky_frames += dropped != 0;
		s->presents[i] = (tl_present_frame){present, period};
		durations[i] = f[i].end - f[i].start;
		s->chart_ns[i] = durations[i];
	}
	s->npresents = n;
	s->nchart = n;
	tl_frame_sort_i64(durations, n);
	s->duration_p50_ns = tl_frame_percentile(durations, n, 50);
	s->duration_p90_ns = tl_frame_percentile(durations, n, 90);
	s->duration_p99_ns = tl_frame_percentile(durations, n, 99);
	s->duration_max_ns = n ? durations[n - 1] : 0;
	free(durations);
	return tl_present_stats_compute(s->presents, s->npresents, &s->stats);
}

static const char *thread_name(const tl_import *imp, uint32_t tid)
{
	for (size_t i = 0; i < imp->nthreads; i++)
		if (imp->threads[i].tid == tid && imp->threads[i].name)
			return imp->threads[i].name;
	return NULL;
}

/*
 * What fps takes of a trace, handed on by the import as it reads: the
 * frame slices with their args, and the period counter's samples. Memory
 * is the frames, not the trace.
 */
typedef struct frame_sink {
	struct trace_frame *frames;
	size_t nframes, frames_cap;
	struct period_sample *periods;
	size_t nperiods, periods_cap;
} frame_sink;

static int grow(void **a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : 64;
	void *grown = realloc(*a, c * size);
	if (!grown)
		return -ENOMEM;
	*a = grown;
	*cap = c;
	return 0;
}

static int take_frame(void *ctx, const tl_import *imp, const tl_import_slice *sl, uint64_t seq,
                      int64_t thread_ts, int64_t thread_dur, const tl_import_sink_arg *args,
                      size_t nargs)
{
	(void)thread_ts;
	(void)thread_dur;
	frame_sink *fs = ctx;
	if (sl->kind != TL_IMPORT_SLICE || sl->dur < 0 || !is_frame_name(sl->name))
		return 0;
	if (grow((void **)&fs->frames, &fs->frames_cap, fs->nframes, sizeof *fs->frames))
		return -ENOMEM;
	struct trace_frame *f = &fs->frames[fs->nframes++];
	(void)seq;
	if (imp->tracks[sl->track].thread == TL_IMPORT_NONE)
		return 0;
	/* (a systrace thread may learn its process later: tid and pid at the end) */
	*f = (struct trace_frame){
	    .thread = imp->tracks[sl->track].thread, .start = sl->ts, .end = sl->ts + sl->dur};
	for (size_t i = 0; i < nargs; i++) {
		if (strcmp(args[i].key, "args.vsync_ns") == 0)
			f->vsync = arg_int(&args[i].value);
		else if (strcmp(args[i].key, "args.period_ns") == 0)
			f->period = arg_int(&args[i].value);
		else if (strcmp(args[i].key, "args.present_ns") == 0)
			f->present = arg_int(&args[i].value);
	}
	return 0;
}

static int take_period(void *ctx, const tl_import *imp, const tl_import_counter *c, uint64_t seq)
{
	(void)seq;
	frame_sink *fs = ctx;
	const tl_import_track *t = &imp->tracks[c->track];
	if (strcmp(t->name, PERIOD_COUNTER) != 0 && strcmp(t->name, PERIOD_COUNTER " value") != 0)
		return 0;
	if (grow((void **)&fs->periods, &fs->periods_cap, fs->nperiods, sizeof *fs->periods))
		return -ENOMEM;
	fs->periods[fs->nperiods++] = (struct period_sample){c->ts, c->value, t->pid};
	return 0;
}

static void forget_frames(void *ctx)
{
	frame_sink *fs = ctx;
	fs->nframes = fs->nperiods = 0;
}

/* The frames taken, by thread; one series each. */
static int series_from_sink(const char *path, const tl_import *imp, frame_sink *fs,
                            fps_series_list *out)
{
	struct trace_frame *frames = fs->frames;
	size_t n = fs->nframes;
	for (size_t i = 0; i < n; i++) {
		const tl_import_thread *t = &imp->threads[frames[i].thread];
		frames[i].tid = t->tid;
		frames[i].pid = t->pid;
	}
	for (size_t i = 0; i < n; i++)
		if (frames[i].period <= 0)
			frames[i].period =
			    period_at(fs->periods, fs->nperiods, frames[i].pid, frames[i].start);
	if (n)
		qsort(frames, n, sizeof *frames, compare_frames);

	int rc = 0;
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i;
		while (j < n && frames[j].tid == frames[i].tid)
			j++;
		fps_series *s = fps_series_add(out);
		if (!s) {
			rc = -ENOMEM;
			break;
		}
		const char *name = thread_name(imp, frames[i].tid);
		snprintf(s->label, sizeof s->label, "%s: thread %s (tid %u)", path,
		         name ? name : "?", frames[i].tid);
		rc = series_from_frames(s, frames + i, j - i);
		i = j;
	}
	return rc;
}

int fps_read_trace(const char *path, char *data, size_t len, fps_series_list *out)
{
	frame_sink fs = {0};
	tl_import_sink sink = {.ctx = &fs,
	                       .slice = take_frame,
	                       .counter = take_period,
	                       .restart = forget_frames,
	                       .what = "keeping the frames"};
	tl_import imp;
	if (tl_cli_read_import_to(FPS_PREFIX, path, data, len, &sink, NULL, &imp)) {
		free(fs.frames);
		free(fs.periods);
		return 1;
	}
	size_t before = out->count;
	int rc = series_from_sink(path, &imp, &fs, out);
	tl_import_free(&imp);
	free(fs.frames);
	free(fs.periods);
	if (rc < 0) {
		fprintf(stderr, FPS_PREFIX ": %s: %s\n", path, strerror(-rc));
		return 1;
	}
	if (out->count == before) {
		fprintf(stderr, FPS_PREFIX ": %s: no frame slices ('frame <n>') in this trace\n",
		        path);
		return 1;
	}
	return 0;
}
