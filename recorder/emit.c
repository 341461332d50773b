/*
 * The emitters: the only code on the per-event hot path.
 *
 * Per event: one TLS load, the re-entry and session checks on the thread's
 * own cache line, the clock read, the record stores and one release store
 * publishing the record. No lock, no syscall besides the clock (vDSO or
 * rdtsc), no allocation; everything else is in tl_thread_reserve_slow.
 */
#include <stdbool.h>
#include <string.h>

#include "recorder/clock.h"
#include "recorder/internal.h"
#include "recorder/record.h"
#include "recorder/tracer.h"

/* Every thread starts on tl_slot_none, whose epoch matches no session and
 * whose block has no room, so its first event takes the slow path and
 * registers it: the fast path needs no NULL check. Unregistered threads
 * may all set and clear its busy bit; nothing else of it is written. */
struct tl_slot tl_slot_none = {.block = &tl_block_none, .epoch = UINT32_MAX};
__thread struct tl_slot *tl_self __attribute__((tls_model("initial-exec"))) = &tl_slot_none;

static inline void put(_Atomic uint64_t *p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

/* Whether `words` fit between p and the slot's limit. Compared as end
 * addresses, not as a difference: p + words is the new write position
 * anyway, so the check costs one compare. */
static inline bool has_room(const struct tl_slot *slot, _Atomic uint64_t *p, size_t words)
{
	return (uintptr_t)p + words * sizeof *p <= (uintptr_t)slot->limit;
}

/*
 * Enters an emit: marks the slot busy and returns where to write `words`,
 * or NULL when the event is not recorded (the slot is left not busy and the
 * drop counted where it is one). *slotp receives the slot to commit to.
 */
static inline _Atomic uint64_t *reserve(struct tl_slot **slotp, size_t words)
{
	struct tl_slot *slot = tl_self;
	_Atomic uint64_t *p;
	if (TL_UNLIKELY(slot == &tl_slot_none)) {
		/* first event of the thread */
		slot = tl_thread_slot();
		if (!slot)
			return NULL;
	}
	if (TL_UNLIKELY(!tl_slot_enter(slot, &p))) {
		/* re-entry from a signal handler */
		atomic_store_explicit(&slot->dropped,
				      atomic_load_explicit(&slot->dropped, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		return NULL;
	}
	*slotp = slot;
	/* The session check comes before the block is touched: after a
	 * shutdown the slot's block may be unmapped. */
	if (TL_UNLIKELY(slot->epoch != atomic_load_explicit(&tl_state, memory_order_relaxed)))
		return tl_thread_reserve_slow(slot, words);
	if (TL_UNLIKELY(!has_room(slot, p, words)))
		return tl_thread_reserve_slow(slot, words);
	return p;
}

/* Publishes one record of the general paths, ending at `end`. */
static inline void commit(struct tl_slot *slot, _Atomic uint64_t *end)
{
	tl_slot_commit_records(slot, end, 1);
}

/*
 * The fast forms. Each enters the thread's slot, checks the session and
 * the room, reads the clock and stores the record, calling nothing, so the
 * TSC forms need no stack frame. Anything else goes to a noinline handler
 * through a tail call.
 *
 * The TSC forms check the slot's epoch against tl_fast_state, which no
 * epoch matches when the clock is not the TSC, so that one check covers
 * both. Their miss handler gets the slot still entered: it goes on with
 * the vDSO clock (its call, in a function of its own, does not make the
 * TSC forms save registers), or hands a plain begin or end to a direct
 * recorder, or lets go of the slot for the slow path. Where there is no
 * TSC at all (TL_HAVE_TSC 0) the forms read the vDSO clock themselves.
 */

/* Whether the slot, entered at position word pos, takes `words` in
 * session `state`: the new position word is compared with the limit's, so
 * the check shares its add with the commit. The session check comes before
 * the block is touched: after a shutdown the slot's block may be unmapped. */
static inline bool fits(const struct tl_slot *slot, uint64_t pos, size_t words, uint32_t state)
{
	return slot->epoch == state && pos + tl_pos_step(words) <= slot->limit_pos;
}

static inline __attribute__((always_inline)) uint32_t form_state(bool tsc)
{
	return atomic_load_explicit(tsc ? &tl_fast_state : &tl_state, memory_order_relaxed);
}

/* A miss handler's test: the clock is the vDSO one and the record fits. */
static inline bool vdso_fits(const struct tl_slot *slot, uint64_t pos, size_t words)
{
	return !tl_clock_use_tsc &&
	       fits(slot, pos, words, atomic_load_explicit(&tl_state, memory_order_relaxed));
}

/* The position word of the slot entered by a fast form (busy flag clear). */
static inline uint64_t entered_pos(const struct tl_slot *slot)
{
	return atomic_load_explicit(&slot->pos, memory_order_relaxed) & ~TL_SLOT_BUSY;
}

/* Reads the clock once the record has room: the microcoded rdtsc then
 * overlaps with the stores instead of delaying the checks. */
static inline __attribute__((always_inline)) uint64_t read_clock(bool tsc)
{
#if TL_HAVE_TSC
	if (tsc)
		return __rdtsc();
#endif
	(void)tsc;
	return tl_clock_read();
}

/*
 * A direct recorder (systrace) gets a plain begin or end, from a slot
 * already entered at position word pos, through its write_slice op (no
 * record, no clock read), or else as a record built on the stack, without
 * the general path's sizing and scratch block: the write(2) behind it is
 * the cost, and this keeps the rest small. Lets go of the slot.
 * Returns false when the general path must handle it (first event of a
 * thread, not running, a buffering recorder).
 */
static bool direct_entered(struct tl_slot *slot, uint64_t pos, const tl_category *cat,
                           char phase, const char *name)
{
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	bool direct = slot != &tl_slot_none && state != 0 && !(state & TL_STATE_FULL) &&
	              tl_active.ops->write_direct;
	if (direct && tl_active.ops->write_slice) {
		tl_active.ops->write_slice(&tl_active, phase,
		                           phase == TL_PHASE_BEGIN ? (name ? name : "") : NULL);
	} else if (direct) {
		uint64_t record[3] = {tl_clock_read(), 0, (uint64_t)(uintptr_t)(name ? name : "")};
		size_t words = phase == TL_PHASE_BEGIN ? 3 : 2;
		record[1] = TL_REC_HEADER(phase, words, 0, cat->index, 0);
		tl_active.ops->write_direct(&tl_active, record, words);
	}
	tl_slot_commit_pos(slot, pos);
	return direct;
}

/* direct_entered, entering the slot itself; false on re-entry too. */
static bool direct_plain(const tl_category *cat, char phase, const char *name)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (!tl_slot_enter_pos(slot, &pos))
		return false;
	return direct_entered(slot, pos, cat, phase, name);
}

static __attribute__((noinline)) void begin_slow(const tl_category *cat, const char *name)
{
	if (!direct_plain(cat, TL_PHASE_BEGIN, name))
		tl_emit(cat, TL_PHASE_BEGIN, 0, name, 0, 0, NULL, 0);
}

static __attribute__((noinline)) void end_slow(const tl_category *cat)
{
	if (!direct_plain(cat, TL_PHASE_END, NULL))
		tl_emit(cat, TL_PHASE_END, 0, NULL, 0, 0, NULL, 0);
}

/* ---- tl_emit_begin, tl_emit_end ------------------------------------------ */

/*
 * Where a fast form writes: the position of pos, computed before the clock
 * is read. The empty asm pins the order: rdtsc is microcoded, and an
 * instruction placed after it waits for it, so the stores' address would
 * be late.
 */
static inline __attribute__((always_inline)) _Atomic uint64_t *record_at(uint64_t pos)
{
	_Atomic uint64_t *p = tl_pos_ptr(pos);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* The fast forms' writes: the record at the position of pos, with the
 * clock read once that is known (tsc: the TSC, else the vDSO clock), then
 * the commit, one add away from pos. */
static inline __attribute__((always_inline)) void
begin_put(struct tl_slot *slot, uint64_t pos, bool tsc, const tl_category *cat,
          const char *name)
{
	_Atomic uint64_t *p = record_at(pos);
	put(p, read_clock(tsc));
	put(p + 1, TL_REC_HEADER(TL_PHASE_BEGIN, 3, 0, cat->index, 0));
	put(p + 2, (uint64_t)(uintptr_t)name);
	tl_slot_commit_pos(slot, pos + tl_pos_step(3));
}

static inline __attribute__((always_inline)) uint64_t
end_put(struct tl_slot *slot, uint64_t pos, bool tsc, const tl_category *cat)
{
	_Atomic uint64_t *p = record_at(pos);
	uint64_t ts = read_clock(tsc);
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_END, 2, 0, cat->index, 0));
	tl_slot_commit_pos(slot, pos + tl_pos_step(2));
	return ts;
}

/*
 * The TSC forms' miss handlers, entered with the slot busy. On a machine
 * without a usable TSC they are the vDSO forms, hence `hot`; the fast forms
 * reach them through `cold` trampolines (one jump), which keep the checks
 * of the fast forms falling through to the stores.
 */
static __attribute__((noinline, hot)) void begin_miss(const tl_category *cat, const char *name)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 3))
		begin_put(slot, pos, false, cat, name);
	else if (!direct_entered(slot, pos, cat, TL_PHASE_BEGIN, name))
		tl_emit(cat, TL_PHASE_BEGIN, 0, name, 0, 0, NULL, 0);
}

