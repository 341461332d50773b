/*
 * tl_model_read_binary: a snapshot built byte by byte in the test, read back
 * into a model; truncated, damaged and foreign input.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/export/snapshot_read.h"
#include "recorder/export/trace_model.h"
#include "recorder/record.h"
#include "recorder/snapshot_format.h"

#define ARGTYPES(a, b, c, d)                                                                       \
	((unsigned)(a) | (unsigned)(b) << 4 | (unsigned)(c) << 8 | (unsigned)(d) << 12)
#define INLINE TL_REC_F_STRINGS_INLINE

/* ---- building records ------------------------------------------------------ */

struct rec {
	uint64_t w[512];
	size_t n;
	size_t start;
};

static void rec_start(struct rec *r, uint64_t ts, char phase, unsigned flags, unsigned cat,
                      unsigned argtypes)
{
	r->start = r->n;
	r->w[r->n++] = ts;
	r->w[r->n++] = TL_REC_HEADER(phase, 0, flags, cat, argtypes);
}

static void rec_word(struct rec *r, uint64_t v)
{
	r->w[r->n++] = v;
}

static void rec_string(struct rec *r, const char *s)
{
	size_t len = strlen(s);
	rec_word(r, len);
	for (size_t off = 0; off < len; off += 8) {
		uint64_t word = 0;
		memcpy(&word, s + off, len - off < 8 ? len - off : 8);
		rec_word(r, word);
	}
}

static void rec_end(struct rec *r)
{
	r->w[r->start + 1] |= (uint64_t)(r->n - r->start) << TL_REC_WORDS_SHIFT;
}

static uint64_t double_bits(double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	return bits;
}

/* ---- building snapshots ---------------------------------------------------- */

struct snap {
	uint8_t *buf;
	size_t len;
	size_t cap;
	size_t chunk_at;
};

static void put(struct snap *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->buf = realloc(s->buf, s->cap);
		assert_non_null(s->buf);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void put_u32(struct snap *s, uint32_t v)
{
	put(s, &v, sizeof v);
}

static void put_u64(struct snap *s, uint64_t v)
{
	put(s, &v, sizeof v);
}

static void put_string(struct snap *s, const char *str)
{
	put_u32(s, (uint32_t)strlen(str));
	put(s, str, strlen(str));
}

static void snap_header(struct snap *s, uint32_t version, uint32_t flags, uint32_t pid)
{
	put(s, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN);
	put_u32(s, version);
	put_u32(s, TL_SNAPSHOT_HEADER_BYTES);
	put_u32(s, flags);
	put_u32(s, pid);
	put_u64(s, 0);
}

static void chunk_begin(struct snap *s, uint32_t type)
{
	s->chunk_at = s->len;
	put_u32(s, type);
	put_u32(s, 0);
	put_u64(s, 0); /* payload size, set by chunk_end */
}

static void chunk_end(struct snap *s)
{
	uint64_t payload = s->len - s->chunk_at - 16;
	memcpy(s->buf + s->chunk_at + 8, &payload, sizeof payload);
	static const uint8_t zeros[8];
	put(s, zeros, (8 - payload % 8) % 8);
}

static void put_thread(struct snap *s, uint32_t tid, const char *name)
{
	chunk_begin(s, TL_CHUNK_THREAD);
	put_u32(s, tid);
	put_string(s, name);
	chunk_end(s);
}

static void put_category(struct snap *s, uint32_t index, const char *name)
{
	chunk_begin(s, TL_CHUNK_CATEGORY);
	put_u32(s, index);
	put_string(s, name);
	chunk_end(s);
}

static void put_block(struct snap *s, uint32_t tid, uint64_t seq, const struct rec *r)
{
	chunk_begin(s, TL_CHUNK_BLOCK);
	put_u32(s, tid);
	put_u32(s, 0);
	put_u64(s, seq);
	put_u64(s, r->n);
	put(s, r->w, r->n * sizeof r->w[0]);
	chunk_end(s);
}

static void put_end(struct snap *s)
{
	chunk_begin(s, TL_CHUNK_END);
	chunk_end(s);
}

/* TSC calibration of the standard snapshot: 1/3 ns per tick up to tick
 * 4000, then 1/2 ns per tick. */
#define PAIR_COUNT 3
static const uint64_t pair_ticks[PAIR_COUNT] = {1000, 4000, 10000};
static const int64_t pair_ns[PAIR_COUNT] = {5000, 6000, 9000};

static void put_clock(struct snap *s, uint32_t ticks, uint32_t npairs, const uint64_t *pticks,
                      const int64_t *pns, uint64_t snapshot_ts)
{
	chunk_begin(s, TL_CHUNK_CLOCK);
	put_u32(s, 7);
	put_u32(s, ticks);
	put_u32(s, npairs);
	put_u32(s, 0);
	put_u64(s, 111111);
	put_u64(s, 222222);
	put_u64(s, 1700000000000000000ull);
	put_u64(s, snapshot_ts);
	for (uint32_t i = 0; i < npairs; i++) {
		put_u64(s, pticks[i]);
		put_u64(s, (uint64_t)pns[i]);
	}
	chunk_end(s);
}

/*
 * The standard snapshot: process "game", two categories, two named threads,
 * thread 100's blocks written out of order (seq 5 before seq 2) around a
 * block of thread 200, stats, a chunk of an unknown type, END.
 */
struct std_snapshot {
	struct snap s;
	size_t end_chunk_at;   /* offset of the END chunk */
	size_t last_block_end; /* end of the last BLOCK chunk */
};

static void build_standard(struct std_snapshot *out)
{
	struct snap *s = &out->s;
	memset(out, 0, sizeof *out);
	snap_header(s, TL_SNAPSHOT_VERSION, 0, 4242);

	chunk_begin(s, TL_CHUNK_PROCESS);
	put_u32(s, 4242);
	put_string(s, "game");
	chunk_end(s);

	put_clock(s, 1, PAIR_COUNT, pair_ticks, pair_ns, 10000);
	put_category(s, 0, "render");
	put_category(s, 1, "io");
	put_thread(s, 100, "main");
	put_thread(s, 200, "loader thread with a name longer than comm");

	/* thread 100, second block */
	struct rec b = {0};
	rec_start(&b, 4000, TL_PHASE_COMPLETE, INLINE, 0,
	          ARGTYPES(TL_ARG_INT, TL_ARG_UINT, TL_ARG_DOUBLE, TL_ARG_BOOL));
	rec_string(&b, "update");
	rec_word(&b, 7000);
	rec_string(&b, "entities");
	rec_word(&b, (uint64_t)-12);
	rec_string(&b, "bytes");
	rec_word(&b, UINT64_MAX);
	rec_string(&b, "ratio");
	rec_word(&b, double_bits(0.25));
	rec_string(&b, "dirty");
	rec_word(&b, 1);
	rec_end(&b);
	rec_start(&b, 10000, TL_PHASE_INSTANT,
	          INLINE | (TL_EVENT_SCOPE_GLOBAL >> 1) << TL_REC_F_SCOPE_SHIFT, 0,
	          ARGTYPES(TL_ARG_POINTER, TL_ARG_STRING, TL_ARG_STRING_COPY, 0));
	rec_string(&b, "vsync");
	rec_string(&b, "surface");
	rec_word(&b, 0x7f00dead0000ull);
	rec_string(&b, "display");
	rec_string(&b, "internal");
	rec_string(&b, "mode");
	rec_string(&b, "1080p@120");
	rec_end(&b);
	rec_start(&b, 13000, TL_PHASE_ASYNC_BEGIN, INLINE, 1, 0);
	rec_string(&b, "load");
	rec_word(&b, 0x77);
	rec_end(&b);
	rec_start(&b, 100, TL_PHASE_FLOW_BEGIN, INLINE, 5, 0);
	rec_string(&b, "handoff");
	rec_word(&b, 9);
	rec_end(&b);
	put_block(s, 100, 5, &b);

	/* thread 200 */
	struct rec c = {0};
	rec_start(&c, 123456, TL_PHASE_BEGIN, INLINE | TL_REC_F_TS_NS, 1, 0);
	rec_string(&c, "read");
	rec_end(&c);
	rec_start(&c, 7000, TL_PHASE_END, INLINE, 1, 0);
	rec_end(&c);
	put_block(s, 200, 3, &c);

	/* thread 100, first block */
	struct rec a = {0};
	rec_start(&a, 1000, TL_PHASE_BEGIN, INLINE, 0, 0);
	rec_string(&a, "early");
	rec_end(&a);
	rec_start(&a, 2500, TL_PHASE_END, INLINE, 0, 0);
	rec_end(&a);
	rec_start(&a, 2501, TL_PHASE_COUNTER, INLINE, 0, 0);
	rec_string(&a, "queue");
	rec_word(&a, (uint64_t)-7);
	rec_end(&a);
	rec_start(&a, 2502, TL_PHASE_COUNTER, INLINE | TL_REC_F_COUNTER_DOUBLE, 0, 0);
	rec_string(&a, "load");
	rec_word(&a, double_bits(0.75));
	rec_end(&a);
	rec_start(&a, 4001, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&a, "half");
	rec_end(&a);
	put_block(s, 100, 2, &a);
	out->last_block_end = s->len;

	chunk_begin(s, TL_CHUNK_STATS);
	put_u32(s, TL_SNAPSHOT_STATS_COUNT);
	put_u32(s, 0);
	for (uint64_t i = 1; i <= TL_SNAPSHOT_STATS_COUNT; i++)
		put_u64(s, i * 10);
	put_string(s, "ring");
	chunk_end(s);

	chunk_begin(s, 99); /* from a newer writer */
	put(s, "extra", 5);
	chunk_end(s);

	out->end_chunk_at = s->len;
	put_end(s);
}

/* Index of the event tid/seq order gives: thread 100's first block, its
 * second block, then thread 200. */
enum {
	EV_EARLY,
	EV_EARLY_END,
	EV_QUEUE,
	EV_LOAD_COUNTER,
	EV_HALF,
	EV_UPDATE,
	EV_VSYNC,
	EV_ASYNC,
	EV_FLOW,
	EV_READ,
	EV_READ_END,
	EV_COUNT
};

static tl_model read_standard(void)
{
	struct std_snapshot std;
	build_standard(&std);
	tl_model m;
	char err[256] = "x";
	assert_int_equal(tl_model_read_binary(std.s.buf, std.s.len, &m, err, sizeof err), 0);
	assert_string_equal(err, "");
	free(std.s.buf);
	assert_int_equal(m.nevents, EV_COUNT);
	return m;
}

/* ---- the standard snapshot ----------------------------------------------- */

static void test_read_binary_reads_process_and_clock_metadata(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.pid, 4242);
	assert_string_equal(m.process_name, "game");
	assert_int_equal(m.clock_id, 7);
	assert_int_equal(m.boottime_ns, 111111);
	assert_int_equal(m.monotonic_ns, 222222);
	assert_true(m.realtime_ns == 1700000000000000000ll);
	assert_int_equal(m.snapshot_ns, 9000);
	assert_int_equal(m.complete, 1);
	tl_model_free(&m);
}

