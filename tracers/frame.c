/*
 * The frame tracer: measures frames, aggregates them per scene and time
 * slice, and emits every frame, counter and report through the timeline API.
 *
 * Per frame (tl_frame_begin + tl_frame_end, the hot path): a BEGIN record
 * named "frame <n>" (held as "frame" and n, spelled out by the snapshot or
 * the direct recorder) and a plain END, both on the recorder's fast path, whose
 * timestamps are the frame's start and end: the emitters hand them back, so
 * the clock is read once per edge, inside the emit. Then integer math and a
 * store into the scene's frame-time array; the janky-frame instant, the
 * real-time counters (once per window) and the reports (once per slice) are
 * off the common path. A frame with a vsync argument, a period change, or
 * the category off at its begin takes a slower path (the clock read apart,
 * the general emitter); tl_frame_record and looper frames are COMPLETE
 * records with their own timestamps. No lock unless a scene change is
 * pending; no allocation unless a frame-time array grows.
 *
 * Timestamps: the recorder stores raw tl_timestamp values (TSC ticks on
 * machines where the library uses the TSC). The tracer turns the raw value
 * of each frame edge into nanoseconds with the tracer interface's clock map
 * (tl_clock_map, recorder/tracer.h), re-centred once a second at a
 * real-time window's end, and maps caller-supplied nanoseconds back into
 * raw values for tl_frame_record. The core is reached only through the
 * public API and that interface.
 */
#include <timeline/frame.h>
#include <timeline/looper.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/tracer.h"
#include "tracers/decimal.h"
#include "tracers/frame_stats.h"

#define DEFAULT_RATE_HZ 60.0
#define DEFAULT_SLICE_NS (10 * 1000000000LL)
#define DEFAULT_WINDOW_NS (200 * 1000000LL)
#define DEFAULT_MIN_FRAMES 10
#define DEFAULT_SCENE "default"
#define DEFAULT_CATEGORY "frame"
/* Frame slices are named FRAME_NAME, a space and the frame's number. */
#define FRAME_NAME "frame"
#define MAX_SCENES 16
/* How often the map is re-centred. */
#define MAP_REFRESH_NS 1000000000LL

static const unsigned default_thresholds[TL_FRAME_BUCKET_COUNT] = {0, 3, 9, 24, 42};

static const char *const bucket_names[TL_FRAME_BUCKET_COUNT] = {
    "DROPPED_BEST", "DROPPED_NORMAL", "DROPPED_MIDDLE", "DROPPED_HIGH", "DROPPED_FROZEN",
};

/* One scene's current time slice. */
struct scene_slice {
	char name[TL_FRAME_SCENE_MAX + 1];
	bool used;
	/* tracer's use counter when it last got a frame or became current: for
	 * the scenes not current, set when they stop being current (the same
	 * order as their last frames) */
	uint64_t last_use;
	uint64_t frames;
	int64_t wall_ns;
	int64_t begin_ns, end_ns;
	/* the raw end of its last frame when tl_frame_end's fast path left
	 * end_ns to convert (slice_settle_end); 0 when end_ns is current */
	uint64_t end_raw;
	uint64_t dropped;
	uint64_t bucket_frames[TL_FRAME_BUCKET_COUNT];
	uint64_t bucket_dropped[TL_FRAME_BUCKET_COUNT];
	uint64_t janky;
	int64_t max_ns; /* of the frames tl_frame_end's fast path did not take */
	int64_t min_period_ns;
	unsigned nperiods;
	int64_t periods_ns[TL_FRAME_MAX_RATES];
	/* Frame times of this slice: durations..cur, room up to end. The fast
	 * path of tl_frame_end stores a frame's time as its raw span, negated,
	 * converted from index `settled` on by slice_settle. */
	int64_t *durations;
	int64_t *cur, *end;
	size_t settled;
};

struct tl_frame_tracer {
	/* options */
	unsigned thresholds[TL_FRAME_BUCKET_COUNT]; /* index = bucket; [0] unused */
	int64_t slice_ns;
	unsigned min_frames;
	int64_t window_ns;
	tl_frame_report_fn report;
	void *report_user;
	tl_category *cat;

	/* any thread */
	_Atomic int64_t period_ns;
	atomic_int scene_pending;
	pthread_mutex_t scene_lock;
	char pending_scene[TL_FRAME_SCENE_MAX + 1];

	/* frame thread */
	tl_clock_map map; /* raw timestamps to ns (tracer.h) */
	bool open;
	/* the open frame's start (raw) and the session its BEGIN is in, if
	 * it was recorded */
	tl_tracer_where open_begin;
	int64_t open_vsync_ns; /* as passed: <= 0 for none */
	int64_t open_period_ns;
	int64_t emitted_period_ns;
	/* "frame <n>" for n = name_number, for the events with arguments (the
	 * fast path records "frame" and n, tl_tracer_begin_numbered) */
	char name[32];
	uint64_t name_number;
	struct scene_slice scenes[MAX_SCENES];
	struct scene_slice *current;
	uint64_t use_counter;
	uint64_t window_first; /* stats.frames before the window's first frame */
	int64_t window_wall_ns;
	uint64_t window_dropped;
	int64_t window_min_period_ns; /* meaningful when the window has frames */
	/* The on-time fast path of tl_frame_end: a frame of period fast_period
	 * (0: none) with no vsync, in the trace, on time, no scene pending,
	 * before fast_stop, only stores its time at fast_cur and counts (and
	 * closes a window at fast_window); everything else takes
	 * frame_account. The frames from fast_base to fast_cur are added to
	 * the current slice and window by fast_fold, before anything reads
	 * them. */
	int64_t fast_period;
	uint64_t fast_period_raw;      /* the longest raw span that is on time at fast_period */
	int64_t *fast_base, *fast_cur; /* in the current slice's durations */
	int64_t *fast_stop;            /* the slice closes or its durations fill there */
	int64_t *fast_window;          /* the window closes when fast_cur reaches it */
	uint64_t fast_end_raw;         /* the raw end of the last fast frame */
	int64_t cap_period_ns;         /* window_close's fps cap: 1e9 / cap_period_ns */
	double cap_fps;
	bool have_last;
	tl_frame_info last;
	/* last's raw span when the fast path measured it (its duration and
	 * lateness are then left to last_get), else 0 */
	uint64_t last_span_raw;
	tl_frame_stats stats;
	tl_looper *looper;
};

