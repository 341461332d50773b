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

static void far_test_init(tl_far_test *t)
{
	t->segment = 0;
	t->max_ns = t->max_1_ns = t->max_2_ns = INT64_MIN;
}

/*
 * Sees the next event: whether it is a far COMPLETE event. The matching
 * needs, before an event, every COMPLETE event starting no later than it;
 * the look-ahead has then read two more segments than the event's.
 */
static inline int far_test_see(tl_far_test *t, const tl_cursor_event *e)
{
	uint64_t segment = e->position / TL_STREAM_SEGMENT;
	while (t->segment < segment) {
		t->max_2_ns = t->max_1_ns;
		t->max_1_ns = t->max_ns;
		t->segment++;
	}
	if (e->phase == TL_PHASE_COMPLETE)
		return e->ts_ns <= t->max_2_ns;
	if (e->ts_ns > t->max_ns)
		t->max_ns = e->ts_ns;
	return 0;
}

/* Blocks a cursor passes between two trims (r->trim_behind). */
#define TRIM_BLOCKS 2

void tl_slice_stream_keep(const tl_slice_stream *s, tl_kept_recs *k)
{
	for (size_t i = 0; i < s->depth; i++) {
		const tl_stream_slice *open = &s->stack[i];
		tl_kept_recs_add(k, open->rec);
		tl_kept_recs_add(k, open->end_rec);
		if (open->has_flow)
			tl_kept_recs_add(k, open->flow.rec);
	}
	if (s->ring)
		for (uint64_t p = s->ring_head; p < s->ring_tail; p++)
			tl_kept_recs_add(k, s->ring[p % s->ring_cap].rec);
	for (size_t i = 0; i < s->nheld; i++)
		tl_kept_recs_add(k, s->held[i].rec);
	if (s->ops->keep)
		s->ops->keep(s->ctx, k);
}

/* Frees the unpacked records cursor c has passed that nothing in kept (its
 * list emptied first, then filled by fill) holds, once c is TRIM_BLOCKS
 * blocks past the last trim (*trimmed); at_end: c has ended, every block
 * is behind it. */
static void trim_behind(tl_snapshot_read *r, const tl_event_cursor *c, size_t *trimmed,
                        tl_kept_recs *kept, void (*fill)(const void *ctx, tl_kept_recs *k),
                        const void *ctx, int at_end)
{
	size_t before = at_end ? c->thread->nested_block : c->own.block;
	/* (a snapshot's records are read in place: nothing to free) */
	if (!r || !r->trim_behind || !r->has_packed ||
	    (!at_end && before < *trimmed + TRIM_BLOCKS))
		return;
	*trimmed = before;
	kept->n = 0;
	kept->failed = 0;
	fill(ctx, kept);
	tl_snapshot_thread_trim(r, (tl_snapshot_thread *)c->thread, before, kept);
}

/* What a survey holds: what the matching it feeds holds (the far
 * COMPLETE events are copies). */
static void survey_keep(const void *ctx, tl_kept_recs *k)
{
	const tl_slice_stream *const *feed = ctx;
	if (*feed)
		tl_slice_stream_keep(*feed, k);
}

static void match_keep(const void *ctx, tl_kept_recs *k)
{
	tl_slice_stream_keep(ctx, k);
}

