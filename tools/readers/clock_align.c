/*
 * Traces on one timeline (clock_align.h): a graph of clocks, and the
 * cheapest path from each trace's clock to the timeline's (Dijkstra, with a
 * heap: a trace may record many processes, each a node).
 */
#include "tools/readers/clock_align.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/slice_match.h"
#include "recorder/hash_map.h"

/* How far off each kind of link may be. */
#define VALUES_ERROR_NS 1000
#define PARENT_TS_ERROR_NS 5000
#define REALTIME_TS_ERROR_NS 1000000

#define NO_LINK SIZE_MAX
#define UNREACHED INT64_MAX

typedef enum link_kind {
	LINK_VALUES,      /* a trace's clock values: boot, mono, realtime */
	LINK_PROCESS,     /* an in-process trace records process pid */
	LINK_PARENT_TS,   /* a trace's parent_ts marker, written by process pid */
	LINK_REALTIME_TS, /* a trace's realtime_ts marker */
} link_kind;

/* Node b reads node a's value plus offset. */
typedef struct link {
	size_t a, b;
	int64_t offset;
	int64_t error;
	link_kind kind;
	size_t trace;
	uint32_t pid;
	size_t line;
} link;

typedef struct graph {
	const tl_align_trace *traces;
	size_t ntraces;
	uint32_t *procs; /* the process of each process node */
	size_t nprocs, procs_cap;
	tl_id_map proc_by_pid; /* index in procs */
	tl_id_map linked;      /* (trace, pid) of each LINK_PROCESS */
	struct tid_index {
		tl_id_map pid_by_tid;
		int made;
	} * tids; /* per trace with a model, made at first use */
	link *links;
	size_t nlinks, links_cap;
	size_t *adjacent; /* the links at each node, in order: at_node[n].. */
	size_t *at_node;  /* [node_count + 1] */
	int nomem;
	/* the last search */
	int64_t *dist;
	int64_t *offset; /* the timeline's clock = node + offset */
	size_t *via;     /* the link a node was reached by */
} graph;

static size_t node_count(const graph *g)
{
	return TL_ALIGN_CLOCKS + g->ntraces + g->nprocs;
}

/* The node of a trace's own clock. */
static size_t home(const graph *g, size_t trace)
{
	switch (g->traces[trace].clock) {
	case TL_TRACE_CLOCK_BOOT:
		return TL_ALIGN_BOOT;
	case TL_TRACE_CLOCK_MONO:
		return TL_ALIGN_MONO;
	default:
		return TL_ALIGN_CLOCKS + trace;
	}
}

static void *grow(graph *g, void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return array;
	size_t n = *cap ? *cap * 2 : 16;
	void *grown = realloc(array, n * elem);
	if (!grown) {
		g->nomem = 1;
		return NULL;
	}
	*cap = n;
	return grown;
}

/* The node of process pid's trace clock, made on first use. */
static size_t process_node(graph *g, uint32_t pid)
{
	int added;
	uint64_t *i = tl_id_map_add(&g->proc_by_pid, pid, g->nprocs, &added);
	if (!i) {
		g->nomem = 1;
		return NO_LINK;
	}
	if (added) {
		uint32_t *procs = grow(g, g->procs, &g->procs_cap, g->nprocs + 1, sizeof *procs);
		if (!procs)
			return NO_LINK;
		g->procs = procs;
		g->procs[g->nprocs++] = pid;
	}
	return TL_ALIGN_CLOCKS + g->ntraces + (size_t)*i;
}

static void add_link(graph *g, link l)
{
	if (l.a == NO_LINK || l.b == NO_LINK)
		return;
	link *links = grow(g, g->links, &g->links_cap, g->nlinks + 1, sizeof *links);
	if (!links)
		return;
	g->links = links;
	g->links[g->nlinks++] = l;
}

/* Whether an in-process trace records process pid (or a thread of it
 * with that tid, when tid is set). */
