/* Traces with many threads (wide_traces.h). */
#include "support/wide_traces.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "recorder/record.h"
#include "recorder/snapshot_format.h"

/* Each thread's process, and its tid, in text and JSON. */
#define WIDE_PID(i) (10000u + 2u * (i))
#define WIDE_TID(i) (10001u + 2u * (i))
/* The snapshot's categories (a record names one by index). */
#define WIDE_CATEGORIES 64u

static int finish(FILE *f)
{
	return ferror(f) ? -EIO : 0;
}

/* ---- the snapshot -------------------------------------------------------- */

/* A chunk's payload, or a block's records, being made. */
typedef struct words {
	uint64_t w[64];
	size_t n;
	size_t start; /* of the record being made */
} words;

static void put_word(words *r, uint64_t v)
{
	r->w[r->n++] = v;
}

/* A string as a record holds it inline: its length, then its bytes in
 * whole words padded with zeros. */
static void put_text(words *r, const char *s)
{
	size_t len = strlen(s);
	put_word(r, len);
	for (size_t off = 0; off < len; off += 8) {
		uint64_t word = 0;
		memcpy(&word, s + off, len - off < 8 ? len - off : 8);
		put_word(r, word);
	}
}

/* Starts a record of phase at ts_ns (every string inline, timestamps in
 * ns); rec_end sets its length. */
static void rec_start(words *r, uint64_t ts_ns, char phase, unsigned flags, unsigned cat,
                      unsigned argtypes)
{
	r->start = r->n;
	put_word(r, ts_ns);
	put_word(r, TL_REC_HEADER(phase, 0, TL_REC_F_STRINGS_INLINE | TL_REC_F_TS_NS | flags, cat,
	                          argtypes));
}

static void rec_end(words *r)
{
	r->w[r->start + 1] |= (uint64_t)(r->n - r->start) << TL_REC_WORDS_SHIFT;
}

static void put_u32(FILE *f, uint32_t v)
{
	fwrite(&v, sizeof v, 1, f);
}

static void put_u64(FILE *f, uint64_t v)
{
	fwrite(&v, sizeof v, 1, f);
}

/* A chunk of type whose payload is bytes[0..len), padded to 8 bytes. */
static void put_chunk(FILE *f, uint32_t type, const void *bytes, size_t len)
{
	static const char zeros[8];
	put_u32(f, type);
	put_u32(f, 0);
	put_u64(f, len);
	fwrite(bytes, 1, len, f);
	fwrite(zeros, 1, (8 - len % 8) % 8, f);
}

/* A chunk whose payload is a u32 and a string (PROCESS, CATEGORY, THREAD). */
static void put_named(FILE *f, uint32_t type, uint32_t id, const char *name)
{
	char payload[128];
	uint32_t len = (uint32_t)strlen(name);
	memcpy(payload, &id, 4);
	memcpy(payload + 4, &len, 4);
	memcpy(payload + 8, name, len);
	put_chunk(f, type, payload, 8 + len);
}

/* Thread i's records: a slice around a COMPLETE one with an arg, a flow
 * begun and one ended (from thread i - 1: global ids), an async slice of
 * its own, an instant and a counter of its own. */
static void thread_records(words *r, unsigned i, unsigned threads)
{
	char name[32];
	uint64_t ts = 1000000 + (uint64_t)i * 100;
	unsigned global = (TL_EVENT_SCOPE_GLOBAL >> 1) << TL_REC_F_SCOPE_SHIFT;
	unsigned cat = i % WIDE_CATEGORIES;
	snprintf(name, sizeof name, "s%u", i);
	rec_start(r, ts, TL_PHASE_BEGIN, 0, cat, 0);
	put_text(r, name);
	rec_end(r);
	rec_start(r, ts + 1, TL_PHASE_COMPLETE, 0, cat, TL_ARG_INT);
	put_text(r, "x");
	put_word(r, ts + 5);
	put_text(r, "k");
	put_word(r, i);
	rec_end(r);
	rec_start(r, ts + 2, TL_PHASE_FLOW_BEGIN, global, cat, 0);
	put_text(r, "flow");
	put_word(r, i + 1);
	rec_end(r);
	snprintf(name, sizeof name, "a%u", i);
	rec_start(r, ts + 3, TL_PHASE_ASYNC_BEGIN, 0, cat, 0);
	put_text(r, name);
	put_word(r, i);
	rec_end(r);
	rec_start(r, ts + 4, TL_PHASE_INSTANT, 0, cat, 0);
	put_text(r, "v");
	rec_end(r);
	snprintf(name, sizeof name, "q%u", i);
	rec_start(r, ts + 5, TL_PHASE_COUNTER, 0, cat, 0);
	put_text(r, name);
	put_word(r, i % 7);
	rec_end(r);
	snprintf(name, sizeof name, "a%u", i);
	rec_start(r, ts + 6, TL_PHASE_ASYNC_END, 0, cat, 0);
	put_text(r, name);
	put_word(r, i);
	rec_end(r);
	if (i > 0 || threads == 1) {
		rec_start(r, ts + 7, TL_PHASE_FLOW_END, global, cat, 0);
		put_text(r, "flow");
		put_word(r, i > 0 ? i : 1);
		rec_end(r);
	}
	rec_start(r, ts + 9, TL_PHASE_END, 0, cat, 0);
	rec_end(r);
}