/*
 * A TSC form's miss where the clock is the TSC: a plain slice for a direct
 * recorder's write_slice (the slot still entered, so that shutdown waits for
 * the write), or the general path. Nothing is kept across the recorder's
 * call, so this needs no saved registers.
 */
static __attribute__((noinline)) void slice_general(const tl_category *cat, char phase,
                                                    const char *name)
{
	struct tl_slot *slot = tl_self;
	if (!direct_entered(slot, entered_pos(slot), cat, phase, name))
		tl_emit(cat, phase, 0, name, 0, 0, NULL, 0);
}

static __attribute__((noinline, hot)) void slice_direct(const tl_category *cat, char phase,
                                                        const char *name)
{
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	void (*write_slice)(struct tl_recorder *, char, const char *);
	/* tl_active.ops is read only in a session */
	if (TL_LIKELY(tl_self != &tl_slot_none && state != 0 && !(state & TL_STATE_FULL) &&
	              (write_slice = tl_active.ops->write_slice) != NULL)) {
		write_slice(&tl_active, phase, phase == TL_PHASE_BEGIN ? (name ? name : "") : NULL);
		tl_slot_leave(tl_self);
		return;
	}
	slice_general(cat, phase, name);
}

static __attribute__((noinline, cold)) void begin_tsc_miss(const tl_category *cat,
                                                           const char *name)
{
	if (TL_LIKELY(tl_clock_use_tsc))
		slice_direct(cat, TL_PHASE_BEGIN, name);
	else
		begin_miss(cat, name);
}