static int model_has(const tl_model *m, uint32_t pid, uint32_t tid, uint32_t *found_pid)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		uint32_t p = tl_model_thread_pid(m, &m->threads[i]);
		if (tid ? m->threads[i].tid == tid : p == pid) {
			*found_pid = p;
			return 1;
		}
	}
	for (size_t i = 0; i < m->nevents; i++) {
		uint32_t p = tl_model_event_pid(m, &m->events[i]);
		if (tid ? m->events[i].tid == tid : p == pid) {
			*found_pid = p;
			return 1;
		}
	}
	if (!tid && pid == m->pid) {
		*found_pid = pid;
		return 1;
	}
	return 0;
}

/* Trace i's model by tid (not 0): the pid of its first thread entry of
 * that tid, else of its first event (as model_has finds them). Made at
 * first use; NULL when memory ran out. */
static const tl_id_map *pid_of_tid(graph *g, size_t trace)
{
	if (!g->tids) {
		g->tids = calloc(g->ntraces, sizeof *g->tids);
		if (!g->tids) {
			g->nomem = 1;
			return NULL;
		}
	}
	tl_id_map *map = &g->tids[trace].pid_by_tid;
	const tl_model *m = g->traces[trace].model;
	if (g->tids[trace].made)
		return map;
	g->tids[trace].made = 1;
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i].tid &&
		    !tl_id_map_add(map, m->threads[i].tid, tl_model_thread_pid(m, &m->threads[i]),
		                   NULL))
			g->nomem = 1;
	}
	for (size_t i = 0; i < m->nevents; i++) {
		if (m->events[i].tid && !tl_id_map_add(map, m->events[i].tid,
		                                       tl_model_event_pid(m, &m->events[i]), NULL))
			g->nomem = 1;
	}
	return map;
}

/* The process that wrote a clock sync: the one the trace names, else the
 * one whose thread tid an in-process trace records, else tid itself (the
 * thread that starts a recorder is most often the main thread). */
static uint32_t writer_pid(graph *g, const tl_import_clock_sync *c)
{
	if (c->pid)
		return c->pid;
	uint32_t pid;
	for (size_t i = 0; i < g->ntraces; i++) {
		const tl_model *m = g->traces[i].model;
		if (!m)
			continue;
		if (!c->tid) {
			if (model_has(m, 0, 0, &pid))
				return pid;
			continue;
		}
		const tl_id_map *map = pid_of_tid(g, i);
		const uint64_t *found = map ? tl_id_map_get(map, c->tid) : NULL;
		if (found)
			return (uint32_t)*found;
	}
	return c->tid;
}

/* Links process pid's trace clock to the clock of the in-process trace
 * that records it, once. */
static void link_process(graph *g, size_t trace, uint32_t pid)
{
	int added;
	if (!pid || !tl_id_map_add(&g->linked, (uint64_t)trace << 32 | pid, 0, &added)) {
		if (pid)
			g->nomem = 1;
		return;
	}
	if (!added)
		return;
	add_link(g, (link){.a = home(g, trace),
	                   .b = process_node(g, pid),
	                   .kind = LINK_PROCESS,
	                   .trace = trace,
	                   .pid = pid});
}

/* Every process an in-process trace records. */
static void link_processes(graph *g, size_t trace, const tl_model *m)
{
	link_process(g, trace, m->pid);
	for (size_t i = 0; i < m->nthreads; i++)
		link_process(g, trace, tl_model_thread_pid(m, &m->threads[i]));
	for (size_t i = 0; i < m->nevents; i++)
		link_process(g, trace, tl_model_event_pid(m, &m->events[i]));
}

