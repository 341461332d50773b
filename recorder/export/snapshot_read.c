/*
 * Reading a binary snapshot in place (snapshot_read.h): one walk over the
 * chunks for the metadata and the blocks, then cursors over each thread's
 * blocks that decode its events as they are asked for.
 */
#include "recorder/export/snapshot_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recorder/record.h"
#include "recorder/snapshot_format.h"

#define TL_CHUNK_HEADER_BYTES 16
#define TL_BLOCK_HEADER_BYTES 24
#define TL_CATEGORY_INDEX_MAX 0xffffu /* a record's category field is 16 bits */

/* ---- errors --------------------------------------------------------------- */

static void set_message(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_message(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#define FAIL(r, rc, ...) (set_message((r)->err, (r)->errlen, __VA_ARGS__), (rc))
#define NO_MEMORY(r) FAIL(r, -ENOMEM, "out of memory")

/* ---- little-endian input -------------------------------------------------- */

static uint32_t load_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_u64(const uint8_t *p)
{
	return (uint64_t)load_u32(p) | (uint64_t)load_u32(p + 4) << 32;
}

/* A bounded cursor over one chunk's payload. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static int take_u32(struct cursor *c, uint32_t *v)
{
	if (c->left < 4)
		return 0;
	*v = load_u32(c->p);
	c->p += 4;
	c->left -= 4;
	return 1;
}

static int take_u64(struct cursor *c, uint64_t *v)
{
	if (c->left < 8)
		return 0;
	*v = load_u64(c->p);
	c->p += 8;
	c->left -= 8;
	return 1;
}

static int take_i64(struct cursor *c, int64_t *v)
{
	uint64_t u;
	if (!take_u64(c, &u))
		return 0;
	memcpy(v, &u, sizeof *v);
	return 1;
}

/* A string: u32 length, then the bytes. */
static int take_string(struct cursor *c, const char **s, size_t *len)
{
	uint32_t n;
	if (!take_u32(c, &n) || n > c->left)
		return 0;
	*s = (const char *)c->p;
	*len = n;
	c->p += n;
	c->left -= n;
	return 1;
}

/* ---- clock ---------------------------------------------------------------- */

/*
 * A record timestamp (or COMPLETE end) in ns of the trace clock, the way
 * tl_clock_ticks_to_ns() converts it in the recording process: no pair,
 * the value as is; one pair, an offset from it; else the segment of the
 * two nearest pairs, the first or last two outside their range.
 */
int64_t tl_snapshot_read_ns(const tl_snapshot_read *r, unsigned rec_flags, uint64_t ts)
{
	if (rec_flags & TL_REC_F_TS_NS)
		return tl_clock_ticks_to_ns(NULL, 0, ts);
	return tl_clock_ticks_to_ns(r->pairs, r->npairs, ts);
}

/* ---- metadata chunks ------------------------------------------------------ */

static int read_process(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint32_t pid;
	const char *name;
	size_t len;
	if (!take_u32(c, &pid) || !take_string(c, &name, &len))
		return FAIL(r, -EINVAL, "corrupt PROCESS chunk at offset %zu", offset);
	r->model->pid = pid;
	r->model->process_name = tl_model_intern(r->model, name, len);
	return r->model->process_name ? 0 : NO_MEMORY(r);
}

static int read_clock(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	tl_model *m = r->model;
	uint32_t clock_id, ticks, npairs, reserved;
	uint64_t snapshot_ts;
	if (!take_u32(c, &clock_id) || !take_u32(c, &ticks) || !take_u32(c, &npairs) ||
	    !take_u32(c, &reserved) || !take_i64(c, &m->boottime_ns) ||
	    !take_i64(c, &m->monotonic_ns) || !take_i64(c, &m->realtime_ns) ||
	    !take_u64(c, &snapshot_ts) || npairs > c->left / 16)
		return FAIL(r, -EINVAL, "corrupt CLOCK chunk at offset %zu", offset);
	m->clock_id = (int)clock_id;

	free(r->pairs);
	r->pairs = NULL;
	r->npairs = 0;
	if (ticks && npairs) {
		r->pairs = malloc(npairs * sizeof *r->pairs);
		if (!r->pairs)
			return NO_MEMORY(r);
		for (uint32_t i = 0; i < npairs; i++) {
			take_u64(c, &r->pairs[i].ticks);
			take_i64(c, &r->pairs[i].ns);
			if (i > 0 && r->pairs[i].ticks < r->pairs[i - 1].ticks)
				return FAIL(r, -EINVAL,
				            "corrupt CLOCK chunk at offset %zu: calibration pairs "
				            "not in increasing tick order",
				            offset);
		}
		r->npairs = npairs;
	}
	m->snapshot_ns = tl_snapshot_read_ns(r, 0, snapshot_ts);
	return 0;
}

static int read_stats(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	tl_stats *s = &r->model->stats;
	uint64_t *fields[] = {
	    &s->events_written, &s->events_overwritten, &s->events_dropped, &s->strings_truncated,
	    &s->args_dropped,   &s->unmatched_begin,    &s->unmatched_end,  &s->blocks_torn,
	    &s->buffer_bytes,   &s->buffer_bytes_used,
	};
	const size_t nfields = sizeof fields / sizeof fields[0];
	uint32_t count, reserved;
	if (!take_u32(c, &count) || !take_u32(c, &reserved) || count > c->left / 8)
		return FAIL(r, -EINVAL, "corrupt STATS chunk at offset %zu", offset);
	for (uint32_t i = 0; i < count; i++) {
		uint64_t v = 0;
		take_u64(c, &v);
		if (i < nfields)
			*fields[i] = v;
		else if (i == nfields)
			s->threads = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		else if (i == nfields + 1)
			s->categories = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	}
	const char *name;
	size_t len;
	if (!take_string(c, &name, &len))
		return FAIL(r, -EINVAL, "corrupt STATS chunk at offset %zu", offset);
	const char *recorder = tl_model_intern(r->model, name, len);
	if (!recorder)
		return NO_MEMORY(r);
	r->model->recorder = recorder;
	s->recorder = recorder;
	return 0;
}

static int read_category(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint32_t index;
	const char *name;
	size_t len;
	if (!take_u32(c, &index) || !take_string(c, &name, &len))
		return FAIL(r, -EINVAL, "corrupt CATEGORY chunk at offset %zu", offset);
	if (index > TL_CATEGORY_INDEX_MAX)
		return 0; /* no record can refer to it */
	if (index >= r->ncategories) {
		size_t n = (size_t)index + 1;
		const char **grown = realloc(r->categories, n * sizeof *grown);
		if (!grown)
			return NO_MEMORY(r);
		memset(grown + r->ncategories, 0, (n - r->ncategories) * sizeof *grown);
		r->categories = grown;
		r->ncategories = n;
	}
	r->categories[index] = tl_model_intern(r->model, name, len);
	return r->categories[index] ? 0 : NO_MEMORY(r);
}

static int read_thread(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint32_t tid;
	const char *name;
	size_t len;
	if (!take_u32(c, &tid) || !take_string(c, &name, &len))
		return FAIL(r, -EINVAL, "corrupt THREAD chunk at offset %zu", offset);
	return tl_model_thread_set(r->model, tid, name, len) < 0 ? NO_MEMORY(r) : 0;
}

static int read_thread_drops(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint32_t count, reserved;
	if (!take_u32(c, &count) || !take_u32(c, &reserved) || count > c->left / 16)
		return FAIL(r, -EINVAL, "corrupt THREAD_DROPS chunk at offset %zu", offset);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t tid = 0;
		uint64_t dropped = 0;
		take_u32(c, &tid);
		take_u32(c, &reserved);
		take_u64(c, &dropped);
		if (r->ndrops == r->drops_cap) {
			size_t cap = r->drops_cap ? 2 * r->drops_cap : 64;
			struct tl_snapshot_drops *grown = realloc(r->drops, cap * sizeof *grown);
			if (!grown)
				return NO_MEMORY(r);
			r->drops = grown;
			r->drops_cap = cap;
		}
		int added;
		uint64_t *at = tl_id_map_add(&r->drops_by_tid, tid, r->ndrops, &added);
		if (!at)
			return NO_MEMORY(r);
		size_t k = (size_t)*at;
		if (added)
			r->drops[r->ndrops++] = (struct tl_snapshot_drops){tid, 0};
		r->thread_drops_total += dropped - r->drops[k].dropped;
		r->drops[k].dropped = dropped;
	}
	return 0;
}

static int read_functions(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint32_t count, reserved;
	if (!take_u32(c, &count) || !take_u32(c, &reserved) || count > c->left / 16)
		return FAIL(r, -EINVAL, "corrupt FUNCTIONS chunk at offset %zu", offset);
	if (r->nfunctions + count > r->functions_cap) {
		size_t cap = r->functions_cap ? r->functions_cap : 256;
		while (cap < r->nfunctions + count)
			cap *= 2;
		struct tl_snapshot_function *grown = realloc(r->functions, cap * sizeof *grown);
		if (!grown)
			return NO_MEMORY(r);
		r->functions = grown;
		r->functions_cap = cap;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint32_t id = 0;
		uint64_t address = 0;
		if (!take_u32(c, &id) || !take_u32(c, &reserved) || !take_u64(c, &address))
			return FAIL(r, -EINVAL, "corrupt FUNCTIONS chunk at offset %zu", offset);
		r->functions[r->nfunctions++] = (struct tl_snapshot_function){id, address, NULL};
	}
	return 0;
}

static int read_mapping(tl_snapshot_read *r, struct cursor *c, size_t offset)
{
	uint64_t start, end, file_offset;
	uint32_t path_len, build_id_len;
	if (!take_u64(c, &start) || !take_u64(c, &end) || !take_u64(c, &file_offset) ||
	    !take_u32(c, &path_len) || !take_u32(c, &build_id_len) || path_len > c->left ||
	    build_id_len > c->left - path_len)
		return FAIL(r, -EINVAL, "corrupt MAPPING chunk at offset %zu", offset);
	tl_mapping *grown = realloc(r->mappings, (r->nmappings + 1) * sizeof *grown);
	if (!grown)
		return NO_MEMORY(r);
	r->mappings = grown;
	const char *path = tl_model_intern(r->model, (const char *)c->p, path_len);
	if (!path)
		return NO_MEMORY(r);
	r->mappings[r->nmappings++] =
	    (tl_mapping){start, end, file_offset, path, path_len, c->p + path_len, build_id_len};
	return 0;
}

static int by_function_id(const void *pa, const void *pb)
{
	const struct tl_snapshot_function *a = pa, *b = pb;
	return a->id < b->id ? -1 : a->id > b->id;
}

const char *tl_snapshot_read_function(tl_snapshot_read *r, uint32_t id)
{
	struct tl_snapshot_function key = {.id = id};
	struct tl_snapshot_function *f =
	    r->nfunctions
	        ? bsearch(&key, r->functions, r->nfunctions, sizeof key, by_function_id)
	        : NULL;
	char name[512];
	if (!f) {
		int n = snprintf(name, sizeof name, "function#%u", id);
		return tl_model_intern(r->model, name, (size_t)n);
	}
	if (f->name)
		return f->name;
	if (!r->symbolizer_made) {
		r->symbolizer = tl_symbolizer_new(r->symbols);
		r->symbolizer_made = 1;
	}
	size_t n = tl_function_name(r->symbolizer, r->mappings, r->nmappings, f->address, name,
	                            sizeof name);
	f->name = tl_model_intern(r->model, name, (size_t)n);
	return f->name;
}

/* ---- packed runs ------------------------------------------------------------ */

/*
 * The words the packed run rec[0, len) stands for (snapshot_format.h), or
 * 0 when it is not one that holds together: its counts, its templates'
 * lengths and every record's template number are checked here; the
 * records it gives are decoded later like any other.
 */
static size_t unpacked_words(const uint64_t *rec, size_t len, size_t tmpl_at[],
			     size_t tmpl_words[])
{
	if (len < 3)
		return 0;
	uint64_t records = rec[2] & 0xffffffffu, templates = rec[2] >> 32;
	if (templates > TL_PACK_TEMPLATES_MAX || records > len - 3)
		return 0;
	size_t pos = 3 + (size_t)records;
	for (size_t t = 0; t < templates; t++) {
		if (pos >= len)
			return 0;
		size_t words = TL_REC_WORDS(rec[pos]);
		if (words < 2 || words - 1 > TL_PACK_TEMPLATE_MAX_WORDS || words - 1 > len - pos)
			return 0;
		tmpl_at[t] = pos;
		tmpl_words[t] = words - 1;
		pos += words - 1;
	}
	if (pos != len)
		return 0;
	size_t total = 0;
	for (size_t i = 0; i < records; i++) {
		uint64_t t = rec[3 + i] >> 56;
		if (t == 0 || t > templates)
			return 0;
		total += 1 + tmpl_words[t - 1];
	}
	return total;
}

/*
 * The words the records of block b's input take once its packed runs are
 * unpacked, and how many of its input words hold together as records
 * (runs whose counts and templates are consistent: a run that does not,
 * and what follows it, are kept as they are, and decoding stops there, as
 * at any record that does not decode). Sets *packed when it has a run.
 */
static size_t unpacked_size(const uint64_t *w, size_t n, size_t *whole, int *packed)
{
	size_t tmpl_at[TL_PACK_TEMPLATES_MAX], tmpl_words[TL_PACK_TEMPLATES_MAX];
	size_t total = 0, pos = 0;
	*packed = 0;
	while (n - pos >= 2) {
		size_t len = TL_REC_WORDS(w[pos + 1]);
		if (len < 2 || len > n - pos)
			break;
		int run = TL_REC_PHASE(w[pos + 1]) == TL_REC_PHASE_PACKED;
		size_t words = run ? unpacked_words(w + pos, len, tmpl_at, tmpl_words) : len;
		if (words == 0)
			break;
		*packed |= run;
		total += words;
		pos += len;
	}
	*whole = pos;
	return total + (n - pos); /* the rest, as it is */
}

/*
 * Notes whether block b holds packed runs: it then keeps its input words
 * apart, and its words are the records they stand for (the words a
 * snapshot would have written), unpacked when a walk enters it, or, for a
 * handler block, when its thread is prepared (block_unpack).
 */
static void note_packed(tl_snapshot_read *r, tl_snapshot_block *b)
{
	size_t whole;
	int packed;
	size_t total = unpacked_size(b->words, b->nwords, &whole, &packed);
	if (!packed)
		return;
	r->has_packed = 1;
	b->packed = b->words;
	b->packed_nwords = b->nwords;
	b->words = NULL;
	b->nwords = total;
}

/* The thread whose blocks hold block index i (threads are in block
 * order), NULL before the threads are known. */
static tl_snapshot_thread *thread_of_block(tl_snapshot_read *r, size_t i)
{
	size_t lo = 0, hi = r->nthreads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->threads[mid].first_block <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &r->threads[lo - 1] : NULL;
}

/* Unpacks block b's records, when it has packed runs not unpacked yet.
 * 0 or -ENOMEM. */
static int block_unpack(tl_snapshot_read *r, tl_snapshot_block *b)
{
	if (!b->packed || b->words)
		return 0;
	size_t tmpl_at[TL_PACK_TEMPLATES_MAX], tmpl_words[TL_PACK_TEMPLATES_MAX];
	const uint64_t *w = b->packed;
	size_t n = b->packed_nwords, pos;
	int packed;
	size_t total = unpacked_size(w, n, &pos, &packed);
	uint64_t *out = malloc((total ? total : 1) * sizeof *out);
	if (!out)
		return NO_MEMORY(r);
	size_t o = 0;
	for (size_t at = 0; at < pos;) {
		size_t len = TL_REC_WORDS(w[at + 1]);
		if (TL_REC_PHASE(w[at + 1]) != TL_REC_PHASE_PACKED) {
			memcpy(out + o, w + at, len * sizeof *out);
			o += len;
			at += len;
			continue;
		}
		unpacked_words(w + at, len, tmpl_at, tmpl_words);
		size_t records = (size_t)(w[at + 2] & 0xffffffffu);
		uint64_t ts = w[at];
		for (size_t i = 0; i < records; i++) {
			uint64_t word = w[at + 3 + i];
			size_t t = (size_t)(word >> 56) - 1;
			ts += word & (((uint64_t)1 << 56) - 1);
			out[o++] = ts;
			memcpy(out + o, w + at + tmpl_at[t], tmpl_words[t] * sizeof *out);
			o += tmpl_words[t];
		}
		at += len;
	}
	memcpy(out + o, w + pos, (n - pos) * sizeof *out);
	b->unpacked = out;
	b->words = out;
	tl_snapshot_thread *t = thread_of_block(r, (size_t)(b - r->blocks));
	if (t && (size_t)(b - r->blocks) < t->trim_from)
		t->trim_from = (size_t)(b - r->blocks);
	r->unpacked_held += b->nwords;
	if (r->unpacked_held > r->unpacked_peak)
		r->unpacked_peak = r->unpacked_held;
	return 0;
}

/* Frees block b's unpacked records, if any. */
static void block_unload(tl_snapshot_read *r, tl_snapshot_block *b)
{
	if (!b->packed || !b->unpacked)
		return;
	free(b->unpacked);
	r->unpacked_held -= b->nwords;
	b->unpacked = NULL;
	b->words = NULL;
}

/* Notes a block. cut: the input ends inside it. */
static int note_block(tl_snapshot_read *r, struct cursor *c, size_t offset, int cut, int nested)
{
	uint32_t tid, reserved;
	uint64_t seq, nwords;
	if (!take_u32(c, &tid) || !take_u32(c, &reserved) || !take_u64(c, &seq) ||
	    !take_u64(c, &nwords)) {
		if (cut)
			return 0;
		return FAIL(r, -EINVAL, "corrupt BLOCK chunk at offset %zu", offset);
	}
	size_t have = c->left / 8;
	if (cut) {
		if (nwords > have)
			nwords = have;
	} else if (nwords != have || c->left % 8) {
		return FAIL(
		    r, -EINVAL,
		    "corrupt BLOCK chunk at offset %zu: %llu words do not fill its %zu-byte "
		    "payload",
		    offset, (unsigned long long)nwords, c->left + TL_BLOCK_HEADER_BYTES);
	}
	if (r->nblocks == r->blocks_cap) {
		size_t cap = r->blocks_cap ? r->blocks_cap * 2 : 64;
		tl_snapshot_block *grown = realloc(r->blocks, cap * sizeof *grown);
		if (!grown)
			return NO_MEMORY(r);
		r->blocks = grown;
		r->blocks_cap = cap;
	}
	/* chunks start at multiples of 8 from an aligned input: so do blocks */
	r->blocks[r->nblocks] = (tl_snapshot_block){
	    .tid = tid,
	    .seq = seq,
	    .order = r->nblocks,
	    .words = (const uint64_t *)(const void *)c->p,
	    .nwords = (size_t)nwords,
	    .cut = cut,
	    .nested = nested,
	    .valid_words = SIZE_MAX,
	};
	/* packed runs are version 2's: in a version 1 file, a record of their
	 * phase does not decode, like any other unknown phase */
	if (r->file_version >= TL_SNAPSHOT_VERSION_PACKED)
		note_packed(r, &r->blocks[r->nblocks]);
	r->nblocks++;
	return 0;
}

/* ---- the chunks ----------------------------------------------------------- */

static int read_header(tl_snapshot_read *r, const uint8_t *data, size_t len, size_t *chunks_at)
{
	if (len == 0)
		return FAIL(r, -EINVAL, "not a timeline binary snapshot (empty file)");
	if (len < TL_SNAPSHOT_MAGIC_LEN || memcmp(data, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN))
		return FAIL(r, -EINVAL, "not a timeline binary snapshot (bad magic)");
	if (len < TL_SNAPSHOT_HEADER_BYTES)
		return FAIL(r, -EINVAL, "truncated snapshot header (%zu of %d bytes)", len,
		            TL_SNAPSHOT_HEADER_BYTES);
	uint32_t version = load_u32(data + 8);
	uint32_t header_bytes = load_u32(data + 12);
	uint32_t flags = load_u32(data + 16);
	if (version < 1 || version > TL_SNAPSHOT_VERSION)
		return FAIL(r, -EINVAL,
		            "unsupported snapshot version %u (this reader knows 1 to %d)", version,
		            TL_SNAPSHOT_VERSION);
	if (header_bytes < TL_SNAPSHOT_HEADER_BYTES || header_bytes % 8 || header_bytes > len)
		return FAIL(r, -EINVAL, "corrupt snapshot header (header size %u)", header_bytes);
	if (flags & TL_SNAPSHOT_F_BIG_ENDIAN)
		return FAIL(r, -EINVAL, "big-endian snapshots are not supported");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return FAIL(r, -EINVAL, "reading snapshots on a big-endian host is not supported");
#endif
	r->model->pid = load_u32(data + 20);
	r->file_version = version;
	*chunks_at = header_bytes;
	return 0;
}

/* A file recorder makes its file longer ahead of what it has written, to
 * a whole number of 4 KiB sectors, in zero bytes, and writes whole
 * sectors from the file's start: cut by kill -9, the file goes on with
 * zeros where a chunk may have been cut. The end of what was written in
 * the input from `start` (a file's header) on: len, less its trailing
 * all-zero sectors when it is a whole number of sectors. A written sector
 * is never all zero: a record shorter than a sector has a non-zero header
 * word, and a packed run, which may be longer, has no zero word outside
 * its templates' names (9 words at most); only an END may leave its last word, its zero
 * payload size, alone in a sector (read_chunks reads it whole). */
#define WRITTEN_SECTOR 4096
_Static_assert(TL_REC_MAX_WORDS * 8 < WRITTEN_SECTOR, "a record shorter than a sector");

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static size_t written_end(const uint8_t *data, size_t start, size_t len)
{
	size_t end = len;
	if ((len - start) % WRITTEN_SECTOR)
		return len; /* cut to its size by the recorder: no room ahead */
	while (end - start > WRITTEN_SECTOR &&
	       all_zero(data + end - WRITTEN_SECTOR, WRITTEN_SECTOR))
		end -= WRITTEN_SECTOR;
	return end;
}

/* Reads chunks from off to the END chunk (sets model->complete); *next is
 * where the bytes after END start (len when the input ends before it). */
static int read_chunks(tl_snapshot_read *r, const uint8_t *data, size_t len, size_t written,
                       size_t off, size_t *next)
{
	*next = len;
	while (off < written && len - off >= TL_CHUNK_HEADER_BYTES) {
		uint32_t type = load_u32(data + off);
		uint64_t payload = load_u64(data + off + 8);
		/* a header cut by the end of what was written: only an END,
		 * whose zero payload size may begin a zero sector, is whole */
		if (written - off < TL_CHUNK_HEADER_BYTES && (type != TL_CHUNK_END || payload))
			break;
		size_t room = written - off > TL_CHUNK_HEADER_BYTES
		                  ? written - off - TL_CHUNK_HEADER_BYTES
		                  : 0;
		int cut = payload > room;
		struct cursor c = {data + off + TL_CHUNK_HEADER_BYTES,
		                   cut ? room : (size_t)payload};
		int rc = 0;
		if (cut && type != TL_CHUNK_BLOCK && type != TL_CHUNK_NESTED_BLOCK)
			break; /* a partial chunk: the file was cut here */
		switch (type) {
		case TL_CHUNK_PROCESS:
			rc = read_process(r, &c, off);
			break;
		case TL_CHUNK_CLOCK:
			rc = read_clock(r, &c, off);
			break;
		case TL_CHUNK_STATS:
			rc = read_stats(r, &c, off);
			break;
		case TL_CHUNK_CATEGORY:
			rc = read_category(r, &c, off);
			break;
		case TL_CHUNK_THREAD:
			rc = read_thread(r, &c, off);
			break;
		case TL_CHUNK_BLOCK:
		case TL_CHUNK_NESTED_BLOCK:
			rc = note_block(r, &c, off, cut, type == TL_CHUNK_NESTED_BLOCK);
			break;
		case TL_CHUNK_END:
			r->model->complete = 1;
			*next = off + TL_CHUNK_HEADER_BYTES;
			return 0;
		case TL_CHUNK_THREAD_DROPS:
			rc = read_thread_drops(r, &c, off);
			break;
		case TL_CHUNK_FUNCTIONS:
			rc = read_functions(r, &c, off);
			break;
		case TL_CHUNK_MAPPING:
			rc = read_mapping(r, &c, off);
			break;
		default:
			break; /* a chunk type from a newer writer */
		}
		if (rc < 0)
			return rc;
		if (cut)
			break;
		size_t padded = (size_t)payload + (size_t)(-payload & 7);
		if (padded > room)
			break; /* the padding of the last chunk is missing */
		off += TL_CHUNK_HEADER_BYTES + padded;
	}
	r->whole_end = off;
	return 0;
}

static int compare_blocks(const void *pa, const void *pb)
{
	const tl_snapshot_block *a = pa, *b = pb;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->nested != b->nested)
		return a->nested - b->nested;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The record at word pos of block b, decoded into *v: its length in words,
 * or 0 when it does not decode (which ends the block). */
static size_t decode_at(const tl_snapshot_block *b, size_t pos, tl_record_view *v)
{
	if (b->nwords - pos < 2)
		return 0;
	const uint64_t *rec = b->words + pos;
	/* Without inline strings the record would hold pointers into a
	 * process that is gone: never follow them. A numbered name is never
	 * written to a file (flag bits 6-7 are 0 there). */
	unsigned flags = TL_REC_FLAGS(rec[1]);
	if (!(flags & TL_REC_F_STRINGS_INLINE) || (flags & TL_REC_F_NAME_NUMBER))
		return 0;
	return tl_record_decode(rec, b->nwords - pos, v);
}

/* Groups the sorted blocks by thread. */
static int list_threads(tl_snapshot_read *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nblocks; i++)
		n += i == 0 || r->blocks[i].tid != r->blocks[i - 1].tid;
	r->threads = calloc(n + 1, sizeof *r->threads);
	if (!r->threads)
		return NO_MEMORY(r);
	for (size_t i = 0; i < r->nblocks;) {
		tl_snapshot_thread *t = &r->threads[r->nthreads++];
		t->tid = r->blocks[i].tid;
		t->first_block = i;
		t->trim_from = i;
		t->nested_block = SIZE_MAX;
		for (; i < r->nblocks && r->blocks[i].tid == t->tid; i++) {
			const tl_snapshot_block *b = &r->blocks[i];
			if (b->nested && t->nested_block == SIZE_MAX)
				t->nested_block = i;
			tl_record_view v;
			if (t->has_events || !b->nwords)
				continue;
			if (block_unpack(r, &r->blocks[i]))
				return -ENOMEM;
			if (decode_at(b, 0, &v))
				t->has_events = 1;
			block_unload(r, &r->blocks[i]);
		}
		t->end_block = i;
		if (t->nested_block == SIZE_MAX)
			t->nested_block = i;
	}
	return 0;
}

