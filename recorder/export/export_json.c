/*
 * Chrome JSON exporter (formats.md sections 3 and 4.3): the object form
 * {"traceEvents":[...],"displayTimeUnit":"ns","metadata":{...}}, strict
 * JSON, read the same way by Perfetto and catapult.
 *
 * Layout: the process_name and thread_name metadata events first, then
 * each thread's events, thread by thread (increasing tid), then the flow
 * events of every thread, sorted by the ts they are written with. Within a
 * thread events are sorted the way Perfetto's sorter orders them (END
 * first at an equal timestamp, then X by decreasing duration, then the
 * rest in the order the slices were matched), so the file order is also
 * what Perfetto and catapult see.
 *
 * Choices a reader may want to know:
 *  - Slices are B/E pairs (E repeating the B's name and cat), except those
 *    slice_match.h marks TL_SLICE_AS_COMPLETE, written as one X: COMPLETE
 *    events, slices carrying a flow, zero-length slices (an E sorts before
 *    its own B at an equal timestamp) and their ancestors starting with
 *    them. A slice closed at the snapshot has "tl_closed_at_snapshot": true.
 *  - Instants are written with ph "I", which DevTools needs and Perfetto
 *    and catapult read as "i".
 *  - An empty name is written "unnamed", an empty category "default".
 *  - ts and dur are microseconds with exactly three decimals, printed from
 *    integer nanoseconds (exact in both viewers).
 *  - A tid of 0 (thread unknown) is written as the pid, as Perfetto would
 *    read it anyway; every event has integer pid and tid. Events and
 *    threads carry their own pid when the model has several processes;
 *    each process gets a process_name event.
 *  - Flows are flow v1 events ("s", "t", "f" with "bp":"e"), the one form
 *    that Perfetto, catapult and Chrome DevTools' trace engine all read;
 *    flow v2 ("bind_id" + flow_out/flow_in) is not written, so that no
 *    viewer sees a flow twice. Each flow event carries the flow's own name
 *    and cat and its id as a hex string, and is written at the start of the
 *    slice it binds to (see slice_match.h for which slice): DevTools binds
 *    a flow event to the event of equal ts, pid, tid and cat, Perfetto and
 *    catapult to the innermost slice open at its ts. When that start is
 *    earlier than the flow's previous event as written, which would reorder
 *    the flow in viewers that sort by ts, the flow event keeps its own ts
 *    (inside the slice: Perfetto and catapult still bind it there).
 *    The flow events follow every thread's events, sorted by ts: DevTools
 *    pairs them in file order, so a flow's start must come first.
 *    Global flow ids are written as they are. Process-scoped ids are mixed
 *    with the event's pid so that two processes' files can be merged:
 *    id = mix64(id + 0x9e3779b97f4a7c15 * (pid + 1)), mix64 being the
 *    splitmix64 finaliser (a bijection, so distinct ids of one process
 *    never collide); a result of 0 becomes 1.
 *  - The args of a flow bound to a slice are merged into the slice's args;
 *    keys already present keep the slice's value.
 *  - Counter values: a NaN sample is left out and an infinite one is
 *    clamped to +-DBL_MAX; both are counted (export_counter_values_non_finite).
 *    Double arguments that are not finite are written as the strings "NaN",
 *    "Infinity" or "-Infinity".
 *  - metadata: recorder, clock name and id, the clock snapshot, whether the
 *    snapshot was complete, every field of the model's stats, then the
 *    export_* counts of this export (what it had to repair or leave out).
 */
#include "recorder/export/slice_match.h"
#include "recorder/utf8.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/trace_model.h"

enum { CLASS_END, CLASS_COMPLETE, CLASS_OTHER };

/* One line of a thread's output, sorted before writing. */
typedef struct json_record {
	int64_t ts_ns;
	int64_t dur_ns; /* CLASS_COMPLETE */
	size_t order;
	int cls;
	const tl_match_item *item;
} json_record;

typedef struct json_writer {
	const tl_model *model;
	const tl_slice_match *match;
	tl_out *out;
	int first_event;
	uint64_t counter_values_non_finite;
} json_writer;

/* ------------------------------------------------------------------------ */
/* Values */

static void write_hex(tl_out *out, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, "\"0x%llx\"", (unsigned long long)v);
	tl_out_bytes(out, buf, (size_t)n);
}

