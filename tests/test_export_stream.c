/*
 * The streaming exporters (recorder/export/export_stream.h) against the
 * model's (tl_export_json, tl_export_ftrace): for the same binary snapshot
 * both must write the same bytes. Snapshots are generated at random with
 * every kind of event and the shapes the matching has rules for (nesting
 * beyond the depth cap, COMPLETE events starting with a BEGIN, flows with
 * and without a slice, unmatched ENDs and BEGINs, equal and decreasing
 * timestamps), signal handlers' blocks in and out of time order, damaged
 * blocks, cut files and rotated files; and recorded by the library. And
 * what the streaming exporters allocate, counted by this program's own
 * malloc, for a trace and one four times as long.
 */
#include "support/test_support.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <timeline/trace_event.h>

#include "recorder/export/export_stream.h"
#include "recorder/export/symbolize.h"
#include "recorder/export/trace_model.h"
#include "recorder/record.h"
#include "recorder/snapshot_format.h"
#include "recorder/snapshot_writer.h"
#include "recorder/tracer.h"

/* ---- a random source ----------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 0 .. n-1 */
static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static int chance(unsigned percent)
{
	return below(100) < percent;
}

/* ---- growing byte and word buffers --------------------------------------- */

typedef struct bytes {
	uint8_t *p;
	size_t len, cap;
} bytes;

