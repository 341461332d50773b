/*
 * A small simulated game engine instrumented with the TRACE_EVENT macros:
 *
 *   main thread   a "vsync" instant, "frame" > "update" > "physics" and
 *                 "submit_job" (flow out), "frame" > "render" > "present"
 *                 (a complete event); counters "queue_depth", "memory_kb",
 *                 "loads_in_flight"; "input" and "gc" instants; async asset
 *                 and level loads begun here
 *   worker-N      one slice per job (flow in) with nested slices of varying
 *                 length; loads mark a step and end their async slice here;
 *                 level loads show a copied name ("load level 3"); the last
 *                 worker's name is longer than the kernel's 15-byte comm
 *                 (DEMO_ENGINE_LONG_THREAD_NAME), so a capture shows whether
 *                 the full name or the kernel's cut one reached the trace
 *
 * Work is simulated with real time: short spans spin, longer ones sleep, so
 * slices have true durations without keeping four cores busy.
 */
#include "tools/demo_engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <timeline/trace_event.h>

#define DEMO_QUEUE_CAPACITY 256
#define DEMO_FRAME_NS (1000000000LL / DEMO_ENGINE_FPS)

/* Memory model: grows every frame, a collection brings it back down. */
#define DEMO_MEMORY_START_KB (32 * 1024)
#define DEMO_MEMORY_GC_KB (48 * 1024)

enum demo_job_kind {
	DEMO_JOB_ANIMATE,
	DEMO_JOB_CULL,
	DEMO_JOB_BUILD_MESH,
	DEMO_JOB_DECODE_AUDIO,
	DEMO_JOB_LOAD_ASSET,
	DEMO_JOB_STREAM_LEVEL,
};

/* Slice names of the jobs: literals, so the recorder keeps the pointers. */
static const char *const demo_job_names[] = {
    [DEMO_JOB_ANIMATE] = "animate",       [DEMO_JOB_CULL] = "cull",
    [DEMO_JOB_BUILD_MESH] = "build_mesh", [DEMO_JOB_DECODE_AUDIO] = "decode_audio",
    [DEMO_JOB_LOAD_ASSET] = "load_asset", [DEMO_JOB_STREAM_LEVEL] = "stream_level",
};

static const char *const demo_assets[] = {
    "textures/rock_07.ktx", "meshes/tree_oak.mesh", "sounds/wind_loop.ogg",
    "textures/grass.ktx",   "meshes/house_02.mesh", "shaders/water.spv",
};

struct demo_job {
	enum demo_job_kind kind;
	uint64_t flow_id; /* links "submit_job" to the job's slice; never 0 */
	uint64_t frame;
	uint64_t load_id; /* async id of a load, 0 for other jobs */
	unsigned level;   /* DEMO_JOB_STREAM_LEVEL */
	const char *asset;
};

struct demo_engine;

struct demo_worker {
	struct demo_engine *engine;
	unsigned index;
	uint32_t rng;
	pthread_t thread;
};

struct demo_engine {
	pthread_mutex_t lock;
	pthread_cond_t job_ready;
	pthread_cond_t slot_free;
	struct demo_job queue[DEMO_QUEUE_CAPACITY]; /* under lock */
	unsigned head, count;                       /* under lock */
	bool stopping;                              /* under lock */
	int loads_in_flight;                        /* atomic */

	/* Main thread only. */
	uint32_t rng;
	uint64_t next_flow_id;
	uint64_t next_load_id;
	int64_t memory_kb;
	unsigned level;
	struct demo_engine_report report;

	struct demo_worker workers[DEMO_ENGINE_WORKERS];
};

/* ---- time and randomness ------------------------------------------------ */

static int64_t demo_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec demo_timespec(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
	return ts;
}