/* Whether a thread has a record that decodes (list_threads has run). */
static int has_any_event(const tl_snapshot_read *r)
{
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].has_events)
			return 1;
	return 0;
}

int tl_snapshot_read_open(tl_snapshot_read *r, const void *input, size_t len, tl_model *model,
                          char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	memset(model, 0, sizeof *model);
	if (err && errlen)
		err[0] = '\0';
	r->model = model;
	r->err = err;
	r->errlen = errlen;

	const uint8_t *data = input;
	if ((uintptr_t)data & 7) {
		r->aligned = len < SIZE_MAX - 8 ? malloc(len / 8 * 8 + 8) : NULL;
		if (!r->aligned) {
			tl_snapshot_read_close(r);
			return NO_MEMORY(r);
		}
		memcpy(r->aligned, data, len);
		data = (const uint8_t *)r->aligned;
	}

	tl_model *m = model;
	m->clock_id = CLOCK_BOOTTIME; /* the library's default */
	m->stats.struct_size = sizeof m->stats;
	m->process_name = tl_model_intern(m, "", 0);
	m->recorder = m->process_name;
	m->stats.recorder = m->process_name;
	r->unknown_category = tl_model_intern(m, "?", 1);
	r->function_category = tl_model_intern(m, "function", 8);
	int rc = 0;
	if (!m->process_name || !r->unknown_category || !r->function_category)
		rc = NO_MEMORY(r);

	/* one snapshot, or several in a row: the files of a file recorder's
	 * rotation, oldest first, read as one trace */
	size_t at = 0;
	while (rc == 0) {
		size_t off, next;
		size_t written = written_end(data, at, len);
		m->complete = 0;
		r->file_start = r->whole_end = at;
		r->file_len = written - at;
		rc = read_header(r, data + at, len - at, &off);
		if (rc == 0)
			rc = read_chunks(r, data, len, written, at + off, &next);
		if (rc < 0)
			break;
		at = next;
		if (!(at < len && len - at >= TL_SNAPSHOT_MAGIC_LEN &&
		      memcmp(data + at, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN) == 0 &&
		      m->complete))
			break;
	}
	if (rc == 0) {
		/* a cut file's drops are in its THREAD_DROPS chunks only */
		if (r->thread_drops_total > m->stats.events_dropped)
			m->stats.events_dropped = r->thread_drops_total;
		if (r->nblocks)
			qsort(r->blocks, r->nblocks, sizeof *r->blocks, compare_blocks);
		if (r->nfunctions)
			qsort(r->functions, r->nfunctions, sizeof *r->functions, by_function_id);
		rc = list_threads(r);
	}
	if (rc == 0 && !m->complete && !has_any_event(r))
		rc = FAIL(r, -ENODATA,
		          "snapshot is truncated at byte %zu of %zu (no END chunk), before any "
		          "event: nothing could be read",
		          r->whole_end - r->file_start, r->file_len);
	if (rc < 0) {
		tl_snapshot_read_close(r);
		tl_model_free(model);
	}
	return rc;
}