static void put(bytes *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put_u32(bytes *b, uint32_t v)
{
	put(b, &v, sizeof v);
}

static void put_u64(bytes *b, uint64_t v)
{
	put(b, &v, sizeof v);
}

static void put_string(bytes *b, const char *s, size_t len)
{
	put_u32(b, (uint32_t)len);
	put(b, s, len);
}

typedef struct words {
	uint64_t *w;
	size_t n, cap;
} words;

static void word(words *w, uint64_t v)
{
	if (w->n == w->cap) {
		w->cap = w->cap * 2 + 64;
		w->w = realloc(w->w, w->cap * sizeof *w->w);
		assert_non_null(w->w);
	}
	w->w[w->n++] = v;
}

static void inline_string(words *w, const char *s, size_t len)
{
	word(w, len);
	for (size_t off = 0; off < len; off += 8) {
		uint64_t v = 0;
		memcpy(&v, s + off, len - off < 8 ? len - off : 8);
		word(w, v);
	}
}

/* ---- chunks ---------------------------------------------------------------- */

static size_t chunk_at;

static void chunk_begin(bytes *b, uint32_t type)
{
	chunk_at = b->len;
	put_u32(b, type);
	put_u32(b, 0);
	put_u64(b, 0);
}

static void chunk_end(bytes *b)
{
	uint64_t payload = b->len - chunk_at - 16;
	memcpy(b->p + chunk_at + 8, &payload, sizeof payload);
	static const uint8_t zeros[8];
	put(b, zeros, (8 - payload % 8) % 8);
}

/* ---- strings the events get ---------------------------------------------- */

/* Names with their lengths: one holds a NUL, which ends it in the output. */
#define NAME(s)                                                                                    \
	{                                                                                          \
		s, sizeof s - 1                                                                    \
	}
static const struct {
	const char *s;
	size_t len;
} names[] = {
    NAME("frame"),
    NAME("draw"),
    NAME("layout"),
    NAME(""),
    NAME("a \"quoted\" name\\"),
    NAME("tab\tand\nnewline"),
    NAME("pipe|name"),
    NAME("caf\xc3\xa9"),
    NAME("bad \xff utf8"),
    NAME("emb\0edded"),
    NAME("-1 dash"),
    NAME("x"),
};
#define NNAMES (sizeof names / sizeof names[0])

static void random_string(char *buf, size_t *len)
{
	size_t i = (size_t)below(NNAMES + 1);
	if (i < NNAMES) {
		memcpy(buf, names[i].s, names[i].len);
		*len = names[i].len;
		return;
	}
	/* long, sometimes beyond what an atrace payload holds */
	*len = (size_t)below(1500) + 1;
	for (size_t k = 0; k < *len; k++)
		buf[k] = (char)('a' + below(26));
}

/* ---- one generated trace ---------------------------------------------------- */

typedef struct gen {
	int ticks;            /* timestamps in ticks, converted through pairs */
	uint32_t ncategories; /* categories 0..n-1 named, some not */
	words *own;           /* per thread: its records */
	size_t *own_count;    /* records per thread */
	words *nested;        /* per thread: handler records */
	size_t *nested_count;
	size_t nthreads;
} gen;

static const char phases[] = {TL_PHASE_BEGIN,     TL_PHASE_END,           TL_PHASE_COMPLETE,
                              TL_PHASE_INSTANT,   TL_PHASE_COUNTER,       TL_PHASE_ASYNC_BEGIN,
                              TL_PHASE_ASYNC_END, TL_PHASE_ASYNC_INSTANT, TL_PHASE_FLOW_BEGIN,
                              TL_PHASE_FLOW_STEP, TL_PHASE_FLOW_END};

/* Appends one record. */
static void gen_record(words *w, uint64_t ts, char phase, unsigned flags, unsigned cat,
                       uint64_t value)
{
	char buf[1600];
	size_t len;
	unsigned nargs = chance(30) ? (unsigned)below(TL_MAX_ARGS + 1) : 0;
	unsigned types[TL_MAX_ARGS];
	unsigned argtypes = 0;
	for (unsigned i = 0; i < nargs; i++) {
		types[i] = 1 + (unsigned)below(TL_ARG_STRING_COPY);
		argtypes |= types[i] << (4 * i);
	}
	size_t start = w->n;
	word(w, ts);
	word(w, TL_REC_HEADER(phase, 0, flags | TL_REC_F_STRINGS_INLINE, cat, argtypes));
	if (tl_record_has_name(phase)) {
		random_string(buf, &len);
		inline_string(w, buf, len);
	}
	if (tl_record_has_value(phase))
		word(w, value);
	static const char *const keys[] = {"k", "frame", "k", "\"key\"", ""};
	for (unsigned i = 0; i < nargs; i++) {
		const char *key = keys[below(5)];
		inline_string(w, key, strlen(key));
		if (types[i] == TL_ARG_STRING || types[i] == TL_ARG_STRING_COPY) {
			random_string(buf, &len);
			inline_string(w, buf, len);
		} else if (types[i] == TL_ARG_DOUBLE) {
			double d =
			    chance(20) ? (chance(50) ? NAN : -INFINITY) : (double)below(1000) / 7;
			uint64_t bits;
			memcpy(&bits, &d, sizeof bits);
			word(w, bits);
		} else {
			word(w, rnd());
		}
	}
	w->w[start + 1] |= (uint64_t)(w->n - start) << TL_REC_WORDS_SHIFT;
}

/*
 * A thread's events: a time that mostly advances by small steps (often
 * none), sometimes jumps back; BEGINs and ENDs around a depth that wanders,
 * COMPLETE events that started a while ago (sometimes with a BEGIN), the
 * other kinds in between.
 */
static void gen_thread(gen *g, size_t t, size_t nevents, int deep)
{
	uint64_t ts = 1000 + below(50);
	size_t depth = 0;
	uint64_t begin_ts[64];
	for (size_t i = 0; i < nevents; i++) {
		if (chance(25))
			; /* the same time */
		else if (chance(40))
			ts += below(4);
		else if (chance(2) && ts > 100)
			ts -= below(100);
		else
			ts += below(1000);
		char phase;
		if (deep && i < nevents / 2)
			phase = TL_PHASE_BEGIN;
		else if (deep)
			phase = TL_PHASE_END;
		else if (depth > 6 ? chance(45) : chance(25))
			phase = TL_PHASE_END;
		else if (chance(30))
			phase = TL_PHASE_BEGIN;
		else
			phase = phases[2 + below(sizeof phases - 2)];
		unsigned scope = (unsigned)below(4);
		unsigned flags = scope << TL_REC_F_SCOPE_SHIFT;
		if (!g->ticks || chance(5))
			flags |= TL_REC_F_TS_NS;
		uint64_t value = below(6);
		if (phase == TL_PHASE_COMPLETE) {
			/* ends now (or before it starts) and started a while ago,
			 * sometimes with a BEGIN still open */
			uint64_t start = ts - below(ts < 3000 ? ts : 3000);
			if (depth && chance(30))
				start = begin_ts[below(depth < 64 ? depth : 64)];
			value = chance(10) ? start - below(5) : ts;
			gen_record(&g->own[t], start, phase, flags,
			           (unsigned)below(g->ncategories + 2), value);
			g->own_count[t]++;
			continue;
		}
		if (phase == TL_PHASE_COUNTER) {
			flags |= chance(50) ? TL_REC_F_COUNTER_DOUBLE : 0;
			if (flags & TL_REC_F_COUNTER_DOUBLE) {
				double d = chance(15)   ? NAN
				           : chance(10) ? INFINITY
				                        : (double)below(100) / 3;
				memcpy(&value, &d, sizeof d);
			} else {
				value = rnd();
			}
		}
		if (phase == TL_PHASE_BEGIN) {
			if (depth < 64)
				begin_ts[depth] = ts;
			depth++;
		} else if (phase == TL_PHASE_END && depth) {
			depth--;
		}
		/* a signal handler's event now and then */
		int handler = !deep && chance(4);
		words *w = handler ? &g->nested[t] : &g->own[t];
		gen_record(w, ts, phase, flags, (unsigned)below(g->ncategories + 2), value);
		if (handler)
			g->nested_count[t]++;
		else
			g->own_count[t]++;
	}
}

/* Appends one record with a fixed name, no args, its timestamp in ns. */
static void plain_record(words *w, uint64_t ts, char phase, const char *name, uint64_t value)
{
	size_t start = w->n;
	word(w, ts);
	word(w, TL_REC_HEADER(phase, 0, TL_REC_F_STRINGS_INLINE | TL_REC_F_TS_NS, 0, 0));
	if (tl_record_has_name(phase))
		inline_string(w, name, strlen(name));
	if (tl_record_has_value(phase))
		word(w, value);
	w->w[start + 1] |= (uint64_t)(w->n - start) << TL_REC_WORDS_SHIFT;
}

/*
 * A thread whose events repeat: a slice holding an instant, a COMPLETE
 * event inside another (recorded as a scope records them, inner first) and
 * a counter; all inside a slice and a COMPLETE event that span the thread.
 * Its nesting is the same however many times it repeats.
 */
static void gen_regular_thread(gen *g, size_t t, size_t repeats)
{
	words *w = &g->own[t];
	plain_record(w, 1000, TL_PHASE_BEGIN, "main", 0);
	uint64_t ts = 2000;
	for (size_t i = 0; i < repeats; i++, ts += 100) {
		plain_record(w, ts, TL_PHASE_BEGIN, "frame", 0);
		plain_record(w, ts + 10, TL_PHASE_INSTANT, "tick", 0);
		plain_record(w, ts + 20, TL_PHASE_COMPLETE, "inner", ts + 40);
		plain_record(w, ts + 15, TL_PHASE_COMPLETE, "outer", ts + 50);
		plain_record(w, ts + 55, TL_PHASE_COUNTER, "queue", i % 7);
		plain_record(w, ts + 60, TL_PHASE_END, "", 0);
	}
	plain_record(w, 1500, TL_PHASE_COMPLETE, "all", ts);
	plain_record(w, ts + 10, TL_PHASE_END, "", 0);
	g->own_count[t] = 6 * repeats + 3;
}

/* A record boundary table of a word buffer, for splitting it into blocks. */
static size_t record_starts(const words *w, size_t *starts)
{
	size_t n = 0;
	for (size_t pos = 0; pos < w->n; pos += TL_REC_WORDS(w->w[pos + 1]))
		starts[n++] = pos;
	starts[n] = w->n;
	return n;
}

typedef struct block_piece {
	uint32_t tid;
	uint32_t type;
	uint64_t seq;
	const uint64_t *w;
	size_t n;
} block_piece;

/* Splits a thread's records into blocks of a few records each. */
static size_t split_blocks(const words *w, uint32_t tid, uint32_t type, uint64_t *seq,
                           block_piece *out, int out_of_order)
{
	if (!w->n)
		return 0;
	size_t *starts = malloc((w->n + 1) * sizeof *starts);
	assert_non_null(starts);
	size_t nrec = record_starts(w, starts), nblocks = 0;
	for (size_t r = 0; r < nrec;) {
		size_t take = 1 + (size_t)below(40);
		if (take > nrec - r)
			take = nrec - r;
		out[nblocks++] = (block_piece){tid, type, (*seq)++, w->w + starts[r],
		                               starts[r + take] - starts[r]};
		r += take;
	}
	if (out_of_order && nblocks > 1) {
		/* the handler's blocks in another order than their events' times */
		for (size_t i = 0; i < nblocks; i++)
			out[i].seq = *seq + (nblocks - i) * 2;
		*seq += nblocks * 2 + 1;
	}
	free(starts);
	return nblocks;
}

static void gen_free(gen *g)
{
	for (size_t t = 0; t < g->nthreads; t++) {
		free(g->own[t].w);
		free(g->nested[t].w);
	}
	free(g->own);
	free(g->own_count);
	free(g->nested);
	free(g->nested_count);
}

/* Writes the snapshot's header and metadata chunks. */
static void write_metadata(bytes *b, const gen *g, uint32_t pid)
{
	put(b, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN);
	put_u32(b, TL_SNAPSHOT_VERSION);
	put_u32(b, TL_SNAPSHOT_HEADER_BYTES);
	put_u32(b, 0);
	put_u32(b, pid);
	put_u64(b, 0);

	chunk_begin(b, TL_CHUNK_PROCESS);
	put_u32(b, pid);
	const char *process = chance(20) ? "" : "game \"x\"";
	put_string(b, process, strlen(process));
	chunk_end(b);

	chunk_begin(b, TL_CHUNK_CLOCK);
	put_u32(b, chance(80) ? 7 : 1);
	put_u32(b, (uint32_t)g->ticks);
	uint32_t npairs = g->ticks ? 1 + (uint32_t)below(4) : 0;
	put_u32(b, npairs);
	put_u32(b, 0);
	put_u64(b, 111);
	put_u64(b, 222);
	put_u64(b, 333);
	put_u64(b, 500000 + below(1000000)); /* the snapshot's time */
	for (uint32_t i = 0; i < npairs; i++) {
		put_u64(b, 1000 + i * 100000);
		put_u64(b, 2000 + i * (100000 + below(50000)));
	}
	chunk_end(b);

	for (uint32_t i = 0; i < g->ncategories; i++) {
		if (chance(20))
			continue; /* unnamed: "?" */
		chunk_begin(b, TL_CHUNK_CATEGORY);
		put_u32(b, i);
		const char *name = i == 1 ? "" : i == 2 ? "c|at\"e" : "app";
		put_string(b, name, strlen(name));
		chunk_end(b);
	}
	for (size_t t = 0; t < g->nthreads + 2; t++) {
		if (chance(30))
			continue;
		chunk_begin(b, TL_CHUNK_THREAD);
		put_u32(b, 100 + (uint32_t)t * 3);
		const char *name = chance(20) ? "" : chance(50) ? "worker thread-1" : "main";
		put_string(b, name, strlen(name));
		chunk_end(b);
	}
	if (chance(30)) {
		chunk_begin(b, TL_CHUNK_THREAD_DROPS);
		put_u32(b, 1);
		put_u32(b, 0);
		put_u32(b, 100);
		put_u32(b, 0);
		put_u64(b, below(1000));
		chunk_end(b);
	}
}

static void write_stats(bytes *b)
{
	chunk_begin(b, TL_CHUNK_STATS);
	put_u32(b, TL_SNAPSHOT_STATS_COUNT);
	put_u32(b, 0);
	for (int i = 0; i < TL_SNAPSHOT_STATS_COUNT; i++)
		put_u64(b, below(1000));
	put_string(b, "ring", 4);
	chunk_end(b);
}

static void write_block(bytes *b, const block_piece *piece, int damage)
{
	chunk_begin(b, piece->type);
	put_u32(b, piece->tid);
	put_u32(b, 0);
	put_u64(b, piece->seq);
	put_u64(b, piece->n);
	size_t at = b->len;
	put(b, piece->w, piece->n * sizeof *piece->w);
	if (damage && piece->n > 2) {
		/* a record in the middle that does not decode: the rest is lost */
		size_t pos = 0, target = (size_t)below(piece->n);
		uint64_t w[2];
		while (pos < piece->n) {
			memcpy(w, b->p + at + pos * 8, sizeof w);
			size_t len = TL_REC_WORDS(w[1]);
			if (pos + len > target)
				break;
			pos += len;
		}
		if (pos < piece->n) {
			w[1] = (w[1] & ~((uint64_t)0xff << TL_REC_PHASE_SHIFT)) |
			       ((uint64_t)'Z' << TL_REC_PHASE_SHIFT);
			memcpy(b->p + at + pos * 8 + 8, &w[1], 8);
		}
	}
	chunk_end(b);
}

typedef struct shape {
	size_t threads;
	size_t events; /* per thread, at most */
	int rotate;    /* several snapshots in a row */
	int cut;       /* the input cut short */
	int damage;    /* undecodable records */
	int deep;      /* a thread nested beyond the depth cap */
	int regular;   /* gen_regular_thread's threads, events / 6 repeats each */
} shape;

/* A snapshot of the given shape; *len its size. */
static uint8_t *generate(const shape *sh, size_t *len)
{
	gen g = {0};
	g.ticks = sh->regular ? 0 : chance(50);
	g.ncategories = 1 + (uint32_t)below(4);
	g.nthreads = sh->threads;
	g.own = calloc(g.nthreads, sizeof *g.own);
	g.own_count = calloc(g.nthreads, sizeof *g.own_count);
	g.nested = calloc(g.nthreads, sizeof *g.nested);
	g.nested_count = calloc(g.nthreads, sizeof *g.nested_count);
	assert_true(g.own && g.own_count && g.nested && g.nested_count);
	for (size_t t = 0; t < g.nthreads; t++) {
		if (sh->regular)
			gen_regular_thread(&g, t, sh->events / 6);
		else
			gen_thread(&g, t, (size_t)below(sh->events + 1), sh->deep && t == 0);
	}

	/* every thread's blocks, then shuffled */
	size_t cap = 16;
	for (size_t t = 0; t < g.nthreads; t++)
		cap += g.own[t].n + g.nested[t].n;
	block_piece *pieces = malloc(cap * sizeof *pieces);
	assert_non_null(pieces);
	size_t npieces = 0;
	for (size_t t = 0; t < g.nthreads; t++) {
		uint32_t tid = t == 1 && chance(20) ? 0 : 100 + (uint32_t)t * 3;
		uint64_t seq = below(5);
		npieces += split_blocks(&g.own[t], tid, TL_CHUNK_BLOCK, &seq, pieces + npieces, 0);
		npieces += split_blocks(&g.nested[t], tid, TL_CHUNK_NESTED_BLOCK, &seq,
		                        pieces + npieces, chance(50));
	}
	for (size_t i = npieces; i > 1; i--) {
		size_t j = (size_t)below(i);
		block_piece tmp = pieces[i - 1];
		pieces[i - 1] = pieces[j];
		pieces[j] = tmp;
	}

	bytes b = {0};
	uint32_t pid = 4000 + (uint32_t)below(100);
	size_t files = sh->rotate ? 2 + (size_t)below(2) : 1;
	for (size_t f = 0; f < files; f++) {
		write_metadata(&b, &g, pid);
		for (size_t i = f; i < npieces; i += files)
			write_block(&b, &pieces[i], sh->damage && chance(10));
		if (f == files - 1)
			write_stats(&b);
		chunk_begin(&b, TL_CHUNK_END);
		chunk_end(&b);
	}
	if (sh->cut && b.len > 64)
		b.len = 40 + (size_t)below(b.len - 40);
	free(pieces);
	gen_free(&g);
	*len = b.len;
	return b.p;
}

/* ---- both ways -------------------------------------------------------------- */

/* A file in memory to export into; its contents read back. */
static char *read_back(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	char *text = malloc((size_t)end + 1);
	assert_non_null(text);
	assert_int_equal(pread(fd, text, (size_t)end, 0), end);
	text[end] = '\0';
	*len = (size_t)end;
	return text;
}

static int memory_file(void)
{
	int fd = memfd_create("export", MFD_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

typedef struct export_result {
	int rc;
	char *text;
	size_t len;
	tl_export_counts counts;
	char err[256];
	uint64_t blocks_torn;
	size_t nevents;
	/* words of packed blocks' records: unpacked at most at once, and
	 * the whole input's */
	size_t unpacked_peak;
	size_t unpacked_total;
} export_result;

static export_result export_model(const uint8_t *data, size_t len,
                                  int (*exporter)(const tl_model *, int, tl_export_counts *))
{
	export_result res = {0};
	tl_model model;
	res.rc = tl_model_read_binary(data, len, &model, res.err, sizeof res.err);
	if (res.rc)
		return res;
	int fd = memory_file();
	res.rc = exporter(&model, fd, &res.counts);
	res.text = read_back(fd, &res.len);
	res.blocks_torn = model.stats.blocks_torn;
	res.nevents = model.nevents;
	close(fd);
	tl_model_free(&model);
	return res;
}

static export_result export_stream(const uint8_t *data, size_t len, tl_export_stream_fn exporter)
{
	export_result res = {0};
	tl_model meta;
	tl_snapshot_read r;
	res.rc = tl_snapshot_read_open(&r, data, len, &meta, res.err, sizeof res.err);
	if (res.rc)
		return res;
	for (size_t i = 0; i < r.nblocks; i++)
		if (r.blocks[i].packed)
			res.unpacked_total += r.blocks[i].nwords;
	int fd = memory_file();
	res.rc = exporter(&r, fd, &res.counts);
	res.unpacked_peak = r.unpacked_peak;
	res.text = read_back(fd, &res.len);
	tl_snapshot_read_finish(&r);
	res.blocks_torn = meta.stats.blocks_torn;
	res.nevents = (size_t)r.nevents;
	close(fd);
	tl_snapshot_read_close(&r);
	tl_model_free(&meta);
	return res;
}

/* Prints where two outputs part, and fails. */
static void fail_difference(const char *what, const export_result *a, const export_result *b)
{
	size_t i = 0;
	while (i < a->len && i < b->len && a->text[i] == b->text[i])
		i++;
	size_t from = i > 300 ? i - 300 : 0;
	fail_msg("%s differs at byte %zu (model %zu bytes, stream %zu)\n--- model ---\n%.600s\n"
	         "--- stream ---\n%.600s\n",
	         what, i, a->len, b->len, a->text + from, b->text + from);
}

static void assert_same(const char *what, const export_result *model, const export_result *stream)
{
	assert_int_equal(model->rc, stream->rc);
	assert_string_equal(model->err, stream->err);
	if (model->rc)
		return;
	if (model->len != stream->len || memcmp(model->text, stream->text, model->len) != 0)
		fail_difference(what, model, stream);
	assert_int_equal(model->counts.unmatched_begin, stream->counts.unmatched_begin);
	assert_int_equal(model->counts.unmatched_end, stream->counts.unmatched_end);
	assert_int_equal(model->blocks_torn, stream->blocks_torn);
	assert_int_equal(model->nevents, stream->nevents);
}

static void free_result(export_result *r)
{
	free(r->text);
}

static const struct format {
	const char *name;
	int (*model)(const tl_model *, int, tl_export_counts *);
	tl_export_stream_fn stream;
} formats[] = {
    {"JSON", tl_export_json, tl_export_json_stream},
    {"ftrace text", tl_export_ftrace, tl_export_ftrace_stream},
    {"Perfetto", tl_export_perfetto, tl_export_perfetto_stream},
};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* Exports data both ways in every format; fails when they differ. The
 * streamed exports' unpacked words at most into peak[format] (may be
 * NULL), the input's into *total. */
static void check_both_ways_unpacking(const uint8_t *data, size_t len, size_t peak[NFORMATS],
                                      size_t *total)
{
	for (size_t f = 0; f < NFORMATS; f++) {
		export_result m = export_model(data, len, formats[f].model);
		export_result s = export_stream(data, len, formats[f].stream);
		assert_same(formats[f].name, &m, &s);
		if (peak)
			peak[f] = s.unpacked_peak;
		if (total)
			*total = s.unpacked_total;
		free_result(&m);
		free_result(&s);
	}
}

static void check_both_ways(const uint8_t *data, size_t len)
{
	check_both_ways_unpacking(data, len, NULL, NULL);
}

static void check_shapes(const shape *sh, unsigned seeds)
{
	for (unsigned seed = 1; seed <= seeds; seed++) {
		rng_state = seed * 7919u + sh->threads * 31u + sh->events;
		size_t len;
		uint8_t *data = generate(sh, &len);
		check_both_ways(data, len);
		free(data);
	}
}

/* ---- tests ------------------------------------------------------------------ */

static void test_stream_equals_model_for_small_varied_snapshots(void **state)
{
	(void)state;
	shape sh = {.threads = 3, .events = 40};
	check_shapes(&sh, 400);
}

static void test_stream_equals_model_for_large_varied_snapshots(void **state)
{
	(void)state;
	shape sh = {.threads = 6, .events = 20000};
	check_shapes(&sh, 6);
}

static void test_stream_equals_model_past_the_depth_cap(void **state)
{
	(void)state;
	shape sh = {.threads = 2, .events = 1400, .deep = 1};
	check_shapes(&sh, 10);
}

static void test_stream_equals_model_with_damaged_blocks(void **state)
{
	(void)state;
	shape sh = {.threads = 3, .events = 300, .damage = 1};
	check_shapes(&sh, 60);
}

static void test_stream_equals_model_for_cut_snapshots(void **state)
{
	(void)state;
	shape sh = {.threads = 3, .events = 300, .cut = 1};
	check_shapes(&sh, 60);
}

static void test_stream_equals_model_for_rotated_files(void **state)
{
	(void)state;
	shape sh = {.threads = 4, .events = 500, .rotate = 1};
	check_shapes(&sh, 30);
}

static void test_stream_reads_unaligned_input(void **state)
{
	(void)state;
	rng_state = 99;
	shape sh = {.threads = 2, .events = 200};
	size_t len;
	uint8_t *data = generate(&sh, &len);
	uint8_t *shifted = malloc(len + 1);
	assert_non_null(shifted);
	memcpy(shifted + 1, data, len);
	check_both_ways(shifted + 1, len);
	free(shifted);
	free(data);
}

static void test_stream_rejects_what_the_model_rejects(void **state)
{
	(void)state;
	static const uint8_t junk[] = "{\"traceEvents\":[]}";
	check_both_ways(junk, sizeof junk - 1);
	check_both_ways(junk, 0);
}

/* ---- recorded by the library ------------------------------------------------ */

static void *record_events(void *arg)
{
	int n = *(int *)arg;
	for (int i = 0; i < n; i++) {
		TL_TRACE_EVENT_BEGIN1("app", "frame", "i", i);
		TL_TRACE_EVENT_INSTANT0("app", "tick", TL_EVENT_SCOPE_THREAD);
		TL_TRACE_EVENT_COUNTER("app", "queue", i % 7);
		if (i % 5 == 0)
			TL_TRACE_EVENT_FLOW_BEGIN0("app", "post", (uint64_t)i);
		if (i % 3 == 0)
			TL_TRACE_EVENT_ASYNC_BEGIN0("net", "fetch", (uint64_t)i);
		tl_timestamp now = tl_now();
		TL_TRACE_EVENT_COMPLETE("app", "work", now - 500, now);
		if (i % 3 == 0)
			TL_TRACE_EVENT_ASYNC_END0("net", "fetch", (uint64_t)i);
		TL_TRACE_EVENT_END0("app", "frame");
	}
	return NULL;
}

static void test_stream_equals_model_for_a_recorded_snapshot(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_ENDLESS, 64u << 20);
	int n = 3000;
	pthread_t threads[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, record_events, &n), 0);
	record_events(&n);
	for (int i = 0; i < 3; i++)
		pthread_join(threads[i], NULL);
	unsigned char *data;
	size_t len;
	assert_int_equal(tl_snapshot_to_memory(&data, &len), 0);
	tl_shutdown();
	check_both_ways(data, len);
	free(data);
}

