/*
 * timeline-bench: the cost of one event, next to the floors it cannot beat.
 *
 * Every row is the best (minimum) of several runs of one kernel. A run starts
 * a fresh recorder, starts fresh threads that warm up, then times the
 * kernel's loop on each thread with CLOCK_MONOTONIC; nothing is subtracted.
 * Rows with two threads run the same loop on both at once and report the
 * slower thread. Every event row runs on both of the library's clock paths
 * (the TSC where it is usable, and the vDSO), each compared with its own
 * floor. Nothing is pinned. The program prints a table and one JSON line and
 * exits 0 whatever the figures are: it is not a test
 * (tests/test_instruction_counts.c is).
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <timeline/timeline.h>

#include "recorder/clock.h"

#define MAX_THREADS 2
#define RING_BYTES (1u << 20)
/* Records one thread may write in a single run of a recorder that does not
 * wrap (endless, startup): the run is shortened rather than dropping. */
#define RUN_BYTES_PER_THREAD (64u << 20)
/* Loop iterations each thread runs before the timed loop of every run (the
 * ring's warm-up is longer, see warm_iters()). */
#define WARM_ITERS 64
/* A calibration run is long enough once it takes this long. */
#define CALIBRATION_NS 2e6
/* A thread with less CPU time than this share of its timed loop was
 * preempted (or blocked); such a run is retried up to PREEMPTED_RETRIES
 * times, and if it stays the best one its row is flagged. */
#define CPU_SHARE_RELIABLE 0.95
#define PREEMPTED_RETRIES 2
/* A run's timed loop is cut into this many slices of equal length, each
 * timed on its own; the run's figure is its fastest slice. An interrupt or
 * a neighbour's burst then spoils one slice, not the run. A slice still
 * spans many blocks of every recorder, so block changes, page faults and
 * the ring's recycling stay in every slice's cost. */
#define RUN_SLICES 32

/* Targets (informational: printed as PASS or MISS). */
#define TARGET_DISABLED_NS 0.5
#define TARGET_EVENT_OVER_FLOOR 1.15
#define TARGET_TWO_THREADS_OVER_ONE 1.10
#define TARGET_FRAME_OVER_BEGIN_END 1.5
#define TARGET_LOOPER_OVER_BEGIN_END 1.3
#define TARGET_SYSTRACE_ON_OVER_RAW 1.05
#define TARGET_SYSTRACE_OFF_OVER_CLOCK 3.0
#define TARGET_CALL_OVER_BEGIN_END 1.3
#define TARGET_FILTERED_OVER_CALL 1.2
#define TARGET_CALL_BYTES_PER_EVENT 16.0
#define TARGET_UFTRACE_OVER_CALL 5.0

typedef struct bench_config {
	int reps;
	double run_ns; /* aimed-for length of one run */
	bool json_only;
	bool no_tsc; /* --no-tsc: measure the vDSO path only */
} bench_config;

/* ---- what is measured ---------------------------------------------------- */

enum floor_op {
	FLOOR_EMPTY,
	FLOOR_CLOCK,
	FLOOR_CLOCK_STORE,
	FLOOR_RDTSC,
	FLOOR_RDTSC_STORE,
	FLOOR_COUNT
};

static const struct floor_spec {
	const char *key;
	const char *label;
} floor_specs[FLOOR_COUNT] = {
    [FLOOR_EMPTY] = {"empty_loop", "empty loop"},
    [FLOOR_CLOCK] = {"clock_gettime", "clock_gettime(BOOTTIME)"},
    [FLOOR_CLOCK_STORE] = {"clock_gettime_store32", "clock_gettime + 32 B store"},
    [FLOOR_RDTSC] = {"rdtsc", "rdtsc"},
    [FLOOR_RDTSC_STORE] = {"rdtsc_store32", "rdtsc + 32 B store"},
};

enum event_kind {
	EVENT_DISABLED,
	EVENT_BEGIN_END,
	EVENT_COPY,
	EVENT_COUNTER,
	EVENT_FRAME,
	EVENT_LOOPER,
	EVENT_CALL,
	EVENT_FILTERED,
	EVENT_COUNT
};

static const struct event_spec {
	const char *key;
	const char *label;
	bench_kernel_fn fn;
	bool pairs;          /* begin/end pairs: also report ns per pair */
	unsigned max_record; /* bytes per event, an upper bound for budgets */
} event_specs[EVENT_COUNT] = {
    [EVENT_DISABLED] = {"disabled", "disabled (macro)", bench_events_disabled, false, 0},
    [EVENT_BEGIN_END] = {"begin_end", "begin+end", bench_events_begin_end, true, 48},
    [EVENT_COPY] = {"copy_begin_end", "copy begin2+end", bench_events_copy_begin_end, true, 160},
    [EVENT_COUNTER] = {"counter", "counter i64", bench_events_counter, false, 64},
    [EVENT_FRAME] = {"frame_begin_end", "frame begin+end", bench_frame_begin_end, true, 80},
    [EVENT_LOOPER] = {"looper_dispatch", "looper dispatch", bench_looper_dispatch, true, 24},
    /* an instrumented call: its entry and exit are the pair */
    [EVENT_CALL] = {"instrumented_call", "instrumented call", bench_instrument_call, true, 16},
    [EVENT_FILTERED] = {"filtered_call", "filtered call", bench_instrument_filtered, true, 16},
};

