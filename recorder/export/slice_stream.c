/*
 * Slice matching over a thread's event cursor (slice_stream.h). Each rule
 * is slice_match.c's, in the same order; where slice_match.c looks ahead
 * in the model (a BEGIN's END, the COMPLETE events to merge), this reads
 * what the survey noted.
 */
#include "recorder/export/slice_stream.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* begins[] value of a BEGIN dropped for depth. */
#define BEGIN_DROPPED UINT64_MAX

static int64_t max_i64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Grows *array to hold need elements; 0 or -ENOMEM. */
static int grow(void **array, size_t *cap, size_t need, size_t elem_size)
{
	if (need <= *cap)
		return 0;
	size_t new_cap = *cap ? *cap : 16;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2 / elem_size)
			return -ENOMEM;
		new_cap *= 2;
	}
	void *grown = realloc(*array, new_cap * elem_size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

static int is_nan_counter(const tl_cursor_event *e)
{
	if (e->phase != TL_PHASE_COUNTER || !(e->flags & TL_REC_F_COUNTER_DOUBLE))
		return 0;
	double d;
	memcpy(&d, &e->value, sizeof d);
	return isnan(d);
}

/* ---- the survey ----------------------------------------------------------- */

static int compare_complete(const void *pa, const void *pb)
{
	const tl_stream_complete *a = pa, *b = pb;
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->end_ns != b->end_ns)
		return a->end_ns > b->end_ns ? -1 : 1;
	return a->position < b->position ? -1 : a->position > b->position;
}

static int compare_tie(const void *pa, const void *pb)
{
	const tl_stream_tie *a = pa, *b = pb;
	return a->position < b->position ? -1 : a->position > b->position;
}

/* Whether a COMPLETE event starts at ts. */
static int complete_starts_at(const tl_thread_survey *sv, int64_t ts)
{
	size_t lo = 0, hi = sv->ncompletes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sv->completes[mid].start_ns < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sv->ncompletes && sv->completes[lo].start_ns == ts;
}

/* A BEGIN waiting for its END while the ties are found. */
struct open_begin {
	uint64_t position;
	int64_t ts_ns;
	int tied;
};

/*
 * Pairs BEGIN and END once more and notes the end of each BEGIN that starts
 * when a COMPLETE event does: max(its ts, its END's ts), or max(its ts,
 * close_ns) when it has none (slice_match.c: begin_end_ns).
 */
static int find_ties(tl_snapshot_read *r, tl_thread_survey *sv)
{
	struct open_begin *open = NULL;
	size_t nopen = 0, open_cap = 0, ties_cap = 0;
	tl_event_cursor c;
	int rc = tl_event_cursor_init(&c, r, sv->thread, 0);
	tl_cursor_event e;
	while (rc == 0 && tl_event_cursor_next(&c, &e)) {
		if (e.phase == TL_PHASE_BEGIN) {
			rc = grow((void **)&open, &open_cap, nopen + 1, sizeof *open);
			if (rc == 0)
				open[nopen++] = (struct open_begin){
				    e.position, e.ts_ns, complete_starts_at(sv, e.ts_ns)};
		} else if (e.phase == TL_PHASE_END && nopen) {
			const struct open_begin *b = &open[--nopen];
			if (!b->tied)
				continue;
			rc = grow((void **)&sv->ties, &ties_cap, sv->nties + 1, sizeof *sv->ties);
			if (rc == 0)
				sv->ties[sv->nties++] =
				    (tl_stream_tie){b->position, max_i64(b->ts_ns, e.ts_ns)};
		}
	}
	for (size_t i = 0; rc == 0 && i < nopen; i++) {
		if (!open[i].tied)
			continue;
		rc = grow((void **)&sv->ties, &ties_cap, sv->nties + 1, sizeof *sv->ties);
		if (rc == 0)
			sv->ties[sv->nties++] =
			    (tl_stream_tie){open[i].position, max_i64(open[i].ts_ns, sv->close_ns)};
	}
	free(open);
	if (rc == 0 && sv->nties)
		qsort(sv->ties, sv->nties, sizeof *sv->ties, compare_tie);
	return rc;
}

