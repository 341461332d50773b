/*
 * The block pool shared by the buffering recorders: one mapping cut into
 * equal blocks, handed to threads in order; what happens when none is left
 * is the recorder's policy (reuse the oldest retired block, or give up).
 *
 * The mapping is reserved once at init (MAP_NORESERVE, so an endless
 * recorder's cap costs address space, not memory, until it is used), and
 * never moves: a signal-safe snapshot can walk it without a lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "recorder/internal.h"
#include "recorder/record.h"

size_t tl_pool_block_size(size_t budget, size_t block_bytes)
{
	size_t size = block_bytes ? block_bytes : budget / 64;
	if (size < TL_BLOCK_MIN_BYTES)
		size = TL_BLOCK_MIN_BYTES;
	if (size > TL_BLOCK_MAX_BYTES)
		size = TL_BLOCK_MAX_BYTES;
	return size & ~(size_t)(TL_CACHELINE - 1);
}

int tl_pool_init(struct tl_pool *pool, size_t bytes, size_t block_bytes, unsigned flags)
{
	memset(pool, 0, sizeof *pool);
	pool->block_bytes = tl_pool_block_size(bytes, block_bytes);
	pool->nblocks = (uint32_t)(bytes / pool->block_bytes);
	if (pool->nblocks < 2)
		return -EINVAL;
	pool->region_bytes = (size_t)pool->nblocks * pool->block_bytes;
	int mflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	if (flags & TL_POOL_PREFAULT)
		mflags = (mflags & ~MAP_NORESERVE) | MAP_POPULATE;
	void *region = mmap(NULL, pool->region_bytes, PROT_READ | PROT_WRITE, mflags, -1, 0);
	if (region == MAP_FAILED)
		return -ENOMEM;
	pool->region = region;
	pool->flags = flags;
	pthread_mutex_init(&pool->lock, NULL);
	return 0;
}

void tl_pool_destroy(struct tl_pool *pool)
{
	if (pool->region)
		munmap(pool->region, pool->region_bytes);
	pthread_mutex_destroy(&pool->lock);
	memset(pool, 0, sizeof *pool);
}

void tl_pool_reset(struct tl_pool *pool)
{
	pthread_mutex_init(&pool->lock, NULL);
	atomic_store(&pool->handed, 0);
	pool->next_seq = 0;
	atomic_store(&pool->overwritten, 0);
	atomic_store(&pool->dropped, 0);
}

/* Gives block b to thread tid. gen is odd while the header changes, so a
 * snapshot reading the block's old contents notices the hand-over. */
static void block_assign(struct tl_pool *pool, struct tl_block *b, uint32_t tid)
{
	uint32_t gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
	atomic_store_explicit(&b->gen, gen | 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	b->limit = (_Atomic uint64_t *)(void *)((unsigned char *)b + pool->block_bytes);
	b->direct = 0;
	atomic_store_explicit(&b->cur, b->data, memory_order_relaxed);
	atomic_store_explicit(&b->records, 0, memory_order_relaxed);
	atomic_store_explicit(&b->tid, tid, memory_order_relaxed);
	atomic_store_explicit(&b->seq, pool->next_seq++, memory_order_relaxed);
	atomic_store_explicit(&b->state, TL_BLOCK_OWNED, memory_order_relaxed);
	atomic_store_explicit(&b->gen, (gen | 1) + 1, memory_order_release);
}

void tl_pool_retire(struct tl_block *block)
{
	atomic_store_explicit(&block->state, TL_BLOCK_RETIRED, memory_order_release);
}

struct tl_block *tl_pool_next_block(struct tl_pool *pool, struct tl_block *old, uint32_t tid)
{
	struct tl_block *b = NULL;
	pthread_mutex_lock(&pool->lock);
	if (old)
		tl_pool_retire(old);
	uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_relaxed);
	if (handed < pool->nblocks) {
		b = tl_pool_block(pool, handed);
		b->index = handed;
		block_assign(pool, b, tid);
		atomic_store_explicit(&pool->handed, handed + 1, memory_order_release);
	} else if (pool->flags & TL_POOL_REUSE_OLDEST) {
		uint64_t oldest = UINT64_MAX;
		for (uint32_t i = 0; i < pool->nblocks; i++) {
			struct tl_block *c = tl_pool_block(pool, i);
			uint64_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
			if (atomic_load_explicit(&c->state, memory_order_acquire) ==
				    TL_BLOCK_RETIRED &&
			    seq < oldest) {
				oldest = seq;
				b = c;
			}
		}
		if (b) {
			uint64_t lost = tl_block_records(b);
			atomic_fetch_add_explicit(&pool->overwritten, lost, memory_order_relaxed);
			block_assign(pool, b, tid);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return b;
}

struct tl_block *tl_pool_recorder_next_block(struct tl_recorder *rec, struct tl_slot *slot)
{
	struct tl_block *old = slot->block != &tl_block_none ? slot->block : NULL;
	return tl_pool_next_block(&rec->pool, old, atomic_load(&slot->tid));
}

void tl_pool_recorder_stop(struct tl_recorder *rec)
{
	tl_pool_destroy(&rec->pool);
}