enum recorder_index { REC_RING, REC_ENDLESS, REC_STARTUP, REC_COUNT };

static const struct recorder_spec {
	const char *key;
	tl_recorder_kind kind;
	bool wraps; /* fixed budget, overwritten; else sized per run so nothing drops */
} recorder_specs[REC_COUNT] = {
    [REC_RING] = {"ring", TL_RECORDER_RING, true},
    [REC_ENDLESS] = {"endless", TL_RECORDER_ENDLESS, false},
    [REC_STARTUP] = {"startup", TL_RECORDER_STARTUP, false},
};

typedef struct result {
	bool measured;
	double ns;        /* per event (per operation for floors), per thread */
	uint64_t iters;   /* loop iterations per thread in one timed run */
	double cpu_share; /* best run: least on-CPU time / wall time of a thread */
	uint64_t written;
	uint64_t dropped;
	uint64_t overwritten;
} result;

static const struct path_spec {
	const char *key;
	const char *label;
	enum floor_op floor; /* the clock-plus-store floor of the path */
} path_specs[BENCH_PATH_COUNT] = {
    [BENCH_PATH_TSC] = {"tsc", "TSC", FLOOR_RDTSC_STORE},
    [BENCH_PATH_VDSO] = {"vdso", "vDSO", FLOOR_CLOCK_STORE},
};

static struct {
	bool available;
	char skip_reason[160];
} paths[BENCH_PATH_COUNT];

static result floor_results[FLOOR_COUNT][MAX_THREADS];
static result event_results[BENCH_PATH_COUNT][REC_COUNT][EVENT_COUNT][MAX_THREADS];
/* The clock tl_init takes with the default options on this machine. */
static bool library_default_tsc;

/* ---- threads ------------------------------------------------------------- */

int bench_thread_init(bench_thread *thread, unsigned index)
{
	memset(thread, 0, sizeof *thread);
	thread->buffer = aligned_alloc(64, BENCH_FLOOR_BUFFER_BYTES);
	if (!thread->buffer)
		return -ENOMEM;
	memset(thread->buffer, 0, BENCH_FLOOR_BUFFER_BYTES);
	snprintf(thread->name, sizeof thread->name, "copied-name-%02u", index);
	snprintf(thread->label, sizeof thread->label, "label-%02u", index);
	return 0;
}

void bench_thread_release(bench_thread *thread)
{
	bench_frame_release(thread);
	free(thread->buffer);
	thread->buffer = NULL;
}

typedef struct worker {
	pthread_t id;
	bench_thread state;
	bench_kernel_fn fn;
	uint64_t warm_iters;
	uint64_t iters;
	pthread_barrier_t *start;
	double elapsed_ns;
	double cpu_ns;        /* of the timed loop: less than elapsed when preempted or blocked */
	double best_slice_ns; /* the fastest of the RUN_SLICES slices, per loop iteration */
} worker;

static double clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	w->fn(w->warm_iters, &w->state);
	pthread_barrier_wait(w->start);
	uint64_t slice = w->iters / RUN_SLICES ? w->iters / RUN_SLICES : 1;
	double cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	double start = clock_ns(CLOCK_MONOTONIC);
	double slice_start = start;
	w->best_slice_ns = INFINITY;
	for (uint64_t done = 0; done < w->iters;) {
		uint64_t n = w->iters - done < slice ? w->iters - done : slice;
		w->fn(n, &w->state);
		done += n;
		double now = clock_ns(CLOCK_MONOTONIC);
		if ((now - slice_start) / (double)n < w->best_slice_ns)
			w->best_slice_ns = (now - slice_start) / (double)n;
		slice_start = now;
	}
	w->elapsed_ns = clock_ns(CLOCK_MONOTONIC) - start;
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
	return NULL;
}

/* Reports a failure to set a run up and exits: nothing can be measured. */
static void die(const char *what, int err)
{
	fprintf(stderr, "timeline-bench: %s: %s\n", what, strerror(err));
	exit(1);
}

/*
 * One run: `threads` fresh threads each warm up (warm_iters), wait for each
 * other, then run `iters` loop iterations at the same time, in RUN_SLICES
 * timed slices. Returns the slower thread's ns per operation in its fastest
 * slice; *cpu_share is the smallest fraction of its timed loop a thread
 * spent on a CPU.
 */
static double run_once(bench_kernel_fn fn, int threads, uint64_t warm_iters, uint64_t iters,
                       double *cpu_share)
{
	worker workers[MAX_THREADS];
	pthread_barrier_t start;
	int err;

	if ((err = pthread_barrier_init(&start, NULL, (unsigned)threads)) != 0)
		die("pthread_barrier_init", err);
	for (int i = 0; i < threads; i++) {
		worker *w = &workers[i];
		if (bench_thread_init(&w->state, (unsigned)i) < 0)
			die("thread buffer", ENOMEM);
		w->fn = fn;
		w->warm_iters = warm_iters;
		w->iters = iters;
		w->start = &start;
		if ((err = pthread_create(&w->id, NULL, worker_main, w)) != 0)
			die("pthread_create", err);
	}
	double slowest = 0, share = 1;
	for (int i = 0; i < threads; i++) {
		worker *w = &workers[i];
		pthread_join(w->id, NULL);
		bench_thread_release(&w->state);
		if (w->best_slice_ns > slowest)
			slowest = w->best_slice_ns;
		if (w->elapsed_ns > 0 && w->cpu_ns / w->elapsed_ns < share)
			share = w->cpu_ns / w->elapsed_ns;
	}
	pthread_barrier_destroy(&start);
	*cpu_share = share;
	return slowest / BENCH_EVENTS_PER_ITER;
}