static void test_read_binary_names_threads(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.nthreads, 2);
	assert_string_equal(tl_model_thread_name(&m, 100), "main");
	assert_string_equal(tl_model_thread_name(&m, 200),
	                    "loader thread with a name longer than comm");
	assert_null(tl_model_thread_name(&m, 300));
	tl_model_free(&m);
}

static void test_read_binary_names_categories_and_marks_unknown_ones(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_string_equal(m.events[EV_EARLY].cat, "render");
	assert_string_equal(m.events[EV_ASYNC].cat, "io");
	assert_string_equal(m.events[EV_READ].cat, "io");
	assert_string_equal(m.events[EV_FLOW].cat, "?");
	tl_model_free(&m);
}

static void test_read_binary_converts_ticks_exactly_on_calibration_pairs(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.events[EV_EARLY].ts_ns, 5000);  /* tick 1000, first pair */
	assert_int_equal(m.events[EV_UPDATE].ts_ns, 6000); /* tick 4000, middle pair */
	assert_int_equal(m.events[EV_VSYNC].ts_ns, 9000);  /* tick 10000, last pair */
	tl_model_free(&m);
}

static void test_read_binary_interpolates_ticks_between_pairs(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.events[EV_EARLY_END].ts_ns, 5500);    /* tick 2500: exact */
	assert_int_equal(m.events[EV_QUEUE].ts_ns, 5500);        /* 5500.33 */
	assert_int_equal(m.events[EV_LOAD_COUNTER].ts_ns, 5501); /* 5500.67 */
	assert_int_equal(m.events[EV_HALF].ts_ns, 6001);         /* 6000.5, second segment */
	assert_int_equal(m.events[EV_UPDATE].end_ns, 7500);      /* tick 7000 */
	assert_int_equal(m.events[EV_READ_END].ts_ns, 7500);
	tl_model_free(&m);
}

static void test_read_binary_extrapolates_ticks_outside_pairs(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.events[EV_ASYNC].ts_ns, 10500); /* tick 13000: last two pairs */
	assert_int_equal(m.events[EV_FLOW].ts_ns, 4700);   /* tick 100: first two pairs */
	tl_model_free(&m);
}

static void test_read_binary_keeps_timestamps_of_ns_records(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.events[EV_READ].ts_ns, 123456);
	tl_model_free(&m);
}

static void test_read_binary_orders_a_threads_blocks_by_seq(void **state)
{
	(void)state;
	tl_model m = read_standard();
	const char *names[] = {"early",  NULL,    "queue", "load",   "half",
	                       "update", "vsync", "load",  "handoff"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		assert_int_equal(m.events[i].tid, 100);
		if (names[i])
			assert_string_equal(m.events[i].name, names[i]);
		else
			assert_null(m.events[i].name);
		if (i > 0)
			assert_true(m.events[i].seq > m.events[i - 1].seq);
	}
	tl_model_free(&m);
}

static void test_read_binary_sorts_events_by_tid_then_seq(void **state)
{
	(void)state;
	tl_model m = read_standard();
	for (size_t i = 1; i < m.nevents; i++) {
		const tl_model_event *a = &m.events[i - 1], *b = &m.events[i];
		assert_true(a->tid < b->tid || (a->tid == b->tid && a->seq < b->seq));
	}
	assert_int_equal(m.events[EV_READ].tid, 200);
	assert_int_equal(m.events[EV_READ].phase, TL_PHASE_BEGIN);
	assert_int_equal(m.events[EV_READ_END].phase, TL_PHASE_END);
	tl_model_free(&m);
}