/* Nanoseconds as microseconds with three decimals, without floating point. */
static void write_us(tl_out *out, int64_t ns)
{
	uint64_t mag = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	char frac[4] = {'.', (char)('0' + mag % 1000 / 100), (char)('0' + mag % 100 / 10),
	                (char)('0' + mag % 10)};
	if (ns < 0)
		tl_out_char(out, '-');
	tl_out_u64(out, mag / 1000);
	tl_out_bytes(out, frac, sizeof frac);
}

/*
 * A finite double with the fewest digits that read back as the same value.
 * The decimal separator of the current locale is replaced by '.'.
 */
static void write_double(tl_out *out, double v)
{
	char buf[40];
	for (int precision = 15; precision <= 17; precision++) {
		snprintf(buf, sizeof buf, "%.*g", precision, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	char json[40];
	size_t n = 0;
	int separator_done = 0;
	for (const char *p = buf; *p; p++) {
		int numeric =
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == 'e' || *p == 'E';
		if (numeric) {
			json[n++] = *p;
		} else if (!separator_done) {
			json[n++] = '.';
			separator_done = 1;
		}
	}
	tl_out_bytes(out, json, n);
}

static void write_string(tl_out *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t avail = strlen((const char *)p);

	tl_out_char(out, '"');
	while (avail) {
		size_t run = 0;
		while (run < avail && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' &&
		       p[run] != '\\')
			run++;
		tl_out_bytes(out, p, run);
		p += run;
		avail -= run;
		if (!avail)
			break;

		unsigned char c = *p;
		if (c >= 0x80) {
			size_t len = tl_utf8_char_len(p, avail);
			if (len) {
				tl_out_bytes(out, p, len);
			} else {
				tl_out_str(out, TL_UTF8_REPLACEMENT);
				len = 1;
			}
			p += len;
			avail -= len;
			continue;
		}
		switch (c) {
		case '"':
			tl_out_str(out, "\\\"");
			break;
		case '\\':
			tl_out_str(out, "\\\\");
			break;
		case '\n':
			tl_out_str(out, "\\n");
			break;
		case '\r':
			tl_out_str(out, "\\r");
			break;
		case '\t':
			tl_out_str(out, "\\t");
			break;
		default: {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			tl_out_bytes(out, esc, sizeof esc);
			break;
		}
		}
		p++;
		avail--;
	}
	tl_out_char(out, '"');
}

static void write_key(tl_out *out, const char *key)
{
	tl_out_char(out, ',');
	write_string(out, key);
	tl_out_char(out, ':');
}

static void write_arg_value(tl_out *out, const tl_model_arg *arg)
{
	switch (arg->type) {
	case TL_ARG_INT:
		tl_out_i64(out, arg->v.i);
		break;
	case TL_ARG_UINT:
		tl_out_u64(out, arg->v.u);
		break;
	case TL_ARG_DOUBLE:
		if (isnan(arg->v.d))
			tl_out_str(out, "\"NaN\"");
		else if (isinf(arg->v.d))
			tl_out_str(out, arg->v.d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		else
			write_double(out, arg->v.d);
		break;
	case TL_ARG_BOOL:
		tl_out_str(out, arg->v.b ? "true" : "false");
		break;
	case TL_ARG_POINTER:
		write_hex(out, arg->v.p);
		break;
	case TL_ARG_STRING:
	case TL_ARG_STRING_COPY:
		write_string(out, arg->v.s);
		break;
	default:
		tl_out_str(out, "null");
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Events */

/* Args of up to three events (tl_arg_list_collect), plus the snapshot flag. */
static void write_args(tl_out *out, const tl_model_event *a, const tl_model_event *b,
                       const tl_model_event *c, int closed_at_snapshot)
{
	tl_arg_list list;
	tl_arg_list_collect(&list, a, b, c);
	for (size_t i = 0; i < list.nargs; i++) {
		const tl_model_arg *arg = list.args[i];
		tl_out_str(out, i ? "," : ",\"args\":{");
		write_string(out, arg->key ? arg->key : "");
		tl_out_char(out, ':');
		write_arg_value(out, arg);
	}
	if (closed_at_snapshot) {
		tl_out_str(out, list.nargs ? "," : ",\"args\":{");
		tl_out_str(out, "\"tl_closed_at_snapshot\":true");
	}
	if (list.nargs || closed_at_snapshot)
		tl_out_char(out, '}');
}

static uint32_t output_tid(uint32_t pid, uint32_t tid)
{
	return tid ? tid : pid;
}

/* Opens an event object: ph, name, cat (unless NULL), pid, tid, ts. */
static void begin_event(json_writer *w, char ph, const char *name, const char *cat, uint32_t pid,
                        uint32_t tid, int64_t ts_ns)
{
	tl_out *out = w->out;
	char head[9] = {'{', '"', 'p', 'h', '"', ':', '"', ph, '"'};
	tl_out_str(out, w->first_event ? "\n" : ",\n");
	w->first_event = 0;
	tl_out_bytes(out, head, sizeof head);
	write_key(out, "name");
	write_string(out, name);
	if (cat) {
		write_key(out, "cat");
		write_string(out, cat);
	}
	write_key(out, "pid");
	tl_out_u64(out, pid);
	write_key(out, "tid");
	tl_out_u64(out, output_tid(pid, tid));
	if (ph != 'M') {
		write_key(out, "ts");
		write_us(out, ts_ns);
	}
}

static void write_metadata_event(json_writer *w, const char *what, uint32_t pid, uint32_t tid,
                                 const char *name)
{
	begin_event(w, 'M', what, NULL, pid, tid, 0);
	tl_out_str(w->out, ",\"ts\":0,\"args\":{\"name\":");
	write_string(w->out, name);
	tl_out_str(w->out, "}}");
}

static void write_slice_open(json_writer *w, const tl_slice *s)
{
	const tl_model_event *events = w->model->events;
	const tl_model_event *ev = &events[s->event];
	int closed = !!(s->flags & TL_SLICE_OPEN_AT_SNAPSHOT);

	uint32_t pid = tl_model_event_pid(w->model, ev);

	if (!(s->flags & TL_SLICE_AS_COMPLETE)) {
		begin_event(w, 'B', tl_export_event_name(ev), tl_export_event_cat(ev), pid, ev->tid,
		            s->start_ns);
		write_args(w->out, ev, NULL, NULL, closed);
		tl_out_char(w->out, '}');
		return;
	}
	begin_event(w, 'X', tl_export_event_name(ev), tl_export_event_cat(ev), pid, ev->tid,
	            s->start_ns);
	write_key(w->out, "dur");
	write_us(w->out, tl_span_ns(s->start_ns, s->end_ns));
	const tl_model_event *end = NULL, *flow = NULL;
	if (!(s->flags & TL_SLICE_FLOW_MARKER)) {
		if (s->end_event != TL_MATCH_NONE)
			end = &events[s->end_event];
		if (s->flow_event != TL_MATCH_NONE)
			flow = &events[s->flow_event];
	}
	write_args(w->out, ev, end, flow, closed);
	tl_out_char(w->out, '}');
}

static void write_slice_close(json_writer *w, const tl_slice *s)
{
	const tl_model_event *events = w->model->events;
	const tl_model_event *begin = &events[s->event];

	begin_event(w, 'E', tl_export_event_name(begin), tl_export_event_cat(begin),
	            tl_model_event_pid(w->model, begin), begin->tid, s->end_ns);
	if (s->end_event != TL_MATCH_NONE)
		write_args(w->out, &events[s->end_event], NULL, NULL, 0);
	tl_out_char(w->out, '}');
}

static const char *instant_scope(const tl_model_event *ev)
{
	switch (ev->scope & TL_EVENT_SCOPE_MASK) {
	case TL_EVENT_SCOPE_GLOBAL:
		return "g";
	case TL_EVENT_SCOPE_PROCESS:
		return "p";
	default:
		return "t";
	}
}

static void write_counter(json_writer *w, const tl_model_event *ev)
{
	double d = ev->counter_d;
	if (ev->counter_is_double && !isfinite(d)) {
		w->counter_values_non_finite++;
		if (isnan(d))
			return;
		d = d > 0 ? DBL_MAX : -DBL_MAX;
	}
	begin_event(w, 'C', tl_export_event_name(ev), tl_export_event_cat(ev),
	            tl_model_event_pid(w->model, ev), ev->tid, ev->ts_ns);
	tl_out_str(w->out, ",\"args\":{\"value\":");
	if (ev->counter_is_double)
		write_double(w->out, d);
	else
		tl_out_i64(w->out, ev->counter_i);
	tl_out_str(w->out, "}}");
}

static void write_event(json_writer *w, const tl_model_event *ev)
{
	if (ev->phase == TL_PHASE_COUNTER) {
		write_counter(w, ev);
		return;
	}
	char ph = ev->phase == TL_PHASE_INSTANT ? 'I' : ev->phase;
	begin_event(w, ph, tl_export_event_name(ev), tl_export_event_cat(ev),
	            tl_model_event_pid(w->model, ev), ev->tid, ev->ts_ns);
	if (ev->phase == TL_PHASE_INSTANT) {
		write_key(w->out, "s");
		write_string(w->out, instant_scope(ev));
	} else {
		tl_out_str(w->out, ",\"id2\":{\"local\":");
		write_hex(w->out, ev->id);
		tl_out_char(w->out, '}');
	}
	write_args(w->out, ev, NULL, NULL, 0);
	tl_out_char(w->out, '}');
}

/* ------------------------------------------------------------------------ */
/* Threads */

static int compare_record(const void *pa, const void *pb)
{
	const json_record *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	if (a->cls == CLASS_COMPLETE && a->dur_ns != b->dur_ns)
		return a->dur_ns > b->dur_ns ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static void write_thread_events(json_writer *w, const tl_match_thread *t, json_record *records)
{
	const tl_slice_match *match = w->match;
	size_t n = 0;

	for (size_t i = 0; i < t->nitems; i++) {
		const tl_match_item *item = &match->items[t->first_item + i];
		json_record *r = &records[n];
		r->ts_ns = item->ts_ns;
		r->dur_ns = 0;
		r->order = item->order;
		r->item = item;
		r->cls = CLASS_OTHER;
		if (item->kind != TL_ITEM_EVENT) {
			const tl_slice *s = &match->slices[item->ref];
			int as_complete = !!(s->flags & TL_SLICE_AS_COMPLETE);
			if (item->kind == TL_ITEM_CLOSE) {
				if (as_complete)
					continue;
				r->cls = CLASS_END;
			} else if (as_complete) {
				r->cls = CLASS_COMPLETE;
				r->dur_ns = tl_span_ns(s->start_ns, s->end_ns);
			}
		}
		n++;
	}
	qsort(records, n, sizeof *records, compare_record);

	for (size_t i = 0; i < n; i++) {
		const tl_match_item *item = records[i].item;
		switch (item->kind) {
		case TL_ITEM_OPEN:
			write_slice_open(w, &match->slices[item->ref]);
			break;
		case TL_ITEM_CLOSE:
			write_slice_close(w, &match->slices[item->ref]);
			break;
		case TL_ITEM_EVENT:
			write_event(w, &w->model->events[item->ref]);
			break;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Flows */

/* Writes the flow v1 events of every slice carrying a flow; flows has room for them all. */
static void write_flows(json_writer *w, tl_flow_ref *flows)
{
	size_t n = tl_flow_refs(w->model, w->match, flows);
	for (size_t i = 0; i < n; i++) {
		const tl_model_event *ev = flows[i].event;
		begin_event(w, ev->phase, tl_export_event_name(ev), tl_export_event_cat(ev),
		            tl_model_event_pid(w->model, ev), ev->tid, flows[i].ts_ns);
		tl_out_str(w->out, ",\"id\":");
		write_hex(w->out, flows[i].id);
		tl_out_str(w->out, ",\"bp\":\"e\"}");
	}
}

/* ------------------------------------------------------------------------ */
/* Metadata */

static void write_meta_u64(tl_out *out, const char *key, uint64_t v)
{
	write_key(out, key);
	tl_out_u64(out, v);
}

static void write_meta_i64(tl_out *out, const char *key, int64_t v)
{
	write_key(out, key);
	tl_out_i64(out, v);
}

static void write_metadata(json_writer *w)
{
	const tl_model *model = w->model;
	const tl_stats *st = &model->stats;
	const tl_slice_match *match = w->match;
	tl_out *out = w->out;
	const char *recorder = model->recorder ? model->recorder : st->recorder;

	tl_out_str(out, "\"metadata\":{\"recorder\":");
	write_string(out, recorder ? recorder : "");
	write_key(out, "clock");
	write_string(out, tl_model_clock_name(model->clock_id));
	write_meta_i64(out, "clock_id", model->clock_id);
	write_meta_i64(out, "snapshot_ns", model->snapshot_ns);
	write_meta_i64(out, "boottime_ns", model->boottime_ns);
	write_meta_i64(out, "monotonic_ns", model->monotonic_ns);
	write_meta_i64(out, "realtime_ns", model->realtime_ns);
	write_key(out, "snapshot_complete");
	tl_out_str(out, model->complete ? "true" : "false");

	write_meta_u64(out, "events_written", st->events_written);
	write_meta_u64(out, "events_overwritten", st->events_overwritten);
	write_meta_u64(out, "events_dropped", st->events_dropped);
	write_meta_u64(out, "strings_truncated", st->strings_truncated);
	write_meta_u64(out, "args_dropped", st->args_dropped);
	write_meta_u64(out, "unmatched_begin", st->unmatched_begin);
	write_meta_u64(out, "unmatched_end", st->unmatched_end);
	write_meta_u64(out, "blocks_torn", st->blocks_torn);
	write_meta_u64(out, "buffer_bytes", st->buffer_bytes);
	write_meta_u64(out, "buffer_bytes_used", st->buffer_bytes_used);
	write_meta_u64(out, "threads", st->threads);
	write_meta_u64(out, "categories", st->categories);

	write_meta_u64(out, "export_unmatched_begin", match->unmatched_begin);
	write_meta_u64(out, "export_unmatched_end", match->unmatched_end);
	write_meta_u64(out, "export_slices_too_deep", match->too_deep);
	write_meta_u64(out, "export_flow_markers", match->flow_markers);
	write_meta_u64(out, "export_flows_dropped", match->flows_dropped);
	write_meta_u64(out, "export_counter_values_non_finite", w->counter_values_non_finite);
	write_meta_u64(out, "export_events_unknown", match->events_unknown);
	tl_out_char(out, '}');
}

/* A process_name metadata event: the model's name, or "process <pid>". */
static void write_process_name(json_writer *w, uint32_t pid)
{
	const char *known = tl_model_process_name(w->model, pid);
	if (known && known[0]) {
		write_metadata_event(w, "process_name", pid, pid, known);
	} else {
		char name[32];
		snprintf(name, sizeof name, "process %u", (unsigned)pid);
		write_metadata_event(w, "process_name", pid, pid, name);
	}
}

int tl_export_json(const tl_model *model, int fd, tl_export_counts *counts)
{
	tl_slice_match match;
	int rc = tl_slice_match_build(model, &match);
	if (rc)
		return rc;

	size_t most_items = 0;
	for (size_t t = 0; t < match.nthreads; t++) {
		if (match.threads[t].nitems > most_items)
			most_items = match.threads[t].nitems;
	}
	json_record *records = calloc(most_items + 1, sizeof *records);
	tl_flow_ref *flows = calloc(tl_flow_count(&match) + 1, sizeof *flows);
	tl_out *out = malloc(sizeof *out);
	if (!records || !flows || !out) {
		rc = -ENOMEM;
		goto out_free;
	}
	tl_out_init(out, fd);
	json_writer w = {.model = model, .match = &match, .out = out, .first_event = 1};

	tl_out_str(out, "{\"traceEvents\":[");
	write_process_name(&w, model->pid);
	for (size_t t = 0; t < match.nthreads; t++) {
		uint32_t pid = match.threads[t].pid;
		if (pid != model->pid && (t == 0 || match.threads[t - 1].pid != pid))
			write_process_name(&w, pid);
	}
	for (size_t t = 0; t < match.nthreads; t++) {
		const tl_match_thread *thread = &match.threads[t];
		uint32_t tid = output_tid(thread->pid, thread->tid);
		if (thread->name[0]) {
			write_metadata_event(&w, "thread_name", thread->pid, tid, thread->name);
		} else {
			char name[32];
			snprintf(name, sizeof name, "thread %u", (unsigned)tid);
			write_metadata_event(&w, "thread_name", thread->pid, tid, name);
		}
	}
	for (size_t t = 0; t < match.nthreads; t++)
		write_thread_events(&w, &match.threads[t], records);
	write_flows(&w, flows);
	tl_out_str(out, "\n],\n\"displayTimeUnit\":\"ns\",\n");
	write_metadata(&w);
	tl_out_str(out, "}\n");

	rc = tl_out_flush(out);
	if (counts) {
		counts->unmatched_begin = match.unmatched_begin;
		counts->unmatched_end = match.unmatched_end;
	}

out_free:
	free(out);
	free(flows);
	free(records);
	tl_slice_match_free(&match);
	return rc;
}
