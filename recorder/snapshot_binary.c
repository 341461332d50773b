/*
 * The binary snapshot writer (format: snapshot_format.h).
 *
 * Async-signal-safe: it walks the block pool without a lock, copies each
 * block up to its last published record into a private buffer, checks the
 * block's generation to throw away a copy that raced with a hand-over, and
 * writes chunks with write(2). Kept pointers (names, keys, string values)
 * are read and written inline, so the file stands alone. Function records
 * are written as they are, followed by the function table and the
 * process's executable mappings (/proc/self/maps, read with open/read),
 * from which readers name them.
 *
 * The same writer fills a memory buffer for the JSON and ftrace snapshots.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/categories.h"
#include "recorder/clock.h"
#include "recorder/format_int.h"
#include "recorder/function_table.h"
#include "recorder/pool.h"
#include "recorder/record.h"
#include "recorder/recorder.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/snapshot_format.h"
#include "recorder/snapshot_stream.h"
#include "recorder/snapshot_writer.h"
#include "recorder/stats.h"
#include "recorder/threads.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the binary snapshot is written in native order, which must be little-endian"
#endif

/* Kept strings are cut to this many bytes in a snapshot. */
#define KEPT_STRING_MAX 1024
#define STAGING_BYTES (32 * 1024)

/* ---- the sink --------------------------------------------------------------- */

static int sink_flush(struct tl_snapshot_sink *s)
{
	if (s->error || s->buf_len == 0)
		return s->error;
	if (s->fd >= 0 && s->write_out) {
		s->error = s->write_out(s);
		return s->error;
	}
	if (s->fd >= 0) {
		size_t off = 0;
		while (off < s->buf_len) {
			ssize_t n = write(s->fd, s->buf + off, s->buf_len - off);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				s->error = -errno;
				s->written += off; /* what did reach the fd */
				return s->error;
			}
			off += (size_t)n;
		}
		s->written += off;
	} else {
		if (s->mem_len + s->buf_len > s->mem_cap) {
			size_t cap = s->mem_cap ? s->mem_cap * 2 : 256 * 1024;
			while (cap < s->mem_len + s->buf_len)
				cap *= 2;
			unsigned char *mem = realloc(s->mem, cap);
			if (!mem) {
				s->error = -ENOMEM;
				return s->error;
			}
			s->mem = mem;
			s->mem_cap = cap;
		}
		memcpy(s->mem + s->mem_len, s->buf, s->buf_len);
		s->mem_len += s->buf_len;
	}
	s->buf_len = 0;
	return 0;
}

/* Makes room for n bytes in the staging buffer. */
static int sink_room(struct tl_snapshot_sink *s, size_t n)
{
	if (s->buf_cap - s->buf_len < n && sink_flush(s))
		return s->error;
	return n <= s->buf_cap ? 0 : (s->error = -EOVERFLOW);
}

static void sink_bytes(struct tl_snapshot_sink *s, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n && !s->error) {
		if (s->buf_len == s->buf_cap && sink_flush(s))
			return;
		size_t chunk = s->buf_cap - s->buf_len < n ? s->buf_cap - s->buf_len : n;
		memcpy(s->buf + s->buf_len, b, chunk);
		s->buf_len += chunk;
		b += chunk;
		n -= chunk;
	}
}

static void sink_u32(struct tl_snapshot_sink *s, uint32_t v)
{
	sink_bytes(s, &v, 4);
}

static void sink_u64(struct tl_snapshot_sink *s, uint64_t v)
{
	sink_bytes(s, &v, 8);
}

static void sink_pad8(struct tl_snapshot_sink *s, size_t payload)
{
	static const unsigned char zeros[8];
	if (payload % 8)
		sink_bytes(s, zeros, 8 - payload % 8);
}

static void chunk_begin(struct tl_snapshot_sink *s, uint32_t type, uint64_t payload)
{
	sink_u32(s, type);
	sink_u32(s, 0);
	sink_u64(s, payload);
}

/* A chunk whose payload is a u32 followed by a string. */
static void chunk_u32_string(struct tl_snapshot_sink *s, uint32_t type, uint32_t value,
			     const char *str, size_t len)
{
	uint64_t payload = 8 + len;
	chunk_begin(s, type, payload);
	sink_u32(s, value);
	sink_u32(s, (uint32_t)len);
	sink_bytes(s, str, len);
	sink_pad8(s, payload);
}

/* ---- small signal-safe helpers ------------------------------------------------ */

/* The kernel's name of a thread (comm), read from procfs with open/read. */
static size_t read_comm(uint32_t tid, char *out, size_t size)
{
	char path[64] = "/proc/self/task/";
	size_t n = strlen(path);
	n += tl_format_u64(path + n, tid);
	memcpy(path + n, "/comm", 6);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, out, size - 1);
	close(fd);
	if (got <= 0)
		return 0;
	size_t len = (size_t)got;
	while (len && (out[len - 1] == '\n' || out[len - 1] == '\0'))
		len--;
	out[len] = '\0';
	return len;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- chunks ----------------------------------------------------------------------- */

static void write_header(struct tl_snapshot_sink *s)
{
	sink_bytes(s, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN);
	/* packed runs need a reader that knows them: only files that may
	 * hold them say so */
	sink_u32(s, s->pack ? TL_SNAPSHOT_VERSION_PACKED : TL_SNAPSHOT_VERSION_PLAIN);
	sink_u32(s, TL_SNAPSHOT_HEADER_BYTES);
	sink_u32(s, 0);
	sink_u32(s, (uint32_t)tl_pid);
	sink_u64(s, 0);
}

static void write_process(struct tl_snapshot_sink *s)
{
	char name[TL_NAME_MAX];
	size_t len = 0;
	while (len + 1 < sizeof name &&
	       (name[len] = __atomic_load_n(&tl_process_name[len], __ATOMIC_RELAXED)) != '\0')
		len++;
	chunk_u32_string(s, TL_CHUNK_PROCESS, (uint32_t)tl_pid, name, len);
}

/* The CLOCK chunk, after a calibration pair is taken (unless the last is
 * younger than min_interval_ns); returns the last pair's ticks, 0 if none. */