static void build(graph *g)
{
	for (size_t i = 0; i < g->ntraces; i++) {
		const tl_align_trace *t = &g->traces[i];
		const tl_clock_values *v = &t->values;
		if (v->known) {
			int64_t boot = v->boottime_ns; /* known: all three positive */
			add_link(g, (link){TL_ALIGN_BOOT, TL_ALIGN_MONO, v->monotonic_ns - boot,
			                   VALUES_ERROR_NS, LINK_VALUES, i, 0, 0});
			add_link(g, (link){TL_ALIGN_BOOT, TL_ALIGN_REALTIME, v->realtime_ns - boot,
			                   VALUES_ERROR_NS, LINK_VALUES, i, 0, 0});
		}
		if (t->model)
			link_processes(g, i, t->model);
	}
	for (size_t i = 0; i < g->ntraces; i++) {
		const tl_align_trace *t = &g->traces[i];
		for (size_t k = 0; k < t->nsyncs; k++) {
			const tl_import_clock_sync *c = &t->syncs[k];
			link l = {.a = home(g, i),
			          .offset = tl_span_ns(c->ts, c->value_ns),
			          .trace = i,
			          .line = c->line};
			if (c->kind == TL_CLOCK_SYNC_REALTIME_TS) {
				l.b = TL_ALIGN_REALTIME;
				l.error = REALTIME_TS_ERROR_NS;
				l.kind = LINK_REALTIME_TS;
			} else if (c->kind == TL_CLOCK_SYNC_PARENT_TS && c->value_ns != 0) {
				l.pid = writer_pid(g, c);
				l.b = process_node(g, l.pid);
				l.error = PARENT_TS_ERROR_NS;
				l.kind = LINK_PARENT_TS;
			} else {
				continue;
			}
			add_link(g, l);
		}
	}
}

/* The links at each node, in link order (a link between a node and
 * itself once): g->adjacent[g->at_node[n] .. g->at_node[n + 1]). */
static void list_adjacent(graph *g)
{
	size_t n = node_count(g);
	g->at_node = calloc(n + 1, sizeof *g->at_node);
	g->adjacent = calloc(2 * g->nlinks + 1, sizeof *g->adjacent);
	if (!g->at_node || !g->adjacent) {
		g->nomem = 1;
		return;
	}
	for (size_t k = 0; k < g->nlinks; k++) {
		g->at_node[g->links[k].a + 1]++;
		if (g->links[k].b != g->links[k].a)
			g->at_node[g->links[k].b + 1]++;
	}
	for (size_t i = 0; i < n; i++)
		g->at_node[i + 1] += g->at_node[i];
	size_t *fill = malloc((n + 1) * sizeof *fill);
	if (!fill) {
		g->nomem = 1;
		return;
	}
	memcpy(fill, g->at_node, (n + 1) * sizeof *fill);
	for (size_t k = 0; k < g->nlinks; k++) {
		g->adjacent[fill[g->links[k].a]++] = k;
		if (g->links[k].b != g->links[k].a)
			g->adjacent[fill[g->links[k].b]++] = k;
	}
	free(fill);
}

/* A node reached at a distance, waiting in search's heap. */
typedef struct reached {
	int64_t dist;
	size_t node;
} reached;

/* Whether a is taken before b: the nearer, the lower node among equals
 * (the node a scan in node order would take). */
static int reached_before(const reached *a, const reached *b)
{
	return a->dist != b->dist ? a->dist < b->dist : a->node < b->node;
}

static void heap_push(reached *heap, size_t *n, reached r)
{
	size_t i = (*n)++;
	while (i > 0 && reached_before(&r, &heap[(i - 1) / 2])) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = r;
}