static __attribute__((noinline, hot)) void end_miss(const tl_category *cat)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 2))
		end_put(slot, pos, false, cat);
	else if (!direct_entered(slot, pos, cat, TL_PHASE_END, NULL))
		tl_emit(cat, TL_PHASE_END, 0, NULL, 0, 0, NULL, 0);
}

static __attribute__((noinline, cold)) void end_tsc_miss(const tl_category *cat)
{
	if (TL_LIKELY(tl_clock_use_tsc))
		slice_direct(cat, TL_PHASE_END, NULL);
	else
		end_miss(cat);
}

/* The two fast forms start on a cache line of their own, so that their
 * cost does not move with the code around them. */
__attribute__((aligned(64))) void tl_emit_begin(const tl_category *cat, const char *name)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	bool entered = tl_slot_enter_pos(slot, &pos);
	if (TL_LIKELY(entered && fits(slot, pos, 3, form_state(tsc)))) {
		begin_put(slot, pos, tsc, cat, name);
		return;
	}
	if (entered && tsc) {
		begin_tsc_miss(cat, name);
		return;
	}
	if (entered)
		tl_slot_commit_pos(slot, pos);
	begin_slow(cat, name); /* or re-entry from a signal handler */
}

__attribute__((aligned(64))) void tl_emit_end(const tl_category *cat)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	bool entered = tl_slot_enter_pos(slot, &pos);
	if (TL_LIKELY(entered && fits(slot, pos, 2, form_state(tsc)))) {
		end_put(slot, pos, tsc, cat);
		return;
	}
	if (entered && tsc) {
		end_tsc_miss(cat);
		return;
	}
	if (entered)
		tl_slot_commit_pos(slot, pos);
	end_slow(cat);
}

