/*
 * The file recorder: every event of a run in the file, with names; a file
 * cut anywhere (a killed process, a full disk) still reads up to its last
 * whole chunk; rotation; drops when the drain falls behind, counted per
 * thread in the file; tl_flush.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"

#define THREADS 4

static const char *file_path;
static const char *fifo_copy; /* a copy of what the pipe carried */
/* A pipe the recorder writes to (tl_options.file_fd) instead of file_path,
 * when pipe_write is set; its reading end is copied to fifo_copy. */
static int pipe_read = -1, pipe_write = -1;
static _Atomic int reader_go; /* fifo_reader copies the pipe once set */

static void open_pipe(void)
{
	int fds[2];
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pipe_read = fds[0];
	pipe_write = fds[1];
}

static void start(size_t buffer_bytes, uint64_t max_bytes, unsigned keep)
{
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .buffer_bytes = buffer_bytes,
	                .block_bytes = 4096,
	                .file_path = file_path,
	                .file_max_bytes = max_bytes,
	                .file_keep = keep};
	if (pipe_write > 0) {
		o.file_path = NULL;
		o.file_fd = pipe_write;
	}
	assert_int_equal(tl_init(&o), 0);
	if (pipe_write > 0) { /* the recorder writes to its own copy of it */
		close(pipe_write);
		pipe_write = -1;
	}
}

static int setup(void **state)
{
	(void)state;
	file_path = tl_test_path("file-recorder", ".tl");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static void read_file(tl_model *m, char *err, size_t errlen)
{
	int rc = tl_model_read_binary_file(file_path, m, err, errlen);
	if (rc)
		print_error("reading %s: %s\n", file_path, err);
	assert_int_equal(rc, 0);
}

static int thread_named(const tl_model *m, const char *name)
{
	for (size_t i = 0; i < m->nthreads; i++)
		if (m->threads[i].name && strcmp(m->threads[i].name, name) == 0)
			return 1;
	return 0;
}

struct writer {
	pthread_t thread;
	int index;
	int pairs;
};

static void *write_pairs(void *arg)
{
	struct writer *w = arg;
	char name[32];
	snprintf(name, sizeof name, "writer %d", w->index);
	tl_thread_set_name(name);
	for (int i = 0; i < w->pairs; i++) {
		TL_TRACE_EVENT_BEGIN1("file", "pair", "i", i);
		TL_TRACE_EVENT_END0("file", "pair");
	}
	return NULL;
}

static void run_writers(int pairs)
{
	struct writer w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct writer){.index = i, .pairs = pairs};
		assert_int_equal(pthread_create(&w[i].thread, NULL, write_pairs, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i].thread, NULL);
}

/* With a pool large enough to wait for the drain, every event of four
 * threads is in the file, once, with the threads' names and the stats. */
static void test_every_event_of_a_run_is_in_the_file_once(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0);
	run_writers(20000);
	/* every block written: the count is exact (while the drain writes, it
	 * may count the block in flight twice) */
	assert_int_equal(tl_flush(), 0);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.events_written, THREADS * 40000);
	/* the events take a twentieth of the pool: half of it never waits */
	assert_int_equal(st.writer_yields, 0);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_string_equal(err, "");
	assert_true(m.complete);
	assert_int_equal(m.nevents, THREADS * 40000);
	assert_int_equal(m.stats.events_written, THREADS * 40000);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "pair"), THREADS * 20000);
	for (int i = 0; i < THREADS; i++) {
		char name[32];
		snprintf(name, sizeof name, "writer %d", i);
		assert_true(thread_named(&m, name));
	}
	tl_model_free(&m);
}

/* Runs of plain begin/end pairs under one name (the commonest records,
 * encoded in one loop), names that change, a name too long to be
 * remembered, and records of other shapes between the runs; several MiB,
 * so that runs cross the drain's staging buffers. Every event is in the
 * file, in order, with its name. */
static const char short_name[] = "a";
static const char medium_name[] = "a name of thirty-two characters.";
static const char long_name[] = "a name too long to be remembered by the encoder as words: more "
                                "than sixty-four bytes";
#define RUNS 600
#define RUN_PAIRS 100

static const char *run_name(int run)
{
	const char *names[] = {short_name, medium_name, long_name};
	return names[run % 3];
}

static void test_runs_of_plain_pairs_are_written_with_their_names_in_order(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0);
	for (int run = 0; run < RUNS; run++) {
		const char *name = run_name(run);
		for (int i = 0; i < RUN_PAIRS; i++) {
			TL_TRACE_EVENT_BEGIN0("file", name);
			TL_TRACE_EVENT_END0("file", name);
		}
		TL_TRACE_EVENT_INSTANT0("file", "mark", TL_EVENT_SCOPE_THREAD);
		TL_TRACE_EVENT_BEGIN1("file", short_name, "run", run);
		TL_TRACE_EVENT_END0("file", short_name);
	}
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_int_equal(m.nevents, RUNS * (2 * RUN_PAIRS + 3));
	size_t at = 0;
	for (int run = 0; run < RUNS; run++) {
		for (int i = 0; i < RUN_PAIRS; i++) {
			assert_int_equal(m.events[at].phase, TL_PHASE_BEGIN);
			assert_string_equal(m.events[at].name, run_name(run));
			assert_int_equal(m.events[at].nargs, 0);
			assert_int_equal(m.events[at + 1].phase, TL_PHASE_END);
			at += 2;
		}
		assert_int_equal(m.events[at].phase, TL_PHASE_INSTANT);
		assert_string_equal(m.events[at].name, "mark");
		assert_int_equal(m.events[at + 1].phase, TL_PHASE_BEGIN);
		assert_int_equal(m.events[at + 1].nargs, 1);
		assert_int_equal(m.events[at + 1].args[0].v.i, run);
		assert_int_equal(m.events[at + 2].phase, TL_PHASE_END);
		at += 3;
	}
	tl_model_free(&m);
}

/* The file packs runs of plain begins and ends (a word each, names and
 * categories as templates): what it reads back is the records exactly as
 * a snapshot of the same block in memory gives them, timestamps included. */
static const char *const packed_names[] = {"frame", "draw", "layout"};
static const char *const packed_cats[] = {"file", "gpu"};
#define PACKED_PAIRS 60

static void emit_packed_pairs(int pairs)
{
	for (int i = 0; i < pairs; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "frame");
		if (i % 2)
			TL_TRACE_EVENT_BEGIN0("gpu", packed_names[1 + i % 3 / 2]);
		else
			TL_TRACE_EVENT_BEGIN0("file", packed_names[1 + i % 3 / 2]);
		if (i % 2)
			TL_TRACE_EVENT_END0("gpu", packed_names[1 + i % 3 / 2]);
		else
			TL_TRACE_EVENT_END0("file", packed_names[1 + i % 3 / 2]);
		TL_TRACE_EVENT_END0("file", "frame");
	}
}