/* A filter of the BEGINs' timestamps: a COMPLETE event whose start it does
 * not hold starts with no BEGIN. */
#define BEGIN_FILTER_BITS 65536

static size_t begin_filter_bit(int64_t ts)
{
	return (size_t)(((uint64_t)ts * 0x9e3779b97f4a7c15ull) >> 48);
}

/* Whether some COMPLETE event may start when a BEGIN does. */
static int may_tie(const tl_thread_survey *sv, const uint64_t *filter)
{
	for (size_t i = 0; i < sv->ncompletes; i++) {
		size_t bit = begin_filter_bit(sv->completes[i].start_ns);
		if (filter[bit / 64] >> (bit % 64) & 1)
			return 1;
	}
	return 0;
}

int tl_thread_survey_run(tl_snapshot_read *r, tl_snapshot_thread *t, tl_thread_survey *sv,
                         tl_slice_stream *feed)
{
	uint64_t begins[BEGIN_FILTER_BITS / 64];
	memset(begins, 0, sizeof begins);
	memset(sv, 0, sizeof *sv);
	sv->thread = t;
	sv->close_ns = r->model->snapshot_ns;
	size_t completes_cap = 0, floor_cap = 0, depth = 0;
	tl_event_cursor c;
	int rc = tl_event_cursor_init(&c, r, t, 1);
	tl_cursor_event e;
	while (rc == 0 && tl_event_cursor_next(&c, &e)) {
		if (feed && e.phase == TL_PHASE_COMPLETE)
			feed = NULL; /* it needs the COMPLETE events sorted first */
		if (feed)
			rc = tl_slice_stream_push(feed, &e);
		size_t segment = (size_t)(e.position / TL_STREAM_SEGMENT);
		if (segment == sv->nsegments) {
			rc = grow((void **)&sv->floor_ns, &floor_cap, segment + 1,
			          sizeof *sv->floor_ns);
			if (rc)
				break;
			sv->floor_ns[sv->nsegments++] = INT64_MAX;
		}
		sv->close_ns = max_i64(sv->close_ns, e.ts_ns);
		switch (e.phase) {
		case TL_PHASE_COMPLETE:
			sv->close_ns = max_i64(sv->close_ns, e.end_ns);
			if (rc == 0)
				rc = grow((void **)&sv->completes, &completes_cap,
				          sv->ncompletes + 1, sizeof *sv->completes);
			if (rc == 0)
				sv->completes[sv->ncompletes++] = (tl_stream_complete){
				    e.ts_ns, max_i64(e.ts_ns, e.end_ns), e.position, e.rec};
			continue; /* merged by start: not in the floor */
		case TL_PHASE_BEGIN: {
			size_t bit = begin_filter_bit(e.ts_ns);
			begins[bit / 64] |= 1ull << (bit % 64);
			sv->nbegins++;
			if (++depth > sv->max_depth)
				sv->max_depth = depth;
			break;
		}
		case TL_PHASE_END:
			if (depth)
				depth--;
			else
				sv->unmatched_end++;
			break;
		case TL_PHASE_INSTANT:
		case TL_PHASE_ASYNC_BEGIN:
		case TL_PHASE_ASYNC_END:
		case TL_PHASE_ASYNC_INSTANT:
		case TL_PHASE_COUNTER:
			sv->nitems_events++;
			sv->nan_counters += is_nan_counter(&e);
			break;
		default:
			break;
		}
		if (e.ts_ns < sv->floor_ns[segment])
			sv->floor_ns[segment] = e.ts_ns;
	}
	sv->nevents = c.position;
	sv->unmatched_begin = depth;
	for (size_t k = sv->nsegments; k-- > 1;) {
		if (sv->floor_ns[k] < sv->floor_ns[k - 1])
			sv->floor_ns[k - 1] = sv->floor_ns[k];
	}
	if (rc == 0 && sv->ncompletes) {
		qsort(sv->completes, sv->ncompletes, sizeof *sv->completes, compare_complete);
		if (may_tie(sv, begins))
			rc = find_ties(r, sv);
	}
	sv->may_be_too_deep = sv->max_depth + sv->ncompletes >= TL_MATCH_MAX_DEPTH;
	if (rc == 0 && feed) {
		rc = tl_slice_stream_end(feed);
		sv->fed = rc == 0;
	}
	if (rc)
		tl_thread_survey_free(sv);
	return rc;
}

