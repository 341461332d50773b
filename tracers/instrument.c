/*
 * Function instrumentation (include/timeline/instrument.h): what the
 * -finstrument-functions hooks (tracers/instrument/hooks.c, their own
 * small library) call. A client of the tracer interface: function
 * records, retract, the clock map.
 *
 * Each thread keeps a shadow stack of its calls in memory of its own,
 * mapped at its first call (mmap: async-signal-safe) and unmapped at its
 * exit. Every call within TL_INSTRUMENT_STACK_MAX is pushed, recorded or
 * not, so that an exit always finds its own entry: exits are matched by
 * function address from the top down; the frames above a match were
 * skipped (longjmp, an exception unwinding code built without the hooks)
 * and are closed then. A per-thread flag set for the whole of a hook turns
 * a hook call made inside a hook (a signal handler interrupting it, code
 * the hook calls being instrumented) into a counted drop; the signal
 * fences keep the compiler from moving the frame's stores out of it.
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

#define NO_HOOK __attribute__((no_instrument_function))

struct frame {
	const void *function;
	tl_timestamp ts;  /* the entry's record; 0: not recorded */
	uint32_t session; /* the session it was recorded in */
	uint32_t pad_;
};

/*
 * A thread's state. depth counts the calls in progress, those past the
 * stack's capacity included (only the first `capacity` have a frame).
 * busy is the re-entry flag: set for the whole of a hook, so that a hook
 * call made inside a hook (a signal handler interrupting it, code the
 * hook calls being instrumented) is a counted drop; the signal fences
 * keep the compiler from moving the frame's stores out of it.
 */
struct instrument_thread {
	uint32_t busy;
	uint32_t depth;
	uint32_t capacity;    /* TL_INSTRUMENT_STACK_MAX; 0 in the stand-ins below */
	uint32_t min_session; /* the session min_raw was computed for */
	uint64_t min_raw;     /* the minimum duration in raw clock units */
	tl_clock_map map;
	struct frame frames[];
};

#define THREAD_BYTES                                                                          \
	(sizeof(struct instrument_thread) + TL_INSTRUMENT_STACK_MAX * sizeof(struct frame))

/* Stand-ins with no frame (capacity 0), so that the hooks' fast paths need
 * no NULL check: every thread starts on not_started and maps its stack at
 * its first call (starting meanwhile: a hook call then is a re-entry);
 * failed is a thread whose stack could not be mapped, or that exited.
 * Never written. */
static struct instrument_thread not_started, failed, starting = {.busy = 1};
static __thread struct instrument_thread *self
    __attribute__((tls_model("initial-exec"))) = &not_started;

/*
 * What the hooks read on every call, in one word: bits 0-15, the depth
 * below which calls are recorded (max_depth while on, 0 while off); bits
 * 16-31, max_depth; bit 32, off. Changed by compare-and-swap, so that two
 * settings made at once both hold (async-signal-safe).
 */
#define SETTING_DEPTH_MASK 0xffffu
#define SETTING_MAX_SHIFT 16
#define SETTING_OFF ((uint64_t)1 << 32)
static _Atomic uint64_t settings = TL_INSTRUMENT_STACK_MAX |
                                   (uint64_t)TL_INSTRUMENT_STACK_MAX << SETTING_MAX_SHIFT;
_Static_assert(TL_INSTRUMENT_STACK_MAX <= SETTING_DEPTH_MASK, "a depth fits the settings");

static _Atomic uint64_t min_ns;
/* The category "function"; a disabled stand-in until the library's setup. */
static const tl_category category_unset = {.enabled = 0, .index = 0, .name = "function"};
static const tl_category *_Atomic function_cat = &category_unset;
static pthread_key_t thread_key;
static _Atomic bool have_key;

static struct {
	_Atomic uint64_t filtered, too_deep, reentered, frames_closed, exits_unmatched,
	    threads_failed;
} counts;