static void test_packed_runs_read_back_as_the_records_in_memory(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0);
	emit_packed_pairs(PACKED_PAIRS); /* 4 KiB: one block, never full */
	assert_int_equal(tl_flush(), 0); /* the partly filled block, to the file */
	tl_model mem;
	tl_test_snapshot_model(&mem);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(mem.nevents, 4 * PACKED_PAIRS);
	assert_int_equal(m.nevents, mem.nevents);
	for (size_t i = 0; i < m.nevents; i++) {
		const tl_model_event *a = &mem.events[i], *b = &m.events[i];
		assert_int_equal(b->phase, a->phase);
		assert_int_equal(b->ts_ns, a->ts_ns);
		assert_int_equal(b->tid, a->tid);
		assert_string_equal(b->cat, a->cat);
		if (a->name)
			assert_string_equal(b->name, a->name);
		else
			assert_null(b->name);
	}
	assert_string_equal(m.events[5].cat, packed_cats[1]);
	tl_model_free(&mem);
	tl_model_free(&m);
}

/* Packed, a begin or an end takes about a word of the file (a snapshot
 * takes 4 and 2): the run's bytes per event, metadata included. */
static void test_packed_runs_take_about_a_word_per_event(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0);
	const int pairs = 50000;
	emit_packed_pairs(pairs);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
	tl_shutdown();
	struct stat sb;
	assert_int_equal(stat(file_path, &sb), 0);
	double per_event = (double)sb.st_size / (4.0 * pairs);
	print_message("%lld bytes for %d events: %.2f bytes an event\n", (long long)sb.st_size,
	              4 * pairs, per_event);
	assert_true(per_event < 10.0);
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_int_equal(m.nevents, 4 * pairs);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "frame"), pairs);
	tl_model_free(&m);
}

/* Snapshots taken while four threads write and the drain runs: each
 * reads back whole, and the file still holds every event once. */
static _Atomic int writers_done;

/* What a snapshot holds under the file recorder: the latest events of
 * each thread, in memory. Each thread's pairs in it are named, whole and
 * in order (their "i" increasing), with nothing from another name. */
static int snapshot_is_in_order(const tl_model *m)
{
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->phase != TL_PHASE_BEGIN && e->phase != TL_PHASE_END)
			return 0;
		if (e->phase == TL_PHASE_BEGIN && strcmp(e->name, "pair") != 0)
			return 0;
	}
	for (size_t t = 0; t < m->nthreads; t++) {
		int64_t last = -1;
		size_t n = 0;
		for (size_t i = 0; i < m->nevents; i++) {
			const tl_model_event *e = &m->events[i];
			if (e->tid != m->threads[t].tid || e->phase != TL_PHASE_BEGIN)
				continue;
			if (e->nargs != 1 || e->args[0].v.i <= last)
				return 0;
			last = e->args[0].v.i;
			n++;
		}
		if (n && strncmp(m->threads[t].name, "writer ", 7) != 0)
			return 0;
	}
	return 1;
}

static void *snapshot_loop(void *arg)
{
	int *taken = arg;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(null >= 0);
	while (!atomic_load(&writers_done) || *taken < 3) {
		/* a snapshot request (it flushes the partly filled blocks to the
		 * file), then what the snapshot holds */
		assert_int_equal(tl_snapshot_json_fd(null), 0);
		tl_model m;
		tl_test_snapshot_model(&m);
		if (!snapshot_is_in_order(&m))
			fail_msg("snapshot %d: events out of order or misnamed", *taken);
		tl_model_free(&m);
		(*taken)++;
	}
	close(null);
	return NULL;
}

static void test_snapshots_during_writes_and_drains_leave_the_file_whole(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0);
	atomic_store(&writers_done, 0);
	int taken = 0;
	pthread_t snapshots;
	assert_int_equal(pthread_create(&snapshots, NULL, snapshot_loop, &taken), 0);
	run_writers(100000);
	atomic_store(&writers_done, 1);
	pthread_join(snapshots, NULL);
	print_message("%d snapshots taken meanwhile\n", taken);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_true(m.complete);
	assert_int_equal(m.nevents, THREADS * 200000);
	tl_model_free(&m);
}

/* tl_flush writes the partly filled blocks; their later records follow
 * without repeating the flushed ones. */
static void test_flush_writes_partly_filled_blocks_and_nothing_twice(void **state)
{
	(void)state;
	start(1024 * 1024, 0, 0);
	for (int i = 0; i < 10; i++)
		TL_TRACE_EVENT_INSTANT1("file", "before flush", TL_SCOPE_THREAD, "i", i);
	assert_int_equal(tl_flush(), 0);
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_false(m.complete); /* the session runs: no END yet */
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "before flush"), 10);
	tl_model_free(&m);
	for (int i = 0; i < 5; i++)
		TL_TRACE_EVENT_INSTANT0("file", "after flush", TL_SCOPE_THREAD);
	tl_shutdown();
	read_file(&m, err, sizeof err);
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "before flush"), 10);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "after flush"), 5);
	tl_model_free(&m);
}

/* A snapshot request writes the partly filled blocks to the file, as
 * tl_flush does, and returns the events still in memory. */
static void test_a_snapshot_request_writes_the_partly_filled_blocks(void **state)
{
	(void)state;
	start(1024 * 1024, 0, 0);
	for (int i = 0; i < 10; i++)
		TL_TRACE_EVENT_INSTANT1("file", "before snapshot", TL_SCOPE_THREAD, "i", i);
	const char *json = tl_test_path("file-recorder-snapshot", ".json");
	assert_int_equal(tl_snapshot_json(json), 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	assert_int_equal(tl_test_count(text, "\"before snapshot\""), 10);
	free(text);
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_false(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "before snapshot"), 10);
	tl_model_free(&m);
	/* the block goes on from there: nothing written twice */
	TL_TRACE_EVENT_INSTANT0("file", "after snapshot", TL_SCOPE_THREAD);
	tl_shutdown();
	read_file(&m, err, sizeof err);
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "before snapshot"), 10);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "after snapshot"), 1);
	tl_model_free(&m);
}

/* A process killed with SIGKILL leaves a file that reads up to its last
 * whole chunk, with the thread's name. */
static int64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Emits "from" and "to" instants about 30 ms apart, then a "window"
 * instant with the trace clock read on both sides of each of them, so
 * that their true distance is known to lie within [to_before - from_after,
 * to_after - from_before] whatever a busy machine delays. */
