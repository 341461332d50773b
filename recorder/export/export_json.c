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

#include "recorder/export/export_stream.h"
#include "recorder/export/slice_stream.h"
#include "recorder/export/trace_model.h"

enum { CLASS_END, CLASS_COMPLETE, CLASS_OTHER };

/* The order of a thread's lines, from a model or streamed: by time; at an
 * equal time by class, the longer COMPLETE first; then in the matching's
 * order. */
static inline int compare_line_place(int64_t ts_a, int cls_a, int64_t dur_a, uint64_t order_a,
                                     int64_t ts_b, int cls_b, int64_t dur_b, uint64_t order_b)
{
	if (ts_a != ts_b)
		return ts_a < ts_b ? -1 : 1;
	if (cls_a != cls_b)
		return cls_a < cls_b ? -1 : 1;
	if (cls_a == CLASS_COMPLETE && dur_a != dur_b)
		return dur_a > dur_b ? -1 : 1;
	return order_a < order_b ? -1 : order_a > order_b;
}

/* One line of a thread's output, sorted before writing. */
typedef struct json_record {
	int64_t ts_ns;
	int64_t dur_ns; /* CLASS_COMPLETE */
	size_t order;
	int cls;
	const tl_match_item *item;
} json_record;

typedef struct json_writer {
	const tl_model *model;       /* the events' pid (and, from a model, the events) */
	const tl_slice_match *match; /* from a model */
	tl_out *out;
	int first_event;
	uint64_t counter_values_non_finite;
	/* ,"pid":P,"tid":T of the last event written */
	uint32_t ids_pid, ids_tid;
	size_t ids_len;
	char ids[48];
	/* the last category written, and how */
	const char *cat;
	size_t cat_len;
	char cat_text[64];
} json_writer;

/* ------------------------------------------------------------------------ */
/* Values */

