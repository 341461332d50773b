/*
 * Blocks and thread slots: where a thread's records go, and the position
 * word through which an emit enters, reserves and commits. The hot path's
 * data; every function here is inline and async-signal-safe. Internal.
 */
#ifndef TIMELINE_SLOT_H
#define TIMELINE_SLOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline_export.h>

#include "recorder/compiler.h"

#pragma GCC visibility push(hidden)

#define TL_MAX_THREADS 1024
/* Levels of emits one thread can have in progress at once: its own, and
 * up to three signal handlers that interrupt an emit (each level one slot,
 * with blocks of its own: tl_slot_nested). An emit from a handler that
 * finds every level busy is dropped and counted. */
#define TL_NEST_LEVELS 4
#define TL_NAME_MAX 256 /* thread and process names, terminator included */

#define TL_BLOCK_MIN_BYTES (4 * 1024)
#define TL_BLOCK_MAX_BYTES (64 * 1024)
#define TL_BUFFER_MIN_BYTES (16 * 1024)

/* ---- blocks ---------------------------------------------------------------
 * A block belongs to one thread at a time. The owner appends records and
 * publishes the end of the last whole record in `cur` (release). A snapshot
 * copies [data, cur) and checks `gen` before and after: gen is odd while the
 * block is being handed to a new owner, and changes on every hand-out.
 */
enum tl_block_state {
	TL_BLOCK_FREE = 0,
	TL_BLOCK_OWNED,   /* a thread is writing into it */
	TL_BLOCK_RETIRED, /* full or its thread exited: readable, reusable */
};

struct tl_block {
	/* End of committed records and their count. While a thread owns the
	 * block they live in its slot (tl_block_extent reads them there); the
	 * owner publishes them here when it lets go of the block. */
	_Atomic(_Atomic uint64_t *) cur;
	_Atomic uint64_t *limit; /* end of data */
	_Atomic uint32_t level;  /* the owner slot's nesting level (0: the thread's own) */
	_Atomic uint32_t gen;
	_Atomic uint32_t state;
	_Atomic uint32_t tid;
	_Atomic uint64_t seq; /* hand-out order */
	_Atomic uint32_t records;
	uint32_t index;
	_Atomic uint32_t owner; /* index of the owning slot in tl_slots (any level) */
	uint32_t pad2_[3];
	_Atomic uint64_t data[];
};
_Static_assert(sizeof(struct tl_block) == TL_CACHELINE, "block header is one cache line");

/* ---- thread slots ----------------------------------------------------------
 * One per thread that recorded or was named, in a static table so that it
 * outlives the thread (its name stays in every snapshot) and a signal
 * handler can read it. The first cache line is written by its thread only.
 *
 * The table holds TL_NEST_LEVELS rows of TL_MAX_THREADS slots: row 0 holds
 * the threads' own slots (tl_self), row k the slots their signal handlers
 * write through at nesting level k. A nested slot has the tid of its
 * thread, and its name and flags are unused.
 */
struct tl_slot {
	/* hot, owner-written */
	struct tl_block *block; /* current block, never NULL (tl_block_none) */
	uint32_t pad0_;
	uint32_t epoch;         /* tl_state value this slot is valid for */
	_Atomic uint64_t dropped;
	_Atomic uint64_t truncated;
	_Atomic uint64_t args_dropped;
	/* The position word (tl_slot_enter): the current block's write
	 * position, the records committed to the block and the busy flag.
	 * Release-stored at every commit, it is what snapshots read while the
	 * block is owned. Then the block's limit, also as a position word
	 * (tl_pos_limit), so that the room check compares the new position
	 * word itself. */
	_Atomic uint64_t pos;
	_Atomic uint64_t *limit;
	uint64_t limit_pos;
	/* cold: metadata */
	_Atomic uint32_t tid;   /* 0: never used */
	_Atomic uint32_t alive; /* 0 once the thread exited */
	_Atomic uint64_t exit_order;
	_Atomic uint32_t name_seq; /* odd while the name is written */
	_Atomic uint32_t named;    /* set by tl_thread_set_name (not comm) */
	char name[TL_NAME_MAX];
} __attribute__((aligned(TL_CACHELINE)));
_Static_assert(offsetof(struct tl_slot, tid) == TL_CACHELINE,
	       "the hot part of a slot is its first cache line");

/*
 * The position word of a slot packs three things, so that one load tells
 * them all and one add and one store commit a record:
 *
 *   bits 16-63  the write position (a user-space address: below 2^48)
 *   bits  1-15  the records committed to the current block (at most
 *               TL_BLOCK_MAX_BYTES / 16 = 4096)
 *   bit   0     the busy flag, set while the thread is inside an emit (or
 *               anything else that reads or moves its position). A signal
 *               handler that interrupts an emit sees it and writes through
 *               the next nesting level's slot instead of over the
 *               interrupted record; shutdown waits for it to clear.
 *
 * Committing `words` more words and one record adds the constant
 * tl_pos_step(words), which also clears the busy flag set by the entry.
 */