static NO_HOOK void add(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static NO_HOOK const tl_category *category(void)
{
	return atomic_load_explicit(&function_cat, memory_order_relaxed);
}

/* Ends a frame's slice when it was recorded in the running session. */
static NO_HOOK void frame_end(const struct frame *f)
{
	if (f->ts && !tl_tracer_end_try(category(), f->session) &&
	    f->session == tl_tracer_session())
		tl_tracer_end(category());
}

/* Thread exit: the calls still open are closed, the stack unmapped. */
static NO_HOOK void thread_end(void *arg)
{
	struct instrument_thread *t = arg;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t depth = t->depth < t->capacity ? t->depth : t->capacity;
	while (depth > 0) {
		frame_end(&t->frames[--depth]);
		add(&counts.frames_closed);
	}
	self = &failed; /* a later destructor's calls record nothing */
	atomic_signal_fence(memory_order_seq_cst);
	munmap(t, THREAD_BYTES);
}

/* The thread's first call: maps its stack. Called with t == &not_started. */
static NO_HOOK struct instrument_thread *thread_start(void)
{
	self = &starting;
	atomic_signal_fence(memory_order_seq_cst);
	void *p = mmap(NULL, THREAD_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	               -1, 0);
	if (p == MAP_FAILED) {
		add(&counts.threads_failed);
		return self = &failed;
	}
	struct instrument_thread *t = p;
	t->capacity = TL_INSTRUMENT_STACK_MAX;
	if (atomic_load_explicit(&have_key, memory_order_acquire))
		pthread_setspecific(thread_key, t);
	atomic_signal_fence(memory_order_seq_cst);
	return self = t;
}

/* The minimum duration in raw units, for the running session. */
static NO_HOOK uint64_t min_raw(struct instrument_thread *t, uint64_t ns, uint32_t session)
{
	if (TL_UNLIKELY(t->min_session != session || !tl_clock_map_current(&t->map))) {
		tl_clock_map_init(&t->map);
		t->min_raw = tl_clock_map_span_raw_max(&t->map, (int64_t)ns);
		t->min_session = session;
	}
	return t->min_raw;
}

/* An entry the fast path does not take: the thread's first call, a thread
 * with no stack, a call past the stack's capacity. */
static NO_HOOK __attribute__((noinline)) void enter_slow(struct instrument_thread *t,
                                                         void *function)
{
	if (t == &not_started) {
		t = thread_start();
		if (t != &failed)
			tl_i_instrument_enter(function, NULL);
		return;
	}
	if (t == &failed)
		return;
	/* past the capacity: counted, no frame; its exit only counts down */
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	t->depth++;
	add(&counts.too_deep);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* An entry whose record the inline form did not take: the out-of-line
 * one; then the hook's end. */
static NO_HOOK __attribute__((noinline)) void enter_record_slow(struct instrument_thread *t,
                                                                struct frame *f)
{
	f->ts = tl_tracer_function_enter(f->function, NULL);
	f->session = tl_tracer_session();
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

NO_HOOK void tl_i_instrument_enter(void *function, void *call_site)
{
	(void)call_site;
	struct instrument_thread *t = self;
	if (TL_UNLIKELY(t->busy)) {
		add(&counts.reentered);
		return;
	}
	uint32_t depth = t->depth;
	if (TL_UNLIKELY(depth >= t->capacity)) {
		enter_slow(t, function);
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	struct frame *f = &t->frames[depth];
	t->depth = depth + 1;
	f->function = function;
	f->ts = 0;
	if (depth < (atomic_load_explicit(&settings, memory_order_relaxed) & SETTING_DEPTH_MASK)) {
		if (TL_LIKELY(tl_category_enabled(category())) &&
		    TL_UNLIKELY(!tl_tracer_function_enter_try(function, &f->ts, &f->session))) {
			enter_record_slow(t, f);
			return;
		}
	} else if (!(atomic_load_explicit(&settings, memory_order_relaxed) & SETTING_OFF) &&
	           tl_category_enabled(category())) {
		add(&counts.too_deep);
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* The exit of a recorded call, its frame popped: its END, or with a
 * minimum duration, its entry taken back when it was shorter. */
static NO_HOOK void exit_recorded(struct instrument_thread *t, const struct frame *f)
{
	uint64_t ns = atomic_load_explicit(&min_ns, memory_order_relaxed);
	if (ns && tl_tracer_now() - f->ts < min_raw(t, ns, f->session) &&
	    tl_tracer_retract_function(f->ts, f->session))
		add(&counts.filtered);
	else if (!tl_tracer_end_try(category(), f->session) && f->session == tl_tracer_session())
		tl_tracer_end(category());
}

/* exit_recorded, then the hook's end: a recorded call's exit off the fast
 * path (a minimum duration set, or the END's inline form missed). */
static NO_HOOK __attribute__((noinline)) void exit_recorded_slow(struct instrument_thread *t,
                                                                 const struct frame *f)
{
	exit_recorded(t, f);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* An exit the fast path does not take: no frame for it on top of the
 * stack (longjmp, an exception, an exit with no entry), past the
 * capacity, or a thread with no stack. */
static NO_HOOK __attribute__((noinline)) void exit_slow(struct instrument_thread *t,
                                                        void *function)
{
	uint32_t depth = t->depth;
	if (t->capacity == 0) {
		if (t == &not_started)
			add(&counts.exits_unmatched);
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (depth > t->capacity) {
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
				frame_end(&t->frames[--depth]);
				t->depth = depth;
				add(&counts.frames_closed);
			}
			const struct frame *f = &t->frames[at - 1];
			t->depth = at - 1;
			if (f->ts)
				exit_recorded(t, f);
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

NO_HOOK void tl_i_instrument_exit(void *function, void *call_site)
{
	(void)call_site;
	struct instrument_thread *t = self;
	if (TL_UNLIKELY(t->busy)) {
		add(&counts.reentered);
		return;
	}
	uint32_t depth = t->depth;
	/* depth - 1 wraps for 0: no frame */
	if (TL_UNLIKELY(depth - 1 >= t->capacity || t->frames[depth - 1].function != function)) {
		exit_slow(t, function);
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	const struct frame *f = &t->frames[depth - 1];
	t->depth = depth - 1;
	if (f->ts) {
		if (TL_UNLIKELY(atomic_load_explicit(&min_ns, memory_order_relaxed) != 0) ||
		    TL_UNLIKELY(!tl_tracer_end_try(category(), f->session))) {
			exit_recorded_slow(t, f);
			return;
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* A number from the environment; fallback when unset or not a number. */
static NO_HOOK uint64_t env_number(const char *name, uint64_t fallback)
{
	const char *s = getenv(name);
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
static NO_HOOK __attribute__((constructor(101))) void make_thread_key(void)
{
	if (pthread_key_create(&thread_key, thread_end) == 0)
		atomic_store_explicit(&have_key, true, memory_order_release);
}

NO_HOOK void tl_i_instrument_setup(void)
{
	const tl_category *cat = tl_category_get("function");
	if (cat)
		atomic_store_explicit(&function_cat, cat, memory_order_relaxed);
	if (env_number("TIMELINE_INSTRUMENT", 1) == 0)
		tl_instrument_enable(false);
	tl_instrument_set_min_duration_ns(env_number("TIMELINE_INSTRUMENT_MIN_NS", 0));
	tl_instrument_set_max_depth((unsigned)env_number("TIMELINE_INSTRUMENT_MAX_DEPTH", 0));
}

/* Changes the settings word: bits `clear` off, `set` on, the recording
 * depth made again from them. */
static NO_HOOK void settings_change(uint64_t clear, uint64_t set)
{
	uint64_t old = atomic_load_explicit(&settings, memory_order_relaxed), word;
	do {
		word = (old & ~clear) | set;
		uint64_t max = (word >> SETTING_MAX_SHIFT) & SETTING_DEPTH_MASK;
		word = (word & ~(uint64_t)SETTING_DEPTH_MASK) | ((word & SETTING_OFF) ? 0 : max);
	} while (!atomic_compare_exchange_weak_explicit(&settings, &old, word, memory_order_relaxed,
	                                                memory_order_relaxed));
}

NO_HOOK void tl_instrument_enable(bool on)
{
	settings_change(SETTING_OFF, on ? 0 : SETTING_OFF);
}

NO_HOOK bool tl_instrument_enabled(void)
{
	return !(atomic_load_explicit(&settings, memory_order_relaxed) & SETTING_OFF);
}

NO_HOOK void tl_instrument_set_min_duration_ns(uint64_t ns)
{
	atomic_store_explicit(&min_ns, ns, memory_order_relaxed);
}

NO_HOOK void tl_instrument_set_max_depth(unsigned depth)
{
	if (depth == 0 || depth > TL_INSTRUMENT_STACK_MAX)
		depth = TL_INSTRUMENT_STACK_MAX;
	settings_change((uint64_t)SETTING_DEPTH_MASK << SETTING_MAX_SHIFT,
	                (uint64_t)depth << SETTING_MAX_SHIFT);
}

NO_HOOK int tl_instrument_stats_get(tl_instrument_stats *out)
{
	if (!out || out->struct_size < sizeof *out)
		return -EINVAL;
	out->filtered = atomic_load_explicit(&counts.filtered, memory_order_relaxed);
	out->too_deep = atomic_load_explicit(&counts.too_deep, memory_order_relaxed);
	out->reentered = atomic_load_explicit(&counts.reentered, memory_order_relaxed);
	out->frames_closed = atomic_load_explicit(&counts.frames_closed, memory_order_relaxed);
	out->exits_unmatched = atomic_load_explicit(&counts.exits_unmatched, memory_order_relaxed);
	out->functions_unnamed = tl_tracer_functions_unnamed();
	out->threads_failed = atomic_load_explicit(&counts.threads_failed, memory_order_relaxed);
	return 0;
}