/* ---- internal forms returning their timestamp (tracer.h) -------- */

/* A copied-name BEGIN off the fast path: the general emitter, then where
 * it went (a clock read of its own when it was not recorded). */
static __attribute__((noinline)) void begin_copy_slow(const tl_category *cat, const char *name,
                                                      tl_tracer_where *out)
{
	tl_timestamp ts = tl_tracer_emit(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, 0, NULL, 0);
	out->session = ts ? atomic_load_explicit(&tl_state, memory_order_relaxed) : 0;
	out->ts = ts ? ts : tl_clock_read();
}

static __attribute__((noinline)) tl_timestamp begin_ts_slow(const tl_category *cat,
                                                           const char *name,
                                                           struct tl_thread_mark *mark)
{
	mark->block = NULL;
	return tl_tracer_emit(cat, TL_PHASE_BEGIN, 0, name, 0, 0, NULL, 0);
}

static __attribute__((noinline)) tl_timestamp end_ts_slow(const tl_category *cat)
{
	return tl_tracer_emit(cat, TL_PHASE_END, 0, NULL, 0, 0, NULL, 0);
}

/* The words of a BEGIN whose name of len bytes is copied by whole words. */
static inline size_t copy_words(size_t len)
{
	return 3 + (len + 7) / 8;
}

/* begin_put with a copied name, by whole words (see tracer.h). */
static inline __attribute__((always_inline)) void
begin_copy_put(struct tl_slot *slot, uint64_t pos, bool tsc, const tl_category *cat,
               const char *name, size_t len, tl_tracer_where *out)
{
	_Atomic uint64_t *p = record_at(pos);
	size_t words = copy_words(len);
	uint64_t ts = read_clock(tsc);
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_BEGIN, words, TL_REC_F_NAME_INLINE, cat->index, 0));
	put(p + 2, len);
	for (size_t i = 3; i < words; i++) {
		uint64_t word;
		memcpy(&word, name + 8 * (i - 3), 8); /* zero-padded by the caller */
		put(p + i, word);
	}
	tl_slot_commit_pos(slot, pos + tl_pos_step(words));
	out->ts = ts;
	if (out->session != slot->epoch)
		out->session = slot->epoch;
}

/* begin_put, also marking the record (thread_mark.h) while the slot is
 * still busy. */
static inline __attribute__((always_inline)) tl_timestamp
begin_ts_put(struct tl_slot *slot, uint64_t pos, bool tsc, const tl_category *cat,
             const char *name, struct tl_thread_mark *mark)
{
	_Atomic uint64_t *p = record_at(pos);
	struct tl_block *block = slot->block;
	uint64_t ts = read_clock(tsc);
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_BEGIN, 3, 0, cat->index, 0));
	put(p + 2, (uint64_t)(uintptr_t)name);
	mark->block = block;
	mark->seq = atomic_load_explicit(&block->seq, memory_order_relaxed);
	mark->gen = atomic_load_explicit(&block->gen, memory_order_relaxed);
	mark->offset = (uint32_t)(p - block->data);
	mark->session = slot->epoch;
	tl_slot_commit_pos(slot, pos + tl_pos_step(3));
	return ts;
}

static __attribute__((noinline, hot)) void begin_copy_miss(const tl_category *cat,
                                                           const char *name, size_t len,
                                                           tl_tracer_where *out)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, copy_words(len))) {
		begin_copy_put(slot, pos, false, cat, name, len, out);
		return;
	}
	tl_slot_commit_pos(slot, pos);
	begin_copy_slow(cat, name, out);
}

static __attribute__((noinline, cold)) void
begin_copy_tsc_miss(const tl_category *cat, const char *name, size_t len,
                    tl_tracer_where *out)
{
	begin_copy_miss(cat, name, len, out);
}

static __attribute__((noinline, hot)) tl_timestamp begin_ts_miss(const tl_category *cat,
                                                                 const char *name,
                                                                 struct tl_thread_mark *mark)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 3))
		return begin_ts_put(slot, pos, false, cat, name, mark);
	tl_slot_commit_pos(slot, pos);
	return begin_ts_slow(cat, name, mark);
}