static void named_function(void)
{
}

static void other_named_function(void)
{
}

/* Function records (an id in a two-word BEGIN) are named from the
 * snapshot's FUNCTIONS and MAPPING chunks, both ways alike: by symbol, or
 * by module and offset without elfutils. */
static void test_stream_names_function_records_as_the_model_does(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	const tl_category *function = tl_category_get("function");
	for (int i = 0; i < 100; i++) {
		assert_true(tl_tracer_function_enter((const void *)named_function, NULL) != 0);
		assert_true(tl_tracer_function_enter((const void *)other_named_function, NULL) != 0);
		tl_tracer_end(function);
		tl_tracer_end(function);
	}
	unsigned char *data;
	size_t len;
	assert_int_equal(tl_snapshot_to_memory(&data, &len), 0);
	tl_shutdown();
	check_both_ways(data, len);
	export_result s = export_stream(data, len, tl_export_json_stream);
	assert_int_equal(s.rc, 0);
	/* named by module and offset, in the category `function` */
	static const char cat[] = "\"cat\":\"function\"";
	assert_non_null(memmem(s.text, s.len, cat, strlen(cat)));
	if (tl_symbolizer_available()) /* by symbol */
		assert_non_null(memmem(s.text, s.len, "\"other_named_function\"", 22));
	else
		assert_non_null(memmem(s.text, s.len, "+0x", 3));
	assert_null(memmem(s.text, s.len, "function#", 9));
	assert_null(memmem(s.text, s.len, "unnamed", 7));
	free_result(&s);
	free(data);
}

