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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef TL_HAVE_TRACEFS
#include <tracefs.h>
#endif

#include "recorder/atrace_format.h"
#include "recorder/recorder.h"
#include "recorder/tracer.h"

/* tracing_on is read again at most this often. */
#define GATE_INTERVAL_NS (100 * 1000 * 1000)
/* A complete or async event is written only if it starts at most this long
 * before it reaches the recorder: the kernel stamps the write, not us. */
#define LIVE_WINDOW_NS (100 * 1000)
/* A thread's first event reaches the recorder after the thread's
 * registration (a walk of the thread table and two signal-mask calls),
 * which a loaded machine can stretch far past the live window by
 * preempting the thread: that first event may reach the recorder this long
 * after its end. */
#define FIRST_EVENT_GRACE_NS (1000 * 1000 * 1000)

struct systrace {
	int marker_fd;
	int tracing_on_fd;      /* -1: no gate */
	uint64_t gate_interval; /* GATE_INTERVAL_NS in tl_timestamp units */
	uint64_t live_window;   /* LIVE_WINDOW_NS in tl_timestamp units */
	uint64_t first_grace;   /* FIRST_EVENT_GRACE_NS in tl_timestamp units */
	uint32_t session;       /* tells this session's thread state from older ones */
	char marker_path[PATH_MAX];
	_Atomic uint64_t gate_next; /* tl_timestamp after which tracing_on is read */
	_Atomic int gate_on;
	_Atomic int off;       /* turned itself off after a fatal write error */
	_Atomic int fd_closed; /* marker_fd was closed under us: never close it */
};

/*
 * What the recorder keeps per thread, in a table of its own: the thread's
 * counters; the payloads of its last slice begin (for a name of at most
 * SLICE_NAME_CACHED bytes) and of a slice end, as written for the process
 * `pid` (a kept name does not change, timeline.h, so the same pointer gives
 * the same payload, written again without formatting); the timestamp of
 * its last written event (for the liveness of complete events), valid when
 * `session` matches; the session from which on its slice begins and ends
 * are timed too (timed_session, see complete_is_live); its tgid in decimal;
 * the tid its timing state belongs to.
 *
 * The entries are the core's writers (tl_recorder_writer_index): a
 * thread's own emits at nesting level 0 and, on levels 1 to 3, the emits of
 * signal handlers that interrupted an emit of the thread, each level its
 * own entry, so that a nested write leaves the interrupted one's cache and
 * counters untouched. A thread has the entries of its slot in the core's
 * thread table, given back with the slot when the thread exits (no lock,
 * nothing to do at exit: a later thread that takes the slot starts its
 * timing state afresh, thread_take). Each entry is written by one emit at
 * a time: plain relaxed stores, no locked instruction, no shared cache
 * line.
 */
#define SLICE_NAME_CACHED 64
struct slice_cache {
	const char *name; /* NULL: nothing cached */
	pid_t pid;
	uint32_t begin_len, end_len;
	char end[24];
	char begin[2 + 20 + 1 + SLICE_NAME_CACHED];
};

struct systrace_counters {
	_Atomic uint64_t written;
	_Atomic uint64_t dropped;
	_Atomic uint64_t truncated;
	_Atomic uint64_t not_representable;
	_Atomic uint64_t flows_lost;
	_Atomic uint64_t tracing_off;
	_Atomic uint64_t write_errors;
};

struct systrace_thread {
	struct systrace_counters counters;
	struct slice_cache cache;
	uint64_t last_ts;
	uint32_t session;
	uint32_t timed_session;
	pid_t pid;
	uint32_t tid; /* whose last_ts, session and timed_session these are */
	size_t pid_len;
	char pid_text[24];
} __attribute__((aligned(TL_CACHELINE)));

static struct systrace systrace_state = {.marker_fd = -1, .tracing_on_fd = -1};
#define SYSTRACE_WRITERS (TL_NEST_LEVELS * TL_MAX_THREADS)
static struct systrace_thread threads[SYSTRACE_WRITERS];
static uint32_t session_counter;
/* The thread's level-0 entry, once taken. */
static __thread struct systrace_thread *thread_self __attribute__((tls_model("initial-exec")));

/* The entry t for the calling thread: its timing state started afresh when
 * it was another thread's. */
static struct systrace_thread *thread_take(struct systrace_thread *t)
{
	uint32_t tid = tl_recorder_thread_tid();
	if (t->tid != tid) {
		t->last_ts = 0;
		t->session = 0;
		t->timed_session = 0;
		t->tid = tid;
	}
	return t;
}

