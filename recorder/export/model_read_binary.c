/*
 * Reader of the binary snapshot (snapshot_format.h) into a tl_model.
 *
 * The input is untrusted (a file from another machine, possibly cut short
 * or damaged): every length is checked against the bytes that remain before
 * it is used, and a record's kept pointers are never followed (records must
 * carry TL_REC_F_STRINGS_INLINE).
 *
 * Two passes: the first walks the chunks, reads the metadata (process,
 * clock, categories, threads, stats) and notes where the blocks are; the
 * second decodes the blocks in (tid, seq) order, so that the events come
 * out sorted by thread and in each thread's order, whatever the order of
 * the chunks in the file.
 */
#include "recorder/export/trace_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recorder/clock.h"
#include "recorder/export/symbolize.h"
#include "recorder/record.h"
#include "recorder/snapshot_format.h"

#define TL_CHUNK_HEADER_BYTES 16
#define TL_BLOCK_HEADER_BYTES 24
#define TL_CATEGORY_INDEX_MAX 0xffffu /* a record's category field is 16 bits */

/* A BLOCK chunk found by the first pass. */
struct block_ref {
	uint32_t tid;
	uint64_t seq;
	size_t order;        /* position in the file: ties keep file order */
	const uint8_t *data; /* nwords little-endian words */
	size_t nwords;
	int cut;    /* the file ends inside this block */
	int nested; /* TL_CHUNK_NESTED_BLOCK: a signal handler's records */
};

struct reader {
	tl_model *model;
	char *err;
	size_t errlen;

	tl_clock_pair *pairs; /* by ticks; none: timestamps are ns */
	size_t npairs;

	const char **categories; /* by index; NULL where none was named */
	size_t ncategories;
	const char *unknown_category;

	struct block_ref *blocks;
	size_t nblocks;
	size_t blocks_cap;

	uint64_t *scratch; /* aligned copy of a block when the input is not */
	size_t scratch_words;

	/* THREAD_DROPS: each thread's latest count, and their sum */
	struct thread_drops {
		uint32_t tid;
		uint64_t dropped;
	} *drops;
	size_t ndrops;
	uint64_t thread_drops_total;

	/* FUNCTIONS: function records' ids, sorted by id before the blocks
	 * are read; each one's name made on first use */
	struct function {
		uint32_t id;
		uint64_t address;
		const char *name;
	} *functions;
	size_t nfunctions;
	size_t functions_cap;
	/* MAPPING chunks: paths interned, build-ids in the input */
	tl_mapping *mappings;
	size_t nmappings;
	tl_symbolizer *symbolizer; /* NULL: names by module and offset */
	const char *function_category;

	uint64_t seq; /* next event's seq */
	uint64_t bad_blocks;
	uint64_t bad_words;
};

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
static int64_t timestamp_ns(const struct reader *r, unsigned rec_flags, uint64_t ts)
{
	if (rec_flags & TL_REC_F_TS_NS)
		return tl_clock_ticks_to_ns(NULL, 0, ts);
	return tl_clock_ticks_to_ns(r->pairs, r->npairs, ts);
}

/* ---- metadata chunks ------------------------------------------------------ */

static int read_process(struct reader *r, struct cursor *c, size_t offset)
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

static int read_clock(struct reader *r, struct cursor *c, size_t offset)
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
	m->snapshot_ns = timestamp_ns(r, 0, snapshot_ts);
	return 0;
}

static int read_stats(struct reader *r, struct cursor *c, size_t offset)
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

static int read_category(struct reader *r, struct cursor *c, size_t offset)
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

static int read_thread(struct reader *r, struct cursor *c, size_t offset)
{
	uint32_t tid;
	const char *name;
	size_t len;
	if (!take_u32(c, &tid) || !take_string(c, &name, &len))
		return FAIL(r, -EINVAL, "corrupt THREAD chunk at offset %zu", offset);
	return tl_model_thread_set(r->model, tid, name, len) < 0 ? NO_MEMORY(r) : 0;
}

