/*
 * The emitters: the only code on the per-event hot path.
 *
 * The fast path is one reserve/commit pair (reserve_enter, reserve_fits,
 * commit): one TLS load, the re-entry and session checks on the thread's
 * own cache line, the room check, the clock read, the record's stores and
 * one release store that publishes it. No lock, no syscall besides the
 * clock (vDSO or rdtsc), no allocation.
 *
 * The common events have a fixed shape (struct shape: phase, length, what
 * follows the header) and are written by one template, fast_form, whose
 * parameters are the shape and the clock path. When a fast form misses, a
 * recorder that writes through gets the event from shape_write_through (or
 * write_slice_through, for a plain slice), and everything else (a thread's
 * first event, a new session or block, arguments, copies, bad input) goes
 * to one out-of-line function, emit_slow, which reserves through the
 * threads' slow path (tl_thread_reserve_slow) and commits with the same
 * position word.
 *
 * The clock is chosen once per session (clock.h). Each shape has a form
 * per clock path, and an emit calls the one of the session's clock; the
 * form compares the slot's epoch with its path's state word (session.h),
 * which equals tl_state only while that path's clock is the session's, so
 * one check covers both the session and the clock.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "recorder/clock.h"
#include "recorder/compiler.h"
#include "recorder/format_int.h"
#include "recorder/function_table.h"
#include "recorder/record.h"
#include "recorder/recorder.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/threads.h"
#include "recorder/tracer.h"

/* Every thread starts on tl_slot_none, whose epoch matches no session and
 * whose block has no room, so its first event takes the slow path and
 * registers it: the fast path needs no NULL check. Unregistered threads
 * may all set and clear its busy bit; nothing else of it is written. */
