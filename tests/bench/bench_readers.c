/*
 * timeline-bench-readers: how fast the readers of foreign formats read, and
 * how much memory they take. Not a test: it measures and prints, and never
 * fails on a figure.
 *
 * It writes a Chrome JSON trace and an ftrace text trace of the sizes asked
 * into a temporary directory, then reads each file in a child process of
 * its own, as `timeline slices` does (tl_import_read_file), again as
 * `timeline convert` builds its model (the same, then
 * tl_import_move_to_model), and as `timeline convert` to JSON does end to
 * end (the same, then tl_export_json to /dev/null). Each row is
 * the file's size over the child's wall time, and the child's peak resident
 * memory (ru_maxrss from wait4), so the figures are those of one read. When
 * python3 is on the PATH, `json.load` reads the same JSON for comparison.
 *
 * With --check it reads small files only and fails (exit 1) when a read
 * takes more memory, over what the child held before it, than a bound
 * given as a multiple of the file's size: memory is a count of bytes, not
 * a timing, so the test suite asserts it (ctest bench_readers_memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench_child.h"
#include "recorder/export/trace_model.h"
#include "tools/readers/import_print.h"
#include "tools/readers/trace_import.h"
#include "tools/readers/reading_memory.h"

#define MIB (1024.0 * 1024.0)
/* Threads of the generated traces, in two processes. */
#define GEN_THREADS 8
#define GEN_PID_A 1000
#define GEN_PID_B 2000
/* --check: the sizes read (MiB), and the bounds of check_bound. */
#define CHECK_JSON_MB 4
#define CHECK_FTRACE_MB 8
#define CHECK_JSON_IMPORT 2.3 /* each thread's events in time order: runs merged */
#define CHECK_JSON_MODEL 2.3
#define CHECK_JSON_CONVERT 2.3
#define CHECK_JSON_MIXED 2.7 /* out of order: through the index, every row */
#define CHECK_FTRACE_IMPORT 0.8
#define CHECK_FTRACE_MODEL 1.1
#define CHECK_FTRACE_CONVERT 1.2
/* Streamed, the bound is in MiB whatever the size: what is open, and the
 * printer's and the index's sorters (4 MiB each) */
#define CHECK_STREAMED_MIB 32
/* The exit status of a child whose exec failed (python3 not found). */
#define EXIT_NOT_FOUND 127

static const char usage[] =
    "usage: timeline-bench-readers [--json-mb LIST] [--ftrace-mb LIST] [--dir DIR]\n"
    "                              [--keep] [--no-python] [--check]\n"
    "\n"
    "Writes a Chrome JSON trace and an ftrace text trace of each size (MiB,\n"
    "comma-separated; 0 skips the format) into a temporary directory, reads each\n"
    "in a child process with the library's readers and prints MB/s and the\n"
    "child's peak resident memory. Default: --json-mb 10 --ftrace-mb 100.\n"
    "\n"
    "options:\n"
    "  --json-mb LIST     sizes of the JSON traces\n"
    "  --ftrace-mb LIST   sizes of the ftrace text traces\n"
    "  --dir DIR          where to write them (default: $TMPDIR or /tmp)\n"
    "  --keep             keep the generated files\n"
    "  --no-python        do not time python3's json.load\n"
    "  --check            small files (default --json-mb 4 --ftrace-mb 8), no\n"
    "                     python3; exit 1 when a read's memory exceeds its bound\n"
    "  -h, --help         print this help\n";

/* ------------------------------------------------------------------------ */
/* Generated traces */

static const char *const gen_names[] = {
    "Choreographer#doFrame",       "traversal", "measure", "layout", "draw",
    "RenderThread::syncFrameState"};
#define GEN_NAMES (sizeof gen_names / sizeof gen_names[0])

static int64_t gen_tid(unsigned thread)
{
	return (thread < GEN_THREADS / 2 ? GEN_PID_A : GEN_PID_B) + 1 + (int64_t)thread;
}

static int64_t gen_pid(unsigned thread)
{
	return thread < GEN_THREADS / 2 ? GEN_PID_A : GEN_PID_B;
}

/* A generated file and how many bytes were written to it. */
typedef struct gen_out {
	FILE *f;
	uint64_t bytes;
} gen_out;