const char *tl_frame_bucket_name(tl_frame_bucket bucket)
{
	if ((unsigned)bucket >= TL_FRAME_BUCKET_COUNT)
		return NULL;
	return bucket_names[bucket];
}

/* ---- scenes -------------------------------------------------------------- */

static void slice_reset(struct scene_slice *s)
{
	s->frames = 0;
	s->wall_ns = 0;
	s->begin_ns = s->end_ns = 0;
	s->end_raw = 0;
	s->dropped = 0;
	memset(s->bucket_frames, 0, sizeof s->bucket_frames);
	memset(s->bucket_dropped, 0, sizeof s->bucket_dropped);
	s->janky = 0;
	s->max_ns = 0;
	s->min_period_ns = 0;
	s->nperiods = 0;
	s->cur = s->durations;
	s->settled = 0;
}

/* Converts what the fast path of tl_frame_end left raw (the end, the frame
 * times) with the map they were taken under: called before the map
 * changes kind and before they are read. */
static void slice_settle(const tl_frame_tracer *ft, struct scene_slice *s)
{
	if (s->end_raw) {
		s->end_ns = tl_clock_map_ns(&ft->map, s->end_raw);
		s->end_raw = 0;
	}
	size_t n = (size_t)(s->cur - s->durations);
	for (size_t i = s->settled; i < n; i++)
		if (s->durations[i] < 0)
			s->durations[i] =
			    tl_clock_map_span_ns(&ft->map, (uint64_t)-s->durations[i]);
	s->settled = n;
}

/*
 * Adds the frames the fast path stored since the last fold to the current
 * slice and window (their count, wall time, end and the last frame's span):
 * called before anything reads those, or changes the slice. Frame thread.
 */
static void fast_fold(tl_frame_tracer *ft)
{
	size_t n = (size_t)(ft->fast_cur - ft->fast_base);
	if (n == 0)
		return;
	struct scene_slice *s = ft->current;
	int64_t wall = (int64_t)n * ft->fast_period;
	s->cur = ft->fast_cur;
	s->frames += n;
	s->wall_ns += wall;
	s->end_raw = ft->fast_end_raw;
	ft->window_wall_ns += wall;
	ft->last_span_raw = (uint64_t)-ft->fast_cur[-1];
	ft->fast_base = ft->fast_cur;
}

/* Folds and turns the fast path off until the next frame_account. */
static void fast_stop(tl_frame_tracer *ft)
{
	fast_fold(ft);
	ft->fast_period = 0;
}

/* A session may have started (and chosen another clock) since the last
 * frame: the map is then made again, after what was measured under the
 * old one is converted with it. */
static inline void map_check(tl_frame_tracer *ft)
{
	if (__builtin_expect(!tl_clock_map_current(&ft->map), 0)) {
		fast_fold(ft);
		slice_settle(ft, ft->current);
		tl_clock_map_init(&ft->map);
		ft->fast_period = 0; /* its raw span is of the old map */
	}
}

static void emit_report_event(tl_frame_tracer *ft, const tl_frame_report *r)
{
	if (!tl_category_enabled(ft->cat))
		return;
	tl_arg args[4] = {
	    {.key = "scene", .type = TL_ARG_STRING_COPY, .value.s = r->scene},
	    {.key = "fps", .type = TL_ARG_DOUBLE, .value.d = r->fps},
	    {.key = "frames", .type = TL_ARG_UINT, .value.u = r->frames},
	    {.key = "dropped_frames", .type = TL_ARG_UINT, .value.u = r->dropped_frames},
	};
	tl_emit(ft->cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "frame report", 0, 0, args, 4);
}

/* The largest of m and d[0..end), four at a time. */
static int64_t durations_max(const int64_t *d, const int64_t *end, int64_t m)
{
	int64_t m0 = m, m1 = m, m2 = m, m3 = m;
	for (; end - d >= 4; d += 4) {
		m0 = d[0] > m0 ? d[0] : m0;
		m1 = d[1] > m1 ? d[1] : m1;
		m2 = d[2] > m2 ? d[2] : m2;
		m3 = d[3] > m3 ? d[3] : m3;
	}
	for (; d < end; d++)
		m0 = *d > m0 ? *d : m0;
	m0 = m1 > m0 ? m1 : m0;
	m2 = m3 > m2 ? m3 : m2;
	return m2 > m0 ? m2 : m0;
}