static uint64_t write_clock(struct tl_snapshot_sink *s, int64_t min_interval_ns, size_t *npairs)
{
	tl_clock_calibrate(1, min_interval_ns);
	tl_clock_pair pairs[TL_CLOCK_PAIRS];
	size_t n = tl_clock_is_tsc() ? tl_clock_pairs(pairs, TL_CLOCK_PAIRS) : 0;
	*npairs = n;
	uint64_t payload = 16 + 32 + n * 16;
	chunk_begin(s, TL_CHUNK_CLOCK, payload);
	sink_u32(s, (uint32_t)tl_clock_id_get());
	sink_u32(s, (uint32_t)tl_clock_is_tsc());
	sink_u32(s, (uint32_t)n);
	sink_u32(s, 0);
	/* boot and mono read together, the closest of three tries: readers
	 * move events from one clock to the other by their difference */
	int64_t boot = 0, mono = 0, best = INT64_MAX;
	for (int i = 0; i < 3; i++) {
		int64_t before = clock_ns(CLOCK_MONOTONIC);
		int64_t b = clock_ns(CLOCK_BOOTTIME);
		int64_t after = clock_ns(CLOCK_MONOTONIC);
		if (after - before < best) {
			best = after - before;
			boot = b;
			mono = before + (after - before) / 2;
		}
	}
	int64_t realtime = clock_ns(CLOCK_REALTIME);
	uint64_t ticks = tl_clock_read();
	sink_u64(s, (uint64_t)boot);
	sink_u64(s, (uint64_t)mono);
	sink_u64(s, (uint64_t)realtime);
	sink_u64(s, ticks);
	for (size_t i = 0; i < n; i++) {
		sink_u64(s, pairs[i].ticks);
		sink_u64(s, (uint64_t)pairs[i].ns);
	}
	return n ? pairs[n - 1].ticks : 0;
}

static void write_stats_values(struct tl_snapshot_sink *s, const tl_stats *stats);

static void write_stats(struct tl_snapshot_sink *s)
{
	tl_stats st;
	memset(&st, 0, sizeof st);
	st.struct_size = sizeof st;
	tl_stats_collect(&st);
	write_stats_values(s, &st);
}

static void write_stats_values(struct tl_snapshot_sink *s, const tl_stats *stats)
{
	tl_stats st = *stats;
	const uint64_t values[TL_SNAPSHOT_STATS_COUNT] = {
		st.events_written, st.events_overwritten, st.events_dropped,
		st.strings_truncated, st.args_dropped, st.unmatched_begin,
		st.unmatched_end, st.blocks_torn, st.buffer_bytes,
		st.buffer_bytes_used, st.threads, st.categories,
	};
	const char *name = st.recorder ? st.recorder : "";
	size_t len = strlen(name);
	uint64_t payload = 8 + 8 * TL_SNAPSHOT_STATS_COUNT + 4 + len;
	chunk_begin(s, TL_CHUNK_STATS, payload);
	sink_u32(s, TL_SNAPSHOT_STATS_COUNT);
	sink_u32(s, 0);
	for (size_t i = 0; i < TL_SNAPSHOT_STATS_COUNT; i++)
		sink_u64(s, values[i]);
	sink_u32(s, (uint32_t)len);
	sink_bytes(s, name, len);
	sink_pad8(s, payload);
}

static void write_categories(struct tl_snapshot_sink *s)
{
	uint32_t n = tl_category_count();
	for (uint32_t i = 0; i < n; i++) {
		const char *name = tl_category_name(i);
		chunk_u32_string(s, TL_CHUNK_CATEGORY, i, name, strlen(name));
	}
}

static void write_threads(struct tl_snapshot_sink *s)
{
	char name[TL_NAME_MAX];
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		struct tl_slot *slot = &tl_slots[i];
		uint32_t tid = atomic_load_explicit(&slot->tid, memory_order_acquire);
		if (tid == 0)
			continue;
		size_t len = 0;
		/* a thread never named by the API may have renamed itself since
		 * it registered: ask the kernel while it lives */
		if (!atomic_load(&slot->named) && atomic_load(&slot->alive))
			len = read_comm(tid, name, sizeof name);
		if (len == 0)
			len = tl_slot_read_name(slot, name, sizeof name);
		chunk_u32_string(s, TL_CHUNK_THREAD, tid, name, len);
	}
}

/* ---- blocks ---------------------------------------------------------------------- */

static size_t kept_length(const char *str)
{
	return str ? strnlen(str, KEPT_STRING_MAX) : 0;
}

static size_t string_words(size_t len)
{
	return TL_REC_STRING_WORDS(len);
}

static void put_word(unsigned char **p, uint64_t v)
{
	memcpy(*p, &v, 8);
	*p += 8;
}

static void put_string(unsigned char **p, const char *str, size_t len)
{
	put_word(p, len);
	size_t padded = (len + 7) / 8 * 8;
	if (len)
		memcpy(*p, str, len);
	memset(*p + len, 0, padded - len);
	*p += padded;
}

/* Re-encodes a decoded record with every string inline; returns its words,
 * or 0 when it does not fit in `room` bytes at p. */
static size_t transcode(const tl_record_view *v, uint64_t header_word, unsigned char *p, size_t room)
{
	char numbered[TL_RECORD_NAME_MAX];
	const char *name = v->name;
	size_t name_len = v->name ? (v->flags & TL_REC_F_NAME_INLINE ? v->name_len
								     : kept_length(v->name))
				  : 0;
	if (v->name && (v->flags & TL_REC_F_NAME_NUMBER)) {
		/* written out as the name it stands for */
		tl_record_view kept = *v;
		kept.name_len = name_len;
		name = tl_record_name(&kept, numbered, &name_len);
	}
	size_t words = 2 + (v->name ? string_words(name_len) : 0) +
		       (tl_record_has_value(v->phase) ? 1 : 0);
	size_t key_len[TL_MAX_ARGS], str_len[TL_MAX_ARGS];
	for (unsigned i = 0; i < v->nargs; i++) {
		key_len[i] = kept_length(v->args[i].key);
		words += string_words(key_len[i]);
		tl_arg_type t = v->args[i].type;
		if (t == TL_ARG_STRING_COPY)
			str_len[i] = v->args[i].str_len;
		else if (t == TL_ARG_STRING)
			str_len[i] = kept_length(v->args[i].str);
		words += (t == TL_ARG_STRING || t == TL_ARG_STRING_COPY) ? string_words(str_len[i])
									  : 1;
	}
	if (words * 8 > room)
		return 0;
	unsigned flags = (v->flags & ~TL_REC_F_NAME_NUMBER) | TL_REC_F_STRINGS_INLINE |
			 (v->name ? TL_REC_F_NAME_INLINE : 0);
	uint64_t header = (header_word & ~((uint64_t)0xffff << TL_REC_WORDS_SHIFT) &
			   ~((uint64_t)0xff << TL_REC_FLAGS_SHIFT)) |
			  ((uint64_t)words << TL_REC_WORDS_SHIFT) | ((uint64_t)flags << TL_REC_FLAGS_SHIFT);
	put_word(&p, v->ts);
	put_word(&p, header);
	if (v->name)
		put_string(&p, name, name_len);
	if (tl_record_has_value(v->phase))
		put_word(&p, v->value);
	for (unsigned i = 0; i < v->nargs; i++) {
		put_string(&p, v->args[i].key ? v->args[i].key : "", key_len[i]);
		tl_arg_type t = v->args[i].type;
		if (t == TL_ARG_STRING || t == TL_ARG_STRING_COPY)
			put_string(&p, v->args[i].str ? v->args[i].str : "", str_len[i]);
		else
			put_word(&p, v->args[i].bits);
	}
	return words;
}

