/*
 * timeline-bench-export: how fast a binary snapshot becomes Chrome JSON,
 * ftrace text and Perfetto protobuf, and how much memory that takes, next to the binary snapshot
 * of the same events. Not a test: it measures and prints, and never fails
 * on a figure.
 *
 * For each size asked, a child process records the events (the endless
 * recorder, 4 threads) and writes the binary snapshot to a file; then each
 * row runs in a child process of its own:
 *
 *  - in process: record the same events, then tl_snapshot_binary_fd,
 *    tl_snapshot_json_fd, tl_snapshot_ftrace_fd or tl_snapshot_perfetto_fd;
 *  - convert: read the snapshot file and export it, as `timeline convert`
 *    does (the streaming exporters), or through the trace model as it did
 *    before (the model rows, for sizes up to --model-max).
 *
 * Output goes to /dev/null: the rows measure the exporters, not a disk.
 * A row's time is the operation's wall time, the fastest of --reps runs
 * (cpu% says how much of it the child was on a CPU: a loaded machine shows
 * there); its memory is the peak resident size during the operation over
 * the size just before it (the "bare process": the recorder's buffers for
 * in-process rows), both from /proc/self/status, the peak reset with
 * /proc/self/clear_refs. What the exporter kept besides the snapshot is
 * that peak less the snapshot's size (read whole into memory, or written
 * there, during the operation), printed per event and, with --mixed or
 * --completes, per COMPLETE or flow event (3 or 6 of every 8 events).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <timeline/timeline.h>
#include <timeline/trace_event.h>

#include "bench_child.h"
#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"

#define MIB (1024.0 * 1024.0)
#define THREADS 4
/* The targets (docs/bench.md). */
#define TARGET_EVENTS_PER_SEC 5e6
#define TARGET_MEMORY_RATIO 2.0

static const char usage[] =
    "usage: timeline-bench-export [--quick] [--events LIST] [--model-max M] [--reps N]\n"
    "                             [--mixed | --completes] [--dir DIR] [--keep]\n"
    "\n"
    "Records LIST million events (comma-separated) with the endless recorder on 4\n"
    "threads and measures, each in a child process of its own, the binary snapshot,\n"
    "tl_snapshot_json/ftrace/perfetto in process, and the conversion of the snapshot\n"
    "file to JSON, ftrace text and Perfetto (streamed, and through the trace model up\n"
    "to --model-max million events). Each row is the fastest of N runs (the largest\n"
    "peak of them): seconds, the share of them on a CPU, M events/s and the peak\n"
    "memory over the bare process, also as a multiple of the snapshot's size.\n"
    "Default: --events 1,50 --model-max 1; --quick: --events 1.\n"
    "\n"
    "options:\n"
    "  --events LIST      sizes, in millions of events\n"
    "  --model-max M      largest size also converted through the model (0: none)\n"
    "  --reps N           runs per row (default 3)\n"
    "  --completes        COMPLETE events nested three deep and side by side, as\n"
    "                     scopes record them, with an instant and a counter\n"
    "  --mixed            events of every kind: slices with args, COMPLETE events,\n"
    "                     flows, instants, counters, async (default: frames of\n"
    "                     nested slices, an instant and a counter)\n"
    "  --dir DIR          where the snapshot files go (default: $TMPDIR or /tmp)\n"
    "  --keep             keep the snapshot files (named in the output)\n"
    "  --quick            --events 1\n"
    "  -h, --help         print this help\n";

/* ------------------------------------------------------------------------ */
/* Recording */

/* The workload (--mixed, --completes), for every child. */
enum { WORKLOAD_FRAMES, WORKLOAD_MIXED, WORKLOAD_COMPLETES };
static int workload;

typedef struct record_job {
	uint64_t events; /* for this thread, a multiple of 8 */
	int workload;    /* WORKLOAD_* */
} record_job;

/*
 * --mixed: eight events of every kind the exporters treat apart: a slice
 * with an arg, a flow from it to a COMPLETE event (so the slice and the
 * COMPLETE carry a flow and are written as X), an instant, a counter and an
 * async begin. Bigger records, and all of what the exporters hold besides
 * the input: COMPLETE events, X slices, flow events.
 */