static void emit_timed_pair(void)
{
	int64_t from_before = boot_ns();
	TL_TRACE_EVENT_INSTANT0("file", "from", TL_EVENT_SCOPE_THREAD);
	int64_t from_after = boot_ns();
	while (boot_ns() - from_after < 30000000)
		;
	int64_t to_before = boot_ns();
	TL_TRACE_EVENT_INSTANT0("file", "to", TL_EVENT_SCOPE_THREAD);
	int64_t to_after = boot_ns();
	TL_TRACE_EVENT_INSTANT4("file", "window", TL_EVENT_SCOPE_THREAD, "from_before",
	                        from_before, "from_after", from_after, "to_before", to_before,
	                        "to_after", to_after);
}

static const tl_model_event *instant_named(const tl_model *m, const char *name)
{
	for (size_t i = 0; i < m->nevents; i++) {
		const tl_model_event *e = &m->events[i];
		if (e->phase == TL_PHASE_INSTANT && e->name && strcmp(e->name, name) == 0)
			return e;
	}
	fail_msg("no instant '%s' in the file", name);
	return NULL;
}

/* The file's "from" to "to" distance lies in the window measured around
 * them, to 20 us (the calibration's error): on the TSC path its ticks are
 * converted at the TSC's own rate (two calibration pairs at least), never
 * one tick per ns, which would double it at 2 GHz. */
static void assert_timed_pair(const tl_model *m)
{
	const tl_model_event *from = instant_named(m, "from"), *to = instant_named(m, "to");
	const tl_model_event *window = instant_named(m, "window");
	assert_int_equal(window->nargs, 4);
	int64_t shortest = window->args[2].v.i - window->args[1].v.i;
	int64_t longest = window->args[3].v.i - window->args[0].v.i;
	int64_t in_file = to->ts_ns - from->ts_ns;
	print_message("%s: %.3f ms apart in the file, %.3f to %.3f ms measured\n",
	              tl_test_clock_path(), in_file / 1e6, shortest / 1e6, longest / 1e6);
	assert_true(in_file >= shortest - 20000);
	assert_true(in_file <= longest + 20000);
}

static void test_a_files_times_are_the_trace_clocks(void **state)
{
	(void)state;
	start(1024 * 1024, 0, 0);
	emit_timed_pair();
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_timed_pair(&m);
	tl_model_free(&m);
}

/* The same in a file whose writer was killed, so its last CLOCK chunk is
 * the one the drain wrote while it ran. */
static void test_a_killed_writers_file_keeps_the_trace_clocks_times(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		start(1024 * 1024, 0, 0);
		emit_timed_pair();
		tl_flush();
		raise(SIGKILL);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_false(m.complete);
	assert_timed_pair(&m);
	tl_model_free(&m);
}

static void test_a_killed_writers_file_still_converts(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		start(64u * 1024 * 1024, 0, 0); /* room for all: the drain never drops */
		tl_thread_set_name("doomed writer");
		for (int i = 0; i < 100000; i++) {
			TL_TRACE_EVENT_BEGIN0("file", "before kill");
			TL_TRACE_EVENT_END0("file", "before kill");
		}
		tl_flush();
		raise(SIGKILL);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_false(m.complete);
	print_message("killed writer: %zu events read; %s\n", m.nevents, err);
	assert_non_null(strstr(err, "truncated"));
	assert_null(strstr(err, "undecodable"));
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "before kill"), 100000);
	assert_true(thread_named(&m, "doomed writer"));
	tl_model_free(&m);
}

/* A child that writes flat out, never flushing, is killed with SIGKILL
 * mid-run (blocks staged, writes in flight): `timeline convert` turns
 * what reached the file into JSON, exits 0, names the thread, keeps a
 * prefix of what the file got (the pairs numbered from 0, in order, with
 * gaps only where a busy machine's drain fell behind and the recorder
 * dropped) and says the file was cut. */