/*
 * The commonest records, re-encoded without decoding them: a plain end (two
 * words) and a plain begin with a kept name (three), neither with
 * arguments. Gives the same words as transcode; 0 for any other record, or
 * when it does not fit in `room` bytes at p. The last kept name's length
 * is remembered: a kept name never changes (timeline.h).
 */
static size_t transcode_plain(struct tl_snapshot_sink *s, const uint64_t *rec, size_t len,
			      unsigned char *p, size_t room)
{
	uint64_t header = rec[1];
	unsigned flags = TL_REC_FLAGS(header);
	if ((flags & TL_REC_F_FUNCTION) && len == 2 && TL_REC_PHASE(header) == TL_PHASE_BEGIN &&
	    !(flags & (TL_REC_F_NAME_INLINE | TL_REC_F_NAME_NUMBER))) {
		/* a function record: the id stays in the header */
		if (room < 16)
			return 0;
		put_word(&p, rec[0]);
		put_word(&p, header | ((uint64_t)TL_REC_F_STRINGS_INLINE << TL_REC_FLAGS_SHIFT));
		return 2;
	}
	if (((header >> TL_REC_ARGTYPES_SHIFT) != 0) ||
	    (flags & (TL_REC_F_NAME_INLINE | TL_REC_F_NAME_NUMBER | TL_REC_F_STRINGS_INLINE)))
		return 0;
	char phase = TL_REC_PHASE(header);
	uint64_t flags_mask = (uint64_t)0xff << TL_REC_FLAGS_SHIFT;
	if (phase == TL_PHASE_END && len == 2) {
		if (room < 16)
			return 0;
		put_word(&p, rec[0]);
		put_word(&p, header | ((uint64_t)TL_REC_F_STRINGS_INLINE << TL_REC_FLAGS_SHIFT));
		return 2;
	}
	if (phase != TL_PHASE_BEGIN || len != 3)
		return 0;
	const char *name = (const char *)(uintptr_t)rec[2];
	if (name != s->last_name) {
		/* and its words as written, when they are few: copied word by
		 * word below rather than measured and copied again */
		s->last_name = name;
		s->last_name_len = kept_length(name);
		s->last_name_nwords = 0;
		if (string_words(s->last_name_len) <= TL_SINK_NAME_WORDS) {
			unsigned char *w = (unsigned char *)s->last_name_words;
			put_string(&w, name ? name : "", s->last_name_len);
			s->last_name_nwords = string_words(s->last_name_len);
		}
	}
	size_t words = 2 + string_words(s->last_name_len);
	if (words * 8 > room)
		return 0;
	flags |= TL_REC_F_STRINGS_INLINE | TL_REC_F_NAME_INLINE;
	header = (header & ~((uint64_t)0xffff << TL_REC_WORDS_SHIFT) & ~flags_mask) |
		 ((uint64_t)words << TL_REC_WORDS_SHIFT) | ((uint64_t)flags << TL_REC_FLAGS_SHIFT);
	put_word(&p, rec[0]);
	put_word(&p, header);
	if (s->last_name_nwords)
		for (size_t i = 0; i < s->last_name_nwords; i++)
			put_word(&p, s->last_name_words[i]);
	else
		put_string(&p, name ? name : "", s->last_name_len);
	return words;
}

/*
 * A run of the commonest records, as transcode_plain writes them, in one
 * loop: plain ends, and plain begins whose kept name is the last one met
 * (its words remembered). One compare of the header, category aside,
 * tells either shape; no call, no decoding. Stops at any other record, at
 * the end of the block or when the staging buffer might not hold the next
 * record. Returns the word index where it stopped; adds the records and
 * words written to *index and *chunk_words. About a quarter of the
 * instructions of transcode_plain per record (docs/bench.md).
 */
static size_t transcode_plain_run(struct tl_snapshot_sink *s, const uint64_t *words, size_t n,
                                  size_t at, uint32_t *index, uint64_t *chunk_words)
{
	const uint64_t shape_mask = ~((uint64_t)0xffff << TL_REC_CATEGORY_SHIFT);
	const uint64_t end_shape = TL_REC_HEADER(TL_PHASE_END, 2, 0, 0, 0);
	const uint64_t begin_shape = TL_REC_HEADER(TL_PHASE_BEGIN, 3, 0, 0, 0);
	const uint64_t end_flags = (uint64_t)TL_REC_F_STRINGS_INLINE << TL_REC_FLAGS_SHIFT;
	size_t name_words = s->last_name_nwords;
	const uint64_t name = (uint64_t)(uintptr_t)s->last_name;
	const uint64_t begin_header = TL_REC_HEADER(
	    TL_PHASE_BEGIN, 2 + name_words, TL_REC_F_STRINGS_INLINE | TL_REC_F_NAME_INLINE, 0, 0);
	/* room for the largest record of the run: a begin of TL_SINK_NAME_WORDS */
	const size_t largest = 8 * (2 + TL_SINK_NAME_WORDS);
	if (s->buf_cap - s->buf_len < largest)
		return at;
	unsigned char *p = s->buf + s->buf_len;
	const unsigned char *last = s->buf + (s->buf_cap - largest);
	uint64_t written = 0;
	uint32_t records = 0;
	while (at + 2 <= n && p <= last) {
		uint64_t header = words[at + 1];
		uint64_t shape = header & shape_mask;
		if (shape == end_shape) {
			put_word(&p, words[at]);
			put_word(&p, header | end_flags);
			at += 2;
			written += 2;
		} else if (shape == begin_shape && name_words && at + 3 <= n &&
		           words[at + 2] == name) {
			put_word(&p, words[at]);
			put_word(&p, (header & ~shape_mask) | begin_header);
			for (size_t i = 0; i < name_words; i++)
				put_word(&p, s->last_name_words[i]);
			at += 3;
			written += 2 + name_words;
		} else {
			break;
		}
		records++;
	}
	s->buf_len = (size_t)(p - s->buf);
	*chunk_words += written;
	*index += records;
	return at;
}