/* ---- what the exporters allocate ------------------------------------------- */

/*
 * This program's malloc, calloc, realloc and free count the bytes in use
 * (as malloc_usable_size gives them) and, while measuring, their peak;
 * glibc's own functions do the allocating. Not in a sanitizer's build,
 * whose allocator is its own, nor without glibc.
 */
#if !TL_TEST_SANITIZED && defined(__GLIBC__)
#define COUNTS_ALLOCATIONS 1

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

static int64_t bytes_in_use, bytes_peak;
static int measuring;

static void count_allocated(void *p)
{
	if (!p)
		return;
	int64_t now =
	    __atomic_add_fetch(&bytes_in_use, (int64_t)malloc_usable_size(p), __ATOMIC_RELAXED);
	if (__atomic_load_n(&measuring, __ATOMIC_RELAXED) && now > bytes_peak)
		bytes_peak = now;
}

static void count_freed(void *p)
{
	if (p)
		__atomic_sub_fetch(&bytes_in_use, (int64_t)malloc_usable_size(p), __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);
	count_allocated(p);
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	count_allocated(p);
	return p;
}

void *realloc(void *old, size_t size)
{
	size_t old_size = old ? malloc_usable_size(old) : 0;
	void *p = __libc_realloc(old, size);
	if (p || size == 0)
		__atomic_sub_fetch(&bytes_in_use, (int64_t)old_size, __ATOMIC_RELAXED);
	count_allocated(p);
	return p;
}

