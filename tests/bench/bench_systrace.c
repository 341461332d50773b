/*
 * timeline-bench, systrace rows: ns per event of the systrace recorder with
 * tracing on and off, measured in the same run as the writers it competes
 * with on the same trace_marker: a raw write(2) of the same bytes, and an
 * snprintf + write(2) writer as Android's ATrace does it. Runs on a private
 * tracefs instance (created and removed here); the rows are skipped, with
 * the reason printed, when tracefs cannot be written. The library's rows
 * (its clock read, the recorder on and off) run on each clock path the
 * other rows run on (bench.h); the raw writers do not read its clock.
 *
 * Every kernel writes begin/end pairs, BENCH_EVENTS_PER_ITER events per
 * loop iteration. Each row is the best of `reps` runs, and a run's figure
 * its best of SYS_SLICES timed slices; the kernels take turns, so a slow
 * spell of the machine costs every row alike.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<tracefs.h>)
#include <tracefs.h>
#define BENCH_HAVE_TRACEFS 1
#endif

#include <timeline/trace_event.h>

#define EVENT_NAME "bench_event"

enum sys_row {
	SYS_CLOCK,       /* tl_now(): the library's clock read, in a session */
	SYS_RAW_ON,      /* write(2) of the recorder's exact bytes */
	SYS_SNPRINTF_ON, /* snprintf + write(2), ATrace style */
	SYS_LIB_ON,      /* TL_TRACE_EVENT_BEGIN0/END0 into the systrace recorder */
	SYS_RAW_OFF,     /* write(2) while tracing is off (fails) */
	SYS_LIB_OFF,     /* the recorder while tracing is off (the gate skips) */
	SYS_ROWS
};

#define SYS_SLICES 32
/* Where the rows that do not depend on a clock path keep their figures:
 * after the paths. */
#define SYS_NO_PATH BENCH_PATH_COUNT
#define SYS_PATHS (BENCH_PATH_COUNT + 1)

static const struct {
	const char *key;
	const char *label;
	bool tracing_on;
	bool library; /* runs in a systrace session, once per clock path */
} sys_specs[SYS_ROWS] = {
    [SYS_CLOCK] = {"clock_read", "library clock read", true, true},
    [SYS_RAW_ON] = {"raw_write", "raw write(2)", true, false},
    [SYS_SNPRINTF_ON] = {"snprintf_write", "snprintf + write(2)", true, false},
    [SYS_LIB_ON] = {"systrace", "systrace recorder", true, true},
    [SYS_RAW_OFF] = {"raw_write_off", "raw write(2), off", false, false},
    [SYS_LIB_OFF] = {"systrace_off", "systrace recorder, off", false, true},
};

static struct {
	bool available;
	char skip_reason[160];
	char name[64];
	char dir[PATH_MAX - 64];
#ifdef BENCH_HAVE_TRACEFS
	struct tracefs_instance *handle;
#endif
	int marker_fd;
	char begin[64], end[32];
	size_t begin_len, end_len;
	double ns[SYS_ROWS][SYS_PATHS];
	uint64_t iters[SYS_ROWS][SYS_PATHS];
	uint64_t written, dropped, tracing_off;
} sys;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int instance_write(const char *file, const char *value)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", sys.dir, file);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = write(fd, value, strlen(value)) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static void skip(const char *why, int err)
{
	snprintf(sys.skip_reason, sizeof sys.skip_reason, "%s%s%s", why, err ? ": " : "",
	         err ? strerror(err) : "");
}

static bool instance_create(void)
{
	if (geteuid() != 0) {
		skip("not root: tracefs is not writable", 0);
		return false;
	}
	snprintf(sys.name, sizeof sys.name, "timeline_bench_%d", (int)getpid());
#ifdef BENCH_HAVE_TRACEFS
	const char *top = tracefs_tracing_dir();
	if (!top) {
		skip("no tracefs found", 0);
		return false;
	}
	sys.handle = tracefs_instance_create(sys.name);
	if (!sys.handle) {
		skip("cannot create a tracefs instance", errno);
		return false;
	}
#else
	const char *top = "/sys/kernel/tracing";
#endif
	snprintf(sys.dir, sizeof sys.dir, "%s/instances/%s", top, sys.name);
#ifndef BENCH_HAVE_TRACEFS
	if (mkdir(sys.dir, 0755) != 0) {
		skip("cannot create a tracefs instance", errno);
		return false;
	}
#endif
	return true;
}

static void instance_destroy(void)
{
#ifdef BENCH_HAVE_TRACEFS
	if (sys.handle) {
		tracefs_instance_destroy(sys.handle);
		tracefs_instance_free(sys.handle);
		sys.handle = NULL;
	}
#else
	rmdir(sys.dir);
#endif
}