static __attribute__((noinline, cold)) tl_timestamp
begin_ts_tsc_miss(const tl_category *cat, const char *name, struct tl_thread_mark *mark)
{
	return begin_ts_miss(cat, name, mark);
}

static __attribute__((noinline, hot)) tl_timestamp end_ts_miss(const tl_category *cat)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 2))
		return end_put(slot, pos, false, cat);
	tl_slot_commit_pos(slot, pos);
	return end_ts_slow(cat);
}

static __attribute__((noinline, cold)) tl_timestamp end_ts_tsc_miss(const tl_category *cat)
{
	return end_ts_miss(cat);
}

void tl_tracer_begin_copy(const tl_category *cat, const char *name, size_t len,
                               tl_tracer_where *out)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (TL_UNLIKELY(len > TL_COPY_MAX || !tl_slot_enter_pos(slot, &pos))) {
		begin_copy_slow(cat, name, out);
		return;
	}
	if (TL_UNLIKELY(!fits(slot, pos, copy_words(len), form_state(tsc)))) {
		if (tsc) {
			begin_copy_tsc_miss(cat, name, len, out);
			return;
		}
		tl_slot_commit_pos(slot, pos);
		begin_copy_slow(cat, name, out);
		return;
	}
	begin_copy_put(slot, pos, tsc, cat, name, len, out);
}

tl_timestamp tl_tracer_begin(const tl_category *cat, const char *name,
                                struct tl_thread_mark *mark)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (TL_UNLIKELY(!tl_slot_enter_pos(slot, &pos)))
		return begin_ts_slow(cat, name, mark);
	if (TL_UNLIKELY(!fits(slot, pos, 3, form_state(tsc)))) {
		if (tsc)
			return begin_ts_tsc_miss(cat, name, mark);
		tl_slot_commit_pos(slot, pos);
		return begin_ts_slow(cat, name, mark);
	}
	return begin_ts_put(slot, pos, tsc, cat, name, mark);
}

tl_timestamp tl_tracer_end(const tl_category *cat)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (TL_UNLIKELY(!tl_slot_enter_pos(slot, &pos)))
		return end_ts_slow(cat);
	if (TL_UNLIKELY(!fits(slot, pos, 2, form_state(tsc)))) {
		if (tsc)
			return end_ts_tsc_miss(cat);
		tl_slot_commit_pos(slot, pos);
		return end_ts_slow(cat);
	}
	return end_put(slot, pos, tsc, cat);
}

/* ---- the general form -------------------------------------------------- */

static int phase_known(tl_phase phase)
{
	switch (phase) {
	case TL_PHASE_BEGIN:
	case TL_PHASE_END:
	case TL_PHASE_COMPLETE:
	case TL_PHASE_INSTANT:
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
	case TL_PHASE_COUNTER:
		return 1;
	}
	return 0;
}

/* Length of a copied string, capped; *truncated set when cut. */
static size_t copy_length(const char *s, int *truncated)
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

