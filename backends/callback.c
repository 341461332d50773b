/*
 * callback: every event, decoded, to the embedder's function
 * (tl_options.callback), on the emitting thread, inside its emit, as a
 * tl_event built on that thread's stack: for a log pipeline or a transport
 * of the embedder's own. No buffer (snapshots return -ENODEV), nothing
 * allocated per event. The guarantees (which thread, re-entry, signal
 * handlers, the lifetimes of what it passes) are in docs/recorders.md.
 *
 * Nesting: the emit that calls the function holds its thread's slot, so
 * an emit that interrupts it on that thread (a signal handler's) comes on
 * the thread's next nesting level, delivered with that level's state. One
 * the function makes itself (or a handler that interrupts the function)
 * finds the level below inside the function: it is not delivered, so that
 * a function that traces itself does not recurse, and is counted as
 * re-entered and dropped. An emit that finds every level busy is dropped
 * by the core, which tells the recorder (nested_dropped).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "recorder/recorder.h"
#include "recorder/tracer.h"

struct callback {
	tl_event_callback fn;
	void *user;
};

/*
 * A writer's counters, by its writer index (a thread's nesting level and
 * its index in the thread table): written by one emit at a time, no
 * shared cache line: plain relaxed stores. inside is set while the
 * writer runs the function.
 */
struct callback_thread {
	_Atomic uint64_t delivered;
	_Atomic uint64_t reentered; /* not delivered, dropped here */
	/* on the top level's entry: dropped by the core, no level free,
	 * while inside the function (an atomic add, callback_nested_dropped) */
	_Atomic uint64_t reentered_beyond;
	_Atomic uint32_t inside;
} __attribute__((aligned(TL_CACHELINE)));

static struct callback callback_state;
static struct callback_thread threads[TL_NEST_LEVELS * TL_MAX_THREADS];