static reached heap_pop(reached *heap, size_t *n)
{
	reached top = heap[0], last = heap[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && reached_before(&heap[c + 1], &heap[c]))
			c++;
		if (!reached_before(&heap[c], &last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (*n)
		heap[i] = last;
	return top;
}

/* Dijkstra from node `from`: the cheapest path, in summed bounds, to every node. */
static void search(graph *g, size_t from)
{
	size_t n = node_count(g);
	char *done = calloc(n, 1);
	/* each link lowers a node's distance at most once from each end */
	reached *heap = malloc((2 * g->nlinks + 1) * sizeof *heap);
	if (!done || !heap) {
		free(done);
		free(heap);
		g->nomem = 1;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		g->dist[i] = UNREACHED;
		g->via[i] = NO_LINK;
	}
	g->dist[from] = 0;
	g->offset[from] = 0;
	size_t nheap = 0;
	heap_push(heap, &nheap, (reached){0, from});
	while (nheap) {
		reached r = heap_pop(heap, &nheap);
		size_t u = r.node;
		if (done[u] || r.dist != g->dist[u])
			continue; /* reached again, nearer */
		done[u] = 1;
		for (size_t j = g->at_node[u]; j < g->at_node[u + 1]; j++) {
			size_t k = g->adjacent[j];
			const link *l = &g->links[k];
			size_t v;
			int64_t offset;
			/* b = a + offset, and timeline = node + its offset */
			if (l->a == u) {
				v = l->b;
				offset = tl_span_ns(l->offset, g->offset[u]);
			} else {
				v = l->a;
				offset = tl_add_ns(g->offset[u], l->offset);
			}
			if (!done[v] && g->dist[u] + l->error < g->dist[v]) {
				g->dist[v] = g->dist[u] + l->error;
				g->offset[v] = offset;
				g->via[v] = k;
				heap_push(heap, &nheap, (reached){g->dist[v], v});
			}
		}
	}
	free(done);
	free(heap);
}

static int all_reached(const graph *g)
{
	for (size_t i = 0; i < g->ntraces; i++) {
		if (g->dist[home(g, i)] == UNREACHED)
			return 0;
	}
	return 1;
}

/* Appends to buf[0..size), always NUL-terminated. */
static void append(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	if (len + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

static void describe_link(const graph *g, const link *l, char *buf, size_t size)
{
	const char *name = g->traces[l->trace].name;
	switch (l->kind) {
	case LINK_VALUES:
		append(buf, size, "the clock values of %s", name);
		break;
	case LINK_PROCESS:
		append(buf, size, "%s, which records process %u", name, (unsigned)l->pid);
		break;
	case LINK_PARENT_TS:
		append(buf, size, "the parent_ts marker of process %u (%s, line %zu)",
		       (unsigned)l->pid, name, l->line);
		break;
	case LINK_REALTIME_TS:
		append(buf, size, "the realtime_ts marker (%s, line %zu), to the millisecond", name,
		       l->line);
		break;
	}
}

/* How trace i's clock reaches the timeline: the links from its node on. */
static void describe_path(const graph *g, size_t trace, char *buf, size_t size)
{
	buf[0] = '\0';
	size_t node = home(g, trace);
	if (g->via[node] == NO_LINK) {
		append(buf, size, "as is");
		return;
	}
	append(buf, size, "through ");
	for (int first = 1; g->via[node] != NO_LINK; first = 0) {
		const link *l = &g->links[g->via[node]];
		if (!first)
			append(buf, size, ", then ");
		describe_link(g, l, buf, size);
		node = l->a == node ? l->b : l->a;
	}
}

static const char *clock_word(tl_trace_clock clock)
{
	return clock == TL_TRACE_CLOCK_BOOT ? "boot" : "mono";
}

/* What a trace says about its clock, and what it lacks, for a refusal. */
static void describe_trace(graph *g, size_t trace, char *buf, size_t size)
{
	const tl_align_trace *t = &g->traces[trace];
	if (t->clock != TL_TRACE_CLOCK_UNKNOWN)
		append(buf, size, "%s is on the %s clock", t->name, clock_word(t->clock));
	else
		append(buf, size, "%s names no clock", t->name);
	append(buf, size,
	       t->values.known ? ", gives boot, mono and realtime at one instant"
	                       : ", gives no other clock");
	if (t->model)
		append(buf, size, ", records process %u", (unsigned)t->model->pid);
	size_t parent = 0, realtime = 0;
	for (size_t k = 0; k < t->nsyncs; k++) {
		const tl_import_clock_sync *c = &t->syncs[k];
		if (c->kind == TL_CLOCK_SYNC_REALTIME_TS) {
			realtime++;
		} else if (c->kind == TL_CLOCK_SYNC_PARENT_TS && c->value_ns != 0 && !parent++) {
			uint32_t pid = writer_pid(g, c), found;
			int recorded = 0;
			for (size_t i = 0; i < g->ntraces && !recorded; i++)
				recorded = g->traces[i].model && i != trace &&
				           model_has(g->traces[i].model, pid, 0, &found);
			append(buf, size, ", has a parent_ts clock sync marker of process %u%s",
			       (unsigned)pid,
			       recorded ? "" : " (no other input records that process)");
		}
	}
	if (realtime)
		append(buf, size, "%s",
		       parent ? " and a realtime_ts one" : ", has a realtime_ts clock sync marker");
	else if (!parent && !t->model)
		append(buf, size, ", has no trace_event_clock_sync marker");
}

static void graph_free(graph *g)
{
	free(g->procs);
	tl_id_map_free(&g->proc_by_pid);
	tl_id_map_free(&g->linked);
	for (size_t i = 0; g->tids && i < g->ntraces; i++)
		tl_id_map_free(&g->tids[i].pid_by_tid);
	free(g->tids);
	free(g->adjacent);
	free(g->at_node);
	free(g->links);
	free(g->dist);
	free(g->offset);
	free(g->via);
}

int tl_clock_align(const tl_align_trace *traces, size_t n, tl_align_result *out,
                   tl_align_timeline *timeline, char *why, size_t whylen)
{
	graph g = {.traces = traces, .ntraces = n};
	build(&g);
	if (!g.nomem)
		list_adjacent(&g);
	size_t nodes = node_count(&g);
	g.dist = calloc(nodes, sizeof *g.dist);
	g.offset = calloc(nodes, sizeof *g.offset);
	g.via = calloc(nodes, sizeof *g.via);
	if (g.nomem || !g.dist || !g.offset || !g.via) {
		graph_free(&g);
		return -ENOMEM;
	}

	size_t candidates[] = {home(&g, 0), TL_ALIGN_BOOT, TL_ALIGN_MONO, home(&g, 0)};
	size_t first = traces[0].clock == TL_TRACE_CLOCK_UNKNOWN ? 1 : 0;
	size_t target = NO_LINK;
	for (size_t c = first; c < sizeof candidates / sizeof candidates[0]; c++) {
		search(&g, candidates[c]);
		if (g.nomem)
			break;
		if (all_reached(&g)) {
			target = candidates[c];
			break;
		}
	}
	if (g.nomem) {
		graph_free(&g);
		return -ENOMEM;
	}
	if (target == NO_LINK) {
		/* the last search started from the first trace's clock */
		size_t apart = 1;
		while (apart < n && g.dist[home(&g, apart)] != UNREACHED)
			apart++;
		if (why && whylen) {
			why[0] = '\0';
			append(why, whylen, "cannot align %s with %s: ", traces[apart].name,
			       traces[0].name);
			describe_trace(&g, apart, why, whylen);
			append(why, whylen, "; ");
			describe_trace(&g, 0, why, whylen);
		}
		graph_free(&g);
		return -EDOM;
	}

	for (size_t i = 0; i < n; i++) {
		size_t node = home(&g, i);
		out[i].offset_ns = g.offset[node];
		out[i].error_ns = g.dist[node];
		describe_path(&g, i, out[i].how, sizeof out[i].how);
	}
	timeline->clock = target == TL_ALIGN_BOOT   ? TL_TRACE_CLOCK_BOOT
	                  : target == TL_ALIGN_MONO ? TL_TRACE_CLOCK_MONO
	                                            : TL_TRACE_CLOCK_UNKNOWN;
	for (size_t k = 0; k < TL_ALIGN_CLOCKS; k++) {
		timeline->known[k] = g.dist[k] != UNREACHED;
		timeline->to_clock_ns[k] = timeline->known[k] ? -g.offset[k] : 0;
	}
	graph_free(&g);
	return 0;
}