/* ---- clock paths --------------------------------------------------------- */

const char *bench_path_key(enum bench_path path)
{
	return path_specs[path].key;
}

const char *bench_path_label(enum bench_path path)
{
	return path_specs[path].label;
}

bool bench_path_available(enum bench_path path)
{
	return paths[path].available;
}

const char *bench_path_skip_reason(enum bench_path path)
{
	return paths[path].skip_reason;
}

int bench_path_init(tl_options *opts, enum bench_path path)
{
	opts->no_tsc = path == BENCH_PATH_VDSO;
	int rc = tl_init(opts);
	if (rc == 0 && (tl_clock_is_tsc() != 0) != (path == BENCH_PATH_TSC)) {
		tl_shutdown();
		return -EPROTO;
	}
	return rc;
}

/* Why the library cannot take the TSC path here. The rule is the library's
 * (recorder/clock.c): the kernel's own clocksource is the TSC, and the CPU
 * says its TSC is invariant. */
static void tsc_skip_reason(char *out, size_t size)
{
#if defined(__x86_64__) || defined(__i386__)
	char source[64] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f) {
		if (!fgets(source, sizeof source, f))
			source[0] = '\0';
		fclose(f);
	}
	source[strcspn(source, "\n")] = '\0';
	const char *forced = getenv("TIMELINE_NO_TSC");
	if (forced && strcmp(forced, "1") == 0)
		snprintf(out, size, "TIMELINE_NO_TSC=1 forces the vDSO path");
	else if (!source[0])
		snprintf(out, size, "the kernel's clocksource cannot be read");
	else if (strcmp(source, "tsc") != 0)
		snprintf(out, size,
		         "the kernel's clocksource is %s, not tsc (TIMELINE_FORCE_TSC=1 "
		         "measures it anyway)",
		         source);
	else if (!tl_clock_tsc_usable())
		snprintf(out, size,
		         "the kernel's clocksource is tsc, but the CPU does not report "
		         "constant_tsc and nonstop_tsc");
	else
		snprintf(out, size,
		         "the TSC is usable, but tl_init with no_tsc = false did not "
		         "take it");
#else
	snprintf(out, size, "no TSC on this architecture");
#endif
}

/* Decides which paths are measured: the vDSO path always, the TSC path
 * where a session with the default options takes it. */
static void paths_detect(const bench_config *cfg)
{
	tl_options opts = {
	    .struct_size = sizeof opts, .recorder = TL_RECORDER_RING, .buffer_bytes = RING_BYTES};
	int rc = tl_init(&opts);
	if (rc < 0)
		die("tl_init", -rc);
	library_default_tsc = tl_clock_is_tsc() != 0;
	tl_shutdown();

	paths[BENCH_PATH_VDSO].available = true;
	paths[BENCH_PATH_TSC].available = library_default_tsc && !cfg->no_tsc;
	if (cfg->no_tsc)
		snprintf(paths[BENCH_PATH_TSC].skip_reason,
		         sizeof paths[BENCH_PATH_TSC].skip_reason, "--no-tsc given");
	else if (!library_default_tsc)
		tsc_skip_reason(paths[BENCH_PATH_TSC].skip_reason,
		                sizeof paths[BENCH_PATH_TSC].skip_reason);
}

/* ---- runs ---------------------------------------------------------------- */

/* One line of the table: a floor (rec and ev NULL) or a recorder and event
 * on a clock path. */
typedef struct row {
	const struct recorder_spec *rec;
	const struct event_spec *ev;
	enum bench_path path; /* events only */
	bench_kernel_fn fn;
	int threads;
	uint64_t iters; /* per thread and run, set by calibrate() */
	result *out;
} row;

#define MAX_ROWS                                                                                   \
	(FLOOR_COUNT * MAX_THREADS + BENCH_PATH_COUNT * REC_COUNT * EVENT_COUNT * MAX_THREADS)

static void recorder_start(tl_recorder_kind kind, size_t bytes, enum bench_path path)
{
	tl_options opts = {.struct_size = sizeof opts, .recorder = kind, .buffer_bytes = bytes};
	int rc = bench_path_init(&opts, path);
	if (rc == -EPROTO) {
		fprintf(stderr, "timeline-bench: tl_init did not take the %s clock path\n",
		        bench_path_label(path));
		exit(1);
	}
	if (rc < 0)
		die("tl_init", -rc);
	tl_category_disable(BENCH_CATEGORY_OFF);
}

/* Adds the running recorder's counters to r, then stops it. */
static void recorder_stop(result *r)
{
	tl_stats stats = {.struct_size = sizeof stats};
	if (tl_stats_get(&stats) == 0) {
		r->written += stats.events_written;
		r->dropped += stats.events_dropped;
		r->overwritten += stats.events_overwritten;
	}
	tl_shutdown();
}