/* ---- packed runs (a file recorder's stream) ---------------------------------------- */

/* Templates a run may have, and the slots of its lookup table. */
#define PACK_TEMPLATES 64
#define PACK_SLOTS 256
/* A run shorter than this is written record by record: its three words
 * and templates would outweigh what packing saves. */
#define PACK_MIN_RECORDS 4
/* Words a run takes at most (TL_REC_WORDS holds 16 bits). */
#define PACK_MAX_WORDS 0xffff
/* How far ahead of the record being packed the block is prefetched. */
#define PACK_PREFETCH_WORDS 512

_Static_assert(TL_PACK_TEMPLATE_MAX_WORDS == 1 + TL_SINK_NAME_WORDS,
	       "a template is a header and a name the sink remembers");
_Static_assert(PACK_TEMPLATES <= TL_PACK_TEMPLATES_MAX && PACK_TEMPLATES < PACK_SLOTS,
	       "template numbers fit in a byte; the table never fills");

/* The templates of the run being written: the record each stands for, as
 * it is in memory (header and kept name, 0 for an END), and as written. */
struct tl_pack {
	uint64_t header[PACK_TEMPLATES];
	uint64_t name[PACK_TEMPLATES];
	uint64_t words[PACK_TEMPLATES][TL_PACK_TEMPLATE_MAX_WORDS];
	uint8_t nwords[PACK_TEMPLATES];
	uint8_t slot[PACK_SLOTS]; /* template number + 1; 0: free */
	unsigned count;
	size_t total_words; /* of the templates */
};

/* The template of a plain END (name 0) or BEGIN with a kept name, added
 * when new; its number, or -1 when the run has no room for another or the
 * name is too long to be a template. */
static int pack_template(struct tl_pack *k, uint64_t header, uint64_t name)
{
	unsigned i = (unsigned)(((header ^ name) * 0x9e3779b97f4a7c15ull) >> 56);
	for (;; i = (i + 1) % PACK_SLOTS) {
		unsigned t = k->slot[i];
		if (t == 0)
			break;
		if (k->header[t - 1] == header && k->name[t - 1] == name)
			return (int)t - 1;
	}
	if (k->count == PACK_TEMPLATES)
		return -1;
	unsigned t = k->count;
	uint64_t *w = k->words[t];
	const uint64_t inline_flags = (uint64_t)TL_REC_F_STRINGS_INLINE << TL_REC_FLAGS_SHIFT;
	size_t nwords = 1;
	if (name == 0) {
		w[0] = header | inline_flags; /* as transcode_plain writes an END */
	} else {
		const char *str = (const char *)(uintptr_t)name;
		size_t len = kept_length(str);
		size_t sw = string_words(len);
		if (1 + sw > TL_PACK_TEMPLATE_MAX_WORDS)
			return -1;
		/* as transcode_plain writes a BEGIN with a kept name */
		unsigned flags = TL_REC_F_STRINGS_INLINE | TL_REC_F_NAME_INLINE;
		w[0] = (header & ~((uint64_t)0xffff << TL_REC_WORDS_SHIFT)) |
		       ((uint64_t)(2 + sw) << TL_REC_WORDS_SHIFT) |
		       ((uint64_t)flags << TL_REC_FLAGS_SHIFT);
		unsigned char *p = (unsigned char *)&w[1];
		put_string(&p, str, len);
		nwords += sw;
	}
	k->header[t] = header;
	k->name[t] = name;
	k->nwords[t] = (uint8_t)nwords;
	k->slot[i] = (uint8_t)(t + 1);
	k->count++;
	k->total_words += nwords;
	return (int)t;
}

/*
 * A packed run (snapshot_format.h) of the records from word `at` on:
 * plain ends, and plain begins with a kept name, each in timestamp order
 * after the one before. It stops at any other record, at the end of the
 * block, at a timestamp earlier than the last or 2^56 ticks after it, when
 * the templates are full or the staging buffer might not hold more.
 * Returns the word index where it stopped, or `at` with nothing written
 * when fewer than PACK_MIN_RECORDS records would be packed; adds the
 * records and words written to *index and *chunk_words.
 */