static int read_thread_drops(struct reader *r, struct cursor *c, size_t offset)
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
		size_t k = 0;
		while (k < r->ndrops && r->drops[k].tid != tid)
			k++;
		if (k == r->ndrops) {
			struct thread_drops *grown = realloc(r->drops, (k + 1) * sizeof *grown);
			if (!grown)
				return NO_MEMORY(r);
			r->drops = grown;
			r->drops[r->ndrops++] = (struct thread_drops){tid, 0};
		}
		r->thread_drops_total += dropped - r->drops[k].dropped;
		r->drops[k].dropped = dropped;
	}
	return 0;
}

static int read_functions(struct reader *r, struct cursor *c, size_t offset)
{
	uint32_t count, reserved;
	if (!take_u32(c, &count) || !take_u32(c, &reserved) || count > c->left / 16)
		return FAIL(r, -EINVAL, "corrupt FUNCTIONS chunk at offset %zu", offset);
	if (r->nfunctions + count > r->functions_cap) {
		size_t cap = r->functions_cap ? r->functions_cap : 256;
		while (cap < r->nfunctions + count)
			cap *= 2;
		struct function *grown = realloc(r->functions, cap * sizeof *grown);
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
		r->functions[r->nfunctions++] = (struct function){id, address, NULL};
	}
	return 0;
}

static int read_mapping(struct reader *r, struct cursor *c, size_t offset)
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
	const struct function *a = pa, *b = pb;
	return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * The name of function record `id`: its symbol, else `module+0xoffset`,
 * else `0xaddress` (tl_function_name); `function#` and the id when the
 * FUNCTIONS chunks lack it. Interned once per id.
 */
static const char *function_name(struct reader *r, uint32_t id)
{
	struct function key = {.id = id};
	struct function *f =
	    r->nfunctions ? bsearch(&key, r->functions, r->nfunctions, sizeof key, by_function_id)
	                  : NULL;
	char name[512];
	if (!f) {
		int n = snprintf(name, sizeof name, "function#%u", id);
		return tl_model_intern(r->model, name, (size_t)n);
	}
	if (f->name)
		return f->name;
	size_t n = tl_function_name(r->symbolizer, r->mappings, r->nmappings, f->address, name,
	                            sizeof name);
	f->name = tl_model_intern(r->model, name, n);
	return f->name;
}

/* Notes a block for the second pass. cut: the file ends inside it. */
static int note_block(struct reader *r, struct cursor *c, size_t offset, int cut, int nested)
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
		struct block_ref *grown = realloc(r->blocks, cap * sizeof *grown);
		if (!grown)
			return NO_MEMORY(r);
		r->blocks = grown;
		r->blocks_cap = cap;
	}
	r->blocks[r->nblocks] = (struct block_ref){
	    .tid = tid,
	    .seq = seq,
	    .order = r->nblocks,
	    .data = c->p,
	    .nwords = (size_t)nwords,
	    .cut = cut,
	    .nested = nested,
	};
	r->nblocks++;
	return 0;
}

/* ---- events --------------------------------------------------------------- */

static const char *category_name(const struct reader *r, unsigned index)
{
	if (index < r->ncategories && r->categories[index])
		return r->categories[index];
	return r->unknown_category;
}

