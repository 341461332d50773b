/*
 * `timeline-bench --callgrind-kernel NAME N`: one kernel, N events, for
 * callgrind_counts.sh. The script collects only what runs inside
 * bench_callgrind_measure() (--collect-atstart=no
 * --toggle-collect=bench_callgrind_measure*), so start-up, the warm-up pass
 * and shutdown are not counted. It runs every kernel for N and 2N events to
 * cancel fixed costs, and subtracts a reference kernel with the same loop:
 * the clock-read kernel for events, the empty loop for the disabled macro.
 * The session takes the clock path tl_init() picks (TIMELINE_NO_TSC=1 forces
 * the vDSO one); the last line of output names it ("clock tsc" or "clock
 * vdso"), so the script can say which path it measured.
 *
 * The "drain" kernel writes the "pair" kernel's events into the file
 * recorder instead (a pool that holds them all, a file in TMPDIR, removed
 * at the end); the script counts what runs inside tl_stream_block, on the
 * drain's thread: the drain's cost per event written to the file.
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/timeline.h>

#include "recorder/clock.h"

#if defined(__clang__)
#define BENCH_MEASURED __attribute__((noinline, used))
#else
#define BENCH_MEASURED __attribute__((noinline, noclone, used))
#endif

/* The ring the kernels record into. It wraps within the first 100000 events
 * (every record is 16 bytes or more), so the events the script's second,
 * longer run adds are recorded the way a flight recorder runs for good:
 * over old blocks. */
#define CALLGRIND_RING_BYTES (1u << 20)

static const bench_kernel callgrind_kernels[] = {
    {"empty", bench_floor_empty},          /* reference for "disabled" */
    {"clock", bench_events_clock_read},    /* reference for the events */
    {"disabled", bench_events_disabled},   /* TL_TRACE_EVENT_BEGIN0, category off */
    {"begin", bench_events_begin},         /* TL_TRACE_EVENT_BEGIN0 */
    {"end", bench_events_end},             /* TL_TRACE_EVENT_END0 */
    {"pair", bench_events_begin_end},      /* BEGIN0 + END0, N/2 pairs */
    {"counter", bench_events_counter},     /* TL_TRACE_EVENT_COUNTER, int64 */
    {"copy", bench_events_copy_begin_end}, /* COPY_BEGIN2 + END0, N/2 pairs */
    {"looper", bench_looper_dispatch},     /* looper dispatch begin + end, N/2 */
    {"frame", bench_frame_begin_end},      /* tl_frame_begin + tl_frame_end, N/2 */
    {"call", bench_instrument_call},         /* instrumented call, N/2 calls */
    {"filtered", bench_instrument_filtered}, /* the same, each taken back */
    {"drain", bench_events_begin_end},       /* "pair" into the file recorder */
};

/* The drain kernel's pool: room for every event of the script's longer
 * run (2 x 100000 events of 16 and 24 bytes), so that none is dropped. */
#define CALLGRIND_FILE_POOL_BYTES (64u << 20)

#define KERNEL_COUNT (sizeof callgrind_kernels / sizeof callgrind_kernels[0])

void bench_callgrind_measure(bench_kernel_fn fn, uint64_t iters, bench_thread *thread);

/* Everything callgrind counts happens below this frame. */
BENCH_MEASURED void bench_callgrind_measure(bench_kernel_fn fn, uint64_t iters,
                                            bench_thread *thread)
{
	fn(iters, thread);
	BENCH_BARRIER(); /* keeps the call a call: no tail jump out of the frame */
}

void bench_callgrind_list(FILE *out)
{
	for (size_t i = 0; i < KERNEL_COUNT; i++)
		fprintf(out, "%s%s", i ? " " : "", callgrind_kernels[i].name);
	fprintf(out, "\n");
}

int bench_callgrind_main(const char *name, const char *events)
{
	const bench_kernel *kernel = NULL;
	for (size_t i = 0; i < KERNEL_COUNT; i++)
		if (strcmp(callgrind_kernels[i].name, name) == 0)
			kernel = &callgrind_kernels[i];
	if (!kernel) {
		fprintf(stderr, "timeline-bench: unknown kernel '%s'; kernels: ", name);
		bench_callgrind_list(stderr);
		return 2;
	}
	char *end;
	errno = 0;
	unsigned long long n = strtoull(events, &end, 10);
	if (errno || end == events || *end || n == 0 || n % BENCH_EVENTS_PER_ITER) {
		fprintf(stderr,
		        "timeline-bench: event count '%s' is not a positive multiple of %d\n",
		        events, BENCH_EVENTS_PER_ITER);
		return 2;
	}

	tl_options opts = {.struct_size = sizeof opts,
	                   .recorder = TL_RECORDER_RING,
	                   .buffer_bytes = CALLGRIND_RING_BYTES};
	char file[4096] = "";
	if (strcmp(kernel->name, "drain") == 0) {
		const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(file, sizeof file, "%s/timeline-callgrind-drain-%d.tl", dir, (int)getpid());
		opts.recorder = TL_RECORDER_FILE;
		opts.buffer_bytes = CALLGRIND_FILE_POOL_BYTES;
		opts.file_path = file;
	}
	int rc = tl_init(&opts);
	if (rc < 0) {
		fprintf(stderr, "timeline-bench: tl_init: %s\n", strerror(-rc));
		return 1;
	}
	tl_category_disable(BENCH_CATEGORY_OFF);

	bench_thread thread;
	if (bench_thread_init(&thread, 0) < 0) {
		fprintf(stderr, "timeline-bench: out of memory\n");
		tl_shutdown();
		return 1;
	}
	/* Warm-up, not collected: resolves every call site's category handle
	 * and gives the thread its block. */
	kernel->fn(1, &thread);
	bench_callgrind_measure(kernel->fn, n / BENCH_EVENTS_PER_ITER, &thread);

	tl_stats stats = {.struct_size = sizeof stats};
	rc = tl_stats_get(&stats);
	const char *clock_path = tl_clock_is_tsc() ? "tsc" : "vdso";
	tl_shutdown();
	bench_thread_release(&thread);
	if (file[0])
		unlink(file);
	if (rc < 0) {
		fprintf(stderr, "timeline-bench: tl_stats_get: %s\n", strerror(-rc));
		return 1;
	}
	printf("kernel %s events %llu written %llu dropped %llu clock %s\n", kernel->name, n,
	       (unsigned long long)stats.events_written, (unsigned long long)stats.events_dropped,
	       clock_path);
	return 0;
}