void tl_snapshot_read_finish(tl_snapshot_read *r)
{
	r->model->stats.blocks_torn += r->bad_blocks;
	char blocks[160] = "";
	if (r->bad_blocks)
		snprintf(blocks, sizeof blocks,
		         "%llu block%s with undecodable records (%llu words skipped)",
		         (unsigned long long)r->bad_blocks, r->bad_blocks == 1 ? "" : "s",
		         (unsigned long long)r->bad_words);
	if (!r->model->complete)
		set_message(r->err, r->errlen,
		            "snapshot is truncated (no END chunk; whole chunks up to byte %zu of "
		            "%zu written)%s%s",
		            r->whole_end - r->file_start, r->file_len, blocks[0] ? "; " : "",
		            blocks);
	else
		set_message(r->err, r->errlen, "%s", blocks);
}

void tl_snapshot_read_close(tl_snapshot_read *r)
{
	for (size_t i = 0; i < r->nthreads; i++)
		tl_snapshot_thread_release(&r->threads[i]);
	for (size_t i = 0; i < r->nblocks; i++)
		block_unload(r, &r->blocks[i]);
	free(r->threads);
	free(r->pairs);
	free(r->drops);
	tl_id_map_free(&r->drops_by_tid);
	free(r->categories);
	free(r->blocks);
	free(r->aligned);
	free(r->functions);
	free(r->mappings);
	tl_symbolizer_free(r->symbolizer);
	r->symbolizer = NULL;
	r->symbolizer_made = 0;
	r->functions = NULL;
	r->mappings = NULL;
	r->nfunctions = r->functions_cap = r->nmappings = 0;
	r->threads = NULL;
	r->pairs = NULL;
	r->drops = NULL;
	r->categories = NULL;
	r->blocks = NULL;
	r->aligned = NULL;
	r->nthreads = r->npairs = r->ndrops = r->drops_cap = r->ncategories = r->nblocks = 0;
}