void free(void *p)
{
	count_freed(p);
	__libc_free(p);
}
#endif

#ifdef COUNTS_ALLOCATIONS
/* The most bytes the exporter had allocated at once, exporting data (the
 * snapshot read and the output file made before it; with_open: the
 * reading of the snapshot counted too); *nevents the events read. */
static int64_t export_peak(const uint8_t *data, size_t len, tl_export_stream_fn exporter,
                           uint64_t *nevents, int with_open)
{
	tl_model meta;
	tl_snapshot_read r;
	int fd = memory_file();
	int64_t before = __atomic_load_n(&bytes_in_use, __ATOMIC_RELAXED);
	bytes_peak = before;
	if (with_open)
		__atomic_store_n(&measuring, 1, __ATOMIC_RELAXED);
	assert_int_equal(tl_snapshot_read_open(&r, data, len, &meta, NULL, 0), 0);
	if (!with_open) {
		before = __atomic_load_n(&bytes_in_use, __ATOMIC_RELAXED);
		bytes_peak = before;
	}
	__atomic_store_n(&measuring, 1, __ATOMIC_RELAXED);
	assert_int_equal(exporter(&r, fd, NULL), 0);
	__atomic_store_n(&measuring, 0, __ATOMIC_RELAXED);
	*nevents = r.nevents;
	close(fd);
	tl_snapshot_read_close(&r);
	tl_model_free(&meta);
	return bytes_peak - before;
}
#endif