/* Reports s (when it holds enough frames, or is full) and resets it. */
static void slice_close(tl_frame_tracer *ft, struct scene_slice *s, bool partial)
{
	if (s->frames == 0)
		return;
	if (partial && s->frames < ft->min_frames) {
		ft->stats.reports_skipped++;
		slice_reset(s);
		return;
	}
	slice_settle(ft, s);
	tl_frame_report r = {.struct_size = sizeof r};
	r.scene = s->name;
	r.partial = partial;
	r.frames = s->frames;
	r.wall_ns = s->wall_ns;
	r.begin_ns = s->begin_ns;
	r.end_ns = s->end_ns;
	r.fps = s->wall_ns > 0 ? (double)s->frames * 1e9 / (double)s->wall_ns : 0;
	double cap = s->min_period_ns > 0 ? 1e9 / (double)s->min_period_ns : 0;
	if (cap > 0 && r.fps > cap)
		r.fps = cap;
	r.dropped_frames = s->dropped;
	memcpy(r.bucket_frames, s->bucket_frames, sizeof r.bucket_frames);
	/* frames not late enough for another bucket are the best bucket's */
	uint64_t others = 0;
	for (int b = TL_FRAME_BEST + 1; b < TL_FRAME_BUCKET_COUNT; b++)
		others += s->bucket_frames[b];
	r.bucket_frames[TL_FRAME_BEST] = s->frames - others;
	memcpy(r.bucket_dropped, s->bucket_dropped, sizeof r.bucket_dropped);
	r.janky_frames = s->janky;
	static const unsigned pcts[4] = {50, 90, 95, 99};
	int64_t values[4];
	tl_frame_percentiles(s->durations, (size_t)(s->cur - s->durations), pcts, 4, values);
	r.p50_ns = values[0];
	r.p90_ns = values[1];
	r.p95_ns = values[2];
	r.p99_ns = values[3];
	/* the fast path of tl_frame_end leaves its frames' maximum to the
	 * stored durations */
	r.max_ns = durations_max(s->durations, s->cur, s->max_ns);
	r.nperiods = s->nperiods;
	memcpy(r.periods_ns, s->periods_ns, sizeof r.periods_ns);

	ft->stats.reports++;
	emit_report_event(ft, &r);
	if (ft->report)
		ft->report(&r, ft->report_user);
	slice_reset(s);
}

static void scene_set_name(struct scene_slice *s, const char *name)
{
	size_t len = strnlen(name, TL_FRAME_SCENE_MAX);
	memcpy(s->name, name, len);
	s->name[len] = '\0';
}

/* The slot for a scene: its own, a free one, or the least recently used
 * one, whose partial slice is closed first. */
static struct scene_slice *scene_find(tl_frame_tracer *ft, const char *name)
{
	struct scene_slice *free_slot = NULL, *oldest = NULL;
	for (size_t i = 0; i < MAX_SCENES; i++) {
		struct scene_slice *s = &ft->scenes[i];
		if (!s->used) {
			if (!free_slot)
				free_slot = s;
			continue;
		}
		if (strncmp(s->name, name, TL_FRAME_SCENE_MAX) == 0)
			return s;
		if (s != ft->current && (!oldest || s->last_use < oldest->last_use))
			oldest = s;
	}
	struct scene_slice *s = free_slot;
	if (!s) {
		s = oldest;
		slice_close(ft, s, true);
	}
	s->used = true;
	scene_set_name(s, name);
	slice_reset(s);
	return s;
}

static void scene_switch(tl_frame_tracer *ft, const char *name)
{
	slice_settle(ft, ft->current);
	ft->current->last_use = ++ft->use_counter; /* its last use as current */
	ft->current = scene_find(ft, name);
	ft->current->last_use = ++ft->use_counter;
	if (tl_category_enabled(ft->cat)) {
		tl_arg arg = {.key = "name", .type = TL_ARG_STRING_COPY, .value.s = name};
		tl_emit(ft->cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "scene", 0, 0, &arg, 1);
	}
}

/* Takes a scene change posted by tl_frame_set_scene (any thread). */
static void scene_take_pending(tl_frame_tracer *ft)
{
	char name[TL_FRAME_SCENE_MAX + 1];
	pthread_mutex_lock(&ft->scene_lock);
	memcpy(name, ft->pending_scene, sizeof name);
	atomic_store_explicit(&ft->scene_pending, 0, memory_order_relaxed);
	pthread_mutex_unlock(&ft->scene_lock);
	scene_switch(ft, name);
}

static void slice_add_period(struct scene_slice *s, int64_t period_ns)
{
	if (s->min_period_ns == 0 || period_ns < s->min_period_ns)
		s->min_period_ns = period_ns;
	for (unsigned i = 0; i < s->nperiods; i++)
		if (s->periods_ns[i] == period_ns)
			return;
	if (s->nperiods < TL_FRAME_MAX_RATES)
		s->periods_ns[s->nperiods++] = period_ns;
}

/* Room for one more frame time; false when out of memory (the percentiles
 * then cover the frames stored). */
static __attribute__((noinline)) bool slice_grow(struct scene_slice *s)
{
	size_t n = (size_t)(s->cur - s->durations), room = (size_t)(s->end - s->durations);
	size_t cap = room ? 2 * room : 1024;
	int64_t *grown = realloc(s->durations, cap * sizeof *grown);
	if (!grown)
		return false;
	s->durations = grown;
	s->cur = grown + n;
	s->end = grown + cap;
	return true;
}

static inline void slice_store_duration(struct scene_slice *s, int64_t duration)
{
	if (__builtin_expect(s->cur == s->end, 0) && !slice_grow(s))
		return;
	*s->cur++ = duration;
}

/* ---- measuring ----------------------------------------------------------- */

static tl_frame_bucket bucket_of(const tl_frame_tracer *ft, uint64_t dropped)
{
	for (int b = TL_FRAME_FROZEN; b > TL_FRAME_BEST; b--)
		if (dropped >= ft->thresholds[b])
			return (tl_frame_bucket)b;
	return TL_FRAME_BEST;
}

/* Makes ft->name "frame <n>". */
static void name_set(tl_frame_tracer *ft, uint64_t n)
{
	if (n == ft->name_number && ft->name[0])
		return;
	char digits[24];
	size_t len = tracer_decimal_u64(digits, n);
	memcpy(ft->name, FRAME_NAME " ", sizeof FRAME_NAME);
	memcpy(ft->name + sizeof FRAME_NAME, digits, len);
	ft->name[sizeof FRAME_NAME + len] = '\0';
	ft->name_number = n;
}

