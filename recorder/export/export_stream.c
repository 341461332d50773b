/*
 * What the streaming exporters share (export_stream.h): the list of
 * threads, the strings of the events being written, the queue of items
 * waiting for their place, and the sources of items merged across threads.
 */
#include "recorder/export/export_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/record.h"

static int compare_model_thread(const void *pa, const void *pb)
{
	const tl_model_thread *a = *(const tl_model_thread *const *)pa;
	const tl_model_thread *b = *(const tl_model_thread *const *)pb;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a < b ? -1 : a > b;
}

int tl_stream_threads(tl_snapshot_read *r, tl_stream_thread **out, size_t *n)
{
	const tl_model *m = r->model;
	const tl_model_thread **named = malloc((m->nthreads + 1) * sizeof *named);
	tl_stream_thread *list = calloc(r->nthreads + m->nthreads + 1, sizeof *list);
	if (!named || !list) {
		free(named);
		free(list);
		return -ENOMEM;
	}
	/* A snapshot's model names threads of its own process only, each tid
	 * once (a THREAD chunk renames); the last entry of a tid wins. */
	for (size_t i = 0; i < m->nthreads; i++)
		named[i] = &m->threads[i];
	qsort(named, m->nthreads, sizeof *named, compare_model_thread);

	/* Threads whose blocks hold no event the exporters read: their blocks
	 * are walked here, for the undecodable records they hold. */
	for (size_t i = 0; i < r->nthreads; i++) {
		if (r->threads[i].has_events)
			continue;
		tl_event_cursor cursor;
		tl_cursor_event e;
		int rc = tl_event_cursor_init(&cursor, r, &r->threads[i], 0);
		while (rc == 0 && tl_event_cursor_next(&cursor, &e))
			;
		tl_snapshot_thread_unload(r, &r->threads[i]); /* nothing kept of it */
		if (rc) {
			free(named);
			free(list);
			return rc;
		}
	}

	size_t count = 0, t = 0, k = 0;
	while (t < r->nthreads || k < m->nthreads) {
		while (t < r->nthreads && !r->threads[t].has_events)
			t++;
		uint32_t tid;
		if (t < r->nthreads && (k == m->nthreads || r->threads[t].tid <= named[k]->tid))
			tid = r->threads[t].tid;
		else if (k < m->nthreads)
			tid = named[k]->tid;
		else
			break;
		tl_stream_thread *entry = &list[count++];
		entry->info.tid = tid;
		entry->info.pid = m->pid;
		entry->info.name = "";
		if (t < r->nthreads && r->threads[t].tid == tid)
			entry->snapshot = &r->threads[t++];
		for (; k < m->nthreads && named[k]->tid == tid; k++) {
			if (named[k]->name && named[k]->name[0])
				entry->info.name = named[k]->name;
		}
	}
	free(named);
	*out = list;
	*n = count;
	return 0;
}

int tl_stream_strings_reset(tl_stream_strings *s, const uint64_t *const *recs, size_t n)
{
	/* The strings of a record are within it; each gets a terminator. */
	size_t need = 0;
	for (size_t i = 0; i < n; i++) {
		if (recs[i])
			need += (size_t)TL_REC_WORDS(recs[i][1]) * 8 + 2 * TL_MAX_ARGS + 2;
	}
	s->used = 0;
	if (need <= s->cap)
		return 0;
	char *grown = realloc(s->buf, need);
	if (!grown)
		return -ENOMEM;
	s->buf = grown;
	s->cap = need;
	return 0;
}

const char *tl_stream_strings_store(void *strings, const char *str, size_t len)
{
	tl_stream_strings *s = strings;
	if ((len + 7) / 8 * 8 + 1 > s->cap - s->used)
		return NULL; /* not reached: reset made room */
	char *copy = s->buf + s->used;
	/* a record's strings are padded with zeros to whole words, and reset
	 * made room for their padded sizes: copy a word at a time */
	for (size_t i = 0; i < len; i += 8)
		memcpy(copy + i, str + i, 8);
	copy[len] = '\0';
	s->used += len + 1;
	return copy;
}

void tl_stream_strings_free(tl_stream_strings *s)
{
	free(s->buf);
	memset(s, 0, sizeof *s);
}