#define TL_SLOT_BUSY ((uint64_t)1)
#define TL_POS_SHIFT 16
#define TL_POS_RECORD ((uint64_t)2)
#define TL_POS_ADDRESS_LIMIT ((uint64_t)1 << (64 - TL_POS_SHIFT))
_Static_assert(TL_BLOCK_MAX_BYTES / 16 * TL_POS_RECORD < ((uint64_t)1 << TL_POS_SHIFT),
	       "a block's record count fits below the position");

static inline TL_NO_INSTRUMENT uint64_t tl_pos_make(const _Atomic uint64_t *p, uint64_t records)
{
	return ((uint64_t)(uintptr_t)p << TL_POS_SHIFT) | records * TL_POS_RECORD;
}

static inline TL_NO_INSTRUMENT _Atomic uint64_t *tl_pos_ptr(uint64_t pos)
{
	return (_Atomic uint64_t *)(uintptr_t)(pos >> TL_POS_SHIFT);
}

static inline TL_NO_INSTRUMENT uint64_t tl_pos_records(uint64_t pos)
{
	return (pos & (((uint64_t)1 << TL_POS_SHIFT) - 1)) / TL_POS_RECORD;
}

/* What a record of `words` words adds to a position word. */
static inline TL_NO_INSTRUMENT uint64_t tl_pos_step(size_t words)
{
	return ((uint64_t)words * sizeof(uint64_t) << TL_POS_SHIFT) + TL_POS_RECORD;
}

/* The position word of a limit: a position word p + tl_pos_step(words),
 * from a p at or before the limit, is at most tl_pos_limit(limit) exactly
 * when the record ends at or before the limit. */
static inline TL_NO_INSTRUMENT uint64_t tl_pos_limit(const _Atomic uint64_t *limit)
{
	return tl_pos_make(limit, 0) | (((uint64_t)1 << TL_POS_SHIFT) - 1);
}

/* Whether a block [data, end) can be addressed by position words. */
static inline TL_NO_INSTRUMENT int tl_pos_addressable(const void *end)
{
	return (uint64_t)(uintptr_t)end < TL_POS_ADDRESS_LIMIT;
}

/* The owner's current write position (busy flag and count masked off). */
static inline TL_NO_INSTRUMENT _Atomic uint64_t *tl_slot_cur(const struct tl_slot *slot)
{
	return tl_pos_ptr(atomic_load_explicit(&slot->pos, memory_order_relaxed));
}

static inline TL_NO_INSTRUMENT int tl_slot_busy(const struct tl_slot *slot)
{
	return (atomic_load_explicit(&slot->pos, memory_order_acquire) & TL_SLOT_BUSY) != 0;
}

/*
 * Marks the slot busy and returns its position word (busy flag clear) in
 * *pos, or returns 0 when it already is (a signal handler that interrupted
 * an emit: it tries the next nesting level).
 * The signal fence orders the busy store before the caller's load of
 * tl_state against tl_shutdown, whose membarrier() supplies the other
 * half. Owner only.
 */
static inline TL_NO_INSTRUMENT int tl_slot_enter_pos(struct tl_slot *slot, uint64_t *pos)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	/* One instruction sets the flag and says whether it was set: a signal
	 * handler runs before it or after it, never between a test and a set
	 * (no lock prefix: only this thread and its handlers write the word
	 * while it is set). */
	unsigned char was_busy;
	__asm__ volatile("btsq $0, %0"
	                 : "+m"(*(uint64_t *)(void *)&slot->pos), "=@ccc"(was_busy)
	                 :
	                 : "memory");
	if (__builtin_expect(was_busy, 0))
		return 0;
	uint64_t word = atomic_load_explicit(&slot->pos, memory_order_relaxed) & ~TL_SLOT_BUSY;
#else
	/* An atomic or: a handler cannot split it either (on aarch64 an
	 * exclusive pair or LDSET; a handler in between makes the pair retry). */
	uint64_t word = atomic_fetch_or_explicit(&slot->pos, TL_SLOT_BUSY, memory_order_relaxed);
	if (__builtin_expect(word & TL_SLOT_BUSY, 0))
		return 0;
#endif
	atomic_signal_fence(memory_order_seq_cst);
	*pos = word;
	return 1;
}

/* tl_slot_enter_pos, returning the write position. */
static inline TL_NO_INSTRUMENT int tl_slot_enter(struct tl_slot *slot, _Atomic uint64_t **cur)
{
	uint64_t pos;
	if (!tl_slot_enter_pos(slot, &pos))
		return 0;
	*cur = tl_pos_ptr(pos);
	return 1;
}

/* Commits a position word computed from the one tl_slot_enter_pos gave
 * (busy flag clear), which also leaves the emit. */