static size_t pack_run(struct tl_snapshot_sink *s, const uint64_t *words, size_t n, size_t at,
		       uint32_t *index, uint64_t *chunk_words)
{
	struct tl_pack *k = s->pack;
	const uint64_t shape_mask = ~((uint64_t)0xffff << TL_REC_CATEGORY_SHIFT);
	const uint64_t end_shape = TL_REC_HEADER(TL_PHASE_END, 2, 0, 0, 0);
	const uint64_t begin_shape = TL_REC_HEADER(TL_PHASE_BEGIN, 3, 0, 0, 0);
	size_t room = (s->buf_cap - s->buf_len) / 8;
	if (room > PACK_MAX_WORDS)
		room = PACK_MAX_WORDS;
	if (room < 3 + PACK_MIN_RECORDS + TL_PACK_TEMPLATE_MAX_WORDS || at + 2 > n)
		return at;
	memset(k->slot, 0, sizeof k->slot);
	k->count = 0;
	k->total_words = 0;
	unsigned char *base = s->buf + s->buf_len;
	unsigned char *p = base + 24;
	const size_t start = at;
	const size_t last = n - 2; /* the last word a record may start at */
	uint64_t prev = words[at];
	/* Room: a record more may be written while the run's words, with the
	 * templates so far and room for one more, fit in `room`; as a bound
	 * on p, recounted when a template is added (one compare a record). */
	const unsigned char *const packed = p;
	const intptr_t fixed = 3 + 1 + TL_PACK_TEMPLATE_MAX_WORDS;
	intptr_t limit = (intptr_t)packed + 8 * ((intptr_t)room - fixed);
	/* the templates of the last END and the last BEGIN met, kept in
	 * registers (a run's records mostly repeat them); a header is never
	 * 0, so the first record of each kind looks its template up. The two
	 * kinds are spelled out below: a helper taking a kind's state by
	 * pointer, even inlined, costs 5 instructions more a record under
	 * callgrind (the drain kernel, per event). */
	uint64_t end_header = 0, begin_header = 0, begin_name = 0;
	int end_t = -1, begin_t = -1;
	while (at <= last) {
		/* the block was written by another CPU: its lines are fetched
		 * ahead, several at once, rather than one miss at a time */
		__builtin_prefetch(&words[at + PACK_PREFETCH_WORDS]);
		uint64_t ts = words[at];
		uint64_t header = words[at + 1];
		/* in order, and within 2^56 ticks of the record before */
		uint64_t delta = ts - prev;
		if (ts < prev || delta >= ((uint64_t)1 << 56) || (intptr_t)p > limit)
			break;
		uint64_t shape = header & shape_mask;
		int t;
		if (shape == end_shape) {
			if (header != end_header) {
				if ((t = pack_template(k, header, 0)) < 0)
					break;
				end_t = t;
				end_header = header;
				limit = (intptr_t)packed +
				        8 * ((intptr_t)room - fixed - (intptr_t)k->total_words);
			}
			t = end_t;
			at += 2;
		} else if (shape == begin_shape && at + 3 <= n && words[at + 2] != 0) {
			uint64_t name = words[at + 2];
			if (header != begin_header || name != begin_name) {
				if ((t = pack_template(k, header, name)) < 0)
					break;
				begin_t = t;
				begin_header = header;
				begin_name = name;
				limit = (intptr_t)packed +
				        8 * ((intptr_t)room - fixed - (intptr_t)k->total_words);
			}
			t = begin_t;
			at += 3;
		} else {
			break;
		}
		put_word(&p, ((uint64_t)(t + 1) << 56) | delta);
		prev = ts;
	}
	uint32_t records = (uint32_t)((size_t)(p - packed) / 8);
	if (records < PACK_MIN_RECORDS)
		return start;
	for (unsigned t = 0; t < k->count; t++)
		for (unsigned i = 0; i < k->nwords[t]; i++)
			put_word(&p, k->words[t][i]);
	size_t total = (size_t)(p - base) / 8;
	unsigned char *h = base;
	put_word(&h, words[start]);
	put_word(&h, TL_REC_HEADER(TL_REC_PHASE_PACKED, total, TL_REC_F_STRINGS_INLINE, 0, 0));
	put_word(&h, (uint64_t)k->count << 32 | records);
	s->buf_len += total * 8;
	*chunk_words += total;
	*index += records;
	return at;
}

struct block_chunk {
	size_t header_at; /* offset of the chunk header in the staging buffer */
	uint64_t words;
	uint32_t type; /* TL_CHUNK_BLOCK, or TL_CHUNK_NESTED_BLOCK */
};

static void block_chunk_begin(struct tl_snapshot_sink *s, struct block_chunk *c, uint32_t tid,
			      uint32_t first, uint64_t seq)
{
	if (sink_room(s, 16 + 24))
		return;
	c->header_at = s->buf_len;
	c->words = 0;
	chunk_begin(s, c->type, 0); /* payload size patched at the end */
	sink_u32(s, tid);
	sink_u32(s, first);
	sink_u64(s, seq);
	sink_u64(s, 0);
}

static void block_chunk_end(struct tl_snapshot_sink *s, struct block_chunk *c)
{
	if (s->error)
		return;
	uint64_t payload = 24 + c->words * 8;
	memcpy(s->buf + c->header_at + 8, &payload, 8);
	memcpy(s->buf + c->header_at + 16 + 16, &c->words, 8);
}

/* Copies a block's published records; returns their word count, or -1 when
 * the block is unused or changed hands while being copied. */
static long block_copy(const struct tl_block *b, uint64_t *out, size_t max_words, uint32_t *tid,
		       uint64_t *seq, bool *nested)
{
	uint32_t gen = atomic_load_explicit(&b->gen, memory_order_acquire);
	if (gen & 1)
		return -1;
	if (atomic_load_explicit(&b->state, memory_order_relaxed) == TL_BLOCK_FREE)
		return 0;
	*tid = atomic_load_explicit(&b->tid, memory_order_relaxed);
	*seq = atomic_load_explicit(&b->seq, memory_order_relaxed);
	*nested = atomic_load_explicit(&b->level, memory_order_relaxed) != 0;
	_Atomic uint64_t *end;
	uint64_t records;
	tl_block_extent(b, &end, &records);
	size_t n = (size_t)(end - b->data);
	if (n > max_words)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = atomic_load_explicit(&b->data[i], memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&b->gen, memory_order_relaxed) != gen)
		return -1;
	return (long)n;
}

/* Writes the records of a block copy from record `from` on (the ones
 * before were written by an earlier call); returns the records it holds. */
static uint32_t write_block(struct tl_snapshot_sink *s, const uint64_t *words, size_t n,
			    uint32_t tid, uint64_t seq, bool nested, uint32_t from)
{
	struct block_chunk chunk = {0, 0, nested ? TL_CHUNK_NESTED_BLOCK : TL_CHUNK_BLOCK};
	uint32_t index = 0;
	size_t at = 0;
	for (; index < from && at < n; index++) {
		size_t len = n - at >= 2 ? TL_REC_WORDS(words[at + 1]) : 0;
		if (len < 2 || len > n - at)
			return index;
		at += len;
	}
	if (at >= n)
		return index;
	block_chunk_begin(s, &chunk, tid, index, seq);
	while (at < n && !s->error) {
		if (s->pack)
			at = pack_run(s, words, n, at, &index, &chunk.words);
		at = transcode_plain_run(s, words, n, at, &index, &chunk.words);
		if (at >= n)
			break;
		size_t len = n - at >= 2 ? TL_REC_WORDS(words[at + 1]) : 0;
		size_t got = len >= 2 && len <= n - at
		                 ? transcode_plain(s, words + at, len, s->buf + s->buf_len,
		                                   s->buf_cap - s->buf_len)
		                 : 0;
		if (got) {
			s->buf_len += got * 8;
			chunk.words += got;
			at += len;
			index++;
			continue;
		}
		tl_record_view view;
		len = tl_record_decode(words + at, n - at, &view);
		if (len == 0)
			break; /* cannot happen for published records; stop rather than guess */
		got = transcode(&view, words[at + 1], s->buf + s->buf_len,
				s->buf_cap - s->buf_len);
		if (got == 0) {
			/* staging buffer full: close this chunk, start another */
			block_chunk_end(s, &chunk);
			if (sink_flush(s))
				return index;
			block_chunk_begin(s, &chunk, tid, index, seq);
			got = transcode(&view, words[at + 1], s->buf + s->buf_len,
					s->buf_cap - s->buf_len);
			if (got == 0) {
				s->error = -EOVERFLOW;
				return index;
			}
		}
		s->buf_len += got * 8;
		chunk.words += got;
		at += len;
		index++;
	}
	block_chunk_end(s, &chunk);
	return index;
}