/* Instants named by their timestamp, one block chunk (BLOCK or NESTED_BLOCK). */
static void put_instants(struct snap *s, uint32_t type, uint32_t tid, uint64_t seq,
                         const uint64_t *ts, size_t n)
{
	struct rec r = {0};
	char name[24];
	for (size_t i = 0; i < n; i++) {
		rec_start(&r, ts[i], TL_PHASE_INSTANT, INLINE | TL_REC_F_TS_NS, 0, 0);
		snprintf(name, sizeof name, "%c%llu", type == TL_CHUNK_BLOCK ? 'o' : 'h',
		         (unsigned long long)ts[i]);
		rec_string(&r, name);
		rec_end(&r);
	}
	chunk_begin(s, type);
	put_u32(s, tid);
	put_u32(s, 0);
	put_u64(s, seq);
	put_u64(s, r.n);
	put(s, r.w, r.n * sizeof r.w[0]);
	chunk_end(s);
}

static void test_read_binary_puts_handler_events_among_the_threads_by_time(void **state)
{
	(void)state;
	/* The handler's blocks are out of time order (seq 1 holds later events
	 * than seq 2): its events ("h") go in by timestamp, each before the
	 * first of the thread's own ("o") with a larger one. */
	static const uint64_t own[] = {10, 20, 30, 40};
	static const uint64_t handler_late[] = {35, 50};
	static const uint64_t handler_early[] = {5, 20, 25};
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_instants(&s, TL_CHUNK_NESTED_BLOCK, 7, 1, handler_late, 2);
	put_instants(&s, TL_CHUNK_BLOCK, 7, 0, own, 4);
	put_instants(&s, TL_CHUNK_NESTED_BLOCK, 7, 2, handler_early, 3);
	put_end(&s);

	tl_model m;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, NULL, 0), 0);
	static const char *const expected[] = {"h5",  "o10", "o20", "h20", "h25",
	                                       "o30", "h35", "o40", "h50"};
	assert_int_equal(m.nevents, 9);
	for (size_t i = 0; i < m.nevents; i++) {
		assert_string_equal(m.events[i].name, expected[i]);
		assert_int_equal(m.events[i].seq, i);
	}
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_decodes_complete_end(void **state)
{
	(void)state;
	tl_model m = read_standard();
	const tl_model_event *e = &m.events[EV_UPDATE];
	assert_int_equal(e->phase, TL_PHASE_COMPLETE);
	assert_int_equal(e->ts_ns, 6000);
	assert_int_equal(e->end_ns, 7500);
	tl_model_free(&m);
}

static void test_read_binary_decodes_int_and_double_counters(void **state)
{
	(void)state;
	tl_model m = read_standard();
	const tl_model_event *q = &m.events[EV_QUEUE], *l = &m.events[EV_LOAD_COUNTER];
	assert_int_equal(q->phase, TL_PHASE_COUNTER);
	assert_int_equal(q->counter_is_double, 0);
	assert_int_equal(q->counter_i, -7);
	assert_int_equal(l->counter_is_double, 1);
	assert_true(l->counter_d == 0.75);
	tl_model_free(&m);
}

static void test_read_binary_decodes_args_of_every_type(void **state)
{
	(void)state;
	tl_model m = read_standard();
	const tl_model_event *u = &m.events[EV_UPDATE];
	assert_int_equal(u->nargs, 4);
	assert_string_equal(u->args[0].key, "entities");
	assert_int_equal(u->args[0].type, TL_ARG_INT);
	assert_int_equal(u->args[0].v.i, -12);
	assert_string_equal(u->args[1].key, "bytes");
	assert_int_equal(u->args[1].type, TL_ARG_UINT);
	assert_true(u->args[1].v.u == UINT64_MAX);
	assert_int_equal(u->args[2].type, TL_ARG_DOUBLE);
	assert_true(u->args[2].v.d == 0.25);
	assert_int_equal(u->args[3].type, TL_ARG_BOOL);
	assert_int_equal(u->args[3].v.b, 1);

	const tl_model_event *v = &m.events[EV_VSYNC];
	assert_int_equal(v->nargs, 3);
	assert_string_equal(v->args[0].key, "surface");
	assert_int_equal(v->args[0].type, TL_ARG_POINTER);
	assert_true(v->args[0].v.p == 0x7f00dead0000ull);
	assert_int_equal(v->args[1].type, TL_ARG_STRING);
	assert_string_equal(v->args[1].v.s, "internal");
	/* A copied string reads back as a plain string. */
	assert_int_equal(v->args[2].type, TL_ARG_STRING);
	assert_string_equal(v->args[2].key, "mode");
	assert_string_equal(v->args[2].v.s, "1080p@120");
	tl_model_free(&m);
}

static void test_read_binary_decodes_scope_and_ids(void **state)
{
	(void)state;
	tl_model m = read_standard();
	assert_int_equal(m.events[EV_VSYNC].scope, TL_EVENT_SCOPE_GLOBAL);
	assert_int_equal(m.events[EV_EARLY].scope, TL_EVENT_SCOPE_THREAD);
	assert_int_equal(m.events[EV_ASYNC].phase, TL_PHASE_ASYNC_BEGIN);
	assert_int_equal(m.events[EV_ASYNC].id, 0x77);
	assert_int_equal(m.events[EV_FLOW].phase, TL_PHASE_FLOW_BEGIN);
	assert_int_equal(m.events[EV_FLOW].id, 9);
	tl_model_free(&m);
}

static void test_read_binary_reads_stats(void **state)
{
	(void)state;
	tl_model m = read_standard();
	const tl_stats *s = &m.stats;
	assert_int_equal(s->struct_size, sizeof *s);
	assert_int_equal(s->events_written, 10);
	assert_int_equal(s->events_overwritten, 20);
	assert_int_equal(s->events_dropped, 30);
	assert_int_equal(s->strings_truncated, 40);
	assert_int_equal(s->args_dropped, 50);
	assert_int_equal(s->unmatched_begin, 60);
	assert_int_equal(s->unmatched_end, 70);
	assert_int_equal(s->blocks_torn, 80);
	assert_int_equal(s->buffer_bytes, 90);
	assert_int_equal(s->buffer_bytes_used, 100);
	assert_int_equal(s->threads, 110);
	assert_int_equal(s->categories, 120);
	assert_string_equal(s->recorder, "ring");
	assert_string_equal(m.recorder, "ring");
	tl_model_free(&m);
}

/* A THREAD_DROPS chunk of each thread's count (u32 tid, u32 0, u64). */
static void put_drops(struct snap *s, const uint32_t *tids, const uint64_t *dropped, uint32_t n)
{
	chunk_begin(s, TL_CHUNK_THREAD_DROPS);
	put_u32(s, n);
	put_u32(s, 0);
	for (uint32_t i = 0; i < n; i++) {
		put_u32(s, tids[i]);
		put_u32(s, 0);
		put_u64(s, dropped[i]);
	}
	chunk_end(s);
}

/* Each THREAD_DROPS chunk gives each thread's count so far: the latest
 * one of a thread replaces its earlier, in the order threads first came;
 * many threads, each once per chunk. */
static void test_read_binary_keeps_each_threads_latest_drop_count(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	enum { THREADS = 5000 };
	uint32_t *tids = malloc(THREADS * sizeof *tids);
	uint64_t *dropped = malloc(THREADS * sizeof *dropped);
	assert_true(tids && dropped);
	for (uint32_t i = 0; i < THREADS; i++) {
		tids[i] = 100 + 3 * i;
		dropped[i] = i % 4;
	}
	put_drops(&s, tids, dropped, THREADS);
	/* later: the even threads' counts again, larger, from the last */
	for (uint32_t i = 0; i < THREADS / 2; i++) {
		tids[i] = 100 + 3 * (THREADS - 2 - 2 * i);
		dropped[i] = 10 + (THREADS - 2 - 2 * i) % 4;
	}
	put_drops(&s, tids, dropped, THREADS / 2);
	put_end(&s);

	tl_snapshot_read r;
	tl_model m;
	assert_int_equal(tl_snapshot_read_open(&r, s.buf, s.len, &m, NULL, 0), 0);
	assert_int_equal(r.ndrops, THREADS);
	uint64_t total = 0;
	for (uint32_t i = 0; i < THREADS; i++) {
		uint64_t want = i % 4 + (i % 2 ? 0 : 10);
		assert_int_equal(r.drops[i].tid, 100 + 3 * i);
		assert_int_equal(r.drops[i].dropped, want);
		total += want;
	}
	assert_int_equal(r.thread_drops_total, total);
	assert_int_equal(m.stats.events_dropped, total);
	tl_snapshot_read_close(&r);
	tl_model_free(&m);
	free(tids);
	free(dropped);
	free(s.buf);
}

