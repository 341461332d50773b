/*
 * Internal shapes shared by the recorder core and the backends: blocks,
 * thread slots, the block pool, the recorder ops table and the global
 * state. Not installed.
 */
#ifndef TIMELINE_INTERNAL_H
#define TIMELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <timeline/timeline.h>

#include "recorder/record_view.h"

#pragma GCC visibility push(hidden)

#define TL_LIKELY(x) __builtin_expect(!!(x), 1)
#define TL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TL_CACHELINE 64

#define TL_MAX_CATEGORIES 1024
#define TL_MAX_THREADS 1024
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
	uint32_t pad_;
	_Atomic uint32_t gen;
	_Atomic uint32_t state;
	_Atomic uint32_t tid;
	_Atomic uint64_t seq; /* hand-out order */
	_Atomic uint32_t records;
	uint32_t index;
	_Atomic uint32_t owner; /* index of the owning slot in tl_slots */
	uint32_t pad2_[3];
	_Atomic uint64_t data[];
};
_Static_assert(sizeof(struct tl_block) == TL_CACHELINE, "block header is one cache line");

/* ---- thread slots ----------------------------------------------------------
 * One per thread that recorded or was named, in a static table so that it
 * outlives the thread (its name stays in every snapshot) and a signal
 * handler can read it. The first cache line is written by its thread only.
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
 *               handler that interrupts an emit sees it and drops its own
 *               event instead of writing over the interrupted one;
 *               shutdown waits for it to clear.
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

static inline uint64_t tl_pos_make(const _Atomic uint64_t *p, uint64_t records)
{
	return ((uint64_t)(uintptr_t)p << TL_POS_SHIFT) | records * TL_POS_RECORD;
}

static inline _Atomic uint64_t *tl_pos_ptr(uint64_t pos)
{
	return (_Atomic uint64_t *)(uintptr_t)(pos >> TL_POS_SHIFT);
}

static inline uint64_t tl_pos_records(uint64_t pos)
{
	return (pos & (((uint64_t)1 << TL_POS_SHIFT) - 1)) / TL_POS_RECORD;
}

/* What a record of `words` words adds to a position word. */
static inline uint64_t tl_pos_step(size_t words)
{
	return ((uint64_t)words * sizeof(uint64_t) << TL_POS_SHIFT) + TL_POS_RECORD;
}

/* The position word of a limit: a position word p + tl_pos_step(words),
 * from a p at or before the limit, is at most tl_pos_limit(limit) exactly
 * when the record ends at or before the limit. */
static inline uint64_t tl_pos_limit(const _Atomic uint64_t *limit)
{
	return tl_pos_make(limit, 0) | (((uint64_t)1 << TL_POS_SHIFT) - 1);
}

/* Whether a block [data, end) can be addressed by position words. */
static inline int tl_pos_addressable(const void *end)
{
	return (uint64_t)(uintptr_t)end < TL_POS_ADDRESS_LIMIT;
}

/* The owner's current write position (busy flag and count masked off). */
static inline _Atomic uint64_t *tl_slot_cur(const struct tl_slot *slot)
{
	return tl_pos_ptr(atomic_load_explicit(&slot->pos, memory_order_relaxed));
}

static inline int tl_slot_busy(const struct tl_slot *slot)
{
	return (atomic_load_explicit(&slot->pos, memory_order_acquire) & TL_SLOT_BUSY) != 0;
}

/*
 * Marks the slot busy and returns its position word (busy flag clear) in
 * *pos, or returns 0 when it already is (re-entry from a signal handler).
 * The signal fence orders the busy store before the caller's load of
 * tl_state against tl_shutdown, whose membarrier() supplies the other
 * half. Owner only.
 */