static void count(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline unsigned record_flags(unsigned flags, int copy_name)
{
	return (copy_name ? TL_REC_F_NAME_INLINE : 0) |
	       (((flags & TL_EVENT_SCOPE_MASK) >> 1) << TL_REC_F_SCOPE_SHIFT) |
	       ((flags & TL_EVENT_COUNTER_DOUBLE) ? TL_REC_F_COUNTER_DOUBLE : 0);
}

/* Publishes a record of the general paths, or hands it to a direct
 * recorder. */
static inline void finish(struct tl_slot *slot, _Atomic uint64_t *end)
{
	struct tl_block *block = slot->block;
	if (TL_UNLIKELY(block->direct)) {
		atomic_store_explicit(&block->cur, end, memory_order_relaxed);
		tl_thread_commit_direct(slot, block); /* leaves the slot not busy */
		return;
	}
	commit(slot, end);
}

/* An event without arguments (counters, instants, async, flows, complete),
 * its name kept or copied: no argument loop, and a small frame. */
static __attribute__((noinline)) tl_timestamp emit_plain(const tl_category *cat, tl_phase phase,
                                                         unsigned flags, const char *name,
                                                         uint64_t id, tl_timestamp ts)
{
	int has_name = tl_record_has_name((char)phase);
	int has_value = tl_record_has_value((char)phase);
	int copy_name = has_name && (flags & TL_EVENT_COPY_NAME);
	if (has_name && !name)
		name = "";
	int truncated = 0;
	size_t name_len = copy_name ? copy_length(name, &truncated) : 0;
	size_t words = 2 + (copy_name ? TL_REC_STRING_WORDS(name_len) : (size_t)has_name) +
		       (size_t)has_value;
	struct tl_slot *slot;
	_Atomic uint64_t *w = reserve(&slot, words);
	if (TL_UNLIKELY(!w))
		return 0;
	if (!ts)
		ts = tl_clock_read();
	put(w++, ts);
	put(w++, TL_REC_HEADER(phase, words, record_flags(flags, copy_name), cat->index, 0));
	if (copy_name)
		w = put_string(w, name, name_len);
	else if (has_name)
		put(w++, (uint64_t)(uintptr_t)name);
	if (has_value)
		put(w++, id);
	if (TL_UNLIKELY(truncated))
		count(&slot->truncated, (uint64_t)truncated);
	finish(slot, w);
	return ts;
}

/* Any event: arguments, copies, bad input. */
static __attribute__((noinline)) tl_timestamp emit_general(const tl_category *cat, tl_phase phase,
                                                           unsigned flags, const char *name,
                                                           uint64_t id, tl_timestamp ts,
                                                           const tl_arg *args, unsigned nargs)
{
	struct tl_slot *slot = NULL;
	if (TL_UNLIKELY(!phase_known(phase) || !cat)) {
		slot = tl_thread_slot();
		if (slot)
			count(&slot->dropped, 1);
		return 0;
	}
	unsigned args_dropped = 0;
	if (nargs > TL_MAX_ARGS) {
		args_dropped = nargs - TL_MAX_ARGS;
		nargs = TL_MAX_ARGS;
	}
	if (!args)
		nargs = 0;

	/* Size the record. */
	int truncated = 0;
	int has_name = tl_record_has_name((char)phase);
	int copy_name = has_name && (flags & TL_EVENT_COPY_NAME);
	size_t name_len = 0;
	if (has_name && !name)
		name = "";
	size_t words = 2;
	if (copy_name) {
		name_len = copy_length(name, &truncated);
		words += TL_REC_STRING_WORDS(name_len);
	} else if (has_name) {
		words += 1;
	}
	if (tl_record_has_value((char)phase))
		words += 1;
	size_t arg_len[TL_MAX_ARGS];
	uint64_t types = 0;
	unsigned kept = 0;
	for (unsigned i = 0; i < nargs; i++) {
		const tl_arg *a = &args[i];
		if (a->type <= TL_ARG_NONE || a->type > TL_ARG_STRING_COPY) {
			args_dropped++;
			continue;
		}
		words += 1; /* key */
		if (a->type == TL_ARG_STRING_COPY) {
			arg_len[i] = copy_length(a->value.s, &truncated);
			words += TL_REC_STRING_WORDS(arg_len[i]);
		} else {
			words += 1;
		}
		types |= (uint64_t)a->type << (4 * kept++);
	}

	unsigned rec_flags = record_flags(flags, copy_name);

	_Atomic uint64_t *p = reserve(&slot, words);
	if (TL_UNLIKELY(!p))
		return 0;
	_Atomic uint64_t *w = p;
	if (!ts)
		ts = tl_clock_read();
	put(w++, ts);
	put(w++, TL_REC_HEADER(phase, words, rec_flags, cat->index, types));
	if (copy_name)
		w = put_string(w, name, name_len);
	else if (has_name)
		put(w++, (uint64_t)(uintptr_t)name);
	if (tl_record_has_value((char)phase))
		put(w++, id);
	for (unsigned i = 0; i < nargs; i++) {
		const tl_arg *a = &args[i];
		if (a->type <= TL_ARG_NONE || a->type > TL_ARG_STRING_COPY)
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
	if (TL_UNLIKELY(truncated))
		count(&slot->truncated, (uint64_t)truncated);
	if (TL_UNLIKELY(args_dropped))
		count(&slot->args_dropped, args_dropped);
	finish(slot, w);
	return ts;
}

/*
 * A counter with a kept name and no argument, the common case of
 * TL_TRACE_EVENT_COUNTER and of the tracers' counters, on the fast path:
 * four words, the clock read only when no timestamp is given. Returns the
 * timestamp, or 0 when the general path must handle it.
 */
static inline __attribute__((always_inline)) tl_timestamp
counter_fast(const tl_category *cat, unsigned flags, const char *name, uint64_t value,
             tl_timestamp ts)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (TL_UNLIKELY(!tl_slot_enter_pos(slot, &pos)))
		return 0;
	if (TL_UNLIKELY(!fits(slot, pos, 4, form_state(false)))) {
		tl_slot_commit_pos(slot, pos);
		return 0;
	}
	_Atomic uint64_t *p = tl_pos_ptr(pos);
	if (!ts)
		ts = tl_clock_read();
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_COUNTER, 4, record_flags(flags, 0), cat->index, 0));
	put(p + 2, (uint64_t)(uintptr_t)(name ? name : ""));
	put(p + 3, value);
	tl_slot_commit_pos(slot, pos + tl_pos_step(4));
	return ts;
}

