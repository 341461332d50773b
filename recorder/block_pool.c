/*
 * The block pool shared by the buffering recorders: one mapping cut into
 * equal blocks, handed to threads in order; what happens when none is left
 * is the recorder's policy (reuse the oldest retired block, or give up).
 *
 * The mapping is reserved once at init (MAP_NORESERVE, so an endless
 * recorder's cap costs address space, not memory, until it is used), asks
 * for transparent huge pages, and never moves: a signal-safe snapshot can
 * walk it without a lock. A pool touched at init (ring, startup), or one
 * backed as a drain falls behind (file), is first checked against the
 * memory the process can still take, so that a budget it cannot have is
 * -ENOMEM, not an OOM kill.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "recorder/compiler.h"
#include "recorder/log.h"
#include "recorder/memory_room.h"
#include "recorder/pool.h"
#include "recorder/record.h"
#include "recorder/recorder.h"
#include "recorder/slot.h"

size_t tl_pool_block_size(size_t budget, size_t block_bytes)
{
	size_t size = block_bytes ? block_bytes : budget / 64;
	if (size < TL_BLOCK_MIN_BYTES)
		size = TL_BLOCK_MIN_BYTES;
	if (size > TL_BLOCK_MAX_BYTES)
		size = TL_BLOCK_MAX_BYTES;
	return size & ~(size_t)(TL_CACHELINE - 1);
}

/*
 * Asks for transparent huge pages where the kernel gives them on request:
 * recording into a fresh buffer then costs one fault and one 2 MiB
 * zeroing every 2 MiB instead of a fault per 4 KiB page (and fewer TLB
 * misses), which is most of what an endless recorder pays per event above
 * a ring's cost. A prefaulted pool is then backed in one call; where
 * MADV_POPULATE_WRITE is refused as unknown (kernels before 5.14), by a
 * write to every page. Best effort: without THP the pool has 4 KiB pages.
 * Returns 0, or -errno when the kernel could not back the pool (-ENOMEM).
 */