/* The ring is warmed up until it has wrapped (every record is at least two
 * words), so its runs measure the steady state: writing over old blocks. */
static uint64_t warm_iters(const row *r)
{
	if (r->rec && r->rec->wraps && r->ev->max_record)
		return RING_BYTES / 16 / BENCH_EVENTS_PER_ITER;
	return WARM_ITERS;
}

/* The budget of one run: the ring's fixed size, or for the recorders that do
 * not wrap every event of every thread at its largest record size plus room
 * for partly used blocks, so nothing is dropped. */
static size_t run_budget(const row *r)
{
	if (r->rec->wraps)
		return RING_BYTES;
	uint64_t count = (r->iters + warm_iters(r)) * BENCH_EVENTS_PER_ITER;
	uint64_t bytes = count * r->ev->max_record * (uint64_t)r->threads;
	return (size_t)(bytes + bytes / 4 + (4u << 20));
}

/* The most iterations a run may have: a non-wrapping recorder's runs are
 * shortened rather than made to drop. */
static uint64_t max_iters(const row *r)
{
	if (!r->rec || r->rec->wraps || r->ev->max_record == 0)
		return UINT64_MAX;
	return RUN_BYTES_PER_THREAD / r->ev->max_record / BENCH_EVENTS_PER_ITER;
}

/* One run of a row on a fresh recorder; returns ns per event. */
static double run_row(const row *r, uint64_t iters, double *cpu_share)
{
	if (r->rec)
		recorder_start(r->rec->kind, run_budget(r), r->path);
	double ns = run_once(r->fn, r->threads, warm_iters(r), iters, cpu_share);
	if (r->rec)
		recorder_stop(r->out);
	return ns;
}

/* Sizes a row's runs to about cfg->run_ns; doubles as its warm-up. */
static void calibrate(const bench_config *cfg, row *r)
{
	uint64_t limit = max_iters(r);
	uint64_t iters = 1024;
	double ns, share;
	for (;;) {
		r->iters = iters;
		ns = run_row(r, iters, &share);
		if (ns * (double)iters * BENCH_EVENTS_PER_ITER >= CALIBRATION_NS || iters >= limit)
			break;
		iters = iters * 2 < limit ? iters * 2 : limit;
	}
	double wanted = cfg->run_ns / (ns * BENCH_EVENTS_PER_ITER);
	r->iters = wanted < 64 ? 64 : wanted > (double)limit ? limit : (uint64_t)wanted;
	r->out->ns = INFINITY;
}

/* Keeps a row's best run. A run in which a thread was off CPU is run again,
 * a bounded number of times, in case the other load was passing. */
static void measure(row *r)
{
	for (int attempt = 0; attempt <= PREEMPTED_RETRIES; attempt++) {
		double share;
		double ns = run_row(r, r->iters, &share);
		if (ns < r->out->ns) {
			r->out->ns = ns;
			r->out->cpu_share = share;
		}
		if (share >= CPU_SHARE_RELIABLE)
			break;
	}
	r->out->iters = r->iters;
	r->out->measured = true;
}

static bench_kernel_fn floor_kernel(enum floor_op op)
{
	switch (op) {
	case FLOOR_EMPTY:
		return bench_floor_empty;
	case FLOOR_CLOCK:
		return bench_floor_clock;
	case FLOOR_CLOCK_STORE:
		return bench_floor_clock_store;
	case FLOOR_RDTSC:
		return bench_floor_rdtsc;
	case FLOOR_RDTSC_STORE:
		return bench_floor_rdtsc_store;
	default:
		return NULL;
	}
}

/*
 * Calibrates every row, then runs the rows round-robin, cfg->reps times:
 * a slow spell of the machine then costs one run of many rows instead of
 * every run of one row, and the minimum filters it out.
 */
static void measure_all(const bench_config *cfg)
{
	row rows[MAX_ROWS];
	size_t nrows = 0;

	paths_detect(cfg);
	for (int f = 0; f < FLOOR_COUNT; f++) {
		bench_kernel_fn fn = floor_kernel((enum floor_op)f);
		for (int t = 1; fn && t <= MAX_THREADS; t++)
			rows[nrows++] =
			    (row){.fn = fn, .threads = t, .out = &floor_results[f][t - 1]};
	}
	for (int rec = 0; rec < REC_COUNT; rec++)
		for (int ev = 0; ev < EVENT_COUNT; ev++)
			for (int t = 1; t <= MAX_THREADS; t++)
				for (int p = 0; p < BENCH_PATH_COUNT; p++) {
					if (!paths[p].available)
						continue;
					rows[nrows++] =
					    (row){.rec = &recorder_specs[rec],
					          .ev = &event_specs[ev],
					          .path = (enum bench_path)p,
					          .fn = event_specs[ev].fn,
					          .threads = t,
					          .out = &event_results[p][rec][ev][t - 1]};
				}

	for (size_t i = 0; i < nrows; i++)
		calibrate(cfg, &rows[i]);
	for (int rep = 0; rep < cfg->reps; rep++)
		for (size_t i = 0; i < nrows; i++)
			measure(&rows[i]);
}

/* ---- figures ------------------------------------------------------------- */

/* The clock-plus-store floor of a path, or NAN. */
static double path_floor(int path, int threads)
{
	const result *f = &floor_results[path_specs[path].floor][threads - 1];
	return f->measured ? f->ns : NAN;
}