static inline bool is_plain_counter(const tl_category *cat, tl_phase phase, unsigned flags,
                                    const tl_arg *args, unsigned nargs)
{
	return phase == TL_PHASE_COUNTER && (flags & ~(unsigned)TL_EVENT_COUNTER_DOUBLE) == 0 &&
	       (nargs == 0 || !args) && cat;
}

void tl_emit(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
	     uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs)
{
	if (is_plain_counter(cat, phase, flags, args, nargs) &&
	    TL_LIKELY(counter_fast(cat, flags, name, id, ts) != 0))
		return;
	if (TL_LIKELY((nargs == 0 || !args) && cat && phase_known(phase)))
		emit_plain(cat, phase, flags, name, id, ts);
	else
		emit_general(cat, phase, flags, name, id, ts, args, nargs);
}

tl_timestamp tl_tracer_emit(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
                          uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs)
{
	if (is_plain_counter(cat, phase, flags, args, nargs)) {
		tl_timestamp done = counter_fast(cat, flags, name, id, ts);
		if (TL_LIKELY(done != 0))
			return done;
	}
	if (TL_LIKELY((nargs == 0 || !args) && cat && phase_known(phase)))
		return emit_plain(cat, phase, flags, name, id, ts);
	return emit_general(cat, phase, flags, name, id, ts, args, nargs);
}

/* flags: 0 or TL_REC_F_COUNTER_DOUBLE, which is TL_EVENT_COUNTER_DOUBLE's bit */
static __attribute__((noinline)) void counter_slow(const tl_category *cat, unsigned flags,
                                                   const char *name, uint64_t value)
{
	tl_emit(cat, TL_PHASE_COUNTER, flags ? TL_EVENT_COUNTER_DOUBLE : 0, name, value, 0, NULL,
	        0);
}

static inline __attribute__((always_inline)) void
counter_put(struct tl_slot *slot, uint64_t pos, uint64_t ts, const tl_category *cat,
            unsigned flags, const char *name, uint64_t value)
{
	_Atomic uint64_t *p = record_at(pos);
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_COUNTER, 4, flags, cat->index, 0));
	put(p + 2, (uint64_t)(uintptr_t)name); /* NULL reads as "" */
	put(p + 3, value);
	tl_slot_commit_pos(slot, pos + tl_pos_step(4));
}

/* The counters' miss handler, entered with the slot busy, as begin_miss:
 * the vDSO form, or the slow path. */
static __attribute__((noinline, hot)) void counter_miss(const tl_category *cat, unsigned flags,
                                                        const char *name, uint64_t value)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 4)) {
		counter_put(slot, pos, tl_clock_read(), cat, flags, name, value);
		return;
	}
	tl_slot_commit_pos(slot, pos);
	counter_slow(cat, flags, name, value);
}

static __attribute__((noinline, cold)) void counter_tsc_miss(const tl_category *cat,
                                                             unsigned flags, const char *name,
                                                             uint64_t value)
{
	counter_miss(cat, flags, name, value);
}

