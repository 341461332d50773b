/*
 * systrace: every event goes to the kernel's ftrace buffer as one atrace
 * payload, one write(2) to trace_marker, from the emitting thread. No
 * buffer of its own (snapshots return -ENODEV); Perfetto, atrace and
 * trace-cmd capture it live, next to the kernel's own events. The mapping
 * of events to payloads, what is lost, the tracing_on gate and the failure
 * handling are described in docs/systrace.md.
 *
 * The write path is async-signal-safe: a stack buffer, our own formatting,
 * atomics, write(2), and on rare paths pread(2) and fcntl(2). The one
 * exception is the single log line when the recorder turns itself off.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef TL_HAVE_TRACEFS
#include <tracefs.h>
#endif

#include "recorder/atrace_format.h"
#include "recorder/clock.h"
#include "recorder/internal.h"
#include "recorder/record.h"

/* tracing_on is read again at most this often. */
#define GATE_INTERVAL_NS (100 * 1000 * 1000)
/* A complete or async event is written only if it starts at most this long
 * before it reaches the recorder: the kernel stamps the write, not us. */
#define LIVE_WINDOW_NS (100 * 1000)

struct systrace {
	int marker_fd;
	int tracing_on_fd;      /* -1: no gate */
	uint64_t gate_interval; /* GATE_INTERVAL_NS in tl_timestamp units */
	uint64_t live_window;   /* LIVE_WINDOW_NS in tl_timestamp units */
	uint32_t session;       /* tells this session's thread state from older ones */
	char marker_path[PATH_MAX];
	_Atomic uint64_t gate_next; /* tl_timestamp after which tracing_on is read */
	_Atomic int gate_on;
	_Atomic int off;       /* turned itself off after a fatal write error */
	_Atomic int fd_closed; /* marker_fd was closed under us: never close it */
};

/*
 * The counters, one set per thread slot, written only by the slot's thread
 * (write_direct runs on the emitting thread, and the core drops an emit
 * that re-enters from a signal handler before it gets here): plain relaxed
 * stores, no locked instruction and no shared cache line on the write
 * path. A recycled slot keeps counting where its last thread stopped, so
 * the sums stay whole. tl_stats_get sums them.
 */
struct systrace_counters {
	_Atomic uint64_t written;
	_Atomic uint64_t dropped;
	_Atomic uint64_t truncated;
	_Atomic uint64_t not_representable;
	_Atomic uint64_t flows_lost;
	_Atomic uint64_t tracing_off;
	_Atomic uint64_t write_errors;
} __attribute__((aligned(TL_CACHELINE)));

static struct systrace systrace_state = {.marker_fd = -1, .tracing_on_fd = -1};

/*
 * Per thread slot, the payloads of its last slice begin (for a name of at
 * most SLICE_NAME_CACHED bytes) and of a slice end, as written for the
 * process `pid`: a kept name does not change (timeline.h), so the same
 * pointer gives the same payload, written again without formatting.
 * Written only by the slot's thread.
 */
#define SLICE_NAME_CACHED 64
struct slice_cache {
	const char *name; /* NULL: nothing cached */
	pid_t pid;
	uint32_t begin_len, end_len;
	char end[24];
	char begin[2 + 20 + 1 + SLICE_NAME_CACHED];
} __attribute__((aligned(TL_CACHELINE)));
static struct slice_cache slice_caches[TL_MAX_THREADS];
static struct systrace_counters counters[TL_MAX_THREADS];
static uint32_t session_counter;

/* Per thread: the timestamp of the last written event (for the liveness of
 * complete events), valid when `session` matches; the session from which
 * on its slice begins and ends are timed too (timed_session, see
 * complete_is_live); the tgid in decimal, valid while `pid` equals tl_pid
 * (a fork changes it). */
static __thread struct {
	uint64_t last_ts;
	uint32_t session;
	uint32_t timed_session;
	pid_t pid;
	size_t pid_len;
	char pid_text[24];
} thread_state __attribute__((tls_model("initial-exec")));

static inline struct systrace_counters *my_counters(void)
{
	return &counters[tl_self - tl_slots];
}