static const result *event_result(int path, int rec, int ev, int threads)
{
	return &event_results[path][rec][ev][threads - 1];
}

/* A row's figure, NAN when its path was skipped. */
static double event_ns(int path, int rec, int ev, int threads)
{
	const result *r = event_result(path, rec, ev, threads);
	return r->measured ? r->ns : NAN;
}

static double over_floor(int path, int rec, int ev, int threads)
{
	if (ev == EVENT_DISABLED)
		return NAN;
	return event_ns(path, rec, ev, threads) / path_floor(path, threads);
}

static double over_one_thread(int path, int rec, int ev)
{
	return event_ns(path, rec, ev, 2) / event_ns(path, rec, ev, 1);
}

static double mega_per_second(double ns, int threads)
{
	return threads * 1e3 / ns;
}

typedef struct target {
	char name[96];
	enum bench_path path;
	double value;
	double limit;
	const char *unit;
	double floor_ratio; /* 2-thread targets: the same ratio for the floor */
	double at_least;    /* a lower bound instead of limit (NAN: none) */
} target;

#define TARGETS_PER_RECORDER (7 + EVENT_COUNT)
#define MAX_TARGETS (BENCH_PATH_COUNT * (REC_COUNT * TARGETS_PER_RECORDER + 3) + 1)

/* How much the machine alone slows a loop down when two threads run it. */
static double floor_two_threads_over_one(int path, enum event_kind ev)
{
	enum floor_op op = ev == EVENT_DISABLED ? FLOOR_EMPTY : path_specs[path].floor;
	return floor_results[op][1].ns / floor_results[op][0].ns;
}

static target *target_add(target *t, int path, double value, double limit, const char *unit)
{
	t->path = (enum bench_path)path;
	t->value = value;
	t->limit = limit;
	t->unit = unit;
	t->floor_ratio = NAN;
	t->at_least = NAN;
	return t;
}

/* The bytes per entry or exit of an instrumented call (measured once). */
static double call_bytes = NAN;

/* The first measured path: targets measured once go with it. */
static int first_path(void)
{
	for (int p = 0; p < BENCH_PATH_COUNT; p++)
		if (paths[p].available)
			return p;
	return BENCH_PATH_VDSO;
}

/* The targets of every measured path: per recorder, then systrace's. */
static size_t collect_targets(target *out)
{
	size_t n = 0;
	for (int p = 0; p < BENCH_PATH_COUNT; p++) {
		if (!paths[p].available)
			continue;
		for (int rec = 0; rec < REC_COUNT; rec++) {
			const char *name = recorder_specs[rec].key;
			target *t;
			t = target_add(&out[n++], p, event_ns(p, rec, EVENT_DISABLED, 1),
			               TARGET_DISABLED_NS, "ns");
			snprintf(t->name, sizeof t->name, "disabled macro, %s, 1 thread", name);
			static const int single[] = {EVENT_BEGIN_END, EVENT_COUNTER};
			for (size_t i = 0; i < sizeof single / sizeof single[0]; i++) {
				t = target_add(&out[n++], p, over_floor(p, rec, single[i], 1),
				               TARGET_EVENT_OVER_FLOOR, "x");
				snprintf(t->name, sizeof t->name, "%s, %s, 1 thread / floor",
				         event_specs[single[i]].label, name);
			}
			double plain = event_ns(p, rec, EVENT_BEGIN_END, 1);
			t = target_add(&out[n++], p, event_ns(p, rec, EVENT_FRAME, 1) / plain,
			               TARGET_FRAME_OVER_BEGIN_END, "x");
			snprintf(t->name, sizeof t->name, "frame begin+end / begin+end, %s", name);
			t = target_add(&out[n++], p, event_ns(p, rec, EVENT_LOOPER, 1) / plain,
			               TARGET_LOOPER_OVER_BEGIN_END, "x");
			snprintf(t->name, sizeof t->name, "looper dispatch / two plain events, %s",
			         name);
			if (rec == REC_RING) {
				double call = event_ns(p, rec, EVENT_CALL, 1);
				t = target_add(&out[n++], p, call / plain, TARGET_CALL_OVER_BEGIN_END,
				               "x");
				snprintf(t->name, sizeof t->name,
				         "instrumented call / begin+end, %s", name);
				t = target_add(&out[n++], p, event_ns(p, rec, EVENT_FILTERED, 1) / call,
				               TARGET_FILTERED_OVER_CALL, "x");
				snprintf(t->name, sizeof t->name,
				         "filtered call / instrumented call, %s", name);
			}
			for (int ev = 0; ev < EVENT_COUNT; ev++) {
				t = target_add(&out[n++], p, over_one_thread(p, rec, ev),
				               TARGET_TWO_THREADS_OVER_ONE, "x");
				t->floor_ratio = floor_two_threads_over_one(p, (enum event_kind)ev);
				snprintf(t->name, sizeof t->name, "%s, %s, 2 threads / 1 thread",
				         event_specs[ev].label, name);
			}
		}
		if (p == first_path()) {
			target *t = target_add(&out[n++], p, call_bytes, TARGET_CALL_BYTES_PER_EVENT,
			                       "B");
			snprintf(t->name, sizeof t->name, "instrumented call, bytes per entry or exit");
		}
		target *u = target_add(&out[n++], p, bench_uftrace_over_ours((enum bench_path)p), 0,
		                       "x");
		u->at_least = TARGET_UFTRACE_OVER_CALL;
		snprintf(u->name, sizeof u->name, "uftrace record / instrumented call (same loop)");
		double on = bench_systrace_on_over_raw((enum bench_path)p);
		double off = bench_systrace_off_over_clock((enum bench_path)p);
		if (!isnan(on)) {
			target *t = target_add(&out[n++], p, on, TARGET_SYSTRACE_ON_OVER_RAW, "x");
			snprintf(t->name, sizeof t->name, "systrace on / raw write(2)");
		}
		if (!isnan(off)) {
			target *t =
			    target_add(&out[n++], p, off, TARGET_SYSTRACE_OFF_OVER_CLOCK, "x");
			snprintf(t->name, sizeof t->name, "systrace off / library clock read");
		}
	}
	return n;
}