static void record_mixed(uint64_t events)
{
	for (uint64_t i = 0; i < events; i += 8) {
		tl_timestamp start = tl_now();
		TL_TRACE_EVENT_BEGIN1("app", "frame", "i", (int64_t)i);
		TL_TRACE_EVENT_FLOW_BEGIN0("app", "post", i);
		TL_TRACE_EVENT_INSTANT0("app", "tick", TL_EVENT_SCOPE_THREAD);
		TL_TRACE_EVENT_COMPLETE("app", "work", start, tl_now());
		TL_TRACE_EVENT_FLOW_END0("app", "post", i);
		TL_TRACE_EVENT_COUNTER("app", "queue", (int64_t)(i % 7));
		TL_TRACE_EVENT_ASYNC_BEGIN0("net", "fetch", i);
		TL_TRACE_EVENT_END0("app", "frame");
	}
}

/*
 * --completes: eight events, six of them COMPLETE events as scopes record
 * them when they end: three nested calls, an instant, a counter, two calls
 * side by side, and the frame around them all.
 */
static void record_completes(uint64_t events)
{
	for (uint64_t i = 0; i < events; i += 8) {
		tl_timestamp frame = tl_now(), a = tl_now(), b = tl_now(), c = tl_now();
		TL_TRACE_EVENT_COMPLETE("app", "c", c, tl_now());
		TL_TRACE_EVENT_COMPLETE("app", "b", b, tl_now());
		TL_TRACE_EVENT_COMPLETE("app", "a", a, tl_now());
		TL_TRACE_EVENT_INSTANT0("app", "tick", TL_EVENT_SCOPE_THREAD);
		TL_TRACE_EVENT_COUNTER("app", "queue", (int64_t)(i % 7));
		tl_timestamp d = tl_now();
		TL_TRACE_EVENT_COMPLETE("app", "d", d, tl_now());
		tl_timestamp e = tl_now();
		TL_TRACE_EVENT_COMPLETE("app", "e", e, tl_now());
		TL_TRACE_EVENT_COMPLETE("app", "frame", frame, tl_now());
	}
}

/* Eight events: nested slices, an instant and a counter, as a frame does. */
static void *record_thread(void *arg)
{
	const record_job *job = arg;
	if (job->workload == WORKLOAD_COMPLETES) {
		record_completes(job->events);
		return NULL;
	}
	if (job->workload) {
		record_mixed(job->events);
		return NULL;
	}
	for (uint64_t i = 0; i < job->events; i += 8) {
		TL_TRACE_EVENT_BEGIN0("gfx", "frame");
		TL_TRACE_EVENT_BEGIN0("gfx", "draw");
		TL_TRACE_EVENT_INSTANT0("input", "vsync", TL_EVENT_SCOPE_THREAD);
		TL_TRACE_EVENT_END0("gfx", "draw");
		TL_TRACE_EVENT_COUNTER("gfx", "queue", (int64_t)(i & 7));
		TL_TRACE_EVENT_BEGIN0("gfx", "layout");
		TL_TRACE_EVENT_END0("gfx", "layout");
		TL_TRACE_EVENT_END0("gfx", "frame");
	}
	return NULL;
}

/* Starts the endless recorder and records events on THREADS threads. */

static int record(uint64_t events)
{
	tl_options opts = {
	    .struct_size = sizeof opts,
	    .recorder = TL_RECORDER_ENDLESS,
	    /* every event fits: at most 40 (--mixed, --completes: 64) bytes each, plus partly
	     * used blocks */
	    .buffer_bytes = (size_t)(events * (workload ? 64 : 40) + (64u << 20)),
	    .categories = "*",
	};
	int rc = tl_init(&opts);
	if (rc) {
		fprintf(stderr, "timeline-bench-export: tl_init: %s\n", strerror(-rc));
		return rc;
	}
	pthread_t threads[THREADS];
	record_job job = {events / THREADS / 8 * 8, workload};
	int started = 0;
	while (started < THREADS &&
	       pthread_create(&threads[started], NULL, record_thread, &job) == 0)
		started++;
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	return started == THREADS ? 0 : -EAGAIN;
}