/*
 * What an exporter allocates for a trace of 3 threads and for one four
 * times as long, with the same nesting (gen_regular_thread: slices, nested
 * COMPLETE events, instants, counters, a slice and a COMPLETE event open
 * throughout): the longer one may take less than a byte per event more.
 * That leaves room for what grows by segment of 256 events (their earliest
 * timestamps, 8 bytes each) and for allocations rounded up; anything kept
 * per event or per slice (a listed COMPLETE event took 32 bytes) exceeds it.
 */
static void check_memory_bounded(tl_export_stream_fn exporter)
{
#ifndef COUNTS_ALLOCATIONS
	(void)exporter;
	print_message("skipped: allocations are counted only in a build with glibc's malloc and "
	              "no sanitizer\n");
	skip();
#else
	int64_t peak[2];
	uint64_t nevents[2];
	for (int i = 0; i < 2; i++) {
		rng_state = 4242;
		shape sh = {.threads = 3, .events = (i ? 4 : 1) * 60000, .regular = 1};
		size_t len;
		uint8_t *data = generate(&sh, &len);
		peak[i] = export_peak(data, len, exporter, &nevents[i], 0);
		free(data);
	}
	double per_event = (double)(peak[1] - peak[0]) / (double)(nevents[1] - nevents[0]);
	print_message("peak allocated: %lld bytes for %llu events, %lld for %llu: %.3f bytes a "
	              "further event\n",
	              (long long)peak[0], (unsigned long long)nevents[0], (long long)peak[1],
	              (unsigned long long)nevents[1], per_event);
	assert_true(nevents[1] > 3 * nevents[0]);
	assert_true(per_event < 1.0);
#endif
}