static void test_read_binary_skips_unknown_chunks(void **state)
{
	(void)state;
	/* The standard snapshot has a type-99 chunk between STATS and END. */
	struct std_snapshot std;
	build_standard(&std);
	assert_int_equal(memcmp(std.s.buf + std.end_chunk_at - 24, "\x63\0\0\0", 4), 0);
	tl_model m;
	assert_int_equal(tl_model_read_binary(std.s.buf, std.s.len, &m, NULL, 0), 0);
	assert_int_equal(m.complete, 1);
	assert_int_equal(m.nevents, EV_COUNT);
	tl_model_free(&m);
	free(std.s.buf);
}

/* ---- other clocks ---------------------------------------------------------- */

static void test_read_binary_takes_timestamps_as_ns_without_ticks(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_clock(&s, 0, 0, NULL, NULL, 999999);
	struct rec r = {0};
	rec_start(&r, 500000, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "now");
	rec_end(&r);
	put_block(&s, 1, 0, &r);
	put_end(&s);

	tl_model m;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, NULL, 0), 0);
	assert_int_equal(m.nevents, 1);
	assert_int_equal(m.events[0].ts_ns, 500000);
	assert_int_equal(m.snapshot_ns, 999999);
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_converts_large_tick_values(void **state)
{
	(void)state;
	/* 3 ticks per ns from tick 2^63; the product of a tick distance and an
	 * ns distance does not fit 64 bits. */
	const uint64_t base = 1ull << 63;
	const uint64_t ticks[2] = {base, base + 3000000000ull};
	const int64_t ns[2] = {4000000000000000000ll, 4000000001000000000ll};
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_clock(&s, 1, 2, ticks, ns, base);
	struct rec r = {0};
	rec_start(&r, UINT64_MAX, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "far");
	rec_end(&r);
	rec_start(&r, base + 1500000001ull, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "mid");
	rec_end(&r);
	put_block(&s, 1, 0, &r);
	put_end(&s);

	tl_model m;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, NULL, 0), 0);
	assert_int_equal(m.nevents, 2);
	/* (2^63 - 1) / 3 = 3074457345618258602.33 ns after the first pair */
	assert_true(m.events[0].ts_ns == 4000000000000000000ll + 3074457345618258602ll);
	assert_true(m.events[1].ts_ns == 4000000000500000000ll); /* + 500000000.33 */
	assert_true(m.snapshot_ns == 4000000000000000000ll);
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_offsets_ticks_from_a_single_pair(void **state)
{
	(void)state;
	const uint64_t ticks[1] = {1000};
	const int64_t ns[1] = {50000};
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_clock(&s, 1, 1, ticks, ns, 1000);
	struct rec r = {0};
	rec_start(&r, 1250, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "after");
	rec_end(&r);
	rec_start(&r, 900, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "before");
	rec_end(&r);
	put_block(&s, 1, 0, &r);
	put_end(&s);

	tl_model m;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, NULL, 0), 0);
	assert_int_equal(m.events[0].ts_ns, 50250);
	assert_int_equal(m.events[1].ts_ns, 49900);
	assert_int_equal(m.snapshot_ns, 50000);
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_rejects_clock_pairs_out_of_order(void **state)
{
	(void)state;
	const uint64_t ticks[2] = {5000, 4999};
	const int64_t ns[2] = {1, 2};
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_clock(&s, 1, 2, ticks, ns, 0);
	put_end(&s);

	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "CLOCK"));
	free(s.buf);
}

/* ---- truncated and damaged input ------------------------------------------ */

static void test_read_binary_keeps_events_of_truncated_file(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(std.s.buf, std.end_chunk_at, &m, err, sizeof err), 0);
	assert_int_equal(m.complete, 0);
	assert_int_equal(m.nevents, EV_COUNT);
	assert_string_equal(m.events[EV_EARLY].name, "early");
	assert_non_null(strstr(err, "truncated"));
	tl_model_free(&m);
	free(std.s.buf);
}

/* Cut before any event - right after its header, or after its metadata -
 * a file holds nothing to read: an error that names where it was cut
 * (the reader would otherwise give an empty trace without a word). */
static void test_read_binary_cut_before_any_event_is_an_error_naming_the_cut(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -ENODATA);
	assert_string_equal(err, "snapshot is truncated at byte 32 of 32 (no END chunk), before "
	                         "any event: nothing could be read");
	put_thread(&s, 100, "main");
	size_t threads_end = s.len;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -ENODATA);
	char want[160];
	snprintf(want, sizeof want, "snapshot is truncated at byte %zu of %zu", threads_end,
	         threads_end);
	assert_non_null(strstr(err, want));
	/* whole, the same file is an empty trace */
	put_end(&s);
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), 0);
	assert_int_equal(m.nevents, 0);
	assert_int_equal(m.complete, 1);
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_keeps_whole_records_of_a_cut_block(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	/* The last block (thread 100, seq 2) ends with a 4-word record; cut
	 * the file 2 words into it. */
	size_t cut = std.last_block_end - 2 * 8;
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(std.s.buf, cut, &m, err, sizeof err), 0);
	assert_int_equal(m.complete, 0);
	assert_int_equal(m.nevents, EV_COUNT - 1);
	assert_string_equal(m.events[EV_LOAD_COUNTER].name, "load");
	assert_string_equal(m.events[EV_HALF].name, "update");
	assert_non_null(strstr(err, "truncated"));
	tl_model_free(&m);
	free(std.s.buf);
}

static void test_read_binary_keeps_records_before_an_undecodable_one(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_BEGIN, INLINE, 0, 0);
	rec_string(&r, "good");
	rec_end(&r);
	rec_start(&r, 20, 'Q', INLINE, 0, 0); /* unknown phase */
	rec_end(&r);
	rec_start(&r, 30, TL_PHASE_END, INLINE, 0, 0);
	rec_end(&r);
	put_block(&s, 1, 0, &r);
	put_end(&s);

	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), 0);
	assert_int_equal(m.complete, 1);
	assert_int_equal(m.nevents, 1);
	assert_string_equal(m.events[0].name, "good");
	assert_int_equal(m.stats.blocks_torn, 1);
	assert_string_equal(err, "1 block with undecodable records (4 words skipped)");
	tl_model_free(&m);
	free(s.buf);
}

/* ---- packed runs (a file recorder's stream) ------------------------------ */

/* A packed run's record word: template number t (from 0), delta. */
#define PACKED(t, delta) ((uint64_t)((t) + 1) << 56 | (uint64_t)(delta))

/* The records a packed run stands for, written out: BEGIN "frame" (cat 0)
 * at 1000, BEGIN "draw" (cat 1) at 1100, END (cat 1) at 1150, END (cat 0)
 * at 1300, BEGIN "frame" at 1400, END at 1400; then an instant. */