int tl_thread_survey_run(tl_snapshot_read *r, tl_snapshot_thread *t, tl_thread_survey *sv,
                         tl_slice_stream *feed)
{
	memset(sv, 0, sizeof *sv);
	sv->thread = t;
	sv->close_ns = r->model->snapshot_ns;
	size_t far_cap = 0, floor_cap = 0, depth = 0;
	tl_far_test far;
	far_test_init(&far);
	tl_event_cursor c;
	int rc = tl_event_cursor_init(&c, r, t, 1);
	tl_cursor_event e;
	tl_kept_recs kept = {0};
	size_t trimmed = t->first_block;
	while (rc == 0 && tl_event_cursor_next(&c, &e)) {
		if (feed && e.phase == TL_PHASE_COMPLETE)
			feed = NULL; /* it needs the COMPLETE events' look-ahead */
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
		int is_far = far_test_see(&far, &e);
		sv->close_ns = max_i64(sv->close_ns, e.ts_ns);
		switch (e.phase) {
		case TL_PHASE_COMPLETE:
			sv->close_ns = max_i64(sv->close_ns, e.end_ns);
			sv->ncompletes++;
			if (!is_far)
				break; /* in the floor: the look-ahead finds it */
			if (rc == 0)
				rc = grow((void **)&sv->far, &far_cap, sv->nfar + 1,
				          sizeof *sv->far);
			/* copied where the trims may free it before every run of
			 * the matching has read it */
			const uint64_t *rec = e.rec;
			if (rc == 0 && r->trim_behind && r->has_packed)
				rc = tl_rec_copies_add(&sv->far_recs, e.rec, &rec);
			if (rc == 0)
				sv->far[sv->nfar++] = (tl_stream_complete){
				    e.ts_ns, max_i64(e.ts_ns, e.end_ns), e.position, rec};
			continue; /* merged by start from the list: not in the floor */
		case TL_PHASE_BEGIN:
			sv->nbegins++;
			if (++depth > sv->max_depth)
				sv->max_depth = depth;
			break;
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
		trim_behind(r, &c, &trimmed, &kept, survey_keep, &feed, 0);
	}
	sv->nevents = c.position;
	sv->unmatched_begin = depth;
	for (size_t k = sv->nsegments; k-- > 1;) {
		if (sv->floor_ns[k] < sv->floor_ns[k - 1])
			sv->floor_ns[k - 1] = sv->floor_ns[k];
	}
	if (rc == 0 && sv->nfar)
		qsort(sv->far, sv->nfar, sizeof *sv->far, compare_complete);
	sv->may_be_too_deep = sv->max_depth + sv->ncompletes >= TL_MATCH_MAX_DEPTH;
	if (rc == 0 && feed) {
		rc = tl_slice_stream_end(feed);
		sv->fed = rc == 0;
	}
	if (rc == 0)
		trim_behind(r, &c, &trimmed, &kept, survey_keep, &feed, 1);
	tl_kept_recs_free(&kept);
	if (rc)
		tl_thread_survey_free(sv);
	return rc;
}

void tl_thread_survey_free(tl_thread_survey *sv)
{
	free(sv->far);
	tl_rec_copies_free(&sv->far_recs);
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

/*
 * End of the slice a BEGIN opens, when a COMPLETE event starts with it:
 * max(its ts, its END's ts), or max(its ts, close_ns) when it has none
 * (slice_match.c: begin_end_ns). Its END is found by a copy of the cursor,
 * just past the BEGIN: the first END that more ENDs than BEGINs precede
 * since it. Kept for the BEGIN's next COMPLETE events.
 */
static int64_t begin_end_ns(tl_slice_stream *s, const tl_cursor_event *e)
{
	if (s->tie_position == e->position + 1)
		return s->tie_end_ns;
	int64_t end_ns = max_i64(e->ts_ns, s->survey->close_ns);
	size_t depth = 1;
	/* the events read ahead into the ring, then those after them */
	for (uint64_t at = s->ring_head; s->ring && at < s->ring_tail; at++) {
		const tl_cursor_event *next = &s->ring[at % s->ring_cap];
		if (next->phase == TL_PHASE_BEGIN) {
			depth++;
		} else if (next->phase == TL_PHASE_END && --depth == 0) {
			end_ns = max_i64(e->ts_ns, next->ts_ns);
			goto found;
		}
	}
	tl_event_cursor c = s->cursor;
	tl_cursor_event next;
	while (tl_event_cursor_next(&c, &next)) {
		if (next.phase == TL_PHASE_BEGIN) {
			depth++;
		} else if (next.phase == TL_PHASE_END && --depth == 0) {
			end_ns = max_i64(e->ts_ns, next.ts_ns);
			break;
		}
	}
found:
	s->tie_position = e->position + 1;
	s->tie_end_ns = end_ns;
	return end_ns;
}

/* Whether a COMPLETE slice is processed before the event. */
static int complete_goes_first(tl_slice_stream *s, const tl_stream_complete *c,
                               const tl_cursor_event *e)
{
	int first = tl_match_complete_first(c->start_ns, e->ts_ns, e->phase);
	return first >= 0 ? first : begin_end_ns(s, e) <= c->end_ns;
}

/* ---- the COMPLETE events, merged by start ---------------------------------- */

static int held_push(tl_slice_stream *s, const tl_stream_complete *c)
{
	if (grow((void **)&s->held, &s->held_cap, s->nheld + 1, sizeof *s->held))
		return -ENOMEM;
	size_t i = s->nheld++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (compare_complete(&s->held[parent], c) <= 0)
			break;
		s->held[i] = s->held[parent];
		i = parent;
	}
	s->held[i] = *c;
	return 0;
}

static void held_pop(tl_slice_stream *s)
{
	size_t n = --s->nheld, i = 0;
	const tl_stream_complete last = s->held[n];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && compare_complete(&s->held[child + 1], &s->held[child]) < 0)
			child++;
		if (compare_complete(&last, &s->held[child]) <= 0)
			break;
		s->held[i] = s->held[child];
		i = child;
	}
	if (n)
		s->held[i] = last;
}