static void add_one(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

/* The event's timestamps in ns of the trace clock. A raw one the emit gave
 * (a COMPLETE's end always) goes through the exact conversion, both of a
 * COMPLETE's at once; an event that came without one is stamped now,
 * read in ns. */
static void event_times(const tl_record_view *v, tl_event *e)
{
	if (v->phase != TL_PHASE_COMPLETE) {
		if (v->ts)
			tl_timestamps_to_ns(&v->ts, &e->ts_ns, 1);
		else
			e->ts_ns = tl_now_ns();
		return;
	}
	if (v->ts) {
		const tl_timestamp raw[2] = {v->ts, v->value};
		int64_t ns[2];
		tl_timestamps_to_ns(raw, ns, 2);
		e->ts_ns = ns[0];
		e->end_ns = ns[1];
	} else {
		e->ts_ns = tl_now_ns();
		tl_timestamps_to_ns(&v->value, &e->end_ns, 1);
	}
}

/* An event as the function receives it, and what it points to that lives
 * in the emitting frame: the copied strings, cut as a recording cuts them
 * and NUL-terminated, and the arguments. */
struct event_frame {
	tl_event event;
	tl_arg args[TL_MAX_ARGS];
	char name[TL_COPY_MAX + 1];
	char arg_strings[TL_MAX_ARGS][TL_COPY_MAX + 1];
};

/* Copies len bytes of s into out, NUL-terminated, at most TL_COPY_MAX
 * (where the core has cut copies already: the bound keeps to out's size).
 * Returns the length copied. */
static size_t copy_cut(char out[TL_COPY_MAX + 1], const char *s, size_t len)
{
	len = len < TL_COPY_MAX ? len : TL_COPY_MAX;
	memcpy(out, s, len);
	out[len] = '\0';
	return len;
}

/* A kept name as the caller's pointer, a copied one into the frame. */
static void event_name(const tl_record_view *v, struct event_frame *f)
{
	if (!v->name)
		return;
	size_t len = v->name_len == TL_RECORD_LEN_UNMEASURED ? strlen(v->name) : v->name_len;
	if (v->flags & TL_REC_F_NAME_INLINE) {
		f->event.name = f->name;
		f->event.name_len = copy_cut(f->name, v->name, len);
		f->event.flags |= TL_EVENT_COPY_NAME;
	} else {
		f->event.name = v->name;
		f->event.name_len = len;
	}
}

/* The value word: a counter's value, an async or flow id. */
static void event_value(const tl_record_view *v, tl_event *e)
{
	switch (v->phase) {
	case TL_PHASE_COUNTER:
		if (v->flags & TL_REC_F_COUNTER_DOUBLE) {
			memcpy(&e->counter_double, &v->value, sizeof e->counter_double);
			e->flags |= TL_EVENT_COUNTER_DOUBLE;
		} else {
			e->counter_int = (int64_t)v->value;
		}
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
		e->id = v->value;
		break;
	default:
		break;
	}
}

/* The arguments as the public tl_arg: kept strings as the caller's
 * pointers, copied ones into the frame. */
static void event_args(const tl_record_view *v, struct event_frame *f)
{
	for (unsigned i = 0; i < v->nargs; i++) {
		tl_arg *a = &f->args[i];
		a->key = v->args[i].key;
		a->type = v->args[i].type;
		switch (a->type) {
		case TL_ARG_STRING:
			a->value.s = v->args[i].str;
			break;
		case TL_ARG_STRING_COPY:
			copy_cut(f->arg_strings[i], v->args[i].str, v->args[i].str_len);
			a->value.s = f->arg_strings[i];
			break;
		case TL_ARG_BOOL:
			a->value.b = v->args[i].bits != 0;
			break;
		case TL_ARG_POINTER:
			a->value.p = (const void *)(uintptr_t)v->args[i].bits;
			break;
		default: /* INT, UINT, DOUBLE: the bits */
			a->value.u = v->args[i].bits;
			break;
		}
	}
	f->event.args = v->nargs ? f->args : NULL;
	f->event.nargs = v->nargs;
}

/* Calls the function with the event, on this thread, marked inside it;
 * the caller's errno is kept. */
static void deliver(const struct callback *cb, struct callback_thread *t, const tl_event *e)
{
	int *err = &errno;
	int saved_errno = *err;
	atomic_store_explicit(&t->inside, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	cb->fn(e, cb->user);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&t->inside, 0, memory_order_relaxed);
	*err = saved_errno;
	add_one(&t->delivered);
}

/* Whether the level below the writer's (the emit it interrupted) is inside
 * the function: the writer is the function's own emit, or a handler's
 * that interrupted the function. */
static bool reentered(uint32_t writer)
{
	return writer >= TL_MAX_THREADS &&
	       atomic_load_explicit(&threads[writer - TL_MAX_THREADS].inside, memory_order_relaxed);
}

static void callback_write_event(struct tl_recorder *rec, const tl_record_view *v)
{
	uint32_t writer = tl_recorder_writer_index();
	if (TL_UNLIKELY(reentered(writer))) {
		add_one(&threads[writer].reentered); /* and dropped: callback_stats */
		return;
	}
	const char *category = tl_category_name(v->category);
	struct event_frame f;
	f.event = (tl_event){
	    .struct_size = sizeof f.event,
	    .phase = (tl_phase)v->phase,
	    .scope = ((v->flags >> TL_REC_F_SCOPE_SHIFT) & 3u) << 1,
	    .category = category ? category : "",
	    .numbered = (v->flags & TL_REC_F_NAME_NUMBER) != 0,
	    .number = v->name_number,
	    .tid = tl_recorder_thread_tid(),
	};
	event_times(v, &f.event);
	event_name(v, &f);
	event_value(v, &f.event);
	event_args(v, &f);
	deliver(rec->backend, &threads[writer], &f.event);
}

/* A nested emit of this thread found every level busy and was dropped by
 * the core (counted there): re-entered too when the top level is inside
 * the function. An atomic add: such a drop can interrupt another. */
static void callback_nested_dropped(struct tl_recorder *rec)
{
	(void)rec;
	uint32_t top = tl_recorder_thread_index() + (TL_NEST_LEVELS - 1) * TL_MAX_THREADS;
	if (atomic_load_explicit(&threads[top].inside, memory_order_relaxed))
		atomic_fetch_add_explicit(&threads[top].reentered_beyond, 1, memory_order_relaxed);
}

/* ---- start, stop, stats, fork ------------------------------------------------ */

/* Zeroes a counter; one already zero is not written, so that the entries
 * never used stay untouched pages. */
static void clear(_Atomic uint64_t *counter)
{
	if (atomic_load(counter))
		atomic_store(counter, 0);
}

static void threads_reset(void)
{
	for (size_t i = 0; i < TL_NEST_LEVELS * TL_MAX_THREADS; i++) {
		clear(&threads[i].delivered);
		clear(&threads[i].reentered);
		clear(&threads[i].reentered_beyond);
		if (atomic_load(&threads[i].inside))
			atomic_store(&threads[i].inside, 0);
	}
}

static int callback_start(struct tl_recorder *rec, const tl_options *opts)
{
	if (!opts->callback) {
		tl_log(TL_LOG_ERROR,
		       "callback recorder: tl_options.callback is NULL; set it to the "
		       "function that receives the events (TIMELINE_RECORDER=callback "
		       "needs it too: no environment variable can name a function)");
		return -EINVAL;
	}
	threads_reset();
	callback_state.fn = opts->callback;
	callback_state.user = opts->callback_user;
	rec->backend = &callback_state;
	return 0;
}

static void callback_stop(struct tl_recorder *rec)
{
	callback_state.fn = NULL;
	callback_state.user = NULL;
	rec->backend = NULL;
}

static void callback_stats(struct tl_recorder *rec, tl_stats *out)
{
	(void)rec;
	for (size_t i = 0; i < TL_NEST_LEVELS * TL_MAX_THREADS; i++) {
		out->events_written +=
		    atomic_load_explicit(&threads[i].delivered, memory_order_relaxed);
		uint64_t here = atomic_load_explicit(&threads[i].reentered, memory_order_relaxed);
		/* the core's drops are in events_dropped already */
		out->events_dropped += here;
		out->events_reentered +=
		    here + atomic_load_explicit(&threads[i].reentered_beyond, memory_order_relaxed);
	}
}

/* The child keeps the function and counts its own events from zero. */
static void callback_after_fork_child(struct tl_recorder *rec)
{
	(void)rec;
	threads_reset();
}

const struct tl_recorder_ops tl_callback_ops = {
    .name = "callback",
    .kind = TL_RECORDER_CALLBACK,
    .default_bytes = 0,
    .start = callback_start,
    .stop = callback_stop,
    .write_event = callback_write_event,
    .nested_dropped = callback_nested_dropped,
    .stats = callback_stats,
    .after_fork_child = callback_after_fork_child,
};