static void emit_janky(tl_frame_tracer *ft, const tl_frame_info *info, uint64_t raw_end)
{
	tl_arg args[4] = {
	    {.key = "frame", .type = TL_ARG_UINT, .value.u = info->number},
	    {.key = "dropped", .type = TL_ARG_UINT, .value.u = info->dropped},
	    {.key = "lateness_ns", .type = TL_ARG_INT, .value.i = info->lateness_ns},
	    {.key = "bucket", .type = TL_ARG_STRING, .value.s = bucket_names[info->bucket]},
	};
	tl_emit(ft->cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_THREAD, "janky frame", 0, raw_end, args,
	        4);
}

static __attribute__((noinline)) void window_close(tl_frame_tracer *ft, uint64_t raw_end)
{
	double fps =
	    (double)(ft->stats.frames - ft->window_first) * 1e9 / (double)ft->window_wall_ns;
	if (ft->window_min_period_ns != ft->cap_period_ns) {
		ft->cap_period_ns = ft->window_min_period_ns;
		ft->cap_fps = 1e9 / (double)ft->window_min_period_ns;
	}
	double cap = ft->cap_fps;
	if (fps > cap)
		fps = cap;
	if (tl_category_enabled(ft->cat)) {
		uint64_t bits;
		memcpy(&bits, &fps, sizeof bits);
		tl_emit(ft->cat, TL_PHASE_COUNTER, TL_EVENT_COUNTER_DOUBLE, "fps", bits, raw_end,
		        NULL, 0);
		tl_emit(ft->cat, TL_PHASE_COUNTER, 0, "dropped_frames",
		        (uint64_t)ft->window_dropped, raw_end, NULL, 0);
		/* again, so that a wrapped ring still says the period */
		tl_emit(ft->cat, TL_PHASE_COUNTER, 0, "refresh_period_ns",
		        (uint64_t)ft->emitted_period_ns, raw_end, NULL, 0);
	}
	ft->window_first = ft->stats.frames;
	ft->window_wall_ns = 0;
	ft->window_dropped = 0;
	ft->window_min_period_ns = 0;
	/* the map drifts by parts per million: re-centre it once a second */
	if (tl_clock_map_ns(&ft->map, raw_end) - ft->map.base_ns >= MAP_REFRESH_NS) {
		slice_settle(ft, ft->current);
		tl_clock_map_refresh(&ft->map);
		if (ft->fast_period)
			ft->fast_period_raw = tl_clock_map_span_raw_max(&ft->map, ft->fast_period);
	}
}

/* The refresh_period_ns counter, at the first frame and when it changes. */
static void emit_period(tl_frame_tracer *ft, int64_t period_ns, uint64_t raw)
{
	if (__builtin_expect(period_ns != ft->emitted_period_ns, 0)) {
		tl_emit(ft->cat, TL_PHASE_COUNTER, 0, "refresh_period_ns", (uint64_t)period_ns, raw,
		        NULL, 0);
		ft->emitted_period_ns = period_ns;
	}
}

/*
 * The frame as one COMPLETE slice "frame <n>" (the category enabled): the
 * frames of tl_frame_record and the looper, and begin/end frames whose
 * BEGIN is not in the trace. The period counter comes first. The vsync
 * and present time are arguments only when they say something: no
 * vsync_ns means the frame started at its vsync.
 */
static void emit_complete(tl_frame_tracer *ft, int64_t vsync_ns, int64_t start_ns,
                          int64_t present_ns, int64_t period_ns, uint64_t raw_start,
                          uint64_t raw_end)
{
	emit_period(ft, period_ns, raw_start);
	tl_arg args[2];
	unsigned nargs = 0;
	if (vsync_ns != start_ns)
		args[nargs++] =
		    (tl_arg){.key = "vsync_ns", .type = TL_ARG_INT, .value.i = vsync_ns};
	if (present_ns > 0)
		args[nargs++] =
		    (tl_arg){.key = "present_ns", .type = TL_ARG_INT, .value.i = present_ns};
	name_set(ft, ft->stats.frames + 1);
	tl_emit(ft->cat, TL_PHASE_COMPLETE, TL_EVENT_COPY_NAME, ft->name, raw_end, raw_start, args,
	        nargs);
}

/* A late frame: its dropped frames and bucket, counted in the tracer, the
 * slice s and the window; the janky-frame instant. Returns its wall time
 * with frames. */
static __attribute__((noinline)) int64_t frame_late(tl_frame_tracer *ft, tl_frame_info *info,
                                                    struct scene_slice *s, uint64_t raw_end)
{
	uint64_t dropped = (uint64_t)((info->lateness_ns + info->period_ns - 1) / info->period_ns);
	info->dropped = dropped;
	info->bucket = bucket_of(ft, dropped);
	ft->stats.dropped_frames += dropped;
	ft->stats.janky_frames++;
	if (tl_category_enabled(ft->cat))
		emit_janky(ft, info, raw_end);
	/* the best bucket's count is what the others leave of frames */
	s->bucket_frames[info->bucket]++;
	s->bucket_dropped[info->bucket] += dropped;
	s->dropped += dropped;
	s->janky++;
	ft->window_dropped += dropped;
	return (int64_t)(dropped + 1) * info->period_ns;
}

/* Frames of period_ns until a wall time of `left` is reached: the smallest
 * n >= 1 with n * period_ns >= left. */
static int64_t frames_to(int64_t left, int64_t period_ns)
{
	return left <= period_ns ? 1 : (left + period_ns - 1) / period_ns;
}

/* Where the fast path stops (the slice is folded): the frame that brings
 * the slice's wall time to slice_ns goes to frame_account, which closes
 * the slice, and so does a frame with no room left in the durations. */