/* The counters' TSC form, as tl_emit_begin's: a miss goes to the vDSO
 * form or to tl_emit. */
static inline __attribute__((always_inline)) void
counter_at(const tl_category *cat, unsigned flags, const char *name, uint64_t value)
{
#if TL_HAVE_TSC
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	bool entered = tl_slot_enter_pos(slot, &pos);
	if (TL_LIKELY(entered && fits(slot, pos, 4, form_state(true)))) {
		counter_put(slot, pos, __rdtsc(), cat, flags, name, value);
		return;
	}
	if (entered)
		counter_tsc_miss(cat, flags, name, value);
	else
		counter_slow(cat, flags, name, value); /* re-entry from a signal handler */
#else
	counter_slow(cat, flags, name, value);
#endif
}

void tl_emit_counter(const tl_category *cat, const char *name, int64_t value)
{
	counter_at(cat, 0, name, (uint64_t)value);
}

void tl_emit_counter_double(const tl_category *cat, const char *name, double value)
{
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	counter_at(cat, TL_REC_F_COUNTER_DOUBLE, name, bits);
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

/* ---- a BEGIN with a numbered name (tracer.h) ---------------------- */

static inline __attribute__((always_inline)) void
begin_number_put(_Atomic uint64_t *p, uint64_t ts, const tl_category *cat, const char *name,
                 uint64_t number)
{
	put(p, ts);
	put(p + 1, TL_REC_HEADER(TL_PHASE_BEGIN, 4, TL_REC_F_NAME_NUMBER, cat->index, 0));
	put(p + 2, (uint64_t)(uintptr_t)name);
	put(p + 3, number);
}

/* Off the fast path: the general reservation (first event of a thread, a
 * full block, a direct recorder, not running), then where it went. */
static __attribute__((noinline)) void begin_number_slow(const tl_category *cat, const char *name,
                                                        uint64_t number,
                                                        tl_tracer_where *out)
{
	struct tl_slot *slot;
	_Atomic uint64_t *w = reserve(&slot, 4);
	uint64_t ts = tl_clock_read();
	if (!w) {
		out->session = 0;
		out->ts = ts;
		return;
	}
	begin_number_put(w, ts, cat, name, number);
	finish(slot, w + 4);
	out->session = atomic_load_explicit(&tl_state, memory_order_relaxed);
	out->ts = ts;
}

/* The TSC form's miss: the vDSO form when the clock is not the TSC. */
static __attribute__((noinline, cold)) void begin_number_miss(const tl_category *cat,
                                                              const char *name, uint64_t number,
                                                              tl_tracer_where *out)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos = entered_pos(slot);
	if (vdso_fits(slot, pos, 4)) {
		uint64_t ts = tl_clock_read();
		begin_number_put(tl_pos_ptr(pos), ts, cat, name, number);
		tl_slot_commit_pos(slot, pos + tl_pos_step(4));
		out->ts = ts;
		out->session = slot->epoch;
		return;
	}
	tl_slot_commit_pos(slot, pos);
	begin_number_slow(cat, name, number, out);
}

void tl_tracer_begin_numbered(const tl_category *cat, const char *name, uint64_t number,
                                 tl_tracer_where *out)
{
	const bool tsc = TL_HAVE_TSC;
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	bool entered = tl_slot_enter_pos(slot, &pos);
	if (TL_LIKELY(entered && fits(slot, pos, 4, form_state(tsc)))) {
		_Atomic uint64_t *p = record_at(pos);
		uint64_t ts = read_clock(tsc);
		begin_number_put(p, ts, cat, name, number);
		tl_slot_commit_pos(slot, pos + tl_pos_step(4));
		out->ts = ts;
		if (out->session != slot->epoch)
			out->session = slot->epoch;
		return;
	}
	if (entered && tsc) {
		begin_number_miss(cat, name, number, out);
		return;
	}
	if (entered)
		tl_slot_commit_pos(slot, pos);
	begin_number_slow(cat, name, number, out);
}

void tl_emit_begin_numbered(const tl_category *cat, const char *name, uint64_t number)
{
	tl_tracer_where where = {0, 0};
	tl_tracer_begin_numbered(cat, name, number, &where);
}