const char *tl_snapshot_read_category(const tl_snapshot_read *r, unsigned index)
{
	if (index < r->ncategories && r->categories[index])
		return r->categories[index];
	return r->unknown_category;
}

/* ---- a thread's events ---------------------------------------------------- */

/* tl_snapshot_read_ns, through a walk's converter. */
static int64_t walk_ns(tl_clock_converter *clock, unsigned rec_flags, uint64_t ts)
{
	if (rec_flags & TL_REC_F_TS_NS)
		return tl_clock_ticks_to_ns(NULL, 0, ts);
	return tl_clock_converter_ns(clock, ts);
}

static void cursor_event(tl_clock_converter *clock, const uint64_t *rec, const tl_record_view *v,
                         tl_cursor_event *out)
{
	out->rec = rec;
	out->ts_ns = walk_ns(clock, v->flags, v->ts);
	out->end_ns = v->phase == TL_PHASE_COMPLETE ? walk_ns(clock, v->flags, v->value) : 0;
	out->value = v->value;
	out->phase = v->phase;
	out->flags = v->flags;
}

/*
 * The fields of a record that ordering needs, from a record known to
 * decode: the value word comes after the header and the name.
 */
static void cursor_event_known(tl_clock_converter *clock, const uint64_t *rec,
                               tl_cursor_event *out)
{
	uint64_t header = rec[1];
	char phase = TL_REC_PHASE(header);
	unsigned flags = TL_REC_FLAGS(header);
	size_t pos = 2;
	if (flags & TL_REC_F_FUNCTION) {
		/* two words: the id is in the header */
		out->rec = rec;
		out->phase = phase;
		out->flags = flags;
		out->value = TL_REC_FUNCTION_ID(header);
		out->ts_ns = walk_ns(clock, flags, rec[0]);
		out->end_ns = 0;
		return;
	}
	if (tl_record_has_name(phase))
		pos += 1 + (size_t)((rec[2] + 7) / 8);
	out->rec = rec;
	out->phase = phase;
	out->flags = flags;
	out->value = tl_record_has_value(phase) ? rec[pos] : 0;
	out->ts_ns = walk_ns(clock, flags, rec[0]);
	out->end_ns = phase == TL_PHASE_COMPLETE ? walk_ns(clock, flags, out->value) : 0;
}

