/*
 * The looper tracer: loops, their dispatches, observers, history and the
 * slow-dispatch report. The watchdog is in looper_watchdog.c.
 *
 * A dispatch costs two emits (the tracer interface's tl_tracer_begin and
 * tl_tracer_end, which return the timestamps they wrote, the begin's also
 * marking its record, so the clock is read once per event), a history slot
 * and the release stores the watchdog reads.
 * No lock, no allocation, no syscall besides the emits' clock reads; the
 * thread CPU clock only when measure_cpu_time is set. Everything else
 * (nesting, idle, copied names, observers, CPU time, slow dispatches) is
 * off the common path, behind one or two tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/tracer.h"
#include "tracers/looper_internal.h"

/* Defined in looper_watchdog.c. */
int looper_watchdog_add(struct tl_looper *l);
void looper_watchdog_remove(struct tl_looper *l);

static const char IDLE_NAME[] = "idle";
static const char UNNAMED[] = "dispatch";

void tl_looper_options_init(tl_looper_options *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->struct_size = sizeof *opts;
	opts->anr_timeout_ms = 5000;
	opts->lag_threshold_ms = 2000;
	opts->slow_dispatch_ms = 700;
	opts->doubtful_ms = 1000;
	opts->history_size = 200;
	opts->dump_format = TL_LOOPER_DUMP_BINARY;
	opts->tree_min_node_ms = 5;
	opts->tree_max_nodes = 30;
}

static int64_t ms_to_ns(int64_t ms)
{
	return ms * 1000000;
}

static bool options_valid(const tl_looper_options *o)
{
	const int64_t max_ms = INT64_MAX / 1000000 / 4;
	return o->struct_size >= sizeof *o && o->anr_timeout_ms >= 0 &&
	       o->anr_timeout_ms < max_ms && o->lag_threshold_ms >= 0 &&
	       o->lag_threshold_ms < max_ms && o->slow_dispatch_ms >= 0 &&
	       o->slow_dispatch_ms < max_ms && o->doubtful_ms >= 0 && o->doubtful_ms < max_ms &&
	       o->tree_min_node_ms >= 0 && o->tree_min_node_ms < max_ms &&
	       o->history_size <= (1u << 20) && o->dump_format <= TL_LOOPER_DUMP_FTRACE &&
	       (!o->dump_directory || strlen(o->dump_directory) < LOOPER_PATH_MAX - 64);
}

tl_looper *tl_looper_create(const tl_looper_options *opts)
{
	tl_looper_options defaults;
	if (!opts) {
		tl_looper_options_init(&defaults);
		opts = &defaults;
	}
	if (!options_valid(opts)) {
		errno = EINVAL;
		return NULL;
	}
	int dir_rc = opts->dump_directory ? tl_private_directory(opts->dump_directory) : 0;
	if (dir_rc) {
		errno = -dir_rc;
		return NULL;
	}
	struct tl_looper *l = calloc(1, sizeof *l);
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	int err = ENOMEM;
	l->name = strdup(opts->name ? opts->name : "looper");
	l->dump_directory = opts->dump_directory ? strdup(opts->dump_directory) : NULL;
	l->history_size = opts->history_size;
	/* one slot more than kept: the one being rewritten is never reported */
	if (l->history_size) {
		l->history = calloc(l->history_size + 1, sizeof l->history[0]);
		l->history_copy = calloc(l->history_size + 1, LOOPER_NAME_MAX);
	}
	if (!l->name || (opts->dump_directory && !l->dump_directory) ||
	    (l->history_size && (!l->history || !l->history_copy)))
		goto fail;
	l->history_cur = l->history;
	l->history_last = l->history ? l->history + l->history_size : NULL;
	l->cat = tl_category_get(opts->category ? opts->category : "looper");
	l->anr_ns = ms_to_ns(opts->anr_timeout_ms);
	l->lag_ns = ms_to_ns(opts->lag_threshold_ms);
	l->slow_ns = ms_to_ns(opts->slow_dispatch_ms);
	/* ticks >= ns / 4 for any TSC of 250 MHz or more, and for ns
	 * timestamps; report_slow looks at the span in ns */
	l->slow_ticks = l->slow_ns ? (uint64_t)l->slow_ns / 4 : UINT64_MAX;
	l->doubtful_ns = ms_to_ns(opts->doubtful_ms);
	l->tree_min_node_ns = ms_to_ns(opts->tree_min_node_ms);
	l->tree_max_nodes = opts->tree_max_nodes;
	l->dump_format = opts->dump_format;
	l->measure_cpu_time = opts->measure_cpu_time;
	l->hooks = l->measure_cpu_time;
	l->rare_ticks = l->hooks ? 0 : l->slow_ticks;
	l->observed_begin_ns = -1;
	l->on_report = opts->on_report;
	l->user = opts->user;
	l->watched_cpu_ns = -1;
	int rc = looper_watchdog_add(l);
	if (rc != 0) {
		err = -rc;
		goto fail;
	}
	return l;
fail:
	free(l->history_copy);
	free(l->history);
	free(l->dump_directory);
	free(l->name);
	free(l);
	errno = err;
	return NULL;
}

