/*
 * The importer handing its items to a sink as they become final
 * (tl_import_read_file_to), and `timeline slices`' printer over it: the
 * same items and bytes as the whole import, and memory that is what is
 * open, not what was read.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/readers/import_print.h"
#include "tools/readers/trace_import.h"

/* ------------------------------------------------------------------------ */
/* Traces written for the tests */

/*
 * ftrace text of `frames` frames on three threads: each a frame slice with
 * its frame's number in its name, a nested slice, an instant, an async
 * slice of its own cookie, an async end of another cookie with no begin, a
 * counter sample, a slice whose name holds a NUL and the frame's number,
 * and a slice still open at the end (the last frame's).
 */
static const char *write_text(const char *stem, unsigned frames)
{
	const char *path = tl_test_path(stem, ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# tracer: nop\n", f);
	unsigned long long us = 1000000;
	for (unsigned i = 0; i < frames; i++) {
		unsigned tid = 101 + i % 3;
#define MARK(fmt, ...)                                                                             \
	fprintf(f, "  t-%u (100) [000] .... %llu.%06llu: tracing_mark_write: " fmt "\n", tid,      \
	        us / 1000000, us % 1000000, __VA_ARGS__),                                          \
	    us += 7
		MARK("B|100|frame %u", i);
		MARK("B|100|%s", "draw");
		MARK("I|100|%s", "vsync");
		MARK("S|100|load|%u", i);
		MARK("C|100|queue|%u", i % 17);
		MARK("E|%u", 100);
		MARK("F|100|load|%u", i);
		/* an async end whose begin came before the trace began */
		MARK("F|100|earlier|%u", i);
		if (i + 1 < frames)
			MARK("E|%u", 100);
		/* a name with a NUL in it, and the frame's number after it */
		fprintf(f, "  t-%u (100) [000] .... %llu.%06llu: tracing_mark_write: B|100|tick",
		        tid, us / 1000000, us % 1000000);
		fputc('\0', f);
		fprintf(f, "%u\n", i);
		us += 7;
		MARK("E|%u", 100);
#undef MARK
	}
	assert_int_equal(fclose(f), 0);
	return path;
}

/*
 * Chrome JSON of `frames` frames on three threads: an X slice with args (a
 * string of its own), a B/E pair with a v1 flow from the one before, an
 * instant and a counter. Each thread's events in time order (runs merged)
 * or, reversed, every event a run of its own (read through the index).
 */
static const char *write_json(const char *stem, unsigned frames, int reversed)
{
	const char *path = tl_test_path(stem, ".json");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\":[\n", f);
	const char *sep = "";
	for (unsigned k = 0; k < frames; k++) {
		unsigned i = reversed ? frames - 1 - k : k;
		unsigned tid = 1 + i % 3;
		unsigned long long ts = 1000 + 100ull * i;
		fprintf(
		    f,
		    "%s{\"ph\":\"X\",\"name\":\"frame\",\"cat\":\"gfx\",\"pid\":1,\"tid\":%u,"
		    "\"ts\":%llu,\"dur\":50,\"args\":{\"n\":%u,\"url\":\"/asset/%u\"}},\n"
		    "{\"ph\":\"B\",\"name\":\"job %u\",\"pid\":1,\"tid\":%u,\"ts\":%llu},\n"
		    "{\"ph\":\"f\",\"name\":\"hop\",\"cat\":\"q\",\"id\":%u,\"bp\":\"e\",\"pid\":1,"
		    "\"tid\":%u,\"ts\":%llu},\n"
		    "{\"ph\":\"s\",\"name\":\"hop\",\"cat\":\"q\",\"id\":%u,\"pid\":1,\"tid\":%u,"
		    "\"ts\":%llu},\n"
		    "{\"ph\":\"i\",\"name\":\"mark\",\"s\":\"t\",\"pid\":1,\"tid\":%u,\"ts\":%llu},"
		    "\n"
		    "{\"ph\":\"E\",\"pid\":1,\"tid\":%u,\"ts\":%llu},\n"
		    "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"ts\":%llu,\"args\":{\"v\":%u}}",
		    sep, tid, ts, i, i, i, tid, ts + 10, i, tid, ts + 11, i + 1, tid, ts + 12, tid,
		    ts + 13, tid, ts + 20, ts + 20, i % 9);
		sep = ",\n";
	}
	fputs("]}\n", f);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* ------------------------------------------------------------------------ */
/* A sink that keeps what it is handed */

typedef struct handed_slice {
	uint64_t seq;
	int64_t ts, dur, thread_ts, thread_dur;
	char *name;
	uint16_t depth;
	uint8_t kind;
} handed_slice;

typedef struct handed_arg {
	uint64_t seq;
	char *slice, *key;
} handed_arg;

typedef struct keeper {
	handed_slice *slices;
	size_t nslices, slices_cap;
	handed_arg *args;
	size_t nargs, args_cap;
	uint64_t counters, flows, next_counter, next_flow;
	tl_import_flow *flow_ends; /* each flow's slices, by seq, in the order handed */
	size_t flow_ends_cap;
	int out_of_order; /* a counter or flow seq not the next one */
	int restarts;
	int fail_at; /* the slice (1-based) whose hand-over fails with -ENOSPC; 0: none */
} keeper;

static void *grow(void *a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return a;
	*cap = *cap ? 2 * *cap : 256;
	void *grown = realloc(a, *cap * size);
	assert_non_null(grown);
	return grown;
}

static int keep_slice(void *ctx, const tl_import *imp, const tl_import_slice *s, uint64_t seq,
                      int64_t thread_ts, int64_t thread_dur, const tl_import_sink_arg *args,
                      size_t nargs)
{
	(void)imp;
	keeper *k = ctx;
	if (k->fail_at && k->nslices + 1 == (size_t)k->fail_at)
		return -ENOSPC;
	k->slices = grow(k->slices, &k->slices_cap, k->nslices, sizeof *k->slices);
	k->slices[k->nslices++] = (handed_slice){.seq = seq,
	                                         .ts = s->ts,
	                                         .dur = s->dur,
	                                         .thread_ts = thread_ts,
	                                         .thread_dur = thread_dur,
	                                         .name = strdup(s->name),
	                                         .depth = s->depth,
	                                         .kind = s->kind};
	for (size_t i = 0; i < nargs; i++) {
		k->args = grow(k->args, &k->args_cap, k->nargs, sizeof *k->args);
		k->args[k->nargs++] =
		    (handed_arg){args[i].seq, strdup(s->name), strdup(args[i].key)};
	}
	return 0;
}

static int keep_counter(void *ctx, const tl_import *imp, const tl_import_counter *c, uint64_t seq)
{
	(void)imp;
	(void)c;
	keeper *k = ctx;
	k->out_of_order |= seq != k->next_counter++;
	k->counters++;
	return 0;
}

static int keep_flow(void *ctx, const tl_import *imp, const tl_import_slice *out, uint64_t out_seq,
                     const tl_import_slice *in, uint64_t in_seq, uint64_t seq)
{
	(void)imp;
	(void)out;
	(void)in;
	keeper *k = ctx;
	k->out_of_order |= seq != k->next_flow++;
	k->flow_ends = grow(k->flow_ends, &k->flow_ends_cap, k->flows, sizeof *k->flow_ends);
	k->flow_ends[k->flows++] = (tl_import_flow){(size_t)out_seq, (size_t)in_seq};
	return 0;
}

static void forget(void *ctx)
{
	keeper *k = ctx;
	for (size_t i = 0; i < k->nslices; i++)
		free(k->slices[i].name);
	for (size_t i = 0; i < k->nargs; i++) {
		free(k->args[i].slice);
		free(k->args[i].key);
	}
	k->nslices = k->nargs = 0;
	k->counters = k->flows = k->next_counter = k->next_flow = 0;
	k->restarts++;
}

static tl_import_sink keeper_sink(keeper *k)
{
	return (tl_import_sink){.ctx = k,
	                        .slice = keep_slice,
	                        .counter = keep_counter,
	                        .flow = keep_flow,
	                        .restart = forget};
}

static void keeper_free(keeper *k)
{
	forget(k);
	free(k->slices);
	free(k->args);
	free(k->flow_ends);
}

static void read_to(const char *path, const tl_import_sink *sink, tl_import *imp)
{
	tl_read_error err = {0};
	int rc = tl_import_read_file_to(path, sink, NULL, imp, NULL, &err);
	if (rc)
		fail_msg("%s: %d: %zu:%zu: %s", path, rc, err.line, err.column, err.message);
}

static void read_whole(const char *path, tl_import *imp)
{
	tl_read_error err = {0};
	int rc = tl_import_read_file(path, imp, NULL, &err);
	if (rc)
		fail_msg("%s: %d: %zu:%zu: %s", path, rc, err.line, err.column, err.message);
}

/* What the import held at most, read with a sink that keeps nothing. */
typedef struct held {
	size_t slices, args, tracks, names;
	uint64_t streamed;
	tl_import_reading reading;
} held;

static int drop_slice(void *ctx, const tl_import *imp, const tl_import_slice *s, uint64_t seq,
                      int64_t thread_ts, int64_t thread_dur, const tl_import_sink_arg *args,
                      size_t nargs)
{
	(void)ctx, (void)imp, (void)s, (void)seq, (void)thread_ts, (void)thread_dur, (void)args;
	(void)nargs;
	return 0;
}

static int drop_counter(void *ctx, const tl_import *imp, const tl_import_counter *c, uint64_t seq)
{
	(void)ctx, (void)imp, (void)c, (void)seq;
	return 0;
}

static held held_reading(const char *path)
{
	tl_import_sink sink = {.slice = drop_slice, .counter = drop_counter};
	tl_import imp;
	read_to(path, &sink, &imp);
	held h = {imp.held_slices, imp.held_args, imp.held_tracks,
	          imp.held_names,  imp.streamed,  imp.reading};
	assert_int_equal(imp.nslices, 0); /* nothing kept */
	tl_import_free(&imp);
	return h;
}

/* Reading 8 times the trace holds exactly what the smaller one held. */
static void assert_same_held(const char *what, held small, held large)
{
	printf("%s: held slices %zu, args %zu, tracks %zu, names %zu; handed on %llu and %llu "
	       "items\n",
	       what, large.slices, large.args, large.tracks, large.names,
	       (unsigned long long)small.streamed, (unsigned long long)large.streamed);
	assert_true(large.streamed >= 7 * small.streamed);
	assert_int_equal(large.slices, small.slices);
	assert_int_equal(large.args, small.args);
	assert_int_equal(large.tracks, small.tracks);
	assert_int_equal(large.names, small.names);
}

/* ------------------------------------------------------------------------ */
/* Memory: what is open */

static void test_ftrace_text_holds_what_is_open_however_long(void **state)
{
	(void)state;
	held small = held_reading(write_text("stream-small", 3000));
	held large = held_reading(write_text("stream-large", 24000));
	assert_same_held("ftrace text", small, large);
	/* three threads two deep, an async slice, instants: a handful */
	assert_true(large.slices <= 12);
	/* every frame's name given back with its slice */
	assert_true(large.names <= 12);
}

/* JSON of 2,000 and 16,000 frames, read as `reading` says. */
static void assert_json_holds_what_is_open(const char *what, int reversed,
                                           tl_import_reading reading)
{
	held small = held_reading(write_json("stream-small", 2000, reversed));
	held large = held_reading(write_json("stream-large", 16000, reversed));
	assert_int_equal(large.reading, reading);
	assert_same_held(what, small, large);
	assert_true(large.slices <= 16);
}

static void test_json_runs_hold_what_is_open_however_long(void **state)
{
	(void)state;
	assert_json_holds_what_is_open("JSON, runs", 0, TL_READING_JSON_RUNS);
}

static void test_json_index_holds_what_is_open_however_long(void **state)
{
	(void)state;
	/* 7 events a frame: the larger index (over 100,000 places) goes to disk */
	assert_json_holds_what_is_open("JSON, index", 1, TL_READING_JSON_INDEX);
}

/* ------------------------------------------------------------------------ */
/* What is handed on */

static int compare_handed(const void *a, const void *b)
{
	uint64_t x = ((const handed_slice *)a)->seq, y = ((const handed_slice *)b)->seq;
	return x < y ? -1 : x > y;
}

static int compare_args(const void *a, const void *b)
{
	uint64_t x = ((const handed_arg *)a)->seq, y = ((const handed_arg *)b)->seq;
	return x < y ? -1 : x > y;
}

/* Each item of the whole import handed on once, with its index as seq. */
static void assert_handed_as_whole(const char *path)
{
	tl_import whole, streamed;
	read_whole(path, &whole);
	keeper k = {0};
	tl_import_sink sink = keeper_sink(&k);
	read_to(path, &sink, &streamed);
	assert_int_equal(k.nslices, whole.nslices);
	qsort(k.slices, k.nslices, sizeof *k.slices, compare_handed);
	for (size_t i = 0; i < k.nslices; i++) {
		const tl_import_slice *w = &whole.slices[i];
		const handed_slice *h = &k.slices[i];
		assert_int_equal(h->seq, i);
		assert_int_equal(h->ts, w->ts);
		assert_int_equal(h->dur, w->dur);
		assert_string_equal(h->name, w->name);
		assert_int_equal(h->depth, w->depth);
		assert_int_equal(h->kind, w->kind);
		assert_int_equal(h->thread_ts, tl_import_slice_thread_ts(&whole, i));
		assert_int_equal(h->thread_dur, tl_import_slice_thread_dur(&whole, i));
	}
	assert_int_equal(k.nargs, whole.nargs);
	if (k.nargs)
		qsort(k.args, k.nargs, sizeof *k.args, compare_args);
	for (size_t i = 0; i < k.nargs; i++) {
		assert_int_equal(k.args[i].seq, i);
		assert_string_equal(k.args[i].key, whole.args[i].key);
		assert_string_equal(k.args[i].slice, whole.slices[whole.args[i].slice].name);
	}
	assert_int_equal(k.counters, whole.ncounters);
	assert_int_equal(k.flows, whole.nflows);
	for (size_t i = 0; i < k.flows; i++) {
		assert_int_equal(k.flow_ends[i].out, whole.flows[i].out);
		assert_int_equal(k.flow_ends[i].in, whole.flows[i].in);
	}
	assert_false(k.out_of_order);
	assert_int_equal(streamed.streamed, whole.nslices + whole.ncounters + whole.nflows);
	assert_int_equal(k.restarts, 0);
	keeper_free(&k);
	tl_import_free(&streamed);
	tl_import_free(&whole);
}

static void test_ftrace_items_are_handed_on_once_as_the_whole_import_has_them(void **state)
{
	(void)state;
	assert_handed_as_whole(write_text("stream-handed", 500));
}

static void test_json_items_are_handed_on_once_as_the_whole_import_has_them(void **state)
{
	(void)state;
	assert_handed_as_whole(write_json("stream-handed", 500, 0));
	assert_handed_as_whole(write_json("stream-handed-index", 500, 1));
}

static void test_text_going_back_in_time_is_read_again_from_the_start(void **state)
{
	(void)state;
	const char *path = tl_test_path("stream-unsorted", ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("  t-1 (1) [000] .... 2.000000: tracing_mark_write: B|1|late\n"
	      "  t-1 (1) [000] .... 3.000000: tracing_mark_write: E|1\n"
	      "  t-1 (1) [000] .... 1.000000: tracing_mark_write: B|1|early\n"
	      "  t-1 (1) [000] .... 1.500000: tracing_mark_write: E|1\n",
	      f);
	assert_int_equal(fclose(f), 0);
	keeper k = {0};
	tl_import_sink sink = keeper_sink(&k);
	tl_import imp;
	read_to(path, &sink, &imp);
	assert_int_equal(k.restarts, 1);
	assert_int_equal(k.nslices, 2); /* each once: what the first read handed was forgotten */
	qsort(k.slices, k.nslices, sizeof *k.slices, compare_handed);
	assert_string_equal(k.slices[0].name, "early");
	assert_string_equal(k.slices[1].name, "late");
	keeper_free(&k);
	tl_import_free(&imp);
}

static void test_a_sink_error_stops_the_import_with_that_error(void **state)
{
	(void)state;
	keeper k = {.fail_at = 10};
	tl_import_sink sink = keeper_sink(&k);
	tl_import imp;
	tl_read_error err = {0};
	assert_int_equal(
	    tl_import_read_file_to(write_text("stream-fail", 200), &sink, NULL, &imp, NULL, &err),
	    -ENOSPC);
	assert_int_equal(k.nslices, 9);
	keeper_free(&k);
}

/* ------------------------------------------------------------------------ */
/* The printer */

static char *print_whole(const char *path, unsigned kinds)
{
	tl_import imp;
	read_whole(path, &imp);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	assert_non_null(mem);
	tl_import_print(&imp, kinds, mem);
	assert_int_equal(fclose(mem), 0);
	tl_import_free(&imp);
	return text;
}

static char *print_streamed(const char *path, unsigned kinds, uint64_t *spilled)
{
	tl_import_printer *p = tl_import_printer_new(kinds);
	assert_non_null(p);
	tl_import imp;
	read_to(path, tl_import_printer_sink(p), &imp);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	assert_non_null(mem);
	assert_int_equal(tl_import_printer_write(p, &imp, NULL, mem), 0);
	assert_int_equal(fclose(mem), 0);
	*spilled = tl_import_printer_spilled(p);
	tl_import_printer_free(p);
	tl_import_free(&imp);
	return text;
}

#define ALL_KINDS                                                                                  \
	(TL_PRINT_DEFAULT | TL_PRINT_ARG | TL_PRINT_PROCESS | TL_PRINT_THREAD | TL_PRINT_STAT)

static void assert_prints_as_whole(const char *path, unsigned kinds, int spills)
{
	uint64_t spilled;
	char *streamed = print_streamed(path, kinds, &spilled);
	char *whole = print_whole(path, kinds);
	assert_true(strlen(whole) > 0);
	assert_string_equal(streamed, whole);
	printf("%s: %zu bytes printed, %llu kept aside on disk\n", path, strlen(whole),
	       (unsigned long long)spilled);
	assert_true(spills ? spilled > 0 : spilled == 0);
	free(streamed);
	free(whole);
}

static void test_the_printer_prints_as_the_whole_import(void **state)
{
	(void)state;
	assert_prints_as_whole(write_text("print-text", 300), ALL_KINDS, 0);
	assert_prints_as_whole(write_json("print-json", 300, 0), ALL_KINDS, 0);
	assert_prints_as_whole(write_json("print-index", 300, 1), TL_PRINT_DEFAULT, 0);
}

static void test_the_printer_puts_what_it_spilled_back_in_order(void **state)
{
	(void)state;
	/* over 4 MiB of slice and arg records: sorted runs on disk, merged */
	assert_prints_as_whole(write_json("print-spill", 40000, 0), ALL_KINDS, 1);
}

static void test_slices_says_so_when_the_temporary_files_do_not_fit(void **state)
{
	(void)state;
	if (!tl_test_cli())
		fail_msg("TIMELINE_CLI is not set (ctest sets it to the built CLI)");
	const char *dir = tl_test_mount_disk("stream-full", 256 * 1024);
	const char *path = write_json("stream-full", 40000, 0);
	char *out = NULL, *err = NULL;
	int status = tl_test_run_cli(&out, &err, "slices '%s' --kind slice,arg", path);
	char *err_with_tmpdir = NULL;
	int status_full = tl_test_run_output(NULL, &err_with_tmpdir,
	                                     "TMPDIR='%s' '%s' slices '%s' --kind slice,arg", dir,
	                                     tl_test_cli(), path);
	tl_test_unmount_disk();
	assert_int_equal(status, 0);
	assert_int_equal(status_full, 1);
	assert_non_null(strstr(err_with_tmpdir, "No space left on device"));
	assert_int_equal(tl_test_count(err_with_tmpdir, "\n"), 1);
	free(out);
	free(err);
	free(err_with_tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ftrace_text_holds_what_is_open_however_long),
	    cmocka_unit_test(test_json_runs_hold_what_is_open_however_long),
	    cmocka_unit_test(test_json_index_holds_what_is_open_however_long),
	    cmocka_unit_test(test_ftrace_items_are_handed_on_once_as_the_whole_import_has_them),
	    cmocka_unit_test(test_json_items_are_handed_on_once_as_the_whole_import_has_them),
	    cmocka_unit_test(test_text_going_back_in_time_is_read_again_from_the_start),
	    cmocka_unit_test(test_a_sink_error_stops_the_import_with_that_error),
	    cmocka_unit_test(test_the_printer_prints_as_the_whole_import),
	    cmocka_unit_test(test_the_printer_puts_what_it_spilled_back_in_order),
	    cmocka_unit_test(test_slices_says_so_when_the_temporary_files_do_not_fit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