static void write_blocks(struct tl_snapshot_sink *s)
{
	if (atomic_load(&tl_state) == 0 || tl_recorder_writes_through())
		return;
	const struct tl_pool *pool = tl_recorder_blocks();
	uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_acquire);
	for (uint32_t i = 0; i < tl_pool_visible(pool, handed) && !s->error; i++) {
		uint32_t tid = 0;
		uint64_t seq = 0;
		bool nested = false;
		long n = block_copy(tl_pool_visible_block(pool, handed, i), s->scratch,
				    s->scratch_words, &tid, &seq, &nested);
		if (n < 0) {
			atomic_fetch_add_explicit(&tl_blocks_torn, 1, memory_order_relaxed);
			continue;
		}
		if (n > 0)
			write_block(s, s->scratch, (size_t)n, tid, seq, nested, 0);
	}
}

/* ---- functions and mappings ---------------------------------------------------- */

#define FUNCTIONS_PER_CHUNK 256

/* The function table, in chunks of up to FUNCTIONS_PER_CHUNK entries; with
 * `written` (a bit per entry), only the entries not written yet, which it
 * then marks. */
static void write_functions(struct tl_snapshot_sink *s, uint64_t *written)
{
	struct {
		uint32_t id;
		uintptr_t address;
	} batch[FUNCTIONS_PER_CHUNK];
	uint32_t n = 0;
	for (uint32_t id = 0; id <= TL_FUNCTION_TABLE_CAPACITY && !s->error; id++) {
		uintptr_t address = id < TL_FUNCTION_TABLE_CAPACITY ? tl_function_address(id) : 0;
		if (address && written) {
			uint64_t bit = (uint64_t)1 << (id % 64);
			if (written[id / 64] & bit)
				address = 0;
			else
				written[id / 64] |= bit;
		}
		if (address) {
			batch[n].id = id;
			batch[n++].address = address;
		}
		if (n == FUNCTIONS_PER_CHUNK || (id == TL_FUNCTION_TABLE_CAPACITY && n)) {
			chunk_begin(s, TL_CHUNK_FUNCTIONS, 8 + 16 * (uint64_t)n);
			sink_u32(s, n);
			sink_u32(s, 0);
			for (uint32_t i = 0; i < n; i++) {
				sink_u32(s, batch[i].id);
				sink_u32(s, 0);
				sink_u64(s, batch[i].address);
			}
			n = 0;
		}
	}
}

/* Parses hexadecimal digits at *p up to a character not one; returns the value. */
static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;
	for (; *p < end; (*p)++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
		             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
		                                    : 16u;
		if (d == 16)
			break;
		v = v * 16 + d;
	}
	return v;
}

#define BUILD_ID_MAX 64

/*
 * The NT_GNU_BUILD_ID note of the ELF file mapped at [start, end) from
 * file offset 0 (its headers; readable): its note segments, read in
 * memory, bounds-checked against the mapping. Returns the id's length, 0
 * when there is none.
 */
static size_t read_build_id(uintptr_t start, uintptr_t end, unsigned char *out)
{
	size_t size = end - start;
	const unsigned char *base = (const unsigned char *)start;
	Elf64_Ehdr eh;
	if (size < sizeof eh)
		return 0;
	memcpy(&eh, base, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, base + eh.e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type != PT_NOTE || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		size_t at = ph.p_offset, stop = ph.p_offset + ph.p_filesz;
		while (stop - at >= sizeof(Elf64_Nhdr)) {
			Elf64_Nhdr nh;
			memcpy(&nh, base + at, sizeof nh);
			at += sizeof nh;
			size_t name_bytes = (nh.n_namesz + 3u) & ~(size_t)3;
			size_t desc_bytes = (nh.n_descsz + 3u) & ~(size_t)3;
			if (name_bytes > stop - at || desc_bytes > stop - at - name_bytes)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp(base + at, "GNU", 4) == 0 && nh.n_descsz <= BUILD_ID_MAX) {
				memcpy(out, base + at + name_bytes, nh.n_descsz);
				return nh.n_descsz;
			}
			at += name_bytes + desc_bytes;
		}
	}
	return 0;
}

/* A line of /proc/self/maps: one MAPPING chunk when it is executable.
 * headers: the last file mapped from offset 0 with read permission, whose
 * build-id an executable mapping of the same file takes. */
struct maps_headers {
	char path[256];
	size_t path_len;
	uintptr_t start, end;
};

static void write_mapping_line(struct tl_snapshot_sink *s, const char *line, size_t len,
                               struct maps_headers *headers)
{
	const char *p = line, *end = line + len;
	uint64_t start = parse_hex(&p, end);
	if (p == end || *p++ != '-')
		return;
	uint64_t stop = parse_hex(&p, end);
	if (end - p < 6 || *p++ != ' ')
		return;
	char perms[4];
	memcpy(perms, p, 4);
	p += 4;
	if (p == end || *p++ != ' ')
		return;
	uint64_t offset = parse_hex(&p, end);
	/* device and inode, then blanks, then the path */
	for (int field = 0; field < 2; field++) {
		while (p < end && *p == ' ')
			p++;
		while (p < end && *p != ' ')
			p++;
	}
	while (p < end && *p == ' ')
		p++;
	const char *path = p;
	size_t path_len = (size_t)(end - p);
	if (offset == 0 && perms[0] == 'r' && path_len && path_len <= sizeof headers->path) {
		memcpy(headers->path, path, path_len);
		headers->path_len = path_len;
		headers->start = (uintptr_t)start;
		headers->end = (uintptr_t)stop;
	}
	if (perms[2] != 'x')
		return;
	unsigned char build_id[BUILD_ID_MAX];
	size_t build_id_len = 0;
	if (path_len && path[0] == '/' && headers->path_len == path_len &&
	    memcmp(headers->path, path, path_len) == 0)
		build_id_len = read_build_id(headers->start, headers->end, build_id);
	uint64_t payload = 32 + path_len + build_id_len;
	chunk_begin(s, TL_CHUNK_MAPPING, payload);
	sink_u64(s, start);
	sink_u64(s, stop);
	sink_u64(s, offset);
	sink_u32(s, (uint32_t)path_len);
	sink_u32(s, (uint32_t)build_id_len);
	sink_bytes(s, path, path_len);
	sink_bytes(s, build_id, build_id_len);
	sink_pad8(s, payload);
}