static bool target_met(const target *t)
{
	if (!isnan(t->at_least))
		return !isnan(t->value) && t->value >= t->at_least;
	return !isnan(t->value) && t->value <= t->limit;
}

/* ---- output -------------------------------------------------------------- */

static void print_number(double v, int width, int decimals)
{
	if (isnan(v) || isinf(v))
		printf(" %*s", width, "-");
	else
		printf(" %*.*f", width, decimals, v);
}

static void print_cpu_share(const result *r, unsigned *preempted)
{
	bool reliable = r->cpu_share >= CPU_SHARE_RELIABLE;
	printf(" %4.0f%s", 100 * r->cpu_share, reliable ? " " : "*");
	*preempted += !reliable;
}

/* Calls fn for every event row in table order: by recorder, event and
 * thread count, the paths side by side. */
static void for_each_event_row(void (*fn)(int path, int rec, int ev, int threads, void *ctx),
                               void *ctx)
{
	for (int rec = 0; rec < REC_COUNT; rec++)
		for (int ev = 0; ev < EVENT_COUNT; ev++)
			for (int t = 1; t <= MAX_THREADS; t++)
				for (int p = 0; p < BENCH_PATH_COUNT; p++)
					fn(p, rec, ev, t, ctx);
}

/* ctx: the count of preempted rows, incremented. */
static void print_event_row(int path, int rec, int ev, int threads, void *ctx)
{
	const result *r = event_result(path, rec, ev, threads);
	printf("%-8s %-17s %3d %-5s", recorder_specs[rec].key, event_specs[ev].label, threads,
	       path_specs[path].label);
	if (!r->measured) {
		printf(" %9s\n", "skipped");
		return;
	}
	print_number(r->ns, 9, 2);
	print_number(mega_per_second(r->ns, threads), 9, 1);
	print_number(event_specs[ev].pairs ? 2 * r->ns : NAN, 8, 2);
	print_number(over_floor(path, rec, ev, threads), 7, 2);
	print_number(threads > 1 ? over_one_thread(path, rec, ev) : NAN, 8, 2);
	print_cpu_share(r, ctx);
	printf("%12llu %8llu %11llu\n", (unsigned long long)r->written,
	       (unsigned long long)r->dropped, (unsigned long long)r->overwritten);
}

/* ctx: the sum of dropped events. */
static void add_dropped(int path, int rec, int ev, int threads, void *ctx)
{
	*(uint64_t *)ctx += event_result(path, rec, ev, threads)->dropped;
}

static void print_table(const bench_config *cfg, unsigned *preempted)
{
	printf("timeline-bench %d.%d.%d: best of %d runs of ~%.0f ms per row; nothing pinned\n",
	       TIMELINE_VERSION_MAJOR, TIMELINE_VERSION_MINOR, TIMELINE_VERSION_PATCH, cfg->reps,
	       cfg->run_ns / 1e6);
	printf("clock paths (every event row runs on each; \"x floor\" divides by its path's "
	       "floor):\n");
	for (int p = 0; p < BENCH_PATH_COUNT; p++) {
		printf("  %-5s %s floor", path_specs[p].label,
		       floor_specs[path_specs[p].floor].label);
		if (paths[p].available)
			printf(": measured\n");
		else
			printf(": skipped: %s\n", paths[p].skip_reason);
	}
	printf("  tl_init with the default options takes the %s path on this machine\n",
	       path_specs[library_default_tsc ? BENCH_PATH_TSC : BENCH_PATH_VDSO].label);
	printf("ns are per thread (the slower one); M/s counts every thread; cpu%% is the\n"
	       "on-CPU share of the least scheduled thread in the best run\n\n");

	printf("%-28s %3s %9s %9s %8s %5s\n", "floor", "thr", "ns/op", "M op/s", "x 1 thr", "cpu%");
	for (int f = 0; f < FLOOR_COUNT; f++)
		for (int t = 1; t <= MAX_THREADS; t++) {
			const result *r = &floor_results[f][t - 1];
			printf("%-28s %3d", floor_specs[f].label, t);
			if (!r->measured) {
				printf(" %9s\n", "n/a");
				continue;
			}
			print_number(r->ns, 9, 2);
			print_number(mega_per_second(r->ns, t), 9, 1);
			print_number(t > 1 ? r->ns / floor_results[f][0].ns : NAN, 8, 2);
			print_cpu_share(r, preempted);
			printf("\n");
		}

	printf("\n%-8s %-17s %3s %-5s %9s %9s %8s %7s %8s %5s %12s %8s %11s\n", "recorder", "event",
	       "thr", "clock", "ns/event", "M ev/s", "ns/pair", "x floor", "x 1 thr", "cpu%",
	       "written", "dropped", "overwritten");
	for_each_event_row(print_event_row, preempted);
	printf("\n");
}

