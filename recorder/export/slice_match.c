#include "recorder/export/slice_match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* partner[] value of an END whose BEGIN was dropped for depth. */
#define TL_MATCH_DROPPED (SIZE_MAX - 1)

/* A COMPLETE event waiting to be merged into its thread's seq stream. */
typedef struct complete_ref {
	int64_t start_ns;
	int64_t end_ns;
	size_t event;
} complete_ref;

typedef struct matcher {
	const tl_model *model;
	tl_slice_match *out;
	/* Per event of the current thread (index - first): the matching BEGIN or
	 * END, TL_MATCH_NONE or TL_MATCH_DROPPED. */
	size_t *partner;
	size_t first;
	size_t *begins; /* pass 1 stack of BEGIN event indices */
	complete_ref *completes;
	size_t stack[TL_MATCH_MAX_DEPTH]; /* open slices, innermost last */
	size_t depth;
	size_t order;     /* next item order within the current thread */
	int64_t close_ns; /* where the thread's open slices end */
} matcher;

static int64_t max_i64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static void add_item(matcher *m, tl_match_item_kind kind, int64_t ts_ns, size_t ref)
{
	tl_match_item *item = &m->out->items[m->out->nitems++];
	item->ts_ns = ts_ns;
	item->ref = ref;
	item->order = m->order++;
	item->kind = kind;
}

static size_t new_slice(matcher *m, size_t event, int64_t start_ns, int64_t end_ns, unsigned flags)
{
	size_t index = m->out->nslices++;
	tl_slice *s = &m->out->slices[index];
	s->event = event;
	s->end_event = TL_MATCH_NONE;
	s->flow_event = TL_MATCH_NONE;
	s->parent = m->depth ? m->stack[m->depth - 1] : TL_MATCH_NONE;
	s->start_ns = start_ns;
	s->end_ns = max_i64(start_ns, end_ns);
	s->depth = (unsigned)m->depth;
	s->flags = flags;
	return index;
}

static void close_top(matcher *m)
{
	size_t index = m->stack[--m->depth];
	add_item(m, TL_ITEM_CLOSE, m->out->slices[index].end_ns, index);
}

/*
 * Closes the COMPLETE slices on top of the stack that ended before ts (or
 * at ts, unless inclusive). Slices from BEGIN stay until their END.
 */
static void close_ended(matcher *m, int64_t ts, int inclusive)
{
	while (m->depth) {
		const tl_slice *top = &m->out->slices[m->stack[m->depth - 1]];
		if (tl_match_stays_open(top->flags, top->end_ns, ts, inclusive))
			return;
		close_top(m);
	}
}

/* End of the slice a BEGIN opens, as matched in pass 1. */
static int64_t begin_end_ns(const matcher *m, size_t event)
{
	const tl_model_event *events = m->model->events;
	size_t end = m->partner[event - m->first];
	if (end == TL_MATCH_NONE || end == TL_MATCH_DROPPED)
		return max_i64(events[event].ts_ns, m->close_ns);
	return max_i64(events[event].ts_ns, events[end].ts_ns);
}

/* Whether a COMPLETE slice is processed before the seq-stream event. */
static int complete_goes_first(const matcher *m, const complete_ref *c, size_t event)
{
	const tl_model_event *e = &m->model->events[event];
	int first = tl_match_complete_first(c->start_ns, e->ts_ns, e->phase);
	return first >= 0 ? first : begin_end_ns(m, event) <= c->end_ns;
}

static void open_complete(matcher *m, const complete_ref *c)
{
	close_ended(m, c->start_ns, 0);
	if (m->depth == TL_MATCH_MAX_DEPTH) {
		m->out->too_deep++;
		return;
	}
	size_t index = new_slice(m, c->event, c->start_ns, c->end_ns, TL_SLICE_COMPLETE);
	m->stack[m->depth++] = index;
	add_item(m, TL_ITEM_OPEN, c->start_ns, index);
}

