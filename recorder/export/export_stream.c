/*
 * What the streaming exporters share (export_stream.h): the list of
 * threads, and the strings of the events being written.
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

	/* Threads whose blocks hold no event the exporters read: their
	 * undecodable records are counted here. */
	for (size_t i = 0; i < r->nthreads; i++) {
		if (r->threads[i].has_events)
			continue;
		tl_event_cursor cursor;
		tl_cursor_event e;
		int rc = tl_event_cursor_init(&cursor, r, &r->threads[i], 1);
		while (rc == 0 && tl_event_cursor_next(&cursor, &e))
			;
		tl_snapshot_thread_release(&r->threads[i]);
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
	if (len + 1 > s->cap - s->used)
		return NULL; /* not reached: reset made room */
	char *copy = s->buf + s->used;
	if (len)
		memcpy(copy, str, len);
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
                      uint32_t tid, tl_model_event *e)
{
	tl_snapshot_read_event(r, rec, tid, tl_stream_strings_store, strings, e);
}