static void test_stream_json_memory_does_not_grow_with_the_trace(void **state)
{
	(void)state;
	check_memory_bounded(tl_export_json_stream);
}

static void test_stream_ftrace_memory_does_not_grow_with_the_trace(void **state)
{
	(void)state;
	check_memory_bounded(tl_export_ftrace_stream);
}

/* A file recorder's file, by FILE_THREADS threads running writer with
 * blocks of block_bytes (0: the default): malloc'd, *len its size. The
 * pool holds every event: nothing is dropped, however slow the drain. */
#define FILE_THREADS 4
#define FILE_PAIRS 20000
#define FILE_SMALL_BLOCK 4096

static int file_pairs = FILE_PAIRS;

static uint8_t *record_file(void *(*writer)(void *), size_t block_bytes, size_t *len)
{
	const char *path = tl_test_path("export-stream-file", ".tl");
	tl_shutdown();
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .buffer_bytes = 16u << 20,
	                .block_bytes = block_bytes,
	                .file_path = path};
	assert_int_equal(tl_init(&o), 0);
	pthread_t t[FILE_THREADS];
	for (int i = 0; i < FILE_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, NULL), 0);
	for (int i = 0; i < FILE_THREADS; i++)
		pthread_join(t[i], NULL);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
	tl_shutdown();
	void *data;
	size_t failed;
	assert_int_equal(tl_snapshot_load_files(&path, 1, &data, len, &failed), 0);
	unlink(path);
	return data;
}

/* Runs of plain begins and ends (packed in the file) between events of
 * every other kind, flows among them. */
static void *write_mixed(void *arg)
{
	(void)arg;
	int one = 1;
	for (int i = 0; i < 2000; i++) {
		record_events(&one);
		for (int k = 0; k < 8; k++) {
			TL_TRACE_EVENT_BEGIN0("file", "pair");
			TL_TRACE_EVENT_END0("file", "pair");
		}
	}
	return NULL;
}

/* A file recorder's file, with packed runs, exports streamed (the
 * unpacked records freed behind the passes: the records still kept named,
 * flows' records copied) to the bytes of its model (every thread read
 * first), in every format; no export holds every record unpacked at once. */
static void check_file_exports(void *(*writer)(void *))
{
	size_t len, peak[NFORMATS], total;
	uint8_t *data = record_file(writer, FILE_SMALL_BLOCK, &len);
	check_both_ways_unpacking(data, len, peak, &total);
	for (size_t f = 0; f < NFORMATS; f++) {
		print_message("%s: %zu of %zu unpacked words held at most\n", formats[f].name,
		              peak[f], total);
		assert_true(peak[f] < total / 16);
	}
	free(data);
}

static void test_stream_equals_model_for_a_file_recorder_file(void **state)
{
	(void)state;
	check_file_exports(write_mixed);
}

/*
 * What the passes hold past their cursors, in a file of many blocks: a
 * slice open throughout (closed at the snapshot), COMPLETE events that
 * span more than two survey segments (listed by the survey: "far"),
 * zero-length slices whose END has args and slices with a flow with args
 * (their records copied for the second run), between runs of pairs.
 */