static void put_unpacked_frames(struct rec *r)
{
	static const struct {
		uint64_t ts;
		unsigned cat;
		const char *name; /* NULL: an END */
	} frames[] = {{1000, 0, "frame"}, {1100, 1, "draw"}, {1150, 1, NULL},
	              {1300, 0, NULL},    {1400, 0, "frame"}, {1400, 0, NULL}};
	for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
		if (frames[i].name) {
			rec_start(r, frames[i].ts, TL_PHASE_BEGIN, INLINE | TL_REC_F_NAME_INLINE,
			          frames[i].cat, 0);
			rec_string(r, frames[i].name);
		} else {
			rec_start(r, frames[i].ts, TL_PHASE_END, INLINE, frames[i].cat, 0);
		}
		rec_end(r);
	}
}

static void put_instant_after(struct rec *r)
{
	rec_start(r, 2000, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(r, "after");
	rec_end(r);
}

/* The same records as one packed run, templates in first-use order. */
static void put_packed_frames(struct rec *r, uint64_t counts_word)
{
	rec_start(r, 1000, TL_REC_PHASE_PACKED, INLINE, 0, 0);
	rec_word(r, counts_word);
	rec_word(r, PACKED(0, 0));
	rec_word(r, PACKED(1, 100));
	rec_word(r, PACKED(2, 50));
	rec_word(r, PACKED(3, 150));
	rec_word(r, PACKED(0, 100));
	rec_word(r, PACKED(3, 0));
	/* templates: a record less its timestamp */
	r->w[r->n++] = TL_REC_HEADER(TL_PHASE_BEGIN, 4, INLINE | TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(r, "frame");
	r->w[r->n++] = TL_REC_HEADER(TL_PHASE_BEGIN, 4, INLINE | TL_REC_F_NAME_INLINE, 1, 0);
	rec_string(r, "draw");
	r->w[r->n++] = TL_REC_HEADER(TL_PHASE_END, 2, INLINE, 1, 0);
	r->w[r->n++] = TL_REC_HEADER(TL_PHASE_END, 2, INLINE, 0, 0);
	rec_end(r);
}

static tl_model read_block_as(uint32_t version, const struct rec *r, char *err, size_t errlen)
{
	struct snap s = {0};
	snap_header(&s, version, 0, 1);
	put_category(&s, 0, "render");
	put_category(&s, 1, "gpu");
	put_block(&s, 1, 0, r);
	put_end(&s);
	tl_model m;
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, errlen), 0);
	free(s.buf);
	return m;
}

static tl_model read_block(const struct rec *r, char *err, size_t errlen)
{
	return read_block_as(TL_SNAPSHOT_VERSION, r, err, errlen);
}

static void test_read_binary_unpacks_a_packed_run_into_the_records_it_stands_for(void **state)
{
	(void)state;
	struct rec plain = {0}, packed = {0};
	put_unpacked_frames(&plain);
	put_instant_after(&plain);
	put_packed_frames(&packed, (uint64_t)4 << 32 | 6);
	put_instant_after(&packed);
	char err[256];
	tl_model a = read_block(&plain, err, sizeof err);
	tl_model b = read_block(&packed, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(b.nevents, 7);
	assert_int_equal(b.nevents, a.nevents);
	static const char phases[] = "BBEEBEi";
	static const int64_t ts[] = {1000, 1100, 1150, 1300, 1400, 1400, 2000};
	for (size_t i = 0; i < b.nevents; i++) {
		assert_int_equal(b.events[i].phase, phases[i]);
		assert_int_equal(b.events[i].ts_ns, ts[i]);
		assert_int_equal(b.events[i].phase, a.events[i].phase);
		assert_int_equal(b.events[i].ts_ns, a.events[i].ts_ns);
		assert_string_equal(b.events[i].cat, a.events[i].cat);
		if (a.events[i].name)
			assert_string_equal(b.events[i].name, a.events[i].name);
		else
			assert_null(b.events[i].name);
	}
	assert_string_equal(b.events[1].name, "draw");
	assert_string_equal(b.events[1].cat, "gpu");
	assert_string_equal(b.events[4].name, "frame");
	tl_model_free(&a);
	tl_model_free(&b);
}

/* A run whose words do not hold together is not unpacked: what comes
 * before it is kept, it and the rest of its block are counted as skipped. */
static void assert_bad_run_skipped(uint64_t counts_word, int bad_template)
{
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "before");
	rec_end(&r);
	size_t run_at = r.n;
	put_packed_frames(&r, counts_word);
	if (bad_template)
		r.w[run_at + 3 + 2] = PACKED(7, 50); /* no template 7 */
	put_instant_after(&r);
	char err[256];
	tl_model m = read_block(&r, err, sizeof err);
	assert_int_equal(m.nevents, 1);
	assert_string_equal(m.events[0].name, "before");
	assert_int_equal(m.stats.blocks_torn, 1);
	assert_non_null(strstr(err, "1 block with undecodable records"));
	tl_model_free(&m);
}

static void test_read_binary_skips_a_packed_run_with_a_template_it_lacks(void **state)
{
	(void)state;
	assert_bad_run_skipped((uint64_t)4 << 32 | 6, 1);
}

static void test_read_binary_skips_a_packed_run_whose_counts_overrun_it(void **state)
{
	(void)state;
	assert_bad_run_skipped((uint64_t)4 << 32 | 60, 0); /* more records than words */
	assert_bad_run_skipped((uint64_t)5 << 32 | 6, 0);  /* a template too many */
	assert_bad_run_skipped((uint64_t)3 << 32 | 6, 0);  /* words left over */
}

/* Packed runs are version 2's (a file recorder's): in a version 1 file
 * (a snapshot) a packed run does not decode, and what follows it in its
 * block is counted as lost. */
static void test_read_binary_does_not_unpack_a_packed_run_in_a_version_1_file(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_INSTANT, INLINE, 0, 0);
	rec_string(&r, "before");
	rec_end(&r);
	put_packed_frames(&r, (uint64_t)4 << 32 | 6);
	put_instant_after(&r);
	char err[256];
	tl_model m = read_block_as(TL_SNAPSHOT_VERSION_PLAIN, &r, err, sizeof err);
	assert_int_equal(m.nevents, 1);
	assert_string_equal(m.events[0].name, "before");
	assert_int_equal(m.stats.blocks_torn, 1);
	assert_non_null(strstr(err, "1 block with undecodable records"));
	tl_model_free(&m);
	m = read_block_as(TL_SNAPSHOT_VERSION_PACKED, &r, err, sizeof err);
	assert_int_equal(m.nevents, 8); /* before, the run's six, after */
	assert_string_equal(err, "");
	tl_model_free(&m);
}

static void test_read_binary_keeps_the_records_before_a_cut_packed_run(void **state)
{
	(void)state;
	struct rec r = {0};
	put_instant_after(&r);
	put_packed_frames(&r, (uint64_t)4 << 32 | 6);
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	put_block(&s, 1, 0, &r);
	size_t cut = s.len - 3 * 8; /* inside the run's templates */
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, cut, &m, err, sizeof err), 0);
	assert_int_equal(m.complete, 0);
	assert_int_equal(m.nevents, 1);
	assert_string_equal(m.events[0].name, "after");
	assert_int_equal(m.stats.blocks_torn, 0); /* cut, not damaged */
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_never_follows_kept_pointers(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_BEGIN, 0, 0, 0); /* no TL_REC_F_STRINGS_INLINE */
	rec_word(&r, 0x10);                         /* a pointer from another process */
	rec_end(&r);
	put_block(&s, 1, 0, &r);
	put_end(&s);

	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), 0);
	assert_int_equal(m.nevents, 0);
	assert_int_equal(m.stats.blocks_torn, 1);
	assert_non_null(strstr(err, "undecodable"));
	tl_model_free(&m);
	free(s.buf);
}

