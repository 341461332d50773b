/*
 * Hand-built trace models for the exporter suites (test_export_json.c,
 * test_export_ftrace.c): a builder that appends events to a tl_model and
 * the output of one export. Included by those suites only; they define
 * PID, MAIN, WORKER and SNAPSHOT_NS before including it.
 */
#ifndef TIMELINE_TEST_MODEL_BUILDER_H
#define TIMELINE_TEST_MODEL_BUILDER_H

/* ---------------------------------------------------------------------------
 * A trace model built by hand
 * ------------------------------------------------------------------------- */

typedef struct builder {
	tl_model model;
	tl_model_event *events;
	size_t nevents;
	size_t cap;
	tl_model_thread threads[64];
	uint64_t seq;
	tl_model_arg **args; /* each event's TL_MAX_ARGS slots, freed with the builder */
	size_t nargs_blocks;
} builder;

static builder *builder_new(void)
{
	builder *b = calloc(1, sizeof *b);
	assert_non_null(b);
	b->model.pid = PID;
	b->model.process_name = "app";
	b->model.clock_id = 7;
	b->model.snapshot_ns = SNAPSHOT_NS;
	b->model.boottime_ns = SNAPSHOT_NS;
	b->model.monotonic_ns = SNAPSHOT_NS - 5;
	b->model.realtime_ns = 1700000000000000000LL;
	b->model.complete = 1;
	b->model.recorder = "ring";
	b->model.stats.struct_size = sizeof b->model.stats;
	b->model.stats.events_written = 42;
	b->model.stats.events_overwritten = 7;
	b->model.stats.buffer_bytes = 1048576;
	b->model.stats.threads = 3;
	b->model.stats.categories = 2;
	return b;
}

static void builder_free(builder *b)
{
	for (size_t i = 0; i < b->nargs_blocks; i++)
		free(b->args[i]);
	free(b->args);
	free(b->events);
	free(b);
}

/* The returned event is valid until the next add. */
static tl_model_event *add(builder *b, uint32_t tid, char phase, int64_t ts, const char *name)
{
	if (b->nevents == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->events = realloc(b->events, b->cap * sizeof *b->events);
		assert_non_null(b->events);
		b->args = realloc(b->args, b->cap * sizeof *b->args);
		assert_non_null(b->args);
	}
	tl_model_event *e = &b->events[b->nevents++];
	memset(e, 0, sizeof *e);
	e->args = calloc(TL_MAX_ARGS, sizeof *e->args); /* room for the suites' args */
	assert_non_null(e->args);
	b->args[b->nargs_blocks++] = e->args;
	e->tid = tid;
	e->phase = phase;
	e->ts_ns = ts;
	e->cat = "app";
	e->name = phase == TL_PHASE_END ? NULL : name;
	e->seq = (uint32_t)b->seq++;
	return e;
}

static void begin(builder *b, uint32_t tid, int64_t ts, const char *name)
{
	add(b, tid, TL_PHASE_BEGIN, ts, name);
}

static void end(builder *b, uint32_t tid, int64_t ts)
{
	add(b, tid, TL_PHASE_END, ts, NULL);
}

static void complete(builder *b, uint32_t tid, int64_t ts, int64_t end_ns, const char *name)
{
	add(b, tid, TL_PHASE_COMPLETE, ts, name)->end_ns = end_ns;
}

static void flow(builder *b, uint32_t tid, char phase, int64_t ts, const char *name, uint64_t id,
                 unsigned scope)
{
	tl_model_event *e = add(b, tid, phase, ts, name);
	e->id = id;
	e->scope = scope;
}

static void name_thread(builder *b, uint32_t tid, const char *name)
{
	tl_model_thread *t = &b->threads[b->model.nthreads++];
	t->tid = tid;
	t->name = name;
}

static int compare_event(const void *pa, const void *pb)
{
	const tl_model_event *a = pa, *b = pb;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Orders the events as a decoded model holds them: by (tid, seq). */
static const tl_model *finish(builder *b)
{
	if (b->nevents)
		qsort(b->events, b->nevents, sizeof *b->events, compare_event);
	b->model.events = b->events;
	b->model.nevents = b->nevents;
	b->model.threads = b->threads;
	return &b->model;
}

/* What one export wrote, read back. */
typedef struct output {
	char *text;
	const char *path;
	tl_export_counts counts;
} output;

#endif /* TIMELINE_TEST_MODEL_BUILDER_H */