/* ------------------------------------------------------------------------ */
/* Measuring, in a child */

/* A "Vm...:" field of /proc/self/status, in kB; -1 when missing. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kb = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, field, n) == 0) {
			kb = strtol(line + n, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

/* Sets the peak resident size to the current one; 0 or -1. */
static int reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

typedef enum operation {
	OP_SNAPSHOT_FILE,    /* record, tl_snapshot_binary to the file (not a row) */
	OP_BINARY,           /* record, tl_snapshot_binary_fd */
	OP_JSON,             /* record, tl_snapshot_json_fd */
	OP_FTRACE,           /* record, tl_snapshot_ftrace_fd */
	OP_PERFETTO,         /* record, tl_snapshot_perfetto_fd */
	OP_CONVERT_JSON,     /* the file, streamed to JSON */
	OP_CONVERT_FTRACE,   /* the file, streamed to ftrace text */
	OP_CONVERT_PERFETTO, /* the file, streamed to Perfetto */
	OP_MODEL_JSON,       /* the file, through the model to JSON */
	OP_MODEL_FTRACE,     /* the file, through the model to ftrace text */
	OP_MODEL_PERFETTO,   /* the file, through the model to Perfetto */
	OP_COUNT,
} operation;

static const char *const op_names[OP_COUNT] = {
    [OP_SNAPSHOT_FILE] = "binary snapshot to a file",
    [OP_BINARY] = "in process: binary snapshot",
    [OP_JSON] = "in process: JSON",
    [OP_FTRACE] = "in process: ftrace text",
    [OP_PERFETTO] = "in process: Perfetto",
    [OP_CONVERT_JSON] = "convert: JSON",
    [OP_CONVERT_FTRACE] = "convert: ftrace text",
    [OP_CONVERT_PERFETTO] = "convert: Perfetto",
    [OP_MODEL_JSON] = "convert via model: JSON",
    [OP_MODEL_FTRACE] = "convert via model: ftrace",
    [OP_MODEL_PERFETTO] = "convert via model: Perfetto",
};

typedef struct measure {
	int ok;
	double seconds;
	double cpu_seconds; /* user and system time of the operation */
	long peak_kb;       /* over the bare process */
	uint64_t events;
} measure;

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int convert_stream(const char *path, tl_export_stream_fn exporter, int out, uint64_t *events)
{
	void *data;
	size_t len, failed;
	int rc = tl_snapshot_load_files(&path, 1, &data, &len, &failed);
	if (rc)
		return rc;
	tl_model meta;
	tl_snapshot_read reader;
	rc = tl_snapshot_read_open(&reader, data, len, &meta, NULL, 0);
	if (rc == 0) {
		rc = exporter(&reader, out, NULL);
		*events = reader.nevents;
		tl_snapshot_read_close(&reader);
		tl_model_free(&meta);
	}
	free(data);
	return rc;
}

static int convert_model(const char *path,
                         int (*exporter)(const tl_model *, int, tl_export_counts *), int out,
                         uint64_t *events)
{
	tl_model model;
	int rc = tl_model_read_binary_file(path, &model, NULL, 0);
	if (rc)
		return rc;
	rc = exporter(&model, out, NULL);
	*events = model.nevents;
	tl_model_free(&model);
	return rc;
}