/*
 * The next event to match into *e: 1, or 0 when none is left, or -ENOMEM.
 * With a look-ahead, the events up to two segments after the event's own
 * have been read (the COMPLETE events that are not far among them held):
 * every COMPLETE event that starts no later than it is then held or listed.
 */
static inline int next_event(tl_slice_stream *s, tl_cursor_event *e)
{
	if (!s->ring)
		return tl_event_cursor_next(&s->cursor, e);
	uint64_t until = (s->ring_head / TL_STREAM_SEGMENT + 2) * TL_STREAM_SEGMENT;
	while (!s->ring_ended && s->ring_tail < until) {
		tl_cursor_event *read = &s->ring[s->ring_tail % s->ring_cap];
		if (!tl_event_cursor_next(&s->cursor, read)) {
			s->ring_ended = 1;
			break;
		}
		s->ring_tail++;
		if (far_test_see(&s->ahead_test, read) || read->phase != TL_PHASE_COMPLETE)
			continue;
		tl_stream_complete c = {read->ts_ns, max_i64(read->ts_ns, read->end_ns),
		                        read->position, read->rec};
		if (held_push(s, &c))
			return -ENOMEM;
	}
	if (s->ring_head == s->ring_tail)
		return 0;
	*e = s->ring[s->ring_head++ % s->ring_cap];
	return 1;
}

/* The position of the next event to match. */
static uint64_t next_position(const tl_slice_stream *s)
{
	return s->ring ? s->ring_head : s->cursor.position;
}

/* The next COMPLETE event in order of its start, among the far ones and
 * those held; NULL when none is left. */
static const tl_stream_complete *next_complete(const tl_slice_stream *s)
{
	const tl_stream_complete *far =
	    s->next_far < s->survey->nfar ? &s->survey->far[s->next_far] : NULL;
	if (!s->nheld)
		return far;
	if (!far || compare_complete(&s->held[0], far) < 0)
		return &s->held[0];
	return far;
}

/* Removes c, which next_complete gave. */
static void take_complete(tl_slice_stream *s, const tl_stream_complete *c)
{
	if (s->nheld && c == &s->held[0])
		held_pop(s);
	else
		s->next_far++;
}

/* Opens the COMPLETE event next_complete gave, and takes it. */
static int open_complete(tl_slice_stream *s, const tl_stream_complete *next)
{
	const tl_stream_complete complete = *next, *c = &complete;
	take_complete(s, next);
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
	const tl_stream_complete *c;
	while ((c = next_complete(s))) {
		if (open_complete(s, c))
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
	if (!r)
		return 0;
	s->trimmed_block = survey->thread->first_block;
	int rc = tl_event_cursor_init(&s->cursor, r, survey->thread, 0);
	far_test_init(&s->ahead_test);
	if (rc == 0 && survey->ncompletes > survey->nfar) {
		/* the events it holds at once: up to two segments, and no more
		 * than the thread has (a short thread's ring is small) */
		s->ring_cap = TL_STREAM_RING;
		while (s->ring_cap / 2 >= survey->nevents && s->ring_cap > 1)
			s->ring_cap /= 2;
		s->ring = malloc(s->ring_cap * sizeof *s->ring);
		if (!s->ring)
			rc = -ENOMEM;
	}
	return rc;
}

int tl_slice_stream_push(tl_slice_stream *s, const tl_cursor_event *e)
{
	if (e->phase == TL_PHASE_COMPLETE)
		return 0; /* merged by start, read ahead or from the survey */
	const tl_stream_complete *c;
	while ((c = next_complete(s)) && complete_goes_first(s, c, e)) {
		if (open_complete(s, c))
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
		int got = next_event(s, &e);
		if (got < 0)
			return got;
		if (!got) {
			int rc = finish(s);
			if (rc == 0)
				trim_behind(s->cursor.r, &s->cursor, &s->trimmed_block, &s->kept,
				            match_keep, s, 1);
			return rc;
		}
		if (tl_slice_stream_push(s, &e))
			return -ENOMEM;
	} while (next_position(s) % TL_STREAM_SEGMENT);
	trim_behind(s->cursor.r, &s->cursor, &s->trimmed_block, &s->kept, match_keep, s, 0);
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
	size_t segment = (size_t)(next_position(s) / TL_STREAM_SEGMENT);
	if (segment < sv->nsegments && sv->floor_ns[segment] < floor)
		floor = sv->floor_ns[segment];
	const tl_stream_complete *next = next_complete(s);
	if (next && next->start_ns < floor)
		floor = next->start_ns;
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
	free(s->held);
	free(s->ring);
	tl_kept_recs_free(&s->kept);
	s->ring = NULL;
	s->stack = NULL;
	s->begins = NULL;
	s->held = NULL;
	s->depth = s->nbegins = s->stack_cap = s->begins_cap = 0;
	s->nheld = s->held_cap = 0;
}