static void test_a_writer_killed_mid_run_converts_with_the_cli(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		skip();
	}
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		alarm(120); /* a parent that failed before the kill */
		start(64u * 1024 * 1024, 0, 0); /* room to wait for the drain */
		tl_thread_set_name("killed mid-run");
		for (int64_t i = 0;; i++) {
			TL_TRACE_EVENT_BEGIN1("file", "mid-run", "i", i);
			TL_TRACE_EVENT_END0("file", "mid-run");
			if (i == 200000 && write(ready[1], "r", 1) != 1)
				_exit(1);
		}
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	usleep(20 * 1000); /* still writing flat out */
	assert_int_equal(kill(pid, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	const char *json = tl_test_path("file-recorder-killed", ".json");
	char *out = NULL, *err = NULL;
	int rc = tl_test_run_cli(&out, &err, "convert %s -o %s", file_path, json);
	print_message("timeline convert of the killed writer's file: %d, %s", rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(err, "warning"));
	assert_non_null(strstr(err, "truncated"));
	assert_non_null(strstr(err, "whole chunks up to byte "));
	assert_null(strstr(err, "undecodable"));
	free(out);
	free(err);
	/* valid JSON; the thread named; "mid-run" slices numbered 0, 1, 2 ...
	 * in time order up to where the file was cut */
	rc = tl_test_run("python3 -c '"
	                 "import json,sys\n"
	                 "d=json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
	                 "assert any(e[\"ph\"]==\"M\" and e[\"name\"]==\"thread_name\" and "
	                 "e[\"args\"][\"name\"]==\"killed mid-run\" for e in d)\n"
	                 "i=[e[\"args\"][\"i\"] for e in d if e.get(\"name\")==\"mid-run\" and "
	                 "e[\"ph\"] in \"BX\"]\n"
	                 "assert i and i[0]==0 and all(a<b for a,b in zip(i,i[1:])), i[:10]\n"
	                 "print(len(i), \"pairs converted\")' %s",
	                 json);
	assert_int_equal(rc, 0);
}

/* A drain that never catches up (the queue of full blocks never empties)
 * still writes what changes of the metadata: a file cut in the middle of
 * the overload names a thread that started during it and counts the
 * drops so far. */
static _Atomic int overload_stop;

static void *write_until_stopped(void *arg)
{
	tl_thread_set_name(arg);
	while (!atomic_load_explicit(&overload_stop, memory_order_relaxed)) {
		TL_TRACE_EVENT_BEGIN0("file", "overload");
		TL_TRACE_EVENT_END0("file", "overload");
	}
	return NULL;
}

static _Atomic int slow_reader_fast;

/* Copies the pipe to fifo_copy, slowly until told otherwise. */
static void *slow_fifo_reader(void *arg)
{
	(void)arg;
	int in = pipe_read;
	pipe_read = -1;
	if (in < 0)
		return (void *)1;
	int out = open(fifo_copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[65536];
	ssize_t n;
	for (;;) {
		int fast = atomic_load(&slow_reader_fast);
		if ((n = read(in, buf, fast ? sizeof buf : 4096)) <= 0)
			break;
		if (write(out, buf, (size_t)n) != n)
			break;
		if (!fast)
			usleep(10 * 1000); /* a block in 10 ms: far behind */
	}
	close(out);
	close(in);
	return NULL;
}

static size_t thread_events(const tl_model *m, const char *thread)
{
	uint32_t tid = 0;
	for (size_t i = 0; i < m->nthreads; i++)
		if (strcmp(m->threads[i].name, thread) == 0)
			tid = m->threads[i].tid;
	size_t n = 0;
	for (size_t i = 0; tid && i < m->nevents; i++)
		n += m->events[i].tid == tid;
	return n;
}

static void test_a_file_cut_during_an_overload_names_its_threads_and_drops(void **state)
{
	(void)state;
	fifo_copy = tl_test_path("file-recorder-overload-copy", ".tl");
	open_pipe();
	atomic_store(&slow_reader_fast, 0);
	atomic_store(&overload_stop, 0);
	pthread_t reader, early, late;
	assert_int_equal(pthread_create(&reader, NULL, slow_fifo_reader, NULL), 0);
	start(64 * 1024, 0, 0);
	assert_int_equal(pthread_create(&early, NULL, write_until_stopped, "early writer"), 0);
	tl_stats st = {.struct_size = sizeof st};
	do {
		usleep(1000);
		assert_int_equal(tl_stats_get(&st), 0);
	} while (st.events_dropped == 0);
	/* overloaded: a second thread starts now */
	assert_int_equal(pthread_create(&late, NULL, write_until_stopped, "late writer"), 0);
	size_t late_events = 0;
	uint64_t dropped = 0;
	/* a block reaches the copy every 10 ms: the pool's 16 and the pipe's
	 * 16 in 0.3 s */
	for (int wait = 0; wait < 100 && (late_events == 0 || dropped == 0); wait++) {
		usleep(20 * 1000);
		tl_model m;
		char err[256] = "";
		if (tl_model_read_binary_file(fifo_copy, &m, err, sizeof err) != 0)
			continue;
		late_events = thread_events(&m, "late writer");
		dropped = m.stats.events_dropped;
		tl_model_free(&m);
	}
	/* the overload went on throughout */
	assert_int_equal(tl_stats_get(&st), 0);
	print_message("cut during the overload: %zu events of the late writer, %llu drops read "
	              "(%llu dropped so far)\n",
	              late_events, (unsigned long long)dropped,
	              (unsigned long long)st.events_dropped);
	atomic_store(&overload_stop, 1);
	pthread_join(early, NULL);
	pthread_join(late, NULL);
	atomic_store(&slow_reader_fast, 1);
	tl_shutdown();
	pthread_join(reader, NULL);
	unlink(file_path);
	assert_true(late_events > 0);
	assert_true(dropped > 0);
}

/* Blocks that filled reach the file by themselves, with no tl_flush. */
static void test_full_blocks_reach_the_file_without_a_flush(void **state)
{
	(void)state;
	start(1024 * 1024, 0, 0);
	tl_thread_set_name("unflushed writer");
	for (int i = 0; i < 2000; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "unflushed");
		TL_TRACE_EVENT_END0("file", "unflushed");
	}
	size_t found = 0;
	for (int wait = 0; wait < 500 && found == 0; wait++) {
		usleep(10 * 1000);
		tl_model m;
		char err[256] = "";
		if (tl_model_read_binary_file(file_path, &m, err, sizeof err) != 0)
			continue;
		found = tl_test_count_events(&m, TL_PHASE_BEGIN, "unflushed");
		if (found)
			assert_true(thread_named(&m, "unflushed writer"));
		tl_model_free(&m);
	}
	print_message("%zu of 2000 pairs in the file before any flush\n", found);
	assert_true(found > 0);
}

/* The start addresses of this process's read-write mappings of exactly
 * `size` bytes (/proc/self/maps), at most `max`; how many. */
static size_t mappings_of_size(size_t size, uintptr_t *starts, size_t max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[512];
	size_t n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && hi - lo == size &&
		    strncmp(perms, "rw", 2) == 0 && n < max)
			starts[n++] = (uintptr_t)lo;
	}
	fclose(f);
	return n;
}

/* The pool is a cap: past its first 16 MiB, backed at tl_init, its blocks
 * are backed as the drain's backlog first reaches them, and the block the
 * drain gave back last is handed out before a never-used one. A run that
 * writes twice its pool's size with the drain keeping up has a small part
 * of the pool's mapping resident (mincore: the pool's pages alone, whatever
 * a sanitizer or an emulator adds to the process). The pool's size, 60 MiB,
 * is one no allocator maps on its own (glibc's arenas are 64 MiB). */
static void test_a_drain_that_keeps_up_backs_little_of_its_pool(void **state)
{
	(void)state;
	const size_t pool = 60u << 20;
	const int bursts = 128, pairs = 65536; /* 16 M events, 128 MiB or more */
	uintptr_t before[16], after[16], mapping = 0;
	size_t nbefore = mappings_of_size(pool, before, 16), found = 0;
	start(pool, 0, 0);
	size_t nafter = mappings_of_size(pool, after, 16);
	for (size_t i = 0; i < nafter; i++) {
		bool old = false;
		for (size_t j = 0; j < nbefore; j++)
			old = old || before[j] == after[i];
		if (!old) {
			mapping = after[i];
			found++;
		}
	}
	if (found != 1)
		print_error("tl_init added %zu read-write mappings of the pool's %zu bytes, not "
		            "one\n",
		            found, pool);
	assert_int_equal(found, 1);
	for (int b = 0; b < bursts; b++) {
		for (int i = 0; i < pairs; i++) {
			TL_TRACE_EVENT_BEGIN0("file", "burst");
			TL_TRACE_EVENT_END0("file", "burst");
		}
		assert_int_equal(tl_flush(), 0);
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE), resident = 0;
	unsigned char *in_core = malloc(pool / page);
	assert_non_null(in_core);
	assert_int_equal(mincore((void *)mapping, pool, in_core), 0);
	for (size_t i = 0; i < pool / page; i++)
		resident += (in_core[i] & 1) ? page : 0;
	free(in_core);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	print_message("%d M events, %.1f MiB of the file recorder's pool of %zu MiB resident\n",
	              2 * bursts * pairs >> 20, (double)resident / (1 << 20), pool >> 20);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.events_written, (uint64_t)2 * bursts * pairs);
	assert_true(resident < pool / 2);
}

/* A file ended by tl_shutdown stops at its END chunk: nothing after it,
 * however its blocks were written. */