static void test_read_binary_rejects_bad_magic(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	std.s.buf[0] = 'X';
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(std.s.buf, std.s.len, &m, err, sizeof err), -EINVAL);
	assert_string_equal(err, "not a timeline binary snapshot (bad magic)");
	assert_null(m.events);
	assert_null(m.arena);

	const char json[] = "{\"traceEvents\":[]}";
	assert_int_equal(tl_model_read_binary(json, sizeof json - 1, &m, err, sizeof err), -EINVAL);
	assert_string_equal(err, "not a timeline binary snapshot (bad magic)");
	free(std.s.buf);
}

static void test_read_binary_rejects_empty_input(void **state)
{
	(void)state;
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary("", 0, &m, err, sizeof err), -EINVAL);
	assert_string_equal(err, "not a timeline binary snapshot (empty file)");
}

static void test_read_binary_rejects_unsupported_version(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION + 1, 0, 1);
	put_end(&s);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -EINVAL);
	assert_string_equal(err, "unsupported snapshot version 3 (this reader knows 1 to 2)");
	free(s.buf);
}

static void test_read_binary_rejects_big_endian_snapshots(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, TL_SNAPSHOT_F_BIG_ENDIAN, 1);
	put_end(&s);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "big-endian"));
	free(s.buf);
}

static void test_read_binary_rejects_corrupt_chunk(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	chunk_begin(&s, TL_CHUNK_THREAD);
	put_u32(&s, 7);
	put_u32(&s, 5); /* name length one past the payload */
	put(&s, "main", 4);
	chunk_end(&s);
	put_end(&s);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -EINVAL);
	assert_string_equal(err, "corrupt THREAD chunk at offset 32");
	free(s.buf);
}

static void test_read_binary_rejects_block_with_wrong_word_count(void **state)
{
	(void)state;
	struct snap s = {0};
	snap_header(&s, TL_SNAPSHOT_VERSION, 0, 1);
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_END, INLINE, 0, 0);
	rec_end(&r);
	put_block(&s, 9, 0, &r);
	put_end(&s);
	uint64_t nwords = 3; /* the payload holds 2 */
	memcpy(s.buf + 32 + 16 + 16, &nwords, sizeof nwords);

	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary(s.buf, s.len, &m, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "corrupt BLOCK chunk at offset 32"));
	free(s.buf);
}

static void test_read_binary_drops_a_cut_metadata_chunk(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	/* The STATS chunk follows the last block: cut it after its count. */
	tl_model m;
	assert_int_equal(
	    tl_model_read_binary(std.s.buf, std.last_block_end + 16 + 8 + 20, &m, NULL, 0), 0);
	assert_int_equal(m.complete, 0);
	assert_int_equal(m.nevents, EV_COUNT);
	assert_int_equal(m.stats.events_written, 0);
	assert_string_equal(m.recorder, "");
	tl_model_free(&m);
	free(std.s.buf);
}

static void test_read_binary_reads_unaligned_input(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	uint8_t *shifted = malloc(std.s.len + 1);
	assert_non_null(shifted);
	memcpy(shifted + 1, std.s.buf, std.s.len);
	tl_model m;
	assert_int_equal(tl_model_read_binary(shifted + 1, std.s.len, &m, NULL, 0), 0);
	assert_int_equal(m.nevents, EV_COUNT);
	assert_string_equal(m.events[EV_VSYNC].args[2].v.s, "1080p@120");
	tl_model_free(&m);
	free(shifted);
	free(std.s.buf);
}

/* Whatever the reader accepts is a well-formed model. */
static void check_model_shape(const tl_model *m)
{
	assert_non_null(m->process_name);
	for (size_t i = 0; i < m->nthreads; i++)
		assert_non_null(m->threads[i].name);
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		assert_non_null(e->cat);
		assert_true(e->phase == TL_PHASE_END || e->name != NULL);
		assert_true(e->nargs <= TL_MAX_ARGS);
		for (unsigned j = 0; j < e->nargs; j++)
			assert_non_null(e->args[j].key);
		if (i > 0) {
			const tl_model_event *p = &m->events[i - 1];
			assert_true(p->tid < e->tid || (p->tid == e->tid && p->seq < e->seq));
		}
	}
}

/* Run under AddressSanitizer: each byte changed in several ways, and every
 * truncation, is read without a crash, leak or out-of-bounds access. */
static void test_read_binary_survives_corruption_of_every_byte(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	const uint8_t *orig = std.s.buf;
	size_t len = std.s.len;
	uint8_t *copy = malloc(len);
	assert_non_null(copy);
	const uint8_t values[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
	size_t accepted = 0, rejected = 0;
	for (size_t pos = 0; pos < len; pos++) {
		for (size_t k = 0; k < sizeof values + 1; k++) {
			memcpy(copy, orig, len);
			copy[pos] = k < sizeof values ? values[k] : (uint8_t)(orig[pos] ^ 0x5a);
			tl_model m;
			char err[256];
			int rc = tl_model_read_binary(copy, len, &m, err, sizeof err);
			if (rc == 0) {
				check_model_shape(&m);
				tl_model_free(&m);
				accepted++;
			} else {
				/* refused, or with nothing left to read before a cut */
				assert_true(rc == -EINVAL || rc == -ENODATA);
				assert_true(err[0] != '\0');
				rejected++;
			}
		}
	}
	size_t first_read = 0; /* the shortest cut that reads */
	for (size_t cut = 0; cut < len; cut++) {
		/* An exact-size heap copy, so reading past the end is caught. */
		uint8_t *part = malloc(cut ? cut : 1);
		assert_non_null(part);
		memcpy(part, orig, cut);
		tl_model m;
		int rc = tl_model_read_binary(part, cut, &m, NULL, 0);
		/* A file cut after its first event keeps what it holds; cut
		 * before, it holds nothing to read: an error. */
		if (rc == 0) {
			if (!first_read)
				first_read = cut;
			assert_int_equal(m.complete, 0);
			check_model_shape(&m);
			tl_model_free(&m);
		} else {
			assert_int_equal(rc, cut < TL_SNAPSHOT_HEADER_BYTES ? -EINVAL : -ENODATA);
			assert_int_equal(first_read, 0);
		}
		free(part);
	}
	assert_true(first_read > TL_SNAPSHOT_HEADER_BYTES);
	assert_true(accepted > 0);
	assert_true(rejected > 0);
	free(copy);
	free(std.s.buf);
}

/* Under AddressSanitizer: several bytes changed at once, and the file cut
 * at a random place, never crash the reader. */
static void test_read_binary_survives_random_multi_byte_corruption(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	unsigned seed = 2024;
	size_t accepted = 0;
	for (int iter = 0; iter < 5000; iter++) {
		size_t len = std.s.len;
		if (rand_r(&seed) % 2)
			len = (size_t)rand_r(&seed) % std.s.len;
		uint8_t *copy = malloc(len ? len : 1);
		assert_non_null(copy);
		memcpy(copy, std.s.buf, len);
		int changes = 1 + rand_r(&seed) % 8;
		for (int i = 0; len && i < changes; i++)
			copy[(size_t)rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		tl_model m;
		if (tl_model_read_binary(copy, len, &m, NULL, 0) == 0) {
			check_model_shape(&m);
			tl_model_free(&m);
			accepted++;
		}
		free(copy);
	}
	assert_true(accepted > 0);
	free(std.s.buf);
}

/* ---- files ----------------------------------------------------------------- */

static void test_read_binary_file_reads_a_snapshot_from_disk(void **state)
{
	(void)state;
	struct std_snapshot std;
	build_standard(&std);
	const char *path = tl_test_path("model-read", ".bin");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(std.s.buf, 1, std.s.len, f), std.s.len);
	assert_int_equal(fclose(f), 0);

	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary_file(path, &m, err, sizeof err), 0);
	assert_int_equal(m.nevents, EV_COUNT);
	assert_string_equal(m.process_name, "game");
	tl_model_free(&m);
	remove(path);
	free(std.s.buf);
}