/* The next record of a walk over blocks; 0 when there is none left. */
static int walk_next(tl_snapshot_read *r, tl_block_walk *w, tl_cursor_event *out)
{
	while (w->block < w->end_block) {
		tl_snapshot_block *b = &r->blocks[w->block];
		if (!b->words && block_unpack(r, b) != 0) {
			/* out of memory: what the block holds is skipped,
			 * counted once (a walk before counted what did not
			 * decode), and the exporters fail */
			r->unpack_failed = 1;
			if (b->valid_words != 0) {
				r->bad_blocks++;
				r->bad_words +=
				    b->valid_words == SIZE_MAX ? b->nwords : b->valid_words;
				b->valid_words = 0;
			}
			w->block++;
			w->word = 0;
			continue;
		}
		if (w->word < b->valid_words && b->valid_words != SIZE_MAX) {
			const uint64_t *rec = b->words + w->word;
			cursor_event_known(&w->clock, rec, out);
			w->word += TL_REC_WORDS(rec[1]);
			return 1;
		}
		if (b->valid_words == SIZE_MAX && w->word < b->nwords) {
			tl_record_view v;
			size_t n = decode_at(b, w->word, &v);
			if (n) {
				cursor_event(&w->clock, b->words + w->word, &v, out);
				w->word += n;
				return 1;
			}
		}
		if (b->valid_words == SIZE_MAX) {
			/* the first walk of the block counts what it lost */
			b->valid_words = w->word;
			if (!b->cut && w->word < b->nwords) {
				r->bad_blocks++;
				r->bad_words += b->nwords - w->word;
			}
		}
		w->block++;
		w->word = 0;
	}
	return 0;
}