static void test_a_finished_file_ends_with_its_end_chunk(void **state)
{
	(void)state;
	start(64u * 1024 * 1024, 0, 0); /* room for all: the drain never drops */
	for (int i = 0; i < 300000; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "to the end");
		TL_TRACE_EVENT_END0("file", "to the end");
	}
	tl_shutdown();
	size_t len = 0;
	char *whole = tl_test_read_file(file_path, &len);
	assert_non_null(whole);
	assert_true(len >= 16);
	uint32_t type;
	uint64_t payload;
	memcpy(&type, whole + len - 16, 4);
	memcpy(&payload, whole + len - 8, 8);
	assert_int_equal(type, 7); /* END */
	assert_int_equal(payload, 0);
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary(whole, len, &m, err, sizeof err), 0);
	assert_string_equal(err, "");
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "to the end"), 300000);
	tl_model_free(&m);
	free(whole);
}

/* A program that exits without tl_shutdown() still ends its file whole. */
static void test_exit_without_shutdown_ends_the_file_whole(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		start(1024 * 1024, 0, 0);
		for (int i = 0; i < 10; i++) {
			TL_TRACE_EVENT_BEGIN0("file", "before exit");
			TL_TRACE_EVENT_END0("file", "before exit");
		}
		exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_BEGIN, "before exit"), 10);
	tl_model_free(&m);
}

/* A forked child records in memory only: its events never reach the
 * parent's file, its shutdown does not end that file, and the parent's
 * events after the fork are all there. */
static void test_a_forked_child_leaves_the_parents_file_alone(void **state)
{
	(void)state;
	start(16u * 1024 * 1024, 0, 0);
	TL_TRACE_EVENT_INSTANT0("file", "parent before fork", TL_SCOPE_THREAD);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 1000; i++)
			TL_TRACE_EVENT_INSTANT0("file", "child", TL_SCOPE_THREAD);
		tl_model m;
		tl_test_snapshot_model(&m); /* the child's own, in memory */
		int ok = tl_test_count_events(&m, TL_PHASE_INSTANT, "child") == 1000;
		tl_model_free(&m);
		tl_shutdown();
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 10; i++)
		TL_TRACE_EVENT_INSTANT0("file", "parent after fork", TL_SCOPE_THREAD);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "parent before fork"), 1);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "parent after fork"), 10);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "child"), 0);
	tl_model_free(&m);
}

/* Cut at any byte past its first event, a file reads without error, keeps
 * the names, and holds a growing prefix of the events; cut before it, it
 * holds nothing to read: an error that names the cut. */
static void test_a_file_cut_anywhere_reads_up_to_its_last_whole_chunk(void **state)
{
	(void)state;
	start(256 * 1024, 0, 0);
	tl_thread_set_name("cut writer");
	for (int i = 0; i < 3000; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "cut");
		TL_TRACE_EVENT_END0("file", "cut");
	}
	tl_shutdown();
	size_t len = 0;
	char *whole = tl_test_read_file(file_path, &len);
	assert_non_null(whole);
	size_t previous = 0;
	int read_any = 0;
	for (size_t cut = 64; cut <= len; cut += len / 97 + 1) {
		tl_model m;
		char err[256] = "";
		int rc = tl_model_read_binary(whole, cut, &m, err, sizeof err);
		if (rc != 0) {
			assert_int_equal(rc, -ENODATA);
			assert_false(read_any);
			assert_non_null(strstr(err, "before any event"));
			continue;
		}
		read_any = 1;
		assert_true(m.nevents >= previous);
		previous = m.nevents;
		if (m.nevents)
			assert_true(thread_named(&m, "cut writer"));
		tl_model_free(&m);
	}
	assert_true(read_any);
	free(whole);
}

/* Zero bytes after a file's END are not what the reader takes as the
 * room made ahead: a whole file whose size leaves END's last, zero, word
 * alone in a sector of its own reads complete; the same file followed by
 * whole zero sectors also does; cut inside its last block with zero
 * sectors after the cut, it keeps that block's whole records. */
static void test_zero_bytes_at_a_files_end_are_read_for_what_they_are(void **state)
{
	(void)state;
	start(1024 * 1024, 0, 0);
	for (int i = 0; i < 100; i++)
		TL_TRACE_EVENT_INSTANT1("file", "zeros", TL_SCOPE_THREAD, "i", i);
	tl_shutdown();
	size_t len = 0;
	char *whole = tl_test_read_file(file_path, &len);
	assert_non_null(whole);
	assert_true(len % 8 == 0 && len >= 64);
	/* a PADDING chunk before END to make the size 8 past a sector */
	size_t body = len - 16, pad = 16;
	while ((body + pad + 16) % 4096 != 8)
		pad += 8;
	size_t padded_len = body + pad + 16, room = padded_len + 3 * 4096;
	char *padded = calloc(1, room);
	assert_non_null(padded);
	memcpy(padded, whole, body);
	uint32_t type = 12;
	uint64_t payload = pad - 16;
	memcpy(padded + body, &type, 4);
	memcpy(padded + body + 8, &payload, 8);
	memcpy(padded + body + pad, whole + body, 16);
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary(padded, padded_len, &m, err, sizeof err), 0);
	assert_string_equal(err, "");
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "zeros"), 100);
	tl_model_free(&m);
	/* followed by zeros to a whole number of sectors and beyond */
	size_t zero_tail = (padded_len + 4096 - 1) / 4096 * 4096 + 4096;
	assert_int_equal(tl_model_read_binary(padded, zero_tail, &m, err, sizeof err), 0);
	assert_true(m.complete);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "zeros"), 100);
	tl_model_free(&m);
	/* cut 8 bytes before the END chunk's start, inside the file's last
	 * chunk (the stats or a block); zeros after it, in whole sectors */
	size_t cut = body - 8;
	memset(padded + cut, 0, room - cut);
	assert_int_equal(tl_model_read_binary(padded, zero_tail, &m, err, sizeof err), 0);
	assert_false(m.complete);
	assert_null(strstr(err, "undecodable"));
	/* what was written: the sectors up to the cut's */
	char written[64];
	snprintf(written, sizeof written, " of %zu written)", (cut + 4095) / 4096 * 4096);
	assert_non_null(strstr(err, written));
	assert_true(tl_test_count_events(&m, TL_PHASE_INSTANT, "zeros") <= 100);
	tl_model_free(&m);
	free(padded);
	free(whole);
}

/* A size limit rotates the file: PATH, PATH.1 and PATH.2 are kept, the
 * older ones removed, and the three read as one trace hold the newest
 * events. */