static inline void count(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

/* ---- failures ------------------------------------------------------------ */

static void turn_off(struct systrace *st, int err)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&st->off, &expected, err))
		return;
	tl_log(TL_LOG_ERROR,
	       "systrace recorder: write to %s failed: %s; recorder off, later events are "
	       "dropped and counted",
	       st->marker_path, strerror(err));
}

/*
 * Writes one payload, retrying on EINTR. Returns 0, or -errno after counting
 * the error: EINVAL (tracing or markers off) and EBADF on a descriptor that
 * is still open (the kernel's ring buffer is off) leave the recorder on and
 * make the next event read tracing_on again; anything else turns it off.
 */
static int write_payload(struct systrace *st, const char *buf, size_t len)
{
	for (;;) {
		if (write(st->marker_fd, buf, len) >= 0)
			return 0;
		int err = errno;
		if (err == EINTR)
			continue;
		count(&my_counters()->write_errors);
		if (err == EINVAL || (err == EBADF && fcntl(st->marker_fd, F_GETFD) != -1)) {
			/* closed, to be read again at the next event */
			atomic_store_explicit(&st->gate_next, 0, memory_order_relaxed);
			atomic_store_explicit(&st->gate_on, 0, memory_order_relaxed);
			return -err;
		}
		if (err == EBADF)
			atomic_store(&st->fd_closed, 1);
		turn_off(st, err);
		return -err;
	}
}

/* ---- the tracing_on gate ---------------------------------------------------- */

static int read_tracing_on(int fd)
{
	char c;
	ssize_t n;
	do
		n = pread(fd, &c, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == 1 ? c != '0' : 1; /* unreadable: let the writes tell */
}

/* The gate is closed: reads tracing_on again once gate_next has passed (one
 * thread does; the others keep the last answer). An idle recorder costs
 * this clock read. */
static __attribute__((noinline)) int gate_closed(struct systrace *st)
{
	uint64_t now = tl_clock_read();
	uint64_t expected = atomic_load_explicit(&st->gate_next, memory_order_relaxed);
	if ((int64_t)(now - expected) < 0)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&st->gate_next, &expected,
	                                             now + st->gate_interval, memory_order_relaxed,
	                                             memory_order_relaxed))
		return atomic_load_explicit(&st->gate_on, memory_order_relaxed);
	int on = read_tracing_on(st->tracing_on_fd);
	atomic_store_explicit(&st->gate_on, on, memory_order_relaxed);
	return on;
}

/*
 * True when an event may be written: there is no gate, or it is open. Open,
 * it costs one load: a write that fails because tracing (or markers) went
 * off closes it (write_payload), so it needs no look at tracing_on, nor at
 * the clock, while writes succeed.
 */
static inline int gate_open(struct systrace *st)
{
	if (st->tracing_on_fd < 0 ||
	    TL_LIKELY(atomic_load_explicit(&st->gate_on, memory_order_relaxed)))
		return 1;
	return gate_closed(st);
}

/* ---- events -------------------------------------------------------------------- */

static int is_flow(char phase)
{
	return phase == TL_PHASE_FLOW_BEGIN || phase == TL_PHASE_FLOW_STEP ||
	       phase == TL_PHASE_FLOW_END;
}

/* The "track" of an async event: a first argument named "track" holding a
 * string. Returns 0 when there is none. */
static int async_track(const tl_record_view *v, const char **track, size_t *len)
{
	if (v->nargs == 0 || v->args[0].key_len != 5 || memcmp(v->args[0].key, "track", 5) != 0)
		return 0;
	if (v->args[0].type != TL_ARG_STRING && v->args[0].type != TL_ARG_STRING_COPY)
		return 0;
	*track = v->args[0].str;
	*len = v->args[0].str_len;
	return 1;
}

static void category_track(const tl_record_view *v, const char **track, size_t *len)
{
	const char *name = tl_category_name(v->category);
	*track = name ? name : "";
	*len = strlen(*track);
}

/* At most the live window ago (a timestamp ahead of now counts as live). */
static int is_recent(const struct systrace *st, uint64_t ts)
{
	return (int64_t)(tl_clock_read() - ts) <= (int64_t)st->live_window;
}

/*
 * A complete event is live when it starts within the live window and not
 * before this thread's previous written event, so that writing its B and E
 * now keeps the thread's slices nested as they happened. Slice begins and
 * ends are not timed (the clock read beside the write is a tenth of its
 * cost) until the thread's first complete event of the session: that one
 * is checked against the thread's other events only, the later ones
 * against everything.
 */
