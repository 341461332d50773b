/*
 * The binary snapshot format written as a stream (snapshot_binary.c), for a
 * recorder that writes its blocks to a file as they fill: a header and the
 * process's metadata first, then, as they come, metadata that changed
 * (categories, thread names, clock calibration, per-thread drops, new
 * entries of the function table) followed by the blocks that may refer to
 * it, and at the close the executable mappings, the stats and the END
 * chunk (the mappings also come after the header). A file cut anywhere reads up to its last whole chunk, with
 * the names its blocks use. Internal.
 */
#ifndef TIMELINE_SNAPSHOT_STREAM_H
#define TIMELINE_SNAPSHOT_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/function_table.h"
#include "recorder/slot.h"
#include "recorder/snapshot_writer.h"

#pragma GCC visibility push(hidden)

struct tl_stream {
	struct tl_snapshot_sink sink;
	uint64_t bytes;                 /* written to the fd so far */
	uint64_t records;               /* records written to the fd so far */
	uint32_t categories;            /* written */
	int clock_written;
	uint32_t clock_pairs;           /* calibration pairs in the last CLOCK chunk */
	uint64_t clock_last_ticks;      /* and the last of them */
	uint32_t thread_tid[TL_MAX_THREADS];  /* the tid and name_seq of each slot as written */
	uint32_t thread_seq[TL_MAX_THREADS];
	uint64_t thread_drops[TL_MAX_THREADS]; /* drops of each slot as written */
	/* the function table's entries written, one bit each, and its count
	 * (tl_function_count) when they were */
	uint64_t functions_written[TL_FUNCTION_TABLE_CAPACITY / 64];
	uint32_t functions_seen;
};

/* The staging buffer's alignment, and that of its size. */
#define TL_STREAM_ALIGN 4096

/* Starts a file on fd: header, process, clock, categories, threads, the
 * function table and the executable mappings. The stream stages what it
 * writes in a buffer of staging_bytes (a multiple of TL_STREAM_ALIGN; 0:
 * a small default), aligned to TL_STREAM_ALIGN, and hands it to
 * write_out (snapshot_writer.h) when set, else writes it with write(2)
 * at every call. 0 or -errno (the stream is then unusable;
 * tl_stream_close frees it). */
int tl_stream_open(struct tl_stream *st, int fd, int (*write_out)(struct tl_snapshot_sink *),
                   size_t staging_bytes);
/* Fills `bytes` at `at` (a multiple of 8, at least TL_STREAM_PADDING_MIN)
 * with a PADDING chunk: bytes that readers skip. */
#define TL_STREAM_PADDING_MIN 16
void tl_stream_padding(void *at, size_t bytes);
/* Writes what changed since the last call: new categories, renamed or new
 * threads, new calibration pairs, per-thread drop counts, new function
 * table entries. 0 or -errno. */
int tl_stream_metadata(struct tl_stream *st);
/* Writes the records of block b from record *from on, and sets *from to
 * the records written in all. `settled`: b is retired and will not be
 * handed out until the caller lets go of it (read in place); else it is
 * copied first, and a block that changed hands meanwhile writes nothing
 * and returns -EAGAIN. 0 or -errno. */
int tl_stream_block(struct tl_stream *st, const struct tl_block *b, uint32_t *from, int settled);
/* Ends the file with the mappings, the stats and the END chunk when `end` (after the
 * session: `records` streamed in all, files before this one included, and
 * `lost`, the records the recorder could not write), and frees the
 * stream's buffers. 0 or -errno. */
int tl_stream_close(struct tl_stream *st, int end, uint64_t records, uint64_t lost);

#pragma GCC visibility pop

#endif /* TIMELINE_SNAPSHOT_STREAM_H */