static void test_rotation_keeps_the_newest_files_which_read_as_one(void **state)
{
	(void)state;
	start(16u * 1024 * 1024, 64 * 1024, 3); /* room to wait for the drain */
	for (int i = 0; i < 50000; i++) {
		TL_TRACE_EVENT_BEGIN1("file", "rotated", "i", i);
		TL_TRACE_EVENT_END0("file", "rotated");
	}
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	assert_int_equal(st.events_dropped, 0);
	tl_shutdown();
	char p1[512], p2[512], p3[512];
	snprintf(p1, sizeof p1, "%s.1", file_path);
	snprintf(p2, sizeof p2, "%s.2", file_path);
	snprintf(p3, sizeof p3, "%s.3", file_path);
	struct stat sb;
	assert_int_equal(stat(p1, &sb), 0);
	assert_int_equal(stat(p2, &sb), 0);
	assert_int_not_equal(stat(p3, &sb), 0);
	const char *set[] = {p2, p1, file_path};
	tl_model all;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary_files(set, 3, NULL, &all, err, sizeof err), 0);
	assert_true(all.complete);
	size_t sum = 0;
	for (size_t i = 0; i < 3; i++) {
		tl_model one;
		assert_int_equal(tl_model_read_binary_file(set[i], &one, err, sizeof err), 0);
		assert_true(one.complete);
		sum += one.nevents;
		tl_model_free(&one);
	}
	assert_int_equal(all.nevents, sum);
	/* the newest pair is there */
	int last_found = 0;
	for (size_t i = 0; i < all.nevents; i++)
		if (all.events[i].phase == TL_PHASE_BEGIN && all.events[i].nargs == 1 &&
		    all.events[i].args[0].v.i == 49999)
			last_found = 1;
	assert_true(last_found);
	tl_model_free(&all);
}

/* `timeline convert PATH.2 PATH.1 PATH` reads the rotated set as one
 * trace: the pairs of the three files, numbered on without a gap or a
 * repeat up to the newest, the oldest files' gone. */
static void test_convert_reads_a_rotated_set_as_one_trace(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		skip();
	}
	start(16u * 1024 * 1024, 64 * 1024, 3); /* room to wait for the drain */
	for (int i = 0; i < 50000; i++) {
		TL_TRACE_EVENT_BEGIN1("file", "rotated", "i", i);
		TL_TRACE_EVENT_END0("file", "rotated");
	}
	tl_shutdown();
	const char *json = tl_test_path("file-recorder-rotated", ".json");
	char *err = NULL;
	int rc = tl_test_run_cli(NULL, &err, "convert %s.2 %s.1 %s -o %s", file_path, file_path,
	                         file_path, json);
	print_message("%s", err);
	assert_int_equal(rc, 0);
	assert_null(strstr(err, "warning"));
	free(err);
	rc = tl_test_run("python3 -c '"
	                 "import json,sys\n"
	                 "d=json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
	                 "i=[e[\"args\"][\"i\"] for e in d if e.get(\"name\")==\"rotated\" and "
	                 "e[\"ph\"] in \"BX\"]\n"
	                 "assert i and 0 < i[0] and i==list(range(i[0], 50000)), (i[:3], i[-3:])\n"
	                 "print(len(i), \"pairs from\", i[0])' %s",
	                 json);
	assert_int_equal(rc, 0);
}

/* ---- a drain that falls behind ------------------------------------------ */

/* The file is a FIFO whose reader holds off until the writers are done:
 * the drain blocks in write(2), the pool fills, and the writers drop. */
static void *fifo_reader(void *arg)
{
	(void)arg;
	int in = pipe_read;
	pipe_read = -1;
	if (in < 0)
		return (void *)1;
	while (!atomic_load(&reader_go))
		usleep(1000);
	int out = open(fifo_copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(out);
	close(in);
	return NULL;
}

static void test_a_drain_behind_drops_and_the_file_counts_them_per_thread(void **state)
{
	(void)state;
	fifo_copy = tl_test_path("file-recorder-fifo-copy", ".tl");
	open_pipe();
	atomic_store(&reader_go, 0);
	pthread_t reader;
	assert_int_equal(pthread_create(&reader, NULL, fifo_reader, NULL), 0);
	start(64 * 1024, 0, 0);
	run_writers(5000);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	/* the reader goes on before any check: a failed one then ends the
	 * test instead of leaving the drain blocked for the teardown */
	atomic_store(&reader_go, 1);
	print_message("drain held back: written %llu, dropped %llu of %d\n",
	              (unsigned long long)st.events_written, (unsigned long long)st.events_dropped,
	              THREADS * 10000);
	assert_true(st.events_dropped > 0);
	assert_int_equal(st.events_written + st.events_dropped, THREADS * 10000);
	/* a writer dropped: every block was taken, most of them (all but the
	 * writers' own and the one the drain holds) waiting; the hand-overs
	 * past half the pool ceded the CPU to the drain */
	print_message("writers ceded the CPU %llu times\n", (unsigned long long)st.writer_yields);
	assert_true(st.writer_yields > 0);
	tl_shutdown();
	pthread_join(reader, NULL);
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary_file(fifo_copy, &m, err, sizeof err), 0);
	assert_true(m.complete);
	assert_int_equal(m.nevents, st.events_written);
	assert_int_equal(m.stats.events_dropped, st.events_dropped);
	tl_model_free(&m);
	unlink(file_path);
}

/* Drops are per thread in the file, and `timeline convert` names each
 * thread that dropped with its count: a thread writing while the drain is
 * held back drops, one that wrote a few events into its first block does
 * not. */
struct counted_writer {
	const char *name;
	int pairs;
	_Atomic uint32_t tid;
};

static void *write_counted(void *arg)
{
	struct counted_writer *w = arg;
	atomic_store(&w->tid, (uint32_t)syscall(SYS_gettid));
	tl_thread_set_name(w->name);
	for (int i = 0; i < w->pairs; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "counted");
		TL_TRACE_EVENT_END0("file", "counted");
	}
	return NULL;
}

static void test_convert_names_each_thread_that_dropped_with_its_count(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		skip();
	}
	fifo_copy = tl_test_path("file-recorder-drops-copy", ".tl");
	open_pipe();
	atomic_store(&reader_go, 0);
	pthread_t reader, thread;
	assert_int_equal(pthread_create(&reader, NULL, fifo_reader, NULL), 0);
	start(64 * 1024, 0, 0);
	struct counted_writer keeper = {.name = "keeper", .pairs = 10};
	struct counted_writer dropper = {.name = "dropper", .pairs = 50000};
	assert_int_equal(pthread_create(&thread, NULL, write_counted, &keeper), 0);
	pthread_join(thread, NULL);
	assert_int_equal(pthread_create(&thread, NULL, write_counted, &dropper), 0);
	pthread_join(thread, NULL);
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	atomic_store(&reader_go, 1); /* before any check (see above) */
	assert_true(st.events_dropped > 0);
	tl_shutdown();
	pthread_join(reader, NULL);
	unlink(file_path);
	char *err = NULL;
	int rc = tl_test_run_cli(NULL, &err, "convert %s -o /dev/null", fifo_copy);
	print_message("%s", err);
	assert_int_equal(rc, 0);
	char expected[256];
	snprintf(expected, sizeof expected,
	         ": %llu events dropped by the recorder: %llu by thread %u (dropper)\n",
	         (unsigned long long)st.events_dropped, (unsigned long long)st.events_dropped,
	         atomic_load(&dropper.tid));
	assert_non_null(strstr(err, expected));
	assert_null(strstr(err, "(keeper)"));
	free(err);
}