static inline int tl_slot_enter_pos(struct tl_slot *slot, uint64_t *pos)
{
	uint64_t word = atomic_load_explicit(&slot->pos, memory_order_relaxed);
	if (__builtin_expect(word & TL_SLOT_BUSY, 0))
		return 0;
	atomic_store_explicit(&slot->pos, word + TL_SLOT_BUSY, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	*pos = word;
	return 1;
}

/* tl_slot_enter_pos, returning the write position. */
static inline int tl_slot_enter(struct tl_slot *slot, _Atomic uint64_t **cur)
{
	uint64_t pos;
	if (!tl_slot_enter_pos(slot, &pos))
		return 0;
	*cur = tl_pos_ptr(pos);
	return 1;
}

/* Commits a position word computed from the one tl_slot_enter_pos gave
 * (busy flag clear), which also leaves the emit. */
static inline void tl_slot_commit_pos(struct tl_slot *slot, uint64_t pos)
{
	atomic_store_explicit(&slot->pos, pos, memory_order_release);
}

/* Leaves at write position `end`, with `records` more records committed. */
static inline void tl_slot_commit_records(struct tl_slot *slot, _Atomic uint64_t *end,
					  uint64_t records)
{
	uint64_t pos = atomic_load_explicit(&slot->pos, memory_order_relaxed);
	tl_slot_commit_pos(slot, tl_pos_make(end, tl_pos_records(pos) + records));
}

/* Leaves at write position `end`, no record added. */
static inline void tl_slot_commit(struct tl_slot *slot, _Atomic uint64_t *end)
{
	tl_slot_commit_records(slot, end, 0);
}

/* Leaves without moving the position. */
static inline void tl_slot_leave(struct tl_slot *slot)
{
	tl_slot_commit_pos(slot, atomic_load_explicit(&slot->pos, memory_order_relaxed) &
	                             ~TL_SLOT_BUSY);
}

/* Makes block b the slot's current block, keeping the busy flag as it is.
 * Owner thread only. */
static inline void tl_slot_use_block(struct tl_slot *slot, struct tl_block *b)
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
static inline void tl_slot_publish(struct tl_slot *slot)
{
	struct tl_block *b = slot->block;
	uint64_t pos = atomic_load_explicit(&slot->pos, memory_order_relaxed);
	atomic_store_explicit(&b->records, (uint32_t)tl_pos_records(pos), memory_order_relaxed);
	atomic_store_explicit(&b->cur, tl_pos_ptr(pos), memory_order_release);
}

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
/* The ops of every recorder built on the pool: retire the slot's block,
 * take the next; retire a block; the pool; and unmap it. */
struct tl_recorder;
struct tl_block *tl_pool_recorder_next_block(struct tl_recorder *rec, struct tl_slot *slot);
void tl_pool_recorder_retire(struct tl_recorder *rec, struct tl_block *block);
const struct tl_pool *tl_pool_recorder_blocks(const struct tl_recorder *rec);
void tl_pool_recorder_fork_prepare(struct tl_recorder *rec);
void tl_pool_recorder_fork_parent(struct tl_recorder *rec);
void tl_pool_recorder_fork_child(struct tl_recorder *rec);
void tl_pool_recorder_stop(struct tl_recorder *rec);
/* Chooses a block size for a budget (block_bytes 0 = automatic). */
size_t tl_pool_block_size(size_t budget, size_t block_bytes);

/* ---- recorders ------------------------------------------------------------
 * One small ops table per backend (backends/<name>.c), the only way the
 * core reaches a recorder. A recorder either keeps events in blocks (it
 * fills next_block, retire_block and blocks) or writes each one through
 * (it fills write_event); tl_recorder_writes_through() is the one test of
 * which, and tl_init refuses a table that fills both or neither.
 */
struct tl_recorder;
struct tl_recorder_ops {
	const char *name;
	tl_recorder_kind kind;
	size_t default_bytes; /* 0: keeps no buffer, the sizes are not read */
	int (*start)(struct tl_recorder *rec, const tl_options *opts);
	void (*stop)(struct tl_recorder *rec);
	/* Blocks: the thread's block is full (or it has none); hands it the
	 * next one, or NULL (the event is dropped and counted). Takes locks. */
	struct tl_block *(*next_block)(struct tl_recorder *rec, struct tl_slot *slot);
	/* Blocks: a thread exits; its block (published) is let go. */
	void (*retire_block)(struct tl_recorder *rec, struct tl_block *block);
	/* Blocks: the pool a snapshot reads. Any thread, async-signal-safe. */
	const struct tl_pool *(*blocks)(const struct tl_recorder *rec);
	/* Write-through: one event, decoded, on the emitting thread inside its
	 * emit (the thread's slot busy). Async-signal-safe. event->ts is the
	 * event's raw timestamp, or 0 when the caller gave none and did not
	 * ask for it back: the recorder reads the clock if it needs one. A
	 * kept name may come with name_len TL_RECORD_LEN_UNMEASURED: the
	 * recorder measures it if it needs it. */
	void (*write_event)(struct tl_recorder *rec, const tl_record_view *event);
	/* Optional: fills the recorder's own counters into *st (recorders
	 * that write through; the pool counts for the others). Any thread,
	 * async-signal-safe. */
	void (*stats)(struct tl_recorder *rec, tl_stats *st);
	/* Optional, fork: before it (take the recorder's locks), then in the
	 * parent, and in the child before its session restarts (the forking
	 * thread is the only thread). */
	void (*fork_prepare)(struct tl_recorder *rec);
	void (*fork_parent)(struct tl_recorder *rec);
	void (*after_fork_child)(struct tl_recorder *rec);
};

struct tl_recorder {
	const struct tl_recorder_ops *ops;
	struct tl_pool pool; /* block recorders built on the block pool */
	size_t buffer_bytes;
	void *backend; /* the recorder's own state */
};

extern const struct tl_recorder_ops tl_ring_ops;
extern const struct tl_recorder_ops tl_endless_ops;
extern const struct tl_recorder_ops tl_startup_ops;
extern const struct tl_recorder_ops tl_systrace_ops;

/* ---- global state ----------------------------------------------------------
 * tl_state is the epoch of the running session (odd numbers, never 0), or
 * 0 when stopped. TL_STATE_FULL is or-ed in when a recorder stops
 * recording (startup). A slot whose epoch differs takes the slow path.
 */
#define TL_STATE_FULL 0x80000000u
extern _Atomic uint32_t tl_state;

/*
 * What the TSC fast forms of the emitters compare a slot's epoch with:
 * tl_state while the TSC clock is in use, else TL_FAST_STATE_VDSO, which
 * no epoch equals (epochs are odd, 0 or UINT32_MAX). A machine without a
 * usable TSC then fails that one check and goes to the vDSO forms, so the
 * TSC forms need no clock test of their own. Written with tl_state by
 * tl_state_set only (and the FULL bit by tl_recorder_mark_full).
 */
#define TL_FAST_STATE_VDSO 2u
extern _Atomic uint32_t tl_fast_state;
void tl_state_set(uint32_t state);
extern struct tl_recorder tl_active;

/* Whether the active recorder writes every event through (else it keeps
 * them in blocks). Only in a session. */
static inline bool tl_recorder_writes_through(void)
{
	return tl_active.ops->write_event != NULL;
}

/* Hands one event to a recorder that writes through. */
static inline void tl_recorder_write(const tl_record_view *event)
{
	tl_active.ops->write_event(&tl_active, event);
}
extern struct tl_block tl_block_none; /* cur == limit: always "full" */
extern struct tl_slot tl_slots[TL_MAX_THREADS];
extern struct tl_slot tl_slot_none; /* the slot of threads not registered yet */
extern __thread struct tl_slot *tl_self __attribute__((tls_model("initial-exec")));
extern pid_t tl_pid;

/*
 * Where the published records of pool block b end (*end) and how many
 * there are: its owner's slot while the block is owned, the block itself
 * once retired. Async-signal-safe; callers detect a ring reusing the block
 * meanwhile with its generation.
 */
static inline void tl_block_extent(const struct tl_block *b, _Atomic uint64_t **end,
				   uint64_t *records)
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
extern char tl_process_name[TL_NAME_MAX];

/* Stops recording for everyone (startup recorder full); drops are counted. */
void tl_recorder_mark_full(void);

/* ---- threads (thread.c) ----------------------------------------------------- */
/* The general path's session check, on an entered slot: false when nothing
 * runs or the recorder stopped recording (a drop, counted); else moves the
 * slot to the running session (its old block belonged to an earlier one). */
bool tl_thread_session_enter(struct tl_slot *slot);
/* The general path's reservation, after tl_thread_session_enter: where to
 * write `words` in the slot's block, changing block when it is full; or
 * NULL, the drop counted and the slot left. */
_Atomic uint64_t *tl_thread_reserve_slow(struct tl_slot *slot, size_t words);
/* The calling thread's slot, registering it; NULL when the table is full. */
struct tl_slot *tl_thread_slot(void);
/* Reads a slot's name into out (signal-safe); returns its length, 0 if none. */
size_t tl_slot_read_name(struct tl_slot *slot, char *out, size_t size);
/* Session start/stop/fork for thread state. */
void tl_threads_session_start(void);
void tl_threads_session_stop(void);
void tl_threads_after_fork_child(void);
/* Waits up to timeout_ns for every slot's busy flag to clear; 0 or -ETIMEDOUT. */
int tl_threads_wait_idle(int64_t timeout_ns);
uint32_t tl_threads_registered(void);
/* Sums the per-thread counters, recycled slots included. */
void tl_threads_counters(uint64_t *dropped, uint64_t *truncated, uint64_t *args_dropped);
extern _Atomic uint64_t tl_unregistered_dropped;

/* ---- categories (category.c) ---------------------------------------------- */
void tl_categories_set_running(bool running);
uint32_t tl_category_count(void);
/* Name of category index i (signal-safe: names are never freed). */
const char *tl_category_name(uint32_t index);
void tl_categories_lock(void);
void tl_categories_unlock(void);

/* ---- stats (lifecycle.c) ------------------------------------------------------ */
void tl_stats_collect(tl_stats *out);
void tl_stats_note_export(uint64_t unmatched_begin, uint64_t unmatched_end);
extern _Atomic uint64_t tl_blocks_torn;

/* ---- log (log.c) -------------------------------------------------------------- */
void tl_log_set(tl_log_fn fn, void *user);
void tl_log(tl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- snapshot (snapshot_binary.c) ----------------------------------------------
 * The binary writer, shared by the signal-safe path (fd sink, static
 * buffers) and the in-memory path used by the JSON and ftrace snapshots.
 */
struct tl_snapshot_sink {
	int fd;              /* >= 0: write(2) to it */
	unsigned char *mem;  /* fd < 0: malloc'd growing buffer */
	size_t mem_len, mem_cap;
	unsigned char *buf;  /* staging buffer */
	size_t buf_len, buf_cap;
	uint64_t *scratch;   /* one block's words */
	size_t scratch_words;
	int error;           /* first -errno */
};
int tl_snapshot_write(struct tl_snapshot_sink *sink);
/* The child of a fork: forget a snapshot another thread had in progress. */
void tl_snapshot_after_fork_child(void);
/* The binary snapshot in a malloc'd buffer (caller frees). 0, -ENODEV, -ENOMEM. */
int tl_snapshot_to_memory(unsigned char **data, size_t *len);

#pragma GCC visibility pop

#endif /* TIMELINE_INTERNAL_H */