static void handle_begin(matcher *m, size_t event)
{
	int64_t ts = m->model->events[event].ts_ns;
	size_t end = m->partner[event - m->first];

	close_ended(m, ts, 0);
	if (m->depth == TL_MATCH_MAX_DEPTH) {
		m->out->too_deep++;
		if (end != TL_MATCH_NONE)
			m->partner[end - m->first] = TL_MATCH_DROPPED;
		return;
	}
	unsigned flags = 0;
	if (end == TL_MATCH_NONE) {
		flags |= TL_SLICE_OPEN_AT_SNAPSHOT;
		m->out->unmatched_begin++;
	}
	size_t index = new_slice(m, event, ts, begin_end_ns(m, event), flags);
	m->out->slices[index].end_event = end;
	m->stack[m->depth++] = index;
	add_item(m, TL_ITEM_OPEN, ts, index);
}

static void handle_end(matcher *m, size_t event)
{
	size_t begin = m->partner[event - m->first];
	if (begin == TL_MATCH_DROPPED)
		return;
	if (begin == TL_MATCH_NONE) {
		m->out->unmatched_end++;
		return;
	}
	close_ended(m, m->model->events[event].ts_ns, 0);
	/* The BEGIN's slice is open: only COMPLETE slices can sit above it. */
	size_t pos = m->depth;
	while (pos > 0 && m->out->slices[m->stack[pos - 1]].event != begin)
		pos--;
	if (pos == 0) {
		m->out->unmatched_end++;
		return;
	}
	while (m->depth >= pos)
		close_top(m);
}

static void handle_flow(matcher *m, size_t event)
{
	const tl_model_event *e = &m->model->events[event];
	if (tl_match_flow_dropped(e->scope, e->id)) {
		m->out->flows_dropped++;
		return;
	}
	close_ended(m, e->ts_ns, 1);
	if (m->depth) {
		tl_slice *top = &m->out->slices[m->stack[m->depth - 1]];
		if (top->flow_event == TL_MATCH_NONE) {
			top->flow_event = event;
			return;
		}
	}
	if (m->depth == TL_MATCH_MAX_DEPTH) {
		m->out->too_deep++;
		return;
	}
	size_t index = new_slice(m, event, e->ts_ns, e->ts_ns, TL_SLICE_FLOW_MARKER);
	m->out->slices[index].flow_event = event;
	m->out->flow_markers++;
	add_item(m, TL_ITEM_OPEN, e->ts_ns, index);
	add_item(m, TL_ITEM_CLOSE, e->ts_ns, index);
}

static void handle_event(matcher *m, size_t event)
{
	switch (m->model->events[event].phase) {
	case TL_PHASE_BEGIN:
		handle_begin(m, event);
		break;
	case TL_PHASE_END:
		handle_end(m, event);
		break;
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
		handle_flow(m, event);
		break;
	case TL_PHASE_INSTANT:
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
	case TL_PHASE_COUNTER:
		add_item(m, TL_ITEM_EVENT, m->model->events[event].ts_ns, event);
		break;
	default:
		m->out->events_unknown++;
		break;
	}
}

static int compare_complete(const void *pa, const void *pb)
{
	const complete_ref *a = pa, *b = pb;
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->end_ns != b->end_ns)
		return a->end_ns > b->end_ns ? -1 : 1;
	return a->event < b->event ? -1 : a->event > b->event;
}

/* Pass 1: pairs BEGIN and END of events[first..last) in seq order. */
static void pair_begin_end(matcher *m, size_t first, size_t last)
{
	const tl_model_event *events = m->model->events;
	size_t open = 0;
	for (size_t i = first; i < last; i++) {
		if (events[i].phase == TL_PHASE_BEGIN) {
			m->begins[open++] = i;
			m->partner[i - first] = TL_MATCH_NONE;
		} else if (events[i].phase == TL_PHASE_END) {
			if (open) {
				size_t begin = m->begins[--open];
				m->partner[begin - first] = i;
				m->partner[i - first] = begin;
			} else {
				m->partner[i - first] = TL_MATCH_NONE;
			}
		}
	}
}