static int complete_is_live(const struct systrace *st, const tl_record_view *v)
{
	thread_state.timed_session = st->session;
	if (v->value < v->ts)
		return 0;
	if (thread_state.session == st->session && v->ts < thread_state.last_ts)
		return 0;
	return is_recent(st, v->ts);
}

/* Formats and writes one payload; counts a truncation. */
static int send(struct systrace *st, struct tl_atrace_payload *p)
{
	char buf[TL_ATRACE_PAYLOAD_MAX];
	int truncated = 0;
	size_t len = tl_atrace_format(buf, p, &truncated);
	int rc = write_payload(st, buf, len);
	if (rc == 0 && truncated)
		count(&my_counters()->truncated);
	return rc;
}

/* This thread's tgid in decimal, formatted again after a fork. */
static inline void pid_refresh(void)
{
	if (TL_UNLIKELY(thread_state.pid != tl_pid)) {
		thread_state.pid = tl_pid;
		thread_state.pid_len = tl_atrace_format_i64(thread_state.pid_text, tl_pid);
	}
}

/* What this thread wrote last, for complete_is_live. */
static inline void note_written(const struct systrace *st, uint64_t ts)
{
	thread_state.session = st->session;
	thread_state.last_ts = ts;
}

/* Turns one decoded record into its payloads. Returns 1 written, 0 not
 * representable, -1 failed (counted by write_payload). */
static int write_event(struct systrace *st, const tl_record_view *v)
{
	pid_refresh();
	char numbered[TL_RECORD_NAME_MAX];
	struct tl_atrace_payload p = {.pid = thread_state.pid_text,
	                              .pid_len = thread_state.pid_len};
	p.name = tl_record_name(v, numbered, &p.name_len);
	const char *track;
	size_t track_len;
	int64_t value;

	switch (v->phase) {
	case TL_PHASE_BEGIN:
		p.phase = 'B';
		break;
	case TL_PHASE_END:
		p.phase = 'E';
		break;
	case TL_PHASE_COUNTER:
		p.phase = 'C';
		if (!(v->flags & TL_REC_F_COUNTER_DOUBLE)) {
			p.number = (int64_t)v->value;
		} else {
			double d;
			memcpy(&d, &v->value, sizeof d);
			if (!tl_atrace_counter_from_double(d, &value))
				return 0;
			p.number = value;
		}
		break;
	case TL_PHASE_COMPLETE:
		if (!complete_is_live(st, v))
			return 0;
		p.phase = 'B';
		if (send(st, &p) != 0)
			return -1;
		p.phase = 'E';
		break;
	case TL_PHASE_INSTANT:
		if (((v->flags >> TL_REC_F_SCOPE_SHIFT) & 3) == 0) {
			p.phase = 'I';
			break;
		}
		p.phase = 'N';
		category_track(v, &p.track, &p.track_len);
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
		if (!is_recent(st, v->ts))
			return 0;
		p.number = tl_atrace_cookie(v->value);
		if (async_track(v, &track, &track_len)) {
			p.track = track;
			p.track_len = track_len;
			p.phase = v->phase == TL_PHASE_ASYNC_BEGIN ? 'G'
			          : v->phase == TL_PHASE_ASYNC_END ? 'H'
			                                           : 'N';
		} else if (v->phase == TL_PHASE_ASYNC_INSTANT) {
			p.phase = 'N';
			category_track(v, &p.track, &p.track_len);
		} else {
			p.phase = v->phase == TL_PHASE_ASYNC_BEGIN ? 'S' : 'F';
		}
		break;
	default:
		return 0;
	}
	if (send(st, &p) != 0)
		return -1;
	note_written(st, v->phase == TL_PHASE_COMPLETE ? v->value : v->ts);
	return 1;
}

/* Formats B|pid|name (name not NULL) or E|pid into buf: a name with no
 * byte to replace, no trailing blank, that fits, copied as it is. Returns
 * the length, or 0 when the name needs the general formatter. */
