/*
 * What the exporters share: slices matched from a decoded trace, and the
 * small helpers both text writers need (a buffered writer over write(2),
 * UTF-8 checking, name fallbacks). Internal; allocates, not signal-safe.
 *
 * Slice matching, per thread - a (pid, tid) pair, whose events are
 * contiguous in model->events and ordered by seq:
 *
 *  - BEGIN/END pair up with a stack in seq order. An END with nothing open
 *    is an "unmatched end" (its BEGIN was overwritten): dropped and counted.
 *    A BEGIN still open at the end of the thread's events is closed at
 *    model->snapshot_ns, flagged and counted. Should the thread have events
 *    later than that (a skewed clock), they close at its last timestamp
 *    instead, so that nesting holds.
 *  - COMPLETE events are slices from ts_ns to end_ns (never negative). They
 *    are recorded when they end, so they are merged into the seq stream by
 *    start time: at an equal timestamp an END goes first, a BEGIN whose
 *    slice lasts longer goes first, anything else comes after the COMPLETE.
 *  - A slice open more than TL_MATCH_MAX_DEPTH deep is dropped (with its
 *    END) and counted, as Perfetto does.
 *  - A flow event (s/t/f) binds to the innermost slice open on its thread
 *    at that point. When there is none, or that slice already carries a
 *    flow, the flow gets a zero-length slice of its own (TL_SLICE_FLOW_MARKER)
 *    at its timestamp. A global flow with id 0 cannot be written by any
 *    viewer's format: it is dropped and counted.
 *
 * The result lists, per thread, items (slice opens, slice closes, other
 * events) in the order they were processed; `order` is that position and
 * the exporters use it to break ties when they sort by timestamp.
 */
#ifndef TIMELINE_SLICE_MATCH_H
#define TIMELINE_SLICE_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/export/trace_model.h"
#include "recorder/hash_map.h"

#define TL_MATCH_MAX_DEPTH 512
/* No index: the indices kept are of model events, fewer than UINT32_MAX
 * (tl_model_event_append), so 32 bits hold them. */
#define TL_MATCH_NONE ((size_t)UINT32_MAX)

enum {
	TL_SLICE_COMPLETE = 1u << 0,         /* from a COMPLETE ('X') event */
	TL_SLICE_OPEN_AT_SNAPSHOT = 1u << 1, /* END missing: closed at the snapshot */
	TL_SLICE_FLOW_MARKER = 1u << 2,      /* zero-length slice for a flow event */
	/*
	 * Chrome JSON: write as one X event. Set on COMPLETE slices, flow
	 * markers, slices carrying a flow and zero-length slices, then on every
	 * ancestor that starts at the same timestamp as such a slice: Perfetto
	 * sorts X before B at equal timestamps, so a B parent of an X child
	 * starting with it would end up nested inside its child.
	 */
	TL_SLICE_AS_COMPLETE = 1u << 3,
};

/* (40 bytes: the model exporters hold one per slice of the trace) */
typedef struct tl_slice {
	uint32_t event;      /* model->events index: the BEGIN, COMPLETE or flow event */
	uint32_t end_event;  /* index of the matching END, or TL_MATCH_NONE */
	uint32_t flow_event; /* flow event bound to this slice, or TL_MATCH_NONE */
	uint32_t parent;     /* index in tl_slice_match.slices, or TL_MATCH_NONE */
	int64_t start_ns;
	int64_t end_ns; /* >= start_ns */
	unsigned depth; /* 0 for a slice with no parent */
	unsigned flags; /* TL_SLICE_* */
} tl_slice;

typedef enum tl_match_item_kind {
	TL_ITEM_OPEN,  /* ref: slice index, ts_ns: its start */
	TL_ITEM_CLOSE, /* ref: slice index, ts_ns: its end */
	TL_ITEM_EVENT, /* ref: event index (instant, counter, async) */
} tl_match_item_kind;

/* (24 bytes: one per event and per slice's close) */
typedef struct tl_match_item {
	int64_t ts_ns;
	size_t order; /* position in the thread's processing order */
	uint32_t ref;
	uint32_t kind; /* tl_match_item_kind */
} tl_match_item;

typedef struct tl_match_thread {
	uint32_t tid;
	uint32_t pid;      /* the process (model->pid unless the model has several) */
	const char *name;  /* from model->threads; "" when the model has none */
	size_t first_item; /* range in tl_slice_match.items */
	size_t nitems;
} tl_match_thread;