/* ---- kernels: BENCH_EVENTS_PER_ITER events per iteration, begin/end pairs ---- */

static void kernel_clock(uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		BENCH_REPEAT8(BENCH_USE(tl_now()));
}

static void kernel_raw(uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		for (int k = 0; k < BENCH_EVENTS_PER_ITER / 2; k++) {
			BENCH_USE(write(sys.marker_fd, sys.begin, sys.begin_len));
			BENCH_USE(write(sys.marker_fd, sys.end, sys.end_len));
		}
}

static void kernel_snprintf(uint64_t iters)
{
	char buf[1024];
	int pid = getpid();
	for (uint64_t i = 0; i < iters; i++)
		for (int k = 0; k < BENCH_EVENTS_PER_ITER / 2; k++) {
			int n = snprintf(buf, sizeof buf, "B|%d|%s", pid, EVENT_NAME);
			BENCH_USE(write(sys.marker_fd, buf, (size_t)n));
			n = snprintf(buf, sizeof buf, "E|%d", pid);
			BENCH_USE(write(sys.marker_fd, buf, (size_t)n));
		}
}

static void kernel_library(uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		for (int k = 0; k < BENCH_EVENTS_PER_ITER / 2; k++) {
			TL_TRACE_EVENT_BEGIN0(BENCH_CATEGORY, EVENT_NAME);
			TL_TRACE_EVENT_END0(BENCH_CATEGORY, EVENT_NAME);
		}
}

static void (*const kernels[SYS_ROWS])(uint64_t) = {
    [SYS_CLOCK] = kernel_clock,    [SYS_RAW_ON] = kernel_raw,  [SYS_SNPRINTF_ON] = kernel_snprintf,
    [SYS_LIB_ON] = kernel_library, [SYS_RAW_OFF] = kernel_raw, [SYS_LIB_OFF] = kernel_library,
};

/* Whether row r runs on path p (SYS_NO_PATH: the rows that read no clock
 * of the library). */
static bool row_runs(enum sys_row r, int p)
{
	if (sys_specs[r].library)
		return p < BENCH_PATH_COUNT && bench_path_available((enum bench_path)p);
	return p == SYS_NO_PATH;
}

/* One run of a row: sets tracing, starts the recorder on path p for library
 * rows, times the loop. Returns ns per event, or NAN when it cannot run. */
static double run_row(enum sys_row r, int p, uint64_t iters)
{
	instance_write("tracing_on", sys_specs[r].tracing_on ? "1" : "0");
	if (sys_specs[r].library) {
		tl_options opts = {.struct_size = sizeof opts,
		                   .recorder = TL_RECORDER_SYSTRACE,
		                   .tracefs_instance = sys.name};
		if (bench_path_init(&opts, (enum bench_path)p) != 0)
			return NAN;
		kernels[r](64); /* registers the thread, warms up */
	}
	/* the best of SYS_SLICES slices, as the event rows (bench.c) */
	uint64_t slice = iters / SYS_SLICES ? iters / SYS_SLICES : 1;
	double ns = INFINITY;
	for (uint64_t done = 0; done < iters;) {
		uint64_t n = iters - done < slice ? iters - done : slice;
		double start = now_ns();
		kernels[r](n);
		double per_event = (now_ns() - start) / ((double)n * BENCH_EVENTS_PER_ITER);
		if (per_event < ns)
			ns = per_event;
		done += n;
	}
	if (sys_specs[r].library) {
		tl_stats st = {.struct_size = sizeof st};
		if (tl_stats_get(&st) == 0) {
			sys.written += st.events_written;
			sys.dropped += st.events_dropped;
			sys.tracing_off += st.events_tracing_off;
		}
		tl_shutdown();
	}
	return ns;
}

