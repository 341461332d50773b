/*
 * The backend interface: the recorders' ops table, the active recorder,
 * and what a backend may use of the rest of the core (the block pool, the
 * session, categories, the log). A file under backends/ includes this
 * header, and besides it only recorder/atrace_format.h (the atrace
 * grammar's writer) and recorder/tracer.h (the clock map). Internal.
 */
#ifndef TIMELINE_RECORDER_H
#define TIMELINE_RECORDER_H

#include <timeline/timeline.h>

#include "recorder/categories.h"
#include "recorder/log.h"
#include "recorder/pool.h"
#include "recorder/record_view.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/snapshot_stream.h"

#pragma GCC visibility push(hidden)

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
	 * emit (the thread's slot busy). A signal handler that interrupts it
	 * (or the recorder's own call emitting, as a callback may) writes its
	 * events through again on the thread's next nesting level: the
	 * recorder keeps what it keeps per thread per level
	 * (tl_recorder_writer_index). Async-signal-safe. event->ts is the
	 * event's raw timestamp, or 0 when the caller gave none and did not
	 * ask for it back: the recorder reads the clock if it needs one. A
	 * kept name may come with name_len TL_RECORD_LEN_UNMEASURED: the
	 * recorder measures it if it needs it. */
	void (*write_event)(struct tl_recorder *rec, const tl_record_view *event);
	/* Optional, write-through: a plain slice begin (phase TL_PHASE_BEGIN,
	 * a kept name, never NULL, no argument) or end (TL_PHASE_END, name
	 * NULL) that the caller wants no timestamp of, the commonest events,
	 * without a decoded event: same contract as write_event otherwise. */
	void (*write_slice)(struct tl_recorder *rec, char phase, const char *name);
	/* Optional: writes out what the recorder holds so far (the file
	 * recorder's partly filled blocks), for tl_flush(). 0 or -errno. */
	int (*flush)(struct tl_recorder *rec);
	/* Optional, write-through: an emit of the calling thread came while
	 * every nesting level of the thread was in an emit, and was dropped,
	 * counted in events_dropped: for the recorder's own count. On that
	 * thread, inside the nested emit. Async-signal-safe. */
	void (*nested_dropped)(struct tl_recorder *rec);
	/* Optional: fills the recorder's own counters into *st, after the
	 * pool's counts for a recorder that keeps blocks (which it may
	 * replace). Any thread, async-signal-safe. */
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
extern const struct tl_recorder_ops tl_file_ops;
extern const struct tl_recorder_ops tl_callback_ops;

extern struct tl_recorder tl_active;

/* Whether a recorder's table writes every event through (else it keeps
 * them in blocks): the one test of which. */
static inline bool tl_recorder_ops_write_through(const struct tl_recorder_ops *ops)
{
	return ops->write_event != NULL;
}

/* The same for the active recorder. Only in a session. */
static inline bool tl_recorder_writes_through(void)
{
	return tl_recorder_ops_write_through(tl_active.ops);
}

/* The blocks the active recorder keeps, for readers (snapshots, stats,
 * thread marks); NULL when it writes through. Only in a session. Any
 * thread, async-signal-safe. */
static inline const struct tl_pool *tl_recorder_blocks(void)
{
	return tl_recorder_writes_through() ? NULL : tl_active.ops->blocks(&tl_active);
}

/* Hands one event to a recorder that writes through. */
static inline void tl_recorder_write(const tl_record_view *event)
{
	tl_active.ops->write_event(&tl_active, event);
}

/* Whether it takes plain slices through write_slice. */
static inline bool tl_recorder_writes_slices(void)
{
	return tl_active.ops->write_slice != NULL;
}

static inline void tl_recorder_write_slice(char phase, const char *name)
{
	tl_active.ops->write_slice(&tl_active, phase, name);
}

/* Tells a recorder that writes through that a nested emit was dropped, no
 * nesting level being free. */
static inline void tl_recorder_note_nested_drop(void)
{
	if (tl_active.ops->nested_dropped)
		tl_active.ops->nested_dropped(&tl_active);
}

/* The nesting level of the emit the calling thread writes through: 0 for
 * its own, k for the k-th signal handler (or recorder call) that
 * interrupted an emit of the thread. Set by the core around a nested
 * write only, and restored after it. */
extern __thread unsigned tl_writer_level __attribute__((tls_model("initial-exec")));

/* The calling thread, for a recorder that writes through and keeps state
 * per thread: its index in the thread table (below TL_MAX_THREADS; the
 * thread's own until it exits, then a later thread's: the entry is given
 * back with the thread's slot) and its tid. Only on the emitting thread,
 * inside write_event, write_slice or nested_dropped (the thread is
 * registered). Async-signal-safe. */
static inline uint32_t tl_recorder_thread_index(void)
{
	return (uint32_t)(tl_self - tl_slots);
}

/* The nesting level being written (tl_writer_level), and the writer's
 * index: the thread's index plus level * TL_MAX_THREADS, below
 * TL_NEST_LEVELS * TL_MAX_THREADS. State kept per writer index is written
 * by one emit at a time: plain stores, no locked instruction. Same
 * contexts as tl_recorder_thread_index. */
static inline unsigned tl_recorder_writer_level(void)
{
	return tl_writer_level;
}

static inline uint32_t tl_recorder_writer_index(void)
{
	return tl_recorder_thread_index() + tl_writer_level * TL_MAX_THREADS;
}

static inline uint32_t tl_recorder_thread_tid(void)
{
	return atomic_load_explicit(&tl_self->tid, memory_order_relaxed);
}

/* Stops recording for everyone (startup recorder full); drops are counted. */
void tl_recorder_mark_full(void);

/* The ops of every recorder built on the pool: retire the slot's block,
 * take the next; retire a block; the pool; fork; and unmap it. */
struct tl_block *tl_pool_recorder_next_block(struct tl_recorder *rec, struct tl_slot *slot);
void tl_pool_recorder_retire(struct tl_recorder *rec, struct tl_block *block);
const struct tl_pool *tl_pool_recorder_blocks(const struct tl_recorder *rec);
void tl_pool_recorder_fork_prepare(struct tl_recorder *rec);
void tl_pool_recorder_fork_parent(struct tl_recorder *rec);
void tl_pool_recorder_fork_child(struct tl_recorder *rec);
void tl_pool_recorder_stop(struct tl_recorder *rec);

#pragma GCC visibility pop

#endif /* TIMELINE_RECORDER_H */