void tl_thread_survey_free(tl_thread_survey *sv)
{
	free(sv->completes);
	free(sv->ties);
	free(sv->floor_ns);
	tl_snapshot_thread *t = sv->thread;
	memset(sv, 0, sizeof *sv);
	sv->thread = t;
}

/* ---- the matching --------------------------------------------------------- */

static void close_top(tl_slice_stream *s)
{
	tl_stream_slice *slice = &s->stack[--s->depth];
	/* TL_SLICE_AS_COMPLETE: see slice_match.c, mark_as_complete */
	if ((slice->flags & (TL_SLICE_COMPLETE | TL_SLICE_FLOW_MARKER)) || slice->has_flow ||
	    slice->start_ns == slice->end_ns || slice->child_as_complete) {
		slice->flags |= TL_SLICE_AS_COMPLETE;
		if (s->depth && s->stack[s->depth - 1].start_ns == slice->start_ns)
			s->stack[s->depth - 1].child_as_complete = 1;
	}
	uint64_t order = s->order++;
	if (s->ops->close)
		s->ops->close(s->ctx, slice, order);
}

/* A new open slice on top of the stack; NULL when out of memory. */
static tl_stream_slice *push_slice(tl_slice_stream *s, enum tl_stream_slice_kind kind,
                                   const uint64_t *rec, int64_t start_ns, int64_t end_ns,
                                   unsigned flags)
{
	if (grow((void **)&s->stack, &s->stack_cap, s->depth + 1, sizeof *s->stack))
		return NULL;
	tl_stream_slice *slice = &s->stack[s->depth++];
	memset(slice, 0, sizeof *slice);
	slice->index = s->nslices++;
	slice->start_ns = start_ns;
	slice->end_ns = max_i64(start_ns, end_ns);
	slice->flags = flags;
	slice->kind = kind;
	slice->rec = rec;
	return slice;
}

static void open_top(tl_slice_stream *s)
{
	uint64_t order = s->order++;
	if (s->ops->open)
		s->ops->open(s->ctx, &s->stack[s->depth - 1], order);
}

/*
 * Closes the COMPLETE slices on top of the stack that ended before ts (or
 * at ts, unless inclusive). Slices from BEGIN stay until their END.
 */
/* inline: on every event's path (a hint GCC needs here) */
static inline void close_ended(tl_slice_stream *s, int64_t ts, int inclusive)
{
	while (s->depth) {
		const tl_stream_slice *top = &s->stack[s->depth - 1];
		if (tl_match_stays_open(top->flags, top->end_ns, ts, inclusive))
			return;
		close_top(s);
	}
}

/* End of the slice a BEGIN opens, when a COMPLETE event starts with it. */
static int64_t begin_end_ns(tl_slice_stream *s, const tl_cursor_event *e)
{
	const tl_thread_survey *sv = s->survey;
	while (s->next_tie < sv->nties && sv->ties[s->next_tie].position < e->position)
		s->next_tie++;
	if (s->next_tie < sv->nties && sv->ties[s->next_tie].position == e->position)
		return sv->ties[s->next_tie].end_ns;
	return e->ts_ns; /* not reached: the survey notes every such BEGIN */
}

/* Whether a COMPLETE slice is processed before the event. */
static int complete_goes_first(tl_slice_stream *s, const tl_stream_complete *c,
                               const tl_cursor_event *e)
{
	int first = tl_match_complete_first(c->start_ns, e->ts_ns, e->phase);
	return first >= 0 ? first : begin_end_ns(s, e) <= c->end_ns;
}