/* "0x" and v in lower-case hex, quoted. */
static void write_hex(tl_out *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char buf[24];
	char *p = buf + sizeof buf;
	*--p = '"';
	do {
		*--p = digits[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	tl_out_bytes(out, p, (size_t)(buf + sizeof buf - p));
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

/* The bytes a JSON string holds as they are: printable ASCII but '"' and '\\'. */
static const unsigned char json_plain[256] = {
    ['\x20'] = 1,
    1,
    0,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x20-0x2f, '"' */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x30-0x3f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x40-0x4f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    0,
    1,
    1,
    1, /* 0x50-0x5f, '\\' */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x60-0x6f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    0, /* 0x70-0x7f, DEL */
};

static void write_string(tl_out *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *end = NULL; /* measured at the first non-ASCII byte */

	tl_out_char(out, '"');
	for (;;) {
		size_t run = 0;
		while (json_plain[p[run]])
			run++;
		tl_out_bytes(out, p, run);
		p += run;

		unsigned char c = *p;
		if (!c)
			break;
		if (c >= 0x80) {
			if (!end)
				end = p + strlen((const char *)p);
			size_t len = tl_utf8_char_len(p, (size_t)(end - p));
			if (len) {
				tl_out_bytes(out, p, len);
			} else {
				tl_out_str(out, TL_UTF8_REPLACEMENT);
				len = 1;
			}
			p += len;
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

/*
 * A category as write_string writes it, from a copy of the last one's
 * output when cat is the same string (a model's categories are interned:
 * the events of one category share one pointer).
 */
static void write_category(json_writer *w, const char *cat)
{
	tl_out *out = w->out;
	if (cat == w->cat && w->cat_len) {
		if (w->cat_len <= TL_OUT_SHORT)
			tl_out_short(out, w->cat_text, w->cat_len);
		else
			tl_out_bytes(out, w->cat_text, w->cat_len);
		return;
	}
	size_t before = out->len;
	write_string(out, cat);
	/* kept when short and still whole in the buffer (no flush since) */
	w->cat = NULL;
	w->cat_len = 0;
	if (!out->err && out->len > before && out->len - before <= sizeof w->cat_text) {
		w->cat = cat;
		w->cat_len = out->len - before;
		memcpy(w->cat_text, out->buf + before, w->cat_len);
	}
}

/* Opens an event object: ph, name, cat (unless NULL), pid, tid, ts. */
static void begin_event(json_writer *w, char ph, const char *name, const char *cat, uint32_t pid,
                        uint32_t tid, int64_t ts_ns)
{
	tl_out *out = w->out;
	char head[19] = {',', '\n', '{', '"', 'p', 'h', '"', ':', '"', ph,
	                 '"', ',',  '"', 'n', 'a', 'm', 'e', '"', ':'};
	if (w->first_event)
		tl_out_bytes(out, head + 1, sizeof head - 1);
	else
		tl_out_bytes(out, head, sizeof head);
	w->first_event = 0;
	write_string(out, name);
	if (cat) {
		tl_out_bytes(out, ",\"cat\":", 7);
		write_category(w, cat);
	}
	if (!w->ids_len || pid != w->ids_pid || tid != w->ids_tid) {
		/* most events have the pid and tid of the one before */
		int n = snprintf(w->ids, sizeof w->ids, ",\"pid\":%u,\"tid\":%u", (unsigned)pid,
		                 (unsigned)output_tid(pid, tid));
		w->ids_len = (size_t)n;
		w->ids_pid = pid;
		w->ids_tid = tid;
	}
	if (w->ids_len <= TL_OUT_SHORT)
		tl_out_short(out, w->ids, w->ids_len);
	else
		tl_out_bytes(out, w->ids, w->ids_len);
	if (ph != 'M') {
		tl_out_bytes(out, ",\"ts\":", 6);
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

/*
 * A slice's open: ev its BEGIN, COMPLETE or flow event; with
 * TL_SLICE_AS_COMPLETE one X event lasting dur_ns, with the args of end
 * (its END, or NULL) and flow (the flow bound to it, or NULL) too.
 */
static void write_slice_open(json_writer *w, const tl_model_event *ev, const tl_model_event *end,
                             const tl_model_event *flow, unsigned flags, int64_t start_ns,
                             int64_t dur_ns)
{
	int closed = !!(flags & TL_SLICE_OPEN_AT_SNAPSHOT);

	uint32_t pid = tl_model_event_pid(w->model, ev);

	if (!(flags & TL_SLICE_AS_COMPLETE)) {
		begin_event(w, 'B', tl_export_event_name(ev), tl_export_event_cat(ev), pid, ev->tid,
		            start_ns);
		write_args(w->out, ev, NULL, NULL, closed);
		tl_out_char(w->out, '}');
		return;
	}
	begin_event(w, 'X', tl_export_event_name(ev), tl_export_event_cat(ev), pid, ev->tid,
	            start_ns);
	write_key(w->out, "dur");
	write_us(w->out, dur_ns);
	if (flags & TL_SLICE_FLOW_MARKER)
		end = flow = NULL;
	write_args(w->out, ev, end, flow, closed);
	tl_out_char(w->out, '}');
}

/* A slice's E event: begin its BEGIN, end its END or NULL. */
static void write_slice_close(json_writer *w, const tl_model_event *begin,
                              const tl_model_event *end, int64_t end_ns)
{
	begin_event(w, 'E', tl_export_event_name(begin), tl_export_event_cat(begin),
	            tl_model_event_pid(w->model, begin), begin->tid, end_ns);
	write_args(w->out, end, NULL, NULL, 0);
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
	return compare_line_place(a->ts_ns, a->cls, a->dur_ns, a->order, b->ts_ns, b->cls,
	                          b->dur_ns, b->order);
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

	const tl_model_event *events = w->model->events;
	for (size_t i = 0; i < n; i++) {
		const tl_match_item *item = records[i].item;
		if (item->kind == TL_ITEM_EVENT) {
			write_event(w, &events[item->ref]);
			continue;
		}
		const tl_slice *s = &match->slices[item->ref];
		const tl_model_event *end =
		    s->end_event != TL_MATCH_NONE ? &events[s->end_event] : NULL;
		if (item->kind == TL_ITEM_OPEN)
			write_slice_open(w, &events[s->event], end,
			                 s->flow_event != TL_MATCH_NONE ? &events[s->flow_event]
			                                                : NULL,
			                 s->flags, s->start_ns, tl_span_ns(s->start_ns, s->end_ns));
		else
			write_slice_close(w, &events[s->event], end, s->end_ns);
	}
}

/* ------------------------------------------------------------------------ */
/* Flows */

/*
 * A flow event, with the id and ts it is written with: 48 bytes, since a
 * trace may have many and they are written after all the others. place
 * orders flow events: the phase's rank (begin, step, end) in the top two
 * bits, then the event's index among all of the trace's events (the
 * model's order). event is the model's event; a streamed one's record is
 * copied, at rec_at.
 */
typedef struct json_flow {
	uint64_t id;
	int64_t ts_ns;
	int64_t event_ts_ns;
	uint64_t place;
	const void *event; /* the model's event; streamed: NULL, see rec_at */
	size_t rec_at;     /* streamed: the event's record in json_stream.flow_recs */
} json_flow;

#define FLOW_RANK_SHIFT 62

static uint64_t flow_place(char phase, uint64_t index)
{
	uint64_t rank = phase == TL_PHASE_FLOW_BEGIN ? 0 : phase == TL_PHASE_FLOW_STEP ? 1 : 2;
	return rank << FLOW_RANK_SHIFT | index;
}

static uint64_t flow_index(const json_flow *flow)
{
	return flow->place & ((1ull << FLOW_RANK_SHIFT) - 1);
}

static int compare_flow_tail(const json_flow *a, const json_flow *b)
{
	return a->place < b->place ? -1 : a->place > b->place;
}

/* The events of one flow together, in the order they happened. */
static int compare_flow_path(const void *pa, const void *pb)
{
	const json_flow *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	if (a->event_ts_ns != b->event_ts_ns)
		return a->event_ts_ns < b->event_ts_ns ? -1 : 1;
	return compare_flow_tail(a, b);
}

/* The file order: by the ts written, a flow's start before its end. */
static int compare_flow_written(const void *pa, const void *pb)
{
	const json_flow *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->event_ts_ns != b->event_ts_ns)
		return a->event_ts_ns < b->event_ts_ns ? -1 : 1;
	return compare_flow_tail(a, b);
}

/* Puts flows in the order order gives (order is left as 0..n-1). */
static void permute_flows(json_flow *flows, size_t *order, size_t n)
{
	for (size_t start = 0; start < n; start++) {
		if (order[start] == start)
			continue;
		/* the cycle through start: each place takes the flow it names */
		json_flow first = flows[start];
		size_t at = start;
		while (order[at] != start) {
			size_t from = order[at];
			flows[at] = flows[from];
			order[at] = at;
			at = from;
		}
		flows[at] = first;
		order[at] = at;
	}
}

static uint64_t flow_key(const void *flow)
{
	return ((const json_flow *)flow)->id;
}

/*
 * Puts the flow events in file order, each written at the start of its slice
 * unless that would put it before the flow's previous event. 0 or -ENOMEM.
 * The flows come thread by thread, each thread's mostly in time order: the
 * file order is sorted from that order, in few passes.
 */
static int sort_flows(json_flow *flows, size_t n)
{
	if (n < 2)
		return 0;
	size_t *order = malloc(2 * n * sizeof *order);
	if (!order)
		return -ENOMEM;
	size_t *tmp = order + n;
	/* each flow's events together, in its order (the flows in any) */
	if (tl_stream_group_order(flows, sizeof *flows, n, order, flow_key, compare_flow_path)) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 1; i < n; i++) {
		json_flow *flow = &flows[order[i]];
		const json_flow *prev = &flows[order[i - 1]];
		if (flow->id == prev->id && flow->ts_ns < prev->ts_ns)
			flow->ts_ns = flow->event_ts_ns;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	tl_stream_sort_order(flows, sizeof *flows, order, tmp, n, compare_flow_written);
	permute_flows(flows, order, n);
	free(order);
	return 0;
}

static void write_flow(json_writer *w, const json_flow *flow, const tl_model_event *ev)
{
	begin_event(w, ev->phase, tl_export_event_name(ev), tl_export_event_cat(ev),
	            tl_model_event_pid(w->model, ev), ev->tid, flow->ts_ns);
	tl_out_str(w->out, ",\"id\":");
	write_hex(w->out, flow->id);
	tl_out_str(w->out, ",\"bp\":\"e\"}");
}

static json_flow model_flow(const tl_model *model, const tl_slice *s)
{
	const tl_model_event *ev = &model->events[s->flow_event];
	return (json_flow){
	    .id = tl_flow_bind_id(ev->id, ev->scope, tl_model_event_pid(model, ev)),
	    .ts_ns = s->start_ns,
	    .event_ts_ns = ev->ts_ns,
	    .place = flow_place(ev->phase, s->flow_event),
	    .event = ev,
	};
}

static size_t count_flows(const tl_slice_match *match)
{
	size_t n = 0;
	for (size_t i = 0; i < match->nslices; i++)
		n += match->slices[i].flow_event != TL_MATCH_NONE;
	return n;
}

/* Writes the flow v1 events of the slices carrying a flow, flows[0, n)
 * (collect_flows), in their order. 0 or -ENOMEM. */
static int write_flows(json_writer *w, json_flow *flows, size_t n)
{
	if (sort_flows(flows, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		write_flow(w, &flows[i], flows[i].event);
	return 0;
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

/* The snapshot's metadata with st its stats, and this export's counts. */
static void write_metadata(json_writer *w, const tl_stats *st, const tl_match_counts *counts)
{
	const tl_model *model = w->model;
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

	write_meta_u64(out, "export_unmatched_begin", counts->unmatched_begin);
	write_meta_u64(out, "export_unmatched_end", counts->unmatched_end);
	write_meta_u64(out, "export_slices_too_deep", counts->too_deep);
	write_meta_u64(out, "export_flow_markers", counts->flow_markers);
	write_meta_u64(out, "export_flows_dropped", counts->flows_dropped);
	write_meta_u64(out, "export_counter_values_non_finite", w->counter_values_non_finite);
	write_meta_u64(out, "export_events_unknown", counts->events_unknown);
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

/* The file's start: every process's and every thread's name. */
static void write_names(json_writer *w, const tl_match_thread *threads, size_t nthreads)
{
	const tl_model *model = w->model;
	tl_out_str(w->out, "{\"traceEvents\":[");
	write_process_name(w, model->pid);
	for (size_t t = 0; t < nthreads; t++) {
		uint32_t pid = threads[t].pid;
		if (pid != model->pid && (t == 0 || threads[t - 1].pid != pid))
			write_process_name(w, pid);
	}
	for (size_t t = 0; t < nthreads; t++) {
		const tl_match_thread *thread = &threads[t];
		uint32_t tid = output_tid(thread->pid, thread->tid);
		if (thread->name[0]) {
			write_metadata_event(w, "thread_name", thread->pid, tid, thread->name);
		} else {
			char name[32];
			snprintf(name, sizeof name, "thread %u", (unsigned)tid);
			write_metadata_event(w, "thread_name", thread->pid, tid, name);
		}
	}
}

static void write_end(json_writer *w, const tl_stats *st, const tl_match_counts *counts)
{
	tl_out_str(w->out, "\n],\n\"displayTimeUnit\":\"ns\",\n");
	write_metadata(w, st, counts);
	tl_out_str(w->out, "}\n");
}

/* Adds the flows of the slices of match to *flows (grown as needed). 0 or
 * -ENOMEM. */
static int collect_flows(const tl_model *model, const tl_slice_match *match, json_flow **flows,
                         size_t *n, size_t *cap)
{
	size_t more = count_flows(match);
	if (*n + more > *cap) {
		size_t grown_cap = *cap ? *cap : 64;
		while (grown_cap < *n + more)
			grown_cap *= 2;
		json_flow *grown = realloc(*flows, grown_cap * sizeof *grown);
		if (!grown)
			return -ENOMEM;
		*flows = grown;
		*cap = grown_cap;
	}
	for (size_t i = 0; i < match->nslices; i++)
		if (match->slices[i].flow_event != TL_MATCH_NONE)
			(*flows)[(*n)++] = model_flow(model, &match->slices[i]);
	return 0;
}

/*
 * A thread at a time: each thread's events are matched, written and their
 * matching given back before the next (tl_slice_match_build_run), so that
 * the memory besides the model is the largest thread's matching and the
 * flows, not the whole trace's matching.
 */
int tl_export_json(const tl_model *model, int fd, tl_export_counts *counts)
{
	tl_slice_match threads;
	int rc = tl_slice_match_threads(model, &threads);
	if (rc)
		return rc;

	size_t most_events = 0;
	for (size_t t = 0; t < threads.nthreads; t++) {
		if (threads.threads[t].nitems > most_events)
			most_events = threads.threads[t].nitems;
	}
	/* a thread's items: one per event and per slice's close */
	json_record *records = calloc(2 * most_events + 1, sizeof *records);
	json_flow *flows = NULL;
	size_t nflows = 0, flows_cap = 0;
	tl_out *out = malloc(sizeof *out);
	tl_match_counts totals = {0};
	if (!records || !out) {
		rc = -ENOMEM;
		goto out_free;
	}
	tl_out_init(out, fd);
	json_writer w = {.model = model, .out = out, .first_event = 1};

	write_names(&w, threads.threads, threads.nthreads);
	for (size_t t = 0; t < threads.nthreads && rc == 0; t++) {
		const tl_match_thread *thread = &threads.threads[t];
		if (!thread->nitems)
			continue;
		tl_slice_match match;
		rc = tl_slice_match_build_run(model, thread->first_item, thread->nitems, &match);
		if (rc)
			break;
		w.match = &match;
		write_thread_events(&w, &match.threads[0], records);
		rc = collect_flows(model, &match, &flows, &nflows, &flows_cap);
		totals.unmatched_begin += match.unmatched_begin;
		totals.unmatched_end += match.unmatched_end;
		totals.too_deep += match.too_deep;
		totals.flow_markers += match.flow_markers;
		totals.flows_dropped += match.flows_dropped;
		totals.events_unknown += match.events_unknown;
		tl_slice_match_free(&match);
		w.match = NULL;
	}
	if (rc)
		goto out_free;
	rc = write_flows(&w, flows, nflows);
	if (rc)
		goto out_free;
	write_end(&w, &model->stats, &totals);

	rc = tl_out_flush(out);
	if (counts) {
		counts->unmatched_begin = totals.unmatched_begin;
		counts->unmatched_end = totals.unmatched_end;
	}

out_free:
	free(out);
	free(flows);
	free(records);
	tl_slice_match_free(&threads);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Streamed from a binary snapshot */

/*
 * Each thread is matched twice (slice_stream.h). The first run notes, at
 * the close of each slice from a BEGIN that is written as one X event or
 * closed at the snapshot, and of each COMPLETE slice carrying a flow, what
 * its open needs: how it is written, its duration, END and flow (32 bytes;
 * a slice without a note is written as its kind says: a BEGIN's as B/E,
 * the others as X). It also collects the flow events, written after every
 * thread. The second run makes the
 * items, which wait in a queue ordered as compare_record orders them until
 * the matching's floor passes them.
 */

enum {
	SLICE_AS_COMPLETE = 1,
	SLICE_OPEN_AT_SNAPSHOT = 2,
};

/* Where the SLICE_* flags of a note go, above the slice's index. */
#define NOTE_FLAGS_SHIFT 62

/* What the open of a slice needs from its close. */
typedef struct json_slice_end {
	uint64_t slice; /* the slice's index, its SLICE_* flags above NOTE_FLAGS_SHIFT */
	int64_t dur_ns;
	/* copies (json_stream.end_recs): the second run reads them after the
	 * cursors passed them */
	const uint64_t *end_rec;  /* its END, when it has args; or NULL */
	const uint64_t *flow_rec; /* its flow event, or NULL */
} json_slice_end;

enum json_item_kind { ITEM_OPEN, ITEM_CLOSE, ITEM_EVENT };

typedef struct json_item {
	int64_t ts_ns;
	int64_t dur_ns; /* CLASS_COMPLETE */
	uint64_t order;
	const uint64_t *rec;      /* the event; a slice's BEGIN, COMPLETE or flow event */
	const uint64_t *end_rec;  /* a slice's END, or NULL */
	const uint64_t *flow_rec; /* an X slice's flow, or NULL */
	unsigned char cls;
	unsigned char kind;
	unsigned char flags; /* TL_SLICE_* of an open */
} json_item;
_Static_assert(sizeof(json_item) % 8 == 0 && sizeof(json_item) <= TL_ITEM_QUEUE_SLOT &&
                   offsetof(json_item, ts_ns) == 0,
               "a source's item");

typedef struct json_stream {
	tl_snapshot_read *r;
	json_writer w;
	int error; /* -ENOMEM from the first run's callbacks, or while writing */
	uint32_t tid;
	uint64_t first_index; /* the thread's first event among all of them */
	/* every thread's first index and tid, for the flow events' tids */
	struct json_thread_start {
		uint64_t first_index;
		uint32_t tid;
	} * starts;
	size_t nstarts, starts_cap;

	json_slice_end *ends; /* by slice index, once the first run is done */
	size_t nends, ends_cap, next_end;
	tl_rec_copies end_recs; /* the records the ends need, copied */

	tl_stream_source source; /* the thread's matching and items, on the second run */

	json_flow *flows;
	size_t nflows, flows_cap;
	size_t flows_before; /* of the thread being written */
	/* The flows' records, copied: a thread's records are gone once it is
	 * written (tl_snapshot_thread_unload), its flows are written last. */
	uint64_t *flow_recs;
	size_t nflow_recs, flow_recs_cap, flow_recs_before;

	tl_stream_strings strings;
} json_stream;

static int reserve(json_stream *js, void **array, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 1;
	size_t new_cap = *cap ? *cap : 256;
	while (new_cap < need)
		new_cap *= 2;
	void *grown = new_cap <= SIZE_MAX / size ? realloc(*array, new_cap * size) : NULL;
	if (!grown) {
		js->error = -ENOMEM;
		return 0;
	}
	*array = grown;
	*cap = new_cap;
	return 1;
}

/* First run: at its close, what a slice's open will need, unless its kind
 * tells. */
static void note_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	(void)order;
	json_stream *js = ctx;
	uint64_t flags = 0;
	if (s->flags & TL_SLICE_AS_COMPLETE)
		flags |= SLICE_AS_COMPLETE;
	if (s->flags & TL_SLICE_OPEN_AT_SNAPSHOT)
		flags |= SLICE_OPEN_AT_SNAPSHOT;
	if (s->kind == TL_STREAM_MARKER || (s->kind == TL_STREAM_COMPLETE && !s->has_flow) ||
	    (s->kind == TL_STREAM_BEGIN && !flags))
		return;
	if (!reserve(js, (void **)&js->ends, &js->ends_cap, js->nends + 1, sizeof *js->ends))
		return;
	json_slice_end *end = &js->ends[js->nends];
	*end = (json_slice_end){
	    .slice = s->index | flags << NOTE_FLAGS_SHIFT,
	    .dur_ns = tl_span_ns(s->start_ns, s->end_ns),
	};
	/* an END only gives its args: one without any is as none */
	if (tl_rec_copies_add(&js->end_recs,
	                      s->end_rec && tl_stream_has_args(s->end_rec) ? s->end_rec : NULL,
	                      &end->end_rec) ||
	    tl_rec_copies_add(&js->end_recs, s->has_flow ? s->flow.rec : NULL, &end->flow_rec)) {
		js->error = -ENOMEM;
		return;
	}
	js->nends++;
}

static void note_flow(void *ctx, const tl_stream_slice *s)
{
	json_stream *js = ctx;
	const tl_cursor_event *e = &s->flow;
	size_t words = TL_REC_WORDS(e->rec[1]);
	if (!reserve(js, (void **)&js->flows, &js->flows_cap, js->nflows + 1, sizeof *js->flows) ||
	    !reserve(js, (void **)&js->flow_recs, &js->flow_recs_cap, js->nflow_recs + words,
	             sizeof *js->flow_recs))
		return;
	memcpy(js->flow_recs + js->nflow_recs, e->rec, words * sizeof *js->flow_recs);
	unsigned scope = ((e->flags >> TL_REC_F_SCOPE_SHIFT) & 3u) << 1;
	js->flows[js->nflows++] = (json_flow){
	    .id = tl_flow_bind_id(e->value, scope, js->r->model->pid),
	    .ts_ns = s->start_ns,
	    .event_ts_ns = e->ts_ns,
	    .place = flow_place(e->phase, js->first_index + e->position),
	    .rec_at = js->nflow_recs,
	};
	js->nflow_recs += words;
}

/* (No .keep: the first run keeps no record, the ends and flows hold copies.) */
static const tl_slice_stream_ops note_ops = {
    .close = note_close,
    .flow = note_flow,
};

/* Forgets what a first run noted of the thread, to run it again. */
static void forget_notes(void *ctx)
{
	json_stream *js = ctx;
	js->nends = 0;
	tl_rec_copies_free(&js->end_recs);
	js->nflows = js->flows_before;
	js->nflow_recs = js->flow_recs_before;
}

static int compare_item(const void *pa, const void *pb)
{
	const json_item *a = pa, *b = pb;
	return compare_line_place(a->ts_ns, a->cls, a->dur_ns, a->order, b->ts_ns, b->cls,
	                          b->dur_ns, b->order);
}

static void push_item(json_stream *js, const json_item *item)
{
	tl_stream_source_push(&js->source, item);
}

/* Second run: the items. */
static void item_open(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	json_stream *js = ctx;
	const json_slice_end *end = NULL;
	if (js->next_end < js->nends &&
	    (js->ends[js->next_end].slice & ((1ull << NOTE_FLAGS_SHIFT) - 1)) == s->index)
		end = &js->ends[js->next_end++];
	unsigned noted = end                          ? (unsigned)(end->slice >> NOTE_FLAGS_SHIFT)
	                 : s->kind == TL_STREAM_BEGIN ? 0
	                                              : SLICE_AS_COMPLETE;
	json_item item = {.ts_ns = s->start_ns, .order = order, .rec = s->rec, .kind = ITEM_OPEN};
	if (noted & SLICE_OPEN_AT_SNAPSHOT)
		item.flags |= TL_SLICE_OPEN_AT_SNAPSHOT;
	if (!(noted & SLICE_AS_COMPLETE)) {
		item.cls = CLASS_OTHER;
		push_item(js, &item);
		return;
	}
	item.cls = CLASS_COMPLETE;
	item.flags |= TL_SLICE_AS_COMPLETE;
	if (s->kind == TL_STREAM_MARKER)
		item.flags |= TL_SLICE_FLOW_MARKER;
	else
		item.dur_ns = tl_span_ns(s->start_ns, s->end_ns); /* COMPLETE: known */
	if (end) {
		item.dur_ns = end->dur_ns;
		item.end_rec = end->end_rec;
		item.flow_rec = end->flow_rec;
	}
	push_item(js, &item);
}

static void item_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	json_stream *js = ctx;
	if (s->flags & TL_SLICE_AS_COMPLETE)
		return; /* written whole at its open */
	json_item item = {.ts_ns = s->end_ns,
	                  .order = order,
	                  .rec = s->rec,
	                  .end_rec = s->end_rec,
	                  .cls = CLASS_END,
	                  .kind = ITEM_CLOSE};
	push_item(js, &item);
}

static void item_event(void *ctx, const tl_cursor_event *e, uint64_t order)
{
	json_stream *js = ctx;
	json_item item = {.ts_ns = e->ts_ns,
	                  .order = order,
	                  .rec = e->rec,
	                  .cls = CLASS_OTHER,
	                  .kind = ITEM_EVENT};
	push_item(js, &item);
}

/* The second run keeps the records of its items waiting (those an open
 * takes from the ends are copies). */
static void keep_items(void *ctx, tl_kept_recs *k)
{
	static const size_t rec_at[] = {offsetof(json_item, rec), offsetof(json_item, end_rec),
	                                offsetof(json_item, flow_rec)};
	const json_stream *js = ctx;
	tl_item_queue_keep(&js->source.items, rec_at, 3, k);
}

static const tl_slice_stream_ops item_ops = {
    .open = item_open,
    .close = item_close,
    .event = item_event,
    .keep = keep_items,
};

static void write_item(json_stream *js, const json_item *item)
{
	/* an END only gives its args: one without any is as none */
	const uint64_t *end_rec =
	    item->end_rec && tl_stream_has_args(item->end_rec) ? item->end_rec : NULL;
	const uint64_t *recs[3] = {item->rec, end_rec, item->flow_rec};
	if (tl_stream_strings_reset(&js->strings, recs, 3)) {
		js->error = -ENOMEM;
		return;
	}
	tl_model_arg args[3][TL_MAX_ARGS]; /* a decoded event's args are its caller's */
	tl_model_event ev = {.args = args[0]}, end = {.args = args[1]}, flow = {.args = args[2]};
	/* a slice's E needs the name and category of its BEGIN only */
	tl_stream_decode(js->r, &js->strings, item->rec, js->tid, item->kind != ITEM_CLOSE, &ev);
	ev.ts_ns = item->ts_ns; /* an event's; a slice's start or end is the item's */
	if (end_rec)
		tl_stream_decode(js->r, &js->strings, end_rec, js->tid, 1, &end);
	if (item->flow_rec)
		tl_stream_decode(js->r, &js->strings, item->flow_rec, js->tid, 1, &flow);
	switch (item->kind) {
	case ITEM_OPEN:
		write_slice_open(&js->w, &ev, end_rec ? &end : NULL, item->flow_rec ? &flow : NULL,
		                 item->flags, item->ts_ns, item->dur_ns);
		break;
	case ITEM_CLOSE:
		write_slice_close(&js->w, &ev, end_rec ? &end : NULL, item->ts_ns);
		break;
	default:
		write_event(&js->w, &ev);
		break;
	}
}

static int compare_slice_end(const void *pa, const void *pb)
{
	const json_slice_end *a = pa, *b = pb;
	uint64_t index_a = a->slice & ((1ull << NOTE_FLAGS_SHIFT) - 1);
	uint64_t index_b = b->slice & ((1ull << NOTE_FLAGS_SHIFT) - 1);
	return index_a < index_b ? -1 : index_a > index_b;
}

static int export_thread(json_stream *js, tl_snapshot_thread *t, tl_match_counts *totals)
{
	if (!reserve(js, (void **)&js->starts, &js->starts_cap, js->nstarts + 1,
	             sizeof *js->starts))
		return js->error;
	js->starts[js->nstarts++] = (struct json_thread_start){js->first_index, t->tid};
	js->tid = t->tid;
	js->nends = js->next_end = 0;
	tl_rec_copies_free(&js->end_recs);
	js->flows_before = js->nflows;
	js->flow_recs_before = js->nflow_recs;

	tl_thread_survey survey;
	int rc = tl_stream_first_run(js->r, t, &survey, &note_ops, js, forget_notes, NULL);
	if (rc == 0 && js->error)
		rc = js->error;
	if (rc == 0 && js->nends) /* noted at the closes: in the order slices open */
		qsort(js->ends, js->nends, sizeof *js->ends, compare_slice_end);

	/* The second run: each item written once nothing still to come can
	 * precede it. */
	tl_stream_source *src = &js->source;
	tl_stream_source_init(src, 0, sizeof(json_item), compare_item);
	if (rc == 0)
		rc = tl_stream_source_start(src, js->r, &survey, &item_ops, js);
	while (rc == 0 && !js->w.out->err) {
		int ready = tl_stream_source_ready(src);
		if (ready <= 0) {
			rc = ready;
			break;
		}
		json_item item;
		tl_item_queue_pop(&src->items, &item);
		write_item(js, &item);
		rc = js->error;
	}
	if (rc == 0)
		tl_stream_add_counts(totals, &src->match.counts);
	tl_stream_source_free(src);
	js->first_index += survey.nevents;
	tl_thread_survey_free(&survey);
	tl_snapshot_thread_unload(js->r, t); /* nothing kept points into its records */
	return rc;
}

/* The tid of the thread whose events include the one at index. */
static uint32_t tid_of(const json_stream *js, uint64_t index)
{
	size_t lo = 0, hi = js->nstarts; /* the last start at or before index */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (js->starts[mid].first_index <= index)
			lo = mid;
		else
			hi = mid;
	}
	return js->starts[lo].tid;
}

static void write_stream_flows(json_stream *js)
{
	if (sort_flows(js->flows, js->nflows)) {
		js->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < js->nflows && !js->error; i++) {
		const json_flow *flow = &js->flows[i];
		const uint64_t *rec = js->flow_recs + flow->rec_at;
		if (tl_stream_strings_reset(&js->strings, &rec, 1)) {
			js->error = -ENOMEM;
			return;
		}
		tl_model_event ev;
		tl_stream_decode(js->r, &js->strings, rec, tid_of(js, flow_index(flow)), 0, &ev);
		write_flow(&js->w, flow, &ev);
	}
}

int tl_export_json_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts)
{
	json_stream js = {.r = r};
	tl_stream_thread *threads = NULL;
	tl_match_thread *infos = NULL;
	size_t nthreads = 0;
	tl_match_counts totals = {0};
	tl_out *out = malloc(sizeof *out);
	int rc = out ? tl_stream_threads(r, &threads, &nthreads) : -ENOMEM;
	if (rc)
		goto out_free;
	infos = malloc((nthreads + 1) * sizeof *infos);
	if (!infos) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t t = 0; t < nthreads; t++)
		infos[t] = threads[t].info;
	tl_out_init(out, fd);
	js.w = (json_writer){.model = r->model, .out = out, .first_event = 1};
	/* every record kept is named (keep_noted, keep_items): the runs free
	 * the unpacked records of a file recorder's file behind them */
	int trim_behind = r->trim_behind;
	r->trim_behind = 1;

	write_names(&js.w, infos, nthreads);
	for (size_t t = 0; t < nthreads && rc == 0 && !out->err; t++) {
		if (threads[t].snapshot)
			rc = export_thread(&js, threads[t].snapshot, &totals);
	}
	if (rc == 0)
		write_stream_flows(&js);
	if (rc == 0 && js.error)
		rc = js.error;
	if (rc == 0) {
		tl_stats stats = tl_stream_stats(r);
		write_end(&js.w, &stats, &totals);
		rc = tl_out_flush(out);
	}
	r->trim_behind = trim_behind;
	if (rc == 0 && r->unpack_failed)
		rc = -ENOMEM;
	if (rc == 0 && counts) {
		counts->unmatched_begin = totals.unmatched_begin;
		counts->unmatched_end = totals.unmatched_end;
	}

out_free:
	free(out);
	free(threads);
	free(infos);
	free(js.ends);
	tl_rec_copies_free(&js.end_recs);
	free(js.flows);
	free(js.flow_recs);
	free(js.starts);
	tl_stream_strings_free(&js.strings);
	return rc;
}