/* ---- a full disk ------------------------------------------------------------ */

static char full_dir[256];
static char full_image[512]; /* the ext4 image, when one is mounted */

/* Whether the test passed or failed: the session ended, the file system
 * unmounted, its mount point and image removed. */
static int teardown_full_disk(void **state)
{
	teardown(state);
	if (full_dir[0]) {
		umount(full_dir);
		rmdir(full_dir);
		full_dir[0] = '\0';
	}
	if (full_image[0]) {
		unlink(full_image);
		full_image[0] = '\0';
	}
	return 0;
}
/* Pairs a round: more than a 128 KiB disk takes even packed (8 bytes an
 * event), fewer than the 256 KiB pool holds (24 bytes an event). */
#define FULL_DISK_PAIRS 4000

/* Fills the file system mounted at full_dir with rounds of pairs, each
 * flushed to the file (how many the drain writes before it is full depends
 * on the machine's load: the writer drops what the pool cannot hold
 * meanwhile); then checks that every event is written or dropped, and
 * that what is counted written is what the file holds, within a block. */
static void fill_the_disk(void)
{
	char path[512];
	snprintf(path, sizeof path, "%s/trace.tl", full_dir);
	file_path = path;
	start(256 * 1024, 0, 0);
	int rc = 0, rounds = 0;
	while (rc == 0 && rounds < 1000) {
		for (int i = 0; i < FULL_DISK_PAIRS; i++) {
			TL_TRACE_EVENT_BEGIN0("file", "disk");
			TL_TRACE_EVENT_END0("file", "disk");
		}
		rounds++;
		rc = tl_flush();
	}
	assert_int_equal(rc, -ENOSPC);
	/* what comes after the failure is dropped and counted */
	for (int i = 0; i < FULL_DISK_PAIRS; i++) {
		TL_TRACE_EVENT_BEGIN0("file", "disk");
		TL_TRACE_EVENT_END0("file", "disk");
	}
	rounds++;
	tl_flush();
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	tl_shutdown();
	uint64_t emitted = 2 * (uint64_t)FULL_DISK_PAIRS * (uint64_t)rounds;
	print_message("full disk after %d rounds: written %llu, dropped %llu of %llu\n", rounds,
	              (unsigned long long)st.events_written, (unsigned long long)st.events_dropped,
	              (unsigned long long)emitted);
	assert_true(st.events_dropped > 0);
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary_file(path, &m, err, sizeof err), 0);
	assert_false(m.complete);
	assert_true(m.nevents > 0);
	print_message("the file holds %zu events\n", m.nevents);
	assert_int_equal(st.events_written + st.events_dropped, emitted);
	/* within a block (4 KiB, 256 records at most) either way: a block
	 * still in memory counts as written; the first records of a block the
	 * failure cut may be in the file though they count as dropped */
	assert_true(m.nevents < st.events_written + 4096 / 16);
	assert_true(st.events_written < m.nevents + 4096 / 16);
	tl_model_free(&m);
}

/* tmpfs: written with write(2), as O_DIRECT is refused. */
static void test_a_full_disk_ends_the_file_and_counts_what_is_lost(void **state)
{
	(void)state;
	snprintf(full_dir, sizeof full_dir, "%s", tl_test_path("file-recorder-tmpfs", ""));
	assert_int_equal(mkdir(full_dir, 0755), 0);
	if (geteuid() != 0) {
		print_message("skipped: mounting a 128 KiB tmpfs needs root\n");
		skip();
	}
	/* as root the mount must work: a failure here is the test's */
	assert_int_equal(mount("none", full_dir, "tmpfs", 0, "size=128k"), 0);
	fill_the_disk();
}

/* ext4: written with O_DIRECT and asynchronous writes, the file made
 * longer ahead of what is written. A 4 MiB image mounted through a loop
 * device. */
static void test_a_full_direct_disk_ends_the_file_and_counts_what_is_lost(void **state)
{
	(void)state;
	char command[2400];
	snprintf(full_image, sizeof full_image, "%s", tl_test_path("file-recorder-ext4", ".img"));
	snprintf(full_dir, sizeof full_dir, "%s", tl_test_path("file-recorder-ext4", ""));
	snprintf(command, sizeof command,
	         "truncate -s 4M '%s' && mkfs.ext4 -q -F '%s' >/dev/null 2>&1 && "
	         "mkdir '%s' && mount -o loop '%s' '%s' 2>/dev/null",
	         full_image, full_image, full_dir, full_image, full_dir);
	const char *lacking = geteuid() != 0                          ? "root"
	                      : system("command -v mkfs.ext4 >/dev/null") ? "mkfs.ext4"
	                      : access("/dev/loop-control", F_OK) != 0     ? "a loop device"
	                                                                   : NULL;
	if (lacking) {
		print_message("skipped: mounting a 4 MiB ext4 image through a loop device needs %s\n",
		              lacking);
		skip();
	}
	/* with all it needs, making and mounting the image must work */
	assert_int_equal(system(command), 0);
	fill_the_disk();
}

/* ---- configuration ------------------------------------------------------------ */

/* "%p" in the path is the process id: one file per process. */
static void test_percent_p_in_the_path_names_the_process(void **state)
{
	(void)state;
	char pattern[512], expected[512];
	snprintf(pattern, sizeof pattern, "%s.%%p.100%%%%", file_path);
	snprintf(expected, sizeof expected, "%s.%d.100%%", file_path, (int)getpid());
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_FILE, .file_path = pattern};
	assert_int_equal(tl_init(&o), 0);
	TL_TRACE_EVENT_INSTANT0("file", "per process", TL_SCOPE_THREAD);
	tl_shutdown();
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary_file(expected, &m, err, sizeof err), 0);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "per process"), 1);
	tl_model_free(&m);
	unlink(expected);
}

/* What an attacker could plant at the file's name: each is refused, with
 * nothing written through it and nothing blocked. */
static void assert_refused_at(const char *what, int expected)
{
	tl_options o = {
	    .struct_size = sizeof o, .recorder = TL_RECORDER_FILE, .file_path = file_path};
	alarm(10); /* a FIFO opened for writing would block here */
	int rc = tl_init(&o);
	alarm(0);
	print_message("%s at the name: %d\n", what, rc);
	assert_int_equal(rc, expected);
	assert_false(tl_is_running());
}

