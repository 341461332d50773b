/*
 * timeline-bench: shared pieces of the benchmark program. Not a test: it
 * measures and prints, and never fails on a timing.
 *
 * Every kernel runs `iters` loop iterations of BENCH_EVENTS_PER_ITER
 * operations, so the loop overhead is the same for the floors (a bare clock
 * read, a clock read plus a 32-byte store) and for the library's events.
 */
#ifndef TIMELINE_BENCH_H
#define TIMELINE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <timeline/timeline.h>

#define BENCH_EVENTS_PER_ITER 8

/* The body of every kernel's loop: BENCH_EVENTS_PER_ITER copies of stmt. */
#define BENCH_REPEAT8(stmt)                                                                        \
	do {                                                                                       \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
		stmt;                                                                              \
	} while (0)

/* The size of a floor thread's record buffer, written round and round. */
#define BENCH_FLOOR_BUFFER_BYTES (64u * 1024u)
#define BENCH_FLOOR_RECORD_BYTES 32u

/* Category names: one left on, one turned off after every tl_init. */
#define BENCH_CATEGORY "bench"
#define BENCH_CATEGORY_OFF "bench_off"

/* A compiler barrier: no instruction, but memory is assumed read and written. */
#define BENCH_BARRIER() __asm__ __volatile__("" ::: "memory")
/* Makes the compiler compute `value` into a register without any other work. */
#define BENCH_USE(value) __asm__ __volatile__("" : : "r"(value))

/* Per-thread state handed to a kernel. */
typedef struct bench_thread {
	unsigned char *buffer; /* floors: BENCH_FLOOR_BUFFER_BYTES, pre-touched */
	size_t pos;            /* floors: next record offset in buffer */
	char name[32];         /* copied-name events: the (per-thread) name */
	char label[32];        /* copied-name events: the copied string argument */
	void *frame_tracer;    /* frame kernel: the thread's tracer (bench_frame.c) */
} bench_thread;

typedef void (*bench_kernel_fn)(uint64_t iters, bench_thread *thread);

typedef struct bench_kernel {
	const char *name;
	bench_kernel_fn fn;
} bench_kernel;

/* Floors (bench_floor.c). The rdtsc kernels are NULL off x86. */
void bench_floor_empty(uint64_t iters, bench_thread *thread);
void bench_floor_clock(uint64_t iters, bench_thread *thread);
void bench_floor_clock_store(uint64_t iters, bench_thread *thread);
extern const bench_kernel_fn bench_floor_rdtsc;
extern const bench_kernel_fn bench_floor_rdtsc_store;

/* Library events through the macros (bench_events.c). */
void bench_events_disabled(uint64_t iters, bench_thread *thread);
void bench_events_begin(uint64_t iters, bench_thread *thread);
void bench_events_end(uint64_t iters, bench_thread *thread);
void bench_events_begin_end(uint64_t iters, bench_thread *thread);
void bench_events_copy_begin_end(uint64_t iters, bench_thread *thread);
void bench_events_counter(uint64_t iters, bench_thread *thread);
/* A looper dispatch (begin + end) with the watchdog armed (bench_looper.c). */
void bench_looper_dispatch(uint64_t iters, bench_thread *thread);
/* One frame tracer frame (tl_frame_begin + tl_frame_end) per pair, with the
 * thread's own tracer, destroyed by bench_frame_release (bench_frame.c). */
void bench_frame_begin_end(uint64_t iters, bench_thread *thread);
void bench_frame_release(bench_thread *thread);
/* Instrumented calls of an empty function, four per iteration; with a
 * minimum duration that takes every one back (bench_instrument.c). */
void bench_instrument_call(uint64_t iters, bench_thread *thread);
void bench_instrument_filtered(uint64_t iters, bench_thread *thread);
/* The bytes an instrumented call's entry or exit adds to its thread's
 * records on average, over 40000 calls in a session of its own (endless
 * recorder); NAN when it cannot be measured. */
double bench_instrument_bytes_per_event(void);
/* The library's own hot-path clock read, eight times per iteration. */
void bench_events_clock_read(uint64_t iters, bench_thread *thread);

/*
 * `timeline-bench --callgrind-kernel NAME N` (bench_callgrind.c): runs one
 * kernel for N events inside bench_callgrind_measure(), the function
 * callgrind_counts.sh collects with --toggle-collect. Returns an exit code.
 */
int bench_callgrind_main(const char *kernel, const char *events);
void bench_callgrind_list(FILE *out); /* the kernel names, one line */

/*
 * The library's two clock paths. Every row that records events runs on
 * both, each in sessions of its own: the TSC path (tl_options.no_tsc false,
 * where the TSC is usable) and the vDSO path (no_tsc true: clock_gettime).
 * A path that cannot be taken on this machine is skipped, with a reason.
 */
enum bench_path { BENCH_PATH_TSC, BENCH_PATH_VDSO, BENCH_PATH_COUNT };

const char *bench_path_key(enum bench_path path);   /* "tsc", "vdso" */
const char *bench_path_label(enum bench_path path); /* "TSC", "vDSO" */
bool bench_path_available(enum bench_path path);
/* Why a path is not measured ("" when it is). */
const char *bench_path_skip_reason(enum bench_path path);
/* Starts a session (tl_init) of `opts` on `path`; returns tl_init's result.
 * Fails with -EPROTO when the library did not take the path. */
int bench_path_init(tl_options *opts, enum bench_path path);

/* The systrace rows (bench_systrace.c): measured on a private tracefs
 * instance, the library's rows on each available path, or skipped with a
 * reason; printed after the event table, and as a "systrace" member of the
 * JSON object. */
void bench_systrace_measure(int reps, double run_ns);
void bench_systrace_print_table(void);
void bench_systrace_print_json(void);
/* The systrace targets' figures on a path: the recorder with tracing on
 * over a raw write(2) of the same bytes, and with tracing off over the
 * library's clock read. NAN when not measured. */
double bench_systrace_on_over_raw(enum bench_path path);
double bench_systrace_off_over_clock(enum bench_path path);

/* uftrace record on the loop of bench_loop.c beside the same loop with
 * the library's hooks on each measured clock path (bench_uftrace.c), in
 * `rounds` alternating rounds: measured when uftrace is installed, else
 * skipped with the reason; printed after the systrace rows, and as an
 * "uftrace" member of the JSON object. Call after the paths are known. */
void bench_uftrace_measure(int rounds);
void bench_uftrace_print_table(void);
void bench_uftrace_print_json(void);
/* uftrace's (-pg) best ns per call over ours on a path, best over best;
 * NAN when not measured. */
double bench_uftrace_over_ours(enum bench_path path);

/* Prepares and frees a thread's state. Returns 0 or -ENOMEM. */
int bench_thread_init(bench_thread *thread, unsigned index);
void bench_thread_release(bench_thread *thread);

#endif /* TIMELINE_BENCH_H */
