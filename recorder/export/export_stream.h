/*
 * The exporters streamed from a binary snapshot read in place
 * (snapshot_read.h): the bytes tl_export_json, tl_export_ftrace and
 * tl_export_perfetto write for the model of the same snapshot, without the
 * model. Each thread's events are read from the input by cursors, a few
 * passes each (slice_stream.h), and an item is written as soon as nothing
 * still to come can go before it.
 *
 * What they hold besides the input: per thread being read, its open slices,
 * when it has COMPLETE events its look-ahead (24 KiB, less for a thread of
 * fewer than 512 events) and the COMPLETE
 * events read ahead that have not opened, a window of items
 * waiting for their place, and what the survey keeps (slice_stream.h: 8
 * bytes per 256 events, 32 per COMPLETE event spanning more than that); for
 * Chrome JSON, 32 bytes per slice of the thread being written that is
 * written as one X from a BEGIN or closed at the snapshot, or is a COMPLETE
 * event carrying a flow, and, until the end, every flow event (they are
 * written last, sorted: 40 bytes each, 56 while sorted); for ftrace text,
 * the survey of every thread at once (its lines are merged across threads);
 * for Perfetto, the surveys too, and what export_perfetto.c lists (the flow
 * events, the distinct strings and tracks). A file recorder's packed blocks
 * are unpacked as the passes reach them and freed once they passed them
 * (r->trim_behind, slice_stream.h): each exporter names the records its
 * waiting items keep, and copies those it needs from far behind.
 *
 * Internal; allocates, not signal-safe.
 */
#ifndef TIMELINE_EXPORT_STREAM_H
#define TIMELINE_EXPORT_STREAM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "recorder/export/slice_match.h"
#include "recorder/export/slice_stream.h"
#include "recorder/export/snapshot_read.h"
#include "recorder/export/trace_model.h"
#include "recorder/record.h"

/*
 * Chrome JSON (as tl_export_json) of the snapshot r reads, which no cursor
 * has read yet. Returns 0, -errno from write(2) or -ENOMEM. counts may be
 * NULL. Call tl_snapshot_read_finish after it for what was lost.
 */
int tl_export_json_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts);

/* ftrace text (as tl_export_ftrace). Same contract. */
int tl_export_ftrace_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts);

/* Perfetto protobuf (as tl_export_perfetto). Same contract. */
int tl_export_perfetto_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts);

typedef int (*tl_export_stream_fn)(tl_snapshot_read *r, int fd, tl_export_counts *counts);

/* ---- what both exporters share ------------------------------------------- */

/* A thread as the exporters list it: every thread with events or a name,
 * by tid (the order of tl_slice_match.threads). */
typedef struct tl_stream_thread {
	tl_match_thread info;         /* tid, pid, name; no items */
	tl_snapshot_thread *snapshot; /* its blocks, or NULL when it has no events */
} tl_stream_thread;

/* The threads of r; *out malloc'd. 0 or -ENOMEM. */
int tl_stream_threads(tl_snapshot_read *r, tl_stream_thread **out, size_t *n);

/*
 * Copies of the strings of a few events at a time, NUL-terminated as the
 * model holds them (tl_snapshot_read_event): reset it, make room for the
 * records about to be decoded, decode them with tl_stream_strings_store.
 */
typedef struct tl_stream_strings {
	char *buf;
	size_t used;
	size_t cap;
} tl_stream_strings;

/* Empties the buffer and makes room for the strings of records recs[0..n)
 * (NULL entries skipped). 0 or -ENOMEM. */
int tl_stream_strings_reset(tl_stream_strings *s, const uint64_t *const *recs, size_t n);
/* A tl_string_store_fn over a tl_stream_strings, for a record's strings:
 * it reads them by whole words (they are padded with zeros to words). */
const char *tl_stream_strings_store(void *strings, const char *str, size_t len);
void tl_stream_strings_free(tl_stream_strings *s);

/* Decodes rec of thread tid into *e (with its args or not), its strings
 * in strings (made room for). */
void tl_stream_decode(tl_snapshot_read *r, tl_stream_strings *strings, const uint64_t *rec,
                      uint32_t tid, int with_args, tl_model_event *e);

/*
 * Sorts order[0..n), indexes into items (each size bytes), by compare of
 * the items: a merge sort of the runs already in order (a thread's events
 * mostly are: a few passes suffice), through tmp (room for n). The items
 * are not moved: an index is 8 bytes where an item may be several words.
 */
void tl_stream_sort_order(const void *items, size_t size, size_t *order, size_t *tmp, size_t n,
                          int (*compare)(const void *, const void *));

/*
 * Puts order[0..n) (indices of items[0..n), size bytes each) in an order
 * where the items of one key are together, sorted by compare (whose first
 * criterion is that key), the keys in no particular order: each item into
 * a bucket by its key's hash, then each bucket sorted. A sort of every item
 * by key reads items far apart in a few dozen passes; when most keys have
 * a few items (a flow's events), this reads them twice. 0 or -ENOMEM.
 */
int tl_stream_group_order(const void *items, size_t size, size_t n, size_t *order,
                          uint64_t (*key)(const void *item),
                          int (*compare)(const void *, const void *));

/*
 * Items waiting for their place in a writer's order. They come nearly in
 * order (a thread's events are, mostly): each goes at the end of a sorted
 * run, or a few places before it; one that would pass more goes into a heap
 * instead, so that a trace whose clock jumps back costs a log, not a scan.
 */
typedef struct tl_item_queue {
	size_t size;                                  /* of an item */
	int (*compare)(const void *a, const void *b); /* a total order */
	unsigned char *run;                           /* items [head, n) in order */
	size_t head, n, cap;
	unsigned char *heap; /* the others */
	size_t nheap, heap_cap;
} tl_item_queue;