/* The child's side: never returns. */
static void child_run(operation op, uint64_t events, const char *path, int result_fd)
{
	int rc = 0;
	if (op <= OP_PERFETTO)
		rc = record(events);
	int out = open(op == OP_SNAPSHOT_FILE ? path : "/dev/null",
	               O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rc || out < 0)
		_exit(1);
	measure m = {.ok = 1, .events = events};
	long bare_kb = status_kb("VmRSS:");
	if (reset_peak() < 0)
		bare_kb = -1;
	double start = bench_now_seconds(), cpu_start = cpu_seconds();
	switch (op) {
	case OP_SNAPSHOT_FILE:
	case OP_BINARY:
		rc = tl_snapshot_binary_fd(out);
		break;
	case OP_JSON:
		rc = tl_snapshot_json_fd(out);
		break;
	case OP_FTRACE:
		rc = tl_snapshot_ftrace_fd(out);
		break;
	case OP_PERFETTO:
		rc = tl_snapshot_perfetto_fd(out);
		break;
	case OP_CONVERT_JSON:
		rc = convert_stream(path, tl_export_json_stream, out, &m.events);
		break;
	case OP_CONVERT_FTRACE:
		rc = convert_stream(path, tl_export_ftrace_stream, out, &m.events);
		break;
	case OP_CONVERT_PERFETTO:
		rc = convert_stream(path, tl_export_perfetto_stream, out, &m.events);
		break;
	case OP_MODEL_JSON:
		rc = convert_model(path, tl_export_json, out, &m.events);
		break;
	case OP_MODEL_FTRACE:
		rc = convert_model(path, tl_export_ftrace, out, &m.events);
		break;
	default:
		rc = convert_model(path, tl_export_perfetto, out, &m.events);
		break;
	}
	m.seconds = bench_now_seconds() - start;
	m.cpu_seconds = cpu_seconds() - cpu_start;
	long peak_kb = status_kb("VmHWM:");
	m.peak_kb = bare_kb < 0 || peak_kb < 0 ? -1 : peak_kb - bare_kb;
	if (rc) {
		fprintf(stderr, "timeline-bench-export: %s: %s\n", op_names[op], strerror(-rc));
		_exit(1);
	}
	close(out);
	if (op <= OP_PERFETTO) {
		tl_stats st;
		st.struct_size = sizeof st;
		if (tl_stats_get(&st) == 0)
			m.events = st.events_written;
		tl_shutdown();
	}
	if (write(result_fd, &m, sizeof m) != (ssize_t)sizeof m)
		_exit(1);
	_exit(0);
}

typedef struct child_job {
	operation op;
	uint64_t events;
	const char *path;
} child_job;

static void child_main(void *arg, int result_fd)
{
	const child_job *job = arg;
	child_run(job->op, job->events, job->path, result_fd);
}

static measure run_once(operation op, uint64_t events, const char *path)
{
	measure m = {0};
	child_job job = {op, events, path};
	if (!bench_child_run(child_main, &job, &m, sizeof m).ok)
		m.ok = 0;
	return m;
}

/* The fastest of reps runs, with the largest peak of them. */
static measure run(operation op, uint64_t events, const char *path, int reps)
{
	measure best = {0};
	long peak_kb = -1;
	for (int i = 0; i < reps; i++) {
		measure m = run_once(op, events, path);
		if (!m.ok)
			return m;
		if (m.peak_kb > peak_kb)
			peak_kb = m.peak_kb;
		if (!best.ok || m.seconds < best.seconds)
			best = m;
	}
	best.peak_kb = peak_kb;
	return best;
}

/* ------------------------------------------------------------------------ */
/* Output */

static int misses, passes;

static void print_header(void)
{
	printf("%-9s %9s  %-28s %8s %6s %9s %10s %9s %9s %9s  %s\n", "M events", "snap MiB",
	       "operation", "seconds", "cpu%", "M ev/s", "peak MiB", "x snap", "kept B/ev",
	       "B/X|flow", "targets");
}

/* The share of COMPLETE and flow events in the workload, 0 for none. */
static double kept_share(void)
{
	return workload == WORKLOAD_MIXED       ? 3.0 / 8.0
	       : workload == WORKLOAD_COMPLETES ? 6.0 / 8.0
	                                        : 0;
}

