/*
 * A binary snapshot (snapshot_format.h) read in place: its metadata into a
 * tl_model that holds no events, its blocks noted and sorted by thread, and
 * each thread's events walked in order by a cursor that decodes them from
 * the input as it goes. The trace model's reader (model_read_binary.c) and
 * the streaming exporters (export_stream.h) both read snapshots this way,
 * so they see the same events in the same order.
 *
 * The input is untrusted (a file from another machine, possibly cut short
 * or damaged): every length is checked against the bytes that remain before
 * it is used, and a record's kept pointers are never followed (records must
 * carry TL_REC_F_STRINGS_INLINE). One snapshot, or several in a row (the
 * files of a file recorder's rotation, oldest first), are read as one trace.
 *
 * A thread's events, in order: the records of its BLOCK chunks, chunks
 * sorted by (seq, file order), then its signal handlers' records (NESTED_BLOCK
 * chunks) put between them by timestamp: each handler event, in timestamp
 * order (file order among equals), goes before the first of the thread's
 * own events with a larger timestamp. A record that does not decode ends its
 * block; what follows it in the block is counted as lost by the first walk
 * over the block, which notes where it ends: later walks decode only what
 * ordering needs (tl_cursor_event).
 *
 * Internal; allocates, not signal-safe. The input must outlive the reader.
 */
#ifndef TIMELINE_SNAPSHOT_READ_H
#define TIMELINE_SNAPSHOT_READ_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/clock.h"
#include "recorder/export/symbolize.h"
#include "recorder/export/trace_model.h"
#include "recorder/hash_map.h"
#include "recorder/record_view.h"

/* A BLOCK or NESTED_BLOCK chunk. */
typedef struct tl_snapshot_block {
	uint32_t tid;
	uint64_t seq;
	size_t order;          /* position in the input: ties keep input order */
	const uint64_t *words; /* nwords records' words, 8-byte aligned */
	size_t nwords;
	/* A chunk that holds packed runs: its words in the input (`words` is
	 * then its records unpacked, malloc'd in `unpacked` when a walk enters
	 * it (a handler block: when its thread is prepared), NULL before and
	 * once unloaded: tl_snapshot_thread_unload, _trim);
	 * NULL for any other chunk, whose `words` are the input's. */
	const uint64_t *packed;
	size_t packed_nwords;
	uint64_t *unpacked;
	int cut;    /* the input ends inside this block */
	int nested; /* a signal handler's records */
	/* The words its records that decode take, once a cursor walked it
	 * (SIZE_MAX before): later walks decode only what ordering needs. */
	size_t valid_words;
} tl_snapshot_block;

/* A handler event placed by timestamp, when the handler's blocks are not
 * already in timestamp order. */
typedef struct tl_snapshot_nested_ref {
	int64_t ts_ns;
	uint64_t index; /* in the handler blocks' order */
	const uint64_t *rec;
} tl_snapshot_nested_ref;

/* The blocks of one thread, [first_block, nested_block) its own and
 * [nested_block, end_block) its handlers'. */
typedef struct tl_snapshot_thread {
	uint32_t tid;
	size_t first_block;
	size_t nested_block;
	size_t end_block;
	/* Its own blocks below this one hold no unpacked records (lowered when
	 * one is unpacked again): where a trim starts looking. */
	size_t trim_from;
	int has_events; /* at least one record decodes */
	/* tl_snapshot_thread_prepare: the handler events in order, or NULL
	 * when the handler blocks give that order as they are */
	int prepared;
	tl_snapshot_nested_ref *nested;
	size_t nnested;
} tl_snapshot_thread;

