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
#include "tracers/instrument_patterns.h"

#define NO_HOOK __attribute__((no_instrument_function))

struct frame {
	const void *function;
	tl_timestamp ts;
	struct tl_thread_mark mark; /* the entry's record, for a retract */
	uint32_t session;           /* the session it was recorded in */
	uint32_t recorded;
};

struct instrument_thread {
	uint32_t depth;  /* frames held */
	uint32_t beyond; /* calls in progress past the stack's capacity */
	uint32_t min_session; /* the session min_raw was computed for */
	uint64_t min_raw;     /* the minimum duration in raw clock units */
	tl_clock_map map;
	struct frame frames[TL_INSTRUMENT_STACK_MAX];
};

/* The thread's stack: NULL until its first call, FAILED when it could not
 * be mapped. */
#define FAILED ((struct instrument_thread *)1)
static __thread struct instrument_thread *self __attribute__((tls_model("initial-exec")));
static __thread unsigned in_hook __attribute__((tls_model("initial-exec")));

static _Atomic bool enabled = true;
static _Atomic uint64_t min_ns;
static _Atomic unsigned max_depth = TL_INSTRUMENT_STACK_MAX;
static tl_category *function_cat;
static pthread_key_t thread_key;
static _Atomic bool have_key;

static struct {
	_Atomic uint64_t filtered, too_deep, reentered, frames_closed, exits_unmatched,
	    threads_failed, excluded;
} counts;

static NO_HOOK void add(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* Ends a frame's slice when it was recorded in the running session. */
static NO_HOOK void frame_end(const struct frame *f)
{
	if (f->recorded && f->session == tl_tracer_session())
		tl_tracer_end(function_cat);
}

/* Thread exit: the calls still open are closed, the stack unmapped. */
static NO_HOOK void thread_end(void *arg)
{
	struct instrument_thread *t = arg;
	in_hook = 1;
	atomic_signal_fence(memory_order_seq_cst);
	while (t->depth > 0) {
		frame_end(&t->frames[--t->depth]);
		add(&counts.frames_closed);
	}
	self = FAILED; /* a later destructor's calls record nothing */
	munmap(t, sizeof *t);
	atomic_signal_fence(memory_order_seq_cst);
	in_hook = 0;
}

static NO_HOOK struct instrument_thread *thread_start(void)
{
	void *p = mmap(NULL, sizeof(struct instrument_thread), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		add(&counts.threads_failed);
		return self = FAILED;
	}
	struct instrument_thread *t = p;
	if (atomic_load_explicit(&have_key, memory_order_acquire))
		pthread_setspecific(thread_key, t);
	return self = t;
}

/* The minimum duration in raw units, for the running session. */
static NO_HOOK uint64_t min_raw(struct instrument_thread *t, uint64_t ns)
{
	uint32_t session = tl_tracer_session();
	if (t->min_session != session || !tl_clock_map_current(&t->map)) {
		tl_clock_map_init(&t->map);
		t->min_raw = tl_clock_map_span_raw_max(&t->map, (int64_t)ns);
		t->min_session = session;
	}
	return t->min_raw;
}

NO_HOOK void tl_i_instrument_enter(void *function, void *call_site)
{
	(void)call_site;
	if (in_hook) {
		add(&counts.reentered);
		return;
	}
	in_hook = 1;
	atomic_signal_fence(memory_order_seq_cst);
	struct instrument_thread *t = self;
	if (!t)
		t = thread_start();
	if (t != FAILED) {
		uint32_t depth = t->depth;
		if (depth >= TL_INSTRUMENT_STACK_MAX) {
			t->beyond++;
			add(&counts.too_deep);
		} else {
			struct frame *f = &t->frames[depth];
			f->function = function;
			f->recorded = 0;
			t->depth = depth + 1;
			tl_category *cat = function_cat;
			if (cat && tl_category_enabled(cat) &&
			    atomic_load_explicit(&enabled, memory_order_relaxed)) {
				if (atomic_load_explicit(&tl_instrument_patterns_set,
				                         memory_order_relaxed) &&
				    !tl_instrument_patterns_allow(function)) {
					add(&counts.excluded); /* name patterns */
				} else if (depth <
				           atomic_load_explicit(&max_depth, memory_order_relaxed)) {
					bool filter =
					    atomic_load_explicit(&min_ns, memory_order_relaxed) != 0;
					f->mark.block = NULL; /* no retract without a mark */
					f->ts = tl_tracer_function_enter(function,
					                                 filter ? &f->mark : NULL);
					if (f->ts) {
						f->recorded = 1;
						f->session = tl_tracer_session();
					}
				} else {
					add(&counts.too_deep);
				}
			}
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	in_hook = 0;
}

NO_HOOK void tl_i_instrument_exit(void *function, void *call_site)
{
	(void)call_site;
	if (in_hook) {
		add(&counts.reentered);
		return;
	}
	in_hook = 1;
	atomic_signal_fence(memory_order_seq_cst);
	struct instrument_thread *t = self;
	if (!t || t == FAILED) {
		if (!t)
			add(&counts.exits_unmatched);
	} else if (t->beyond) {
		t->beyond--;
	} else {
		uint32_t depth = t->depth;
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
			struct frame *f = &t->frames[at - 1];
			t->depth = at - 1;
			uint64_t ns = atomic_load_explicit(&min_ns, memory_order_relaxed);
			if (f->recorded && f->session == tl_tracer_session()) {
				if (ns && tl_now() - f->ts < min_raw(t, ns) &&
				    tl_tracer_retract(&f->mark))
					add(&counts.filtered);
				else
					tl_tracer_end(function_cat);
			}
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	in_hook = 0;
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
	function_cat = tl_category_get("function");
	if (env_number("TIMELINE_INSTRUMENT", 1) == 0)
		tl_instrument_enable(false);
	tl_instrument_set_min_duration_ns(env_number("TIMELINE_INSTRUMENT_MIN_NS", 0));
	tl_instrument_set_max_depth((unsigned)env_number("TIMELINE_INSTRUMENT_MAX_DEPTH", 0));
	const char *include = getenv("TIMELINE_INSTRUMENT_INCLUDE");
	const char *exclude = getenv("TIMELINE_INSTRUMENT_EXCLUDE");
	if ((include && *include) || (exclude && *exclude))
		tl_instrument_set_patterns(include, exclude);
}

NO_HOOK void tl_instrument_enable(bool on)
{
	atomic_store_explicit(&enabled, on, memory_order_relaxed);
}

NO_HOOK bool tl_instrument_enabled(void)
{
	return atomic_load_explicit(&enabled, memory_order_relaxed);
}

NO_HOOK void tl_instrument_set_min_duration_ns(uint64_t ns)
{
	atomic_store_explicit(&min_ns, ns, memory_order_relaxed);
}

NO_HOOK void tl_instrument_set_max_depth(unsigned depth)
{
	if (depth == 0 || depth > TL_INSTRUMENT_STACK_MAX)
		depth = TL_INSTRUMENT_STACK_MAX;
	atomic_store_explicit(&max_depth, depth, memory_order_relaxed);
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
	out->excluded = atomic_load_explicit(&counts.excluded, memory_order_relaxed);
	return 0;
}