static void out_printf(gen_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_printf(gen_out *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(out->f, fmt, ap);
	va_end(ap);
	if (n > 0)
		out->bytes += (uint64_t)n;
}

/*
 * Chrome JSON as the exporters write it: one event per line, each thread's
 * events together (so the reader has to merge them), in time order, with
 * nested B/E slices, X slices with args, instants, counters, async slices
 * and flows. Out of order (mixed), a thread's events are not in time
 * order either, as some other writers leave them: its async slices and
 * flows come after its frame's end (so the reader has to sort them).
 */
static void write_json_events(gen_out *out, uint64_t target_bytes, int mixed)
{
	out_printf(out, "{\"traceEvents\":[\n");
	for (unsigned t = 0; t < GEN_THREADS; t++)
		out_printf(out,
		           "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,"
		           "\"args\":{\"name\":\"worker-%u\"}},\n",
		           (long long)gen_pid(t), (long long)gen_tid(t), t);
	uint64_t per_thread = target_bytes / GEN_THREADS;
	for (unsigned t = 0; t < GEN_THREADS; t++) {
		long long pid = gen_pid(t), tid = gen_tid(t);
		uint64_t start = out->bytes;
		double ts = 1000.0 + t * 0.25;
		for (uint64_t frame = 0; out->bytes - start < per_thread; frame++) {
			const char *name = gen_names[frame % GEN_NAMES];
			char async_begin[256] = "", async_end[256] = "", post[256] = "",
			     receive[256] = "";
			if (frame % 4 == 0) {
				snprintf(async_begin, sizeof async_begin,
				         "{\"ph\":\"b\",\"cat\":\"net\",\"name\":\"fetch\","
				         "\"id2\":{\"local\":\"0x%llx\"},\"pid\":%lld,\"tid\":%lld,"
				         "\"ts\":%.3f},\n",
				         (unsigned long long)frame, pid, tid, ts + 1.5);
				snprintf(async_end, sizeof async_end,
				         "{\"ph\":\"e\",\"cat\":\"net\",\"name\":\"fetch\","
				         "\"id2\":{\"local\":\"0x%llx\"},\"pid\":%lld,\"tid\":%lld,"
				         "\"ts\":%.3f},\n",
				         (unsigned long long)frame, pid, tid, ts + 7.5);
			}
			if (frame % 8 == 0) {
				snprintf(
				    post, sizeof post,
				    "{\"ph\":\"X\",\"cat\":\"ipc\",\"name\":\"post\",\"pid\":%lld,"
				    "\"tid\":%lld,\"ts\":%.3f,\"dur\":0.5,\"bind_id\":\"0x%x%llx\","
				    "\"flow_out\":true},\n",
				    pid, tid, ts + 6.0, t, (unsigned long long)frame);
				snprintf(receive, sizeof receive,
				         "{\"ph\":\"X\",\"cat\":\"ipc\",\"name\":\"receive\","
				         "\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f,\"dur\":0.5,"
				         "\"bind_id\":\"0x%x%llx\",\"flow_in\":true},\n",
				         pid, tid, ts + 8.0, t, (unsigned long long)frame);
			}
			out_printf(out,
			           "{\"ph\":\"B\",\"cat\":\"gfx\",\"name\":\"%s\",\"pid\":%lld,"
			           "\"tid\":%lld,\"ts\":%.3f,\"args\":{\"frame\":%llu}},\n",
			           name, pid, tid, ts, (unsigned long long)frame);
			out_printf(out,
			           "{\"ph\":\"X\",\"cat\":\"gfx\",\"name\":\"%s\",\"pid\":%lld,"
			           "\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"items\":%llu,"
			           "\"kind\":\"grid\",\"ratio\":0.75}},\n",
			           gen_names[(frame + 1) % GEN_NAMES], pid, tid, ts + 1.0, 4.5,
			           (unsigned long long)(frame % 97));
			if (!mixed)
				out_printf(out, "%s", async_begin);
			out_printf(out,
			           "{\"ph\":\"i\",\"cat\":\"input\",\"name\":\"vsync\",\"s\":\"t\","
			           "\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f},\n",
			           pid, tid, ts + 2.0);
			out_printf(out,
			           "{\"ph\":\"C\",\"name\":\"queue\",\"pid\":%lld,\"tid\":%lld,"
			           "\"ts\":%.3f,\"args\":{\"depth\":%llu}},\n",
			           pid, tid, ts + 3.0, (unsigned long long)(frame % 7));
			if (!mixed)
				out_printf(out, "%s%s%s", post, async_end, receive);
			out_printf(out,
			           "{\"ph\":\"E\",\"cat\":\"gfx\",\"name\":\"%s\",\"pid\":%lld,"
			           "\"tid\":%lld,\"ts\":%.3f},\n",
			           name, pid, tid, ts + 9.0);
			if (mixed)
				out_printf(out, "%s%s%s%s", async_begin, async_end, post, receive);
			ts += 16.667;
		}
	}
	/* The last element has no trailing comma: a final metadata event. */
	out_printf(out,
	           "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":%d,"
	           "\"args\":{\"name\":\"bench\"}}\n]}\n",
	           GEN_PID_A, GEN_PID_A);
}

static void write_json(gen_out *out, uint64_t target_bytes)
{
	write_json_events(out, target_bytes, 0);
}

static void write_json_mixed(gen_out *out, uint64_t target_bytes)
{
	write_json_events(out, target_bytes, 1);
}

/* One trace_marker line of thread t at time us (microseconds). */
static void ftrace_marker(gen_out *out, unsigned t, uint64_t us, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void ftrace_marker(gen_out *out, unsigned t, uint64_t us, const char *fmt, ...)
{
	out_printf(
	    out,
	    "        worker-%u-%lld   (%7lld) [%03u] ...1 %6llu.%06llu: tracing_mark_write: ", t,
	    (long long)gen_tid(t), (long long)gen_pid(t), t % 4, (unsigned long long)(us / 1000000),
	    (unsigned long long)(us % 1000000));
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(out->f, fmt, ap);
	va_end(ap);
	if (n > 0)
		out->bytes += (uint64_t)n;
}

/*
 * ftrace text as `cat trace` prints it with atrace markers: sorted by time,
 * mostly trace_marker lines (B/E, counters, async S/F, instants) with a
 * scheduler event now and then, which the importer counts and skips.
 */
static void write_ftrace(gen_out *out, uint64_t target_bytes)
{
	out_printf(out, "# tracer: nop\n#\n"
	                "#                                      _-----=> irqs-off\n"
	                "#                                     / _----=> need-resched\n"
	                "#                                    | / _---=> hardirq/softirq\n"
	                "#                                    || / _--=> preempt-depth\n"
	                "#                                    ||| /     delay\n"
	                "#           TASK-PID    TGID   CPU#  ||||   TIMESTAMP  FUNCTION\n"
	                "#              | |        |      |   ||||      |         |\n");
	uint64_t us = 1000000000ull; /* 1000 s, in microseconds */
	for (uint64_t step = 0; out->bytes < target_bytes; step++) {
		unsigned t = (unsigned)(step % GEN_THREADS);
		long long pid = gen_pid(t), tid = gen_tid(t);
		uint64_t frame = step / GEN_THREADS;
		const char *name = gen_names[frame % GEN_NAMES];
		ftrace_marker(out, t, us + 0, "B|%lld|%s %llu\n", pid, name,
		              (unsigned long long)frame);
		ftrace_marker(out, t, us + 1, "B|%lld|%s\n", pid,
		              gen_names[(frame + 1) % GEN_NAMES]);
		ftrace_marker(out, t, us + 2, "C|%lld|queue|%llu\n", pid,
		              (unsigned long long)(frame % 7));
		if (frame % 4 == 0)
			ftrace_marker(out, t, us + 3, "S|%lld|fetch|%llu\n", pid,
			              (unsigned long long)frame);
		ftrace_marker(out, t, us + 4, "I|%lld|vsync\n", pid);
		ftrace_marker(out, t, us + 5, "E|%lld\n", pid);
		if (frame % 4 == 0)
			ftrace_marker(out, t, us + 6, "F|%lld|fetch|%llu\n", pid,
			              (unsigned long long)frame);
		ftrace_marker(out, t, us + 7, "E|%lld\n", pid);
		out_printf(
		    out,
		    "          <idle>-0       (-------) [%03u] d..2 %6llu.%06llu: sched_switch: "
		    "prev_comm=swapper/%u prev_pid=0 prev_prio=120 prev_state=R ==> "
		    "next_comm=worker-%u next_pid=%lld next_prio=110\n",
		    t % 4, (unsigned long long)((us + 8) / 1000000),
		    (unsigned long long)((us + 8) % 1000000), t % 4, t, tid);
		us += 9;
	}
}

/* Writes path with gen; returns its size, or 0 after printing the failure. */
static uint64_t generate(const char *path, uint64_t bytes, void (*gen)(gen_out *, uint64_t))
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "timeline-bench-readers: %s: %s\n", path, strerror(errno));
		return 0;
	}
	static char buffer[1 << 20];
	setvbuf(f, buffer, _IOFBF, sizeof buffer);
	gen_out out = {f, 0};
	gen(&out, bytes);
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	struct stat st;
	if (rc == 0 && stat(path, &st) != 0)
		rc = -errno;
	if (rc) {
		fprintf(stderr, "timeline-bench-readers: writing %s: %s\n", path, strerror(-rc));
		return 0;
	}
	return (uint64_t)st.st_size;
}

