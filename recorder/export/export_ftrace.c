/*
 * ftrace text exporter (formats.md sections 2 and 4.2): what
 * `cat tracing/trace` prints for tracing_mark_write events, in the shape
 * Perfetto's to_ftrace writes, with flags separated from the cpu column so
 * that catapult's stricter pattern also matches:
 *
 *             main-1001  ( 1000) [000] ....   100.000000: tracing_mark_write: B|1000|work
 *
 * Payloads are the atrace ones (section 4.1): B/E for slices (a COMPLETE
 * event becomes a B at its start and an E at its end), C for counters, S/F
 * for async begin/end with the id as a decimal int64 cookie, I for thread
 * instants, N|pid|<category>|name for process, global and async instants.
 * Flows and arguments have no atrace form and are left out.
 *
 * Lines are sorted by timestamp across threads; at an equal timestamp a
 * thread's lines keep their matched order and threads go by increasing tid.
 *
 * Choices a reader may want to know:
 *  - Payloads are formatted by the systrace recorder's own writer
 *    (tl_atrace_format), so a name gives the same bytes in both: '|' and
 *    control characters (newline, carriage return, tab...) become ' ',
 *    invalid UTF-8 bytes become U+FFFD, trailing spaces are trimmed, and an
 *    empty result is written "unnamed" (a category "default"). A payload is
 *    kept to 1023 bytes by cutting the name on a character boundary, then
 *    the category used as a track name (docs/systrace.md, "Names").
 *  - Task names: spaces and control characters become '_', and a '-'
 *    followed by a digit becomes '_' (it would read as the -tid separator);
 *    a thread without a name is "<...>", as the kernel prints it.
 *  - A tid of 0 is written as the pid. Negative timestamps are written as 0.
 *  - The tgid column and the payload pids are each thread's process (the
 *    model's pid unless it has several).
 *  - Double counters are rounded to the nearest integer (halves away from
 *    zero) and saturate at the int64 range; NaN samples are left out.
 */
#include "recorder/export/slice_match.h"
#include "recorder/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/atrace_format.h"
#include "recorder/export/export_stream.h"
#include "recorder/export/slice_stream.h"
#include "recorder/export/trace_model.h"

#define TASK_WIDTH 16

typedef struct ftrace_line {
	int64_t ts_ns;
	size_t thread; /* index in tl_slice_match.threads */
	size_t order;
	const tl_match_item *item;
} ftrace_line;

static const char header[] = "# tracer: nop\n"
                             "#\n"
                             "# entries-in-buffer/entries-written: %zu/%zu   #P:1\n"
                             "#\n"
                             "#                                      _-----=> irqs-off\n"
                             "#                                     / _----=> need-resched\n"
                             "#                                    | / _---=> hardirq/softirq\n"
                             "#                                    || / _--=> preempt-depth\n"
                             "#                                    ||| /     delay\n"
                             "#           TASK-PID    TGID   CPU#  ||||   TIMESTAMP  FUNCTION\n"
                             "#              | |        |      |   ||||      |         |\n";

/* The part of a line before its timestamp: the task, tid, tgid, cpu and
 * flags columns, which depend on the thread only. */
#define PREFIX_MAX (1024 + 64)

/* Decimal digits of v, written backwards ending at end; returns their count. */
static size_t digits_before(char *end, uint64_t v)
{
	size_t n = 0;
	do {
		*--end = (char)('0' + v % 10);
		n++;
		v /= 10;
	} while (v);
	return n;
}

/* A decimal in a column of at least width, right- or left-aligned. */
static size_t format_column(char *out, uint64_t v, size_t width, int left)
{
	char digits[20];
	size_t n = digits_before(digits + sizeof digits, v);
	size_t pad = n < width ? width - n : 0, len = 0;
	if (!left) {
		memset(out, ' ', pad);
		len = pad;
	}
	memcpy(out + len, digits + sizeof digits - n, n);
	len += n;
	if (left) {
		memset(out + len, ' ', pad);
		len += pad;
	}
	return len;
}

/*
 * The task column (right-aligned in TASK_WIDTH, see the file comment), then
 * "-tid (tgid) [000] .... ", into buf (PREFIX_MAX bytes); returns its length.
 */