int tl_wide_snapshot(FILE *f, unsigned threads)
{
	fwrite(TL_SNAPSHOT_MAGIC, 1, TL_SNAPSHOT_MAGIC_LEN, f);
	put_u32(f, TL_SNAPSHOT_VERSION_PLAIN);
	put_u32(f, TL_SNAPSHOT_HEADER_BYTES);
	put_u32(f, 0);
	put_u32(f, 4242);
	put_u64(f, 0);
	put_named(f, TL_CHUNK_PROCESS, 4242, "wide");

	/* u32 clock 7 (boot), u32 ticks 0 (timestamps in ns), u32 npairs 0,
	 * u32 reserved, the clocks read at the snapshot, its timestamp */
	uint64_t clock[] = {
	    7, 0, 111111, 222222, 1700000000000000000ull, 2000000 + (uint64_t)threads * 100};
	put_chunk(f, TL_CHUNK_CLOCK, clock, sizeof clock);
	for (unsigned c = 0; c < WIDE_CATEGORIES; c++) {
		char name[16];
		snprintf(name, sizeof name, "c%u", c);
		put_named(f, TL_CHUNK_CATEGORY, c, name);
	}
	for (unsigned i = 0; i < threads; i++) {
		char name[32];
		snprintf(name, sizeof name, "w%u", i);
		put_named(f, TL_CHUNK_THREAD, WIDE_TID(i), name);
	}
	for (unsigned i = 0; i < threads; i++) {
		/* the BLOCK chunk's head: u32 tid, u32 first record (0), u64 seq,
		 * u64 words (set once the records are made) */
		words r = {.n = 0};
		put_word(&r, WIDE_TID(i));
		put_word(&r, 1);
		put_word(&r, 0);
		thread_records(&r, i, threads);
		r.w[2] = r.n - 3;
		put_chunk(f, TL_CHUNK_BLOCK, r.w, r.n * sizeof r.w[0]);
	}
	/* THREAD_DROPS: u32 count, u32 reserved, then { u32 tid, u32 0, u64 } */
	put_u32(f, TL_CHUNK_THREAD_DROPS);
	put_u32(f, 0);
	put_u64(f, 8 + 16 * (uint64_t)threads);
	put_u32(f, threads);
	put_u32(f, 0);
	for (unsigned i = 0; i < threads; i++) {
		put_u32(f, WIDE_TID(i));
		put_u32(f, 0);
		put_u64(f, i % 3);
	}
	put_chunk(f, TL_CHUNK_END, NULL, 0);
	return finish(f);
}

/* ---- ftrace text --------------------------------------------------------- */

/* One trace_marker line of thread i at us microseconds. */
static void marker(FILE *f, unsigned i, uint64_t us, const char *payload)
{
	fprintf(f, "          t%u-%u (%7u) [%03u] ...1 %6llu.%06llu: tracing_mark_write: %s\n", i,
	        WIDE_TID(i), WIDE_PID(i), i % 4, (unsigned long long)(us / 1000000),
	        (unsigned long long)(us % 1000000), payload);
}