void tl_looper_destroy(tl_looper *l)
{
	if (!l)
		return;
	looper_watchdog_remove(l);
	free(l->history_copy);
	free(l->history);
	free(l->dump_directory);
	free(l->name);
	free(l);
}

const char *tl_looper_name(const tl_looper *l)
{
	return l->name;
}

/* ---- helpers ------------------------------------------------------------- */

static void bump(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Copies a string into a buffer another thread reads with atomic loads. */
static void atomic_copy(char *dst, const char *src, size_t max)
{
	size_t i = 0;
	for (; i + 1 < max && src[i]; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
	__atomic_store_n(&dst[i], '\0', __ATOMIC_RELAXED);
}

/* The begin record was not marked by its emit: reads it back (a slow path
 * of the emit, a direct recorder), else marks the thread's position and
 * takes the clock when the emit recorded nothing (category off, no
 * session). Sets begin_recorded. */
static __attribute__((noinline)) uint64_t begin_unmarked(struct tl_looper *l, uint64_t ts)
{
	const char *name = atomic_load_explicit(&l->what, memory_order_relaxed);
	uint64_t rts = 0;
	if (ts)
		rts = tl_thread_mark_last_begin(l->cat, name, &l->mark);
	l->begin_recorded = rts != 0;
	if (rts)
		return rts;
	tl_thread_mark(&l->mark);
	return ts ? ts : tl_now();
}

/* A begin with a copied name: its raw timestamp, read back from the record
 * rather than from the clock; the clock only when the event was not
 * recorded. Marks the record. */
static __attribute__((noinline)) uint64_t begin_copied(struct tl_looper *l, const char *name)
{
	uint64_t ts = 0;
	tl_thread_mark(&l->mark);
	if (tl_category_enabled(l->cat)) {
		tl_emit(l->cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, 0, NULL, 0);
		ts = tl_thread_mark_record_ts(&l->mark, TL_PHASE_BEGIN, l->cat);
	}
	l->begin_recorded = ts != 0;
	return ts ? ts : tl_now();
}

/* ---- dispatches ------------------------------------------------------------ */

void tl_looper_idle_begin(tl_looper *l)
{
	if (l->idle || l->depth) {
		bump(&l->stat_unbalanced);
		return;
	}
	l->idle = true;
	if (tl_category_enabled(l->cat))
		tl_emit_begin(l->cat, IDLE_NAME);
}

void tl_looper_idle_end(tl_looper *l)
{
	if (!l->idle) {
		bump(&l->stat_unbalanced);
		return;
	}
	l->idle = false;
	if (tl_category_enabled(l->cat))
		tl_emit_end(l->cat);
}

/* The runtime parts of a begin: thread CPU time and observers. */
static __attribute__((noinline)) void begin_hooks(struct tl_looper *l, uint64_t ts)
{
	if (l->measure_cpu_time)
		l->cpu_begin_ns = thread_cpu_ns();
	if (l->nobservers) {
		int64_t begin_ns = l->observed_begin_ns = tl_timestamp_to_ns(ts);
		for (unsigned i = 0; i < l->nobservers; i++)
			if (l->observers[i].dispatch_begin)
				l->observers[i].dispatch_begin(l, begin_ns, l->observers[i].user);
	}
}

/* A watched (outermost) dispatch begins: what is its name as given, the
 * name the watchdog sees. depth is already 1. */
static inline __attribute__((always_inline)) void begin_watched(struct tl_looper *l,
                                                                const char *what,
                                                                const char *name, bool copy,
                                                                unsigned flags)
{
	/* the watchdog reads it only once seq says a dispatch is running */
	atomic_store_explicit(&l->what, name, memory_order_relaxed);
	uint64_t ts;
	if (TL_UNLIKELY(copy)) {
		ts = begin_copied(l, what);
	} else if (TL_LIKELY(tl_category_enabled(l->cat))) {
		ts = tl_tracer_begin(l->cat, what, &l->mark);
		if (TL_LIKELY(l->mark.block != NULL))
			l->begin_recorded = true;
		else
			ts = begin_unmarked(l, ts);
	} else {
		ts = begin_unmarked(l, 0);
	}
	l->frame = (flags & TL_LOOPER_FRAME) != 0;
	atomic_store_explicit(&l->begin_ts, ts, memory_order_relaxed);
	atomic_store_explicit(&l->seq, atomic_load_explicit(&l->seq, memory_order_relaxed) + 1,
	                      memory_order_release);
	if (TL_UNLIKELY(l->hooks))
		begin_hooks(l, ts);
}

/* Every begin but the common one: idle, nested, copied name, the loop's
 * first dispatch. */
static __attribute__((noinline)) void dispatch_begin_slow(struct tl_looper *l, const char *what,
                                                          unsigned flags)
{
	bool copy = (flags & TL_LOOPER_COPY_NAME) != 0;
	if (l->idle)
		tl_looper_idle_end(l);
	if (l->depth++ > 0) {
		/* nested: a slice, not watched */
		if (tl_category_enabled(l->cat)) {
			if (copy)
				tl_emit(l->cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, what, 0, 0,
				        NULL, 0);
			else
				tl_emit_begin(l->cat, what);
		}
		l->frame |= (flags & TL_LOOPER_FRAME) != 0;
		return;
	}
	if (TL_UNLIKELY(atomic_load_explicit(&l->tid, memory_order_relaxed) == 0)) {
		l->owner = pthread_self();
		atomic_store_explicit(&l->tid, (uint32_t)syscall(SYS_gettid), memory_order_relaxed);
	}
	const char *name = what;
	if (copy) {
		uint32_t s = atomic_load_explicit(&l->name_seq, memory_order_relaxed);
		atomic_store_explicit(&l->name_seq, s + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		atomic_copy(l->name_copy, what, sizeof l->name_copy);
		atomic_store_explicit(&l->name_seq, s + 2, memory_order_release);
		name = l->name_copy;
	}
	begin_watched(l, what, name, copy, flags);
}

/* The body of both begins: the public functions may be interposed, so one
 * calling the other would not be inlined. */
static inline __attribute__((always_inline)) void dispatch_begin(struct tl_looper *l,
                                                                 const char *what, unsigned flags)
{
	if (!what)
		what = UNNAMED;
	if (TL_UNLIKELY((flags & TL_LOOPER_COPY_NAME) || l->depth || l->idle ||
	                atomic_load_explicit(&l->tid, memory_order_relaxed) == 0)) {
		dispatch_begin_slow(l, what, flags);
		return;
	}
	l->depth = 1;
	begin_watched(l, what, what, false, flags);
}

void tl_looper_dispatch_begin(tl_looper *l, const char *what)
{
	dispatch_begin(l, what, 0);
}

void tl_looper_dispatch_begin_flags(tl_looper *l, const char *what, unsigned flags)
{
	dispatch_begin(l, what, flags);
}

void tl_looper_mark_frame(tl_looper *l)
{
	if (l->depth)
		l->frame = true;
}

/* Writes the next history slot. history_written is the slot's sequence
 * lock: a reader drops a slot the writer may have started to reuse. */
static void history_push(struct tl_looper *l, const char *name, bool copied, uint64_t begin_ts,
                         uint64_t end_ts)
{
	uint64_t n = l->history_count + 1;
	struct looper_history_slot *h = l->history_cur;
	l->history_cur = h == l->history_last ? l->history : h + 1;
	l->history_count = n;
	/* the slot's new contents come after the count that frees it */
	atomic_thread_fence(memory_order_release);
	if (TL_UNLIKELY(copied))
		atomic_copy(l->history_copy + (size_t)(h - l->history) * LOOPER_NAME_MAX, name,
		            LOOPER_NAME_MAX);
	atomic_store_explicit(&h->name, copied ? NULL : name, memory_order_relaxed);
	atomic_store_explicit(&h->begin_ts, begin_ts, memory_order_relaxed);
	atomic_store_explicit(&h->end_ts, end_ts, memory_order_relaxed);
	atomic_store_explicit(&l->history_written, n, memory_order_release);
}

static void report_slow(struct tl_looper *l, const char *name, uint64_t begin_ts, uint64_t end_ts,
                        bool end_recorded, int64_t cpu_ns);

/* The rare parts of an end: thread CPU time, observers, the slow-dispatch
 * report. frame: the dispatch's, l->frame being cleared already. */
static __attribute__((noinline)) void end_rare(struct tl_looper *l, const char *name,
                                               uint64_t begin_ts, uint64_t end_ts,
                                               bool end_recorded, bool frame)
{
	int64_t cpu_end_ns = l->measure_cpu_time ? thread_cpu_ns() : -1;
	int64_t cpu_begin_ns = l->measure_cpu_time ? l->cpu_begin_ns : -1;
	if (l->nobservers) {
		/* the begin as observers saw it: a second conversion may differ */
		int64_t begin_ns =
		    l->observed_begin_ns >= 0 ? l->observed_begin_ns : tl_timestamp_to_ns(begin_ts);
		int64_t end_ns = tl_timestamp_to_ns(end_ts);
		for (unsigned i = 0; i < l->nobservers; i++)
			if (l->observers[i].dispatch_end)
				l->observers[i].dispatch_end(l, begin_ns, end_ns, cpu_begin_ns,
				                             cpu_end_ns, frame, l->observers[i].user);
	}
	if (l->slow_ns && end_ts > begin_ts && end_ts - begin_ts >= l->slow_ticks)
		report_slow(l, name, begin_ts, end_ts, end_recorded,
		            cpu_end_ns >= 0 && cpu_begin_ns >= 0 ? cpu_end_ns - cpu_begin_ns : -1);
	l->frame = false;
	l->observed_begin_ns = -1;
	l->rare_ticks = l->hooks ? 0 : l->slow_ticks;
}

/* An end outside any dispatch, or of a nested one. */
static __attribute__((noinline)) void dispatch_end_unwatched(struct tl_looper *l)
{
	if (l->depth == 0) {
		bump(&l->stat_unbalanced);
		return;
	}
	--l->depth;
	if (tl_category_enabled(l->cat))
		tl_emit_end(l->cat);
}

void tl_looper_dispatch_end(tl_looper *l)
{
	if (TL_UNLIKELY(l->depth != 1)) {
		dispatch_end_unwatched(l);
		return;
	}
	l->depth = 0;
	uint64_t end_ts = 0;
	if (TL_LIKELY(tl_category_enabled(l->cat)))
		end_ts = tl_tracer_end(l->cat);
	bool end_recorded = end_ts != 0;
	if (TL_UNLIKELY(!end_recorded))
		end_ts = tl_now();
	atomic_store_explicit(&l->seq, atomic_load_explicit(&l->seq, memory_order_relaxed) + 1,
	                      memory_order_release);
	uint64_t begin_ts = atomic_load_explicit(&l->begin_ts, memory_order_relaxed);
	const char *name = atomic_load_explicit(&l->what, memory_order_relaxed);
	bool copied = name == l->name_copy;
	if (l->history_cur)
		history_push(l, name, copied, begin_ts, end_ts);
	bool frame = l->frame;
	if (frame) {
		bump(&l->stat_frames);
		l->frame = false;
	}
	if (TL_UNLIKELY(end_ts - begin_ts >= l->rare_ticks))
		end_rare(l, name, begin_ts, end_ts, end_recorded, frame);
}

/* ---- observers ----------------------------------------------------------- */

static bool same_observer(const tl_looper_observer *a, const tl_looper_observer *b)
{
	return a->dispatch_begin == b->dispatch_begin && a->dispatch_end == b->dispatch_end &&
	       a->user == b->user;
}

int tl_looper_add_observer(tl_looper *l, const tl_looper_observer *observer)
{
	if (!l || !observer || (!observer->dispatch_begin && !observer->dispatch_end))
		return -EINVAL;
	for (unsigned i = 0; i < l->nobservers; i++)
		if (same_observer(&l->observers[i], observer))
			return -EEXIST;
	if (l->nobservers == TL_LOOPER_MAX_OBSERVERS)
		return -ENOSPC;
	l->observers[l->nobservers++] = *observer;
	l->hooks = true;
	l->rare_ticks = 0;
	if (l->depth == 0)
		l->observed_begin_ns = -1;
	return 0;
}

int tl_looper_remove_observer(tl_looper *l, const tl_looper_observer *observer)
{
	if (!l || !observer)
		return -EINVAL;
	for (unsigned i = 0; i < l->nobservers; i++) {
		if (same_observer(&l->observers[i], observer)) {
			memmove(&l->observers[i], &l->observers[i + 1],
			        (l->nobservers - i - 1) * sizeof l->observers[0]);
			l->nobservers--;
			l->hooks = l->measure_cpu_time || l->nobservers;
			/* a dispatch under way still ends through end_rare, which
			 * resets observed_begin_ns */
			l->rare_ticks = l->hooks || l->depth ? 0 : l->slow_ticks;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- history and stats --------------------------------------------------- */

size_t looper_history_read(const struct tl_looper *l, tl_looper_history_entry **entries,
                           char **names)
{
	*entries = NULL;
	*names = NULL;
	if (!l->history_size)
		return 0;
	uint64_t written = atomic_load_explicit(&l->history_written, memory_order_acquire);
	size_t count = written < l->history_size ? (size_t)written : l->history_size;
	if (!count)
		return 0;
	tl_looper_history_entry *e = calloc(count, sizeof *e);
	char *text = malloc(count * LOOPER_NAME_MAX);
	/* each entry's begin and end, raw, then converted together in place */
	tl_timestamp *times = calloc(2 * count, sizeof *times);
	if (!e || !text || !times) {
		free(e);
		free(text);
		free(times);
		return 0;
	}
	size_t n = 0;
	for (uint64_t k = written - count; k < written; k++) {
		size_t at = (size_t)(k % (l->history_size + 1));
		const struct looper_history_slot *h = &l->history[at];
		const char *copy = l->history_copy + at * LOOPER_NAME_MAX;
		char *name = text + n * LOOPER_NAME_MAX;
		const char *kept = atomic_load_explicit(&h->name, memory_order_relaxed);
		uint64_t b = atomic_load_explicit(&h->begin_ts, memory_order_relaxed);
		uint64_t en = atomic_load_explicit(&h->end_ts, memory_order_relaxed);
		if (!kept) {
			size_t i = 0;
			char c;
			while (i + 1 < LOOPER_NAME_MAX &&
			       (c = __atomic_load_n(&copy[i], __ATOMIC_RELAXED)) != '\0')
				name[i++] = c;
			name[i] = '\0';
		}
		atomic_thread_fence(memory_order_acquire);
		/* the writer reuses slot k once it has written k + size */
		if (atomic_load_explicit(&l->history_written, memory_order_relaxed) >
		    k + l->history_size)
			continue;
		if (kept) {
			strncpy(name, kept, LOOPER_NAME_MAX - 1);
			name[LOOPER_NAME_MAX - 1] = '\0';
		}
		times[2 * n] = b;
		times[2 * n + 1] = en;
		n++;
	}
	int64_t *ns = (int64_t *)times;
	tl_timestamps_to_ns(times, ns, 2 * n);
	for (size_t i = 0; i < n; i++) {
		e[i].name = text + i * LOOPER_NAME_MAX;
		e[i].begin_ns = ns[2 * i];
		e[i].duration_ns = ns[2 * i + 1] - ns[2 * i];
	}
	free(times);
	*entries = e;
	*names = text;
	return n;
}

int tl_looper_stats_get(const tl_looper *l, tl_looper_stats *out)
{
	if (!l || !out || out->struct_size < sizeof *out)
		return -EINVAL;
	out->dispatches = atomic_load(&l->seq) / 2;
	out->frames = atomic_load(&l->stat_frames);
	out->malformed_lines = atomic_load(&l->stat_malformed);
	out->unbalanced = atomic_load(&l->stat_unbalanced);
	out->lag_reports = atomic_load(&l->stat_lag);
	out->anr_reports = atomic_load(&l->stat_anr);
	out->slow_reports = atomic_load(&l->stat_slow);
	out->doubtful_reports = atomic_load(&l->stat_doubtful);
	return 0;
}

/* ---- slow dispatches ------------------------------------------------------ */

static void report_slow(struct tl_looper *l, const char *name, uint64_t begin_ts, uint64_t end_ts,
                        bool end_recorded, int64_t cpu_ns)
{
	const tl_timestamp raw[2] = {begin_ts, end_ts};
	int64_t ns[2];
	tl_timestamps_to_ns(raw, ns, 2);
	int64_t begin_ns = ns[0], end_ns = ns[1];
	if (end_ns - begin_ns < l->slow_ns)
		return;
	bump(&l->stat_slow);

	struct tl_thread_copy copy;
	int rc = tl_thread_copy_since(&l->mark, &copy);
	bool intact = rc == 0 && copy.intact;
	struct looper_tree_result tree;
	looper_tree_build(l, copy.words, copy.nwords, intact && l->begin_recorded,
	                  rc == 0 && end_recorded, name, begin_ns, end_ns, &tree);
	free(copy.words);

	tl_looper_report r;
	memset(&r, 0, sizeof r);
	r.struct_size = sizeof r;
	r.kind = TL_LOOPER_REPORT_SLOW;
	r.loop = l->name;
	r.message = name;
	r.dispatch_seq = atomic_load_explicit(&l->seq, memory_order_relaxed) / 2;
	r.tid = atomic_load_explicit(&l->tid, memory_order_relaxed);
	r.elapsed_ns = end_ns - begin_ns;
	r.thread_cpu_ns = cpu_ns;
	r.watchdog_late_ns = 0;
	r.suspended_ns = 0;
	char *names;
	tl_looper_history_entry *history;
	r.history_count = looper_history_read(l, &history, &names);
	r.history = history;
	r.mark_valid = intact;
	r.events_copied = tree.events;
	r.tree_text = tree.text.data ? tree.text.data : "";
	r.tree_json = tree.json.data ? tree.json.data : "[]";
	r.stack_key = tree.key.data ? tree.key.data : "";
	struct looper_buf json = {0};
	looper_report_json(&r, &json);
	r.json = json.data ? json.data : "{}";

	if (tl_category_enabled(l->cat)) {
		tl_arg args[4] = {
		    {.key = "message", .type = TL_ARG_STRING_COPY, .value.s = name},
		    {.key = "cost_ns", .type = TL_ARG_INT, .value.i = r.elapsed_ns},
		    {.key = "stack_key", .type = TL_ARG_STRING_COPY, .value.s = r.stack_key},
		    {.key = "mark_valid", .type = TL_ARG_BOOL, .value.b = intact},
		};
		tl_emit(l->cat, TL_PHASE_INSTANT, 0, "looper.slow", 0, 0, args, 4);
	}
	if (l->on_report)
		l->on_report(&r, l->user);
	looper_buf_free(&json);
	free(history);
	free(names);
	looper_buf_free(&tree.text);
	looper_buf_free(&tree.json);
	looper_buf_free(&tree.key);
}