/* The thread's level-0 entry, at its first event under this recorder:
 * afresh, its nested levels' too (a thread of the same tid may have had
 * the slot before). */
static __attribute__((noinline)) struct systrace_thread *thread_first(void)
{
	uint32_t index = tl_recorder_thread_index();
	for (unsigned level = 1; level < TL_NEST_LEVELS; level++)
		threads[index + level * TL_MAX_THREADS].tid = 0;
	threads[index].tid = 0;
	thread_self = thread_take(&threads[index]);
	return thread_self;
}

/* The entry of the calling writer (thread and nesting level). */
static inline struct systrace_thread *thread_get(void)
{
	if (TL_UNLIKELY(tl_recorder_writer_level() != 0))
		return thread_take(&threads[tl_recorder_writer_index()]);
	struct systrace_thread *t = thread_self;
	if (TL_LIKELY(t != NULL))
		return t;
	return thread_first();
}

/* Adds one to a counter of the writer's entry (one writer at a time). */
static inline void count(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

static inline struct systrace_counters *my_counters(void)
{
	return &thread_get()->counters;
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
/*
 * write(2) as the system call itself: no errno (a failure comes back as
 * -errno), so the common path has no errno to save and restore, and no
 * cancellation-point bookkeeping. Where the call is not written out here,
 * the libc wrapper, errno kept.
 */
static inline long marker_write(int fd, const char *buf, size_t len)
{
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "0"((long)SYS_write), "D"((long)fd), "S"(buf), "d"(len)
	                 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_write;
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)buf;
	register long x2 __asm__("x2") = (long)len;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory", "cc");
	return x0;
#else
	int saved_errno = errno;
	ssize_t n = write(fd, buf, len);
	long ret = n >= 0 ? (long)n : -(long)errno;
	errno = saved_errno;
	return ret;
#endif
}

static int write_payload(struct systrace *st, const char *buf, size_t len)
{
	for (;;) {
		long ret = marker_write(st->marker_fd, buf, len);
		if (TL_LIKELY(ret >= 0))
			return 0;
		int err = (int)-ret;
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

/* ---- clock sync ---------------------------------------------------------------- */

/* One write, retried on EINTR; a failure is left alone: a clock sync is
 * not an event, and the next event's write says what went wrong. */
static void write_untracked(const struct systrace *st, const char *buf, size_t len)
{
	while (marker_write(st->marker_fd, buf, len) == -EINTR)
		;
}

/*
 * The clock sync markers (atrace_format.h): CLOCK_REALTIME, then the trace
 * clock, each read just before its write, so that the kernel's timestamp
 * of each marker ties the capture's clock to them (docs/capture.md,
 * "Clocks"). In atrace's order: the first write of a session is the
 * slower one (a few us more), and parent_ts, which aligns to the
 * microsecond, goes second. Written when a session starts with tracing on,
 * and again when the gate finds tracing on after it was off: a capture
 * that starts later gets them too. Async-signal-safe.
 */
static void write_clock_sync(struct systrace *st)
{
	if (atomic_load_explicit(&st->off, memory_order_relaxed))
		return;
	char buf[TL_ATRACE_CLOCK_SYNC_MAX];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	size_t len = tl_atrace_format_clock_sync(buf, TL_ATRACE_REALTIME_TS,
	                                         (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
	write_untracked(st, buf, len);
	len = tl_atrace_format_clock_sync(buf, TL_ATRACE_PARENT_TS, tl_now_ns());
	write_untracked(st, buf, len);
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
	uint64_t now = tl_now();
	uint64_t expected = atomic_load_explicit(&st->gate_next, memory_order_relaxed);
	if ((int64_t)(now - expected) < 0)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&st->gate_next, &expected,
	                                             now + st->gate_interval, memory_order_relaxed,
	                                             memory_order_relaxed))
		return atomic_load_explicit(&st->gate_on, memory_order_relaxed);
	int on = read_tracing_on(st->tracing_on_fd);
	if (on)
		write_clock_sync(st);
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

/* The category as a track: "default" when it has no name, as the
 * exporters write it. */
static void category_track(const tl_record_view *v, struct tl_atrace_payload *p)
{
	const char *name = tl_category_name(v->category);
	p->track = name ? name : "";
	p->track_len = strlen(p->track);
	p->track_fallback = "default";
}

/* At most `window` ago (a timestamp ahead of now counts as recent). */
static int is_recent(uint64_t ts, uint64_t window)
{
	return (int64_t)(tl_now() - ts) <= (int64_t)window;
}

/*
 * A complete event is live when it starts within the live window and not
 * before this thread's previous written event, so that writing its B and E
 * now keeps the thread's slices nested as they happened. Slice begins and
 * ends are not timed (the clock read beside the write is a tenth of its
 * cost) until the thread's first complete event of the session: that one
 * is checked against the thread's other events only, the later ones
 * against everything. The thread's very first event (`first`) came
 * through the thread's registration: it is live when it lasts at most the
 * live window and ends within FIRST_EVENT_GRACE_NS, so that no event is
 * lost for being a thread's first. A signal handler's events, on a nested
 * level, are checked against that level's previous event.
 */
static int complete_is_live(const struct systrace *st, const tl_record_view *v, bool first)
{
	struct systrace_thread *t = thread_get();
	t->timed_session = st->session;
	if (v->value < v->ts)
		return 0;
	if (first)
		return v->value - v->ts <= st->live_window && is_recent(v->value, st->first_grace);
	if (t->session == st->session && v->ts < t->last_ts)
		return 0;
	return is_recent(v->ts, st->live_window);
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
	if (TL_UNLIKELY(thread_get()->pid != tl_pid)) {
		thread_get()->pid = tl_pid;
		thread_get()->pid_len = tl_atrace_format_i64(thread_get()->pid_text, tl_pid);
	}
}

/* What this thread wrote last, for complete_is_live. */
static inline void note_written(const struct systrace *st, uint64_t ts)
{
	thread_get()->session = st->session;
	thread_get()->last_ts = ts;
}

/* Turns one decoded record into its payloads; `first`: the thread's first
 * event (complete_is_live). Returns 1 written, 0 not representable, -1
 * failed (counted by write_payload). */
static int write_event(struct systrace *st, const tl_record_view *v, bool first)
{
	pid_refresh();
	char numbered[TL_RECORD_NAME_MAX];
	struct tl_atrace_payload p = {.pid = thread_get()->pid_text,
	                              .pid_len = thread_get()->pid_len};
	p.name = tl_record_name(v, numbered, &p.name_len);
	const char *symbol; /* a function record's name: its symbol, or module+0xoffset */
	if (TL_UNLIKELY(v->flags & TL_REC_F_FUNCTION) &&
	    (symbol = tl_tracer_function_name_now((uint32_t)v->value, numbered, sizeof numbered))) {
		p.name = symbol;
		p.name_len = strlen(symbol);
	}
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
		if (!complete_is_live(st, v, first))
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
		category_track(v, &p);
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
		if (!is_recent(v->ts, first ? st->first_grace : st->live_window))
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
			category_track(v, &p);
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

/* Formats B|pid|name (name not NULL) or E|pid into buf. Returns the
 * length, or 0 when the name had to be shortened (the general formatter
 * then writes it and counts the cut). */
static size_t format_slice(char *buf, char phase, const char *name)
{
	struct tl_atrace_payload p = {.phase = phase == TL_PHASE_BEGIN ? 'B' : 'E',
	                              .pid = thread_get()->pid_text,
	                              .pid_len = thread_get()->pid_len,
	                              .name = name,
	                              .name_len = name ? strlen(name) : 0};
	int truncated = 0;
	size_t n = tl_atrace_format(buf, &p, &truncated);
	return truncated ? 0 : n;
}

/* The payload of a slice begin or end from the thread's cache, made there
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
 * thread's cache when it can. Returns as write_event, or -2 when the name
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
	bool timed = thread_get()->timed_session == st->session;
	uint64_t ts = timed ? tl_now() : 0;
	if (write_payload(st, payload, len) != 0)
		return -1;
	if (timed)
		note_written(st, ts);
	return 1;
}

/* A slice begin with a kept name and no argument, or a slice end: the
 * common events, written from the thread's cache when it can. */
static inline bool is_plain_slice(const tl_record_view *v)
{
	return (v->phase == TL_PHASE_BEGIN && v->flags == 0 && v->nargs == 0) ||
	       v->phase == TL_PHASE_END;
}

/* systrace_write_event past its common case. */
static __attribute__((noinline)) void write_event_slow(struct systrace *st,
                                                       const tl_record_view *event)
{
	bool first = thread_self == NULL && tl_recorder_writer_level() == 0;
	struct systrace_thread *t = thread_get();
	struct systrace_counters *c = &t->counters;
	if (TL_UNLIKELY(is_flow(event->phase))) {
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
	int rc = -2;
	if (is_plain_slice(event))
		rc = write_slice(st, &t->cache, event->phase,
		                 event->phase == TL_PHASE_BEGIN ? event->name : NULL);
	if (rc == -2) {
		tl_record_view v = *event;
		if (!v.ts)
			v.ts = tl_now();
		if (v.name && v.name_len == TL_RECORD_LEN_UNMEASURED)
			v.name_len = strlen(v.name);
		rc = write_event(st, &v, first);
	}
	count(rc > 0 ? &c->written : rc == 0 ? &c->not_representable : &c->dropped);
}

/*
 * A plain slice begin (name, never NULL) or end (name NULL) from the
 * emitters' fast forms, without a decoded event: no clock read while the
 * gate is open (and the thread has had no complete event). The common
 * case, a payload the thread's cache holds, is written from there with
 * nothing else to do (marker_write leaves errno alone); the rest is
 * write_event_slow's. errno is kept.
 */
static void systrace_write_slice(struct tl_recorder *rec, char phase, const char *name)
{
	struct systrace *st = rec->backend;
	struct systrace_thread *t = thread_self;
	if (TL_LIKELY(t != NULL && !atomic_load_explicit(&st->off, memory_order_relaxed) &&
	              (st->tracing_on_fd < 0 ||
	               atomic_load_explicit(&st->gate_on, memory_order_relaxed)) &&
	              t->cache.pid == tl_pid && t->timed_session != st->session &&
	              (!name || name == t->cache.name))) {
		const struct slice_cache *sc = &t->cache;
		int rc = name ? write_payload(st, sc->begin, sc->begin_len)
		              : write_payload(st, sc->end, sc->end_len);
		_Atomic uint64_t *c = rc == 0 ? &t->counters.written : &t->counters.dropped;
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
		return;
	}
	tl_record_view v = {
	    .phase = phase, .name = name, .name_len = name ? TL_RECORD_LEN_UNMEASURED : 0};
	int *err = &errno;
	int saved_errno = *err;
	write_event_slow(st, &v);
	*err = saved_errno;
}

/* One event from the emitting thread; plain slices of its own level go as
 * above (a nested level's through its own entry). errno is kept. */
static void systrace_write_event(struct tl_recorder *rec, const tl_record_view *event)
{
	if (is_plain_slice(event) && tl_recorder_writer_level() == 0) {
		systrace_write_slice(rec, event->phase,
		                     event->phase == TL_PHASE_BEGIN ? event->name : NULL);
		return;
	}
	int *err = &errno;
	int saved_errno = *err;
	write_event_slow(rec->backend, event);
	*err = saved_errno;
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

/* A span of ns in tl_timestamp units (ns itself, or TSC ticks), from the
 * clock map. */
static uint64_t timestamp_span(int64_t ns)
{
	tl_clock_map map;
	tl_clock_map_init(&map);
	return tl_clock_map_span_raw_max(&map, ns);
}

/* Zeroes a counter; one already zero is not written, so that the entries
 * never used stay untouched pages. */
static void clear(_Atomic uint64_t *counter)
{
	if (atomic_load(counter))
		atomic_store(counter, 0);
}

static void counters_reset(void)
{
	for (size_t i = 0; i < SYSTRACE_WRITERS; i++) {
		struct systrace_counters *c = &threads[i].counters;
		clear(&c->written);
		clear(&c->dropped);
		clear(&c->truncated);
		clear(&c->not_representable);
		clear(&c->flows_lost);
		clear(&c->tracing_off);
		clear(&c->write_errors);
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
	st->first_grace = timestamp_span(FIRST_EVENT_GRACE_NS);
	st->session = ++session_counter;
	atomic_store(&st->off, 0);
	atomic_store(&st->fd_closed, 0);
	atomic_store(&st->gate_on, gate_fd >= 0 ? read_tracing_on(gate_fd) : 1);
	atomic_store(&st->gate_next, tl_now() + st->gate_interval);
	counters_reset();
	if (atomic_load(&st->gate_on))
		write_clock_sync(st);
	tl_tracer_function_names_start(); /* function records' names; without it, module+0xoffset */
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
	for (size_t i = 0; i < SYSTRACE_WRITERS; i++) {
		const struct systrace_counters *c = &threads[i].counters;
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
    .write_event = systrace_write_event,
    .write_slice = systrace_write_slice,
    .stats = systrace_stats,
    .after_fork_child = systrace_after_fork_child,
};
