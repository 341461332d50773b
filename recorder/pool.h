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
enum {
	TL_POOL_PREFAULT = 1u << 0,    /* touch the whole budget at init */
	TL_POOL_REUSE_OLDEST = 1u << 1, /* ring: recycle the oldest retired block */
};

struct tl_pool {
	unsigned char *region;
	size_t region_bytes;
	size_t block_bytes;
	uint32_t nblocks;
	unsigned flags;
	_Atomic uint32_t handed; /* blocks [0, handed) have been used */
	uint64_t next_seq;       /* under lock */
	_Atomic uint64_t overwritten;
	_Atomic uint64_t dropped; /* events lost with no slot to count them */
	uint32_t *retired;        /* ring: min-heap of retired block indexes by seq */
	uint32_t nretired;        /* under lock */
	pthread_mutex_t lock;
};

int tl_pool_init(struct tl_pool *pool, size_t bytes, size_t block_bytes, unsigned flags);
void tl_pool_destroy(struct tl_pool *pool);
/* Retires `old` (may be NULL; published by its owner first) and hands a
 * block to the thread of slot; NULL when the pool has none to give. Takes
 * the pool lock. */
struct tl_block *tl_pool_next_block(struct tl_pool *pool, struct tl_block *old,
				    const struct tl_slot *slot);
/* Marks a block retired (thread exit): readable, and reusable by a ring.
 * Takes the pool lock. */
void tl_pool_retire(struct tl_pool *pool, struct tl_block *block);
/* Block i; i < handed. */
static inline struct tl_block *tl_pool_block(const struct tl_pool *pool, uint32_t i)
{
	return (struct tl_block *)(void *)(pool->region + (size_t)i * pool->block_bytes);
}
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