static int compare_nested(const void *pa, const void *pb)
{
	const tl_snapshot_nested_ref *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

int tl_snapshot_thread_prepare(tl_snapshot_read *r, tl_snapshot_thread *t)
{
	if (t->prepared)
		return 0;
	/* t->nested points into the handler blocks: they stay unpacked until
	 * the thread is unloaded; its own blocks are unpacked as walks enter
	 * them */
	for (size_t i = t->nested_block; i < t->end_block; i++)
		if (block_unpack(r, &r->blocks[i]))
			return -ENOMEM;
	t->prepared = 1;
	tl_block_walk walk = {t->nested_block, t->end_block, 0, {0}};
	tl_clock_converter_init(&walk.clock, r->pairs, r->npairs);
	tl_cursor_event e;
	size_t n = 0;
	int sorted = 1;
	int64_t last = INT64_MIN;
	while (walk_next(r, &walk, &e)) {
		if (e.ts_ns < last)
			sorted = 0;
		last = e.ts_ns;
		n++;
	}
	if (sorted)
		return 0;
	t->nested = malloc(n * sizeof *t->nested);
	if (!t->nested)
		return -ENOMEM;
	walk = (tl_block_walk){t->nested_block, t->end_block, 0, walk.clock};
	for (size_t i = 0; i < n && walk_next(r, &walk, &e); i++)
		t->nested[i] = (tl_snapshot_nested_ref){e.ts_ns, i, e.rec};
	t->nnested = n;
	qsort(t->nested, n, sizeof *t->nested, compare_nested);
	return 0;
}

void tl_snapshot_thread_release(tl_snapshot_thread *t)
{
	free(t->nested);
	t->nested = NULL;
	t->nnested = 0;
	t->prepared = 0;
}

void tl_snapshot_thread_unload(tl_snapshot_read *r, tl_snapshot_thread *t)
{
	tl_snapshot_thread_release(t);
	for (size_t i = t->first_block; i < t->end_block; i++)
		block_unload(r, &r->blocks[i]);
}

void tl_kept_recs_add(tl_kept_recs *k, const uint64_t *rec)
{
	if (!rec || k->failed)
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 256;
		const uint64_t **grown = realloc(k->recs, cap * sizeof *grown);
		if (!grown) {
			k->failed = 1;
			return;
		}
		k->recs = grown;
		k->cap = cap;
	}
	k->recs[k->n++] = rec;
}

