/*
 * Thread marks (thread_mark.c): a position in the calling thread's records,
 * for tracers that read back what they just emitted or copy what the
 * thread recorded since a point. Every function works on the calling
 * thread's own blocks and takes no lock. Internal.
 */
#ifndef TIMELINE_THREAD_MARK_H
#define TIMELINE_THREAD_MARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder/internal.h"
#include "recorder/record.h"

#pragma GCC visibility push(hidden)

struct tl_thread_mark {
	const struct tl_block *block; /* NULL: no position (not recording) */
	uint64_t seq;                 /* the block's hand-out order */
	uint32_t gen;                 /* the block's generation when marked */
	uint32_t offset;              /* words from block->data */
	uint32_t epoch;               /* session */
};

/* Marks the end of the thread's last committed record. */
void tl_thread_mark(struct tl_thread_mark *mark);

/* After exactly one emit following tl_thread_mark: when that emit recorded
 * a record of this phase and category, returns its raw timestamp and moves
 * the mark onto it; else 0. */
uint64_t tl_thread_mark_record_ts(struct tl_thread_mark *mark, char phase, unsigned category);

/*
 * The fast form for records of a known shape: when the thread's last
 * committed record has exactly this header word (its length included) and,
 * for a named record, this kept name pointer (0 for none), returns its raw
 * timestamp and, when mark is not NULL, marks it. Else 0. Inline: a few
 * loads and the slot's busy flag around them, as an emit.
 */
static inline uint64_t tl_thread_last_record_ts(uint64_t header, uint64_t name,
                                                struct tl_thread_mark *mark)
{
	struct tl_slot *slot = tl_self;
	_Atomic uint64_t *cur;
	if (TL_UNLIKELY(!tl_slot_enter(slot, &cur)))
		return 0;
	uint64_t ts = 0;
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	const struct tl_block *block = slot->block;
	if (TL_LIKELY(slot->epoch == state && state != 0)) {
		size_t words = TL_REC_WORDS(header);
		size_t used = (size_t)(cur - block->data);
		if (TL_LIKELY(used >= words)) {
			const _Atomic uint64_t *rec = cur - words;
			if (atomic_load_explicit(&rec[1], memory_order_relaxed) == header &&
			    (!name ||
			     atomic_load_explicit(&rec[2], memory_order_relaxed) == name)) {
				ts = atomic_load_explicit(&rec[0], memory_order_relaxed);
				if (mark) {
					mark->block = block;
					mark->gen =
					    atomic_load_explicit(&block->gen, memory_order_relaxed);
					mark->seq =
					    atomic_load_explicit(&block->seq, memory_order_relaxed);
					mark->offset = (uint32_t)(used - words);
					mark->epoch = state;
				}
			}
		}
	}
	tl_slot_commit(slot, cur);
	return ts;
}

/* The records the thread committed since the mark, in order (malloc'd
 * words; decode with tl_record_decode). intact is false when the recorder
 * recycled the mark's block, or one after it, before the copy. */
struct tl_thread_copy {
	uint64_t *words;
	size_t nwords;
	bool intact;
};
/* Returns 0, -ENODATA (no mark, other session, direct recorder), -ENOMEM. */
int tl_thread_copy_since(const struct tl_thread_mark *mark, struct tl_thread_copy *out);

#pragma GCC visibility pop

#endif /* TIMELINE_THREAD_MARK_H */
