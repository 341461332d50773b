/*
 * The block pool: one mapping cut into blocks, handed to threads, retired
 * and (ring) reused oldest first. The engine of the recorders that keep
 * blocks. Internal.
 */
#ifndef TIMELINE_POOL_H
#define TIMELINE_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder/slot.h"

#pragma GCC visibility push(hidden)

/* ---- block pool --------------------------------------------------------- */
#define TL_POOL_DEFERRED 64
/* A reserve block: room for the latest 24 begin/end pairs of a thread. */
#define TL_POOL_RESERVE_BYTES 1024
enum {
	TL_POOL_PREFAULT = 1u << 0,    /* touch the whole budget at init */
	TL_POOL_REUSE_OLDEST = 1u << 1, /* ring: recycle the oldest retired block */
	/* file: retired blocks wait for a drain (tl_pool_drain_next), which
	 * gives them back once written (tl_pool_drain_done); the block given
	 * back last is handed out first, a never-used one (backed then) only
	 * when none waits: the memory is the drain's largest backlog */
	TL_POOL_DRAINED = 1u << 2,
	/* backed lazily, but up to its whole budget whenever its recorder
	 * falls behind (file): refused at init, as a prefaulted pool is, when
	 * the process cannot have that memory */
	TL_POOL_CHECK_ROOM = 1u << 3,
};

struct tl_pool {
	unsigned char *region;
	size_t region_bytes;
	size_t block_bytes;
	uint32_t nblocks;
	unsigned flags;
	/* Blocks [0, handed) have been handed out at least once: claimed with
	 * one compare-and-swap each, without the lock (a header still being
	 * written reads as free or changing; tl_block_extent). */
	_Atomic uint32_t handed;
	_Atomic uint64_t next_seq;
	_Atomic uint64_t overwritten;
	_Atomic uint64_t dropped; /* events lost with no slot to count them */
	/* Under lock. Ring: a min-heap of retired block indexes by seq.
	 * Drained: the retired blocks in retirement order (a circular queue
	 * from retired_head), then `freed`, the drained ones. */
	uint32_t *retired;
	uint32_t nretired;
	uint32_t retired_head;
	uint32_t *freed;
	uint32_t nfreed;
	/* Not prefaulted: blocks [0, backed) were backed by tl_pool_back, and
	 * are not backed again when first handed out. */
	uint32_t backed;
	/* Drained: the blocks waiting for the drain (nretired), readable
	 * without the lock so that the drain can look before it sleeps. */
	_Atomic uint32_t waiting;
	/* Drained: the drained blocks not handed out again (nfreed), readable
	 * without the lock so that a thread refused a block does not take the
	 * lock again for every event while none is free. */
	_Atomic uint32_t free;
	/* Blocks a signal handler retired while its own thread held the lock
	 * (index + 1; 0: empty entry), put in the heap by the next holder. */
	_Atomic uint32_t deferred[TL_POOL_DEFERRED];
	/* A ring's reserve: one small block per thread slot (TL_MAX_THREADS),
	 * mapped lazily, for a thread that finds every block of the pool owned
	 * by other live threads; index nblocks + slot. NULL for the others. */
	unsigned char *reserve;
	pthread_mutex_t lock;
};

int tl_pool_init(struct tl_pool *pool, size_t bytes, size_t block_bytes, unsigned flags);
void tl_pool_destroy(struct tl_pool *pool);
/* Backs the pool's first `bytes` (rounded up to whole blocks) with memory
 * now, as a prefaulted pool is backed whole, so that the threads handed
 * those blocks do not back them on their hot path. Before any block is
 * handed out. 0, or -ENOMEM when the kernel cannot back them. */
int tl_pool_back(struct tl_pool *pool, size_t bytes);
/* Retires `old` (may be NULL; published by its owner first) and hands a
 * block to the thread of slot; NULL when the pool has none to give. A block
 * never handed out is claimed without the lock; a ring's retired blocks are
 * kept under it. Async-signal-safe: a signal handler that interrupted its
 * own thread inside the lock gets only a never-used block. */
struct tl_block *tl_pool_next_block(struct tl_pool *pool, struct tl_block *old,
				    const struct tl_slot *slot);
/* Marks a block retired (thread exit): readable, and reusable by a ring.
 * Takes the pool lock. */
void tl_pool_retire(struct tl_pool *pool, struct tl_block *block);
/* Block i: i < handed, or a reserve block (nblocks + slot index). */
static inline struct tl_block *tl_pool_block(const struct tl_pool *pool, uint32_t i)
{
	if (i >= pool->nblocks)
		return (struct tl_block *)(void *)(pool->reserve +
		                                   (size_t)(i - pool->nblocks) * TL_POOL_RESERVE_BYTES);
	return (struct tl_block *)(void *)(pool->region + (size_t)i * pool->block_bytes);
}

/* What a reader walks: the `handed` blocks handed out (loaded once by the
 * reader), then the reserve blocks. tl_pool_visible gives the count and
 * tl_pool_visible_block the k-th; an unused one reads as TL_BLOCK_FREE. */
static inline uint32_t tl_pool_visible(const struct tl_pool *pool, uint32_t handed)
{
	return handed + (pool->reserve ? TL_MAX_THREADS : 0);
}

static inline struct tl_block *tl_pool_visible_block(const struct tl_pool *pool, uint32_t handed,
                                                     uint32_t k)
{
	return tl_pool_block(pool, k < handed ? k : pool->nblocks + (k - handed));
}

/* The bytes of block b. */
static inline size_t tl_pool_block_bytes(const struct tl_pool *pool, const struct tl_block *b)
{
	return b->index >= pool->nblocks ? TL_POOL_RESERVE_BYTES : pool->block_bytes;
}
/* Drained pool: the oldest retired block not yet drained, its state still
 * TL_BLOCK_RETIRED (readable by snapshots); NULL when none waits. */
struct tl_block *tl_pool_drain_next(struct tl_pool *pool);
/* Drained pool: block b (from tl_pool_drain_next) is written; it becomes
 * free for the next thread that needs one. */
void tl_pool_drain_done(struct tl_pool *pool, struct tl_block *b);
/* Forgets every block (fork child). */
void tl_pool_reset(struct tl_pool *pool);
/* Records committed to a block. */
static inline uint64_t tl_block_records(const struct tl_block *block)
{
	return atomic_load_explicit(&block->records, memory_order_relaxed);
}

/* Chooses a block size for a budget (block_bytes 0 = automatic). */
size_t tl_pool_block_size(size_t budget, size_t block_bytes);

#pragma GCC visibility pop

#endif /* TIMELINE_POOL_H */