/* Pass 2: slices and items of events[first..last). */
static void match_thread(matcher *m, size_t first, size_t last)
{
	const tl_model_event *events = m->model->events;
	size_t ncomplete = 0;

	m->first = first;
	m->close_ns = m->model->snapshot_ns;
	pair_begin_end(m, first, last);
	for (size_t i = first; i < last; i++) {
		m->close_ns = max_i64(m->close_ns, events[i].ts_ns);
		if (events[i].phase != TL_PHASE_COMPLETE)
			continue;
		m->close_ns = max_i64(m->close_ns, events[i].end_ns);
		complete_ref *c = &m->completes[ncomplete++];
		c->start_ns = events[i].ts_ns;
		c->end_ns = max_i64(events[i].ts_ns, events[i].end_ns);
		c->event = i;
	}
	qsort(m->completes, ncomplete, sizeof *m->completes, compare_complete);

	m->depth = 0;
	m->order = 0;
	size_t next = 0;
	for (size_t i = first; i < last; i++) {
		if (events[i].phase == TL_PHASE_COMPLETE)
			continue;
		while (next < ncomplete && complete_goes_first(m, &m->completes[next], i))
			open_complete(m, &m->completes[next++]);
		handle_event(m, i);
	}
	while (next < ncomplete)
		open_complete(m, &m->completes[next++]);
	while (m->depth)
		close_top(m);
}

/* See TL_SLICE_AS_COMPLETE. Parents always precede their children. */
static void mark_as_complete(tl_slice_match *out)
{
	for (size_t i = 0; i < out->nslices; i++) {
		tl_slice *s = &out->slices[i];
		if ((s->flags & (TL_SLICE_COMPLETE | TL_SLICE_FLOW_MARKER)) ||
		    s->flow_event != TL_MATCH_NONE || s->start_ns == s->end_ns)
			s->flags |= TL_SLICE_AS_COMPLETE;
	}
	for (size_t i = out->nslices; i-- > 0;) {
		const tl_slice *s = &out->slices[i];
		if (!(s->flags & TL_SLICE_AS_COMPLETE) || s->parent == TL_MATCH_NONE)
			continue;
		tl_slice *parent = &out->slices[s->parent];
		if (parent->start_ns == s->start_ns)
			parent->flags |= TL_SLICE_AS_COMPLETE;
	}
}

/* Orders (pid, tid) pairs. */
static int compare_ids(uint32_t pid_a, uint32_t tid_a, uint32_t pid_b, uint32_t tid_b)
{
	if (pid_a != pid_b)
		return pid_a < pid_b ? -1 : 1;
	return tid_a < tid_b ? -1 : tid_a > tid_b;
}