typedef struct tl_slice_match {
	tl_slice *slices;
	size_t nslices;
	tl_match_item *items;
	size_t nitems;
	/* Every thread with events or a name in the model, by (pid, tid). */
	tl_match_thread *threads;
	size_t nthreads;

	uint64_t unmatched_begin; /* slices closed at snapshot_ns */
	uint64_t unmatched_end;   /* ENDs dropped */
	uint64_t too_deep;        /* slices (and flow markers) beyond the depth cap */
	uint64_t flow_markers;    /* flows given a slice of their own */
	uint64_t flows_dropped;   /* global flows with id 0 */
	uint64_t events_unknown;  /* events with a phase no exporter writes */
} tl_slice_match;

/*
 * Matches the slices of model into *out. Returns 0 or -ENOMEM (then *out is
 * empty). The result points into model: free it before the model. Release
 * it with tl_slice_match_free().
 */
int tl_slice_match_build(const tl_model *model, tl_slice_match *out);

/*
 * For an exporter that writes a thread at a time, holding one thread's
 * matching at once. tl_slice_match_threads lists the threads as
 * tl_slice_match_build does (same order, same names), with no slice and no
 * item: for each, first_item and nitems are instead its run of events in
 * model->events (nitems 0: a named thread without events). Then
 * tl_slice_match_build_run matches one such run into *out as
 * tl_slice_match_build matches that thread: its slices and items, exactly,
 * in one thread (named ""), the counters for it alone. Both return 0 or
 * -ENOMEM; free with tl_slice_match_free.
 */
int tl_slice_match_threads(const tl_model *model, tl_slice_match *out);
int tl_slice_match_build_run(const tl_model *model, size_t first, size_t count,
                             tl_slice_match *out);

/* Frees what tl_slice_match_build allocated. Safe on a zeroed struct. */
void tl_slice_match_free(tl_slice_match *match);

/*
 * Rules of the matching that the streamed one (slice_stream.h) follows as
 * well, in the same order by design.
 */

/* Whether the slice on top of the stack, with flags and ending at end_ns,
 * stays open when something comes at ts: a slice from BEGIN stays until its
 * END; a COMPLETE one closes once it ended before ts, or at ts unless
 * inclusive (a flow event binds to a slice ending with it). */
static inline int tl_match_stays_open(unsigned flags, int64_t end_ns, int64_t ts, int inclusive)
{
	return !(flags & TL_SLICE_COMPLETE) || end_ns > ts || (inclusive && end_ns == ts);
}

/* Whether a COMPLETE slice starting at start_ns is processed before an
 * event of the thread at ts_ns with phase: 1 or 0; -1 for a BEGIN at the
 * same time, which goes after the slice when its own slice ends no later
 * than the COMPLETE one does. */
static inline int tl_match_complete_first(int64_t start_ns, int64_t ts_ns, char phase)
{
	if (start_ns != ts_ns)
		return start_ns < ts_ns;
	if (phase == TL_PHASE_END)
		return 0;
	if (phase == TL_PHASE_BEGIN)
		return -1;
	return 1;
}

/* Whether a flow event with scope (TL_EVENT_SCOPE_*) and id is dropped: a
 * global flow needs an id. */
static inline int tl_match_flow_dropped(unsigned scope, uint64_t id)
{
	return (scope & TL_EVENT_SCOPE_MASK) == TL_EVENT_SCOPE_GLOBAL && id == 0;
}

/*
 * The args one exported event carries: those of up to three model events,
 * in order (a slice's BEGIN, its END, its flow event), an arg of type NONE
 * left out and a key already given by an earlier arg skipped (the first
 * one wins). Args of a type no exporter knows are listed: the JSON
 * exporter writes them as null, the Perfetto one leaves them out.
 */
typedef struct tl_arg_list {
	const tl_model_arg *args[3 * TL_MAX_ARGS];
	size_t nargs;
} tl_arg_list;

/* Fills out from the events (each may be NULL). */
void tl_arg_list_collect(tl_arg_list *out, const tl_model_event *a, const tl_model_event *b,
                         const tl_model_event *c);

/*
 * A slice carrying a flow, as both exporters write it (formats.md, "Flows"):
 * the id written - a global id as it is, a process-scoped one mixed with
 * the pid - and the time the Chrome JSON flow event is written at: the
 * slice's start, or the flow event's own time when that start is earlier
 * than the flow's previous event as written.
 */
typedef struct tl_flow_ref {
	size_t slice;  /* index in tl_slice_match.slices */
	uint64_t id;   /* the id written */
	int64_t ts_ns; /* the time it is written at */
	const tl_model_event *event;
} tl_flow_ref;