static int back(void *region, size_t bytes, unsigned flags)
{
#ifdef MADV_HUGEPAGE
	madvise(region, bytes, MADV_HUGEPAGE);
#endif
	if (!(flags & TL_POOL_PREFAULT))
		return 0;
#ifdef MADV_POPULATE_WRITE
	if (madvise(region, bytes, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
#endif
	long page = sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < bytes; off += page > 0 ? (size_t)page : 4096)
		((volatile unsigned char *)region)[off] = 0;
	return 0;
}

/*
 * A prefaulted pool is refused when it cannot fit in the memory the process
 * may still take (memory_room.h): touching it all would have the kernel's
 * OOM killer end the process inside tl_init, where -ENOMEM is the answer.
 * So is one its recorder may back whole as it falls behind
 * (TL_POOL_CHECK_ROOM, the file recorder's): a pool it could not have would
 * end the process at the disk's first long stall.
 */
static int check_room(size_t bytes)
{
	struct tl_memory_room room;
	tl_memory_room_get(&tl_memory_sources_system, &room);
	if (bytes <= room.bytes)
		return 0;
	tl_log(TL_LOG_ERROR,
	       "buffer of %zu bytes: more than the %llu bytes of memory the process can still "
	       "take, as set by %s",
	       bytes, (unsigned long long)room.bytes, room.limit);
	return -ENOMEM;
}

/* back(), logged on failure for a pool of `budget` bytes. 0 or -ENOMEM. */
static int back_or_log(void *region, size_t bytes, size_t budget, unsigned flags)
{
	int rc = back(region, bytes, flags);
	if (rc == 0)
		return 0;
	tl_log(TL_LOG_ERROR, "buffer of %zu bytes: the kernel cannot back it with memory: %s",
	       budget, strerror(-rc));
	return -ENOMEM;
}

int tl_pool_init(struct tl_pool *pool, size_t bytes, size_t block_bytes, unsigned flags)
{
	memset(pool, 0, sizeof *pool);
	pool->block_bytes = tl_pool_block_size(bytes, block_bytes);
	pool->nblocks = (uint32_t)(bytes / pool->block_bytes);
	if (pool->nblocks < 2)
		return -EINVAL;
	pool->region_bytes = (size_t)pool->nblocks * pool->block_bytes;
	int rc;
	if ((flags & (TL_POOL_PREFAULT | TL_POOL_CHECK_ROOM)) &&
	    (rc = check_room(pool->region_bytes)) != 0)
		return rc;
	int mflags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (!(flags & TL_POOL_PREFAULT))
		mflags |= MAP_NORESERVE;
	void *region = mmap(NULL, pool->region_bytes, PROT_READ | PROT_WRITE, mflags, -1, 0);
	if (region == MAP_FAILED) {
		rc = -errno;
		struct rlimit as;
		if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
			tl_log(TL_LOG_ERROR,
			       "buffer of %zu bytes: cannot be mapped: %s (the address-space "
			       "limit, RLIMIT_AS, is %llu bytes)",
			       pool->region_bytes, strerror(-rc), (unsigned long long)as.rlim_cur);
		else
			tl_log(TL_LOG_ERROR, "buffer of %zu bytes: cannot be mapped: %s",
			       pool->region_bytes, strerror(-rc));
		return -ENOMEM;
	}
	if (!tl_pos_addressable((unsigned char *)region + pool->region_bytes)) {
		/* beyond what a slot's position word holds (slot.h) */
		munmap(region, pool->region_bytes);
		return -ENOMEM;
	}
	if ((rc = back_or_log(region, pool->region_bytes, pool->region_bytes, flags)) != 0) {
		munmap(region, pool->region_bytes);
		return rc;
	}
	if (flags & TL_POOL_DRAINED) {
		pool->retired = calloc(pool->nblocks, sizeof pool->retired[0]);
		pool->freed = calloc(pool->nblocks, sizeof pool->freed[0]);
		if (!pool->retired || !pool->freed) {
			free(pool->retired);
			free(pool->freed);
			pool->retired = pool->freed = NULL;
			munmap(region, pool->region_bytes);
			return -ENOMEM;
		}
	}
	if (flags & TL_POOL_REUSE_OLDEST) {
		/* a ring keeps every live thread: a reserve block per thread slot,
		 * backed only when a thread takes it */
		void *reserve = mmap(NULL, (size_t)TL_MAX_THREADS * TL_POOL_RESERVE_BYTES,
		                     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		                     -1, 0);
		pool->retired = calloc(pool->nblocks, sizeof pool->retired[0]);
		if (!pool->retired || reserve == MAP_FAILED ||
		    !tl_pos_addressable((unsigned char *)reserve +
		                        (size_t)TL_MAX_THREADS * TL_POOL_RESERVE_BYTES)) {
			if (reserve != MAP_FAILED)
				munmap(reserve, (size_t)TL_MAX_THREADS * TL_POOL_RESERVE_BYTES);
			free(pool->retired);
			pool->retired = NULL;
			munmap(region, pool->region_bytes);
			return -ENOMEM;
		}
		pool->reserve = reserve;
	}
	pool->region = region;
	pool->flags = flags;
	pthread_mutex_init(&pool->lock, NULL);
	return 0;
}

int tl_pool_back(struct tl_pool *pool, size_t bytes)
{
	uint64_t blocks = (bytes + pool->block_bytes - 1) / pool->block_bytes;
	if (blocks > pool->nblocks)
		blocks = pool->nblocks;
	int rc = back_or_log(pool->region, (size_t)blocks * pool->block_bytes, pool->region_bytes,
	                     TL_POOL_PREFAULT);
	if (rc == 0)
		pool->backed = (uint32_t)blocks;
	return rc;
}

void tl_pool_destroy(struct tl_pool *pool)
{
	if (pool->region)
		munmap(pool->region, pool->region_bytes);
	if (pool->reserve)
		munmap(pool->reserve, (size_t)TL_MAX_THREADS * TL_POOL_RESERVE_BYTES);
	free(pool->retired);
	free(pool->freed);
	pthread_mutex_destroy(&pool->lock);
	memset(pool, 0, sizeof *pool);
}

void tl_pool_reset(struct tl_pool *pool)
{
	pthread_mutex_init(&pool->lock, NULL);
	/* claimed blocks are written before their header: free until then */
	uint32_t handed = atomic_load(&pool->handed);
	for (uint32_t i = 0; i < tl_pool_visible(pool, handed); i++) {
		struct tl_block *b = tl_pool_visible_block(pool, handed, i);
		if (atomic_load(&b->state) != TL_BLOCK_FREE)
			atomic_store(&b->state, TL_BLOCK_FREE);
	}
	atomic_store(&pool->handed, 0);
	atomic_store(&pool->next_seq, 0);
	for (uint32_t i = 0; i < TL_POOL_DEFERRED; i++)
		atomic_store(&pool->deferred[i], 0);
	pool->nretired = 0;
	pool->retired_head = 0;
	pool->nfreed = 0;
	atomic_store(&pool->waiting, 0);
	atomic_store(&pool->free, 0);
	atomic_store(&pool->overwritten, 0);
	atomic_store(&pool->dropped, 0);
}

/*
 * Backs a block of a lazily mapped pool (endless) with memory in one call
 * rather than a page fault per page on the recording thread's hot path.
 * Best effort: older kernels refuse MADV_POPULATE_WRITE and the pages then
 * fault in as they are written.
 */
static void populate(struct tl_block *b, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	madvise(b, bytes, MADV_POPULATE_WRITE);
#else
	(void)b;
	(void)bytes;
#endif
}

/* Gives block b to thread tid. gen is odd while the header changes, so a
 * snapshot reading the block's old contents notices the hand-over. */
static void block_assign(struct tl_pool *pool, struct tl_block *b, const struct tl_slot *slot)
{
	uint32_t gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
	atomic_store_explicit(&b->gen, gen | 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	/* Set the first time the block is handed out, before its generation
	 * publishes it: snapshots read it without a lock. */
	_Atomic uint64_t *limit =
	    (_Atomic uint64_t *)(void *)((unsigned char *)b + tl_pool_block_bytes(pool, b));
	if (b->limit != limit)
		b->limit = limit;
	atomic_store_explicit(&b->cur, b->data, memory_order_relaxed);
	atomic_store_explicit(&b->records, 0, memory_order_relaxed);
	atomic_store_explicit(&b->tid, atomic_load_explicit(&slot->tid, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&b->owner, (uint32_t)(slot - tl_slots), memory_order_relaxed);
	atomic_store_explicit(&b->level, tl_slot_level(slot), memory_order_relaxed);
	atomic_store_explicit(&b->seq, atomic_fetch_add(&pool->next_seq, 1), memory_order_relaxed);
	atomic_store_explicit(&b->state, TL_BLOCK_OWNED, memory_order_relaxed);
	atomic_store_explicit(&b->gen, (gen | 1) + 1, memory_order_release);
}

/* ---- the lock ---------------------------------------------------------------
 * Taken by a thread to change block of a ring or a drained pool. A signal
 * handler whose emit needs a block (a nested level's, slot.h) may
 * interrupt its own thread while it holds the lock: rather than wait
 * forever, that handler takes a never-used block or starts its own block
 * over (a ring), and leaves what it retires on the deferred list, which
 * the holder lists when it lets go. Other threads' holds end by
 * themselves.
 */
static __thread volatile sig_atomic_t lock_held;

static void list_retired(struct tl_pool *pool, uint32_t index);

/* Lists the blocks retired by signal handlers. Under lock. */
static void take_deferred(struct tl_pool *pool)
{
	for (uint32_t i = 0; i < TL_POOL_DEFERRED; i++) {
		uint32_t entry = atomic_load_explicit(&pool->deferred[i], memory_order_relaxed);
		if (entry && atomic_compare_exchange_strong(&pool->deferred[i], &entry, 0))
			list_retired(pool, entry - 1);
	}
}

static bool pool_lock(struct tl_pool *pool)
{
	if (lock_held)
		return false;
	lock_held = 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(&pool->lock);
	return true;
}

static void pool_unlock(struct tl_pool *pool)
{
	if (pool->retired)
		take_deferred(pool);
	pthread_mutex_unlock(&pool->lock);
	atomic_signal_fence(memory_order_seq_cst);
	lock_held = 0;
}

/* ---- the retired blocks of a ring: a min-heap on hand-out order ---------- */

static uint64_t heap_key(const struct tl_pool *pool, uint32_t i)
{
	return atomic_load_explicit(&tl_pool_block(pool, pool->retired[i])->seq,
				    memory_order_relaxed);
}

static void heap_swap(struct tl_pool *pool, uint32_t i, uint32_t j)
{
	uint32_t t = pool->retired[i];
	pool->retired[i] = pool->retired[j];
	pool->retired[j] = t;
}

static void heap_push(struct tl_pool *pool, uint32_t index)
{
	uint32_t i = pool->nretired++;
	pool->retired[i] = index;
	while (i > 0 && heap_key(pool, (i - 1) / 2) > heap_key(pool, i)) {
		heap_swap(pool, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static uint32_t heap_pop(struct tl_pool *pool)
{
	uint32_t top = pool->retired[0];
	pool->retired[0] = pool->retired[--pool->nretired];
	for (uint32_t i = 0;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < pool->nretired && heap_key(pool, l) < heap_key(pool, m))
			m = l;
		if (r < pool->nretired && heap_key(pool, r) < heap_key(pool, m))
			m = r;
		if (m == i)
			break;
		heap_swap(pool, i, m);
		i = m;
	}
	return top;
}

/* Lists a retired block: in a ring's heap, or a drained pool's queue. Under lock. */
static void list_retired(struct tl_pool *pool, uint32_t index)
{
	if (pool->flags & TL_POOL_DRAINED) {
		pool->retired[(pool->retired_head + pool->nretired++) % pool->nblocks] = index;
		atomic_fetch_add(&pool->waiting, 1);
	} else
		heap_push(pool, index);
}

static void retire_locked(struct tl_pool *pool, struct tl_block *block)
{
	atomic_store_explicit(&block->state, TL_BLOCK_RETIRED, memory_order_release);
	if (pool->retired && block->index < pool->nblocks) /* a reserve block is its slot's */
		list_retired(pool, block->index);
}

/* Retires a block without the lock its thread holds (a signal handler's):
 * readable at once, in a ring's heap once the lock is released. */
static void retire_deferred(struct tl_pool *pool, struct tl_block *block)
{
	atomic_store_explicit(&block->state, TL_BLOCK_RETIRED, memory_order_release);
	for (uint32_t i = 0; i < TL_POOL_DEFERRED; i++) {
		uint32_t empty = 0;
		if (atomic_compare_exchange_strong(&pool->deferred[i], &empty, block->index + 1))
			return;
	}
	/* 64 handlers deep in one lock hold: the block stays readable, not reused */
}

/* Retires a block; a ring lists it for reuse under the lock. */
static void retire(struct tl_pool *pool, struct tl_block *block, bool locked)
{
	if (!pool->retired || block->index >= pool->nblocks)
		atomic_store_explicit(&block->state, TL_BLOCK_RETIRED, memory_order_release);
	else if (locked)
		retire_locked(pool, block);
	else
		retire_deferred(pool, block);
}

void tl_pool_retire(struct tl_pool *pool, struct tl_block *block)
{
	bool locked = pool->retired && pool_lock(pool);
	retire(pool, block, locked);
	if (locked)
		pool_unlock(pool);
}

/* A block never handed out, claimed without the lock; NULL when none is left. */
static struct tl_block *claim_fresh(struct tl_pool *pool, const struct tl_slot *slot)
{
	uint32_t i = atomic_load_explicit(&pool->handed, memory_order_relaxed);
	do {
		if (i >= pool->nblocks)
			return NULL;
	} while (!atomic_compare_exchange_weak(&pool->handed, &i, i + 1));
	struct tl_block *b = tl_pool_block(pool, i);
	b->index = i;
	block_assign(pool, b, slot);
	if (!(pool->flags & TL_POOL_PREFAULT) && i >= pool->backed)
		populate(b, pool->block_bytes);
	return b;
}

/* Hands block b to the slot again from its start (a ring overwriting the
 * slot's own block): its records are counted as overwritten. */
static struct tl_block *reuse(struct tl_pool *pool, struct tl_block *b, const struct tl_slot *slot)
{
	uint64_t lost = tl_block_records(b);
	atomic_fetch_add_explicit(&pool->overwritten, lost, memory_order_relaxed);
	block_assign(pool, b, slot);
	return b;
}

/* The reserve block of a thread's own slot (level 0). */
static struct tl_block *reserve_block(struct tl_pool *pool, const struct tl_slot *slot)
{
	uint32_t index = pool->nblocks + (uint32_t)(slot - tl_slots);
	struct tl_block *b = tl_pool_block(pool, index);
	if (b->index != index)
		b->index = index;
	return b;
}

/*
 * A ring hands out, in this order: a block never used; the oldest retired
 * block; when every block is owned by a live thread, the thread's own
 * reserve block (so that no live thread is left without one), which it
 * then overwrites from its start as it fills. A signal handler that
 * interrupted its own thread inside the lock cannot reach the retired
 * blocks: it overwrites its own block instead.
 */
struct tl_block *tl_pool_next_block(struct tl_pool *pool, struct tl_block *old,
				    const struct tl_slot *slot)
{
	/* a drained pool with none to give: refused without the lock */
	if (!old && (pool->flags & TL_POOL_DRAINED) &&
	    atomic_load_explicit(&pool->free, memory_order_relaxed) == 0 &&
	    atomic_load_explicit(&pool->handed, memory_order_relaxed) >= pool->nblocks)
		return NULL;
	/* Only a ring's retired blocks need the lock. */
	bool locked = pool->retired && pool_lock(pool);
	if (old && (locked || !pool->retired))
		retire(pool, old, locked);
	struct tl_block *b = NULL;
	if (locked && (pool->flags & TL_POOL_DRAINED) && pool->nfreed > 0) {
		/* the block drained last: backed, and likely still in cache */
		b = tl_pool_block(pool, pool->freed[--pool->nfreed]);
		atomic_fetch_sub_explicit(&pool->free, 1, memory_order_relaxed);
		block_assign(pool, b, slot);
	}
	if (!b)
		b = claim_fresh(pool, slot);
	if (!b && locked && (pool->flags & TL_POOL_REUSE_OLDEST) && pool->nretired > 0)
		b = reuse(pool, tl_pool_block(pool, heap_pop(pool)), slot);
	if (old && !locked && pool->retired) {
		if (b || (pool->flags & TL_POOL_DRAINED))
			retire(pool, old, false);
		else
			b = reuse(pool, old, slot);
	}
	if (!b && pool->reserve && tl_slot_level(slot) == 0)
		b = reuse(pool, reserve_block(pool, slot), slot);
	if (locked)
		pool_unlock(pool);
	return b;
}

struct tl_block *tl_pool_drain_next(struct tl_pool *pool)
{
	struct tl_block *b = NULL;
	if (!pool_lock(pool))
		return NULL;
	if (pool->nretired > 0) {
		b = tl_pool_block(pool, pool->retired[pool->retired_head]);
		pool->retired_head = (pool->retired_head + 1) % pool->nblocks;
		pool->nretired--;
		atomic_fetch_sub(&pool->waiting, 1);
	}
	pool_unlock(pool);
	return b;
}

void tl_pool_drain_done(struct tl_pool *pool, struct tl_block *b)
{
	if (!pool_lock(pool))
		return;
	pool->freed[pool->nfreed++] = b->index;
	atomic_fetch_add_explicit(&pool->free, 1, memory_order_relaxed);
	pool_unlock(pool);
}

struct tl_block *tl_pool_recorder_next_block(struct tl_recorder *rec, struct tl_slot *slot)
{
	struct tl_block *old = NULL;
	if (slot->block != &tl_block_none) {
		old = slot->block;
		tl_slot_publish(slot);
	}
	return tl_pool_next_block(&rec->pool, old, slot);
}

void tl_pool_recorder_retire(struct tl_recorder *rec, struct tl_block *block)
{
	tl_pool_retire(&rec->pool, block);
}

const struct tl_pool *tl_pool_recorder_blocks(const struct tl_recorder *rec)
{
	return &rec->pool;
}

void tl_pool_recorder_fork_prepare(struct tl_recorder *rec)
{
	pthread_mutex_lock(&rec->pool.lock);
}

void tl_pool_recorder_fork_parent(struct tl_recorder *rec)
{
	pthread_mutex_unlock(&rec->pool.lock);
}

void tl_pool_recorder_fork_child(struct tl_recorder *rec)
{
	pthread_mutex_unlock(&rec->pool.lock);
	tl_pool_reset(&rec->pool);
}

void tl_pool_recorder_stop(struct tl_recorder *rec)
{
	tl_pool_destroy(&rec->pool);
}
