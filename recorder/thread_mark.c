/*
 * Thread marks: a position in the calling thread's recorded events, read
 * back later by the same thread. Tracers use them to find the timestamp of
 * the event they just emitted and to copy what the thread recorded since
 * a point (the looper's slow dispatches).
 *
 * A mark names a block by address, generation and hand-out order, plus a
 * word offset. The block pool recycles retired blocks oldest first, so the
 * thread's later blocks outlive the mark's block: the mark stays valid as
 * long as its block keeps its generation.
 *
 * Like an emit, each call marks the thread's slot busy while it reads its
 * block, so tl_shutdown waits for it and a signal handler's emit on the
 * same thread is dropped rather than interleaved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/pool.h"
#include "recorder/record.h"
#include "recorder/recorder.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/tracer.h"

/* Enters the calling thread's slot as an emit does; NULL when the thread
 * has no slot, is inside an emit, or is not recording this session. */
static struct tl_slot *enter(uint32_t *state)
{
	struct tl_slot *slot = tl_self;
	_Atomic uint64_t *cur;
	if (slot == &tl_slot_none || !tl_slot_enter(slot, &cur))
		return NULL;
	*state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	if (*state == 0 || slot->epoch != *state) {
		tl_slot_commit(slot, cur);
		return NULL;
	}
	return slot;
}

static void leave(struct tl_slot *slot)
{
	tl_slot_leave(slot);
}

static void mark_block(struct tl_thread_mark *mark, const struct tl_block *block, uint32_t state,
                       size_t offset)
{
	mark->block = block;
	mark->gen = atomic_load_explicit(&block->gen, memory_order_relaxed);
	mark->seq = atomic_load_explicit(&block->seq, memory_order_relaxed);
	mark->offset = (uint32_t)offset;
	mark->session = state;
}

void tl_thread_mark(struct tl_thread_mark *mark)
{
	memset(mark, 0, sizeof *mark);
	uint32_t state;
	struct tl_slot *slot = enter(&state);
	if (!slot)
		return;
	const struct tl_block *block = slot->block;
	if (block != &tl_block_none) {
		const _Atomic uint64_t *cur = tl_slot_cur(slot);
		mark_block(mark, block, state, (size_t)(cur - block->data));
	}
	leave(slot);
}

tl_timestamp tl_thread_mark_record_ts(struct tl_thread_mark *mark, tl_phase phase,
                                      const tl_category *cat)
{
	unsigned category = cat->index;
	uint32_t state;
	struct tl_slot *slot = enter(&state);
	if (!slot)
		return 0;
	uint64_t ts = 0;
	const struct tl_block *block = slot->block;
	if (block != &tl_block_none) {
		/* the record is at the mark, or it opened the thread's next block */
		size_t at = block == mark->block && mark->session == state ? mark->offset : 0;
		const _Atomic uint64_t *cur = tl_slot_cur(slot);
		size_t end = (size_t)(cur - block->data);
		if (at + 2 <= end) {
			uint64_t header =
			    atomic_load_explicit(&block->data[at + 1], memory_order_relaxed);
			if (TL_REC_PHASE(header) == (char)phase && TL_REC_CATEGORY(header) == category &&
			    at + TL_REC_WORDS(header) == end) {
				ts = atomic_load_explicit(&block->data[at], memory_order_relaxed);
				if (block != mark->block || mark->session != state)
					mark_block(mark, block, state, at);
			}
		}
	}
	leave(slot);
	return ts;
}

tl_timestamp tl_thread_mark_last_begin(const tl_category *cat, const char *name,
                                       struct tl_thread_mark *mark)
{
	uint32_t state;
	struct tl_slot *slot = enter(&state);
	if (!slot)
		return 0;
	const uint64_t header = TL_REC_HEADER(TL_PHASE_BEGIN, 3, 0, cat->index, 0);
	tl_timestamp ts = 0;
	const struct tl_block *block = slot->block;
	size_t used = (size_t)(tl_slot_cur(slot) - block->data);
	if (block != &tl_block_none && used >= 3) {
		const _Atomic uint64_t *rec = block->data + used - 3;
		if (atomic_load_explicit(&rec[1], memory_order_relaxed) == header &&
		    atomic_load_explicit(&rec[2], memory_order_relaxed) == (uint64_t)(uintptr_t)name) {
			ts = atomic_load_explicit(&rec[0], memory_order_relaxed);
			if (mark)
				mark_block(mark, block, state, used - 3);
		}
	}
	leave(slot);
	return ts;
}

/* ---- taking a record back ------------------------------------------------- */