static int64_t *fast_stop_at(const tl_frame_tracer *ft, int64_t period_ns)
{
	const struct scene_slice *s = ft->current;
	int64_t fast = frames_to(ft->slice_ns - s->wall_ns, period_ns) - 1;
	int64_t room = s->end - s->cur;
	return s->cur + (fast < room ? fast : room);
}

/* Where the window closes (the window is folded): at the frame that brings
 * its wall time to window_ns. */
static int64_t *fast_window_at(const tl_frame_tracer *ft, int64_t period_ns)
{
	return ft->fast_cur + frames_to(ft->window_ns - ft->window_wall_ns, period_ns);
}

/* Sets up the fast path of tl_frame_end for frames of the period of the
 * frame just accounted, when that frame was on time and the slice and
 * window already hold that period. */
static void fast_setup(tl_frame_tracer *ft, int64_t period_ns)
{
	const struct scene_slice *s = ft->current;
	ft->fast_period = 0;
	if (ft->last.dropped != 0 || s->frames == 0 || s->nperiods == 0 ||
	    s->min_period_ns != period_ns)
		return;
	if (ft->stats.frames == ft->window_first)
		ft->window_min_period_ns = period_ns; /* what the next frame sets */
	else if (ft->window_min_period_ns > period_ns)
		return;
	ft->fast_base = ft->fast_cur = s->cur;
	ft->fast_stop = fast_stop_at(ft, period_ns);
	ft->fast_window = fast_window_at(ft, period_ns);
	ft->fast_period = period_ns;
	ft->fast_period_raw = tl_clock_map_span_raw_max(&ft->map, period_ns);
}

/*
 * Measures and aggregates one frame (its events are emitted by the
 * caller); may emit the janky-frame instant, the window's counters and a
 * report. raw_end is the recorder timestamp of end_ns.
 */
static __attribute__((noinline)) void frame_account(tl_frame_tracer *ft, int64_t vsync_ns,
                                                    int64_t start_ns, int64_t end_ns,
                                                    int64_t period_ns, uint64_t raw_end)
{
	tl_frame_info *info = &ft->last;
	struct scene_slice *s = ft->current;
	ft->last_span_raw = 0;
	info->number = ft->stats.frames + 1;
	info->duration_ns = end_ns - start_ns;
	info->period_ns = period_ns;
	info->lateness_ns = end_ns - (vsync_ns + period_ns);
	/* on time: no dropped frame, the best bucket (the normal threshold is
	 * >= 1), a wall time of one period */
	info->dropped = 0;
	info->bucket = TL_FRAME_BEST;
	ft->have_last = true;
	ft->stats.frames++;
	if (s->frames == 0)
		s->begin_ns = start_ns;
	s->end_ns = end_ns;
	s->end_raw = 0;
	s->frames++;
	int64_t wall = period_ns;
	if (__builtin_expect(info->lateness_ns > 0, 0))
		wall = frame_late(ft, info, s, raw_end);
	s->wall_ns += wall;
	if (info->duration_ns > s->max_ns)
		s->max_ns = info->duration_ns;
	if (__builtin_expect(period_ns != s->min_period_ns, 0) || s->nperiods == 0)
		slice_add_period(s, period_ns);
	slice_store_duration(s, info->duration_ns);

	/* (stats.frames counts this frame already) */
	if (ft->stats.frames - 1 == ft->window_first || period_ns < ft->window_min_period_ns)
		ft->window_min_period_ns = period_ns;
	ft->window_wall_ns += wall;
	if (__builtin_expect(ft->window_wall_ns >= ft->window_ns, 0))
		window_close(ft, raw_end);

	if (__builtin_expect(s->wall_ns >= ft->slice_ns, 0))
		slice_close(ft, s, false);
	fast_setup(ft, period_ns);
}

/* A frame with all its timestamps (tl_frame_record, the looper): one
 * COMPLETE record. raw_start/raw_end are the recorder timestamps of
 * start_ns/end_ns. */
static void frame_commit(tl_frame_tracer *ft, int64_t vsync_ns, int64_t start_ns, int64_t end_ns,
                         int64_t present_ns, int64_t period_ns, uint64_t raw_start,
                         uint64_t raw_end)
{
	fast_stop(ft);
	if (__builtin_expect(atomic_load_explicit(&ft->scene_pending, memory_order_relaxed), 0))
		scene_take_pending(ft);
	if (tl_category_enabled(ft->cat))
		emit_complete(ft, vsync_ns, start_ns, present_ns, period_ns, raw_start, raw_end);
	frame_account(ft, vsync_ns, start_ns, end_ns, period_ns, raw_end);
}

/* Whether the open frame's BEGIN is in the trace of the session running
 * now: its END then closes it. */
static inline bool open_in_trace(const tl_frame_tracer *ft)
{
	return ft->open_begin.session != 0 && tl_tracer_session() == ft->open_begin.session;
}

/* ---- public API ------------------------------------------------------------ */

static bool thresholds_valid(const unsigned *t)
{
	return t[TL_FRAME_NORMAL] >= 1 && t[TL_FRAME_MIDDLE] > t[TL_FRAME_NORMAL] &&
	       t[TL_FRAME_HIGH] > t[TL_FRAME_MIDDLE] && t[TL_FRAME_FROZEN] > t[TL_FRAME_HIGH];
}