void tl_stream_decode(tl_snapshot_read *r, tl_stream_strings *strings, const uint64_t *rec,
                      uint32_t tid, int with_args, tl_model_event *e)
{
	tl_snapshot_read_event(r, rec, tid, with_args, tl_stream_strings_store, strings, e);
}

int tl_stream_first_run(tl_snapshot_read *r, tl_snapshot_thread *t, tl_thread_survey *survey,
                        const tl_slice_stream_ops *ops, void *ctx, void (*forget)(void *ctx),
                        tl_match_counts *totals)
{
	tl_slice_stream match;
	tl_slice_stream_init(&match, NULL, survey, ops, ctx);
	int rc = tl_thread_survey_run(r, t, survey, &match);
	if (rc == 0 && !survey->fed) {
		tl_slice_stream_free(&match);
		forget(ctx);
		rc = tl_slice_stream_init(&match, r, survey, ops, ctx);
		if (rc == 0)
			rc = tl_slice_stream_run(&match);
	}
	if (rc == 0 && totals)
		tl_stream_add_counts(totals, &match.counts);
	tl_slice_stream_free(&match);
	return rc;
}

void tl_stream_add_counts(tl_match_counts *totals, const tl_match_counts *c)
{
	totals->unmatched_begin += c->unmatched_begin;
	totals->unmatched_end += c->unmatched_end;
	totals->too_deep += c->too_deep;
	totals->flow_markers += c->flow_markers;
	totals->flows_dropped += c->flows_dropped;
	totals->events_unknown += c->events_unknown;
}

/* ---- sorting through an index --------------------------------------------- */

/* The end of the run of ascending items that starts at lo. */
static size_t run_end(const unsigned char *items, size_t size, const size_t *order, size_t lo,
                      size_t n, int (*compare)(const void *, const void *))
{
	size_t end = lo + 1;
	while (end < n && compare(items + order[end - 1] * size, items + order[end] * size) < 0)
		end++;
	return end;
}

void tl_stream_sort_order(const void *items, size_t size, size_t *order, size_t *tmp, size_t n,
                          int (*compare)(const void *, const void *))
{
	const unsigned char *base = items;
	size_t *from = order, *to = tmp;
	for (;;) {
		size_t runs = 0;
		for (size_t lo = 0; lo < n; runs++) {
			size_t mid = run_end(base, size, from, lo, n, compare);
			size_t hi = mid < n ? run_end(base, size, from, mid, n, compare) : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				to[k++] = compare(base + from[j] * size, base + from[i] * size) < 0
				              ? from[j++]
				              : from[i++];
			while (i < mid)
				to[k++] = from[i++];
			while (j < hi)
				to[k++] = from[j++];
			lo = hi;
		}
		size_t *swap = from;
		from = to;
		to = swap;
		if (runs <= 1)
			break;
	}
	if (from != order)
		memcpy(order, from, n * sizeof *order);
}

int tl_stream_group_order(const void *items, size_t size, size_t n, size_t *order,
                          uint64_t (*key)(const void *item),
                          int (*compare)(const void *, const void *))
{
	const unsigned char *base = items;
	size_t nbuckets = 1;
	while (nbuckets < n)
		nbuckets *= 2;
	size_t *start = calloc(nbuckets + 1, sizeof *start);
	if (!start)
		return -ENOMEM;
#define BUCKET(i) ((size_t)tl_mix64(key(base + (i) * size)) & (nbuckets - 1))
	for (size_t i = 0; i < n; i++)
		start[BUCKET(i) + 1]++;
	for (size_t b = 0; b < nbuckets; b++)
		start[b + 1] += start[b];
	for (size_t i = 0; i < n; i++)
		order[start[BUCKET(i)]++] = i; /* start[b]: bucket b's end */
#undef BUCKET
	size_t *tmp = NULL;
	int rc = 0;
	for (size_t b = 0, lo = 0; b < nbuckets && rc == 0; lo = start[b++]) {
		size_t *seg = order + lo, k = start[b] - lo;
		if (k <= 16) {
			for (size_t i = 1; i < k; i++) {
				size_t moving = seg[i], j = i;
				for (; j > 0 &&
				       compare(base + moving * size, base + seg[j - 1] * size) < 0;
				     j--)
					seg[j] = seg[j - 1];
				seg[j] = moving;
			}
			continue;
		}
		if (!tmp)
			tmp = malloc(n * sizeof *tmp);
		if (!tmp)
			rc = -ENOMEM;
		else
			tl_stream_sort_order(items, size, seg, tmp, k, compare);
	}
	free(tmp);
	free(start);
	return rc;
}