/* Takes `us` microseconds of wall time: sleeps most of it, spins the rest. */
static void demo_spend_us(unsigned us)
{
	int64_t until = demo_clock_ns() + (int64_t)us * 1000;
	if (us > 200) {
		struct timespec ts = demo_timespec(until - 100000);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (demo_clock_ns() < until)
		;
}

static uint32_t demo_random(uint32_t *state)
{
	uint32_t x = *state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static unsigned demo_between(uint32_t *state, unsigned lo, unsigned hi)
{
	return lo + demo_random(state) % (hi - lo + 1);
}

/* ---- the job queue -------------------------------------------------------- */

/* Queues a job, waiting while the queue is full. Returns the new depth. */
static unsigned demo_queue_push(struct demo_engine *e, const struct demo_job *job)
{
	pthread_mutex_lock(&e->lock);
	if (e->count == DEMO_QUEUE_CAPACITY) {
		TL_TRACE_EVENT0("jobs", "wait_for_workers");
		while (e->count == DEMO_QUEUE_CAPACITY)
			pthread_cond_wait(&e->slot_free, &e->lock);
	}
	e->queue[(e->head + e->count) % DEMO_QUEUE_CAPACITY] = *job;
	unsigned depth = ++e->count;
	pthread_cond_signal(&e->job_ready);
	pthread_mutex_unlock(&e->lock);
	return depth;
}

/* Takes the oldest job; false once the engine stops and the queue is empty. */
static bool demo_queue_pop(struct demo_engine *e, struct demo_job *out, unsigned *depth)
{
	pthread_mutex_lock(&e->lock);
	while (e->count == 0 && !e->stopping)
		pthread_cond_wait(&e->job_ready, &e->lock);
	bool got = e->count > 0;
	if (got) {
		*out = e->queue[e->head];
		e->head = (e->head + 1) % DEMO_QUEUE_CAPACITY;
		*depth = --e->count;
		pthread_cond_signal(&e->slot_free);
	}
	pthread_mutex_unlock(&e->lock);
	return got;
}

/* ---- workers -------------------------------------------------------------- */

static void demo_load_finished(struct demo_engine *e)
{
	int in_flight = __atomic_sub_fetch(&e->loads_in_flight, 1, __ATOMIC_RELAXED);
	TL_TRACE_EVENT_COUNTER("assets", "loads_in_flight", in_flight);
}

static void demo_read_file(struct demo_worker *w, const char *path, unsigned lo_us, unsigned hi_us)
{
	TL_TRACE_EVENT1("io", "read_file", "path", TL_STR_COPY(path));
	demo_spend_us(demo_between(&w->rng, lo_us, hi_us));
}

static void demo_load_asset(struct demo_worker *w, const struct demo_job *job)
{
	unsigned char staging[64];
	uint64_t bytes = (uint64_t)demo_between(&w->rng, 64, 4096) * 1024;

	demo_read_file(w, job->asset, 3000, 9000);
	TL_TRACE_EVENT_ASYNC_INSTANT1("assets", "asset_load", job->load_id, "step", "read");
	{
		TL_TRACE_EVENT1("io", "decompress", "bytes", bytes);
		demo_spend_us(demo_between(&w->rng, 1500, 5000));
	}
	{
		TL_TRACE_EVENT2("io", "upload", "bytes", bytes, "staging", (const void *)staging);
		demo_spend_us(demo_between(&w->rng, 500, 1500));
	}
	TL_TRACE_EVENT_ASYNC_END1("assets", "asset_load", job->load_id, "bytes", bytes);
	demo_load_finished(w->engine);
}

static void demo_stream_level(struct demo_worker *w, const struct demo_job *job)
{
	/* The name lives on this stack frame: the COPY form stores its bytes. */
	char name[32];
	char path[32];
	snprintf(name, sizeof name, "load level %u", job->level);
	snprintf(path, sizeof path, "levels/level_%02u.pak", job->level);

	TL_TRACE_EVENT_COPY_BEGIN0("assets", name);
	demo_read_file(w, path, 8000, 15000);
	{
		TL_TRACE_EVENT1("assets", "spawn_entities", "count",
		                (int)demo_between(&w->rng, 200, 900));
		demo_spend_us(demo_between(&w->rng, 4000, 8000));
	}
	TL_TRACE_EVENT_END0("assets", name);
	TL_TRACE_EVENT_ASYNC_END1("assets", "level_load", job->load_id, "level", job->level);
	demo_load_finished(w->engine);
}

/* Two nested steps of a routine job, each of a random length. */
static void demo_two_steps(struct demo_worker *w, const char *first, const char *second,
                           unsigned lo_us, unsigned hi_us)
{
	{
		TL_TRACE_EVENT0("jobs", first);
		demo_spend_us(demo_between(&w->rng, lo_us, hi_us));
	}
	{
		TL_TRACE_EVENT0("jobs", second);
		demo_spend_us(demo_between(&w->rng, lo_us, hi_us));
	}
}

static void demo_run_job(struct demo_worker *w, const struct demo_job *job)
{
	TL_TRACE_EVENT2("jobs", demo_job_names[job->kind], "job_id", job->flow_id, "frame",
	                job->frame);
	TL_TRACE_EVENT_FLOW_END0("jobs", "job", job->flow_id);

	switch (job->kind) {
	case DEMO_JOB_ANIMATE:
		for (int pass = 0; pass < 2; pass++) {
			TL_TRACE_EVENT1("jobs", "sample_curves", "bones", 64);
			demo_spend_us(demo_between(&w->rng, 150, 600));
		}
		demo_two_steps(w, "blend_poses", "skin", 200, 700);
		break;
	case DEMO_JOB_CULL:
		demo_two_steps(w, "frustum", "occlusion", 300, 1200);
		break;
	case DEMO_JOB_BUILD_MESH:
		demo_two_steps(w, "triangulate", "optimize", 1000, 3000);
		break;
	case DEMO_JOB_DECODE_AUDIO: {
		TL_TRACE_EVENT2("jobs", "decode", "channels", 2, "sample_rate", 48000);
		demo_spend_us(demo_between(&w->rng, 400, 1600));
		break;
	}
	case DEMO_JOB_LOAD_ASSET:
		demo_load_asset(w, job);
		break;
	case DEMO_JOB_STREAM_LEVEL:
		demo_stream_level(w, job);
		break;
	}
}

static void *demo_worker_main(void *arg)
{
	struct demo_worker *w = arg;
	char name[16];
	snprintf(name, sizeof name, "worker-%u", w->index + 1);
	tl_thread_set_name(w->index + 1 == DEMO_ENGINE_WORKERS ? DEMO_ENGINE_LONG_THREAD_NAME
	                                                       : name);

	struct demo_job job;
	unsigned depth;
	while (demo_queue_pop(w->engine, &job, &depth)) {
		TL_TRACE_EVENT_COUNTER("jobs", "queue_depth", depth);
		demo_run_job(w, &job);
	}
	return NULL;
}

/* ---- the main thread -------------------------------------------------------- */

static void demo_submit(struct demo_engine *e, struct demo_job *job)
{
	job->flow_id = ++e->next_flow_id;
	TL_TRACE_EVENT2("jobs", "submit_job", "job", demo_job_names[job->kind], "job_id",
	                job->flow_id);
	TL_TRACE_EVENT_FLOW_BEGIN0("jobs", "job", job->flow_id);
	unsigned depth = demo_queue_push(e, job);
	TL_TRACE_EVENT_COUNTER("jobs", "queue_depth", depth);
	e->report.jobs++;
}

static void demo_submit_kind(struct demo_engine *e, enum demo_job_kind kind, uint64_t frame)
{
	struct demo_job job = {.kind = kind, .frame = frame};
	demo_submit(e, &job);
}

/* Starts an async load on this thread; a worker ends it. */
static void demo_start_loads(struct demo_engine *e, uint64_t frame)
{
	if (frame % 20 == 2) {
		struct demo_job job = {.kind = DEMO_JOB_LOAD_ASSET, .frame = frame};
		job.asset = demo_assets[e->report.asset_loads %
		                        (sizeof demo_assets / sizeof demo_assets[0])];
		job.load_id = ++e->next_load_id;
		TL_TRACE_EVENT_ASYNC_BEGIN2("assets", "asset_load", job.load_id, "path",
		                            TL_STR_COPY(job.asset), "priority", "normal");
		int in_flight = __atomic_add_fetch(&e->loads_in_flight, 1, __ATOMIC_RELAXED);
		TL_TRACE_EVENT_COUNTER("assets", "loads_in_flight", in_flight);
		e->report.asset_loads++;
		demo_submit(e, &job);
	}
	if (frame % 90 == 3) {
		struct demo_job job = {.kind = DEMO_JOB_STREAM_LEVEL, .frame = frame};
		job.level = ++e->level;
		job.load_id = ++e->next_load_id;
		TL_TRACE_EVENT_ASYNC_BEGIN1("assets", "level_load", job.load_id, "level",
		                            job.level);
		int in_flight = __atomic_add_fetch(&e->loads_in_flight, 1, __ATOMIC_RELAXED);
		TL_TRACE_EVENT_COUNTER("assets", "loads_in_flight", in_flight);
		e->report.asset_loads++;
		demo_submit(e, &job);
	}
}

static void demo_update(struct demo_engine *e, uint64_t frame)
{
	int entities = 800 + (int)(frame % 240);
	TL_TRACE_EVENT1("engine", "update", "entities", entities);

	if (frame % 45 == 7)
		TL_TRACE_EVENT_INSTANT1("input", "input", TL_SCOPE_THREAD, "key", "space");
	demo_spend_us(demo_between(&e->rng, 500, 1500));
	{
		TL_TRACE_EVENT2("engine", "physics", "bodies", entities / 4, "substeps", 2u);
		demo_spend_us(demo_between(&e->rng, 800, 2500));
	}
	demo_start_loads(e, frame);
	demo_submit_kind(e, DEMO_JOB_ANIMATE, frame);
	demo_submit_kind(e, DEMO_JOB_CULL, frame);
	if (frame % 3 == 0)
		demo_submit_kind(e, DEMO_JOB_BUILD_MESH, frame);
	if (frame % 4 == 1)
		demo_submit_kind(e, DEMO_JOB_DECODE_AUDIO, frame);
}

static void demo_render(struct demo_engine *e, uint64_t frame)
{
	unsigned draw_calls = demo_between(&e->rng, 900, 1400);
	TL_TRACE_EVENT2("engine", "render", "draw_calls", draw_calls, "vsync", (bool)true);

	/* Now and then a shader compile blows the frame budget. */
	if (frame % 97 == 50) {
		TL_TRACE_EVENT1("engine", "compile_shaders", "shaders", 12);
		demo_spend_us(14000);
	}
	{
		TL_TRACE_EVENT0("engine", "record_commands");
		demo_spend_us(demo_between(&e->rng, 1500, 4000));
	}
	tl_timestamp start = tl_now();
	demo_spend_us(demo_between(&e->rng, 300, 900));
	TL_TRACE_EVENT_COMPLETE("engine", "present", start, tl_now());
}

static void demo_account_memory(struct demo_engine *e)
{
	e->memory_kb += demo_between(&e->rng, 40, 400);
	TL_TRACE_EVENT_COUNTER("memory", "memory_kb", e->memory_kb);
	if (e->memory_kb < DEMO_MEMORY_GC_KB)
		return;

	int64_t freed = e->memory_kb - DEMO_MEMORY_START_KB;
	TL_TRACE_EVENT_INSTANT1("memory", "gc", TL_SCOPE_GLOBAL, "freed_kb", freed);
	{
		TL_TRACE_EVENT0("memory", "collect_garbage");
		demo_spend_us(demo_between(&e->rng, 1000, 2500));
	}
	e->memory_kb = DEMO_MEMORY_START_KB;
	TL_TRACE_EVENT_COUNTER("memory", "memory_kb", e->memory_kb);
}

static void demo_frame(struct demo_engine *e, uint64_t frame)
{
	TL_TRACE_EVENT_INSTANT1("engine", "vsync", TL_SCOPE_PROCESS, "frame_number", frame);
	TL_TRACE_EVENT2("engine", "frame", "frame_number", frame, "budget_ms",
	                1000.0 / DEMO_ENGINE_FPS);
	demo_update(e, frame);
	demo_render(e, frame);
	demo_account_memory(e);
}

/* ---- lifetime ----------------------------------------------------------------- */

/* Lets the workers drain the queue, then joins the first `started`. */
static void demo_stop_workers(struct demo_engine *e, unsigned started)
{
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_cond_broadcast(&e->job_ready);
	pthread_mutex_unlock(&e->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(e->workers[i].thread, NULL);
}

/* Starts the workers with every signal blocked, so the main thread gets them. */
static int demo_start_workers(struct demo_engine *e, unsigned *started)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = 0;
	for (*started = 0; *started < DEMO_ENGINE_WORKERS; ++*started) {
		struct demo_worker *w = &e->workers[*started];
		w->engine = e;
		w->index = *started;
		w->rng = 0x9e3779b9u * (w->index + 1);
		rc = pthread_create(&w->thread, NULL, demo_worker_main, w);
		if (rc != 0)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

static void demo_main_loop(struct demo_engine *e, double seconds, const volatile sig_atomic_t *stop)
{
	int64_t start = demo_clock_ns();
	int64_t end = start + (int64_t)(seconds * 1e9);
	int64_t next = start;

	for (uint64_t frame = 1;; frame++) {
		int64_t begun = demo_clock_ns();
		if (begun >= end || (stop && *stop))
			break;
		demo_frame(e, frame);
		int64_t done = demo_clock_ns();
		e->report.frames++;
		if (done - begun > DEMO_FRAME_NS)
			e->report.slow_frames++;

		/* Wait for the next vsync; a late frame skips the ones it missed. */
		while (next <= done)
			next += DEMO_FRAME_NS;
		struct timespec ts = demo_timespec(next < end ? next : end);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	e->report.seconds = (double)(demo_clock_ns() - start) / 1e9;
}

int demo_engine_run(double seconds, const volatile sig_atomic_t *stop,
                    struct demo_engine_report *report)
{
	struct demo_engine *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->job_ready, NULL);
	pthread_cond_init(&e->slot_free, NULL);
	e->rng = 0x2545f491u;
	e->memory_kb = DEMO_MEMORY_START_KB;

	tl_thread_set_name("main");

	unsigned started;
	int rc = demo_start_workers(e, &started);
	if (rc == 0)
		demo_main_loop(e, seconds, stop);
	demo_stop_workers(e, started);
	e->report.workers = started;

	if (report)
		*report = e->report;
	pthread_cond_destroy(&e->slot_free);
	pthread_cond_destroy(&e->job_ready);
	pthread_mutex_destroy(&e->lock);
	free(e);
	return rc;
}