/* ------------------------------------------------------------------------ */
/* Reading, in a child */

typedef enum reader {
	READ_SLICES,       /* tl_import_read_file_to its printer, as `timeline slices` */
	READ_IMPORT,       /* tl_import_read_file, as `timeline slices` with filters */
	READ_IMPORT_MODEL, /* and tl_import_move_to_model, as `timeline convert` */
	READ_CONVERT,      /* and tl_export_json to /dev/null: convert end to end */
	READ_PYTHON_JSON,  /* python3 -c 'json.load(...)' */
} reader;

static const char *const reader_names[] = {
    [READ_SLICES] = "slices (streamed)",      [READ_IMPORT] = "import (whole)",
    [READ_IMPORT_MODEL] = "import + model",   [READ_CONVERT] = "convert to JSON",
    [READ_PYTHON_JSON] = "python3 json.load",
};

typedef struct measure {
	int ok;            /* 0: the read failed, or python3 was not found */
	int not_found;     /* python3 was not found */
	double seconds;    /* wall time from fork to exit */
	long peak_rss_kb;  /* ru_maxrss of the child */
	long start_rss_kb; /* the child's ru_maxrss before it read (0: not known) */
	long long counted; /* slices the import found (model events with the model,
	                      items handed on when streamed) */
} measure;