/* The id a flow is written with (formats.md, "Flows"): a global id as it
 * is, a process-scoped one mixed with the pid (never 0). */
uint64_t tl_flow_bind_id(uint64_t flow_id, unsigned scope, uint32_t pid);

/* How many slices carry a flow: the room tl_flow_refs needs. */
size_t tl_flow_count(const tl_slice_match *match);

/*
 * Lists every slice carrying a flow into flows, in the order the JSON
 * exporter writes the flow events: by the time written; at an equal time,
 * by the flow events' own times, then begin before step before end.
 * Returns how many.
 */
size_t tl_flow_refs(const tl_model *model, const tl_slice_match *match, tl_flow_ref *flows);

/* The event's name, "unnamed" when it has none (viewers need one). */
const char *tl_export_event_name(const tl_model_event *event);

/* The event's category, "default" when it has none (catapult needs one). */
const char *tl_export_event_cat(const tl_model_event *event);

/* U+FFFD REPLACEMENT CHARACTER, written in place of invalid UTF-8 bytes. */
#define TL_UTF8_REPLACEMENT "\xef\xbf\xbd"

/*
 * A buffered writer over write(2): short writes are resumed and EINTR
 * retried. The first failure sticks in `err` (-errno) and later output is
 * discarded, so callers check once, at tl_out_flush().
 */
typedef struct tl_out {
	int fd;
	int err;
	size_t len;
	char buf[16384];
} tl_out;

void tl_out_init(tl_out *out, int fd);
/* Writes what is buffered. Returns 0 or the first -errno seen. */
int tl_out_flush(tl_out *out);
/* The slow paths of the writers below: a full buffer, a failed write. */
void tl_out_bytes_slow(tl_out *out, const void *data, size_t len);
void tl_out_u64_slow(tl_out *out, uint64_t v);

/* The writers are inline: the exporters call them a few times per byte
 * written, and the buffer has room nearly always. */
static inline void tl_out_bytes(tl_out *out, const void *data, size_t len)
{
	if (len <= sizeof out->buf - out->len && !out->err) {
		__builtin_memcpy(out->buf + out->len, data, len);
		out->len += len;
		return;
	}
	tl_out_bytes_slow(out, data, len);
}

/*
 * The same for len <= TL_OUT_SHORT from a source that holds TL_OUT_SHORT
 * readable bytes: one copy of a constant size (a few moves, not a call)
 * when the buffer has room.
 */
#define TL_OUT_SHORT 32
static inline void tl_out_short(tl_out *out, const void *data, size_t len)
{
	if (sizeof out->buf - out->len >= TL_OUT_SHORT && !out->err) {
		__builtin_memcpy(out->buf + out->len, data, TL_OUT_SHORT);
		out->len += len;
		return;
	}
	tl_out_bytes_slow(out, data, len);
}

static inline void tl_out_str(tl_out *out, const char *s)
{
	tl_out_bytes(out, s, __builtin_strlen(s));
}

static inline void tl_out_char(tl_out *out, char c)
{
	if (out->len < sizeof out->buf && !out->err) {
		out->buf[out->len++] = c;
		return;
	}
	tl_out_bytes_slow(out, &c, 1);
}

/* Decimal, without a sign. */
static inline void tl_out_u64(tl_out *out, uint64_t v)
{
	if (v < 10 && out->len < sizeof out->buf && !out->err) {
		out->buf[out->len++] = (char)('0' + v);
		return;
	}
	tl_out_u64_slow(out, v);
}

static inline void tl_out_i64(tl_out *out, int64_t v)
{
	if (v < 0) {
		tl_out_char(out, '-');
		tl_out_u64(out, -(uint64_t)v);
	} else {
		tl_out_u64(out, (uint64_t)v);
	}
}

/* end - start, saturated: a corrupt snapshot may hold any timestamps. */
static inline int64_t tl_span_ns(int64_t start, int64_t end)
{
	int64_t d;
	if (__builtin_sub_overflow(end, start, &d))
		return end > start ? INT64_MAX : INT64_MIN;
	return d;
}

/* a + b, kept at the int64 range's ends where it would pass them (times
 * and durations read from a damaged or hostile trace can be anything). */
static inline int64_t tl_add_ns(int64_t a, int64_t b)
{
	int64_t sum;
	if (__builtin_add_overflow(a, b, &sum))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return sum;
}

#endif /* TIMELINE_SLICE_MATCH_H */
