/*
 * Function instrumentation (include/timeline/instrument.h): what the
 * -finstrument-functions hooks (tracers/instrument/hooks.c, their own
 * small library) call. A client of the tracer interface: function
 * records, retract, the clock map.
 *
 * Each thread keeps a shadow stack of its calls in memory of its own,
 * mapped at its first call (mmap: async-signal-safe) and handed at its
 * exit to the next thread that starts. Every call within
 * TL_INSTRUMENT_STACK_MAX is pushed, recorded or not, so that an exit
 * always finds its own entry: exits are matched by function address from
 * the top down; the frames above a match were skipped (longjmp, an
 * exception unwinding code built without the hooks) and are closed then.
 *
 * The hooks' fast paths write their record inline through a reservation
 * of the tracer interface (tl_tracer_reserve2) and push or pop their frame
 * while they hold it: on the TSC in the hook itself, on clock_gettime in a
 * function the hook jumps to with the reservation (so that the call to
 * clock_gettime makes the TSC path save no register). The thread's slot
 * is then busy, as in an emit, and that is the re-entry guard. A hook call
 * made while its thread is inside a hook or an emit (a signal handler
 * interrupting one, code one calls being instrumented) finds the slot busy
 * (tl_tracer_reserve2 answers BUSY, tl_tracer_thread_busy says so) and is
 * a counted drop, enter and exit alike; every path that changes the stack
 * without a reservation checks it first. Slow paths hold the stack instead
 * (hold: its capacity 0, which sends any hook call made meanwhile to a
 * slow path that drops it); the signal fences keep the compiler from
 * moving the frame's stores out of either.
 *
 * Nothing here may be built with -finstrument-functions: every function
 * carries no_instrument_function, so that a build that adds the flag to
 * the library's own sources still does not call the hooks from inside
 * them (the re-entry flag would drop those calls, at a cost).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <timeline/instrument.h>

#include "recorder/tracer.h"
#include "tracers/instrument_patterns.h"


struct frame {
	const void *function;
	tl_timestamp ts;  /* the entry's record; 0: not recorded */
	uint32_t session; /* the session it was recorded in */
	uint32_t pad_;
};

/*
 * A thread's state. depth counts the calls in progress, those past the
 * stack's capacity included (only the first TL_INSTRUMENT_STACK_MAX have a
 * frame). capacity is TL_INSTRUMENT_STACK_MAX, and 0 while a slow path
 * changes the stack: a hook then finds no room and goes to its slow path,
 * which sees the thread busy.
 *
 * The states are kept for the life of the process in one list: a thread
 * that exits hands its state to the next thread that starts. So the
 * counters of the hot paths are per state, written by its thread alone
 * (while it holds its slot or its stack: no signal handler's hook can
 * interleave) with no atomic read-modify-write, and summed by
 * tl_instrument_stats_get.
 */
struct instrument_thread {
	uint32_t depth;
	uint32_t capacity;
	_Atomic uint32_t in_use;
	uint32_t pad_;
	uint64_t min_ns;  /* the minimum duration min_raw was computed for */
	uint64_t min_raw; /* the minimum duration in raw clock units */
	_Atomic uint64_t filtered, too_deep;
	struct instrument_thread *next; /* the list of every state */
	tl_clock_map map;
	struct frame frames[];
};

#define THREAD_BYTES                                                                               \
	(sizeof(struct instrument_thread) + TL_INSTRUMENT_STACK_MAX * sizeof(struct frame))

/* Stand-ins with no frame (capacity 0), so that the hooks' fast paths need
 * no NULL check: every thread starts on not_started and maps its stack at
 * its first call (on starting meanwhile, which is busy); failed is a
 * thread whose stack could not be mapped, ended one that exited (its
 * later calls, from a TLS destructor or a signal handler during the exit,
 * are counted in after_exit). Never written. */
static struct instrument_thread not_started, starting, failed, ended;
static __thread struct instrument_thread *self __attribute__((tls_model("initial-exec"))) =
    &not_started;

/*
 * The switches. settings holds both, changed by compare-and-swap so that
 * two changes made at once both hold: bits 0-15 max_depth, bit 16 off.
 * record_below is what the hooks read: the depth below which calls are
 * recorded (max_depth, or 0 while off), stored after settings by each
 * change, which stores it again until it agrees with settings
 * (async-signal-safe, and the last one stored is right).
 */