/* What a child of ours sends back. */
typedef struct child_result {
	long long counted;
	long start_rss_kb;
} child_result;

/* The peak resident memory a read added, as a multiple of the file's size. */
static double memory_per_byte(const measure *m, uint64_t bytes)
{
	long kb = m->peak_rss_kb - m->start_rss_kb;
	return bytes ? (double)(kb > 0 ? kb : 0) * 1024.0 / (double)bytes : 0;
}

/* READ_SLICES: what `timeline slices` prints, to /dev/null; the items
 * handed on. Exits on failure. */
static long long print_slices(const char *path)
{
	tl_import_printer *p = tl_import_printer_new(TL_PRINT_DEFAULT | TL_PRINT_ARG);
	FILE *out = fopen("/dev/null", "w");
	tl_import imp;
	tl_read_error err = {0};
	int rc = p && out ? tl_import_read_file_to(path, tl_import_printer_sink(p), NULL, &imp,
	                                           NULL, &err)
	                  : -ENOMEM;
	long long items = 0;
	if (rc == 0) {
		rc = tl_import_printer_write(p, &imp, NULL, out);
		items = (long long)imp.streamed;
		tl_import_free(&imp);
	}
	if (rc) {
		fprintf(stderr, "timeline-bench-readers: %s: %s\n", path,
		        err.message[0] ? err.message : strerror(-rc));
		_exit(1);
	}
	fclose(out);
	tl_import_printer_free(p);
	return items;
}

