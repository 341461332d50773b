/*
 * The frame tracer: measures frames, aggregates them per scene and time
 * slice, and emits every frame, counter and report through the timeline API.
 *
 * Per frame (tl_frame_end, the hot path): one clock read, integer math, one
 * COMPLETE record with a copied name, a store into the scene's frame-time
 * array; the janky-frame instant, the real-time counters (once per window)
 * and the reports (once per slice) are off the common path. No lock unless a
 * scene change is pending; no allocation unless a frame-time array grows.
 *
 * Timestamps: the recorder stores raw tl_timestamp values (TSC ticks on
 * machines where the library uses the TSC). The tracer reads one raw value
 * per frame edge and turns it into nanoseconds with a linear map it
 * recalibrates once per real-time window, and maps caller-supplied
 * nanoseconds back into ticks for tl_frame_record.
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

#include "recorder/clock.h"
#include "tracers/frame_stats.h"

#define DEFAULT_RATE_HZ 60.0
#define DEFAULT_SLICE_NS (10 * 1000000000LL)
#define DEFAULT_WINDOW_NS (200 * 1000000LL)
#define DEFAULT_MIN_FRAMES 10
#define DEFAULT_SCENE "default"
#define DEFAULT_CATEGORY "frame"
#define MAX_SCENES 16
/* The raw-to-ns map is rebuilt when it is off by more than this. */
#define MAP_TOLERANCE_NS 1000000
/* Span of the first calibration of the map. */
#define MAP_BOOTSTRAP_NS 1000000
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
	uint64_t last_use; /* tracer's use counter when it last got a frame or became current */
	uint64_t frames;
	int64_t wall_ns;
	int64_t begin_ns, end_ns;
	uint64_t dropped;
	uint64_t bucket_frames[TL_FRAME_BUCKET_COUNT];
	uint64_t bucket_dropped[TL_FRAME_BUCKET_COUNT];
	uint64_t janky;
	int64_t max_ns;
	int64_t min_period_ns;
	unsigned nperiods;
	int64_t periods_ns[TL_FRAME_MAX_RATES];
	int64_t *durations; /* frame times of this slice; capacity cap */
	size_t ndurations, cap;
};

/* ns = base_ns + (raw - base_raw) * ns_per_tick; identity without the TSC. */
struct clock_map {
	int tsc;
	uint64_t anchor_raw; /* first pair: the rate spans from it */
	int64_t anchor_ns;
	uint64_t base_raw;
	int64_t base_ns;
	double ns_per_tick;
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
	struct clock_map map;
	struct scene_slice scenes[MAX_SCENES];
	struct scene_slice *current;
	uint64_t use_counter;
	bool open;
	int64_t open_vsync_ns;
	int64_t open_start_ns;
	uint64_t open_start_raw;
	int64_t open_period_ns;
	int64_t emitted_period_ns;
	uint64_t window_frames;
	int64_t window_wall_ns;
	uint64_t window_dropped;
	int64_t window_min_period_ns;
	bool have_last;
	tl_frame_info last;
	tl_frame_stats stats;
	tl_looper *looper;
};

const char *tl_frame_bucket_name(tl_frame_bucket bucket)
{
	if ((unsigned)bucket >= TL_FRAME_BUCKET_COUNT)
		return NULL;
	return bucket_names[bucket];
}

/* ---- the clock map ------------------------------------------------------- */

static void map_reset(struct clock_map *map)
{
	map->tsc = tl_clock_is_tsc();
	if (!map->tsc)
		return;
	/* The rate spans from the library's oldest calibration pair when it is
	 * old enough, else from a pair taken now and one a moment later. */
	tl_clock_pair stored[TL_CLOCK_PAIRS];
	size_t nstored = tl_clock_pairs(stored, TL_CLOCK_PAIRS);
	tl_clock_pair now = tl_clock_calibrate(0, 0);
	tl_clock_pair first = nstored ? stored[0] : now;
	if (now.ns - first.ns < MAP_BOOTSTRAP_NS || now.ticks <= first.ticks) {
		first = now;
		do
			now = tl_clock_calibrate(0, 0);
		while (now.ns - first.ns < MAP_BOOTSTRAP_NS);
	}
	map->anchor_raw = first.ticks;
	map->anchor_ns = first.ns;
	map->base_raw = now.ticks;
	map->base_ns = now.ns;
	map->ns_per_tick = (double)(now.ns - first.ns) / (double)(now.ticks - first.ticks);
}

static inline int64_t map_to_ns(const struct clock_map *map, uint64_t raw)
{
	if (!map->tsc)
		return (int64_t)raw;
	return map->base_ns + (int64_t)((double)(int64_t)(raw - map->base_raw) * map->ns_per_tick);
}

static inline uint64_t map_to_raw(const struct clock_map *map, int64_t ns)
{
	if (!map->tsc)
		return (uint64_t)ns;
	return map->base_raw + (uint64_t)(int64_t)((double)(ns - map->base_ns) / map->ns_per_tick);
}