static void test_read_binary_file_reports_a_missing_file(void **state)
{
	(void)state;
	tl_model m;
	char err[256];
	const char *path = tl_test_path("model-missing", ".bin");
	assert_int_equal(tl_model_read_binary_file(path, &m, err, sizeof err), -ENOENT);
	assert_string_equal(err, strerror(ENOENT));
}

/* ---- round trip through the library -------------------------------------- */

/* The events the library's own writer put in a snapshot, as the reader
 * decodes them: kept and copied strings, arguments, order, timestamps. */
static void test_read_binary_reads_back_what_the_library_recorded(void **state)
{
	(void)state;
	tl_test_clear_environment();
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	assert_int_equal(tl_thread_set_name("round-trip"), 0);
	tl_category *cat = tl_category_get("model-read-binary");
	char copied[] = "copied name";
	tl_arg args[2] = {
	    {.key = "n", .type = TL_ARG_INT, .value.i = -5},
	    {.key = "s", .type = TL_ARG_STRING_COPY, .value.s = copied},
	};
	int64_t before = tl_now_ns();
	tl_emit_begin(cat, "outer");
	tl_emit(cat, TL_PHASE_INSTANT, TL_EVENT_COPY_NAME | TL_EVENT_SCOPE_PROCESS, copied, 0, 0,
	        args, 2);
	copied[0] = 'X'; /* the snapshot holds the copy */
	tl_emit_counter_double(cat, "fill", 0.5);
	tl_emit_end(cat);
	int64_t after = tl_now_ns();

	tl_model m;
	tl_test_snapshot_model(&m);
	tl_shutdown();

	uint32_t tid = (uint32_t)gettid();
	const tl_model_event *ev[4];
	size_t n = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const tl_model_event *e = &m.events[i];
		if (e->tid == tid && strcmp(e->cat, "model-read-binary") == 0) {
			assert_true(n < 4);
			ev[n++] = e;
		}
	}
	assert_int_equal(n, 4);
	assert_int_equal(m.complete, 1);
	assert_string_equal(tl_model_thread_name(&m, tid), "round-trip");

	assert_int_equal(ev[0]->phase, TL_PHASE_BEGIN);
	assert_string_equal(ev[0]->name, "outer");
	assert_int_equal(ev[1]->phase, TL_PHASE_INSTANT);
	assert_string_equal(ev[1]->name, "copied name");
	assert_int_equal(ev[1]->scope, TL_EVENT_SCOPE_PROCESS);
	assert_int_equal(ev[1]->nargs, 2);
	assert_string_equal(ev[1]->args[0].key, "n");
	assert_int_equal(ev[1]->args[0].v.i, -5);
	assert_int_equal(ev[1]->args[1].type, TL_ARG_STRING);
	assert_string_equal(ev[1]->args[1].v.s, "copied name");
	assert_int_equal(ev[2]->phase, TL_PHASE_COUNTER);
	assert_true(ev[2]->counter_is_double && ev[2]->counter_d == 0.5);
	assert_int_equal(ev[3]->phase, TL_PHASE_END);
	assert_null(ev[3]->name);

	/* Timestamps in ns of the trace clock, in order, within the window
	 * (1 ms of slack for the TSC calibration). */
	for (size_t i = 0; i < 4; i++) {
		assert_true(ev[i]->ts_ns >= before - 1000000);
		assert_true(ev[i]->ts_ns <= after + 1000000);
		if (i > 0)
			assert_true(ev[i]->ts_ns >= ev[i - 1]->ts_ns &&
			            ev[i]->seq > ev[i - 1]->seq);
	}
	tl_model_free(&m);
}

/* ---- the model arena ------------------------------------------------------- */

static void test_model_intern_keeps_one_copy_per_string(void **state)
{
	(void)state;
	tl_model m = {0};
	char buf[] = "frame";
	const char *a = tl_model_intern(&m, buf, 5);
	buf[0] = 'F';
	const char *b = tl_model_intern(&m, "frame!", 5);
	const char *c = tl_model_intern(&m, buf, 5);
	assert_string_equal(a, "frame");
	assert_ptr_equal(a, b);
	assert_string_equal(c, "Frame");
	assert_ptr_not_equal(a, c);
	assert_string_equal(tl_model_intern(&m, NULL, 0), "");
	tl_model_free(&m);
	assert_null(m.arena);
}

static void test_model_intern_keeps_strings_across_growth(void **state)
{
	(void)state;
	tl_model m = {0};
	const char *kept[3000];
	char name[32];
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof name, "name-%d", i);
		kept[i] = tl_model_intern(&m, name, strlen(name));
		assert_non_null(kept[i]);
	}
	char *big = malloc(100000);
	assert_non_null(big);
	memset(big, 'x', 99999);
	big[99999] = '\0';
	const char *copy = tl_model_intern(&m, big, 99999);
	assert_string_equal(copy, big);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof name, "name-%d", i);
		assert_string_equal(kept[i], name);
		assert_ptr_equal(tl_model_intern(&m, name, strlen(name)), kept[i]);
	}
	free(big);
	tl_model_free(&m);
}

/* A thread is its tid and its pid: one of the model's own (0, or
 * model->pid) is renamed, one of another process is another entry. */
static void test_model_thread_set_renames_the_entry_of_its_pid_and_tid(void **state)
{
	(void)state;
	tl_model m = {.pid = 100};
	assert_int_equal(tl_model_thread_set(&m, 5, "a", 1), 0);
	assert_int_equal(tl_model_thread_set_in(&m, 200, 5, "b", 1), 0);
	assert_int_equal(tl_model_thread_set_in(&m, 100, 5, "c", 1), 0);
	assert_int_equal(m.nthreads, 2);
	assert_string_equal(m.threads[0].name, "c");
	assert_int_equal(m.threads[0].pid, 0);
	assert_string_equal(m.threads[1].name, "b");
	assert_int_equal(m.threads[1].pid, 200);
	assert_ptr_equal(tl_model_thread_find(&m, 0, 5), &m.threads[0]);
	assert_ptr_equal(tl_model_thread_find(&m, 100, 5), &m.threads[0]);
	assert_ptr_equal(tl_model_thread_find(&m, 200, 5), &m.threads[1]);
	assert_null(tl_model_thread_find(&m, 300, 5));
	assert_null(tl_model_thread_find(&m, 100, 6));
	/* by tid alone: the first entry of that tid */
	assert_string_equal(tl_model_thread_name(&m, 5), "c");
	assert_null(tl_model_thread_name(&m, 6));
	tl_model_free(&m);
}