static void test_a_link_at_the_files_name_is_refused_and_not_followed(void **state)
{
	(void)state;
	char target[4200];
	snprintf(target, sizeof target, "%s.victim", file_path);
	FILE *v = fopen(target, "w");
	assert_non_null(v);
	fputs("root's data\n", v);
	fclose(v);
	unlink(file_path);
	assert_int_equal(symlink(target, file_path), 0);
	assert_refused_at("a link", -ELOOP);
	char *text = tl_test_read_file(target, NULL);
	assert_string_equal(text, "root's data\n");
	free(text);
	unlink(file_path);
	assert_int_equal(symlink("dangling.nowhere", file_path), 0);
	assert_refused_at("a dangling link", -ELOOP);
	struct stat st;
	char dangling[4200];
	snprintf(dangling, sizeof dangling, "%s", file_path);
	*strrchr(dangling, '/') = '\0';
	strcat(dangling, "/dangling.nowhere");
	assert_int_equal(stat(dangling, &st), -1); /* nothing created where it points */
	unlink(file_path);
	unlink(target);
}

static void test_a_fifo_or_a_directory_at_the_files_name_is_refused(void **state)
{
	(void)state;
	unlink(file_path);
	assert_int_equal(mkfifo(file_path, 0666), 0);
	assert_refused_at("a FIFO", -ENXIO);
	unlink(file_path);
	assert_int_equal(mkdir(file_path, 0755), 0);
	assert_refused_at("a directory", -EISDIR);
	rmdir(file_path);
}

static void test_the_file_is_private_unless_a_mode_is_asked_for(void **state)
{
	(void)state;
	unlink(file_path);
	FILE *planted = fopen(file_path, "w"); /* readable by all, as if planted */
	assert_non_null(planted);
	fclose(planted);
	assert_int_equal(chmod(file_path, 0666), 0);
	start(64 * 1024, 0, 0);
	tl_shutdown();
	struct stat st;
	assert_int_equal(stat(file_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .file_path = file_path,
	                .file_mode = 0640};
	assert_int_equal(tl_init(&o), 0);
	tl_shutdown();
	assert_int_equal(stat(file_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	o.file_mode = 01777;
	assert_int_equal(tl_init(&o), -EINVAL);
	setenv("TIMELINE_FILE_MODE", "0644", 1);
	o.file_mode = 0;
	assert_int_equal(tl_init(&o), 0);
	tl_shutdown();
	assert_int_equal(stat(file_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	setenv("TIMELINE_FILE_MODE", "644x", 1);
	assert_int_equal(tl_init(&o), -EINVAL);
	tl_test_clear_environment();
}

static void test_a_descriptor_is_written_instead_of_a_file(void **state)
{
	(void)state;
	fifo_copy = tl_test_path("file-recorder-descriptor-copy", ".tl");
	open_pipe();
	atomic_store(&reader_go, 1);
	pthread_t reader;
	assert_int_equal(pthread_create(&reader, NULL, fifo_reader, NULL), 0);
	start(64 * 1024, 0, 0); /* through file_fd, the test's end closed */
	TL_TRACE_EVENT_INSTANT0("file", "through the pipe", TL_SCOPE_THREAD);
	tl_shutdown(); /* the recorder closes its copy: the reader sees the end */
	pthread_join(reader, NULL);
	tl_model m;
	char err[256] = "";
	assert_int_equal(tl_model_read_binary_file(fifo_copy, &m, err, sizeof err), 0);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "through the pipe"), 1);
	tl_model_free(&m);
	unlink(fifo_copy);
}

static void test_a_descriptor_with_a_path_or_a_rotation_is_refused(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .file_path = file_path,
	                .file_fd = STDERR_FILENO};
	assert_int_equal(tl_init(&o), -EINVAL);
	o.file_path = NULL;
	o.file_max_bytes = 1 << 20;
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_false(tl_is_running());
}

static void test_the_file_recorder_without_a_path_is_refused(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_FILE};
	assert_int_equal(tl_init(&o), -EINVAL);
	assert_false(tl_is_running());
}

static void test_the_environment_selects_the_file_and_its_rotation(void **state)
{
	(void)state;
	setenv("TIMELINE_RECORDER", "file", 1);
	setenv("TIMELINE_FILE", file_path, 1);
	setenv("TIMELINE_FILE_MAX_KB", "64", 1);
	setenv("TIMELINE_FILE_KEEP", "2", 1);
	assert_int_equal(tl_init(NULL), 0);
	assert_string_equal(tl_recorder_name(), "file");
	TL_TRACE_EVENT_INSTANT0("file", "from the environment", TL_SCOPE_THREAD);
	tl_shutdown();
	tl_test_clear_environment();
	tl_model m;
	char err[256] = "";
	read_file(&m, err, sizeof err);
	assert_int_equal(tl_test_count_events(&m, TL_PHASE_INSTANT, "from the environment"), 1);
	tl_model_free(&m);
	setenv("TIMELINE_FILE_KEEP", "0", 1);
	assert_int_equal(tl_init(NULL), -EINVAL);
	tl_test_clear_environment();
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_a_link_at_the_files_name_is_refused_and_not_followed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_fifo_or_a_directory_at_the_files_name_is_refused,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_file_is_private_unless_a_mode_is_asked_for,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_descriptor_is_written_instead_of_a_file, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_descriptor_with_a_path_or_a_rotation_is_refused,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_runs_of_plain_pairs_are_written_with_their_names_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_packed_runs_read_back_as_the_records_in_memory,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_packed_runs_take_about_a_word_per_event, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_every_event_of_a_run_is_in_the_file_once, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_snapshots_during_writes_and_drains_leave_the_file_whole, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_flush_writes_partly_filled_blocks_and_nothing_twice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_snapshot_request_writes_the_partly_filled_blocks,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_files_times_are_the_trace_clocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_killed_writers_file_keeps_the_trace_clocks_times, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_killed_writers_file_still_converts, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_writer_killed_mid_run_converts_with_the_cli,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_a_file_cut_during_an_overload_names_its_threads_and_drops, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_blocks_reach_the_file_without_a_flush, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_drain_that_keeps_up_backs_little_of_its_pool,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_finished_file_ends_with_its_end_chunk, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_exit_without_shutdown_ends_the_file_whole, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_forked_child_leaves_the_parents_file_alone, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_file_cut_anywhere_reads_up_to_its_last_whole_chunk,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_zero_bytes_at_a_files_end_are_read_for_what_they_are, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rotation_keeps_the_newest_files_which_read_as_one,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_convert_reads_a_rotated_set_as_one_trace, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_a_drain_behind_drops_and_the_file_counts_them_per_thread, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_convert_names_each_thread_that_dropped_with_its_count, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_full_disk_ends_the_file_and_counts_what_is_lost,
	                                    setup, teardown_full_disk),
	    cmocka_unit_test_setup_teardown(
	        test_a_full_direct_disk_ends_the_file_and_counts_what_is_lost, setup,
	        teardown_full_disk),
	    cmocka_unit_test_setup_teardown(test_percent_p_in_the_path_names_the_process, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_the_file_recorder_without_a_path_is_refused, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_the_environment_selects_the_file_and_its_rotation,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