static void *write_far(void *arg)
{
	(void)arg;
	static _Atomic uint64_t next_id = 1;
	TL_TRACE_EVENT_BEGIN0("file", "outer");
	for (int round = 0; round < 40; round++) {
		tl_timestamp start = tl_now();
		for (int i = 0; i < 300; i++) {
			TL_TRACE_EVENT_BEGIN0("file", "pair");
			TL_TRACE_EVENT_END0("file", "pair");
		}
		tl_timestamp now = tl_now();
		TL_TRACE_EVENT_BEGIN1("file", "zero", "round", round);
		TL_TRACE_EVENT_END1("file", "zero", "done", round);
		TL_TRACE_EVENT_BEGIN0("file", "sender");
		TL_TRACE_EVENT_FLOW_BEGIN1("file", "post", next_id++, "round", round);
		TL_TRACE_EVENT_END1("file", "sender", "sent", round);
		TL_TRACE_EVENT_COMPLETE("file", "far", start, now);
	}
	return NULL;
}

/* Every kind of record the passes keep, in a file recorder's file: the
 * exports are the model's, and none holds every record unpacked. */
static void test_stream_equals_model_for_a_file_with_far_and_noted_slices(void **state)
{
	(void)state;
	check_file_exports(write_far);
}

/* Begin/end pairs only: one packed run after another. */
static void *write_pairs(void *arg)
{
	(void)arg;
	for (int i = 0; i < file_pairs; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "pair");
		TL_TRACE_EVENT_END0("file", "pair");
	}
	return NULL;
}

/*
 * Each exporter holds the unpacked records of a few blocks per thread at
 * once, however long the file: a file four times as long is exported
 * holding at most twice as many (how many depends on how the threads'
 * events overlap in time, which the scheduler decides), an eighth of them
 * at most; where allocations are counted, allocating less than 2 bytes
 * more per further event: the reader's index of the blocks (80 bytes per
 * 4 KiB block, in an array grown by doubling) and the surveys, where every
 * record unpacked would take 20 bytes an event.
 */
static void test_stream_exports_hold_a_file_a_few_blocks_at_a_time(void **state)
{
	(void)state;
	size_t len[2], peak[2][NFORMATS], total[2];
	uint8_t *data[2];
	for (int i = 0; i < 2; i++) {
		file_pairs = (i ? 4 : 1) * FILE_PAIRS / 4;
		data[i] = record_file(write_pairs, FILE_SMALL_BLOCK, &len[i]);
		check_both_ways_unpacking(data[i], len[i], peak[i], &total[i]);
	}
	file_pairs = FILE_PAIRS;
	for (size_t f = 0; f < NFORMATS; f++) {
		print_message("%s: unpacked words held at most: %zu of %zu, then %zu of %zu\n",
		              formats[f].name, peak[0][f], total[0], peak[1][f], total[1]);
		assert_true(total[1] > 3 * total[0]);
		assert_true(peak[1][f] <= 2 * peak[0][f]);
		assert_true(peak[1][f] < total[1] / 8);
#ifdef COUNTS_ALLOCATIONS
		uint64_t nevents[2];
		int64_t allocated[2];
		for (int i = 0; i < 2; i++)
			allocated[i] =
			    export_peak(data[i], len[i], formats[f].stream, &nevents[i], 1);
		double per_event =
		    (double)(allocated[1] - allocated[0]) / (double)(nevents[1] - nevents[0]);
		print_message("%s: peak allocated %lld bytes for %llu events, %lld for %llu: %.3f "
		              "bytes a further event\n",
		              formats[f].name, (long long)allocated[0],
		              (unsigned long long)nevents[0], (long long)allocated[1],
		              (unsigned long long)nevents[1], per_event);
		assert_int_equal(nevents[1], 2 * FILE_THREADS * FILE_PAIRS);
		assert_true(per_event < 2.0);
#endif
	}
	free(data[0]);
	free(data[1]);
}

static void test_stream_perfetto_memory_does_not_grow_with_the_trace(void **state)
{
	(void)state;
	check_memory_bounded(tl_export_perfetto_stream);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_equals_model_for_small_varied_snapshots),
	    cmocka_unit_test(test_stream_equals_model_for_large_varied_snapshots),
	    cmocka_unit_test(test_stream_equals_model_past_the_depth_cap),
	    cmocka_unit_test(test_stream_equals_model_with_damaged_blocks),
	    cmocka_unit_test(test_stream_equals_model_for_cut_snapshots),
	    cmocka_unit_test(test_stream_equals_model_for_rotated_files),
	    cmocka_unit_test(test_stream_reads_unaligned_input),
	    cmocka_unit_test(test_stream_rejects_what_the_model_rejects),
	    cmocka_unit_test(test_stream_equals_model_for_a_recorded_snapshot),
	    cmocka_unit_test(test_stream_names_function_records_as_the_model_does),
	    cmocka_unit_test(test_stream_json_memory_does_not_grow_with_the_trace),
	    cmocka_unit_test(test_stream_ftrace_memory_does_not_grow_with_the_trace),
	    cmocka_unit_test(test_stream_perfetto_memory_does_not_grow_with_the_trace),
	    cmocka_unit_test(test_stream_equals_model_for_a_file_recorder_file),
	    cmocka_unit_test(test_stream_equals_model_for_a_file_with_far_and_noted_slices),
	    cmocka_unit_test(test_stream_exports_hold_a_file_a_few_blocks_at_a_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