tl_frame_tracer *tl_frame_tracer_create(const tl_frame_options *opts)
{
	tl_frame_options o = {0};
	if (opts) {
		if (opts->struct_size < offsetof(tl_frame_options, frozen_threshold)) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
	}
	int64_t period = o.refresh_period_ns;
	if (period == 0) {
		double hz = o.refresh_rate_hz != 0 ? o.refresh_rate_hz : DEFAULT_RATE_HZ;
		if (!(hz >= 1e-3) || hz > 1e9) {
			errno = EINVAL;
			return NULL;
		}
		period = tl_frame_round(1e9 / hz);
	}
	unsigned thresholds[TL_FRAME_BUCKET_COUNT];
	memcpy(thresholds, default_thresholds, sizeof thresholds);
	if (o.frozen_threshold)
		thresholds[TL_FRAME_FROZEN] = o.frozen_threshold;
	if (o.high_threshold)
		thresholds[TL_FRAME_HIGH] = o.high_threshold;
	if (o.middle_threshold)
		thresholds[TL_FRAME_MIDDLE] = o.middle_threshold;
	if (o.normal_threshold)
		thresholds[TL_FRAME_NORMAL] = o.normal_threshold;
	if (period <= 0 || !thresholds_valid(thresholds) || o.report_slice_ns < 0 ||
	    o.realtime_window_ns < 0) {
		errno = EINVAL;
		return NULL;
	}

	tl_frame_tracer *ft = calloc(1, sizeof *ft);
	if (!ft) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(ft->thresholds, thresholds, sizeof thresholds);
	ft->slice_ns = o.report_slice_ns ? o.report_slice_ns : DEFAULT_SLICE_NS;
	ft->min_frames = o.report_min_frames ? o.report_min_frames : DEFAULT_MIN_FRAMES;
	ft->window_ns = o.realtime_window_ns ? o.realtime_window_ns : DEFAULT_WINDOW_NS;
	ft->report = o.report;
	ft->report_user = o.report_user;
	ft->cat = tl_category_get(o.category ? o.category : DEFAULT_CATEGORY);
	atomic_init(&ft->period_ns, period);
	atomic_init(&ft->scene_pending, 0);
	pthread_mutex_init(&ft->scene_lock, NULL);
	ft->stats.struct_size = sizeof ft->stats;
	tl_clock_map_init(&ft->map);
	ft->current = scene_find(ft, o.scene ? o.scene : DEFAULT_SCENE);
	name_set(ft, 0);
	return ft;
}

void tl_frame_tracer_flush(tl_frame_tracer *ft)
{
	if (!ft)
		return;
	fast_stop(ft); /* the current slice starts again */
	for (size_t i = 0; i < MAX_SCENES; i++)
		if (ft->scenes[i].used)
			slice_close(ft, &ft->scenes[i], true);
}

void tl_frame_tracer_destroy(tl_frame_tracer *ft)
{
	if (!ft)
		return;
	if (ft->looper)
		tl_frame_tracer_detach_looper(ft);
	if (ft->open && open_in_trace(ft))
		tl_tracer_end(ft->cat); /* the open frame's slice ends here */
	tl_frame_tracer_flush(ft);
	for (size_t i = 0; i < MAX_SCENES; i++)
		free(ft->scenes[i].durations);
	pthread_mutex_destroy(&ft->scene_lock);
	free(ft);
}

/* A begin while a frame is open: the open frame is not measured; its slice,
 * when recorded, ends here. */
static __attribute__((noinline)) void frame_abandon(tl_frame_tracer *ft)
{
	ft->stats.abandoned++;
	if (open_in_trace(ft))
		tl_tracer_end(ft->cat);
	ft->open = false;
}

/*
 * tl_frame_begin off the fast path: a vsync (an argument, which needs the
 * start time first), a period to emit, the category off. Sets open_begin.
 */
static __attribute__((noinline)) void frame_begin_slow(tl_frame_tracer *ft, int64_t vsync_ns,
                                                       int64_t period_ns)
{
	uint64_t raw = tl_now();
	ft->open_begin.ts = raw;
	ft->open_begin.session = 0;
	if (!tl_category_enabled(ft->cat))
		return;
	emit_period(ft, period_ns, raw);
	tl_arg arg = {.key = "vsync_ns", .type = TL_ARG_INT, .value.i = vsync_ns};
	unsigned nargs = vsync_ns > 0 && vsync_ns != tl_clock_map_ns(&ft->map, raw);
	name_set(ft, ft->stats.frames + 1);
	if (tl_tracer_emit(ft->cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, ft->name, 0, raw, &arg,
	                 nargs) != 0)
		ft->open_begin.session = tl_tracer_session();
}

/* Everything is set before the BEGIN is emitted, so that the emit, which
 * says where the frame's start went, is the last call. */
void tl_frame_begin(tl_frame_tracer *ft, int64_t vsync_ns)
{
	map_check(ft);
	if (__builtin_expect(ft->open, 0))
		frame_abandon(ft);
	int64_t period = atomic_load_explicit(&ft->period_ns, memory_order_relaxed);
	/* stored only when they change: a frame stores enough as it is */
	ft->open = true;
	if (ft->open_vsync_ns != vsync_ns)
		ft->open_vsync_ns = vsync_ns;
	if (ft->open_period_ns != period)
		ft->open_period_ns = period;
	if (__builtin_expect(vsync_ns <= 0 && period == ft->emitted_period_ns &&
	                         tl_category_enabled(ft->cat),
	                     1)) {
		/* "frame <n>" is spelled out by the snapshot (or the direct
		 * recorder): the record holds "frame" and n */
		tl_tracer_begin_numbered(ft->cat, FRAME_NAME, ft->stats.frames + 1,
		                            &ft->open_begin);
		return;
	}
	frame_begin_slow(ft, vsync_ns, period);
}

/* A window closed by a frame of the fast path: the next window's minimum
 * period is the fast one (the next frame sets it), and the next window
 * closes ceil(window_ns / period) fast frames later. */
static __attribute__((noinline)) void window_close_fast(tl_frame_tracer *ft, uint64_t raw_end,
                                                        int64_t period_ns)
{
	fast_fold(ft);
	window_close(ft, raw_end);
	ft->window_min_period_ns = period_ns;
	ft->fast_window = fast_window_at(ft, period_ns);
}

