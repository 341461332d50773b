/*
 * Emitters for the library's own tracers (emit.c): like tl_emit_begin,
 * tl_emit_end and tl_emit, but each returns the raw timestamp of the record
 * it wrote, so that a tracer needing the time of its event does not read
 * the clock a second time. Each returns 0 when the event was not recorded
 * (not running, re-entry, recorder full, bad input); the tracer then reads
 * the clock itself. A direct recorder (systrace) counts as recorded. They
 * do not look at the category's enabled flag, as tl_emit does not. Not
 * exported; internal.
 */
#ifndef TIMELINE_EMIT_INTERNAL_H
#define TIMELINE_EMIT_INTERNAL_H

#include <stddef.h>

#include <timeline/timeline.h>

#pragma GCC visibility push(hidden)

/* Where a BEGIN went: its timestamp, and the session (the tl_state value)
 * it was recorded in; state is 0 when it was not recorded, ts then a clock
 * read of its own. */
struct tl_i_begin_out {
	uint64_t ts;
	uint32_t state;
};

/*
 * A BEGIN whose name is copied into the record (TL_EVENT_COPY_NAME), by
 * whole words: name is a NUL-terminated string of len bytes, zero-padded
 * to the next multiple of 8 bytes (len + 1 bytes at least). Same record as
 * tl_emit(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, 0, NULL, 0),
 * on the fast path of tl_emit_begin. Says where it went in *out (written
 * last, so a caller can tail-call it).
 */
void tl_i_emit_begin_copy_into(const tl_category *cat, const char *name, size_t len,
                               struct tl_i_begin_out *out);

/*
 * A BEGIN named `name` (a kept string), a space and `number` in decimal
 * ("frame 42"), as one record of four words (TL_REC_F_NAME_NUMBER): the
 * name is written out in full only by a snapshot, or by a direct
 * recorder. Says where it went in *out, as tl_i_emit_begin_copy_into.
 */
void tl_i_emit_begin_number_into(const tl_category *cat, const char *name, uint64_t number,
                                 struct tl_i_begin_out *out);

/*
 * tl_emit_begin (a kept name), returning the BEGIN's timestamp. When the
 * record went to a buffer on the fast path it also marks it, as
 * tl_thread_last_record_ts would (recorder/thread_mark.h); otherwise
 * mark->block is NULL and the caller reads the record back if it needs the
 * mark.
 */
struct tl_thread_mark;
tl_timestamp tl_i_emit_begin_ts(const tl_category *cat, const char *name,
                                struct tl_thread_mark *mark);

/* tl_emit_end, returning the END's timestamp. */
tl_timestamp tl_i_emit_end_ts(const tl_category *cat);

/* tl_emit, returning the record's timestamp (ts itself when not 0). */
tl_timestamp tl_i_emit_ts(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
                          uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs);

#pragma GCC visibility pop

#endif /* TIMELINE_EMIT_INTERNAL_H */