#define MAPS_LINE_MAX 640

/* The executable mappings, from /proc/self/maps read with open/read. A
 * line longer than MAPS_LINE_MAX has its path cut. */
static void write_mappings(struct tl_snapshot_sink *s)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[1024], line[MAPS_LINE_MAX];
	size_t len = 0;
	struct maps_headers headers = {.path_len = 0};
	for (;;) {
		ssize_t got = read(fd, buf, sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got && !s->error; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof line)
					line[len++] = buf[i];
				continue;
			}
			write_mapping_line(s, line, len, &headers);
			len = 0;
		}
	}
	close(fd);
}

int tl_snapshot_write(struct tl_snapshot_sink *s)
{
	write_header(s);
	write_process(s);
	size_t npairs;
	write_clock(s, 0, &npairs);
	write_categories(s);
	write_threads(s);
	write_blocks(s);
	write_functions(s, NULL); /* after the blocks: names every function they hold */
	write_mappings(s);
	write_stats(s); /* after the blocks: counts what they lost meanwhile */
	chunk_begin(s, TL_CHUNK_END, 0);
	sink_flush(s);
	return s->error;
}

/* ---- the public entry points ----------------------------------------------------- */

static unsigned char signal_staging[STAGING_BYTES];
static uint64_t signal_scratch[TL_BLOCK_MAX_BYTES / 8];
static atomic_flag signal_busy = ATOMIC_FLAG_INIT;

int tl_snapshot_binary_fd(int fd)
{
	int saved_errno = errno;
	int rc;
	if (atomic_load(&tl_state) == 0 || tl_recorder_writes_through()) {
		rc = -ENODEV;
	} else if (atomic_flag_test_and_set_explicit(&signal_busy, memory_order_acquire)) {
		rc = -EBUSY;
	} else {
		struct tl_snapshot_sink sink = {
			.fd = fd,
			.buf = signal_staging,
			.buf_cap = sizeof signal_staging,
			.scratch = signal_scratch,
			.scratch_words = sizeof signal_scratch / sizeof signal_scratch[0],
		};
		rc = tl_snapshot_write(&sink);
		atomic_flag_clear_explicit(&signal_busy, memory_order_release);
	}
	errno = saved_errno;
	return rc;
}

void tl_snapshot_after_fork_child(void)
{
	atomic_flag_clear(&signal_busy);
}

static int write_binary_to_fd(int fd, void *ctx)
{
	(void)ctx;
	return tl_snapshot_binary_fd(fd);
}

int tl_snapshot_binary(const char *path)
{
	if (!path)
		return -EINVAL;
	if (atomic_load(&tl_state) == 0 || tl_recorder_writes_through())
		return -ENODEV; /* before any file is created */
	return tl_atomic_file_write(path, write_binary_to_fd, NULL);
}

int tl_snapshot_to_memory(unsigned char **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	if (atomic_load(&tl_state) == 0 || tl_recorder_writes_through())
		return -ENODEV;
	struct tl_snapshot_sink sink = {.fd = -1};
	sink.buf = malloc(STAGING_BYTES);
	sink.buf_cap = STAGING_BYTES;
	sink.scratch_words = TL_BLOCK_MAX_BYTES / 8;
	sink.scratch = malloc(TL_BLOCK_MAX_BYTES);
	int rc = (sink.buf && sink.scratch) ? tl_snapshot_write(&sink) : -ENOMEM;
	free(sink.buf);
	free(sink.scratch);
	if (rc) {
		free(sink.mem);
		return rc;
	}
	*data = sink.mem;
	*len = sink.mem_len;
	return 0;
}

/* ---- the stream (a file recorder) ------------------------------------------------ */

/* A stream takes a calibration pair at most every second, but its second
 * one 10 ms after the first: until a file holds two pairs, its TSC ticks
 * have no rate to be converted with. */
#define STREAM_CALIBRATION_NS 1000000000
#define STREAM_FIRST_CALIBRATION_NS 10000000

int tl_stream_open(struct tl_stream *st, int fd, int (*write_out)(struct tl_snapshot_sink *),
                   size_t staging_bytes)
{
	memset(st, 0, sizeof *st);
	st->sink.fd = fd;
	st->sink.write_out = write_out;
	st->sink.buf_cap = staging_bytes ? staging_bytes : STAGING_BYTES;
	st->sink.buf = aligned_alloc(TL_STREAM_ALIGN, st->sink.buf_cap);
	st->sink.scratch_words = TL_BLOCK_MAX_BYTES / 8;
	st->sink.scratch = malloc(TL_BLOCK_MAX_BYTES);
	st->sink.pack = malloc(sizeof *st->sink.pack);
	if (!st->sink.buf || !st->sink.scratch || !st->sink.pack)
		return st->sink.error = -ENOMEM;
	write_header(&st->sink);
	write_process(&st->sink);
	write_mappings(&st->sink);
	return tl_stream_metadata(st);
}

void tl_stream_padding(void *at, size_t bytes)
{
	uint32_t head[4] = {TL_CHUNK_PADDING, 0, 0, 0};
	uint64_t payload = bytes - TL_STREAM_PADDING_MIN;
	memcpy(&head[2], &payload, 8);
	memset(at, 0, bytes);
	memcpy(at, head, sizeof head);
}

/* A CLOCK chunk when calibration pairs were added since the last one (a
 * pair is taken when the last is min_interval_ns old). */
