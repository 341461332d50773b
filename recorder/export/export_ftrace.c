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

/* The task column: right-aligned in TASK_WIDTH, see the file comment. */
static void write_task(tl_out *out, const char *name)
{
	const unsigned char *p = (const unsigned char *)(name ? name : "");
	size_t avail = strlen((const char *)p);
	char task[1024];
	size_t n = 0;

	if (avail == 0) {
		p = (const unsigned char *)"<...>";
		avail = 5;
	}
	while (avail && n + 4 <= sizeof task) {
		size_t len = tl_utf8_char_len(p, avail);
		if (len == 0) {
			memcpy(task + n, TL_UTF8_REPLACEMENT, 3);
			n += 3;
			len = 1;
		} else if (len == 1) {
			char c = (char)*p;
			if (c <= ' ' || c == 0x7f ||
			    (c == '-' && avail > 1 && p[1] >= '0' && p[1] <= '9'))
				c = '_';
			task[n++] = c;
		} else {
			memcpy(task + n, p, len);
			n += len;
		}
		p += len;
		avail -= len;
	}
	for (size_t pad = n; pad < TASK_WIDTH; pad++)
		tl_out_char(out, ' ');
	tl_out_bytes(out, task, n);
}

/* Right- or left-aligned decimal in a column of at least width. */
static void write_column(tl_out *out, uint64_t v, int width, int left)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, left ? "%-*llu" : "%*llu", width, (unsigned long long)v);
	tl_out_bytes(out, buf, (size_t)n);
}

static void write_prefix(tl_out *out, const tl_match_thread *thread, int64_t ts_ns)
{
	uint32_t tid = thread->tid ? thread->tid : thread->pid;
	uint64_t ns = ts_ns < 0 ? 0 : (uint64_t)ts_ns;
	char stamp[48];

	write_task(out, thread->name);
	tl_out_char(out, '-');
	write_column(out, tid, 5, 1);
	tl_out_str(out, " (");
	write_column(out, thread->pid, 5, 0);
	tl_out_str(out, ") [000] .... ");
	int n =
	    snprintf(stamp, sizeof stamp,
	             "%5llu.%06llu: tracing_mark_write: ", (unsigned long long)(ns / 1000000000u),
	             (unsigned long long)(ns % 1000000000u / 1000u));
	tl_out_bytes(out, stamp, (size_t)n);
}

/* The payload of an item, formatted with the recorder's writer; 0 when it
 * has none (NaN counter). */
static size_t item_payload(char *payload, uint32_t pid, const tl_model *model,
                           const tl_slice_match *match, const tl_match_item *item)
{
	char pid_text[24];
	struct tl_atrace_payload p = {.pid = pid_text,
	                              .pid_len = tl_atrace_format_i64(pid_text, pid)};
	int truncated = 0;
	if (item->kind == TL_ITEM_OPEN) {
		const tl_model_event *ev = &model->events[match->slices[item->ref].event];
		p.phase = 'B';
		p.name = tl_export_event_name(ev);
		p.name_len = strlen(p.name);
		return tl_atrace_format(payload, &p, &truncated);
	}
	if (item->kind != TL_ITEM_EVENT) {
		p.phase = 'E';
		return tl_atrace_format(payload, &p, &truncated);
	}
	const tl_model_event *ev = &model->events[item->ref];
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
		if (ev->counter_is_double && !tl_atrace_counter_from_double(ev->counter_d, &p.number))
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
 * The snapshot's clock and stats as comment lines, which both viewers skip:
 * "# timeline: key=value ...".
 */
static void write_metadata(tl_out *out, const tl_model *model, const tl_slice_match *match)
{
	const tl_stats *st = &model->stats;
	char text[768];
	int n = snprintf(text, sizeof text,
			 "# timeline: recorder=%s clock=%s snapshot_ns=%lld boottime_ns=%lld "
			 "monotonic_ns=%lld realtime_ns=%lld complete=%d\n"
			 "# timeline: events_written=%llu events_overwritten=%llu "
			 "events_dropped=%llu strings_truncated=%llu args_dropped=%llu "
			 "blocks_torn=%llu unmatched_begin=%llu unmatched_end=%llu\n",
			 model->recorder && *model->recorder ? model->recorder : "unknown",
			 tl_model_clock_name(model->clock_id), (long long)model->snapshot_ns,
			 (long long)model->boottime_ns, (long long)model->monotonic_ns,
			 (long long)model->realtime_ns, model->complete,
			 (unsigned long long)st->events_written,
			 (unsigned long long)st->events_overwritten,
			 (unsigned long long)st->events_dropped,
			 (unsigned long long)st->strings_truncated,
			 (unsigned long long)st->args_dropped, (unsigned long long)st->blocks_torn,
			 (unsigned long long)match->unmatched_begin,
			 (unsigned long long)match->unmatched_end);
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
	tl_out *out = malloc(sizeof *out);
	if (!lines || !out) {
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
	char text[sizeof header + 64];
	int n = snprintf(text, sizeof text, header, nlines, nlines);
	tl_out_bytes(out, text, (size_t)n);
	write_metadata(out, model, &match);

	for (size_t i = 0; i < nlines && !out->err; i++) {
		const tl_match_item *item = lines[i].item;
		char payload[TL_ATRACE_PAYLOAD_MAX];
		uint32_t pid = match.threads[lines[i].thread].pid;
		size_t len = item_payload(payload, pid, model, &match, item);
		write_prefix(out, &match.threads[lines[i].thread], lines[i].ts_ns);
		tl_out_bytes(out, payload, len);
		tl_out_char(out, '\n');
	}
	rc = tl_out_flush(out);
	if (counts) {
		counts->unmatched_begin = match.unmatched_begin;
		counts->unmatched_end = match.unmatched_end;
	}

out_free:
	free(out);
	free(lines);
	tl_slice_match_free(&match);
	return rc;
}