static int open_complete(tl_slice_stream *s, const tl_stream_complete *c)
{
	close_ended(s, c->start_ns, 0);
	if (s->depth == TL_MATCH_MAX_DEPTH) {
		s->counts.too_deep++;
		return 0;
	}
	if (!push_slice(s, TL_STREAM_COMPLETE, c->rec, c->start_ns, c->end_ns, TL_SLICE_COMPLETE))
		return -ENOMEM;
	open_top(s);
	return 0;
}

static int handle_begin(tl_slice_stream *s, const tl_cursor_event *e)
{
	if (grow((void **)&s->begins, &s->begins_cap, s->nbegins + 1, sizeof *s->begins))
		return -ENOMEM;
	close_ended(s, e->ts_ns, 0);
	if (s->depth == TL_MATCH_MAX_DEPTH) {
		s->counts.too_deep++;
		s->begins[s->nbegins++] = BEGIN_DROPPED;
		return 0;
	}
	tl_stream_slice *slice = push_slice(s, TL_STREAM_BEGIN, e->rec, e->ts_ns, e->ts_ns, 0);
	if (!slice)
		return -ENOMEM;
	s->begins[s->nbegins++] = slice->index;
	open_top(s);
	return 0;
}

static void handle_end(tl_slice_stream *s, const tl_cursor_event *e)
{
	if (!s->nbegins) {
		s->counts.unmatched_end++;
		return;
	}
	uint64_t begin = s->begins[--s->nbegins];
	if (begin == BEGIN_DROPPED)
		return;
	close_ended(s, e->ts_ns, 0);
	/* The BEGIN's slice is open: only COMPLETE slices can sit above it. */
	size_t pos = s->depth;
	while (pos > 0 && s->stack[pos - 1].index != begin)
		pos--;
	if (pos == 0) {
		s->counts.unmatched_end++;
		return;
	}
	tl_stream_slice *slice = &s->stack[pos - 1];
	slice->end_ns = max_i64(slice->start_ns, e->ts_ns);
	slice->end_rec = e->rec;
	while (s->depth >= pos)
		close_top(s);
}

static void handle_flow(tl_slice_stream *s, const tl_cursor_event *e)
{
	unsigned scope = ((e->flags >> TL_REC_F_SCOPE_SHIFT) & 3u) << 1;
	if (tl_match_flow_dropped(scope, e->value)) {
		s->counts.flows_dropped++;
		return;
	}
	close_ended(s, e->ts_ns, 1);
	if (s->depth) {
		tl_stream_slice *top = &s->stack[s->depth - 1];
		if (!top->has_flow) {
			top->flow = *e;
			top->has_flow = 1;
			if (s->ops->flow)
				s->ops->flow(s->ctx, top);
			return;
		}
	}
	if (s->depth == TL_MATCH_MAX_DEPTH) {
		s->counts.too_deep++;
		return;
	}
	/* a zero-length slice of its own, opened and closed at once */
	tl_stream_slice marker = {
	    .index = s->nslices++,
	    .start_ns = e->ts_ns,
	    .end_ns = e->ts_ns,
	    .flags = TL_SLICE_FLOW_MARKER | TL_SLICE_AS_COMPLETE,
	    .kind = TL_STREAM_MARKER,
	    .rec = e->rec,
	    .flow = *e,
	    .has_flow = 1,
	};
	s->counts.flow_markers++;
	uint64_t order = s->order++;
	if (s->ops->open)
		s->ops->open(s->ctx, &marker, order);
	if (s->depth && s->stack[s->depth - 1].start_ns == marker.start_ns)
		s->stack[s->depth - 1].child_as_complete = 1;
	if (s->ops->flow)
		s->ops->flow(s->ctx, &marker);
	order = s->order++;
	if (s->ops->close)
		s->ops->close(s->ctx, &marker, order);
}