static inline TL_NO_INSTRUMENT void tl_slot_commit_pos(struct tl_slot *slot, uint64_t pos)
{
	atomic_store_explicit(&slot->pos, pos, memory_order_release);
}

/* Leaves at write position `end`, with `records` more records committed. */
static inline TL_NO_INSTRUMENT void tl_slot_commit_records(struct tl_slot *slot,
                                                           _Atomic uint64_t *end, uint64_t records)
{
	uint64_t pos = atomic_load_explicit(&slot->pos, memory_order_relaxed);
	tl_slot_commit_pos(slot, tl_pos_make(end, tl_pos_records(pos) + records));
}

/* Leaves at write position `end`, no record added. */
static inline TL_NO_INSTRUMENT void tl_slot_commit(struct tl_slot *slot, _Atomic uint64_t *end)
{
	tl_slot_commit_records(slot, end, 0);
}

/* Leaves without moving the position. */
static inline TL_NO_INSTRUMENT void tl_slot_leave(struct tl_slot *slot)
{
	tl_slot_commit_pos(slot, atomic_load_explicit(&slot->pos, memory_order_relaxed) &
	                             ~TL_SLOT_BUSY);
}

/* Makes block b the slot's current block, keeping the busy flag as it is.
 * Owner thread only. */
static inline TL_NO_INSTRUMENT void tl_slot_use_block(struct tl_slot *slot, struct tl_block *b)
{
	uint64_t busy = atomic_load_explicit(&slot->pos, memory_order_relaxed) & TL_SLOT_BUSY;
	slot->block = b;
	slot->limit = b->limit;
	slot->limit_pos = tl_pos_limit(b->limit);
	uint64_t pos = tl_pos_make(atomic_load_explicit(&b->cur, memory_order_relaxed),
				   atomic_load_explicit(&b->records, memory_order_relaxed));
	atomic_store_explicit(&slot->pos, pos | busy, memory_order_release);
}

/* Publishes the slot's position and count into its current block, before
 * the block is retired. Owner thread only. */
static inline TL_NO_INSTRUMENT void tl_slot_publish(struct tl_slot *slot)
{
	struct tl_block *b = slot->block;
	uint64_t pos = atomic_load_explicit(&slot->pos, memory_order_relaxed);
	atomic_store_explicit(&b->records, (uint32_t)tl_pos_records(pos), memory_order_relaxed);
	atomic_store_explicit(&b->cur, tl_pos_ptr(pos), memory_order_release);
}


extern struct tl_block tl_block_none; /* cur == limit: always "full" */
extern struct tl_slot tl_slots[TL_NEST_LEVELS * TL_MAX_THREADS];
extern struct tl_slot tl_slot_none; /* the slot of threads not registered yet */
extern __thread struct tl_slot *tl_self __attribute__((tls_model("initial-exec")));

/*
 * Where the published records of pool block b end (*end) and how many
 * there are: its owner's slot while the block is owned, the block itself
 * once retired. Async-signal-safe; callers detect a ring reusing the block
 * meanwhile with its generation.
 */
static inline TL_NO_INSTRUMENT void tl_block_extent(const struct tl_block *b,
                                                    _Atomic uint64_t **end, uint64_t *records)
{
	if (atomic_load_explicit(&b->state, memory_order_acquire) == TL_BLOCK_OWNED) {
		const struct tl_slot *owner =
		    &tl_slots[atomic_load_explicit(&b->owner, memory_order_relaxed)];
		uint64_t pos = atomic_load_explicit(&owner->pos, memory_order_acquire);
		_Atomic uint64_t *cur = tl_pos_ptr(pos);
		uint64_t n = tl_pos_records(pos);
		if (cur >= b->data && cur <= b->limit) {
			*end = cur;
			*records = n;
			return;
		}
		/* Not the owner's block (yet, or any more): either just handed
		 * out and still empty, or retired meanwhile; both are published
		 * in the block. A reuse is caught by the caller's generation
		 * check. */
		atomic_thread_fence(memory_order_acquire);
	}
	*end = atomic_load_explicit(&b->cur, memory_order_acquire);
	*records = atomic_load_explicit(&b->records, memory_order_relaxed);
}

/* The slot of the thread of `slot` (a row-0 slot) at nesting level k. */
static inline TL_NO_INSTRUMENT struct tl_slot *tl_slot_nested(struct tl_slot *slot, unsigned level)
{
	return slot + (size_t)level * TL_MAX_THREADS;
}

/* The nesting level of a slot of the table. */
static inline TL_NO_INSTRUMENT unsigned tl_slot_level(const struct tl_slot *slot)
{
	return (unsigned)((size_t)(slot - tl_slots) / TL_MAX_THREADS);
}

#pragma GCC visibility pop

#endif /* TIMELINE_SLOT_H */