#define SETTING_DEPTH_MASK 0xffffu
#define SETTING_OFF 0x10000u
#define SETTING_PATTERNS 0x20000u /* name patterns set: the slow path decides */
static _Atomic uint32_t settings = TL_INSTRUMENT_STACK_MAX;
static _Atomic uint32_t record_below = TL_INSTRUMENT_STACK_MAX;
_Static_assert(TL_INSTRUMENT_STACK_MAX <= SETTING_DEPTH_MASK, "a depth fits the settings");

static _Atomic uint64_t min_ns;
/* The category "function"; a disabled stand-in until the library's setup. */
static const tl_category category_unset = {.enabled = 0, .index = 0, .name = "function"};
static const tl_category *_Atomic function_cat = &category_unset;
/* Its END, prepared (tl_tracer_end_prepare) at the library's setup. */
static _Atomic uint64_t function_end;
static pthread_key_t thread_key;
static _Atomic bool have_key;

static struct {
	_Atomic uint64_t reentered, frames_closed, exits_unmatched, threads_failed, excluded,
	    after_exit;
} counts;

static TL_NO_INSTRUMENT void add(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static TL_NO_INSTRUMENT const tl_category *category(void)
{
	return atomic_load_explicit(&function_cat, memory_order_acquire);
}

/* A slow path's hold on its thread's stack: hook calls made meanwhile (a
 * signal handler, code the slow path calls) are dropped as re-entered. */
static TL_NO_INSTRUMENT void hold(struct instrument_thread *t)
{
	t->capacity = 0;
	atomic_signal_fence(memory_order_seq_cst);
}

static TL_NO_INSTRUMENT void release(struct instrument_thread *t)
{
	atomic_signal_fence(memory_order_seq_cst);
	t->capacity = TL_INSTRUMENT_STACK_MAX;
}

/* The END of a recorded call when its session still runs: inline when it
 * can, else the out-of-line emitter. */
static TL_NO_INSTRUMENT void frame_end(const struct frame *f)
{
	tl_tracer_reservation r;
	switch (tl_tracer_reserve2(&r)) {
	case TL_TRACER_RESERVED:
		if (r.session == f->session)
			tl_tracer_commit_end(
			    &r, atomic_load_explicit(&function_end, memory_order_relaxed));
		else
			tl_tracer_cancel(&r); /* the entry's session is over */
		break;
	case TL_TRACER_MISS:
		if (f->session == tl_tracer_session())
			tl_tracer_end(category());
		break;
	default: /* BUSY: a hook's slow path holds no slot; not reached */
		break;
	}
}

/* Counts one on a state's own counter (its thread only, holding it). */
static TL_NO_INSTRUMENT void add_own(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

/* Every thread state made so far, newest first; never shortened. */
static _Atomic(struct instrument_thread *) all_threads;

/* Thread exit: the calls still open are closed, the state handed back. */
static TL_NO_INSTRUMENT void thread_end(void *arg)
{
	struct instrument_thread *t = arg;
	self = &ended; /* a later destructor's calls record nothing */
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t depth = t->depth < TL_INSTRUMENT_STACK_MAX ? t->depth : TL_INSTRUMENT_STACK_MAX;
	while (depth > 0) {
		const struct frame *f = &t->frames[--depth];
		if (f->ts)
			frame_end(f);
		add(&counts.frames_closed);
	}
	t->depth = 0;
	atomic_store_explicit(&t->in_use, 0, memory_order_release);
}

/* A state no thread uses, taken; else a new one, mapped (mmap:
 * async-signal-safe) and added to the list. NULL when mapping failed. */
static TL_NO_INSTRUMENT struct instrument_thread *thread_take(void)
{
	for (struct instrument_thread *t = atomic_load_explicit(&all_threads, memory_order_acquire);
	     t; t = t->next) {
		uint32_t free = 0;
		if (atomic_load_explicit(&t->in_use, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(
		        &t->in_use, &free, 1, memory_order_acquire, memory_order_relaxed))
			return t;
	}
	void *p =
	    mmap(NULL, THREAD_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct instrument_thread *t = p;
	t->capacity = TL_INSTRUMENT_STACK_MAX;
	atomic_store_explicit(&t->in_use, 1, memory_order_relaxed);
	t->next = atomic_load_explicit(&all_threads, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&all_threads, &t->next, t,
	                                              memory_order_release, memory_order_relaxed))
		;
	return t;
}

/* The thread's first call: takes a state. */
static TL_NO_INSTRUMENT struct instrument_thread *thread_start(void)
{
	self = &starting;
	atomic_signal_fence(memory_order_seq_cst);
	struct instrument_thread *t = thread_take();
	if (!t) {
		add(&counts.threads_failed);
		return self = &failed;
	}
	if (atomic_load_explicit(&have_key, memory_order_acquire))
		pthread_setspecific(thread_key, t);
	atomic_signal_fence(memory_order_seq_cst);
	return self = t;
}

/* Whether min_raw is made for this minimum duration and clock (the map is
 * made again for every session: tl_clock_generation). */
static TL_NO_INSTRUMENT bool min_raw_ready(const struct instrument_thread *t, uint64_t ns)
{
	return t->min_ns == ns && tl_clock_map_current(&t->map);
}

/* The minimum duration in raw units, for the clock in use. */
static TL_NO_INSTRUMENT uint64_t min_raw(struct instrument_thread *t, uint64_t ns)
{
	if (TL_UNLIKELY(!min_raw_ready(t, ns))) {
		tl_clock_map_init(&t->map);
		t->min_raw = tl_clock_map_span_raw_min(&t->map, (int64_t)ns);
		t->min_ns = ns;
	}
	return t->min_raw;
}

/* Whether a call at depth is to be recorded. */
static TL_NO_INSTRUMENT bool recording(uint32_t depth)
{
	return depth < atomic_load_explicit(&record_below, memory_order_relaxed) &&
	       tl_category_enabled(category());
}

/*
 * Whether a call at depth is recorded under name patterns (the fast path
 * records none while they are set: record_below is 0); a call they leave
 * out is counted.
 */
static TL_NO_INSTRUMENT bool recording_by_patterns(uint32_t depth, const void *function)
{
	uint32_t s = atomic_load_explicit(&settings, memory_order_relaxed);
	if (!(s & SETTING_PATTERNS) || (s & SETTING_OFF) || depth >= (s & SETTING_DEPTH_MASK) ||
	    !tl_category_enabled(category()))
		return false;
	if (tl_instrument_patterns_allow(function))
		return true;
	add(&counts.excluded);
	return false;
}

/* An entry the fast path does not take, because the stack has no room:
 * the thread's first call, a thread with no stack, a slow path in
 * progress, a call past the stack's capacity. */
static TL_NO_INSTRUMENT __attribute__((noinline)) void enter_slow(void *function,
                                                         struct instrument_thread *t)
{
	if (t == &not_started) {
		if (thread_start() != &failed)
			tl_i_instrument_enter(function, NULL);
	} else if (t == &failed) {
	} else if (t == &ended) {
		add(&counts.after_exit);
	} else if (t->capacity == 0 || tl_tracer_thread_busy()) {
		add(&counts.reentered);
	} else {
		/* past the capacity: counted, no frame; its exit only counts down */
		hold(t);
		t->depth++;
		if (!(atomic_load_explicit(&settings, memory_order_relaxed) & SETTING_OFF) &&
		    tl_category_enabled(category()))
			add_own(&t->too_deep);
		release(t);
	}
}

/* An entry with room on the stack but no reservation: not recorded (off,
 * too deep, the category disabled), re-entered (BUSY), or recorded by the
 * out-of-line emitter (the fast path missed). */
static TL_NO_INSTRUMENT __attribute__((noinline)) void enter_unreserved(void *function,
                                                               struct instrument_thread *t, int got)
{
	uint32_t depth = t->depth;
	if (got == TL_TRACER_BUSY || tl_tracer_thread_busy()) {
		add(&counts.reentered);
		return;
	}
	hold(t);
	struct frame *f = &t->frames[depth];
	t->depth = depth + 1;
	f->function = function;
	f->ts = 0;
	if (recording(depth) || recording_by_patterns(depth, function)) {
		tl_tracer_reservation r;
		uint32_t id = tl_tracer_function_id(function);
		if (id != TL_TRACER_NO_ID && tl_tracer_reserve2(&r) == TL_TRACER_RESERVED) {
			f->session = r.session;
			f->ts = tl_tracer_commit_function(&r, id);
		} else {
			f->ts = tl_tracer_function_enter(function, NULL);
			f->session = tl_tracer_session();
		}
	} else if (depth >= (atomic_load_explicit(&settings, memory_order_relaxed) &
	                     (SETTING_OFF | SETTING_DEPTH_MASK)) &&
	           tl_category_enabled(category())) {
		add_own(&t->too_deep);
	}
	release(t);
}

/* The entry of a call to record, its slot held (r): the frame pushed, the
 * record written at the reservation's clock. Inlined twice: into the hook
 * for the TSC, and into enter_reserved_vdso for clock_gettime, whose call
 * (and the registers it makes a function save) stays out of the hook. */
static inline __attribute__((always_inline)) TL_NO_INSTRUMENT void
enter_reserved(struct instrument_thread *t, uint32_t depth, void *function, uint32_t id,
               tl_tracer_reservation *r)
{
	struct frame *f = &t->frames[depth];
	t->depth = depth + 1;
	f->function = function;
	f->session = r->session;
	f->ts = tl_tracer_commit_function(r, id);
}

/* enter_reserved on the clock_gettime path; the reservation comes as its
 * fields, in registers, so that the hook jumps here. */
static TL_NO_INSTRUMENT __attribute__((noinline)) void
enter_reserved_vdso(struct instrument_thread *t, void *function, uint32_t id, struct tl_slot *slot,
                    uint64_t pos, uint32_t session)
{
	tl_tracer_reservation r = {.slot = slot, .pos = pos, .session = session, .vdso = true};
	enter_reserved(t, t->depth, function, id, &r);
}

/*
 * The entry hook. Its fast path holds the thread's slot (a reservation of
 * the tracer interface) while it pushes the frame and writes the record:
 * a signal handler's hook call meanwhile finds the slot busy and is
 * dropped as re-entered. Off the fast path a slow path holds the stack
 * (hold) instead.
 */
TL_NO_INSTRUMENT void tl_i_instrument_enter(void *function, void *call_site)
{
	(void)call_site;
	struct instrument_thread *t = self;
	uint32_t depth = t->depth;
	if (TL_UNLIKELY(depth >= t->capacity)) {
		enter_slow(function, t);
		return;
	}
	int got = TL_TRACER_MISS;
	uint32_t id;
	tl_tracer_reservation r;
	if (TL_LIKELY(recording(depth)) &&
	    TL_LIKELY((id = tl_tracer_function_id(function)) != TL_TRACER_NO_ID) &&
	    TL_LIKELY((got = tl_tracer_reserve2(&r)) == TL_TRACER_RESERVED)) {
		if (!r.vdso)
			enter_reserved(t, depth, function, id, &r);
		else
			enter_reserved_vdso(t, function, id, r.slot, r.pos, r.session);
		return;
	}
	enter_unreserved(function, t, got);
}

/* The exit of a recorded call, its frame popped, the stack held: its END,
 * or with a minimum duration, its entry taken back when it was shorter. */
static TL_NO_INSTRUMENT void exit_recorded(struct instrument_thread *t, const struct frame *f)
{
	uint64_t ns = atomic_load_explicit(&min_ns, memory_order_relaxed);
	if (ns && tl_tracer_now() - f->ts < min_raw(t, ns) &&
	    tl_tracer_retract_function(f->ts, f->session))
		add_own(&t->filtered);
	else
		frame_end(f);
}

/* An exit the fast path does not take: no frame for it on top of the
 * stack (longjmp, an exception, an exit with no entry), past the
 * capacity, a slow path in progress, or a thread with no stack. */
static TL_NO_INSTRUMENT __attribute__((noinline)) void exit_slow(void *function, struct instrument_thread *t)
{
	uint32_t depth = t->depth;
	if (t->capacity == 0) {
		if (t == &not_started)
			add(&counts.exits_unmatched);
		else if (t == &ended)
			add(&counts.after_exit);
		else if (t != &failed)
			add(&counts.reentered);
		return;
	}
	if (tl_tracer_thread_busy()) {
		/* inside a hook's reservation or an emit: its entry was not
		 * pushed either */
		add(&counts.reentered);
		return;
	}
	hold(t);
	if (depth > TL_INSTRUMENT_STACK_MAX) {
		t->depth = depth - 1; /* a call past the capacity */
	} else {
		uint32_t at = depth;
		while (at > 0 && t->frames[at - 1].function != function)
			at--;
		if (at == 0) {
			add(&counts.exits_unmatched); /* entered before the stack, or skipped */
		} else {
			/* the frames above it were skipped: closed now */
			while (depth > at) {
				const struct frame *f = &t->frames[--depth];
				t->depth = depth;
				if (f->ts)
					frame_end(f);
				add(&counts.frames_closed);
			}
			const struct frame *f = &t->frames[at - 1];
			t->depth = at - 1;
			if (f->ts)
				exit_recorded(t, f);
		}
	}
	release(t);
}

/* The exit of a recorded call on top of the stack, with no reservation:
 * re-entered (BUSY: the frame stays, for a later exit to close), or a
 * minimum duration set, or the fast path missed. */
static TL_NO_INSTRUMENT __attribute__((noinline)) void exit_unreserved(struct instrument_thread *t, int got)
{
	if (got == TL_TRACER_BUSY) {
		add(&counts.reentered);
		return;
	}
	hold(t);
	const struct frame *f = &t->frames[--t->depth];
	exit_recorded(t, f);
	release(t);
}

/* The exit of a call not recorded, on top of the stack: popped, unless
 * the thread is inside a hook or an emit (then its entry was dropped
 * too, and the frame on top is another call's). */
static TL_NO_INSTRUMENT __attribute__((noinline)) void exit_unrecorded(struct instrument_thread *t,
                                                              uint32_t depth)
{
	if (tl_tracer_thread_busy()) {
		add(&counts.reentered);
		return;
	}
	t->depth = depth - 1;
}

/* The exit of the recorded call on top of the stack, its slot held (r):
 * popped, and its END written, or with a minimum duration its entry
 * taken back when it was shorter (one clock read for the test and the
 * END). Inlined twice, as enter_reserved. */
static inline __attribute__((always_inline)) TL_NO_INSTRUMENT void
exit_reserved(struct instrument_thread *t, uint32_t depth, tl_timestamp entry_ts,
              tl_tracer_reservation *r)
{
	const struct frame *f = &t->frames[depth - 1];
	uint64_t ns = atomic_load_explicit(&min_ns, memory_order_relaxed);
	if (TL_LIKELY(r->session == f->session && ns == 0)) {
		t->depth = depth - 1;
		tl_tracer_commit_end(r, atomic_load_explicit(&function_end, memory_order_relaxed));
		return;
	}
	if (r->session != f->session) {
		t->depth = depth - 1;
		tl_tracer_cancel(r); /* the entry's session is over */
		return;
	}
	if (TL_LIKELY(min_raw_ready(t, ns))) {
		t->depth = depth - 1;
		tl_timestamp now = tl_tracer_reserved_clock(r);
		if (now - entry_ts < t->min_raw && tl_tracer_retract_reserved(r, entry_ts))
			add_own(&t->filtered);
		else
			tl_tracer_commit_end_at(
			    r, atomic_load_explicit(&function_end, memory_order_relaxed), now);
		return;
	}
	tl_tracer_cancel(r); /* min_raw to make: off the fast path */
	exit_unreserved(t, TL_TRACER_MISS);
}

/* exit_reserved on the clock_gettime path (as enter_reserved_vdso). */
static TL_NO_INSTRUMENT __attribute__((noinline)) void
exit_reserved_vdso(struct instrument_thread *t, tl_timestamp entry_ts, struct tl_slot *slot,
                   uint64_t pos, uint32_t session)
{
	tl_tracer_reservation r = {.slot = slot, .pos = pos, .session = session, .vdso = true};
	exit_reserved(t, t->depth, entry_ts, &r);
}

/* The exit hook: as the entry hook, its fast path holds the thread's slot
 * while it pops the frame and writes the END. */
TL_NO_INSTRUMENT void tl_i_instrument_exit(void *function, void *call_site)
{
	(void)call_site;
	struct instrument_thread *t = self;
	uint32_t depth = t->depth;
	/* depth - 1 wraps for 0: no frame */
	if (TL_UNLIKELY(depth - 1 >= t->capacity || t->frames[depth - 1].function != function)) {
		exit_slow(function, t);
		return;
	}
	/* loaded before the reservation, whose asm makes the compiler load
	 * anything of memory again */
	tl_timestamp entry_ts = t->frames[depth - 1].ts;
	if (!entry_ts) {
		exit_unrecorded(t, depth);
		return;
	}
	tl_tracer_reservation r;
	int got = tl_tracer_reserve2(&r);
	if (TL_LIKELY(got == TL_TRACER_RESERVED)) {
		if (!r.vdso)
			exit_reserved(t, depth, entry_ts, &r);
		else
			exit_reserved_vdso(t, entry_ts, r.slot, r.pos, r.session);
		return;
	}
	exit_unreserved(t, got);
}

/* A number from the environment; fallback when unset or not a number. */
static TL_NO_INSTRUMENT uint64_t env_number(const char *name, uint64_t fallback)
{
	const char *s = secure_getenv(name);
	if (!s || !*s)
		return fallback;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	return *end ? fallback : (uint64_t)v;
}

/*
 * The thread-exit key, made before the core's own (recorder/thread.c, a
 * constructor of default priority): glibc runs a thread's destructors in
 * the order of their keys, and the ENDs of the calls left open must be
 * written before the core lets the thread's blocks go (after that it
 * refuses the thread's events).
 */
static TL_NO_INSTRUMENT __attribute__((constructor(101))) void make_thread_key(void)
{
	if (pthread_key_create(&thread_key, thread_end) == 0)
		atomic_store_explicit(&have_key, true, memory_order_release);
}

TL_NO_INSTRUMENT void tl_i_instrument_setup(void)
{
	const tl_category *cat = tl_category_get("function");
	if (cat) {
		/* the END before the category: no call is recorded before */
		atomic_store_explicit(&function_end, tl_tracer_prepare_end(cat),
		                      memory_order_relaxed);
		atomic_store_explicit(&function_cat, cat, memory_order_release);
	}
	if (env_number("TIMELINE_INSTRUMENT", 1) == 0)
		tl_instrument_enable(false);
	tl_instrument_set_min_duration_ns(env_number("TIMELINE_INSTRUMENT_MIN_NS", 0));
	tl_instrument_set_max_depth((unsigned)env_number("TIMELINE_INSTRUMENT_MAX_DEPTH", 0));
	const char *include = secure_getenv("TIMELINE_INSTRUMENT_INCLUDE");
	const char *exclude = secure_getenv("TIMELINE_INSTRUMENT_EXCLUDE");
	if ((include && *include) || (exclude && *exclude))
		tl_instrument_set_patterns(include, exclude);
}

/* Changes the settings: bits `clear` off, `set` on; then record_below. */
static TL_NO_INSTRUMENT void settings_change(uint32_t clear, uint32_t set)
{
	uint32_t old = atomic_load_explicit(&settings, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&settings, &old, (old & ~clear) | set,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
	uint32_t seen = atomic_load_explicit(&settings, memory_order_relaxed), now;
	do {
		atomic_store_explicit(&record_below,
		                      (seen & (SETTING_OFF | SETTING_PATTERNS))
		                          ? 0
		                          : seen & SETTING_DEPTH_MASK,
		                      memory_order_relaxed);
		now = seen;
		seen = atomic_load_explicit(&settings, memory_order_relaxed);
	} while (seen != now);
}

TL_NO_INSTRUMENT void tl_i_instrument_patterns_changed(bool any)
{
	settings_change(SETTING_PATTERNS, any ? SETTING_PATTERNS : 0);
}

TL_NO_INSTRUMENT void tl_instrument_enable(bool on)
{
	settings_change(SETTING_OFF, on ? 0 : SETTING_OFF);
}

TL_NO_INSTRUMENT bool tl_instrument_enabled(void)
{
	return !(atomic_load_explicit(&settings, memory_order_relaxed) & SETTING_OFF);
}

TL_NO_INSTRUMENT void tl_instrument_set_min_duration_ns(uint64_t ns)
{
	atomic_store_explicit(&min_ns, ns, memory_order_relaxed);
}

TL_NO_INSTRUMENT void tl_instrument_set_max_depth(unsigned depth)
{
	if (depth == 0 || depth > TL_INSTRUMENT_STACK_MAX)
		depth = TL_INSTRUMENT_STACK_MAX;
	settings_change(SETTING_DEPTH_MASK, depth);
}

TL_NO_INSTRUMENT int tl_instrument_stats_get(tl_instrument_stats *out)
{
	if (!out || out->struct_size < sizeof *out)
		return -EINVAL;
	out->filtered = 0;
	out->too_deep = 0;
	for (struct instrument_thread *t = atomic_load_explicit(&all_threads, memory_order_acquire);
	     t; t = t->next) {
		out->filtered += atomic_load_explicit(&t->filtered, memory_order_relaxed);
		out->too_deep += atomic_load_explicit(&t->too_deep, memory_order_relaxed);
	}
	out->reentered = atomic_load_explicit(&counts.reentered, memory_order_relaxed);
	out->frames_closed = atomic_load_explicit(&counts.frames_closed, memory_order_relaxed);
	out->exits_unmatched = atomic_load_explicit(&counts.exits_unmatched, memory_order_relaxed);
	out->functions_unnamed = tl_tracer_functions_unnamed();
	out->threads_failed = atomic_load_explicit(&counts.threads_failed, memory_order_relaxed);
	out->excluded = atomic_load_explicit(&counts.excluded, memory_order_relaxed);
	out->after_exit = atomic_load_explicit(&counts.after_exit, memory_order_relaxed);
	return 0;
}