static size_t format_thread_prefix(char *buf, const tl_match_thread *thread)
{
	const unsigned char *p = (const unsigned char *)(thread->name ? thread->name : "");
	size_t avail = strlen((const char *)p);
	char task[1024];
	size_t n = 0, len = 0;

	if (avail == 0) {
		p = (const unsigned char *)"<...>";
		avail = 5;
	}
	while (avail && n + 4 <= sizeof task) {
		size_t char_len = tl_utf8_char_len(p, avail);
		if (char_len == 0) {
			memcpy(task + n, TL_UTF8_REPLACEMENT, 3);
			n += 3;
			char_len = 1;
		} else if (char_len == 1) {
			char c = (char)*p;
			if (c <= ' ' || c == 0x7f ||
			    (c == '-' && avail > 1 && p[1] >= '0' && p[1] <= '9'))
				c = '_';
			task[n++] = c;
		} else {
			memcpy(task + n, p, char_len);
			n += char_len;
		}
		p += char_len;
		avail -= char_len;
	}
	for (size_t pad = n; pad < TASK_WIDTH; pad++)
		buf[len++] = ' ';
	memcpy(buf + len, task, n);
	len += n;
	buf[len++] = '-';
	len += format_column(buf + len, thread->tid ? thread->tid : thread->pid, 5, 1);
	memcpy(buf + len, " (", 2);
	len += 2;
	len += format_column(buf + len, thread->pid, 5, 0);
	memcpy(buf + len, ") [000] .... ", 13);
	return len + 13;
}

/* A line's start: the thread's prefix, then "%5llu.%06llu: tracing_mark_write: ". */
static void write_prefix(tl_out *out, const char *prefix, size_t prefix_len, int64_t ts_ns)
{
	static const char function[] = ": tracing_mark_write: ";
	uint64_t ns = ts_ns < 0 ? 0 : (uint64_t)ts_ns;
	char stamp[64];
	size_t len = format_column(stamp, ns / 1000000000u, 5, 0);
	char micro[20];
	size_t n = digits_before(micro + sizeof micro, 1000000u + ns % 1000000000u / 1000u);
	stamp[len++] = '.';
	memcpy(stamp + len, micro + sizeof micro - n + 1, 6);
	len += 6;
	memcpy(stamp + len, function, sizeof function - 1);
	len += sizeof function - 1;
	tl_out_bytes(out, prefix, prefix_len);
	tl_out_bytes(out, stamp, len);
}

/* The payload of a line, formatted with the recorder's writer: a slice's
 * open (ev its BEGIN or COMPLETE event) or close (ev unused), or an event
 * (ev). 0 when it has none (NaN counter). */
static size_t item_payload(char *payload, const char *pid_text, size_t pid_len,
                           tl_match_item_kind kind, const tl_model_event *ev)
{
	struct tl_atrace_payload p = {.pid = pid_text, .pid_len = pid_len};
	int truncated = 0;
	if (kind == TL_ITEM_OPEN) {
		p.phase = 'B';
		p.name = tl_export_event_name(ev);
		p.name_len = strlen(p.name);
		return tl_atrace_format(payload, &p, &truncated);
	}
	if (kind != TL_ITEM_EVENT) {
		p.phase = 'E';
		return tl_atrace_format(payload, &p, &truncated);
	}
	p.name = tl_export_event_name(ev);
	p.name_len = strlen(p.name);
	if (ev->phase == TL_PHASE_ASYNC_INSTANT ||
	    (ev->phase == TL_PHASE_INSTANT &&
	     (ev->scope & TL_EVENT_SCOPE_MASK) != TL_EVENT_SCOPE_THREAD)) {
		/* On a track named after the category. */
		p.phase = 'N';
		p.track = tl_export_event_cat(ev);
		p.track_len = strlen(p.track);
		p.track_fallback = "default";
		return tl_atrace_format(payload, &p, &truncated);
	}
	switch (ev->phase) {
	case TL_PHASE_COUNTER:
		p.phase = 'C';
		p.number = ev->counter_i;
		if (ev->counter_is_double &&
		    !tl_atrace_counter_from_double(ev->counter_d, &p.number))
			return 0;
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
		p.phase = ev->phase == TL_PHASE_ASYNC_BEGIN ? 'S' : 'F';
		p.number = tl_atrace_cookie(ev->id);
		break;
	default: /* TL_PHASE_INSTANT, thread scope */
		p.phase = 'I';
		break;
	}
	return tl_atrace_format(payload, &p, &truncated);
}