static void stream_clock(struct tl_stream *st, int64_t min_interval_ns)
{
	tl_clock_pair pairs[TL_CLOCK_PAIRS];
	tl_clock_calibrate(1, min_interval_ns);
	size_t n = tl_clock_is_tsc() ? tl_clock_pairs(pairs, TL_CLOCK_PAIRS) : 0;
	uint64_t last = n ? pairs[n - 1].ticks : 0;
	if (st->clock_written && n == st->clock_pairs && last == st->clock_last_ticks)
		return;
	size_t written;
	st->clock_last_ticks = write_clock(&st->sink, min_interval_ns, &written);
	st->clock_pairs = (uint32_t)written;
	st->clock_written = 1;
}

/* A THREAD chunk for the thread of slot i (row 0) if it is new or renamed
 * since the last one. */
static void stream_thread(struct tl_stream *st, size_t i)
{
	char name[TL_NAME_MAX];
	struct tl_slot *slot = &tl_slots[i];
	uint32_t tid = atomic_load_explicit(&slot->tid, memory_order_acquire);
	uint32_t seq = atomic_load_explicit(&slot->name_seq, memory_order_acquire);
	if (tid == 0 || (tid == st->thread_tid[i] && seq == st->thread_seq[i]))
		return;
	size_t len = tl_slot_read_name(slot, name, sizeof name);
	chunk_u32_string(&st->sink, TL_CHUNK_THREAD, tid, name, len);
	st->thread_tid[i] = tid;
	st->thread_seq[i] = seq;
}

/* The slots in use only: a drain that writes its metadata every few
 * milliseconds reads a few cache lines, not the whole table's. */
static void stream_threads(struct tl_stream *st)
{
	uint32_t used = tl_threads_slots_used();
	for (size_t i = 0; i < used; i++)
		stream_thread(st, i);
}

/* The function table's entries not written yet, when there are any. */
static void stream_functions(struct tl_stream *st)
{
	uint32_t count = atomic_load_explicit(&tl_function_count, memory_order_acquire);
	if (count == st->functions_seen)
		return;
	write_functions(&st->sink, st->functions_written);
	st->functions_seen = count;
}

static void stream_drops(struct tl_stream *st)
{
	uint32_t changed = 0, used = tl_threads_slots_used();
	uint64_t drops[TL_MAX_THREADS];
	for (size_t i = 0; i < used; i++) {
		drops[i] = 0;
		for (unsigned level = 0; level < TL_NEST_LEVELS; level++)
			drops[i] += atomic_load_explicit(&tl_slot_nested(&tl_slots[i], level)->dropped,
							 memory_order_relaxed);
		changed += drops[i] != st->thread_drops[i];
	}
	if (!changed)
		return;
	chunk_begin(&st->sink, TL_CHUNK_THREAD_DROPS, 8 + 16 * (uint64_t)changed);
	sink_u32(&st->sink, changed);
	sink_u32(&st->sink, 0);
	for (size_t i = 0; i < used; i++) {
		if (drops[i] == st->thread_drops[i])
			continue;
		sink_u32(&st->sink, atomic_load_explicit(&tl_slots[i].tid, memory_order_relaxed));
		sink_u32(&st->sink, 0);
		sink_u64(&st->sink, drops[i]);
		st->thread_drops[i] = drops[i];
	}
}

int tl_stream_metadata(struct tl_stream *st)
{
	stream_clock(st, st->clock_pairs < 2 ? STREAM_FIRST_CALIBRATION_NS : STREAM_CALIBRATION_NS);
	uint32_t n = tl_category_count();
	for (; st->categories < n; st->categories++) {
		const char *name = tl_category_name(st->categories);
		chunk_u32_string(&st->sink, TL_CHUNK_CATEGORY, st->categories, name, strlen(name));
	}
	stream_threads(st);
	stream_drops(st);
	stream_functions(st);
	sink_flush(&st->sink);
	st->bytes = st->sink.written;
	return st->sink.error;
}

int tl_stream_block(struct tl_stream *st, const struct tl_block *b, uint32_t *from, int settled)
{
	uint32_t tid = 0;
	uint64_t seq = 0;
	bool nested = false;
	const uint64_t *words = st->sink.scratch;
	long n;
	if (settled) {
		/* retired and not handed out again until the caller lets go:
		 * read in place */
		tid = atomic_load_explicit(&b->tid, memory_order_relaxed);
		seq = atomic_load_explicit(&b->seq, memory_order_relaxed);
		nested = atomic_load_explicit(&b->level, memory_order_relaxed) != 0;
		n = atomic_load_explicit(&b->cur, memory_order_acquire) - b->data;
		words = (const uint64_t *)(const void *)b->data;
	} else {
		n = block_copy(b, st->sink.scratch, st->sink.scratch_words, &tid, &seq, &nested);
	}
	if (n < 0)
		return -EAGAIN;
	if (n > 0) {
		/* the block's thread named before its records, however seldom
		 * the caller writes the metadata */
		uint32_t owner = atomic_load_explicit(&b->owner, memory_order_relaxed);
		size_t row = owner % TL_MAX_THREADS;
		if (tid != st->thread_tid[row])
			stream_thread(st, row);
		uint32_t before = *from;
		*from = write_block(&st->sink, words, (size_t)n, tid, seq, nested, *from);
		if (*from > before)
			st->records += *from - before;
		stream_functions(st); /* the functions the block names, if new */
	}
	sink_flush(&st->sink);
	st->bytes = st->sink.written;
	return st->sink.error;
}

int tl_stream_close(struct tl_stream *st, int end, uint64_t records, uint64_t lost)
{
	if (end && !st->sink.error) {
		/* a pair taken now, as a snapshot takes one: the file's last
		 * events are converted by interpolation, not extrapolation */
		stream_clock(st, 0);
		stream_drops(st);
		/* libraries loaded since the start */
		write_mappings(&st->sink);
		tl_stats stats;
		memset(&stats, 0, sizeof stats);
		stats.struct_size = sizeof stats;
		tl_stats_collect(&stats); /* the session has ended: the counters only */
		stats.recorder = "file";
		stats.events_written = records;
		stats.events_dropped += lost;
		write_stats_values(&st->sink, &stats);
		chunk_begin(&st->sink, TL_CHUNK_END, 0);
		sink_flush(&st->sink);
	}
	int rc = st->sink.error;
	free(st->sink.buf);
	free(st->sink.scratch);
	free(st->sink.pack);
	st->sink.buf = NULL;
	st->sink.scratch = NULL;
	st->sink.pack = NULL;
	st->bytes = st->sink.written;
	return rc;
}