/* tl_frame_end past the fast path: anything but an on-time frame of the
 * current period whose slice goes on. */
static __attribute__((noinline)) void frame_end_slow(tl_frame_tracer *ft, bool in_trace,
                                                     uint64_t raw)
{
	fast_stop(ft);
	int64_t start_ns = tl_clock_map_ns(&ft->map, ft->open_begin.ts);
	int64_t duration = tl_clock_map_span_ns(&ft->map, raw - ft->open_begin.ts);
	int64_t end_ns = start_ns + (duration > 0 ? duration : 0);
	int64_t vsync_ns = ft->open_vsync_ns > 0 ? ft->open_vsync_ns : start_ns;
	if (__builtin_expect(atomic_load_explicit(&ft->scene_pending, memory_order_relaxed), 0))
		scene_take_pending(ft);
	/* the BEGIN missed the trace (category off then, a new session): the
	 * frame is one COMPLETE slice, as tl_frame_record's */
	if (__builtin_expect(!in_trace, 0) && tl_category_enabled(ft->cat))
		emit_complete(ft, vsync_ns, start_ns, 0, ft->open_period_ns, ft->open_begin.ts,
		              raw);
	frame_account(ft, vsync_ns, start_ns, end_ns, ft->open_period_ns, raw);
}

/* tl_frame_end with no frame open, or one whose BEGIN is not in the trace. */
static __attribute__((noinline)) void frame_end_untraced(tl_frame_tracer *ft)
{
	if (!ft->open) {
		ft->stats.unmatched_ends++;
		return;
	}
	ft->open = false;
	frame_end_slow(ft, false, tl_now());
}

void tl_frame_end(tl_frame_tracer *ft)
{
	if (__builtin_expect(!ft->open || !open_in_trace(ft), 0)) {
		frame_end_untraced(ft);
		return;
	}
	ft->open = false;
	uint64_t raw = tl_tracer_end(ft->cat);
	if (__builtin_expect(!raw, 0)) {
		frame_end_slow(ft, true, tl_now());
		return;
	}
	/* The frame's time stays a raw span here: nothing that follows the
	 * clock read waits on a conversion (the next frame's clock read would
	 * wait for it); slice_settle and last_get convert it when read. */
	uint64_t span = raw - ft->open_begin.ts;
	int64_t period = ft->open_period_ns;
	int64_t *cur = ft->fast_cur;
	/* one test for all rare work but a window's end: a late frame (or a
	 * clock gone back), a vsync, another period, a slice boundary or full
	 * durations, a pending scene */
	if (__builtin_expect(((ft->open_vsync_ns <= 0) & (period == ft->fast_period) &
	                      (span <= ft->fast_period_raw) & (cur < ft->fast_stop) &
	                      !atomic_load_explicit(&ft->scene_pending, memory_order_relaxed)) != 0,
	                     1)) {
		/* on time: dropped 0, the best bucket, a wall time of one period;
		 * the period is already the slice's and window's. The slice and
		 * the window learn of it at the next fold. */
		ft->stats.frames++;
		*cur++ = -(int64_t)span;
		ft->fast_cur = cur;
		ft->fast_end_raw = raw;
		if (__builtin_expect(cur == ft->fast_window, 0))
			window_close_fast(ft, raw, period);
		return;
	}
	frame_end_slow(ft, true, raw);
}

/* The last frame's info; the fast path of tl_frame_end leaves its number
 * to stats.frames. */
static void last_get(const tl_frame_tracer *ft, tl_frame_info *info)
{
	*info = ft->last;
	info->number = ft->stats.frames;
	/* the last fast frame, folded or not */
	uint64_t span =
	    ft->fast_cur != ft->fast_base ? (uint64_t)-ft->fast_cur[-1] : ft->last_span_raw;
	if (span) {
		info->duration_ns = tl_clock_map_span_ns(&ft->map, span);
		info->lateness_ns = info->duration_ns - info->period_ns;
	}
}

int tl_frame_record(tl_frame_tracer *ft, const tl_frame_times *t, tl_frame_info *info)
{
	if (!ft)
		return -EINVAL;
	if (!t || t->struct_size < offsetof(tl_frame_times, present_ns) ||
	    t->end_ns < t->start_ns) {
		ft->stats.invalid++;
		return -EINVAL;
	}
	int64_t present = t->struct_size >= offsetof(tl_frame_times, period_ns) ? t->present_ns : 0;
	int64_t period = t->struct_size >= sizeof *t ? t->period_ns : 0;
	if (period < 0 || present < 0) {
		ft->stats.invalid++;
		return -EINVAL;
	}
	if (period == 0)
		period = atomic_load_explicit(&ft->period_ns, memory_order_relaxed);
	map_check(ft);
	int64_t vsync = t->vsync_ns > 0 ? t->vsync_ns : t->start_ns;
	frame_commit(ft, vsync, t->start_ns, t->end_ns, present, period,
	             tl_clock_map_raw(&ft->map, t->start_ns),
	             tl_clock_map_raw(&ft->map, t->end_ns));
	if (info)
		last_get(ft, info);
	return 0;
}

int tl_frame_last(const tl_frame_tracer *ft, tl_frame_info *info)
{
	if (!ft || !info)
		return -EINVAL;
	if (!ft->have_last)
		return -ENOENT;
	last_get(ft, info);
	return 0;
}

int tl_frame_set_refresh_period(tl_frame_tracer *ft, int64_t period_ns)
{
	if (!ft || period_ns <= 0)
		return -EINVAL;
	atomic_store_explicit(&ft->period_ns, period_ns, memory_order_relaxed);
	return 0;
}