/* Model threads sorted by (pid, tid, position); pid as stored (0: model->pid). */
static int compare_thread_ptr(const void *pa, const void *pb)
{
	const tl_model_thread *a = *(const tl_model_thread *const *)pa;
	const tl_model_thread *b = *(const tl_model_thread *const *)pb;
	int c = compare_ids(a->pid, a->tid, b->pid, b->tid);
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

/*
 * The name the model gives (pid, tid), pid as stored: sorted holds
 * model->threads as compare_thread_ptr orders them; a later non-empty
 * entry (a rename) wins. "" when none.
 */
static const char *thread_name(const tl_model_thread *const *sorted, size_t n, uint32_t pid,
                               uint32_t tid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (compare_ids(sorted[mid]->pid, sorted[mid]->tid, pid, tid) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	const char *name = "";
	for (; lo < n && sorted[lo]->tid == tid && sorted[lo]->pid == pid; lo++) {
		if (sorted[lo]->name && sorted[lo]->name[0])
			name = sorted[lo]->name;
	}
	return name;
}

static int compare_match_thread(const void *pa, const void *pb)
{
	const tl_match_thread *a = pa, *b = pb;
	int c = compare_ids(a->pid, a->tid, b->pid, b->tid);
	if (c)
		return c;
	return a->first_item < b->first_item ? -1 : a->first_item > b->first_item;
}

static int compare_tid(const void *pa, const void *pb)
{
	const tl_match_thread *a = pa, *b = pb;
	return compare_ids(a->pid, a->tid, b->pid, b->tid);
}

/* The pid as tl_model_thread and tl_model_event store it. */
static uint32_t stored_pid(const tl_model *model, uint32_t pid)
{
	return pid == model->pid ? 0 : pid;
}

/* Adds the model's named threads that have no events, then sorts by tid. */
static int add_named_threads(const tl_model *model, tl_slice_match *out)
{
	const tl_model_thread **sorted = NULL;
	if (model->nthreads) {
		sorted = malloc(model->nthreads * sizeof *sorted);
		if (!sorted)
			return -ENOMEM;
		for (size_t i = 0; i < model->nthreads; i++)
			sorted[i] = &model->threads[i];
		qsort(sorted, model->nthreads, sizeof *sorted, compare_thread_ptr);
	}
	size_t with_events = out->nthreads;
	qsort(out->threads, with_events, sizeof *out->threads, compare_match_thread);
	for (size_t i = 0; i < model->nthreads; i++) {
		uint32_t tid = sorted[i]->tid;
		uint32_t pid = tl_model_thread_pid(model, sorted[i]);
		if (i > 0 && sorted[i - 1]->tid == tid && sorted[i - 1]->pid == sorted[i]->pid)
			continue;
		tl_match_thread key = {.tid = tid, .pid = pid};
		if (bsearch(&key, out->threads, with_events, sizeof key, compare_tid))
			continue;
		tl_match_thread *t = &out->threads[out->nthreads++];
		t->tid = tid;
		t->pid = pid;
		t->first_item = out->nitems;
		t->nitems = 0;
	}
	qsort(out->threads, out->nthreads, sizeof *out->threads, compare_match_thread);
	for (size_t t = 0; t < out->nthreads; t++) {
		tl_match_thread *mt = &out->threads[t];
		mt->name =
		    thread_name(sorted, model->nthreads, stored_pid(model, mt->pid), mt->tid);
	}
	free(sorted);
	return 0;
}

/* End of the run of events of one thread that starts at first. */
static size_t thread_run_end(const tl_model *model, size_t first)
{
	const tl_model_event *head = &model->events[first];
	uint32_t pid = tl_model_event_pid(model, head);
	size_t last = first + 1;
	while (last < model->nevents && model->events[last].tid == head->tid &&
	       tl_model_event_pid(model, &model->events[last]) == pid)
		last++;
	return last;
}

/* Room to match `events` events in runs of at most `longest`, for
 * `threads` threads. 0 or -ENOMEM. */
static int match_alloc(matcher *m, tl_slice_match *out, size_t events, size_t longest,
                       size_t threads)
{
	/* +1: calloc(0) may return NULL. */
	out->slices = calloc(events + 1, sizeof *out->slices);
	out->items = calloc(2 * events + 1, sizeof *out->items);
	out->threads = calloc(threads + 1, sizeof *out->threads);
	m->partner = calloc(longest + 1, sizeof *m->partner);
	m->begins = calloc(longest + 1, sizeof *m->begins);
	m->completes = calloc(longest + 1, sizeof *m->completes);
	return out->slices && out->items && out->threads && m->partner && m->begins &&
	               m->completes
	           ? 0
	           : -ENOMEM;
}

static void matcher_free(matcher *m)
{
	free(m->partner);
	free(m->begins);
	free(m->completes);
}

/* Matches the events [first, last) of one thread as out's next thread. */
static void match_run(matcher *m, size_t first, size_t last)
{
	tl_slice_match *out = m->out;
	tl_match_thread *t = &out->threads[out->nthreads++];
	t->tid = m->model->events[first].tid;
	t->pid = tl_model_event_pid(m->model, &m->model->events[first]);
	t->first_item = out->nitems;
	match_thread(m, first, last);
	t->nitems = out->nitems - t->first_item;
}

int tl_slice_match_build(const tl_model *model, tl_slice_match *out)
{
	size_t n = model->nevents;
	matcher m = {.model = model, .out = out};

	memset(out, 0, sizeof *out);
	size_t runs = 0, longest = 0;
	for (size_t first = 0, last; first < n; first = last) {
		last = thread_run_end(model, first);
		runs++;
		if (last - first > longest)
			longest = last - first;
	}
	int rc = match_alloc(&m, out, n, longest, runs + model->nthreads);
	if (rc == 0) {
		/* Threads with events, in model order (contiguous per thread). */
		for (size_t first = 0, last; first < n; first = last) {
			last = thread_run_end(model, first);
			match_run(&m, first, last);
		}
		mark_as_complete(out);
		rc = add_named_threads(model, out);
	}
	matcher_free(&m);
	if (rc)
		tl_slice_match_free(out);
	return rc;
}

int tl_slice_match_threads(const tl_model *model, tl_slice_match *out)
{
	size_t n = model->nevents, runs = 0;
	memset(out, 0, sizeof *out);
	for (size_t first = 0; first < n; first = thread_run_end(model, first))
		runs++;
	out->threads = calloc(runs + model->nthreads + 1, sizeof *out->threads);
	if (!out->threads)
		return -ENOMEM;
	for (size_t first = 0, last; first < n; first = last) {
		last = thread_run_end(model, first);
		tl_match_thread *t = &out->threads[out->nthreads++];
		t->tid = model->events[first].tid;
		t->pid = tl_model_event_pid(model, &model->events[first]);
		t->first_item = first;
		t->nitems = last - first;
	}
	int rc = add_named_threads(model, out);
	if (rc)
		tl_slice_match_free(out);
	return rc;
}

int tl_slice_match_build_run(const tl_model *model, size_t first, size_t count,
                             tl_slice_match *out)
{
	matcher m = {.model = model, .out = out};
	memset(out, 0, sizeof *out);
	int rc = match_alloc(&m, out, count, count, 1);
	if (rc == 0 && count) {
		match_run(&m, first, first + count);
		out->threads[0].name = "";
		mark_as_complete(out);
	}
	matcher_free(&m);
	if (rc)
		tl_slice_match_free(out);
	return rc;
}

void tl_slice_match_free(tl_slice_match *match)
{
	free(match->slices);
	free(match->items);
	free(match->threads);
	memset(match, 0, sizeof *match);
}

void tl_arg_list_collect(tl_arg_list *out, const tl_model_event *a, const tl_model_event *b,
                         const tl_model_event *c)
{
	const tl_model_event *events[3] = {a, b, c};
	out->nargs = 0;
	for (size_t e = 0; e < 3; e++) {
		const tl_model_event *ev = events[e];
		for (unsigned i = 0; ev && i < ev->nargs && i < TL_MAX_ARGS; i++) {
			const tl_model_arg *arg = &ev->args[i];
			if (arg->type == TL_ARG_NONE)
				continue;
			const char *key = arg->key ? arg->key : "";
			size_t seen = 0;
			while (seen < out->nargs) {
				const char *other = out->args[seen]->key;
				if (strcmp(other ? other : "", key) == 0)
					break;
				seen++;
			}
			if (seen == out->nargs)
				out->args[out->nargs++] = arg;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Flows */

uint64_t tl_flow_bind_id(uint64_t flow_id, unsigned scope, uint32_t pid)
{
	if ((scope & TL_EVENT_SCOPE_MASK) == TL_EVENT_SCOPE_GLOBAL)
		return flow_id;
	uint64_t id = tl_mix64(flow_id + 0x9e3779b97f4a7c15ull * ((uint64_t)pid + 1));
	return id ? id : 1;
}

static uint64_t flow_written_id(const tl_model *model, const tl_model_event *flow)
{
	return tl_flow_bind_id(flow->id, flow->scope, tl_model_event_pid(model, flow));
}

static int flow_phase_rank(char phase)
{
	return phase == TL_PHASE_FLOW_BEGIN ? 0 : phase == TL_PHASE_FLOW_STEP ? 1 : 2;
}

static int compare_flow_tail(const tl_flow_ref *a, const tl_flow_ref *b)
{
	int ra = flow_phase_rank(a->event->phase), rb = flow_phase_rank(b->event->phase);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	return 0;
}

/* The events of one flow together, in the order they happened. */
static int compare_flow_path(const void *pa, const void *pb)
{
	const tl_flow_ref *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	if (a->event->ts_ns != b->event->ts_ns)
		return a->event->ts_ns < b->event->ts_ns ? -1 : 1;
	return compare_flow_tail(a, b);
}

/* The written order: by the ts written, a flow's start before its end. */
static int compare_flow_written(const void *pa, const void *pb)
{
	const tl_flow_ref *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->event->ts_ns != b->event->ts_ns)
		return a->event->ts_ns < b->event->ts_ns ? -1 : 1;
	return compare_flow_tail(a, b);
}

size_t tl_flow_count(const tl_slice_match *match)
{
	size_t n = 0;
	for (size_t i = 0; i < match->nslices; i++)
		n += match->slices[i].flow_event != TL_MATCH_NONE;
	return n;
}

size_t tl_flow_refs(const tl_model *model, const tl_slice_match *match, tl_flow_ref *flows)
{
	size_t n = 0;
	for (size_t i = 0; i < match->nslices; i++) {
		const tl_slice *s = &match->slices[i];
		if (s->flow_event == TL_MATCH_NONE)
			continue;
		const tl_model_event *ev = &model->events[s->flow_event];
		flows[n++] = (tl_flow_ref){i, flow_written_id(model, ev), s->start_ns, ev};
	}
	qsort(flows, n, sizeof *flows, compare_flow_path);
	for (size_t i = 1; i < n; i++) {
		if (flows[i].id == flows[i - 1].id && flows[i].ts_ns < flows[i - 1].ts_ns)
			flows[i].ts_ns = flows[i].event->ts_ns;
	}
	qsort(flows, n, sizeof *flows, compare_flow_written);
	return n;
}

/* ------------------------------------------------------------------------ */
/* Names and the buffered writer */

const char *tl_export_event_name(const tl_model_event *event)
{
	return event->name && event->name[0] ? event->name : "unnamed";
}

const char *tl_export_event_cat(const tl_model_event *event)
{
	return event->cat && event->cat[0] ? event->cat : "default";
}

void tl_out_init(tl_out *out, int fd)
{
	out->fd = fd;
	out->err = 0;
	out->len = 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tl_out_flush(tl_out *out)
{
	if (!out->err && out->len)
		out->err = write_all(out->fd, out->buf, out->len);
	out->len = 0;
	return out->err;
}

void tl_out_bytes_slow(tl_out *out, const void *data, size_t len)
{
	if (out->err)
		return;
	if (len > sizeof out->buf - out->len && tl_out_flush(out))
		return;
	if (len >= sizeof out->buf) {
		out->err = write_all(out->fd, data, len);
		return;
	}
	memcpy(out->buf + out->len, data, len);
	out->len += len;
}

void tl_out_u64_slow(tl_out *out, uint64_t v)
{
	static const char pairs[] = "00010203040506070809"
	                            "10111213141516171819"
	                            "20212223242526272829"
	                            "30313233343536373839"
	                            "40414243444546474849"
	                            "50515253545556575859"
	                            "60616263646566676869"
	                            "70717273747576777879"
	                            "80818283848586878889"
	                            "90919293949596979899";
	/* powers[k]: 10^k; the digits from the bit length, then one check */
	static const uint64_t powers[20] = {1ull,
	                                    10ull,
	                                    100ull,
	                                    1000ull,
	                                    10000ull,
	                                    100000ull,
	                                    1000000ull,
	                                    10000000ull,
	                                    100000000ull,
	                                    1000000000ull,
	                                    10000000000ull,
	                                    100000000000ull,
	                                    1000000000000ull,
	                                    10000000000000ull,
	                                    100000000000000ull,
	                                    1000000000000000ull,
	                                    10000000000000000ull,
	                                    100000000000000000ull,
	                                    1000000000000000000ull,
	                                    10000000000000000000ull};
	unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
	size_t n = (bits * 1233u) >> 12; /* floor(bits * log10(2)) */
	if (n < 20 && v >= powers[n])
		n++;
	if (n == 0)
		n = 1;
	char digits[20];
	/* straight into the buffer when it has room */
	char *end =
	    sizeof out->buf - out->len >= n && !out->err ? out->buf + out->len + n : digits + n;
	char *p = end;
	while (v >= 100) {
		const char *pair = &pairs[(v % 100) * 2];
		v /= 100;
		*--p = pair[1];
		*--p = pair[0];
	}
	if (v >= 10) {
		*--p = pairs[v * 2 + 1];
		*--p = pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	if (end == digits + n)
		tl_out_bytes(out, digits, n);
	else
		out->len += n;
}