static size_t format_slice(char *buf, char phase, const char *name)
{
	buf[0] = phase == TL_PHASE_BEGIN ? 'B' : 'E';
	buf[1] = '|';
	memcpy(buf + 2, thread_state.pid_text, sizeof thread_state.pid_text);
	size_t n = 2 + thread_state.pid_len;
	if (!name)
		return n;
	/* up to the first separator; glibc scans this with vector compares */
	size_t len = strcspn(name, "|\n\r");
	if (name[len] != '\0' || len > TL_ATRACE_PAYLOAD_MAX - 1 - n ||
	    (len > 0 && tl_atrace_is_blank(name[len - 1])))
		return 0;
	buf[n++] = '|';
	memcpy(buf + n, name, len);
	return n + len;
}

/* The payload of a slice begin or end from the slot's cache, made there
 * first when it is not; NULL when it does not fit there (*len then 0 when
 * the name needs the general formatter, else the length formatted into
 * buf). pid_text is current. */
static const char *cached_slice(struct slice_cache *sc, char phase, const char *name, char *buf,
                                size_t *len)
{
	if (TL_UNLIKELY(sc->pid != tl_pid)) {
		sc->name = NULL;
		sc->end_len = (uint32_t)format_slice(sc->end, TL_PHASE_END, NULL);
		sc->pid = tl_pid;
	}
	if (!name) {
		*len = sc->end_len;
		return sc->end;
	}
	if (TL_LIKELY(name == sc->name)) {
		*len = sc->begin_len;
		return sc->begin;
	}
	*len = format_slice(buf, phase, name);
	if (*len == 0 || *len > sizeof sc->begin)
		return NULL;
	memcpy(sc->begin, buf, *len);
	sc->begin_len = (uint32_t)*len;
	sc->name = name;
	return sc->begin;
}

/*
 * A slice begin (name not NULL) or end: B|pid|name or E|pid, from the
 * slot's cache when it can. Returns as write_event, or -2 when the name
 * needs the general formatter. Timed only once the thread has had a
 * complete event.
 */
static int write_slice(struct systrace *st, struct slice_cache *sc, char phase, const char *name)
{
	char buf[TL_ATRACE_PAYLOAD_MAX];
	pid_refresh();
	size_t len;
	const char *payload = cached_slice(sc, phase, name, buf, &len);
	if (!payload) {
		if (len == 0)
			return -2;
		payload = buf;
	}
	bool timed = thread_state.timed_session == st->session;
	uint64_t ts = timed ? tl_clock_read() : 0;
	if (write_payload(st, payload, len) != 0)
		return -1;
	if (timed)
		note_written(st, ts);
	return 1;
}

/*
 * Decodes a record. The slice begin with a kept name and no argument, and
 * the slice end, the common events, are read directly; the rest goes
 * through tl_record_decode. Returns 0 for a malformed record.
 */
static int decode(const uint64_t *record, size_t words, tl_record_view *v)
{
	uint64_t header = record[1];
	char phase = TL_REC_PHASE(header);
	if (TL_REC_WORDS(header) == words && TL_REC_FLAGS(header) == 0 &&
	    ((phase == TL_PHASE_BEGIN && words == 3) || (phase == TL_PHASE_END && words == 2))) {
		v->ts = record[0];
		v->phase = phase;
		v->flags = 0;
		v->category = TL_REC_CATEGORY(header);
		v->nargs = 0;
		v->value = 0;
		v->name = phase == TL_PHASE_BEGIN ? (const char *)(uintptr_t)record[2] : NULL;
		if (phase == TL_PHASE_BEGIN && !v->name)
			v->name = "";
		v->name_len = v->name ? strlen(v->name) : 0;
		return 1;
	}
	return tl_record_decode(record, words, v) != 0;
}

static void systrace_event(struct systrace *st, const uint64_t *record, size_t words)
{
	struct systrace_counters *c = my_counters();
	if (TL_UNLIKELY(words < 2)) {
		count(&c->dropped);
		return;
	}
	if (TL_UNLIKELY(is_flow(TL_REC_PHASE(record[1])))) {
		count(&c->flows_lost);
		return;
	}
	if (TL_UNLIKELY(atomic_load_explicit(&st->off, memory_order_relaxed))) {
		count(&c->dropped);
		return;
	}
	if (!gate_open(st)) {
		count(&c->tracing_off);
		return;
	}
	tl_record_view v;
	if (TL_UNLIKELY(!decode(record, words, &v))) {
		count(&c->dropped);
		return;
	}
	int rc = write_event(st, &v);
	count(rc > 0 ? &c->written : rc == 0 ? &c->not_representable : &c->dropped);
}

