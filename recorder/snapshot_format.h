/*
 * The binary snapshot: a self-contained, versioned file written by
 * tl_snapshot_binary_fd() (async-signal-safe) and read back by
 * tl_model_read_binary() (for `timeline convert`), possibly on another
 * machine after the process is gone. Internal, but the layout is a file
 * format: change it only by bumping TL_SNAPSHOT_VERSION.
 *
 * All integers are little-endian (the writer's native order on every
 * supported target; the reader rejects a file whose flags say otherwise).
 *
 *   file   := header chunk* END-chunk
 *
 * Each file of a file recorder's rotation is one such sequence; a reader
 * given several of them, oldest first, reads them as one trace.
 *   header := magic[8] "TLSNAP\r\n", u32 version, u32 header_bytes (32),
 *             u32 flags (TL_SNAPSHOT_F_*), u32 pid, u64 reserved (0)
 *   chunk  := u32 type, u32 reserved (0), u64 payload_bytes, payload,
 *             zero padding to a multiple of 8 bytes
 *
 * Readers skip chunk types they do not know. A file without an END chunk is
 * truncated: a reader keeps what it read and says so.
 *
 * Strings are u32 length + bytes (no terminator), inside payloads.
 */
#ifndef TIMELINE_SNAPSHOT_FORMAT_H
#define TIMELINE_SNAPSHOT_FORMAT_H

#include <stdint.h>

#define TL_SNAPSHOT_MAGIC "TLSNAP\r\n"
#define TL_SNAPSHOT_MAGIC_LEN 8
/* The newest version a reader knows. A file that may hold packed runs
 * (TL_REC_PHASE_PACKED: a file recorder's) is version 2; a snapshot, which
 * never does, stays version 1, readable by the readers before them. */
#define TL_SNAPSHOT_VERSION 2
#define TL_SNAPSHOT_VERSION_PLAIN 1
#define TL_SNAPSHOT_VERSION_PACKED 2
#define TL_SNAPSHOT_HEADER_BYTES 32

#define TL_SNAPSHOT_F_BIG_ENDIAN (1u << 0) /* never set by this writer */