static int add_event(struct reader *r, uint32_t tid, const tl_record_view *v)
{
	tl_model *m = r->model;
	tl_model_event *e = tl_model_event_append(m);
	if (!e)
		return -ENOMEM;
	e->ts_ns = timestamp_ns(r, v->flags, v->ts);
	e->tid = tid;
	e->seq = r->seq++;
	e->phase = v->phase;
	e->scope = ((v->flags >> TL_REC_F_SCOPE_SHIFT) & 3u) << 1;
	e->cat = category_name(r, v->category);
	if (v->flags & TL_REC_F_FUNCTION) {
		e->cat = r->function_category;
		e->name = function_name(r, (uint32_t)v->value);
		if (!e->name)
			return -ENOMEM;
		return 0;
	}
	if (v->name) {
		e->name = tl_model_intern(m, v->name, v->name_len);
		if (!e->name)
			return -ENOMEM;
	}
	switch (v->phase) {
	case TL_PHASE_COMPLETE:
		e->end_ns = timestamp_ns(r, v->flags, v->value);
		break;
	case TL_PHASE_COUNTER:
		if (v->flags & TL_REC_F_COUNTER_DOUBLE) {
			e->counter_is_double = 1;
			memcpy(&e->counter_d, &v->value, sizeof e->counter_d);
		} else {
			memcpy(&e->counter_i, &v->value, sizeof e->counter_i);
		}
		break;
	default:
		if (tl_record_has_value(v->phase))
			e->id = v->value;
		break;
	}

	e->nargs = v->nargs;
	for (unsigned i = 0; i < v->nargs; i++) {
		tl_model_arg *a = &e->args[i];
		a->key = tl_model_intern(m, v->args[i].key, v->args[i].key_len);
		if (!a->key)
			return -ENOMEM;
		a->type = v->args[i].type;
		uint64_t bits = v->args[i].bits;
		switch (a->type) {
		case TL_ARG_STRING_COPY:
		case TL_ARG_STRING:
			a->type = TL_ARG_STRING;
			a->v.s = tl_model_intern(m, v->args[i].str, v->args[i].str_len);
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

/* The block's words at 8-byte alignment: in place, or copied to scratch. */
static const uint64_t *block_words(struct reader *r, const struct block_ref *b)
{
	if (((uintptr_t)b->data & 7) == 0)
		return (const uint64_t *)(const void *)b->data;
	if (b->nwords > r->scratch_words) {
		free(r->scratch);
		r->scratch = malloc(b->nwords * sizeof *r->scratch);
		r->scratch_words = r->scratch ? b->nwords : 0;
		if (!r->scratch)
			return NULL;
	}
	memcpy(r->scratch, b->data, b->nwords * sizeof *r->scratch);
	return r->scratch;
}

/*
 * Decodes one block's records into events. A record that does not decode
 * ends the block: the records before it are kept, the rest is counted (a
 * block cut by the end of the file is expected to end in a partial record).
 */
static int read_block(struct reader *r, const struct block_ref *b)
{
	if (!b->nwords)
		return 0;
	const uint64_t *words = block_words(r, b);
	if (!words)
		return NO_MEMORY(r);
	size_t pos = 0;
	while (pos < b->nwords) {
		const uint64_t *rec = words + pos;
		size_t avail = b->nwords - pos;
		tl_record_view view;
		size_t n = 0;
		/* Without inline strings the record would hold pointers into a
		 * process that is gone: never follow them. A numbered name is
		 * never written to a file (flag bit 6 is 0 there). */
		if (avail >= 2 && (TL_REC_FLAGS(rec[1]) & TL_REC_F_STRINGS_INLINE) &&
		    !(TL_REC_FLAGS(rec[1]) & TL_REC_F_NAME_NUMBER))
			n = tl_record_decode(rec, avail, &view);
		if (!n)
			break;
		if (add_event(r, b->tid, &view) < 0)
			return NO_MEMORY(r);
		pos += n;
	}
	if (pos < b->nwords && !b->cut) {
		r->bad_blocks++;
		r->bad_words += b->nwords - pos;
	}
	return 0;
}

/* Nested events by timestamp, then file order. */
static int compare_nested(const void *pa, const void *pb)
{
	const tl_model_event *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * Puts a thread's nested events (a signal handler's, from nested_at to the
 * end) between its own events [first, nested_at): each handler event,
 * in timestamp order, goes before the first of the thread's own events
 * with a larger timestamp, whose order is kept as written. The events'
 * seq is renumbered in the merged order. 0 or -ENOMEM.
 */
static int merge_nested(tl_model *m, size_t first, size_t nested_at)
{
	size_t own = nested_at - first, nested = m->nevents - nested_at;
	tl_model_event *tmp = malloc((own + nested) * sizeof *tmp);
	if (!tmp)
		return -ENOMEM;
	tl_model_event *e = m->events + first;
	memcpy(tmp, e, (own + nested) * sizeof *tmp);
	qsort(tmp + own, nested, sizeof *tmp, compare_nested);
	uint64_t seq = e[0].seq < e[own].seq ? e[0].seq : e[own].seq;
	size_t i = 0, j = own, k = 0;
	while (i < own || j < own + nested) {
		bool take_own = j == own + nested || (i < own && tmp[i].ts_ns <= tmp[j].ts_ns);
		e[k] = tmp[take_own ? i++ : j++];
		e[k++].seq = seq++;
	}
	free(tmp);
	return 0;
}

static int compare_blocks(const void *pa, const void *pb)
{
	const struct block_ref *a = pa, *b = pb;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->nested != b->nested)
		return a->nested - b->nested;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* ---- the file ------------------------------------------------------------- */

static int read_header(struct reader *r, const uint8_t *data, size_t len, size_t *chunks_at)
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
	if (version != TL_SNAPSHOT_VERSION)
		return FAIL(r, -EINVAL, "unsupported snapshot version %u (this reader knows %d)",
		            version, TL_SNAPSHOT_VERSION);
	if (header_bytes < TL_SNAPSHOT_HEADER_BYTES || header_bytes % 8 || header_bytes > len)
		return FAIL(r, -EINVAL, "corrupt snapshot header (header size %u)", header_bytes);
	if (flags & TL_SNAPSHOT_F_BIG_ENDIAN)
		return FAIL(r, -EINVAL, "big-endian snapshots are not supported");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return FAIL(r, -EINVAL, "reading snapshots on a big-endian host is not supported");
#endif
	r->model->pid = load_u32(data + 20);
	*chunks_at = header_bytes;
	return 0;
}

/* First pass: every chunk in file order. Sets model->complete on END. */
/* Reads chunks from off to the END chunk; *next is where the bytes after
 * END start (len when the file ends before it). */
static int read_chunks(struct reader *r, const uint8_t *data, size_t len, size_t off,
                       size_t *next)
{
	*next = len;
	while (len - off >= TL_CHUNK_HEADER_BYTES) {
		uint32_t type = load_u32(data + off);
		uint64_t payload = load_u64(data + off + 8);
		size_t room = len - off - TL_CHUNK_HEADER_BYTES;
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
		if (rc < 0 || cut)
			return rc;
		size_t padded = (size_t)payload + (size_t)(-payload & 7);
		if (padded > room)
			break; /* the padding of the last chunk is missing */
		off += TL_CHUNK_HEADER_BYTES + padded;
	}
	return 0;
}

/* Fills err with what was lost on the way, or "" when nothing was. */
static void describe_losses(const struct reader *r)
{
	const tl_model *m = r->model;
	char blocks[160] = "";
	if (r->bad_blocks)
		snprintf(blocks, sizeof blocks,
		         "%llu block%s with undecodable records (%llu words skipped)",
		         (unsigned long long)r->bad_blocks, r->bad_blocks == 1 ? "" : "s",
		         (unsigned long long)r->bad_words);
	if (!m->complete)
		set_message(r->err, r->errlen, "snapshot is truncated (no END chunk)%s%s",
		            blocks[0] ? "; " : "", blocks);
	else
		set_message(r->err, r->errlen, "%s", blocks);
}

static int read_snapshot(struct reader *r, const uint8_t *data, size_t len)
{
	tl_model *m = r->model;
	m->clock_id = CLOCK_BOOTTIME; /* the library's default */
	m->stats.struct_size = sizeof m->stats;
	m->process_name = tl_model_intern(m, "", 0);
	m->recorder = m->process_name;
	m->stats.recorder = m->process_name;
	r->unknown_category = tl_model_intern(m, "?", 1);
	r->function_category = tl_model_intern(m, "function", 8);
	if (!m->process_name || !r->unknown_category || !r->function_category)
		return NO_MEMORY(r);

	/* one snapshot, or several in a row: the files of a file recorder's
	 * rotation, oldest first, read as one trace */
	size_t at = 0;
	do {
		size_t off, next;
		r->model->complete = 0;
		int rc = read_header(r, data + at, len - at, &off);
		if (rc < 0)
			return rc;
		rc = read_chunks(r, data, len, at + off, &next);
		if (rc < 0)
			return rc;
		at = next;
	} while (at < len && len - at >= TL_SNAPSHOT_MAGIC_LEN &&
	         memcmp(data + at, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN) == 0 &&
	         r->model->complete);
	/* a cut file's drops are in its THREAD_DROPS chunks only */
	if (r->thread_drops_total > m->stats.events_dropped)
		m->stats.events_dropped = r->thread_drops_total;
	int rc;

	if (r->nblocks)
		qsort(r->blocks, r->nblocks, sizeof *r->blocks, compare_blocks);
	if (r->nfunctions)
		qsort(r->functions, r->nfunctions, sizeof *r->functions, by_function_id);
	for (size_t i = 0; i < r->nblocks;) {
		/* one thread: its own blocks, then its handlers' (nested) ones */
		size_t first = m->nevents, nested_at = SIZE_MAX;
		uint32_t tid = r->blocks[i].tid;
		for (; i < r->nblocks && r->blocks[i].tid == tid; i++) {
			if (r->blocks[i].nested && nested_at == SIZE_MAX)
				nested_at = m->nevents;
			rc = read_block(r, &r->blocks[i]);
			if (rc < 0)
				return rc;
		}
		if (nested_at < m->nevents && merge_nested(m, first, nested_at) < 0)
			return NO_MEMORY(r);
	}
	m->stats.blocks_torn += r->bad_blocks;
	describe_losses(r);
	return 0;
}

int tl_model_read_binary(const void *data, size_t len, tl_model *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';
	struct reader r = {.model = out, .err = err, .errlen = errlen};
	r.symbolizer = tl_symbolizer_new();
	int rc = read_snapshot(&r, data, len);
	tl_symbolizer_free(r.symbolizer);
	free(r.pairs);
	free(r.drops);
	free(r.categories);
	free(r.blocks);
	free(r.scratch);
	free(r.functions);
	free(r.mappings);
	if (rc < 0)
		tl_model_free(out);
	return rc;
}

/* Reads all of fd into a malloc'd buffer. 0 or -errno. */
static int read_all(int fd, uint8_t **data, size_t *len)
{
	struct stat st;
	size_t cap = 64 * 1024;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size < SIZE_MAX - 1)
		cap = (size_t)st.st_size + 1; /* +1: EOF seen without a regrow */
	uint8_t *buf = malloc(cap);
	size_t n = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			uint8_t *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	*data = buf;
	*len = n;
	return 0;
}

int tl_model_read_binary_files(const char *const *paths, size_t n, tl_model *out, char *err,
                               size_t errlen)
{
	memset(out, 0, sizeof *out);
	uint8_t *all = NULL;
	size_t all_len = 0;
	for (size_t i = 0; i < n; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		uint8_t *data = NULL;
		size_t len = 0;
		int rc = fd < 0 ? -errno : read_all(fd, &data, &len);
		if (fd >= 0)
			close(fd);
		uint8_t *grown = rc ? NULL : realloc(all, all_len + len + 1);
		if (rc || !grown) {
			rc = rc ? rc : -ENOMEM;
			set_message(err, errlen, "%s: %s", paths[i], strerror(-rc));
			free(data);
			free(all);
			return rc;
		}
		all = grown;
		memcpy(all + all_len, data, len);
		all_len += len;
		free(data);
	}
	int rc = tl_model_read_binary(all, all_len, out, err, errlen);
	free(all);
	return rc;
}

int tl_model_read_binary_file(const char *path, tl_model *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		set_message(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = read_all(fd, &data, &len);
	close(fd);
	if (rc < 0) {
		set_message(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	rc = tl_model_read_binary(data, len, out, err, errlen);
	free(data);
	return rc;
}