/* The child's side of every reader but python3: never returns. */
static void child_read(const char *path, reader how, int out_fd)
{
	tl_reading_memory_setup(); /* as the CLI does */
	child_result result = {0};
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		result.start_rss_kb = ru.ru_maxrss;
	if (how == READ_SLICES) {
		result.counted = print_slices(path);
		_exit(write(out_fd, &result, sizeof result) == (ssize_t)sizeof result ? 0 : 1);
	}
	tl_import imp;
	tl_read_error err = {0};
	int rc = tl_import_read_file(path, &imp, NULL, &err);
	if (rc) {
		fprintf(stderr, "timeline-bench-readers: %s: %s\n", path,
		        err.message[0] ? err.message : strerror(-rc));
		_exit(1);
	}
	long long counted = (long long)imp.nslices;
	if (how == READ_IMPORT_MODEL || how == READ_CONVERT) {
		tl_model model;
		rc = tl_import_move_to_model(&imp, &model);
		if (rc == 0 && how == READ_CONVERT) {
			int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
			rc = fd < 0 ? -errno : tl_export_json(&model, fd, NULL);
			if (fd >= 0)
				close(fd);
			if (rc)
				tl_model_free(&model);
		}
		if (rc) {
			fprintf(stderr, "timeline-bench-readers: %s: %s\n", path, strerror(-rc));
			_exit(1);
		}
		counted = (long long)model.nevents;
		tl_model_free(&model);
	} else {
		tl_import_free(&imp);
	}
	result.counted = counted;
	if (write(out_fd, &result, sizeof result) != (ssize_t)sizeof result)
		_exit(1);
	_exit(0);
}

typedef struct read_job {
	const char *path;
	reader how;
} read_job;

/* The child: python3, or child_read. */
static void child_main(void *arg, int result_fd)
{
	const read_job *job = arg;
	if (job->how == READ_PYTHON_JSON) {
		execlp("python3", "python3", "-c",
		       "import json, sys\njson.load(open(sys.argv[1], 'rb'))", job->path,
		       (char *)NULL);
		_exit(EXIT_NOT_FOUND);
	}
	child_read(job->path, job->how, result_fd);
}

static measure run_reader(const char *path, reader how)
{
	measure m = {.counted = -1};
	read_job job = {path, how};
	child_result result = {.counted = -1};
	size_t result_size = how != READ_PYTHON_JSON ? sizeof result : 0;
	bench_child c = bench_child_run(child_main, &job, &result, result_size);
	m.counted = result.counted;
	m.start_rss_kb = result.start_rss_kb;
	m.ok = c.ok;
	m.not_found = c.exit_status == EXIT_NOT_FOUND;
	m.seconds = c.seconds;
	m.peak_rss_kb = c.peak_rss_kb;
	return m;
}

/* ------------------------------------------------------------------------ */
/* Output */

static void print_header(void)
{
	printf("%-10s %9s  %-18s %9s %9s %10s %8s %10s %12s\n", "format", "file MiB", "reader",
	       "seconds", "MiB/s", "peak MiB", "x file", "x python", "items");
}

static void print_row(const char *format, uint64_t bytes, reader how, const measure *m,
                      double python_seconds)
{
	double mib = (double)bytes / MIB;
	printf("%-10s %9.1f  %-18s ", format, mib, reader_names[how]);
	if (!m->ok) {
		printf("%s\n", m->not_found ? "skipped: python3 not found" : "failed");
		return;
	}
	printf("%9.2f %9.1f %10.1f ", m->seconds, mib / m->seconds,
	       (double)m->peak_rss_kb / 1024.0);
	if (m->start_rss_kb)
		printf("%8.2f ", memory_per_byte(m, bytes));
	else
		printf("%8s ", "-");
	if (python_seconds > 0 && how != READ_PYTHON_JSON)
		printf("%10.2f ", m->seconds / python_seconds);
	else
		printf("%10s ", "-");
	if (m->counted >= 0)
		printf("%12lld\n", m->counted);
	else
		printf("%12s\n", "-");
	fflush(stdout);
}

#define MAX_SIZES 8

/*
 * --check: the most memory a read may add, over what its child held
 * before, as a multiple of the file's size, for JSON and ftrace text, as
 * `timeline slices` and as `timeline convert` read. The figures measured
 * (docs/bench.md) with room for the allocator's rounding; a read that
 * holds the whole file more than once more, or memory that grows faster
 * than the file, goes over.
 */
static double check_bound(int is_json, int mixed, reader how)
{
	if (mixed)
		return CHECK_JSON_MIXED;
	switch (how) {
	case READ_IMPORT:
		return is_json ? CHECK_JSON_IMPORT : CHECK_FTRACE_IMPORT;
	case READ_IMPORT_MODEL:
		return is_json ? CHECK_JSON_MODEL : CHECK_FTRACE_MODEL;
	default:
		return is_json ? CHECK_JSON_CONVERT : CHECK_FTRACE_CONVERT;
	}
}