/* Re-centres the map on now and refines its rate over a longer span. */
static void map_refresh(struct clock_map *map)
{
	if (map->tsc != tl_clock_is_tsc()) {
		map_reset(map);
		return;
	}
	if (!map->tsc)
		return;
	tl_clock_pair now = tl_clock_calibrate(0, 0);
	int64_t predicted = map_to_ns(map, now.ticks);
	if (llabs(predicted - now.ns) > MAP_TOLERANCE_NS || now.ticks <= map->anchor_raw) {
		map_reset(map); /* a new session with another clock */
		return;
	}
	map->ns_per_tick =
	    (double)(now.ns - map->anchor_ns) / (double)(now.ticks - map->anchor_raw);
	map->base_raw = now.ticks;
	map->base_ns = now.ns;
}

/* A session may have started (or switched clocks) since the last frame. */
static inline void map_check(struct clock_map *map)
{
	if (__builtin_expect(map->tsc != tl_clock_use_tsc, 0))
		map_reset(map);
}

/* ---- scenes -------------------------------------------------------------- */

static void slice_reset(struct scene_slice *s)
{
	s->frames = 0;
	s->wall_ns = 0;
	s->begin_ns = s->end_ns = 0;
	s->dropped = 0;
	memset(s->bucket_frames, 0, sizeof s->bucket_frames);
	memset(s->bucket_dropped, 0, sizeof s->bucket_dropped);
	s->janky = 0;
	s->max_ns = 0;
	s->min_period_ns = 0;
	s->nperiods = 0;
	s->ndurations = 0;
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
	memcpy(r.bucket_dropped, s->bucket_dropped, sizeof r.bucket_dropped);
	r.janky_frames = s->janky;
	static const unsigned pcts[4] = {50, 90, 95, 99};
	int64_t values[4];
	tl_frame_percentiles(s->durations, s->ndurations, pcts, 4, values);
	r.p50_ns = values[0];
	r.p90_ns = values[1];
	r.p95_ns = values[2];
	r.p99_ns = values[3];
	r.max_ns = s->max_ns;
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

static void slice_store_duration(tl_frame_tracer *ft, struct scene_slice *s, int64_t duration)
{
	if (s->ndurations == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		int64_t *grown = realloc(s->durations, cap * sizeof *grown);
		if (!grown)
			return; /* the percentiles then cover the frames stored */
		s->durations = grown;
		s->cap = cap;
	}
	(void)ft;
	s->durations[s->ndurations++] = duration;
}

/* ---- measuring ----------------------------------------------------------- */

static tl_frame_bucket bucket_of(const tl_frame_tracer *ft, uint64_t dropped)
{
	for (int b = TL_FRAME_FROZEN; b > TL_FRAME_BEST; b--)
		if (dropped >= ft->thresholds[b])
			return (tl_frame_bucket)b;
	return TL_FRAME_BEST;
}

/* "frame <n>" into buf; returns buf. */
static const char *frame_name(char *buf, uint64_t n)
{
	char digits[24];
	size_t len = 0;
	do {
		digits[len++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	memcpy(buf, "frame ", 6);
	for (size_t i = 0; i < len; i++)
		buf[6 + i] = digits[len - 1 - i];
	buf[6 + len] = '\0';
	return buf;
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

static void window_close(tl_frame_tracer *ft, uint64_t raw_end)
{
	double fps = (double)ft->window_frames * 1e9 / (double)ft->window_wall_ns;
	double cap = 1e9 / (double)ft->window_min_period_ns;
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
	ft->window_frames = 0;
	ft->window_wall_ns = 0;
	ft->window_dropped = 0;
	ft->window_min_period_ns = 0;
	/* the map drifts by parts per million: re-centre it once a second */
	if (map_to_ns(&ft->map, raw_end) - ft->map.base_ns >= MAP_REFRESH_NS)
		map_refresh(&ft->map);
}

/*
 * Measures, emits and aggregates one frame. raw_start/raw_end are the
 * recorder timestamps of start_ns/end_ns.
 */
static void frame_commit(tl_frame_tracer *ft, int64_t vsync_ns, int64_t start_ns, int64_t end_ns,
                         int64_t present_ns, int64_t period_ns, uint64_t raw_start,
                         uint64_t raw_end)
{
	if (__builtin_expect(atomic_load_explicit(&ft->scene_pending, memory_order_relaxed), 0))
		scene_take_pending(ft);

	tl_frame_info *info = &ft->last;
	info->number = ft->stats.frames + 1;
	info->duration_ns = end_ns - start_ns;
	info->period_ns = period_ns;
	info->lateness_ns = end_ns - (vsync_ns + period_ns);
	info->dropped =
	    info->lateness_ns > 0 ? (uint64_t)((info->lateness_ns + period_ns - 1) / period_ns) : 0;
	info->bucket = bucket_of(ft, info->dropped);
	ft->have_last = true;
	ft->stats.frames++;
	ft->stats.dropped_frames += info->dropped;

	bool enabled = tl_category_enabled(ft->cat);
	if (enabled) {
		if (__builtin_expect(period_ns != ft->emitted_period_ns, 0)) {
			tl_emit(ft->cat, TL_PHASE_COUNTER, 0, "refresh_period_ns",
			        (uint64_t)period_ns, raw_start, NULL, 0);
			ft->emitted_period_ns = period_ns;
		}
		/* The period is the refresh_period_ns counter; the vsync and
		 * present time are arguments only when they say something: no
		 * vsync_ns means the frame started at its vsync. */
		char name[32];
		tl_arg args[2];
		unsigned nargs = 0;
		if (vsync_ns != start_ns)
			args[nargs++] =
			    (tl_arg){.key = "vsync_ns", .type = TL_ARG_INT, .value.i = vsync_ns};
		if (present_ns > 0)
			args[nargs++] = (tl_arg){
			    .key = "present_ns", .type = TL_ARG_INT, .value.i = present_ns};
		tl_emit(ft->cat, TL_PHASE_COMPLETE, TL_EVENT_COPY_NAME,
		        frame_name(name, info->number), raw_end, raw_start, args, nargs);
	}

	int64_t wall = (int64_t)(info->dropped + 1) * period_ns;
	if (info->dropped) {
		ft->stats.janky_frames++;
		if (enabled)
			emit_janky(ft, info, raw_end);
	}

	struct scene_slice *s = ft->current;
	if (s->frames == 0)
		s->begin_ns = start_ns;
	s->end_ns = end_ns;
	s->frames++;
	s->wall_ns += wall;
	s->dropped += info->dropped;
	s->bucket_frames[info->bucket]++;
	s->bucket_dropped[info->bucket] += info->dropped;
	s->janky += info->dropped != 0;
	if (info->duration_ns > s->max_ns)
		s->max_ns = info->duration_ns;
	if (__builtin_expect(period_ns != s->min_period_ns, 0) || s->nperiods == 0)
		slice_add_period(s, period_ns);
	slice_store_duration(ft, s, info->duration_ns);
	s->last_use = ++ft->use_counter;

	ft->window_frames++;
	ft->window_wall_ns += wall;
	ft->window_dropped += info->dropped;
	if (ft->window_min_period_ns == 0 || period_ns < ft->window_min_period_ns)
		ft->window_min_period_ns = period_ns;
	if (ft->window_wall_ns >= ft->window_ns)
		window_close(ft, raw_end);

	if (s->wall_ns >= ft->slice_ns)
		slice_close(ft, s, false);
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
	map_reset(&ft->map);
	ft->current = scene_find(ft, o.scene ? o.scene : DEFAULT_SCENE);
	return ft;
}

void tl_frame_tracer_flush(tl_frame_tracer *ft)
{
	if (!ft)
		return;
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
	tl_frame_tracer_flush(ft);
	for (size_t i = 0; i < MAX_SCENES; i++)
		free(ft->scenes[i].durations);
	pthread_mutex_destroy(&ft->scene_lock);
	free(ft);
}

void tl_frame_begin(tl_frame_tracer *ft, int64_t vsync_ns)
{
	map_check(&ft->map);
	uint64_t raw = tl_now();
	if (__builtin_expect(ft->open, 0))
		ft->stats.abandoned++;
	ft->open = true;
	ft->open_start_raw = raw;
	ft->open_start_ns = map_to_ns(&ft->map, raw);
	ft->open_vsync_ns = vsync_ns > 0 ? vsync_ns : ft->open_start_ns;
	ft->open_period_ns = atomic_load_explicit(&ft->period_ns, memory_order_relaxed);
}

void tl_frame_end(tl_frame_tracer *ft)
{
	uint64_t raw = tl_now();
	if (__builtin_expect(!ft->open, 0)) {
		ft->stats.unmatched_ends++;
		return;
	}
	ft->open = false;
	int64_t end_ns = map_to_ns(&ft->map, raw);
	if (end_ns < ft->open_start_ns)
		end_ns = ft->open_start_ns;
	frame_commit(ft, ft->open_vsync_ns, ft->open_start_ns, end_ns, 0, ft->open_period_ns,
	             ft->open_start_raw, raw);
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
	map_check(&ft->map);
	int64_t vsync = t->vsync_ns > 0 ? t->vsync_ns : t->start_ns;
	frame_commit(ft, vsync, t->start_ns, t->end_ns, present, period,
	             map_to_raw(&ft->map, t->start_ns), map_to_raw(&ft->map, t->end_ns));
	if (info)
		*info = ft->last;
	return 0;
}

int tl_frame_last(const tl_frame_tracer *ft, tl_frame_info *info)
{
	if (!ft || !info)
		return -EINVAL;
	if (!ft->have_last)
		return -ENOENT;
	*info = ft->last;
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

int tl_frame_tracer_stats(const tl_frame_tracer *ft, tl_frame_stats *out)
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
	map_check(&ft->map);
	int64_t period = atomic_load_explicit(&ft->period_ns, memory_order_relaxed);
	frame_commit(ft, begin_ns, begin_ns, end_ns, 0, period, map_to_raw(&ft->map, begin_ns),
	             map_to_raw(&ft->map, end_ns));
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