typedef struct tl_snapshot_read {
	tl_model *model; /* metadata only: no events */
	char *err;
	size_t errlen;
	/* The last file read (of several: a rotation): where it starts in the
	 * input, its length without the zero sectors of room made ahead, and
	 * where its whole chunks end (a cut file: at the chunk cut, of which a
	 * BLOCK's whole records are kept). */
	size_t file_start;
	size_t file_len;
	size_t whole_end;
	uint32_t file_version; /* the version its header gives */

	tl_clock_pair *pairs; /* by ticks; none: timestamps are ns */
	size_t npairs;

	const char **categories; /* by index; NULL where none was named */
	size_t ncategories;
	const char *unknown_category;

	/* Sorted by (tid, nested, seq, order). */
	tl_snapshot_block *blocks;
	size_t nblocks;
	size_t blocks_cap;

	/* By tid: every thread that has blocks. */
	tl_snapshot_thread *threads;
	size_t nthreads;

	uint64_t *aligned; /* the input copied, when it was not 8-byte aligned */

	/* THREAD_DROPS: each thread's latest count, in order of first
	 * mention (drops_by_tid: its index), and their sum */
	struct tl_snapshot_drops {
		uint32_t tid;
		uint64_t dropped;
	} * drops;
	size_t ndrops;
	size_t drops_cap;
	tl_id_map drops_by_tid;
	uint64_t thread_drops_total;

	/* FUNCTIONS: function records' ids, sorted by id once the chunks are
	 * read; each one's name made on first use (tl_snapshot_read_function) */
	struct tl_snapshot_function {
		uint32_t id;
		uint64_t address;
		const char *name; /* the model's string, or NULL before first use */
	} * functions;
	size_t nfunctions;
	size_t functions_cap;
	/* MAPPING chunks: the process's executable mappings, paths the
	 * model's, build-ids in the input */
	tl_mapping *mappings;
	size_t nmappings;
	/* made at the first function name; NULL before, and when elfutils
	 * is missing: names by module and offset */
	tl_symbolizer *symbolizer;
	int symbolizer_made;
	/* Which files it may open (NULL: the defaults): the caller's, set
	 * after tl_snapshot_read_open and before the first function name,
	 * and outliving the reader. A snapshot from elsewhere names paths of
	 * its writer's choosing. */
	const tl_symbol_options *symbols;
	const char *function_category;

	/* The events read by the cursors asked to count them
	 * (tl_event_cursor_init); the blocks that do not decode to their end,
	 * and the words lost in them, counted once per block. */
	uint64_t nevents;
	uint64_t bad_blocks;
	uint64_t bad_words;

	/* Packed blocks: the words of unpacked records held now and at most
	 * (for the tests and the figures); unpack_failed: a walk could not
	 * unpack a block for want of memory (its records were skipped: the
	 * exporters then fail with -ENOMEM). */
	size_t unpacked_held;
	size_t unpacked_peak;
	int unpack_failed;
	int has_packed; /* a block holds packed runs */
	/* Set by a consumer that names every record it keeps to the
	 * matchings (tl_slice_stream_ops.keep): the surveys and matchings of
	 * r then free the unpacked records their cursors have passed
	 * (tl_snapshot_thread_trim). */
	int trim_behind;
} tl_snapshot_read;

/*
 * Reads the snapshot's chunks: the metadata into *model (zeroed first; free
 * it with tl_model_free), the blocks into r. On failure returns -EINVAL (not
 * a snapshot, bad version, corrupt chunk), -ENODATA (a file cut before any
 * of its events: nothing to read, the offset named) or -ENOMEM with a
 * one-line reason in err (may be NULL), and r needs no close. err must stay valid until
 * tl_snapshot_read_close: tl_snapshot_read_finish writes into it.
 */
int tl_snapshot_read_open(tl_snapshot_read *r, const void *data, size_t len, tl_model *model,
                          char *err, size_t errlen);

/*
 * After the events were read: adds the blocks lost to the model's stats
 * (blocks_torn) and writes into err what was lost, or "" when nothing was.
 */
void tl_snapshot_read_finish(tl_snapshot_read *r);

/* Frees what the reader holds (not the model, not the input). */
void tl_snapshot_read_close(tl_snapshot_read *r);

/* A record's timestamp (or COMPLETE end) in ns of the trace clock. */
int64_t tl_snapshot_read_ns(const tl_snapshot_read *r, unsigned rec_flags, uint64_t ts);

/* The name of a category index: the model's string, or "?" when unnamed. */
const char *tl_snapshot_read_category(const tl_snapshot_read *r, unsigned index);

/*
 * The name of function record `id` (the model's string), made on first
 * use: its symbol, else `module+0xoffset`, else `0xaddress`
 * (tl_function_name); `function#id` when the FUNCTIONS chunks lack it.
 * NULL when out of memory.
 */
const char *tl_snapshot_read_function(tl_snapshot_read *r, uint32_t id);

/*
 * Places thread t's handler events among its own (see the file comment):
 * in place when the handler blocks are in timestamp order, else into
 * t->nested. 0 or -ENOMEM. Idempotent: a cursor calls it; later calls do
 * nothing. The handler blocks are unpacked here; the thread's own packed
 * blocks as a walk enters them.
 */
int tl_snapshot_thread_prepare(tl_snapshot_read *r, tl_snapshot_thread *t);

/* Frees what tl_snapshot_thread_prepare kept for t. */
void tl_snapshot_thread_release(tl_snapshot_thread *t);

/*
 * Releases t and frees the records its packed blocks were unpacked into
 * (a file recorder's file): every record pointer into them, from cursors
 * and tl_cursor_event.rec, is then invalid. For a reader of one thread at
 * a time that keeps no record of it: memory then holds one thread's
 * unpacked records at a time, not the whole file's. A later cursor on t
 * unpacks them again.
 */
void tl_snapshot_thread_unload(tl_snapshot_read *r, tl_snapshot_thread *t);

/* Record pointers a reader of a thread still holds (tl_snapshot_thread_trim).
 * failed: the list could not grow, and is not the whole. */