static void test_model_finds_threads_and_processes_across_growth(void **state)
{
	(void)state;
	tl_model m = {.pid = 1};
	char name[32];
	for (uint32_t i = 0; i < 50000; i++) {
		snprintf(name, sizeof name, "t%u", i);
		assert_int_equal(tl_model_thread_set_in(&m, 1000 + i % 7, i, name, strlen(name)),
		                 0);
		snprintf(name, sizeof name, "p%u", i % 7);
		assert_int_equal(tl_model_process_set(&m, 1000 + i % 7, name, strlen(name)), 0);
	}
	/* renamed, from the last */
	for (uint32_t i = 50000; i-- > 0;) {
		snprintf(name, sizeof name, "r%u", i);
		assert_int_equal(tl_model_thread_set_in(&m, 1000 + i % 7, i, name, strlen(name)),
		                 0);
	}
	assert_int_equal(m.nthreads, 50000);
	assert_int_equal(m.nprocesses, 7);
	for (uint32_t i = 0; i < 50000; i++) {
		snprintf(name, sizeof name, "r%u", i);
		const tl_model_thread *t = tl_model_thread_find(&m, 1000 + i % 7, i);
		assert_ptr_equal(t, &m.threads[i]);
		assert_string_equal(t->name, name);
		assert_string_equal(tl_model_thread_name(&m, i), name);
		assert_null(tl_model_thread_find(&m, 1000 + (i + 1) % 7, i));
	}
	assert_string_equal(tl_model_process_name(&m, 1003), "p3");
	assert_null(tl_model_process_name(&m, 1007));
	tl_model_free(&m);
}

/* model->process_name names model->pid, unless an entry of it does. */
static void test_model_process_name_takes_an_entry_before_the_process_name(void **state)
{
	(void)state;
	tl_model m = {.pid = 100, .process_name = "game"};
	assert_string_equal(tl_model_process_name(&m, 100), "game");
	assert_null(tl_model_process_name(&m, 200));
	assert_int_equal(tl_model_process_set(&m, 200, "other", 5), 0);
	assert_int_equal(tl_model_process_set(&m, 100, "main", 4), 0);
	assert_int_equal(tl_model_process_set(&m, 200, "renamed", 7), 0);
	assert_int_equal(m.nprocesses, 2);
	assert_string_equal(tl_model_process_name(&m, 100), "main");
	assert_string_equal(tl_model_process_name(&m, 200), "renamed");
	tl_model_free(&m);
}

/* A model whose arrays were set by hand (no index): searched the same. */
static void test_model_lookups_search_arrays_set_by_hand(void **state)
{
	(void)state;
	tl_model_thread threads[] = {{7, "seven", 0}, {8, "eight", 300}, {7, "other", 300}};
	tl_model_process processes[] = {{300, "three"}};
	tl_model m = {
	    .pid = 100, .threads = threads, .nthreads = 3, .processes = processes, .nprocesses = 1};
	assert_string_equal(tl_model_thread_name(&m, 7), "seven");
	assert_ptr_equal(tl_model_thread_find(&m, 300, 7), &threads[2]);
	assert_ptr_equal(tl_model_thread_find(&m, 100, 7), &threads[0]);
	assert_null(tl_model_thread_find(&m, 300, 9));
	assert_string_equal(tl_model_process_name(&m, 300), "three");
	assert_null(tl_model_process_name(&m, 100));
	/* interning gives the model an arena: its index covers none of them */
	assert_non_null(tl_model_intern(&m, "x", 1));
	assert_string_equal(tl_model_thread_name(&m, 8), "eight");
	assert_string_equal(tl_model_process_name(&m, 300), "three");
	tl_model_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_binary_reads_process_and_clock_metadata),
	    cmocka_unit_test(test_read_binary_names_threads),
	    cmocka_unit_test(test_read_binary_names_categories_and_marks_unknown_ones),
	    cmocka_unit_test(test_read_binary_converts_ticks_exactly_on_calibration_pairs),
	    cmocka_unit_test(test_read_binary_interpolates_ticks_between_pairs),
	    cmocka_unit_test(test_read_binary_extrapolates_ticks_outside_pairs),
	    cmocka_unit_test(test_read_binary_keeps_timestamps_of_ns_records),
	    cmocka_unit_test(test_read_binary_orders_a_threads_blocks_by_seq),
	    cmocka_unit_test(test_read_binary_sorts_events_by_tid_then_seq),
	    cmocka_unit_test(test_read_binary_puts_handler_events_among_the_threads_by_time),
	    cmocka_unit_test(test_read_binary_decodes_complete_end),
	    cmocka_unit_test(test_read_binary_decodes_int_and_double_counters),
	    cmocka_unit_test(test_read_binary_decodes_args_of_every_type),
	    cmocka_unit_test(test_read_binary_decodes_scope_and_ids),
	    cmocka_unit_test(test_read_binary_reads_stats),
	    cmocka_unit_test(test_read_binary_keeps_each_threads_latest_drop_count),
	    cmocka_unit_test(test_read_binary_skips_unknown_chunks),
	    cmocka_unit_test(test_read_binary_takes_timestamps_as_ns_without_ticks),
	    cmocka_unit_test(test_read_binary_converts_large_tick_values),
	    cmocka_unit_test(test_read_binary_offsets_ticks_from_a_single_pair),
	    cmocka_unit_test(test_read_binary_rejects_clock_pairs_out_of_order),
	    cmocka_unit_test(test_read_binary_keeps_events_of_truncated_file),
	    cmocka_unit_test(test_read_binary_cut_before_any_event_is_an_error_naming_the_cut),
	    cmocka_unit_test(test_read_binary_keeps_whole_records_of_a_cut_block),
	    cmocka_unit_test(test_read_binary_keeps_records_before_an_undecodable_one),
	    cmocka_unit_test(test_read_binary_unpacks_a_packed_run_into_the_records_it_stands_for),
    cmocka_unit_test(test_read_binary_skips_a_packed_run_with_a_template_it_lacks),
    cmocka_unit_test(test_read_binary_skips_a_packed_run_whose_counts_overrun_it),
    cmocka_unit_test(test_read_binary_does_not_unpack_a_packed_run_in_a_version_1_file),
    cmocka_unit_test(test_read_binary_keeps_the_records_before_a_cut_packed_run),
    cmocka_unit_test(test_read_binary_never_follows_kept_pointers),
	    cmocka_unit_test(test_read_binary_rejects_bad_magic),
	    cmocka_unit_test(test_read_binary_rejects_empty_input),
	    cmocka_unit_test(test_read_binary_rejects_unsupported_version),
	    cmocka_unit_test(test_read_binary_rejects_big_endian_snapshots),
	    cmocka_unit_test(test_read_binary_rejects_corrupt_chunk),
	    cmocka_unit_test(test_read_binary_rejects_block_with_wrong_word_count),
	    cmocka_unit_test(test_read_binary_drops_a_cut_metadata_chunk),
	    cmocka_unit_test(test_read_binary_reads_unaligned_input),
	    cmocka_unit_test(test_read_binary_survives_corruption_of_every_byte),
	    cmocka_unit_test(test_read_binary_survives_random_multi_byte_corruption),
	    cmocka_unit_test(test_read_binary_file_reads_a_snapshot_from_disk),
	    cmocka_unit_test(test_read_binary_file_reports_a_missing_file),
	    cmocka_unit_test(test_read_binary_reads_back_what_the_library_recorded),
	    cmocka_unit_test(test_model_intern_keeps_one_copy_per_string),
	    cmocka_unit_test(test_model_intern_keeps_strings_across_growth),
	    cmocka_unit_test(test_model_thread_set_renames_the_entry_of_its_pid_and_tid),
	    cmocka_unit_test(test_model_finds_threads_and_processes_across_growth),
	    cmocka_unit_test(test_model_process_name_takes_an_entry_before_the_process_name),
	    cmocka_unit_test(test_model_lookups_search_arrays_set_by_hand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