void tl_kept_recs_free(tl_kept_recs *k)
{
	free(k->recs);
	memset(k, 0, sizeof *k);
}

/* Words of a chunk of copies, unless one record needs more. */
#define COPIES_CHUNK_WORDS 2048

struct tl_rec_chunk {
	struct tl_rec_chunk *older;
	uint64_t words[];
};

int tl_rec_copies_add(tl_rec_copies *c, const uint64_t *rec, const uint64_t **copy)
{
	*copy = NULL;
	if (!rec)
		return 0;
	size_t words = TL_REC_WORDS(rec[1]);
	if (!c->chunk || c->cap - c->used < words) {
		size_t cap = words > COPIES_CHUNK_WORDS ? words : COPIES_CHUNK_WORDS;
		struct tl_rec_chunk *chunk = malloc(sizeof *chunk + cap * sizeof *chunk->words);
		if (!chunk)
			return -ENOMEM;
		chunk->older = c->chunk;
		c->chunk = chunk;
		c->used = 0;
		c->cap = cap;
	}
	uint64_t *to = c->chunk->words + c->used;
	memcpy(to, rec, words * sizeof *rec);
	c->used += words;
	*copy = to;
	return 0;
}

void tl_rec_copies_free(tl_rec_copies *c)
{
	while (c->chunk) {
		struct tl_rec_chunk *older = c->chunk->older;
		free(c->chunk);
		c->chunk = older;
	}
	c->used = c->cap = 0;
}

/* An unpacked block by where its records are in memory. */
typedef struct unpacked_span {
	uintptr_t start, end;
	size_t block;
	int kept;
} unpacked_span;

static int compare_span(const void *pa, const void *pb)
{
	const unpacked_span *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

void tl_snapshot_thread_trim(tl_snapshot_read *r, tl_snapshot_thread *t, size_t before,
                             const tl_kept_recs *kept)
{
	if (kept->failed)
		return;
	size_t end = before < t->nested_block ? before : t->nested_block, n = 0;
	size_t from = t->trim_from > t->first_block ? t->trim_from : t->first_block;
	for (size_t i = from; i < end; i++)
		n += r->blocks[i].unpacked != NULL;
	if (!n) {
		if (end > t->trim_from)
			t->trim_from = end;
		return;
	}
	unpacked_span *spans = malloc(n * sizeof *spans);
	if (!spans)
		return; /* kept, all of them: freed at the next trim or the end */
	n = 0;
	for (size_t i = from; i < end; i++) {
		const tl_snapshot_block *b = &r->blocks[i];
		if (b->unpacked)
			spans[n++] = (unpacked_span){(uintptr_t)b->unpacked,
			                             (uintptr_t)(b->unpacked + b->nwords), i, 0};
	}
	qsort(spans, n, sizeof *spans, compare_span);
	for (size_t k = 0; k < kept->n; k++) {
		uintptr_t p = (uintptr_t)kept->recs[k];
		size_t lo = 0, hi = n; /* the last span starting at or before p */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (spans[mid].start <= p)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && p < spans[lo - 1].end)
			spans[lo - 1].kept = 1;
	}
	size_t lowest_kept = end;
	for (size_t i = 0; i < n; i++)
		if (!spans[i].kept)
			block_unload(r, &r->blocks[spans[i].block]);
		else if (spans[i].block < lowest_kept)
			lowest_kept = spans[i].block;
	if (lowest_kept > t->trim_from)
		t->trim_from = lowest_kept;
	free(spans);
}

int tl_event_cursor_init(tl_event_cursor *c, tl_snapshot_read *r, tl_snapshot_thread *t,
                         int count_events)
{
	memset(c, 0, sizeof *c);
	c->r = r;
	c->thread = t;
	c->own = (tl_block_walk){t->first_block, t->nested_block, 0, {0}};
	c->nested = (tl_block_walk){t->nested_block, t->end_block, 0, {0}};
	tl_clock_converter_init(&c->own.clock, r->pairs, r->npairs);
	tl_clock_converter_init(&c->nested.clock, r->pairs, r->npairs);
	c->count_events = count_events;
	return tl_snapshot_thread_prepare(r, t);
}

/* The next handler event, in timestamp order. */
static int nested_next(tl_event_cursor *c, tl_cursor_event *out)
{
	const tl_snapshot_thread *t = c->thread;
	if (!t->nested)
		return walk_next(c->r, &c->nested, out);
	if (c->nested_next == t->nnested)
		return 0;
	cursor_event_known(&c->nested.clock, t->nested[c->nested_next++].rec, out);
	return 1;
}