static void print_row(uint64_t events, double snapshot_mib, operation op, const measure *m)
{
	printf("%-9.1f %9.1f  %-28s ", (double)events / 1e6, snapshot_mib, op_names[op]);
	if (!m->ok) {
		printf("failed\n");
		return;
	}
	double rate = (double)m->events / m->seconds;
	double peak_mib = m->peak_kb < 0 ? -1 : (double)m->peak_kb / 1024.0;
	printf("%8.2f %5.0f%% %9.2f ", m->seconds, 100 * m->cpu_seconds / m->seconds, rate / 1e6);
	if (peak_mib < 0) {
		printf("%10s %9s %9s %9s  ", "n/a", "n/a", "n/a", "n/a");
	} else {
		/* besides the snapshot, per event and per COMPLETE or flow event */
		double kept = (peak_mib - snapshot_mib) * MIB;
		printf("%10.1f %9.2f ", peak_mib, peak_mib / snapshot_mib);
		if (op == OP_BINARY) /* the snapshot goes to the output */
			printf("%9s ", "-");
		else
			printf("%9.2f ", kept / (double)m->events);
		if (kept_share() > 0 && op != OP_BINARY)
			printf("%9.1f  ", kept / ((double)m->events * kept_share()));
		else
			printf("%9s  ", "-");
	}
	int streamed = op != OP_BINARY && op < OP_MODEL_JSON;
	if (streamed) {
		int speed = rate >= TARGET_EVENTS_PER_SEC;
		int memory = peak_mib >= 0 && peak_mib <= TARGET_MEMORY_RATIO * snapshot_mib;
		printf("speed %s, memory %s", speed ? "PASS" : "MISS", memory ? "PASS" : "MISS");
		passes += speed + memory;
		misses += !speed + !memory;
	}
	printf("\n");
	fflush(stdout);
}

#define MAX_SIZES 8

int main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"events", required_argument, NULL, 'e'},
	    {"model-max", required_argument, NULL, 'm'},
	    {"dir", required_argument, NULL, 'd'},
	    {"quick", no_argument, NULL, 'q'},
	    {"keep", no_argument, NULL, 'k'},
	    {"reps", required_argument, NULL, 'r'},
	    {"mixed", no_argument, NULL, 'x'},
	    {"completes", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	double sizes[MAX_SIZES] = {1, 50};
	int nsizes = 2, keep = 0, reps = 3, opt;
	double model_max = 1;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'e':
			nsizes = bench_parse_sizes(optarg, sizes, MAX_SIZES, 0);
			if (nsizes < 0) {
				fprintf(stderr,
				        "timeline-bench-export: expected sizes like 1,50\n");
				return 2;
			}
			break;
		case 'm':
			model_max = strtod(optarg, NULL);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = 1;
			break;
		case 'x':
			workload = WORKLOAD_MIXED;
			break;
		case 'c':
			workload = WORKLOAD_COMPLETES;
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1) {
				fprintf(stderr,
				        "timeline-bench-export: --reps: expected a count\n");
				return 2;
			}
			break;
		case 'q':
			sizes[0] = 1;
			nsizes = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}

	double started = bench_now_seconds();
	print_header();
	int status = 0;
	for (int i = 0; i < nsizes; i++) {
		uint64_t events = (uint64_t)(sizes[i] * 1e6) / (THREADS * 8) * (THREADS * 8);
		char path[4096];
		snprintf(path, sizeof path, "%s/timeline-bench-export-%ld-%g.tlsnap", dir,
		         (long)getpid(), sizes[i]);
		measure file = run_once(OP_SNAPSHOT_FILE, events, path);
		struct stat st;
		if (!file.ok || stat(path, &st) != 0) {
			fprintf(stderr, "timeline-bench-export: no snapshot of %llu events\n",
			        (unsigned long long)events);
			status = 1;
			continue;
		}
		double snapshot_mib = (double)st.st_size / MIB;
		for (operation op = OP_BINARY; op < OP_COUNT; op++) {
			int model = op >= OP_MODEL_JSON;
			if (model && sizes[i] > model_max)
				continue;
			measure m = run(op, events, path, reps);
			if (!m.ok)
				status = 1;
			print_row(events, snapshot_mib, op, &m);
		}
		if (keep)
			printf("snapshot kept: %s\n", path);
		else
			unlink(path);
	}
	printf("targets: %d PASS, %d MISS (>= %.0f M events/s; peak <= %.0f x the snapshot)\n",
	       passes, misses, TARGET_EVENTS_PER_SEC / 1e6, TARGET_MEMORY_RATIO);
	printf("measured in %.1f s\n", bench_now_seconds() - started);
	return status;
}