/* ---- the item queue ------------------------------------------------------ */

/* How far back a new item may go into the run before it goes to the heap. */
#define QUEUE_RUN_REACH 16
/* Items are kept in fixed slots: a copy of a constant size is a few moves,
 * one of a size known at run time a call. */
#define SLOT TL_ITEM_QUEUE_SLOT

void tl_item_queue_init(tl_item_queue *q, size_t size, int (*compare)(const void *, const void *))
{
	memset(q, 0, sizeof *q);
	q->size = size;
	q->compare = compare;
}

/* Copies one item: the slot's whole size between slots, size (a multiple
 * of 8) from or to the caller's item, a word at a time. */
static void copy_slot(void *dst, const void *src)
{
	memcpy(dst, src, SLOT);
}

static void copy_item(void *dst, const void *src, size_t size)
{
	for (size_t i = 0; i < size; i += 8)
		memcpy((unsigned char *)dst + i, (const unsigned char *)src + i, 8);
}

/* Grows a queue's array (from 16 items: a trace of many short threads
 * holds one queue per thread). */
static int queue_grow(unsigned char **array, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t new_cap = *cap ? *cap * 2 : 16;
	while (new_cap < need)
		new_cap *= 2;
	unsigned char *grown = new_cap <= SIZE_MAX / size ? realloc(*array, new_cap * size) : NULL;
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

static void *at(unsigned char *base, size_t i)
{
	return base + i * SLOT;
}

static int heap_push(tl_item_queue *q, const void *item)
{
	if (queue_grow(&q->heap, &q->heap_cap, q->nheap + 1, SLOT))
		return -ENOMEM;
	size_t size = q->size, i = q->nheap++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (q->compare(at(q->heap, parent), item) <= 0)
			break;
		copy_slot(at(q->heap, i), at(q->heap, parent));
		i = parent;
	}
	copy_item(at(q->heap, i), item, size);
	return 0;
}

static void heap_pop(tl_item_queue *q, void *out)
{
	size_t size = q->size, n = --q->nheap, i = 0;
	copy_item(out, q->heap, size);
	const unsigned char *last = at(q->heap, n);
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && q->compare(at(q->heap, child + 1), at(q->heap, child)) < 0)
			child++;
		if (q->compare(last, at(q->heap, child)) <= 0)
			break;
		copy_slot(at(q->heap, i), at(q->heap, child));
		i = child;
	}
	if (n)
		copy_slot(at(q->heap, i), last);
}

int tl_item_queue_push(tl_item_queue *q, const void *item)
{
	size_t size = q->size;
	if (q->head == q->n)
		q->head = q->n = 0;
	/* where it goes in the run: after every item not later than it */
	size_t pos = q->n;
	while (pos > q->head && q->n - pos < QUEUE_RUN_REACH &&
	       q->compare(at(q->run, pos - 1), item) > 0)
		pos--;
	if (pos > q->head && q->compare(at(q->run, pos - 1), item) > 0)
		return heap_push(q, item);
	if (q->n == q->cap && q->head > q->cap / 2) {
		/* reuse the room of the items popped */
		memmove(q->run, at(q->run, q->head), (q->n - q->head) * SLOT);
		pos -= q->head;
		q->n -= q->head;
		q->head = 0;
	}
	if (queue_grow(&q->run, &q->cap, q->n + 1, SLOT))
		return -ENOMEM;
	if (pos < q->n)
		memmove(at(q->run, pos + 1), at(q->run, pos), (q->n - pos) * SLOT);
	copy_item(at(q->run, pos), item, size);
	q->n++;
	return 0;
}

const void *tl_item_queue_first(const tl_item_queue *q)
{
	const void *run = q->head < q->n ? q->run + q->head * SLOT : NULL;
	if (!q->nheap)
		return run;
	if (!run || q->compare(q->heap, run) < 0)
		return q->heap;
	return run;
}

void tl_item_queue_pop(tl_item_queue *q, void *out)
{
	const void *first = tl_item_queue_first(q);
	if (first == q->heap) {
		heap_pop(q, out);
		return;
	}
	copy_item(out, first, q->size);
	q->head++;
}