int tl_event_cursor_next(tl_event_cursor *c, tl_cursor_event *out)
{
	if (c->thread->nested_block == c->thread->end_block) {
		/* no signal handler's events to put in */
		if (!walk_next(c->r, &c->own, out))
			return 0;
		out->position = c->position++;
		if (c->count_events)
			c->r->nevents++;
		return 1;
	}
	if (!c->own_ready)
		c->own_ready = walk_next(c->r, &c->own, &c->own_head);
	if (!c->nested_ready)
		c->nested_ready = nested_next(c, &c->nested_head);
	if (c->own_ready && (!c->nested_ready || c->own_head.ts_ns <= c->nested_head.ts_ns)) {
		*out = c->own_head;
		c->own_ready = 0;
	} else if (c->nested_ready) {
		*out = c->nested_head;
		c->nested_ready = 0;
	} else {
		return 0;
	}
	out->position = c->position++;
	if (c->count_events)
		c->r->nevents++;
	return 1;
}

/* ---- an event as the model holds it -------------------------------------- */

int tl_snapshot_read_event(tl_snapshot_read *r, const uint64_t *rec, uint32_t tid, int with_args,
                           tl_string_store_fn store, void *ctx, tl_model_event *e)
{
	tl_record_view v;
	if ((with_args && rec[1] >> TL_REC_ARGTYPES_SHIFT) ||
	    (TL_REC_FLAGS(rec[1]) & TL_REC_F_FUNCTION)) {
		tl_record_decode(rec, TL_REC_WORDS(rec[1]), &v);
	} else {
		/* what is needed without args: a record that decodes holds its
		 * name (when its phase has one) and value where these say */
		uint64_t header = rec[1];
		v.ts = rec[0];
		v.phase = TL_REC_PHASE(header);
		v.flags = TL_REC_FLAGS(header);
		v.category = TL_REC_CATEGORY(header);
		v.name = NULL;
		v.name_len = 0;
		size_t pos = 2;
		if (tl_record_has_name(v.phase)) {
			v.name_len = (size_t)rec[2];
			v.name = (const char *)(rec + 3);
			pos += 1 + (v.name_len + 7) / 8;
		}
		v.value = tl_record_has_value(v.phase) ? rec[pos] : 0;
		v.nargs = 0;
	}
	/* every field but the args past nargs, which nothing reads */
	e->ts_ns = 0;
	e->end_ns = 0;
	e->tid = tid;
	e->seq = 0;
	e->phase = v.phase;
	e->scope = ((v.flags >> TL_REC_F_SCOPE_SHIFT) & 3u) << 1;
	e->cat = tl_snapshot_read_category(r, v.category);
	e->name = NULL;
	e->id = 0;
	e->counter_is_double = 0;
	e->counter_i = 0;
	e->counter_d = 0;
	e->pid = 0;
	if (v.flags & TL_REC_F_FUNCTION) {
		/* named by its id, in the category `function`: the name is
		 * the reader's model's, as a category's is */
		e->cat = r->function_category;
		e->name = tl_snapshot_read_function(r, (uint32_t)v.value);
		e->nargs = 0;
		return e->name ? 0 : -ENOMEM;
	}
	if (v.name) {
		e->name = store(ctx, v.name, v.name_len);
		if (!e->name)
			return -ENOMEM;
	}
	switch (v.phase) {
	case TL_PHASE_COMPLETE:
		break; /* end_ns: the cursor's */
	case TL_PHASE_COUNTER:
		if (v.flags & TL_REC_F_COUNTER_DOUBLE) {
			e->counter_is_double = 1;
			memcpy(&e->counter_d, &v.value, sizeof e->counter_d);
		} else {
			memcpy(&e->counter_i, &v.value, sizeof e->counter_i);
		}
		break;
	default:
		if (tl_record_has_value(v.phase))
			e->id = v.value;
		break;
	}

	e->nargs = with_args ? v.nargs : 0;
	for (unsigned i = 0; i < e->nargs; i++) {
		tl_model_arg *a = &e->args[i];
		a->key = store(ctx, v.args[i].key, v.args[i].key_len);
		if (!a->key)
			return -ENOMEM;
		a->type = v.args[i].type;
		uint64_t bits = v.args[i].bits;
		switch (a->type) {
		case TL_ARG_STRING_COPY:
		case TL_ARG_STRING:
			a->type = TL_ARG_STRING;
			a->v.s = store(ctx, v.args[i].str, v.args[i].str_len);
			if (!a->v.s)
				return -ENOMEM;
			break;
		case TL_ARG_INT:
			memcpy(&a->v.i, &bits, sizeof a->v.i);
			break;
		case TL_ARG_DOUBLE:
			memcpy(&a->v.d, &bits, sizeof a->v.d);
			break;
		case TL_ARG_BOOL:
			a->v.b = bits != 0;
			break;
		case TL_ARG_POINTER:
			a->v.p = bits;
			break;
		default: /* TL_ARG_UINT */
			a->v.u = bits;
			break;
		}
	}
	return 0;
}

/* ---- files ---------------------------------------------------------------- */

/* Makes room for at least need bytes in *buf (*cap its size). 0 or -ENOMEM. */
static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	uint8_t *grown = realloc(*buf, need);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*cap = need;
	return 0;
}

/* Appends all of fd to *buf (*len bytes used of *cap). 0 or -errno. */
static int append_fd(int fd, uint8_t **buf, size_t *len, size_t *cap)
{
	struct stat st;
	size_t room = 64 * 1024;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size < SIZE_MAX / 2 - *len)
		room = (size_t)st.st_size + 1; /* +1: EOF seen without a regrow */
	if (reserve(buf, cap, *len + room) < 0)
		return -ENOMEM;
	for (;;) {
		if (*len == *cap && (*cap > SIZE_MAX / 2 || reserve(buf, cap, *cap * 2) < 0))
			return -ENOMEM;
		ssize_t got = read(fd, *buf + *len, *cap - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return 0;
		*len += (size_t)got;
	}
}

int tl_snapshot_load_files(const char *const *paths, size_t n, void **data, size_t *len,
                           size_t *failed)
{
	uint8_t *buf = NULL;
	size_t used = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		int rc = fd < 0 ? -errno : append_fd(fd, &buf, &used, &cap);
		if (fd >= 0)
			close(fd);
		if (rc < 0) {
			free(buf);
			*failed = i;
			return rc;
		}
	}
	*data = buf ? buf : malloc(1);
	*len = used;
	if (!*data) {
		*failed = 0;
		return -ENOMEM;
	}
	return 0;
}