struct tl_slot tl_slot_none = {.block = &tl_block_none, .epoch = UINT32_MAX};
__thread struct tl_slot *tl_self __attribute__((tls_model("initial-exec"))) = &tl_slot_none;

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE void put(_Atomic uint64_t *p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

/* Adds to a thread's counter: an atomic add, which a signal handler that
 * counts on the same thread cannot split (off the fast path only). */
static void count(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* ---- the reserve/commit pair ----------------------------------------------- */

enum clock_path {
	PATH_TSC,  /* rdtsc; sessions whose clock is the TSC */
	PATH_VDSO, /* clock_gettime */
};

/* A reservation: the calling thread's slot, entered (busy), and its
 * position word as it was (busy flag clear). */
struct reservation {
	struct tl_slot *slot;
	uint64_t pos;
};

/* Enters the thread's slot; false on re-entry (a signal handler that
 * interrupted an emit of this thread), the slot then left as it is. */
static ALWAYS_INLINE bool reserve_enter(struct reservation *r)
{
	r->slot = tl_self;
	return tl_slot_enter_pos(r->slot, &r->pos);
}

/* The reservation a fast form's miss continues with: the slot its caller
 * entered, which is tl_self unless the caller entered the placeholder (the
 * thread's first event) and a signal handler registered the thread since.
 * The slot tl_self then names is not entered (its busy flag is clear: the
 * handler left it), and writing through it would race the thread's next
 * handler: false then. */
static ALWAYS_INLINE bool reserve_entered(struct reservation *r)
{
	r->slot = tl_self;
	uint64_t word = atomic_load_explicit(&r->slot->pos, memory_order_relaxed);
	r->pos = word & ~TL_SLOT_BUSY;
	return (word & TL_SLOT_BUSY) != 0;
}

/* Whether `words` fit in the slot's block in the session of the clock
 * path: the new position word is compared with the limit's, so the check
 * shares its add with the commit. The session check comes first: after a
 * shutdown the slot's block may be unmapped. */
static ALWAYS_INLINE bool reserve_fits(const struct reservation *r, size_t words,
                                       enum clock_path path)
{
	uint32_t state = atomic_load_explicit(path == PATH_TSC ? &tl_tsc_state : &tl_vdso_state,
	                                      memory_order_relaxed);
	return r->slot->epoch == state && r->pos + tl_pos_step(words) <= r->slot->limit_pos;
}

/*
 * Where the record goes. The empty asm pins the order: rdtsc is
 * microcoded, and an instruction placed after it waits for it, so the
 * stores' address would be late.
 */
static ALWAYS_INLINE _Atomic uint64_t *reserve_at(const struct reservation *r)
{
	_Atomic uint64_t *p = tl_pos_ptr(r->pos);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* Publishes the record of `words` words and leaves the slot. */
static ALWAYS_INLINE void commit(struct reservation *r, size_t words)
{
	tl_slot_commit_pos(r->slot, r->pos + tl_pos_step(words));
}

/* Leaves the slot with nothing written. */
static ALWAYS_INLINE void reserve_cancel(struct reservation *r)
{
	tl_slot_commit_pos(r->slot, r->pos);
}

/* Reads the clock of the path, once the record has room: the rdtsc then
 * overlaps with the stores instead of delaying the checks. */
static ALWAYS_INLINE uint64_t clock_read(enum clock_path path)
{
#if TL_HAVE_TSC
	if (path == PATH_TSC)
		return __rdtsc();
#endif
	(void)path;
	struct timespec ts;
	clock_gettime(tl_clock_id_get(), &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the general path -------------------------------------------------------- */

/* Whether the entered slot is in the running session, which records. */
static ALWAYS_INLINE bool session_current(const struct tl_slot *slot)
{
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	return slot->epoch == state && state != 0;
}

/* One event as the caller gave it. */
struct event {
	const tl_category *cat;
	char phase;
	unsigned flags; /* TL_EVENT_* */
	const char *name;
	uint64_t value;  /* id, COMPLETE end, counter bits, number */
	tl_timestamp ts; /* 0: now */
	const tl_arg *args;
	unsigned nargs;
	bool numbered; /* name + " " + value (tl_emit_begin_numbered) */
	bool want_ts;  /* return the timestamp even when written through */
	bool function; /* a function record: value is the id; no cat, name */
};

/* Length of a copied string, capped; *truncated set when cut. */
static size_t copy_length(const char *s, unsigned *truncated)
{
	if (!s)
		return 0;
	size_t n = strnlen(s, TL_COPY_MAX + 1);
	if (n > TL_COPY_MAX) {
		/* do not cut a UTF-8 sequence in half */
		n = TL_COPY_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		*truncated += 1;
	}
	return n;
}

static _Atomic uint64_t *put_string(_Atomic uint64_t *p, const char *s, size_t len)
{
	put(p++, len);
	size_t off = 0;
	for (; off + 8 <= len; off += 8) {
		uint64_t word;
		memcpy(&word, s + off, 8); /* a constant size: one load */
		put(p++, word);
	}
	if (off < len) {
		/* the tail, little-endian byte by byte: no memcpy call */
		uint64_t word = 0;
		for (size_t i = 0; off + i < len; i++)
			word |= (uint64_t)(unsigned char)s[off + i] << (8 * i);
		put(p++, word);
	}
	return p;
}

static bool arg_type_valid(tl_arg_type type)
{
	return type > TL_ARG_NONE && type <= TL_ARG_STRING_COPY;
}

/* The event decoded as a recorder that writes through receives it; returns
 * the copies cut at TL_COPY_MAX. A function record is given as a BEGIN
 * with a copied name, its address in hexadecimal, written into
 * function_name (FUNCTION_NAME_MAX bytes), flagged TL_REC_F_FUNCTION with
 * its id as value, for a recorder that names it (function_names.h). */
/* "0x" and 16 hexadecimal digits, and a terminator. */
#define FUNCTION_NAME_MAX 24

static __attribute__((noinline)) void function_view(const struct event *ev, tl_timestamp ts,
                                                   tl_record_view *v, char *function_name)
{
	memset(v, 0, offsetof(tl_record_view, args));
	v->ts = ts;
	v->phase = TL_PHASE_BEGIN;
	v->flags = TL_REC_F_NAME_INLINE | TL_REC_F_FUNCTION;
	v->value = ev->value;
	v->name = function_name;
	v->name_len = tl_format_hex(function_name, tl_function_address((uint32_t)ev->value));
	function_name[v->name_len] = '\0';
}

static unsigned event_view(const struct event *ev, tl_timestamp ts, tl_record_view *v,
                           char *function_name)
{
	if (TL_UNLIKELY(ev->function)) {
		function_view(ev, ts, v, function_name);
		return 0;
	}
	v->ts = ts;
	v->phase = ev->phase;
	bool copy_name = (ev->flags & TL_EVENT_COPY_NAME) && tl_record_has_name(ev->phase);
	v->flags = (copy_name ? TL_REC_F_NAME_INLINE : 0) |
	           (ev->numbered ? TL_REC_F_NAME_NUMBER : 0) |
	           (((ev->flags & TL_EVENT_SCOPE_MASK) >> 1) << TL_REC_F_SCOPE_SHIFT) |
	           ((ev->flags & TL_EVENT_COUNTER_DOUBLE) ? TL_REC_F_COUNTER_DOUBLE : 0);
	v->category = ev->cat->index;
	v->name = tl_record_has_name(ev->phase) ? (ev->name ? ev->name : "") : NULL;
	unsigned truncated = 0;
	v->name_len = !v->name                         ? 0
	              : (ev->flags & TL_EVENT_COPY_NAME) ? copy_length(v->name, &truncated)
	                                                 : strlen(v->name);
	v->name_number = ev->numbered ? ev->value : 0;
	v->value = ev->numbered ? 0 : ev->value;
	v->nargs = 0;
	for (unsigned i = 0; ev->nargs && i < ev->nargs && i < TL_MAX_ARGS; i++) {
		const tl_arg *a = &ev->args[i];
		if (!arg_type_valid(a->type))
			continue;
		unsigned k = v->nargs++;
		v->args[k].key = a->key ? a->key : "";
		v->args[k].key_len = strlen(v->args[k].key);
		v->args[k].type = a->type;
		v->args[k].bits = a->type == TL_ARG_BOOL      ? (uint64_t)(a->value.b ? 1 : 0)
		                  : a->type == TL_ARG_POINTER ? (uint64_t)(uintptr_t)a->value.p
		                                              : a->value.u;
		bool string = a->type == TL_ARG_STRING || a->type == TL_ARG_STRING_COPY;
		v->args[k].str = string ? (a->value.s ? a->value.s : "") : NULL;
		v->args[k].str_len = !string                         ? 0
		                     : a->type == TL_ARG_STRING_COPY ? copy_length(v->args[k].str,
		                                                                   &truncated)
		                                                     : strlen(v->args[k].str);
	}
	return truncated;
}

/*
 * Hands the event to a recorder that writes through, on this thread, the
 * slot entered (so that shutdown waits for it). The timestamp is the
 * caller's, or read now when the caller wants it back; else 0, and the
 * recorder reads the clock if it needs one. Returns the timestamp, or 1
 * when it was not read.
 */
static ALWAYS_INLINE tl_timestamp write_through(const struct event *ev, struct tl_slot *slot)
{
	tl_timestamp ts = ev->ts ? ev->ts : ev->want_ts ? tl_clock_read() : 0;
	tl_record_view v;
	char function_name[FUNCTION_NAME_MAX];
	unsigned truncated = event_view(ev, ts, &v, function_name);
	if (TL_UNLIKELY(truncated))
		count(&slot->truncated, truncated);
	tl_recorder_write(&v);
	return ts ? ts : 1;
}

__thread unsigned tl_writer_level __attribute__((tls_model("initial-exec")));

/*
 * write_through at a nesting level above 0 (slot is a nested level's): the
 * recorder finds the level in tl_writer_level, set for the write and
 * restored after it, so that it writes through per-level state and the
 * interrupted write finds its own untouched. A handler that interrupts
 * this one saves and restores the level the same way.
 */
static __attribute__((noinline)) tl_timestamp write_through_nested(const struct event *ev,
                                                                   struct tl_slot *slot)
{
	unsigned outer = tl_writer_level;
	tl_writer_level = tl_slot_level(slot);
	atomic_signal_fence(memory_order_seq_cst);
	tl_timestamp ts = write_through(ev, slot);
	atomic_signal_fence(memory_order_seq_cst);
	tl_writer_level = outer;
	return ts;
}

/* A nested emit that found every level of its thread busy, dropped and
 * counted (tl_thread_enter_nested): a recorder that writes through is
 * told, for its own count. */
static __attribute__((noinline)) void nested_drop(void)
{
	if (atomic_load_explicit(&tl_state, memory_order_acquire) != 0 &&
	    tl_recorder_writes_through())
		tl_recorder_note_nested_drop();
}

/* The words of ev's record; the copies' lengths in *name_len and
 * arg_len[], the kept arguments' type nibbles in *types. */
static size_t record_words(const struct event *ev, size_t *name_len, size_t *arg_len,
                           uint64_t *types, unsigned *truncated, unsigned *args_dropped)
{
	size_t words = 2;
	if (ev->flags & TL_EVENT_COPY_NAME && tl_record_has_name(ev->phase)) {
		*name_len = copy_length(ev->name, truncated);
		words += TL_REC_STRING_WORDS(*name_len);
	} else if (tl_record_has_name(ev->phase)) {
		words += 1;
	}
	if (tl_record_has_value(ev->phase) || ev->numbered)
		words += 1;
	unsigned kept = 0;
	for (unsigned i = 0; i < ev->nargs; i++) {
		const tl_arg *a = &ev->args[i];
		if (!arg_type_valid(a->type)) {
			*args_dropped += 1;
			continue;
		}
		words += 1; /* key */
		if (a->type == TL_ARG_STRING_COPY) {
			arg_len[i] = copy_length(a->value.s, truncated);
			words += TL_REC_STRING_WORDS(arg_len[i]);
		} else {
			words += 1;
		}
		*types |= (uint64_t)a->type << (4 * kept++);
	}
	return words;
}

static _Atomic uint64_t *put_args(_Atomic uint64_t *w, const struct event *ev,
                                  const size_t *arg_len)
{
	for (unsigned i = 0; i < ev->nargs; i++) {
		const tl_arg *a = &ev->args[i];
		if (!arg_type_valid(a->type))
			continue;
		put(w++, (uint64_t)(uintptr_t)(a->key ? a->key : ""));
		switch (a->type) {
		case TL_ARG_STRING_COPY:
			w = put_string(w, a->value.s ? a->value.s : "", arg_len[i]);
			break;
		case TL_ARG_STRING:
			put(w++, (uint64_t)(uintptr_t)(a->value.s ? a->value.s : ""));
			break;
		case TL_ARG_BOOL:
			put(w++, a->value.b ? 1 : 0);
			break;
		case TL_ARG_POINTER:
			put(w++, (uint64_t)(uintptr_t)a->value.p);
			break;
		default: /* INT, UINT, DOUBLE: the union's bits */
			put(w++, a->value.u);
			break;
		}
	}
	return w;
}

/*
 * The general path's entry. `entered`: the caller (a fast form that
 * missed) holds the slot entered; else it is entered here. Registers the
 * thread on its first event, takes a nested level's slot when a signal
 * handler interrupted an emit of its thread, moves the slot to a new
 * session, hands the event to a recorder that writes through. Returns
 * true with r entered in the running session when the caller is to write
 * the record; false when the event is done, *ts then being what the
 * general path returns (see emit_slow), or SLOW_AGAIN: a fast form's miss
 * on the thread's first event, which the caller takes again from the
 * start. Inlined into each of its callers, so that each keeps its own
 * registers.
 */
#define SLOW_AGAIN UINT64_MAX
static ALWAYS_INLINE bool slow_enter(const struct event *ev, bool entered, struct reservation *r,
                                     tl_timestamp *ts)
{
	*ts = 0;
	if (entered) {
		if (TL_UNLIKELY(!reserve_entered(r))) {
			/* the caller holds the placeholder, tl_self is the slot a
			 * handler registered: the placeholder left, taken again */
			tl_slot_leave(&tl_slot_none);
			*ts = SLOW_AGAIN;
			return false;
		}
	} else {
		struct tl_slot *slot = tl_self;
		if (TL_UNLIKELY(slot == &tl_slot_none)) {
			if (!tl_thread_slot()) /* first event of the thread */
				return false;
		}
		if (!reserve_enter(r)) {
			/* a signal handler that interrupted an emit of its thread:
			 * the next nesting level, with blocks (or a recorder's
			 * per-thread state) of its own */
			r->slot = tl_thread_enter_nested(r->slot, &r->pos);
			if (!r->slot) {
				nested_drop(); /* every level busy: counted */
				return false;
			}
		}
	}
	if (TL_UNLIKELY(r->slot == &tl_slot_none)) {
		/* a fast form's miss on the thread's first event */
		reserve_cancel(r);
		*ts = SLOW_AGAIN;
		return false;
	}
	if (TL_UNLIKELY(!ev->cat || !tl_record_phase_known(ev->phase))) {
		count(&r->slot->dropped, 1);
		reserve_cancel(r);
		return false;
	}
	if (!session_current(r->slot) && !tl_thread_session_enter(r->slot)) {
		reserve_cancel(r); /* not running, or the recorder stopped recording */
		return false;
	}
	if (tl_recorder_writes_through()) {
		*ts = TL_UNLIKELY(tl_slot_level(r->slot) != 0) ? write_through_nested(ev, r->slot)
		                                               : write_through(ev, r->slot);
		reserve_cancel(r);
		return false;
	}
	return true;
}

/* Marks the record at p, in the slot's current block. */
static ALWAYS_INLINE void mark_record(struct tl_thread_mark *mark, const struct tl_slot *slot,
                                      const _Atomic uint64_t *p)
{
	const struct tl_block *block = slot->block;
	mark->block = block;
	mark->seq = atomic_load_explicit(&block->seq, memory_order_relaxed);
	mark->gen = atomic_load_explicit(&block->gen, memory_order_relaxed);
	mark->offset = (uint32_t)(p - block->data);
	mark->session = slot->epoch;
}

/* A function record (ev->function) off its fast form; returns as
 * emit_slow. Marks the record when it went to a buffer and mark is not
 * NULL (else mark->block is NULL). */
static __attribute__((noinline)) tl_timestamp function_slow(const struct event *ev, bool entered,
                                                            struct tl_thread_mark *mark)
{
	struct reservation r;
	tl_timestamp ts;
	if (mark)
		mark->block = NULL;
	if (!slow_enter(ev, entered, &r, &ts))
		return ts == SLOW_AGAIN ? function_slow(ev, false, mark) : ts;
	_Atomic uint64_t *w = tl_thread_reserve_slow(r.slot, 2);
	if (!w)
		return 0; /* counted, the slot left */
	ts = ev->ts ? ev->ts : tl_clock_read();
	put(w, ts);
	put(w + 1, TL_REC_FUNCTION_HEADER(ev->value));
	if (mark)
		mark_record(mark, r.slot, w);
	tl_slot_commit_records(r.slot, w + 2, 1);
	return ts;
}

/*
 * Any event but a function record, off the fast forms (`entered`: see
 * slow_enter). Besides slow_enter's work, moves the slot to a new block,
 * writes arguments and copies. Returns the timestamp, or 0 when the event
 * was not recorded (the drop counted where it is one); any non-zero value
 * when it was written through and the caller did not ask for the
 * timestamp (ev->want_ts).
 */
static __attribute__((noinline)) tl_timestamp emit_slow(const struct event *ev, bool entered)
{
	struct reservation r;
	tl_timestamp done;
	if (!slow_enter(ev, entered, &r, &done))
		return done == SLOW_AGAIN ? emit_slow(ev, false) : done;

	size_t name_len = 0, arg_len[TL_MAX_ARGS];
	uint64_t types = 0;
	unsigned truncated = 0, args_dropped = 0;
	struct event e = *ev;
	if (!e.args)
		e.nargs = 0;
	if (e.nargs > TL_MAX_ARGS) {
		args_dropped = e.nargs - TL_MAX_ARGS;
		e.nargs = TL_MAX_ARGS;
	}
	size_t words = record_words(&e, &name_len, arg_len, &types, &truncated, &args_dropped);
	_Atomic uint64_t *w = tl_thread_reserve_slow(r.slot, words);
	if (!w)
		return 0; /* counted, the slot left */
	tl_timestamp ts = e.ts ? e.ts : tl_clock_read();
	bool copy_name = (e.flags & TL_EVENT_COPY_NAME) && tl_record_has_name(e.phase);
	unsigned rec_flags = (copy_name ? TL_REC_F_NAME_INLINE : 0) |
	                     (e.numbered ? TL_REC_F_NAME_NUMBER : 0) |
	                     (((e.flags & TL_EVENT_SCOPE_MASK) >> 1) << TL_REC_F_SCOPE_SHIFT) |
	                     ((e.flags & TL_EVENT_COUNTER_DOUBLE) ? TL_REC_F_COUNTER_DOUBLE : 0);
	const char *name = e.name ? e.name : "";
	put(w++, ts);
	put(w++, TL_REC_HEADER(e.phase, words, rec_flags, e.cat->index, types));
	if (copy_name)
		w = put_string(w, name, name_len);
	else if (tl_record_has_name(e.phase))
		put(w++, (uint64_t)(uintptr_t)name);
	if (tl_record_has_value(e.phase) || e.numbered)
		put(w++, e.value);
	w = put_args(w, &e, arg_len);
	if (TL_UNLIKELY(truncated))
		count(&r.slot->truncated, truncated);
	if (TL_UNLIKELY(args_dropped))
		count(&r.slot->args_dropped, args_dropped);
	tl_slot_commit_records(r.slot, w, 1);
	return ts;
}

/* ---- the fast forms ------------------------------------------------------------ */

/* What follows the timestamp and header of a fixed-shape record. */
struct shape {
	char phase;
	unsigned char words;
	unsigned char rec_flags;
	bool name;  /* a kept name pointer */
	bool value; /* a value word after it */
	bool function; /* a function record: the value is the id, in the header */
};

#define SHAPE_BEGIN ((struct shape){TL_PHASE_BEGIN, 3, 0, true, false})
#define SHAPE_END ((struct shape){TL_PHASE_END, 2, 0, false, false})
#define SHAPE_NUMBERED ((struct shape){TL_PHASE_BEGIN, 4, TL_REC_F_NAME_NUMBER, true, true})
#define SHAPE_COUNTER ((struct shape){TL_PHASE_COUNTER, 4, 0, true, true})
#define SHAPE_FUNCTION ((struct shape){TL_PHASE_BEGIN, 2, TL_REC_F_FUNCTION, false, false, true})

/* Where a fast form reports, besides its timestamp: the session (tracer
 * emitters' tl_tracer_where) and a mark on the record. Either may be NULL. */
struct report {
	tl_tracer_where *where;
	struct tl_thread_mark *mark;
	bool want_ts; /* the caller uses the returned timestamp */
};

static ALWAYS_INLINE void report_recorded(const struct report *out, const struct reservation *r,
                                          _Atomic uint64_t *p, tl_timestamp ts)
{
	if (out->mark)
		mark_record(out->mark, r->slot, p);
	if (out->where) {
		out->where->ts = ts;
		/* stored only when it changes: a frame stores enough as it is */
		if (out->where->session != r->slot->epoch)
			out->where->session = r->slot->epoch;
	}
}

/* The general path's answer, in the fast forms' report. */
static ALWAYS_INLINE tl_timestamp report_slow(const struct report *out, tl_timestamp ts)
{
	if (out->mark)
		out->mark->block = NULL;
	if (out->where) {
		out->where->session = ts ? tl_tracer_session() : 0;
		out->where->ts = ts ? ts : tl_clock_read();
	}
	return ts;
}

/*
 * A fixed-shape event for a recorder that writes through, from a fast
 * form's miss (the slot held, in the running session): the decoded event
 * is made from the shape, with none of the general path's sizing.
 */
static __attribute__((noinline)) tl_timestamp shape_write_through(uint64_t header,
                                                                  const char *name,
                                                                  uint64_t value, bool want_ts)
{
	unsigned flags = TL_REC_FLAGS(header);
	bool numbered = (flags & TL_REC_F_NAME_NUMBER) != 0;
	tl_record_view v;
	v.ts = want_ts ? tl_clock_read() : 0;
	v.phase = TL_REC_PHASE(header);
	v.flags = flags;
	v.category = TL_REC_CATEGORY(header);
	v.name = tl_record_has_name(v.phase) ? (name ? name : "") : NULL;
	v.name_len = v.name ? TL_RECORD_LEN_UNMEASURED : 0;
	v.name_number = numbered ? value : 0;
	v.value = numbered ? 0 : value;
	v.nargs = 0;
	tl_recorder_write(&v);
	tl_slot_leave(tl_self);
	return v.ts ? v.ts : 1;
}

/* A plain slice begin (name) or end (NULL) for a recorder that writes
 * slices through (tl_recorder_ops.write_slice), the slot held. */
static __attribute__((noinline)) tl_timestamp write_slice_through(char phase, const char *name)
{
	tl_recorder_write_slice(phase, name ? name : (phase == TL_PHASE_BEGIN ? "" : NULL));
	tl_slot_leave(tl_self);
	return 1;
}

/* The general path for a fixed-shape event (entered: the slot is held). */
/* The category a function event carries through the general path: its
 * record has none (the header's category bits hold the id). */
static const tl_category no_category = {.enabled = 0, .index = 0, .name = ""};

static __attribute__((noinline)) tl_timestamp shape_slow(struct shape s, unsigned rec_flags,
                                                         const tl_category *cat,
                                                         const char *name, uint64_t value,
                                                         const struct report *out,
                                                         bool entered)
{
	struct event ev = {
	    .cat = s.function ? &no_category : cat,
	    .phase = s.phase,
	    .flags = (rec_flags & TL_REC_F_COUNTER_DOUBLE) ? TL_EVENT_COUNTER_DOUBLE : 0,
	    .name = name,
	    .value = value,
	    .numbered = (s.rec_flags & TL_REC_F_NAME_NUMBER) != 0,
	    .want_ts = out->want_ts,
	    .function = s.function,
	};
	if (s.function) /* no `where`; the mark set on the general path too */
		return function_slow(&ev, entered, out->mark);
	return report_slow(out, emit_slow(&ev, entered));
}

/*
 * The template of every fixed-shape event: reserve, read the clock of the
 * path, write the shape, commit. A miss goes to the recorder that writes
 * through, or to the general path, with the slot held. rec_flags are
 * or-ed into the shape's (counters).
 */
static ALWAYS_INLINE tl_timestamp fast_form(enum clock_path path, struct shape s,
                                            unsigned rec_flags, const tl_category *cat,
                                            const char *name, uint64_t value,
                                            const struct report *out)
{
	struct reservation r;
	if (TL_UNLIKELY(!reserve_enter(&r)))
		return shape_slow(s, rec_flags, cat, name, value, out, false);
	if (TL_LIKELY(reserve_fits(&r, s.words, path))) {
		_Atomic uint64_t *p = reserve_at(&r);
		tl_timestamp ts = 0;
		/* The TSC is read first: the stores then overlap with it. The
		 * vDSO clock is a call, read last: the record's other words are
		 * then written and need not be kept across it. */
		if (path == PATH_TSC)
			ts = clock_read(path);
		put(p + 1, s.function ? TL_REC_FUNCTION_HEADER(value)
		                      : TL_REC_HEADER(s.phase, s.words, s.rec_flags | rec_flags,
		                                      cat->index, 0));
		if (s.name)
			put(p + 2, (uint64_t)(uintptr_t)name);
		if (s.value)
			put(p + 2 + s.name, value);
		if (path != PATH_TSC)
			ts = clock_read(path);
		put(p, ts);
		report_recorded(out, &r, p, ts);
		commit(&r, s.words);
		return ts;
	}
	if (!s.function && session_current(r.slot) && tl_recorder_writes_through()) {
		if (s.rec_flags == 0 && !s.value && s.phase == TL_PHASE_BEGIN && !out->want_ts &&
		    tl_recorder_writes_slices())
			return write_slice_through(TL_PHASE_BEGIN, name);
		if (s.phase == TL_PHASE_END && !out->want_ts && tl_recorder_writes_slices())
			return write_slice_through(TL_PHASE_END, NULL);
		uint64_t header =
		    TL_REC_HEADER(s.phase, s.words, s.rec_flags | rec_flags, cat->index, 0);
		return report_slow(out, shape_write_through(header, name, value, out->want_ts));
	}
	return shape_slow(s, rec_flags, cat, name, value, out, true);
}

static const struct report no_report = {NULL, NULL, false};
static const struct report ts_report = {NULL, NULL, true};

/*
 * A shape's forms, one per clock path, and the call of the session's one:
 * one load and a jump. Where there is no TSC (TL_HAVE_TSC 0) the vDSO form
 * is the only one. REPORT is the report every call of the form makes (a
 * constant, so that what it does not ask for costs nothing), or `out` for
 * forms that take it as a last argument (OUT_PARAM).
 */
#define FORM_PARAMS const tl_category *cat, const char *name, uint64_t value
#define FORM_FUNCTION(form, path_name, path, shape, flags, REPORT, ...)                       \
	static __attribute__((noinline, hot, aligned(64))) tl_timestamp form##_##path_name(   \
	    FORM_PARAMS __VA_ARGS__)                                                           \
	{                                                                                      \
		return fast_form(path, shape, flags, cat, name, value, REPORT);                 \
	}
#if TL_HAVE_TSC
#define TSC_FORM(form, shape, flags, REPORT, ...)                                              \
	FORM_FUNCTION(form, tsc, PATH_TSC, shape, flags, REPORT, __VA_ARGS__)
#define CALL_FORM(form, ...)                                                                   \
	(TL_LIKELY(tl_clock_tsc_chosen()) ? form##_tsc(__VA_ARGS__) : form##_vdso(__VA_ARGS__))
#else
#define TSC_FORM(form, shape, flags, REPORT, ...)
#define CALL_FORM(form, ...) form##_vdso(__VA_ARGS__)
#endif
#define DEFINE_FORMS(form, shape, flags, REPORT)                                               \
	TSC_FORM(form, shape, flags, REPORT)                                                   \
	FORM_FUNCTION(form, vdso, PATH_VDSO, shape, flags, REPORT)                             \
	static ALWAYS_INLINE tl_timestamp form(FORM_PARAMS)                                    \
	{                                                                                      \
		return CALL_FORM(form, cat, name, value);                                      \
	}
#define DEFINE_REPORTING_FORMS(form, shape, flags)                                             \
	TSC_FORM(form, shape, flags, out, , const struct report *out)                          \
	FORM_FUNCTION(form, vdso, PATH_VDSO, shape, flags, out, , const struct report *out)    \
	static ALWAYS_INLINE tl_timestamp form(FORM_PARAMS, const struct report *out)          \
	{                                                                                      \
		return CALL_FORM(form, cat, name, value, out);                                 \
	}

DEFINE_FORMS(begin_form, SHAPE_BEGIN, 0, &no_report)
DEFINE_FORMS(end_form, SHAPE_END, 0, &no_report)
DEFINE_FORMS(numbered_form, SHAPE_NUMBERED, 0, &no_report)
DEFINE_FORMS(counter_form, SHAPE_COUNTER, 0, &no_report)
DEFINE_FORMS(counter_double_form, SHAPE_COUNTER, TL_REC_F_COUNTER_DOUBLE, &no_report)
DEFINE_FORMS(counter_ts_form, SHAPE_COUNTER, 0, &ts_report)
DEFINE_FORMS(counter_double_ts_form, SHAPE_COUNTER, TL_REC_F_COUNTER_DOUBLE, &ts_report)
DEFINE_FORMS(end_ts_form, SHAPE_END, 0, &ts_report)
DEFINE_REPORTING_FORMS(begin_report_form, SHAPE_BEGIN, 0)
DEFINE_REPORTING_FORMS(numbered_report_form, SHAPE_NUMBERED, 0)
DEFINE_REPORTING_FORMS(function_report_form, SHAPE_FUNCTION, 0)

/* The forms start on a cache line of their own, so that their cost does
 * not move with the code around them. */
void tl_emit_begin(const tl_category *cat, const char *name)
{
	begin_form(cat, name, 0);
}

void tl_emit_end(const tl_category *cat)
{
	end_form(cat, NULL, 0);
}

void tl_emit_begin_numbered(const tl_category *cat, const char *name, uint64_t number)
{
	numbered_form(cat, name, number);
}

void tl_emit_counter(const tl_category *cat, const char *name, int64_t value)
{
	counter_form(cat, name, (uint64_t)value);
}

void tl_emit_counter_double(const tl_category *cat, const char *name, double value)
{
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	counter_double_form(cat, name, bits);
}

/* A plain counter (kept name, no argument, now) takes the counters' form. */
static ALWAYS_INLINE bool is_plain_counter(const tl_category *cat, tl_phase phase,
                                           unsigned flags, tl_timestamp ts, unsigned nargs)
{
	return phase == TL_PHASE_COUNTER && (flags & ~(unsigned)TL_EVENT_COUNTER_DOUBLE) == 0 &&
	       nargs == 0 && ts == 0 && cat;
}

/* tl_emit and tl_tracer_emit: a plain counter takes its form, anything
 * else the general path. want_ts: the caller uses the timestamp. */
static ALWAYS_INLINE tl_timestamp emit_any(const tl_category *cat, tl_phase phase,
                                           unsigned flags, const char *name, uint64_t id,
                                           tl_timestamp ts, const tl_arg *args, unsigned nargs,
                                           bool want_ts)
{
	if (!args)
		nargs = 0;
	if (is_plain_counter(cat, phase, flags, ts, nargs)) {
		bool dbl = (flags & TL_EVENT_COUNTER_DOUBLE) != 0;
		if (want_ts)
			return dbl ? counter_double_ts_form(cat, name, id)
			           : counter_ts_form(cat, name, id);
		return dbl ? counter_double_form(cat, name, id) : counter_form(cat, name, id);
	}
	struct event ev = {.cat = cat,
	                   .phase = (char)phase,
	                   .flags = flags,
	                   .name = name,
	                   .value = id,
	                   .ts = ts,
	                   .args = args,
	                   .nargs = nargs,
	                   .want_ts = want_ts};
	return emit_slow(&ev, false);
}

tl_timestamp tl_tracer_emit(const tl_category *cat, tl_phase phase, unsigned flags,
                            const char *name, uint64_t id, tl_timestamp ts, const tl_arg *args,
                            unsigned nargs)
{
	return emit_any(cat, phase, flags, name, id, ts, args, nargs, true);
}

void tl_emit(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
             uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs)
{
	emit_any(cat, phase, flags, name, id, ts, args, nargs, false);
}

void tl_emit_complete(const tl_category *cat, const char *name, tl_timestamp start,
                      tl_timestamp end)
{
	if (end < start) {
		tl_timestamp t = start;
		start = end;
		end = t;
	}
	tl_emit(cat, TL_PHASE_COMPLETE, 0, name, end, start, NULL, 0);
}

/* ---- the tracer interface's emitters (tracer.h) -------------------------------- */

tl_timestamp tl_tracer_begin(const tl_category *cat, const char *name,
                             struct tl_thread_mark *mark)
{
	const struct report out = {NULL, mark, true};
	return begin_report_form(cat, name, 0, &out);
}

tl_timestamp tl_tracer_end(const tl_category *cat)
{
	return end_ts_form(cat, NULL, 0);
}

void tl_tracer_begin_numbered(const tl_category *cat, const char *name, uint64_t number,
                              tl_tracer_where *where)
{
	const struct report out = {where, NULL, true};
	numbered_report_form(cat, name, number, &out);
}

/* A function record: the address interned, the id in the header. */
tl_timestamp tl_tracer_function_enter(const void *address, struct tl_thread_mark *mark)
{
	uint32_t id = tl_function_intern((uintptr_t)address);
	if (TL_UNLIKELY(id == TL_FUNCTION_NONE)) {
		if (mark)
			mark->block = NULL;
		return 0; /* counted in the table's overflow */
	}
	const struct report out = {NULL, mark, true};
	return function_report_form(NULL, NULL, id, &out);
}

uint64_t tl_tracer_functions_unnamed(void)
{
	return atomic_load_explicit(&tl_function_table_overflow, memory_order_relaxed);
}

/* A BEGIN with a name copied by whole words: its own form, as its length
 * varies. */
static ALWAYS_INLINE size_t copy_words(size_t len)
{
	return 3 + (len + 7) / 8;
}

static __attribute__((noinline)) void copy_slow(const tl_category *cat, const char *name,
                                                tl_tracer_where *where, bool entered)
{
	struct event ev = {.cat = cat,
	                   .phase = TL_PHASE_BEGIN,
	                   .flags = TL_EVENT_COPY_NAME,
	                   .name = name,
	                   .want_ts = true};
	const struct report out = {where, NULL, true};
	report_slow(&out, emit_slow(&ev, entered));
}

static ALWAYS_INLINE void copy_form(enum clock_path path, const tl_category *cat,
                                    const char *name, size_t len, tl_tracer_where *where)
{
	struct reservation r;
	size_t words = copy_words(len);
	if (TL_UNLIKELY(len > TL_COPY_MAX || !reserve_enter(&r))) {
		copy_slow(cat, name, where, false);
		return;
	}
	if (TL_LIKELY(reserve_fits(&r, words, path))) {
		_Atomic uint64_t *p = reserve_at(&r);
		tl_timestamp ts = clock_read(path);
		put(p, ts);
		put(p + 1, TL_REC_HEADER(TL_PHASE_BEGIN, words, TL_REC_F_NAME_INLINE, cat->index, 0));
		put(p + 2, len);
		for (size_t i = 3; i < words; i++) {
			uint64_t word;
			memcpy(&word, name + 8 * (i - 3), 8); /* zero-padded by the caller */
			put(p + i, word);
		}
		const struct report out = {where, NULL, true};
		report_recorded(&out, &r, p, ts);
		commit(&r, words);
		return;
	}
	copy_slow(cat, name, where, true);
}

#if TL_HAVE_TSC
static __attribute__((noinline, hot)) void copy_tsc(const tl_category *cat, const char *name,
                                                    size_t len, tl_tracer_where *where)
{
	copy_form(PATH_TSC, cat, name, len, where);
}
#endif

static __attribute__((noinline, hot)) void copy_vdso(const tl_category *cat, const char *name,
                                                     size_t len, tl_tracer_where *where)
{
	copy_form(PATH_VDSO, cat, name, len, where);
}

void tl_tracer_begin_copy(const tl_category *cat, const char *name, size_t len,
                          tl_tracer_where *where)
{
#if TL_HAVE_TSC
	if (TL_LIKELY(tl_clock_tsc_chosen())) {
		copy_tsc(cat, name, len, where);
		return;
	}
#endif
	copy_vdso(cat, name, len, where);
}