/* The largest item a queue holds. */
#define TL_ITEM_QUEUE_SLOT 64

/* size: a multiple of 8, at most TL_ITEM_QUEUE_SLOT. */
void tl_item_queue_init(tl_item_queue *q, size_t size, int (*compare)(const void *, const void *));
/* Adds a copy of item. 0 or -ENOMEM. */
int tl_item_queue_push(tl_item_queue *q, const void *item);
/* The first item in order, or NULL when the queue is empty. */
const void *tl_item_queue_first(const tl_item_queue *q);
/* Removes the first item into *out (the queue must not be empty). */
void tl_item_queue_pop(tl_item_queue *q, void *out);
/* Adds to k the record pointers of every item waiting: those at the
 * offsets rec_at[0..n) of an item. */
void tl_item_queue_keep(const tl_item_queue *q, const size_t *rec_at, size_t n, tl_kept_recs *k);
void tl_item_queue_free(tl_item_queue *q);

/*
 * A thread being written: its matching (slice_stream.h) run a segment at a
 * time, its items waiting in a queue until the matching's floor passes
 * them. Every item starts with its int64_t timestamp. An exporter keeps one
 * as the first member of its own, and its callbacks add the items with
 * tl_stream_source_push.
 */
typedef struct tl_stream_source {
	size_t index; /* of the thread, in order of tid: breaks ties between sources */
	tl_slice_stream match;
	int matching;        /* match initialised */
	tl_item_queue items; /* waiting for their place */
	int64_t floor;       /* of the matching, as last stepped */
	int64_t first_ns;    /* the first item's timestamp, once ready */
	int done;            /* the matching has ended */
	int error;           /* -ENOMEM from a callback */
} tl_stream_source;

/* An empty source; items: size bytes, ordered by compare (tl_item_queue_init). */
void tl_stream_source_init(tl_stream_source *src, size_t index, size_t size,
                           int (*compare)(const void *, const void *));
/* Starts the matching over survey, the thread's events read from r, its
 * callbacks given ctx. 0 or -ENOMEM. */
int tl_stream_source_start(tl_stream_source *src, tl_snapshot_read *r,
                           const tl_thread_survey *survey, const tl_slice_stream_ops *ops,
                           void *ctx);
/* Adds a copy of item; a failure is kept in src->error. */
static inline void tl_stream_source_push(tl_stream_source *src, const void *item)
{
	if (tl_item_queue_push(&src->items, item))
		src->error = -ENOMEM;
}
/* tl_stream_source_ready when the first item is not ready yet. */
int tl_stream_source_step(tl_stream_source *src);

/* Runs the matching until the first item (tl_item_queue_first) can be
 * written, its timestamp in src->first_ns: 1, or 0 when none is left, or
 * -ENOMEM. */
static inline int tl_stream_source_ready(tl_stream_source *src)
{
	const void *first = tl_item_queue_first(&src->items);
	if (first) {
		memcpy(&src->first_ns, first, sizeof src->first_ns);
		if (src->done || src->first_ns < src->floor)
			return 1;
	}
	return tl_stream_source_step(src);
}
/* Frees the matching (when started) and the queue. */
void tl_stream_source_free(tl_stream_source *src);

/*
 * Sources with an item ready, by their first items: by time (first_ns),
 * and at an equal time as before(a, b) tells, whether a's goes first (a
 * strict total order, the sources' index last).
 */
typedef struct tl_source_heap {
	tl_stream_source **heap;
	size_t n;
	int (*before)(const tl_stream_source *a, const tl_stream_source *b);
} tl_source_heap;

/* Room for max sources. 0 or -ENOMEM. */
int tl_source_heap_init(tl_source_heap *h, size_t max,
                        int (*before)(const tl_stream_source *, const tl_stream_source *));
/* Adds src once its first item is ready (none when it has no items): 0,
 * or -ENOMEM. */
int tl_source_heap_add(tl_source_heap *h, tl_stream_source *src);
/* The source whose first item goes first, or NULL when none is left. */
static inline tl_stream_source *tl_source_heap_top(const tl_source_heap *h)
{
	return h->n ? h->heap[0] : NULL;
}
/* After the top's first item was popped: its next one made ready and put
 * in its place, or the source removed when it has no more. 0 or -ENOMEM. */
int tl_source_heap_next(tl_source_heap *h);
void tl_source_heap_free(tl_source_heap *h);

/*
 * Surveys thread t of r into *survey (tl_thread_survey_run) and runs a
 * first matching over it, calling back ops with ctx: fed by the survey as
 * it reads, unless the thread has COMPLETE events; then forget(ctx) drops
 * what that run noted, and the matching runs again, its COMPLETE events
 * read ahead.
 * The run's counts are added to totals when not NULL. 0 or -ENOMEM; free
 * *survey with tl_thread_survey_free.
 */
int tl_stream_first_run(tl_snapshot_read *r, tl_snapshot_thread *t, tl_thread_survey *survey,
                        const tl_slice_stream_ops *ops, void *ctx, void (*forget)(void *ctx),
                        tl_match_counts *totals);

/* The stats of r's model with the blocks lost counted as torn, as
 * tl_snapshot_read_finish will count them. */
static inline tl_stats tl_stream_stats(const tl_snapshot_read *r)
{
	tl_stats stats = r->model->stats;
	stats.blocks_torn += r->bad_blocks;
	return stats;
}

/* Adds the counts c to totals. */
void tl_stream_add_counts(tl_match_counts *totals, const tl_match_counts *c);

/* Whether record rec has arguments. */
static inline int tl_stream_has_args(const uint64_t *rec)
{
	return (rec[1] >> TL_REC_ARGTYPES_SHIFT) != 0;
}

#endif /* TIMELINE_EXPORT_STREAM_H */