void tl_item_queue_keep(const tl_item_queue *q, const size_t *rec_at, size_t n, tl_kept_recs *k)
{
	for (size_t i = q->head; i < q->n; i++)
		for (size_t r = 0; r < n; r++) {
			const uint64_t *rec;
			memcpy(&rec, q->run + i * SLOT + rec_at[r], sizeof rec);
			tl_kept_recs_add(k, rec);
		}
	for (size_t i = 0; i < q->nheap; i++)
		for (size_t r = 0; r < n; r++) {
			const uint64_t *rec;
			memcpy(&rec, q->heap + i * SLOT + rec_at[r], sizeof rec);
			tl_kept_recs_add(k, rec);
		}
}

void tl_item_queue_free(tl_item_queue *q)
{
	free(q->run);
	free(q->heap);
	q->run = q->heap = NULL;
	q->head = q->n = q->cap = q->nheap = q->heap_cap = 0;
}

/* ---- a thread's source of items, and the heap of sources ----------------- */

void tl_stream_source_init(tl_stream_source *src, size_t index, size_t size,
                           int (*compare)(const void *, const void *))
{
	memset(src, 0, sizeof *src);
	src->index = index;
	tl_item_queue_init(&src->items, size, compare);
}

int tl_stream_source_start(tl_stream_source *src, tl_snapshot_read *r,
                           const tl_thread_survey *survey, const tl_slice_stream_ops *ops,
                           void *ctx)
{
	int rc = tl_slice_stream_init(&src->match, r, survey, ops, ctx);
	src->matching = rc == 0;
	return rc;
}

int tl_stream_source_step(tl_stream_source *src)
{
	for (;;) {
		if (src->done)
			return 0;
		int more = tl_slice_stream_step(&src->match);
		if (more < 0)
			return more;
		if (src->error)
			return src->error;
		src->done = !more;
		src->floor = tl_slice_stream_floor(&src->match);
		const void *first = tl_item_queue_first(&src->items);
		if (first) {
			memcpy(&src->first_ns, first, sizeof src->first_ns);
			if (src->done || src->first_ns < src->floor)
				return 1;
		}
	}
}

void tl_stream_source_free(tl_stream_source *src)
{
	if (src->matching)
		tl_slice_stream_free(&src->match);
	src->matching = 0;
	tl_item_queue_free(&src->items);
}

int tl_source_heap_init(tl_source_heap *h, size_t max,
                        int (*before)(const tl_stream_source *, const tl_stream_source *))
{
	h->heap = malloc((max + 1) * sizeof *h->heap);
	h->n = 0;
	h->before = before;
	return h->heap ? 0 : -ENOMEM;
}

/* Whether source a's first item goes before b's. */
static inline int heap_before(const tl_source_heap *h, const tl_stream_source *a,
                              const tl_stream_source *b)
{
	if (a->first_ns != b->first_ns)
		return a->first_ns < b->first_ns;
	return h->before(a, b);
}

int tl_source_heap_add(tl_source_heap *h, tl_stream_source *src)
{
	int ready = tl_stream_source_ready(src);
	if (ready <= 0)
		return ready;
	size_t i = h->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!heap_before(h, src, h->heap[parent]))
			break;
		h->heap[i] = h->heap[parent];
		i = parent;
	}
	h->heap[i] = src;
	return 0;
}

static void sift_down(tl_source_heap *h, size_t i)
{
	tl_stream_source *moving = h->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= h->n)
			break;
		if (child + 1 < h->n && heap_before(h, h->heap[child + 1], h->heap[child]))
			child++;
		if (!heap_before(h, h->heap[child], moving))
			break;
		h->heap[i] = h->heap[child];
		i = child;
	}
	h->heap[i] = moving;
}

int tl_source_heap_next(tl_source_heap *h)
{
	int ready = tl_stream_source_ready(h->heap[0]);
	if (ready < 0)
		return ready;
	if (!ready)
		h->heap[0] = h->heap[--h->n];
	if (h->n)
		sift_down(h, 0);
	return 0;
}

void tl_source_heap_free(tl_source_heap *h)
{
	free(h->heap);
	h->heap = NULL;
	h->n = 0;
}