/* Whether m passes its --check bound; prints why not. */
static int check_memory(const char *format, int is_json, int mixed, reader how, uint64_t bytes,
                        const measure *m)
{
	if (!m->ok || !m->start_rss_kb)
		return 0;
	if (how == READ_SLICES) {
		double mib = (double)(m->peak_rss_kb - m->start_rss_kb) / 1024.0;
		if (mib <= CHECK_STREAMED_MIB)
			return 1;
		fprintf(stderr,
		        "timeline-bench-readers: %s, %s: %.1f MiB, over the bound of %d MiB\n",
		        format, reader_names[how], mib, CHECK_STREAMED_MIB);
		return 0;
	}
	double ratio = memory_per_byte(m, bytes), bound = check_bound(is_json, mixed, how);
	if (ratio <= bound)
		return 1;
	fprintf(stderr,
	        "timeline-bench-readers: %s, %s: %.2f times the file's size, over the bound "
	        "of %.2f\n",
	        format, reader_names[how], ratio, bound);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"json-mb", required_argument, NULL, 'j'}, {"ftrace-mb", required_argument, NULL, 'f'},
	    {"dir", required_argument, NULL, 'd'},     {"keep", no_argument, NULL, 'k'},
	    {"no-python", no_argument, NULL, 'n'},     {"check", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	double json_mb[MAX_SIZES] = {10}, ftrace_mb[MAX_SIZES] = {100};
	int njson = 1, nftrace = 1, keep = 0, python = 1, check = 0, sizes_given = 0, opt;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			njson = bench_parse_sizes(optarg, json_mb, MAX_SIZES, 1);
			sizes_given |= 1;
			break;
		case 'f':
			nftrace = bench_parse_sizes(optarg, ftrace_mb, MAX_SIZES, 1);
			sizes_given |= 2;
			break;
		case 'c':
			check = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = 1;
			break;
		case 'n':
			python = 0;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
		if (njson < 0 || nftrace < 0) {
			fprintf(stderr, "timeline-bench-readers: expected sizes like 10,100\n");
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (check) {
		python = 0;
		if (!(sizes_given & 1))
			json_mb[0] = CHECK_JSON_MB;
		if (!(sizes_given & 2))
			ftrace_mb[0] = CHECK_FTRACE_MB;
	}

	char workdir[4096];
	snprintf(workdir, sizeof workdir, "%s/timeline-bench-readers.XXXXXX", dir);
	if (!mkdtemp(workdir)) {
		fprintf(stderr, "timeline-bench-readers: %s: %s\n", workdir, strerror(errno));
		return 1;
	}
	print_header();
	int status = 0;
	/* JSON as the exporters write it, JSON out of order (the same sizes),
	 * ftrace text */
	static const struct {
		const char *format, *ext;
		void (*gen)(gen_out *, uint64_t);
	} inputs[] = {
	    {"json", "json", write_json},
	    {"json-mixed", "mixed.json", write_json_mixed},
	    {"ftrace", "txt", write_ftrace},
	};
	for (size_t pass = 0; pass < sizeof inputs / sizeof *inputs; pass++) {
		int is_json = inputs[pass].gen != write_ftrace;
		int count = is_json ? njson : nftrace;
		for (int i = 0; i < count; i++) {
			double mb = is_json ? json_mb[i] : ftrace_mb[i];
			if (mb <= 0)
				continue;
			char path[4200];
			snprintf(path, sizeof path, "%s/trace-%g.%s", workdir, mb,
			         inputs[pass].ext);
			uint64_t bytes = generate(path, (uint64_t)(mb * MIB), inputs[pass].gen);
			if (!bytes) {
				status = 1;
				continue;
			}
			const char *format = inputs[pass].format;
			double python_seconds = 0;
			if (is_json && python) {
				measure m = run_reader(path, READ_PYTHON_JSON);
				if (m.ok)
					python_seconds = m.seconds;
				print_row(format, bytes, READ_PYTHON_JSON, &m, 0);
			}
			for (reader how = READ_SLICES; how <= READ_CONVERT; how++) {
				measure m = run_reader(path, how);
				if (!m.ok)
					status = 1;
				print_row(format, bytes, how, &m, python_seconds);
				if (check && m.ok &&
				    !check_memory(format, is_json,
				                  inputs[pass].gen == write_json_mixed, how, bytes,
				                  &m))
					status = 1;
			}
			if (!keep)
				unlink(path);
		}
	}
	if (keep)
		printf("files kept in %s\n", workdir);
	else
		rmdir(workdir);
	return status;
}