static void systrace_write_direct(struct tl_recorder *rec, const uint64_t *record, size_t words)
{
	int saved_errno = errno;
	systrace_event(rec->backend, record, words);
	errno = saved_errno;
}

/* systrace_write_slice past its common case. */
static __attribute__((noinline)) void slice_slow(struct tl_recorder *rec, char phase,
                                                 const char *name)
{
	struct systrace *st = rec->backend;
	size_t slot = (size_t)(tl_self - tl_slots);
	struct systrace_counters *c = &counters[slot];
	int *err = &errno;
	int saved_errno = *err;
	int rc;
	if (TL_UNLIKELY(atomic_load_explicit(&st->off, memory_order_relaxed))) {
		rc = -1;
	} else if (TL_UNLIKELY(!gate_open(st))) {
		count(&c->tracing_off);
		*err = saved_errno;
		return;
	} else if (TL_UNLIKELY((rc = write_slice(st, &slice_caches[slot], phase, name)) == -2)) {
		tl_record_view v = {.ts = tl_clock_read(),
		                    .phase = phase,
		                    .name = name,
		                    .name_len = name ? strlen(name) : 0};
		rc = write_event(st, &v);
	}
	count(rc > 0 ? &c->written : rc == 0 ? &c->not_representable : &c->dropped);
	*err = saved_errno;
}

/*
 * A plain slice begin (name, never NULL) or end (name NULL) from the
 * emitters' fast forms, without a record: no clock read while the gate is
 * open (and the thread has had no complete event). The common case, a
 * payload the thread's cache holds, is written from there with nothing
 * else to do; the rest is slice_slow's.
 */
static void systrace_write_slice(struct tl_recorder *rec, char phase, const char *name)
{
	struct systrace *st = rec->backend;
	size_t slot = (size_t)(tl_self - tl_slots);
	const struct slice_cache *sc = &slice_caches[slot];
	if (TL_LIKELY(!atomic_load_explicit(&st->off, memory_order_relaxed) &&
	              (st->tracing_on_fd < 0 ||
	               atomic_load_explicit(&st->gate_on, memory_order_relaxed)) &&
	              sc->pid == tl_pid && thread_state.timed_session != st->session &&
	              (!name || name == sc->name))) {
		int *err = &errno;
		int saved_errno = *err;
		int rc = name ? write_payload(st, sc->begin, sc->begin_len)
		              : write_payload(st, sc->end, sc->end_len);
		count(rc == 0 ? &counters[slot].written : &counters[slot].dropped);
		*err = saved_errno;
		return;
	}
	slice_slow(rec, phase, name);
}

/* ---- start, stop, stats, fork ------------------------------------------------------ */

/* A name tracefs would take as one directory under instances/. */
static int instance_name_valid(const char *name)
{
	return strchr(name, '/') == NULL && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* The tracefs directory: libtracefs finds (or mounts) it; without it, the
 * usual mount points are tried. NULL when there is none. */
static const char *tracing_dir(void)
{
#ifdef TL_HAVE_TRACEFS
	return tracefs_tracing_dir();
#else
	static const char *const dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	char path[64];
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(path, sizeof path, "%s/trace_marker", dirs[i]);
		if (access(path, F_OK) == 0)
			return dirs[i];
	}
	return NULL;
#endif
}

/* tl_timestamp units in ns nanoseconds: ns itself, or TSC ticks measured
 * against the first calibration pair over at least 20 µs. */
static uint64_t timestamp_span(int64_t ns)
{
	if (!tl_clock_is_tsc())
		return (uint64_t)ns;
	tl_clock_pair first, now;
	if (tl_clock_pairs(&first, 1) != 1)
		first = tl_clock_calibrate(0, 0);
	do
		now = tl_clock_calibrate(0, 0);
	while (now.ns - first.ns < 20 * 1000);
	double per_ns = (double)(now.ticks - first.ticks) / (double)(now.ns - first.ns);
	return (uint64_t)(per_ns * (double)ns);
}