/* The targets, path by path, then the warnings about the figures. */
static void print_targets(const target *targets, size_t ntargets, unsigned preempted)
{
	printf("%-50s %-5s %10s %10s  %-6s %s\n", "target", "clock", "measured", "limit", "result",
	       "floor 2/1 thr");
	unsigned missed = 0;
	for (size_t i = 0; i < ntargets; i++) {
		const target *t = &targets[i];
		char value[32], limit[32];
		snprintf(value, sizeof value, "%.2f %s", t->value, t->unit);
		if (!isnan(t->at_least))
			snprintf(limit, sizeof limit, ">= %.2f %s", t->at_least, t->unit);
		else
			snprintf(limit, sizeof limit, "<= %.2f %s", t->limit, t->unit);
		printf("%-50s %-5s %10s %10s  %-6s", t->name, path_specs[t->path].label, value,
		       limit, target_met(t) ? "PASS" : "MISS");
		if (!isnan(t->floor_ratio))
			printf(" %.2f x", t->floor_ratio);
		printf("\n");
		missed += !target_met(t);
	}
	for (int p = 0; p < BENCH_PATH_COUNT; p++)
		if (!paths[p].available)
			printf("%s path targets skipped: %s\n", path_specs[p].label,
			       paths[p].skip_reason);
	printf("%u of %zu targets met (informational)\n", (unsigned)(ntargets - missed), ntargets);

	uint64_t dropped = 0;
	for_each_event_row(add_dropped, &dropped);
	if (dropped)
		printf("warning: %llu events were dropped: those rows partly measure dropping\n",
		       (unsigned long long)dropped);
	if (preempted)
		printf("warning: in %u rows marked *, a thread was off CPU for over %.0f%% of its "
		       "run\n(other load, or blocked): rerun on a quiet machine before trusting "
		       "them\n",
		       preempted, 100 * (1 - CPU_SHARE_RELIABLE));
	printf("\n");
}

static void json_number(const char *key, double v)
{
	if (isnan(v) || isinf(v))
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%.3f", key, v);
}

static void json_count(const char *key, bool known, uint64_t v)
{
	if (known)
		printf(",\"%s\":%llu", key, (unsigned long long)v);
	else
		printf(",\"%s\":null", key);
}

/* ctx: true before the first row. A row of a skipped path has nulls. */
static void json_event_row(int path, int rec, int ev, int threads, void *ctx)
{
	bool *first = ctx;
	const result *r = event_result(path, rec, ev, threads);
	double ns = event_ns(path, rec, ev, threads);
	printf("%s{\"recorder\":\"%s\",\"event\":\"%s\",\"path\":\"%s\",\"threads\":%d",
	       *first ? "" : ",", recorder_specs[rec].key, event_specs[ev].key,
	       path_specs[path].key, threads);
	json_number("ns_per_event", ns);
	json_number("events_per_sec", mega_per_second(ns, threads) * 1e6);
	json_number("ns_per_pair", event_specs[ev].pairs ? 2 * ns : NAN);
	json_number("over_floor", over_floor(path, rec, ev, threads));
	json_number("over_one_thread", threads > 1 ? over_one_thread(path, rec, ev) : NAN);
	json_number("cpu_share", r->measured ? r->cpu_share : NAN);
	json_count("iterations", r->measured, r->iters);
	json_count("written", r->measured, r->written);
	json_count("dropped", r->measured, r->dropped);
	json_count("overwritten", r->measured, r->overwritten);
	printf("}");
	*first = false;
}