int tl_wide_ftrace(FILE *f, unsigned threads)
{
	fputs("# tracer: nop\n#\n", f);
	for (unsigned i = 0; i < threads; i++) {
		uint64_t us = 1000000000ull + (uint64_t)i * 10;
		unsigned pid = WIDE_PID(i);
		char p[96];
		snprintf(p, sizeof p, "B|%u|s%u", pid, i);
		marker(f, i, us, p);
		snprintf(p, sizeof p, "C|%u|q%u|%u", pid, i, i % 7);
		marker(f, i, us + 1, p);
		snprintf(p, sizeof p, "S|%u|a%u|%u", pid, i, i);
		marker(f, i, us + 2, p);
		snprintf(p, sizeof p, "I|%u|v", pid);
		marker(f, i, us + 3, p);
		snprintf(p, sizeof p, "N|%u|tr%u|n", pid, i);
		marker(f, i, us + 4, p);
		snprintf(p, sizeof p, "F|%u|a%u|%u", pid, i, i);
		marker(f, i, us + 5, p);
		snprintf(p, sizeof p, "E|%u", pid);
		marker(f, i, us + 6, p);
	}
	return finish(f);
}

/* ---- Chrome JSON ----------------------------------------------------------- */

int tl_wide_json(FILE *f, unsigned threads)
{
	fputs("{\"traceEvents\":[\n", f);
	for (unsigned i = 0; i < threads; i++) {
		unsigned pid = WIDE_PID(i), tid = WIDE_TID(i);
		unsigned long long ts = 1000 + (unsigned long long)i * 20;
		const char *sep = i ? ",\n" : "";
		fprintf(f,
		        "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":%u,"
		        "\"args\":{\"name\":\"p%u\"}},\n"
		        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
		        "\"args\":{\"name\":\"w%u\"}},\n",
		        sep, pid, pid, i, pid, tid, i);
		fprintf(
		    f,
		    "{\"ph\":\"B\",\"cat\":\"c%u\",\"name\":\"s%u\",\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%llu,\"args\":{\"k\":%u}},\n"
		    "{\"ph\":\"X\",\"cat\":\"c%u\",\"name\":\"x\",\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%llu,\"dur\":2,\"bind_id\":\"0x%x\",\"flow_out\":true},\n"
		    "{\"ph\":\"s\",\"cat\":\"f\",\"name\":\"fl\",\"id\":%u,\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%llu},\n",
		    i, i, pid, tid, ts, i, i, pid, tid, ts + 1, i, i, pid, tid, ts + 2);
		fprintf(f,
		        "{\"ph\":\"b\",\"cat\":\"n\",\"name\":\"a%u\",\"id2\":{\"local\":\"0x%x\"},"
		        "\"pid\":%u,\"tid\":%u,\"ts\":%llu},\n"
		        "{\"ph\":\"C\",\"name\":\"q%u\",\"pid\":%u,\"tid\":%u,\"ts\":%llu,"
		        "\"args\":{\"v\":%u}},\n"
		        "{\"ph\":\"i\",\"name\":\"v\",\"s\":\"t\",\"pid\":%u,\"tid\":%u,"
		        "\"ts\":%llu},\n"
		        "{\"ph\":\"e\",\"cat\":\"n\",\"name\":\"a%u\",\"id2\":{\"local\":\"0x%x\"},"
		        "\"pid\":%u,\"tid\":%u,\"ts\":%llu},\n",
		        i, i, pid, tid, ts + 3, i, pid, tid, ts + 4, i % 7, pid, tid, ts + 5, i, i,
		        pid, tid, ts + 6);
		fprintf(
		    f,
		    "{\"ph\":\"X\",\"cat\":\"c%u\",\"name\":\"r\",\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%llu,\"dur\":1,\"bind_id\":\"0x%x\",\"flow_in\":true},\n"
		    "{\"ph\":\"f\",\"cat\":\"f\",\"name\":\"fl\",\"id\":%u,\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%llu},\n"
		    "{\"ph\":\"E\",\"pid\":%u,\"tid\":%u,\"ts\":%llu}",
		    i, pid, tid, ts + 7, i, i, pid, tid, ts + 9, pid, tid, ts + 10);
	}
	/* on the boot clock, the clocks read at one instant: what `timeline
	 * merge` takes for a trace recorded in its processes */
	fputs("\n],\n\"metadata\":{\"clock\":\"boot\",\"boottime_ns\":1000000000,"
	      "\"monotonic_ns\":900000000,\"realtime_ns\":1700000000000000000}}\n",
	      f);
	return finish(f);
}
