/*
 * Reader of the binary snapshot (snapshot_format.h) into a tl_model: the
 * snapshot read in place (snapshot_read.h), then every thread's events, in
 * increasing tid and in each thread's order, copied into the model, so that
 * the events come out sorted by thread whatever the order of the chunks in
 * the file. The streaming exporters (export_stream.h) read the same events
 * without the model.
 */
#include "recorder/export/trace_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/snapshot_read.h"

static const char *intern_string(void *model, const char *s, size_t len)
{
	return tl_model_intern(model, s, len);
}

/* Copies thread t's events into the model, numbered from model->nevents
 * on; an event's args go to the model's arena, only when it has some. */
static int read_thread_events(tl_snapshot_read *r, tl_snapshot_thread *t)
{
	tl_model *m = r->model;
	tl_event_cursor cursor;
	int rc = tl_event_cursor_init(&cursor, r, t, 1);
	tl_cursor_event ce;
	tl_model_arg args[TL_MAX_ARGS];
	while (rc == 0 && tl_event_cursor_next(&cursor, &ce)) {
		tl_model_event *e = tl_model_event_append(m);
		if (!e)
			return -ENOMEM;
		uint32_t seq = (uint32_t)(m->nevents - 1);
		e->args = args;
		rc = tl_snapshot_read_event(r, ce.rec, t->tid, 1, intern_string, m, e);
		e->ts_ns = ce.ts_ns;
		if (e->phase == TL_PHASE_COMPLETE)
			e->end_ns = ce.end_ns;
		e->seq = seq;
		if (rc == 0)
			rc = tl_model_event_args_alloc(m, e, e->nargs);
		else
			e->nargs = 0;
		if (!e->nargs)
			e->args = NULL;
	}
	tl_snapshot_thread_unload(r, t); /* the model holds copies of its strings */
	return rc;
}

/* tl_model_read_binary, function records named as symbols allows. */
static int read_binary(const void *data, size_t len, const tl_symbol_options *symbols,
                       tl_model *out, char *err, size_t errlen)
{
	tl_snapshot_read r;
	int rc = tl_snapshot_read_open(&r, data, len, out, err, errlen);
	if (rc < 0)
		return rc;
	r.symbols = symbols;
	for (size_t i = 0; i < r.nthreads && rc == 0; i++)
		rc = read_thread_events(&r, &r.threads[i]);
	if (rc == 0)
		tl_snapshot_read_finish(&r);
	else if (err && errlen)
		snprintf(err, errlen, "out of memory");
	tl_snapshot_read_close(&r);
	if (rc < 0)
		tl_model_free(out);
	return rc;
}

int tl_model_read_binary(const void *data, size_t len, tl_model *out, char *err, size_t errlen)
{
	return read_binary(data, len, NULL, out, err, errlen);
}

int tl_model_read_binary_files(const char *const *paths, size_t n, const tl_symbol_options *symbols,
                               tl_model *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	void *data;
	size_t len, failed;
	int rc = tl_snapshot_load_files(paths, n, &data, &len, &failed);
	if (rc < 0) {
		if (err && errlen && n > 1)
			snprintf(err, errlen, "%s: %s", paths[failed], strerror(-rc));
		else if (err && errlen)
			snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	rc = read_binary(data, len, symbols, out, err, errlen);
	free(data);
	return rc;
}

int tl_model_read_binary_file(const char *path, tl_model *out, char *err, size_t errlen)
{
	return tl_model_read_binary_files(&path, 1, NULL, out, err, errlen);
}