/* A string from this program or the kernel (a clocksource name): printed as
 * a JSON string, with anything that would need escaping replaced. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++)
		putchar(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ? '?' : *s);
	putchar('"');
}

static void print_json(const bench_config *cfg, const target *targets, size_t ntargets,
                       double seconds)
{
	printf("{\"benchmark\":\"timeline-bench\",\"version\":\"%d.%d.%d\",\"reps\":%d",
	       TIMELINE_VERSION_MAJOR, TIMELINE_VERSION_MINOR, TIMELINE_VERSION_PATCH, cfg->reps);
	json_number("run_ms", cfg->run_ns / 1e6);
	json_number("seconds", seconds);
	printf(",\"clock\":\"%s\",\"events_per_iteration\":%d,\"paths\":[",
	       library_default_tsc ? "tsc" : "clock_gettime", BENCH_EVENTS_PER_ITER);
	for (int p = 0; p < BENCH_PATH_COUNT; p++) {
		printf("%s{\"path\":\"%s\",\"floor\":\"%s\",\"measured\":%s,\"skipped\":",
		       p ? "," : "", path_specs[p].key, floor_specs[path_specs[p].floor].key,
		       paths[p].available ? "true" : "false");
		if (paths[p].available)
			printf("null}");
		else {
			json_string(paths[p].skip_reason);
			printf("}");
		}
	}
	printf("],\"floors\":[");
	bool first = true;
	for (int f = 0; f < FLOOR_COUNT; f++)
		for (int t = 1; t <= MAX_THREADS; t++) {
			const result *r = &floor_results[f][t - 1];
			printf("%s{\"op\":\"%s\",\"threads\":%d", first ? "" : ",",
			       floor_specs[f].key, t);
			json_number("ns_per_op", r->measured ? r->ns : NAN);
			json_number("cpu_share", r->measured ? r->cpu_share : NAN);
			printf("}");
			first = false;
		}
	printf("],\"events\":[");
	first = true;
	for_each_event_row(json_event_row, &first);
	printf("],\"targets\":[");
	for (size_t i = 0; i < ntargets; i++) {
		printf("%s{\"name\":\"%s\",\"path\":\"%s\"", i ? "," : "", targets[i].name,
		       path_specs[targets[i].path].key);
		json_number("value", targets[i].value);
		json_number("limit", isnan(targets[i].at_least) ? targets[i].limit : NAN);
		json_number("at_least", targets[i].at_least);
		json_number("floor_ratio", targets[i].floor_ratio);
		printf(",\"unit\":\"%s\",\"met\":%s}", targets[i].unit,
		       target_met(&targets[i]) ? "true" : "false");
	}
	printf("]");
	bench_systrace_print_json();
	bench_uftrace_print_json();
	printf("}\n");
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: timeline-bench [--quick] [--json-only] [--no-tsc]\n"
	        "       timeline-bench --callgrind-kernel KERNEL N\n"
	        "\n"
	        "Measures ns per event of the ring, endless and startup recorders with 1 and\n"
	        "2 threads, next to the floors (clock read, clock read + 32-byte store), the\n"
	        "instrumented calls of timeline::instrument (and, when uftrace is installed,\n"
	        "uftrace record on the same loop), and\n"
	        "of the systrace recorder next to raw write(2) and snprintf + write(2) on a\n"
	        "private tracefs instance (as root; skipped otherwise), on both of the\n"
	        "library's clock paths: the TSC (where the kernel's clocksource is the TSC;\n"
	        "skipped otherwise) and the vDSO clock_gettime (tl_options.no_tsc). Prints a\n"
	        "table and one JSON line. Exits 0 whatever the figures: the targets are\n"
	        "reported as PASS or MISS, never enforced.\n"
	        "\n"
	        "  --quick          3 runs of ~5 ms per row instead of 7 of ~30 ms\n"
	        "  --json-only      print only the JSON line\n"
	        "  --no-tsc         measure the vDSO path only, as on a machine without a\n"
	        "                   usable TSC (the TSC rows are printed as skipped)\n"
	        "  --callgrind-kernel KERNEL N\n"
	        "                   run one kernel for N events (a multiple of %d) and exit;\n"
	        "                   used by tests/bench/callgrind_counts.sh. KERNEL is one of:\n"
	        "                   ",
	        BENCH_EVENTS_PER_ITER);
	bench_callgrind_list(out);
	fprintf(out,
	        "\nTIMELINE_RECORDER, TIMELINE_BUFFER_KB and TIMELINE_CATEGORIES are ignored:\n"
	        "every row chooses its recorder and categories itself. TIMELINE_NO_TSC=1 is\n"
	        "honoured: the library then reads the clock through the vDSO, as on a machine\n"
	        "without a usable TSC.\n");
}

static void ignore_environment(void)
{
	unsetenv("TIMELINE_RECORDER");
	unsetenv("TIMELINE_BUFFER_KB");
	unsetenv("TIMELINE_CATEGORIES");
}

int main(int argc, char **argv)
{
	bench_config cfg = {.reps = 7, .run_ns = 30e6, .json_only = false, .no_tsc = false};
	double start_ns = clock_ns(CLOCK_MONOTONIC);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			cfg.reps = 3;
			cfg.run_ns = 5e6;
		} else if (strcmp(argv[i], "--json-only") == 0) {
			cfg.json_only = true;
		} else if (strcmp(argv[i], "--no-tsc") == 0) {
			cfg.no_tsc = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--callgrind-kernel") == 0) {
			if (i + 3 != argc) {
				fprintf(stderr,
				        "timeline-bench: --callgrind-kernel takes KERNEL and "
				        "N, and comes last\n");
				return 2;
			}
			ignore_environment();
			return bench_callgrind_main(argv[i + 1], argv[i + 2]);
		} else {
			fprintf(stderr, "timeline-bench: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	ignore_environment();

	measure_all(&cfg);
	bench_systrace_measure(cfg.reps, cfg.run_ns);
	call_bytes = bench_instrument_bytes_per_event();
	bench_uftrace_measure(cfg.reps < 5 ? 5 : cfg.reps);

	target targets[MAX_TARGETS];
	size_t ntargets = collect_targets(targets);
	double seconds = (clock_ns(CLOCK_MONOTONIC) - start_ns) / 1e9;
	if (!cfg.json_only) {
		unsigned preempted = 0;
		print_table(&cfg, &preempted);
		bench_systrace_print_table();
		bench_uftrace_print_table();
		print_targets(targets, ntargets, preempted);
		printf("measured in %.1f s\n\n", seconds);
	}
	print_json(&cfg, targets, ntargets, seconds);
	return 0;
}