/* A thread's line prefix and pid, formatted once. */
typedef struct thread_prefix {
	const tl_match_thread *thread;
	size_t len; /* 0: not formatted yet */
	char text[PREFIX_MAX];
	size_t pid_len;
	char pid[24];
} thread_prefix;

/* One line: prefix, payload, newline. */
static void write_line(tl_out *out, thread_prefix *prefix, int64_t ts_ns, tl_match_item_kind kind,
                       const tl_model_event *ev)
{
	if (!prefix->len) {
		prefix->len = format_thread_prefix(prefix->text, prefix->thread);
		prefix->pid_len = tl_atrace_format_i64(prefix->pid, prefix->thread->pid);
	}
	char payload[TL_ATRACE_PAYLOAD_MAX];
	size_t len = item_payload(payload, prefix->pid, prefix->pid_len, kind, ev);
	write_prefix(out, prefix->text, prefix->len, ts_ns);
	tl_out_bytes(out, payload, len);
	tl_out_char(out, '\n');
}

static int compare_line(const void *pa, const void *pb)
{
	const ftrace_line *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/*
 * The header, then the snapshot's clock and stats (st) and this export's
 * counts as comment lines, which both viewers skip: "# timeline: key=value ...".
 */
static void write_head(tl_out *out, const tl_model *model, const tl_stats *st, size_t nlines,
                       uint64_t unmatched_begin, uint64_t unmatched_end)
{
	char head[sizeof header + 64];
	int n = snprintf(head, sizeof head, header, nlines, nlines);
	tl_out_bytes(out, head, (size_t)n);
	char text[768];
	n = snprintf(
	    text, sizeof text,
	    "# timeline: recorder=%s clock=%s snapshot_ns=%lld boottime_ns=%lld "
	    "monotonic_ns=%lld realtime_ns=%lld complete=%d\n"
	    "# timeline: events_written=%llu events_overwritten=%llu "
	    "events_dropped=%llu strings_truncated=%llu args_dropped=%llu "
	    "blocks_torn=%llu unmatched_begin=%llu unmatched_end=%llu\n",
	    model->recorder && *model->recorder ? model->recorder : "unknown",
	    tl_model_clock_name(model->clock_id), (long long)model->snapshot_ns,
	    (long long)model->boottime_ns, (long long)model->monotonic_ns,
	    (long long)model->realtime_ns, model->complete, (unsigned long long)st->events_written,
	    (unsigned long long)st->events_overwritten, (unsigned long long)st->events_dropped,
	    (unsigned long long)st->strings_truncated, (unsigned long long)st->args_dropped,
	    (unsigned long long)st->blocks_torn, (unsigned long long)unmatched_begin,
	    (unsigned long long)unmatched_end);
	if (n > 0)
		tl_out_bytes(out, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

static int is_nan_counter(const tl_model_event *ev)
{
	return ev->phase == TL_PHASE_COUNTER && ev->counter_is_double && isnan(ev->counter_d);
}

int tl_export_ftrace(const tl_model *model, int fd, tl_export_counts *counts)
{
	tl_slice_match match;
	int rc = tl_slice_match_build(model, &match);
	if (rc)
		return rc;

	ftrace_line *lines = calloc(match.nitems + 1, sizeof *lines);
	thread_prefix *prefixes = calloc(match.nthreads + 1, sizeof *prefixes);
	tl_out *out = malloc(sizeof *out);
	if (!lines || !prefixes || !out) {
		rc = -ENOMEM;
		goto out_free;
	}
	size_t nlines = 0;
	for (size_t t = 0; t < match.nthreads; t++) {
		const tl_match_thread *thread = &match.threads[t];
		for (size_t i = 0; i < thread->nitems; i++) {
			const tl_match_item *item = &match.items[thread->first_item + i];
			if (item->kind == TL_ITEM_EVENT) {
				if (is_nan_counter(&model->events[item->ref]))
					continue;
			} else if (match.slices[item->ref].flags & TL_SLICE_FLOW_MARKER) {
				continue;
			}
			ftrace_line *line = &lines[nlines++];
			line->ts_ns = item->ts_ns;
			line->thread = t;
			line->order = item->order;
			line->item = item;
		}
	}
	qsort(lines, nlines, sizeof *lines, compare_line);

	tl_out_init(out, fd);
	write_head(out, model, &model->stats, nlines, match.unmatched_begin, match.unmatched_end);

	for (size_t i = 0; i < nlines && !out->err; i++) {
		const tl_match_item *item = lines[i].item;
		const tl_model_event *ev = NULL;
		if (item->kind == TL_ITEM_EVENT)
			ev = &model->events[item->ref];
		else if (item->kind == TL_ITEM_OPEN)
			ev = &model->events[match.slices[item->ref].event];
		thread_prefix *prefix = &prefixes[lines[i].thread];
		prefix->thread = &match.threads[lines[i].thread];
		write_line(out, prefix, lines[i].ts_ns, item->kind, ev);
	}
	rc = tl_out_flush(out);
	if (counts) {
		counts->unmatched_begin = match.unmatched_begin;
		counts->unmatched_end = match.unmatched_end;
	}

out_free:
	free(out);
	free(prefixes);
	free(lines);
	tl_slice_match_free(&match);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Streamed from a binary snapshot */

/*
 * Every thread is surveyed first (slice_stream.h): the header counts the
 * lines, and the counts of unmatched slices come before them. Then each
 * thread's matching runs a segment at a time, its lines waiting in a queue
 * ordered by (ts, order) until the matching's floor passes them, and the
 * threads' next lines are merged by (ts, thread) in a heap of threads.
 */

typedef struct stream_line {
	int64_t ts_ns;
	uint64_t order;
	const uint64_t *rec; /* the event, or the BEGIN or COMPLETE event of an open */
	tl_match_item_kind kind;
} stream_line;
_Static_assert(sizeof(stream_line) % 8 == 0 && sizeof(stream_line) <= TL_ITEM_QUEUE_SLOT &&
                   offsetof(stream_line, ts_ns) == 0,
               "a source's item");

typedef struct line_source {
	tl_stream_source base; /* first: its matching, its lines waiting for their place */
	thread_prefix prefix;  /* prefix.thread: the thread */
	tl_thread_survey survey;
	uint64_t nlines;
} line_source;

static void count_open_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	(void)order;
	if (s->kind != TL_STREAM_MARKER)
		((line_source *)ctx)->nlines++;
}

static void count_event(void *ctx, const tl_cursor_event *e, uint64_t order)
{
	(void)order;
	double d;
	memcpy(&d, &e->value, sizeof d);
	if (!(e->phase == TL_PHASE_COUNTER && (e->flags & TL_REC_F_COUNTER_DOUBLE) && isnan(d)))
		((line_source *)ctx)->nlines++;
}

static const tl_slice_stream_ops count_ops = {
    .open = count_open_close,
    .close = count_open_close,
    .event = count_event,
};

static int compare_stream_line(const void *pa, const void *pb)
{
	const stream_line *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static void push_line(line_source *src, const stream_line *line)
{
	tl_stream_source_push(&src->base, line);
}

static void line_open(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	if (s->kind == TL_STREAM_MARKER)
		return;
	stream_line line = {s->start_ns, order, s->rec, TL_ITEM_OPEN};
	push_line(ctx, &line);
}

static void line_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	if (s->kind == TL_STREAM_MARKER)
		return;
	stream_line line = {s->end_ns, order, NULL, TL_ITEM_CLOSE};
	push_line(ctx, &line);
}

static void line_event(void *ctx, const tl_cursor_event *e, uint64_t order)
{
	double d;
	memcpy(&d, &e->value, sizeof d);
	if (e->phase == TL_PHASE_COUNTER && (e->flags & TL_REC_F_COUNTER_DOUBLE) && isnan(d))
		return;
	stream_line line = {e->ts_ns, order, e->rec, TL_ITEM_EVENT};
	push_line(ctx, &line);
}

/* The lines waiting for their place keep their events' records. */
static void keep_lines(void *ctx, tl_kept_recs *k)
{
	static const size_t rec_at[] = {offsetof(stream_line, rec)};
	tl_item_queue_keep(&((line_source *)ctx)->base.items, rec_at, 1, k);
}

static const tl_slice_stream_ops line_ops = {
    .open = line_open,
    .close = line_close,
    .event = line_event,
    .keep = keep_lines,
};

/* The heap of sources by their next line, then by thread. */
static int source_before(const tl_stream_source *a, const tl_stream_source *b)
{
	const stream_line *la = tl_item_queue_first(&a->items);
	const stream_line *lb = tl_item_queue_first(&b->items);
	if (la->ts_ns != lb->ts_ns)
		return la->ts_ns < lb->ts_ns;
	return a->index < b->index;
}

/* Writes every source's lines in order. 0 or -ENOMEM. */
static int merge_sources(tl_snapshot_read *r, tl_out *out, line_source *sources, size_t n)
{
	tl_source_heap heap;
	tl_stream_strings strings = {0};
	int rc = tl_source_heap_init(&heap, n, source_before);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = tl_stream_source_start(&sources[i].base, r, &sources[i].survey, &line_ops,
		                            &sources[i]);
		if (rc == 0)
			rc = tl_source_heap_add(&heap, &sources[i].base);
	}
	tl_stream_source *top;
	while (rc == 0 && (top = tl_source_heap_top(&heap)) && !out->err) {
		line_source *src = (line_source *)top;
		stream_line line;
		tl_item_queue_pop(&top->items, &line);
		tl_model_event ev;
		if (line.rec) {
			rc = tl_stream_strings_reset(&strings, &line.rec, 1);
			if (rc)
				break;
			tl_stream_decode(r, &strings, line.rec, src->prefix.thread->tid, 0, &ev);
		}
		write_line(out, &src->prefix, line.ts_ns, line.kind, line.rec ? &ev : NULL);
		rc = tl_source_heap_next(&heap);
	}
	tl_stream_strings_free(&strings);
	tl_source_heap_free(&heap);
	return rc;
}

/* Surveys a thread; its lines and counts from the survey, or from a run of
 * the matching when slices may be dropped for depth. */
static int survey_source(tl_snapshot_read *r, line_source *src, tl_snapshot_thread *t,
                         uint64_t *unmatched_begin, uint64_t *unmatched_end)
{
	int rc = tl_thread_survey_run(r, t, &src->survey, NULL);
	if (rc)
		return rc;
	const tl_thread_survey *sv = &src->survey;
	if (!sv->may_be_too_deep) {
		src->nlines =
		    2 * (sv->nbegins + sv->ncompletes) + sv->nitems_events - sv->nan_counters;
		*unmatched_begin += sv->unmatched_begin;
		*unmatched_end += sv->unmatched_end;
		return 0;
	}
	tl_slice_stream count;
	rc = tl_slice_stream_init(&count, r, sv, &count_ops, src);
	if (rc == 0)
		rc = tl_slice_stream_run(&count);
	*unmatched_begin += count.counts.unmatched_begin;
	*unmatched_end += count.counts.unmatched_end;
	tl_slice_stream_free(&count);
	return rc;
}

int tl_export_ftrace_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts)
{
	tl_stream_thread *threads = NULL;
	line_source *sources = NULL;
	size_t nthreads = 0, nsources = 0;
	tl_out *out = malloc(sizeof *out);
	int rc = out ? tl_stream_threads(r, &threads, &nthreads) : -ENOMEM;
	if (rc == 0) {
		sources = calloc(nthreads + 1, sizeof *sources);
		rc = sources ? 0 : -ENOMEM;
	}
	uint64_t unmatched_begin = 0, unmatched_end = 0;
	size_t nlines = 0;
	/* every record kept is named (keep_lines): the passes free the
	 * unpacked records of a file recorder's file behind them */
	int trim_behind = r->trim_behind;
	r->trim_behind = 1;
	for (size_t t = 0; t < nthreads && rc == 0; t++) {
		if (!threads[t].snapshot)
			continue;
		line_source *src = &sources[nsources++];
		tl_stream_source_init(&src->base, t, sizeof(stream_line), compare_stream_line);
		src->prefix.thread = &threads[t].info;
		rc = survey_source(r, src, threads[t].snapshot, &unmatched_begin, &unmatched_end);
		nlines += src->nlines;
	}
	if (rc == 0) {
		tl_out_init(out, fd);
		tl_stats stats = tl_stream_stats(r);
		write_head(out, r->model, &stats, nlines, unmatched_begin, unmatched_end);
		rc = merge_sources(r, out, sources, nsources);
		int written = tl_out_flush(out);
		if (rc == 0)
			rc = written;
	}
	if (rc == 0 && r->unpack_failed)
		rc = -ENOMEM;
	if (rc == 0 && counts) {
		counts->unmatched_begin = unmatched_begin;
		counts->unmatched_end = unmatched_end;
	}
	for (size_t i = 0; i < nsources; i++) {
		tl_stream_source_free(&sources[i].base);
		tl_thread_survey_free(&sources[i].survey);
		tl_snapshot_thread_unload(r, sources[i].survey.thread);
	}
	r->trim_behind = trim_behind;
	free(sources);
	free(threads);
	free(out);
	return rc;
}