enum tl_snapshot_chunk {
	/* u32 pid, string process_name */
	TL_CHUNK_PROCESS = 1,
	/*
	 * u32 clock_id (7 = CLOCK_BOOTTIME, 1 = CLOCK_MONOTONIC), u32 ticks
	 * (1: record timestamps are TSC ticks, 0: nanoseconds of clock_id),
	 * u32 npairs, u32 reserved,
	 * i64 boottime_ns, i64 monotonic_ns, i64 realtime_ns (taken at the
	 * snapshot), u64 snapshot_ts (tl_timestamp at the snapshot),
	 * npairs x { u64 ticks, i64 ns }: calibration pairs in increasing
	 * order; ns is the trace clock. Convert a tick value by linear
	 * interpolation between the two nearest pairs (extrapolate from the
	 * first two or last two outside the range). With ticks == 0 there is
	 * no pair and a timestamp is already ns.
	 */
	TL_CHUNK_CLOCK = 2,
	/*
	 * u32 count, u32 reserved, then count u64 values in this order:
	 * events_written, events_overwritten, events_dropped,
	 * strings_truncated, args_dropped, unmatched_begin, unmatched_end,
	 * blocks_torn, buffer_bytes, buffer_bytes_used, threads, categories;
	 * then string recorder name. Readers take the first min(count, known).
	 */
	TL_CHUNK_STATS = 3,
	/* u32 index, string name */
	TL_CHUNK_CATEGORY = 4,
	/* u32 tid, string name */
	TL_CHUNK_THREAD = 5,
	/*
	 * u32 tid, u32 first (index within the block of the first record in
	 * this chunk: one block may be split over several chunks), u64 seq
	 * (block hand-out order), u64 nwords, then nwords words of records
	 * (see record.h) each with TL_REC_F_STRINGS_INLINE set; timestamps as
	 * in the CLOCK chunk. A thread's events in order: its chunks sorted by
	 * (seq, first), records in file order.
	 */
	TL_CHUNK_BLOCK = 6,
	/*
	 * A packed run, among a BLOCK chunk's records (a file recorder's
	 * stream writes them; a snapshot does not): plain BEGIN and END records,
	 * one word each, standing for the records a snapshot would write.
	 *
	 *   word 0   the first record's timestamp
	 *   word 1   header: phase TL_REC_PHASE_PACKED, length in words
	 *            (TL_REC_WORDS: the whole run), flag TL_REC_F_STRINGS_INLINE
	 *   word 2   u32 count of records, u32 count of templates
	 *   count words, one per record: bits 56..63 its template's number
	 *            plus one (never zero), bits 0..55 its timestamp less the
	 *            record's before (the first: less word 0)
	 *   templates: each a record as it would be written, its timestamp
	 *            left out: a header (its TL_REC_WORDS counting the
	 *            timestamp), then the name's words for a BEGIN; at most
	 *            TL_PACK_TEMPLATE_MAX_WORDS words
	 *
	 * A record is its timestamp followed by its template's words. No word
	 * of a run is zero but inside a template's name, so a run never holds
	 * a whole zero disk sector.
	 */
	/* empty: the snapshot is complete */
	TL_CHUNK_END = 7,
	/*
	 * A BLOCK chunk written by a signal handler that interrupted an emit
	 * of its thread (a nested level's block): the same payload. Its records
	 * go between the thread's other records by timestamp: each before the
	 * first record of the BLOCK chunks (in their order) with a larger
	 * timestamp. Readers that skip it lose only the handlers' events.
	 */
	TL_CHUNK_NESTED_BLOCK = 8,
	/*
	 * u32 count, u32 reserved, then count x { u32 tid, u32 reserved,
	 * u64 dropped }: events each thread dropped so far (no block free),
	 * written by a file recorder as the counts change; a later chunk
	 * replaces a thread's earlier count. The STATS chunk, when the file
	 * has one, holds the total.
	 */
	TL_CHUNK_THREAD_DROPS = 9,
	/*
	 * The function table (function records, record.h TL_REC_F_FUNCTION):
	 * u32 count, u32 reserved, then count x { u32 id, u32 reserved,
	 * u64 address }. A snapshot may hold several; an id is in one of them.
	 * Written after the BLOCK chunks, so it names every function record
	 * they hold.
	 */
	TL_CHUNK_FUNCTIONS = 10,
	/*
	 * One executable mapping of the process at the snapshot: u64 start,
	 * u64 end (exclusive), u64 file_offset (of start in the file),
	 * u32 path_len, u32 build_id_len, path bytes (as /proc/self/maps says
	 * it: a file, "[vdso]", or empty for anonymous memory), build-id bytes
	 * (the file's NT_GNU_BUILD_ID note, empty when it has none or it could
	 * not be read). An address in [start, end) is at file offset
	 * address - start + file_offset of path.
	 */
	TL_CHUNK_MAPPING = 11,
	/*
	 * Zero bytes that carry nothing: a file recorder writing whole disk
	 * sectors ends what it has written so far with one, up to the next
	 * sector, and writes over it as the file goes on. Readers skip it.
	 */
	TL_CHUNK_PADDING = 12,
};

#define TL_SNAPSHOT_STATS_COUNT 12

/* Packed runs (TL_CHUNK_BLOCK): the phase byte of their header, and the
 * largest template, in words (a header and a name of up to 56 bytes). */
#define TL_REC_PHASE_PACKED 'P'
#define TL_PACK_TEMPLATE_MAX_WORDS 9
#define TL_PACK_TEMPLATES_MAX 255

#endif /* TIMELINE_SNAPSHOT_FORMAT_H */