typedef struct tl_kept_recs {
	const uint64_t **recs;
	size_t n, cap;
	int failed;
} tl_kept_recs;

/* Adds rec (NULL: nothing) to k. */
void tl_kept_recs_add(tl_kept_recs *k, const uint64_t *rec);
void tl_kept_recs_free(tl_kept_recs *k);

/*
 * Frees the unpacked records of t's own blocks before block `before` (a
 * cursor's own.block: every cursor of t is there or after it), except
 * those of the blocks that hold one of kept's records. A later walk over a
 * freed block unpacks it again. Memory then holds the unpacked records of
 * the blocks between the cursors and of those kept, not the whole thread's.
 * Does nothing when kept->failed.
 */
void tl_snapshot_thread_trim(tl_snapshot_read *r, tl_snapshot_thread *t, size_t before,
                             const tl_kept_recs *kept);

/*
 * Copies of records needed after the cursors passed them (a far COMPLETE
 * event, a slice's END or flow event whose args its open writes): the
 * unpacked records of a file recorder's file are freed behind the cursors
 * (tl_snapshot_thread_trim), copies are not. Kept in chunks: a copy stays
 * where it is until the copies are freed.
 */
typedef struct tl_rec_copies {
	struct tl_rec_chunk *chunk; /* the newest, which links to the others */
	size_t used, cap;           /* its words */
} tl_rec_copies;

/* Copies rec into c: the copy into *copy (NULL when rec is). 0 or -ENOMEM. */
int tl_rec_copies_add(tl_rec_copies *c, const uint64_t *rec, const uint64_t **copy);
/* Frees every copy. */
void tl_rec_copies_free(tl_rec_copies *c);

/* One event as a cursor gives it: what ordering needs, decoded; the rest
 * is read from rec when needed (tl_snapshot_read_event). */
typedef struct tl_cursor_event {
	const uint64_t *rec; /* the record, in the input */
	uint64_t position;   /* index among the thread's events, in order */
	int64_t ts_ns;
	int64_t end_ns; /* TL_PHASE_COMPLETE: end timestamp */
	uint64_t value; /* id, counter bits (see tl_record_has_value) */
	char phase;
	unsigned flags; /* TL_REC_F_* */
} tl_cursor_event;

/* A sub-stream of a thread's events: its own blocks, or its handlers'. */
typedef struct tl_block_walk {
	size_t block;
	size_t end_block;
	size_t word;              /* next record within the block */
	tl_clock_converter clock; /* over the reader's pairs */
} tl_block_walk;

/* A thread's events in order. Copying a cursor copies its position. */
typedef struct tl_event_cursor {
	tl_snapshot_read *r;
	const tl_snapshot_thread *thread;
	tl_block_walk own;
	tl_block_walk nested;     /* handler blocks read in place */
	size_t nested_next;       /* or the next of thread->nested */
	tl_cursor_event own_head; /* the next own event, when own_ready */
	tl_cursor_event nested_head;
	int own_ready;
	int nested_ready;
	int count_events;
	uint64_t position;
} tl_event_cursor;

/*
 * A cursor at thread t's first event. Counts the events it gives into
 * r->nevents when count_events (one cursor per thread should). 0 or -ENOMEM
 * (from tl_snapshot_thread_prepare).
 */
int tl_event_cursor_init(tl_event_cursor *c, tl_snapshot_read *r, tl_snapshot_thread *t,
                         int count_events);

/* The next event into *out; 0 when there is none left. */
int tl_event_cursor_next(tl_event_cursor *c, tl_cursor_event *out);

/* Where a string of an event goes: returns a NUL-terminated copy of s
 * (len bytes), or NULL when out of memory. */
typedef const char *(*tl_string_store_fn)(void *ctx, const char *s, size_t len);

/*
 * Decodes the record rec of thread tid into a model event, the way the
 * model holds it, its strings passed through store (a category's
 * and a function record's name are the reader's model's); ts_ns, end_ns and seq
 * are left 0 (the cursor gave the timestamps: converting them costs), and
 * without with_args, the args too (nargs 0); with it, out->args must point
 * to TL_MAX_ARGS slots. Returns 0, or -ENOMEM when
 * store failed. rec must be a record a cursor gave.
 */
int tl_snapshot_read_event(tl_snapshot_read *r, const uint64_t *rec, uint32_t tid, int with_args,
                           tl_string_store_fn store, void *ctx, tl_model_event *out);

/*
 * Reads files that continue one another (a file recorder's rotation,
 * oldest first), or one file, into one malloc'd buffer, 8-byte aligned,
 * with no byte between them (free it with free()). 0, or -errno with
 * *failed set to the index of the path that failed.
 */
int tl_snapshot_load_files(const char *const *paths, size_t n, void **data, size_t *len,
                           size_t *failed);

#endif /* TIMELINE_SNAPSHOT_READ_H */