static int handle_event(tl_slice_stream *s, const tl_cursor_event *e)
{
	switch (e->phase) {
	case TL_PHASE_BEGIN:
		return handle_begin(s, e);
	case TL_PHASE_END:
		handle_end(s, e);
		return 0;
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
		handle_flow(s, e);
		return 0;
	case TL_PHASE_INSTANT:
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
	case TL_PHASE_COUNTER: {
		uint64_t order = s->order++;
		if (s->ops->event)
			s->ops->event(s->ctx, e, order);
		return 0;
	}
	default:
		s->counts.events_unknown++;
		return 0;
	}
}

/* After the last event: the COMPLETE slices left, then every slice still
 * open closes, a BEGIN's at close_ns. */
static int finish(tl_slice_stream *s)
{
	const tl_thread_survey *sv = s->survey;
	while (s->next_complete < sv->ncompletes) {
		if (open_complete(s, &sv->completes[s->next_complete++]))
			return -ENOMEM;
	}
	while (s->depth) {
		tl_stream_slice *top = &s->stack[s->depth - 1];
		if (top->kind == TL_STREAM_BEGIN) {
			top->flags |= TL_SLICE_OPEN_AT_SNAPSHOT;
			top->end_ns = max_i64(top->start_ns, sv->close_ns);
			s->counts.unmatched_begin++;
		}
		close_top(s);
	}
	s->done = 1;
	return 0;
}

int tl_slice_stream_init(tl_slice_stream *s, tl_snapshot_read *r, const tl_thread_survey *survey,
                         const tl_slice_stream_ops *ops, void *ctx)
{
	memset(s, 0, sizeof *s);
	s->survey = survey;
	s->ops = ops;
	s->ctx = ctx;
	return r ? tl_event_cursor_init(&s->cursor, r, survey->thread, 0) : 0;
}

int tl_slice_stream_push(tl_slice_stream *s, const tl_cursor_event *e)
{
	const tl_thread_survey *sv = s->survey;
	if (e->phase == TL_PHASE_COMPLETE)
		return 0; /* merged by start, from the survey */
	while (s->next_complete < sv->ncompletes &&
	       complete_goes_first(s, &sv->completes[s->next_complete], e)) {
		if (open_complete(s, &sv->completes[s->next_complete++]))
			return -ENOMEM;
	}
	return handle_event(s, e);
}

int tl_slice_stream_end(tl_slice_stream *s)
{
	return s->done ? 0 : finish(s);
}

int tl_slice_stream_step(tl_slice_stream *s)
{
	if (s->done)
		return 0;
	tl_cursor_event e;
	do {
		if (!tl_event_cursor_next(&s->cursor, &e))
			return finish(s);
		if (tl_slice_stream_push(s, &e))
			return -ENOMEM;
	} while (s->cursor.position % TL_STREAM_SEGMENT);
	return 1;
}

int tl_slice_stream_run(tl_slice_stream *s)
{
	int rc;
	while ((rc = tl_slice_stream_step(s)) > 0)
		;
	return rc;
}

int64_t tl_slice_stream_floor(const tl_slice_stream *s)
{
	if (s->done)
		return INT64_MAX;
	const tl_thread_survey *sv = s->survey;
	/* slices still open at the end close at close_ns, which is also where
	 * the floor stays when no event is left */
	int64_t floor = sv->close_ns;
	size_t segment = (size_t)(s->cursor.position / TL_STREAM_SEGMENT);
	if (segment < sv->nsegments && sv->floor_ns[segment] < floor)
		floor = sv->floor_ns[segment];
	if (s->next_complete < sv->ncompletes && sv->completes[s->next_complete].start_ns < floor)
		floor = sv->completes[s->next_complete].start_ns;
	for (size_t i = 0; i < s->depth; i++) {
		const tl_stream_slice *open = &s->stack[i];
		if ((open->flags & TL_SLICE_COMPLETE) && open->end_ns < floor)
			floor = open->end_ns;
	}
	return floor;
}

void tl_slice_stream_free(tl_slice_stream *s)
{
	free(s->stack);
	free(s->begins);
	s->stack = NULL;
	s->begins = NULL;
	s->depth = s->nbegins = s->stack_cap = s->begins_cap = 0;
}