bool tl_tracer_retract(const struct tl_thread_mark *mark)
{
	if (!mark || !mark->block)
		return false;
	uint32_t state;
	struct tl_slot *slot = enter(&state);
	if (!slot)
		return false;
	const struct tl_block *block = slot->block;
	if (block == mark->block && mark->session == state &&
	    atomic_load_explicit(&block->gen, memory_order_relaxed) == mark->gen &&
	    atomic_load_explicit(&block->seq, memory_order_relaxed) == mark->seq) {
		uint64_t pos = atomic_load_explicit(&slot->pos, memory_order_relaxed) & ~TL_SLOT_BUSY;
		size_t used = (size_t)(tl_pos_ptr(pos) - block->data);
		size_t at = mark->offset;
		uint64_t records = tl_pos_records(pos);
		if (at + 2 <= used && records > 0) {
			uint64_t header = atomic_load_explicit(&block->data[at + 1], memory_order_relaxed);
			if (at + TL_REC_WORDS(header) == used) {
				/* the position back to the record's start, one record
				 * fewer; the store also leaves the slot */
				tl_slot_commit_pos(slot, tl_pos_make(block->data + at, records - 1));
				return true;
			}
		}
	}
	leave(slot);
	return false;
}

/* ---- copying since a mark ------------------------------------------------ */

struct block_ref {
	uint64_t seq;
	uint32_t index;
};

static int by_seq(const void *a, const void *b)
{
	const struct block_ref *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int out_reserve(struct tl_thread_copy *out, size_t words, size_t *cap)
{
	if (out->nwords + words <= *cap)
		return 0;
	size_t want = *cap ? *cap : 1024;
	while (want < out->nwords + words)
		want *= 2;
	uint64_t *p = realloc(out->words, want * sizeof *p);
	if (!p)
		return -ENOMEM;
	out->words = p;
	*cap = want;
	return 0;
}

/* Appends block b's records from word `from` on; false when the block
 * changed hands while it was read (its copy is dropped). */
static bool copy_block(const struct tl_block *b, uint32_t gen, size_t from,
                       struct tl_thread_copy *out, size_t *cap, int *err)
{
	_Atomic uint64_t *cur;
	uint64_t records;
	tl_block_extent(b, &cur, &records);
	size_t end = (size_t)(cur - b->data);
	if (end <= from)
		return true;
	if ((*err = out_reserve(out, end - from, cap)) != 0)
		return false;
	for (size_t i = from; i < end; i++)
		out->words[out->nwords + i - from] =
		    atomic_load_explicit(&b->data[i], memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&b->gen, memory_order_relaxed) != gen)
		return false;
	out->nwords += end - from;
	return true;
}

int tl_thread_copy_since(const struct tl_thread_mark *mark, struct tl_thread_copy *out)
{
	memset(out, 0, sizeof *out);
	if (!mark->block)
		return -ENODATA;
	uint32_t state;
	struct tl_slot *slot = enter(&state);
	if (!slot)
		return -ENODATA;
	if (state != mark->session) {
		leave(slot);
		return -ENODATA;
	}
	uint32_t tid = atomic_load_explicit(&slot->tid, memory_order_relaxed);
	const struct tl_pool *pool = tl_recorder_blocks();
	if (!pool) {
		leave(slot);
		return -ENODATA;
	}
	uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_acquire);
	uint32_t visible = tl_pool_visible(pool, handed);
	struct block_ref *refs = malloc((size_t)(visible ? visible : 1) * sizeof *refs);
	if (!refs) {
		leave(slot);
		return -ENOMEM;
	}
	/* this thread's blocks handed out after the mark's, oldest first */
	size_t nrefs = 0;
	for (uint32_t i = 0; i < visible; i++) {
		const struct tl_block *b = tl_pool_visible_block(pool, handed, i);
		uint32_t gen = atomic_load_explicit(&b->gen, memory_order_acquire);
		if ((gen & 1) ||
		    atomic_load_explicit(&b->state, memory_order_relaxed) == TL_BLOCK_FREE ||
		    atomic_load_explicit(&b->tid, memory_order_relaxed) != tid ||
		    atomic_load_explicit(&b->level, memory_order_relaxed) != 0)
			continue; /* another thread's, or its signal handlers' */
		uint64_t seq = atomic_load_explicit(&b->seq, memory_order_relaxed);
		if (seq > mark->seq)
			refs[nrefs++] = (struct block_ref){seq, i};
	}
	qsort(refs, nrefs, sizeof *refs, by_seq);

	size_t cap = 0;
	int err = 0;
	out->intact = atomic_load_explicit(&mark->block->gen, memory_order_acquire) == mark->gen &&
	              copy_block(mark->block, mark->gen, mark->offset, out, &cap, &err);
	for (size_t i = 0; i < nrefs && !err; i++) {
		const struct tl_block *b = tl_pool_visible_block(pool, handed, refs[i].index);
		uint32_t gen = atomic_load_explicit(&b->gen, memory_order_acquire);
		if ((gen & 1) ||
		    atomic_load_explicit(&b->seq, memory_order_relaxed) != refs[i].seq ||
		    !copy_block(b, gen, 0, out, &cap, &err))
			out->intact = false; /* recycled since: a hole in the copy */
	}
	free(refs);
	leave(slot);
	if (err) {
		free(out->words);
		memset(out, 0, sizeof *out);
	}
	return err;
}