int tl_frame_set_scene(tl_frame_tracer *ft, const char *scene)
{
	if (!ft || !scene)
		return -EINVAL;
	pthread_mutex_lock(&ft->scene_lock);
	size_t len = strnlen(scene, TL_FRAME_SCENE_MAX);
	memcpy(ft->pending_scene, scene, len);
	ft->pending_scene[len] = '\0';
	atomic_store_explicit(&ft->scene_pending, 1, memory_order_relaxed);
	pthread_mutex_unlock(&ft->scene_lock);
	return 0;
}

int tl_frame_tracer_stats_get(const tl_frame_tracer *ft, tl_frame_stats *out)
{
	if (!ft || !out || out->struct_size < sizeof(size_t))
		return -EINVAL;
	size_t n = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
	tl_frame_stats copy = ft->stats;
	copy.struct_size = out->struct_size;
	memcpy(out, &copy, n);
	return 0;
}

/* ---- the looper observer --------------------------------------------------- */

static void looper_dispatch_end(tl_looper *looper, int64_t begin_ns, int64_t end_ns,
                                int64_t cpu_begin_ns, int64_t cpu_end_ns, bool is_frame, void *user)
{
	(void)looper;
	(void)cpu_begin_ns;
	(void)cpu_end_ns;
	tl_frame_tracer *ft = user;
	if (!is_frame) {
		ft->stats.messages_ignored++;
		return;
	}
	if (end_ns < begin_ns)
		end_ns = begin_ns;
	map_check(ft);
	int64_t period = atomic_load_explicit(&ft->period_ns, memory_order_relaxed);
	frame_commit(ft, begin_ns, begin_ns, end_ns, 0, period,
	             tl_clock_map_raw(&ft->map, begin_ns), tl_clock_map_raw(&ft->map, end_ns));
}

static tl_looper_observer looper_observer(tl_frame_tracer *ft)
{
	tl_looper_observer obs = {.dispatch_end = looper_dispatch_end, .user = ft};
	return obs;
}

int tl_frame_tracer_attach_looper(tl_frame_tracer *ft, tl_looper *looper)
{
	if (!ft || !looper)
		return -EINVAL;
	if (ft->looper)
		return -EBUSY;
	tl_looper_observer obs = looper_observer(ft);
	int rc = tl_looper_add_observer(looper, &obs);
	if (rc == 0)
		ft->looper = looper;
	return rc;
}

int tl_frame_tracer_detach_looper(tl_frame_tracer *ft)
{
	if (!ft)
		return -EINVAL;
	if (!ft->looper)
		return -ENOENT;
	tl_looper_observer obs = looper_observer(ft);
	int rc = tl_looper_remove_observer(ft->looper, &obs);
	ft->looper = NULL;
	return rc;
}

/* ---- report JSON ----------------------------------------------------------- */

struct json_buf {
	char *buf;
	size_t size;
	size_t len; /* what the whole text needs */
};

static void jb_printf(struct json_buf *jb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void jb_printf(struct json_buf *jb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = jb->len < jb->size ? jb->size - jb->len : 0;
	int n = vsnprintf(room ? jb->buf + jb->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		jb->len += (size_t)n;
}

static void jb_string(struct json_buf *jb, const char *s)
{
	jb_printf(jb, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			jb_printf(jb, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			jb_printf(jb, "\\u%04x", *p);
		else
			jb_printf(jb, "%c", *p);
	}
	jb_printf(jb, "\"");
}

static void jb_buckets(struct json_buf *jb, const char *key, const uint64_t *values)
{
	jb_printf(jb, ",\"%s\":{", key);
	for (int b = TL_FRAME_FROZEN; b >= TL_FRAME_BEST; b--)
		jb_printf(jb, "%s\"%s\":%llu", b == TL_FRAME_FROZEN ? "" : ",", bucket_names[b],
		          (unsigned long long)values[b]);
	jb_printf(jb, "}");
}

int tl_frame_report_json(const tl_frame_report *r, char *buf, size_t size)
{
	if (!r || (!buf && size))
		return -EINVAL;
	struct json_buf jb = {.buf = buf, .size = size};
	if (size)
		buf[0] = '\0';
	jb_printf(&jb, "{\"tag\":\"Trace_FPS\",\"scene\":");
	jb_string(&jb, r->scene ? r->scene : "");
	jb_printf(&jb, ",\"partial\":%s,\"frames\":%llu,\"wall_ms\":%.3f,\"fps\":%.3f",
	          r->partial ? "true" : "false", (unsigned long long)r->frames, r->wall_ns / 1e6,
	          r->fps);
	jb_printf(&jb, ",\"dropped_frames\":%llu,\"janky_frames\":%llu",
	          (unsigned long long)r->dropped_frames, (unsigned long long)r->janky_frames);
	jb_buckets(&jb, "dropLevel", r->bucket_frames);
	jb_buckets(&jb, "dropSum", r->bucket_dropped);
	jb_printf(&jb,
	          ",\"frame_time_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p95\":%.3f,\"p99\":%.3f,"
	          "\"max\":%.3f}",
	          r->p50_ns / 1e6, r->p90_ns / 1e6, r->p95_ns / 1e6, r->p99_ns / 1e6,
	          r->max_ns / 1e6);
	jb_printf(&jb, ",\"refresh_rates_hz\":[");
	for (unsigned i = 0; i < r->nperiods && i < TL_FRAME_MAX_RATES; i++)
		jb_printf(&jb, "%s%.2f", i ? "," : "",
		          r->periods_ns[i] > 0 ? 1e9 / (double)r->periods_ns[i] : 0.0);
	jb_printf(&jb, "],\"begin_ns\":%lld,\"end_ns\":%lld}", (long long)r->begin_ns,
	          (long long)r->end_ns);
	return jb.len > (size_t)INT32_MAX ? -EOVERFLOW : (int)jb.len;
}