void bench_systrace_measure(int reps, double run_ns)
{
	sys.available = false;
	unsetenv("TIMELINE_TRACEFS_INSTANCE");
	if (!instance_create())
		return;
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/trace_marker", sys.dir);
	sys.marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (sys.marker_fd < 0) {
		skip("cannot open the instance's trace_marker", errno);
		instance_destroy();
		return;
	}
	instance_write("buffer_size_kb", "1024");
	sys.begin_len =
	    (size_t)snprintf(sys.begin, sizeof sys.begin, "B|%d|%s", (int)getpid(), EVENT_NAME);
	sys.end_len = (size_t)snprintf(sys.end, sizeof sys.end, "E|%d", (int)getpid());

	/* calibrate: about run_ns per run */
	for (int r = 0; r < SYS_ROWS; r++)
		for (int p = 0; p < SYS_PATHS; p++) {
			sys.ns[r][p] = NAN;
			if (!row_runs((enum sys_row)r, p))
				continue;
			uint64_t iters = 256;
			double ns;
			while ((ns = run_row((enum sys_row)r, p, iters)) * (double)iters *
			               BENCH_EVENTS_PER_ITER <
			           run_ns / 4 &&
			       iters < (1u << 24))
				iters *= 2;
			double wanted = run_ns / (ns * BENCH_EVENTS_PER_ITER);
			sys.iters[r][p] = isnan(wanted) || wanted < 64 ? 64 : (uint64_t)wanted;
			sys.ns[r][p] = INFINITY;
		}
	sys.written = sys.dropped = sys.tracing_off = 0;
	for (int rep = 0; rep < reps; rep++)
		for (int r = 0; r < SYS_ROWS; r++)
			for (int p = 0; p < SYS_PATHS; p++) {
				if (!row_runs((enum sys_row)r, p))
					continue;
				double ns = run_row((enum sys_row)r, p, sys.iters[r][p]);
				if (ns < sys.ns[r][p] || isnan(ns))
					sys.ns[r][p] = ns;
			}
	close(sys.marker_fd);
	instance_write("tracing_on", "1");
	instance_destroy();
	sys.available = true;
}

double bench_systrace_on_over_raw(enum bench_path path)
{
	if (!sys.available)
		return NAN;
	return sys.ns[SYS_LIB_ON][path] / sys.ns[SYS_RAW_ON][SYS_NO_PATH];
}

double bench_systrace_off_over_clock(enum bench_path path)
{
	if (!sys.available)
		return NAN;
	return sys.ns[SYS_LIB_OFF][path] / sys.ns[SYS_CLOCK][path];
}

static const char *path_label(int p)
{
	return p == SYS_NO_PATH ? "-" : bench_path_label((enum bench_path)p);
}

/* The rows in table order: each writer, on each path it runs on. The rows
 * of a skipped path are printed as skipped. */
void bench_systrace_print_table(void)
{
	if (!sys.available) {
		printf("systrace rows skipped: %s\n\n", sys.skip_reason);
		return;
	}
	printf("systrace (private tracefs instance; begin/end pairs, one write(2) per event)\n");
	printf("%-28s %-5s %-8s %9s %9s\n", "writer", "clock", "tracing", "ns/event", "x raw");
	double raw = sys.ns[SYS_RAW_ON][SYS_NO_PATH];
	for (int r = 0; r < SYS_ROWS; r++)
		for (int p = 0; p < SYS_PATHS; p++) {
			bool library = sys_specs[r].library;
			if (library ? p == SYS_NO_PATH : p != SYS_NO_PATH)
				continue;
			printf("%-28s %-5s %-8s", sys_specs[r].label, path_label(p),
			       r == SYS_CLOCK            ? "-"
			       : sys_specs[r].tracing_on ? "on"
			                                 : "off");
			if (!row_runs((enum sys_row)r, p)) {
				printf(" %9s\n", "skipped");
				continue;
			}
			printf(" %9.2f", sys.ns[r][p]);
			if (r == SYS_CLOCK || !sys_specs[r].tracing_on)
				printf(" %9s\n", "-");
			else
				printf(" %9.3f\n", sys.ns[r][p] / raw);
		}
	printf("recorder counts over the timed runs: %llu written, %llu dropped, %llu skipped "
	       "while tracing was off\n\n",
	       (unsigned long long)sys.written, (unsigned long long)sys.dropped,
	       (unsigned long long)sys.tracing_off);
}

static void json_value(const char *key, double v)
{
	if (isnan(v) || isinf(v))
		printf("\"%s\":null", key);
	else
		printf("\"%s\":%.3f", key, v);
}

void bench_systrace_print_json(void)
{
	printf(",\"systrace\":{");
	if (!sys.available) {
		printf("\"skipped\":\"%s\"}", sys.skip_reason);
		return;
	}
	printf("\"rows\":[");
	bool first = true;
	for (int r = 0; r < SYS_ROWS; r++)
		for (int p = 0; p < SYS_PATHS; p++) {
			if (sys_specs[r].library ? p == SYS_NO_PATH : p != SYS_NO_PATH)
				continue;
			printf("%s{\"writer\":\"%s\",\"path\":", first ? "" : ",",
			       sys_specs[r].key);
			if (p == SYS_NO_PATH)
				printf("null,");
			else
				printf("\"%s\",", bench_path_key((enum bench_path)p));
			json_value("ns_per_event",
			           row_runs((enum sys_row)r, p) ? sys.ns[r][p] : NAN);
			printf("}");
			first = false;
		}
	printf("],\"written\":%llu,\"dropped\":%llu}", (unsigned long long)sys.written,
	       (unsigned long long)sys.dropped);
}