static void counters_reset(void)
{
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		struct systrace_counters *c = &counters[i];
		atomic_store(&c->written, 0);
		atomic_store(&c->dropped, 0);
		atomic_store(&c->truncated, 0);
		atomic_store(&c->not_representable, 0);
		atomic_store(&c->flows_lost, 0);
		atomic_store(&c->tracing_off, 0);
		atomic_store(&c->write_errors, 0);
	}
}

static int systrace_start(struct tl_recorder *rec, const tl_options *opts)
{
	struct systrace *st = &systrace_state;
	const char *instance = opts->tracefs_instance;
	if (instance && !*instance)
		instance = NULL;
	if (instance && !instance_name_valid(instance)) {
		tl_log(TL_LOG_ERROR, "systrace recorder: tracefs instance '%s': not a valid name",
		       instance);
		return -EINVAL;
	}
	const char *top = tracing_dir();
	if (!top) {
		tl_log(TL_LOG_ERROR, "systrace recorder: tracefs not found (mount it with 'mount "
		                     "-t tracefs nodev /sys/kernel/tracing')");
		return -ENOENT;
	}
	char dir[PATH_MAX - 16]; /* room left for "/trace_marker" */
	int n = instance ? snprintf(dir, sizeof dir, "%s/instances/%s", top, instance)
	                 : snprintf(dir, sizeof dir, "%s", top);
	if (n < 0 || (size_t)n >= sizeof dir) {
		tl_log(TL_LOG_ERROR, "systrace recorder: tracefs path too long");
		return -ENAMETOOLONG;
	}
	snprintf(st->marker_path, sizeof st->marker_path, "%s/trace_marker", dir);
	int fd = open(st->marker_path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		tl_log(TL_LOG_ERROR, "systrace recorder: cannot open %s: %s", st->marker_path,
		       strerror(err));
		return -err;
	}

	int gate_fd = -1;
	if (!opts->systrace_no_gate) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/tracing_on", dir);
		gate_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (gate_fd < 0)
			tl_log(TL_LOG_WARNING,
			       "systrace recorder: cannot read %s (%s): writing every event", path,
			       strerror(errno));
	}

	st->marker_fd = fd;
	st->tracing_on_fd = gate_fd;
	st->gate_interval = timestamp_span(GATE_INTERVAL_NS);
	st->live_window = timestamp_span(LIVE_WINDOW_NS);
	st->session = ++session_counter;
	atomic_store(&st->off, 0);
	atomic_store(&st->fd_closed, 0);
	atomic_store(&st->gate_on, gate_fd >= 0 ? read_tracing_on(gate_fd) : 1);
	atomic_store(&st->gate_next, tl_clock_read() + st->gate_interval);
	counters_reset();
	rec->backend = st;
	return 0;
}

static void systrace_stop(struct tl_recorder *rec)
{
	struct systrace *st = rec->backend;
	if (!atomic_load(&st->fd_closed))
		close(st->marker_fd);
	if (st->tracing_on_fd >= 0)
		close(st->tracing_on_fd);
	st->marker_fd = -1;
	st->tracing_on_fd = -1;
	rec->backend = NULL;
}

static uint64_t load(const _Atomic uint64_t *counter)
{
	return atomic_load_explicit(counter, memory_order_relaxed);
}

static void systrace_stats(struct tl_recorder *rec, tl_stats *out)
{
	(void)rec;
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		const struct systrace_counters *c = &counters[i];
		out->events_written += load(&c->written);
		out->events_dropped += load(&c->dropped);
		out->names_truncated += load(&c->truncated);
		out->events_not_representable += load(&c->not_representable);
		out->flows_lost += load(&c->flows_lost);
		out->events_tracing_off += load(&c->tracing_off);
		out->write_errors += load(&c->write_errors);
	}
}

/* The child keeps the descriptors and counts its own events from zero. */
static void systrace_after_fork_child(struct tl_recorder *rec)
{
	(void)rec;
	counters_reset();
}

const struct tl_recorder_ops tl_systrace_ops = {
    .name = "systrace",
    .kind = TL_RECORDER_SYSTRACE,
    .default_bytes = 0,
    .start = systrace_start,
    .stop = systrace_stop,
    .write_direct = systrace_write_direct,
    .write_slice = systrace_write_slice,
    .stats = systrace_stats,
    .after_fork_child = systrace_after_fork_child,
};
