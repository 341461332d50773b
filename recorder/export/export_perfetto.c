/*
 * Perfetto exporter (docs/formats.md, "Perfetto"): a perfetto.protos.Trace,
 * that is a stream of TracePackets, each written as field 1 of Trace.
 *
 * Layout, all on one packet sequence (trusted_packet_sequence_id 1):
 *  1. the clock snapshot: the trace clock (boot or mono) as the primary
 *     clock and every packet's timestamp clock (TracePacketDefaults), with
 *     the other clocks the model read at the snapshot; this first packet
 *     clears the sequence's incremental state, every later one needs it;
 *  2. a process track descriptor per process and a thread track descriptor
 *     per thread, with the names the JSON exporter gives them;
 *  3. the events, merged across threads by timestamp, each a TrackEvent
 *     whose name, category and argument names are interned (InternedData
 *     in the packet that first uses them). A counter or async track is
 *     described by a packet of its own just before its first event;
 *  4. the snapshot's metadata (recorder, clock, stats, this export's
 *     counts) as ChromeEventBundle metadata, the keys of the JSON metadata.
 *
 * The events are those of the JSON export (export_json.c), from the same
 * slice matching, so that reading either file gives the same slices:
 *  - every slice is a SLICE_BEGIN and a SLICE_END on its thread's track,
 *    at the exact nanoseconds; the END repeats the BEGIN's name and
 *    category, as the JSON "E" does. A thread's packets are ordered by
 *    timestamp, at an equal one the ends of slices that last longer than
 *    zero first, then the matching order;
 *  - the args go where the JSON puts them: on the BEGIN those of a slice
 *    the JSON writes as one "X" (BEGIN's, END's, flow event's; the first
 *    key wins), otherwise the BEGIN's on the BEGIN and the END's on the
 *    END; "tl_closed_at_snapshot" on a slice closed at the snapshot;
 *  - instants go on the thread's track, the process track or the global
 *    track (uuid 0) by scope; async events on a track per (pid, category,
 *    id) under the process, named after its first event, as Perfetto's
 *    JSON importer keys them; counters on a counter track per (pid, name)
 *    under the process, named "<name> value" as Perfetto names the JSON
 *    counter; a NaN sample is left out and an infinite one clamped, as in
 *    the JSON (export_counter_values_non_finite);
 *  - a flow event bound to a slice puts the flow's id in that slice's
 *    flow_ids (begin, step) or terminating_flow_ids (end), the id being a
 *    hash of the flow's category, name and JSON id (flows are keyed so in
 *    the JSON). A step or end after which the JSON viewers have no open
 *    flow is left out, as they drop it. The id rides on the slice's BEGIN,
 *    or on its END when the slice began before the flow's previous event
 *    was written, so that viewers meet a flow's events in order.
 *
 * It is written from a model (tl_export_perfetto) or streamed from a binary
 * snapshot as it is read (tl_export_perfetto_stream, export_stream.h), to
 * the same bytes: both give the writers below decoded events and small
 * structs. What the streamed export holds is described before it.
 */
#include "recorder/export/slice_match.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/export_stream.h"
#include "recorder/export/perfetto_proto.h"
#include "recorder/export/proto_write.h"
#include "recorder/export/slice_stream.h"
#include "recorder/export/trace_model.h"
#include "recorder/hash_map.h"

/* ------------------------------------------------------------------------ */
/* Hashes: interning, track uuids, flow ids */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return fnv_bytes(h, b, sizeof b);
}

/* A string and its terminator, so that ("ab", "c") and ("a", "bc") differ. */
static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv_bytes(h, s, strlen(s) + 1);
}

/* A non-zero id from a hash (0 is the global track, and "no flow"). */
static uint64_t nonzero(uint64_t h)
{
	h = tl_mix64(h);
	return h ? h : 1;
}

static uint64_t process_uuid(uint32_t pid)
{
	return nonzero(fnv_u64(fnv_bytes(FNV_OFFSET, "p", 1), pid));
}

static uint64_t thread_uuid(uint32_t pid, uint32_t tid)
{
	return nonzero(fnv_u64(fnv_u64(fnv_bytes(FNV_OFFSET, "t", 1), pid), tid));
}

static uint64_t counter_uuid(uint32_t pid, const char *name)
{
	return nonzero(fnv_str(fnv_u64(fnv_bytes(FNV_OFFSET, "c", 1), pid), name));
}

static uint64_t async_uuid(uint32_t pid, const char *cat, uint64_t id)
{
	return nonzero(fnv_u64(fnv_str(fnv_u64(fnv_bytes(FNV_OFFSET, "a", 1), pid), cat), id));
}

static uint64_t flow_uuid(const char *cat, const char *name, uint64_t id)
{
	return nonzero(fnv_u64(fnv_str(fnv_str(FNV_OFFSET, cat), name), id));
}

/* ------------------------------------------------------------------------ */
/* Interned strings and described tracks */

/* Strings of one InternedData kind, each a malloc'd copy to its iid;
 * iids count from 1. */
typedef struct intern_table {
	tl_str_map iids;
	uint64_t next_iid;
} intern_table;

enum { KIND_CATEGORY, KIND_NAME, KIND_ANNOTATION, KIND_COUNT };

/* Strings first used by the packet being built. */
#define PENDING_MAX (3 * TL_MAX_ARGS + 4)

typedef struct pending_string {
	int kind;
	uint64_t iid;
	const char *s;
} pending_string;

/* ------------------------------------------------------------------------ */
/* The writer */

/* What a slice's flow event becomes (flow_mode). */
enum { FLOW_NONE, FLOW_BEGIN_OR_STEP, FLOW_TERMINATE };

/* What a slice's TrackEvent says of its flow, and on which of its two. */
typedef struct pf_slice_flow {
	uint64_t id;
	unsigned char mode;   /* FLOW_* */
	unsigned char on_end; /* on the slice's END rather than its BEGIN */
	unsigned char rank;   /* 0 begin, 1 step, 2 end: ties across threads */
} pf_slice_flow;

/* What both the model's export and the streamed one write with: packets,
 * interned strings, described tracks. */
typedef struct pf_writer {
	const tl_model *model; /* metadata (and, from a model, the events) */
	tl_out *out;
	tl_proto packet;
	int first_packet;
	intern_table strings[KIND_COUNT];
	pending_string pending[PENDING_MAX];
	size_t npending;
	tl_id_map described; /* the track uuids already described */
	/* the track of the last thread whose event was written */
	uint32_t track_pid, track_tid;
	uint64_t track_uuid;
	/* the last category interned: categories are the model's strings (a
	 * streamed event's too, snapshot_read.h), which outlive the export */
	const char *category;
	uint64_t category_iid;
	uint64_t counter_values_non_finite;
	int err; /* -ENOMEM */
} pf_writer;

/* A string's hash for the intern tables, a word at a time (the iids do not
 * depend on it: they count in order of first use). */
static uint64_t intern_hash(const char *s, size_t len)
{
	uint64_t h = len * 0x9e3779b97f4a7c15ull;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t word;
		memcpy(&word, s + i, sizeof word);
		h = (h ^ word) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	uint64_t tail = 0;
	memcpy(&tail, s + i, len - i);
	h = (h ^ tail) * 0x94d049bb133111ebull;
	return h ^ h >> 29;
}

static uint64_t intern(pf_writer *w, int kind, const char *s)
{
	intern_table *t = &w->strings[kind];
	size_t len = strlen(s);
	uint64_t hash = intern_hash(s, len);
	tl_str_slot *slot = tl_str_map_place(&t->iids, s, len, hash);
	if (!slot) {
		w->err = -ENOMEM;
		return 0;
	}
	if (slot->key)
		return slot->value;
	/* a copy: a streamed event's strings last until the next event */
	char *copy = malloc(len + 1);
	if (!copy) {
		w->err = -ENOMEM;
		return 0;
	}
	memcpy(copy, s, len + 1);
	tl_str_map_fill(&t->iids, slot, copy, len, hash, ++t->next_iid);
	if (w->npending < PENDING_MAX)
		w->pending[w->npending++] = (pending_string){kind, t->next_iid, copy};
	return t->next_iid;
}

static uint64_t intern_category(pf_writer *w, const char *cat)
{
	if (cat != w->category || !w->category_iid) {
		w->category_iid = intern(w, KIND_CATEGORY, cat);
		w->category = cat;
	}
	return w->category_iid;
}

/* Adds uuid to the described tracks; 1 when it was new. */
static int describe_once(pf_writer *w, uint64_t uuid)
{
	int added;
	if (!tl_id_map_add(&w->described, uuid, 0, &added)) {
		w->err = -ENOMEM;
		return 0;
	}
	return added;
}

/* ------------------------------------------------------------------------ */
/* Packets */

/* Starts a packet; a negative ts means none. */
static void packet_start(pf_writer *w, int has_ts, int64_t ts)
{
	tl_proto *p = &w->packet;
	tl_proto_reset(p);
	w->npending = 0;
	if (has_ts)
		tl_proto_varint(p, TL_PF_PACKET_TIMESTAMP, (uint64_t)ts);
	tl_proto_varint(p, TL_PF_PACKET_SEQUENCE_ID, TL_PF_SEQUENCE);
	tl_proto_varint(p, TL_PF_PACKET_SEQUENCE_FLAGS,
	                w->first_packet ? TL_PF_SEQ_INCREMENTAL_STATE_CLEARED
	                                : TL_PF_SEQ_NEEDS_INCREMENTAL_STATE);
	w->first_packet = 0;
}

/* Writes the strings the packet interned, then the packet, to the output. */
static void packet_finish(pf_writer *w)
{
	static const uint32_t fields[KIND_COUNT] = {
	    [KIND_CATEGORY] = TL_PF_INTERNED_EVENT_CATEGORIES,
	    [KIND_NAME] = TL_PF_INTERNED_EVENT_NAMES,
	    [KIND_ANNOTATION] = TL_PF_INTERNED_ANNOTATION_NAMES,
	};
	tl_proto *p = &w->packet;
	if (w->npending) {
		size_t data = tl_proto_begin(p, TL_PF_PACKET_INTERNED_DATA);
		for (int kind = 0; kind < KIND_COUNT; kind++) {
			for (size_t i = 0; i < w->npending; i++) {
				if (w->pending[i].kind != kind)
					continue;
				size_t entry = tl_proto_begin(p, fields[kind]);
				tl_proto_varint(p, TL_PF_INTERNED_IID, w->pending[i].iid);
				tl_proto_string(p, TL_PF_INTERNED_NAME, w->pending[i].s);
				tl_proto_end(p, entry);
			}
		}
		tl_proto_end(p, data);
	}
	if (p->err) {
		w->err = p->err;
		return;
	}
	unsigned char head[11];
	head[0] = TL_PF_TRACE_PACKET << 3 | 2;
	size_t n = 1 + tl_proto_put_varint(head + 1, p->len);
	tl_out_bytes(w->out, head, n);
	tl_out_bytes(w->out, p->buf, p->len);
}

static int clock_builtin(int clock_id)
{
	return clock_id == 1 ? TL_PF_BUILTIN_CLOCK_MONOTONIC : TL_PF_BUILTIN_CLOCK_BOOTTIME;
}

static void write_clock(tl_proto *p, int builtin, int64_t ts)
{
	size_t clock = tl_proto_begin(p, TL_PF_CLOCK_SNAPSHOT_CLOCKS);
	tl_proto_varint(p, TL_PF_CLOCK_ID, (uint64_t)builtin);
	tl_proto_varint(p, TL_PF_CLOCK_TIMESTAMP, (uint64_t)ts);
	tl_proto_end(p, clock);
}

/* The first packet: the clock snapshot and the timestamps' clock. */
static void write_clock_snapshot(pf_writer *w)
{
	const tl_model *m = w->model;
	tl_proto *p = &w->packet;
	int trace_clock = clock_builtin(m->clock_id);
	int64_t boot = m->boottime_ns, mono = m->monotonic_ns;

	packet_start(w, 0, 0);
	size_t snapshot = tl_proto_begin(p, TL_PF_PACKET_CLOCK_SNAPSHOT);
	if (trace_clock == TL_PF_BUILTIN_CLOCK_BOOTTIME) {
		write_clock(p, TL_PF_BUILTIN_CLOCK_BOOTTIME, boot);
		if (mono)
			write_clock(p, TL_PF_BUILTIN_CLOCK_MONOTONIC, mono);
	} else {
		write_clock(p, TL_PF_BUILTIN_CLOCK_MONOTONIC, mono);
		if (boot)
			write_clock(p, TL_PF_BUILTIN_CLOCK_BOOTTIME, boot);
	}
	if (m->realtime_ns)
		write_clock(p, TL_PF_BUILTIN_CLOCK_REALTIME, m->realtime_ns);
	tl_proto_varint(p, TL_PF_CLOCK_SNAPSHOT_PRIMARY, (uint64_t)trace_clock);
	tl_proto_end(p, snapshot);
	size_t defaults = tl_proto_begin(p, TL_PF_PACKET_DEFAULTS);
	tl_proto_varint(p, TL_PF_DEFAULTS_TIMESTAMP_CLOCK_ID, (uint64_t)trace_clock);
	tl_proto_end(p, defaults);
	packet_finish(w);
}

/* ------------------------------------------------------------------------ */
/* Track descriptors */

static void write_process(pf_writer *w, uint32_t pid)
{
	if (!describe_once(w, process_uuid(pid)))
		return;
	char fallback[32];
	const char *name = tl_model_process_name(w->model, pid);
	if (!name || !name[0]) {
		snprintf(fallback, sizeof fallback, "process %u", (unsigned)pid);
		name = fallback;
	}
	tl_proto *p = &w->packet;
	packet_start(w, 0, 0);
	size_t track = tl_proto_begin(p, TL_PF_PACKET_TRACK_DESCRIPTOR);
	tl_proto_varint(p, TL_PF_TRACK_UUID, process_uuid(pid));
	size_t process = tl_proto_begin(p, TL_PF_TRACK_PROCESS);
	tl_proto_varint(p, TL_PF_PROCESS_PID, (uint64_t)(int64_t)(int32_t)pid);
	tl_proto_string(p, TL_PF_PROCESS_NAME, name);
	tl_proto_end(p, process);
	tl_proto_end(p, track);
	packet_finish(w);
}

static uint32_t output_tid(uint32_t pid, uint32_t tid)
{
	return tid ? tid : pid;
}

static void write_thread(pf_writer *w, const tl_match_thread *t)
{
	uint32_t tid = output_tid(t->pid, t->tid);
	if (!describe_once(w, thread_uuid(t->pid, tid)))
		return;
	char fallback[32];
	const char *name = t->name;
	if (!name[0]) {
		snprintf(fallback, sizeof fallback, "thread %u", (unsigned)tid);
		name = fallback;
	}
	tl_proto *p = &w->packet;
	packet_start(w, 0, 0);
	size_t track = tl_proto_begin(p, TL_PF_PACKET_TRACK_DESCRIPTOR);
	tl_proto_varint(p, TL_PF_TRACK_UUID, thread_uuid(t->pid, tid));
	size_t thread = tl_proto_begin(p, TL_PF_TRACK_THREAD);
	tl_proto_varint(p, TL_PF_THREAD_PID, (uint64_t)(int64_t)(int32_t)t->pid);
	tl_proto_varint(p, TL_PF_THREAD_TID, tid);
	tl_proto_string(p, TL_PF_THREAD_NAME, name);
	tl_proto_end(p, thread);
	tl_proto_end(p, track);
	packet_finish(w);
}

/* The track of thread tid of process pid, for its events. */
static uint64_t thread_track(pf_writer *w, uint32_t pid, uint32_t tid)
{
	if (!w->track_uuid || pid != w->track_pid || tid != w->track_tid) {
		w->track_pid = pid;
		w->track_tid = tid;
		w->track_uuid = thread_uuid(pid, output_tid(pid, tid));
	}
	return w->track_uuid;
}

/* A track under process pid, described before its first event: named
 * name and suffix, a counter track or not. */
static void write_child_track(pf_writer *w, uint64_t uuid, uint32_t pid, const char *name,
                              const char *suffix, int counter)
{
	if (!describe_once(w, uuid))
		return;
	size_t len = strlen(name), suffix_len = strlen(suffix);
	char *track_name = malloc(len + suffix_len + 1);
	if (!track_name) {
		w->err = -ENOMEM;
		return;
	}
	memcpy(track_name, name, len);
	memcpy(track_name + len, suffix, suffix_len + 1);
	tl_proto *p = &w->packet;
	packet_start(w, 0, 0);
	size_t track = tl_proto_begin(p, TL_PF_PACKET_TRACK_DESCRIPTOR);
	tl_proto_varint(p, TL_PF_TRACK_UUID, uuid);
	tl_proto_varint(p, TL_PF_TRACK_PARENT_UUID, process_uuid(pid));
	tl_proto_string(p, TL_PF_TRACK_NAME, track_name);
	free(track_name);
	if (counter)
		tl_proto_end(p, tl_proto_begin(p, TL_PF_TRACK_COUNTER));
	tl_proto_end(p, track);
	packet_finish(w);
}

/* ------------------------------------------------------------------------ */
/* Track events */

static void write_annotation_value(tl_proto *p, const tl_model_arg *arg)
{
	switch (arg->type) {
	case TL_ARG_INT:
		tl_proto_varint(p, TL_PF_ANNOTATION_INT, (uint64_t)arg->v.i);
		break;
	case TL_ARG_UINT:
		tl_proto_varint(p, TL_PF_ANNOTATION_UINT, arg->v.u);
		break;
	case TL_ARG_DOUBLE:
		tl_proto_double(p, TL_PF_ANNOTATION_DOUBLE, arg->v.d);
		break;
	case TL_ARG_BOOL:
		tl_proto_varint(p, TL_PF_ANNOTATION_BOOL, arg->v.b ? 1 : 0);
		break;
	case TL_ARG_POINTER:
		tl_proto_varint(p, TL_PF_ANNOTATION_POINTER, arg->v.p);
		break;
	case TL_ARG_STRING:
	case TL_ARG_STRING_COPY:
		tl_proto_string(p, TL_PF_ANNOTATION_STRING, arg->v.s);
		break;
	default:
		break;
	}
}

static int arg_type_known(tl_arg_type type)
{
	return type >= TL_ARG_INT && type <= TL_ARG_STRING_COPY;
}

static void write_annotations(pf_writer *w, const tl_arg_list *args, int closed_at_snapshot)
{
	tl_proto *p = &w->packet;
	for (size_t i = 0; args && i < args->nargs; i++) {
		const tl_model_arg *arg = args->args[i];
		if (!arg_type_known(arg->type))
			continue;
		size_t a = tl_proto_begin(p, TL_PF_EVENT_DEBUG_ANNOTATIONS);
		tl_proto_varint(p, TL_PF_ANNOTATION_NAME_IID,
		                intern(w, KIND_ANNOTATION, arg->key ? arg->key : ""));
		write_annotation_value(p, arg);
		tl_proto_end(p, a);
	}
	if (closed_at_snapshot) {
		size_t a = tl_proto_begin(p, TL_PF_EVENT_DEBUG_ANNOTATIONS);
		tl_proto_varint(p, TL_PF_ANNOTATION_NAME_IID,
		                intern(w, KIND_ANNOTATION, "tl_closed_at_snapshot"));
		tl_proto_varint(p, TL_PF_ANNOTATION_BOOL, 1);
		tl_proto_end(p, a);
	}
}

/* One TrackEvent of a type, name and category, with what follows. */
typedef struct event_spec {
	int64_t ts;
	unsigned type;
	uint64_t track;
	const tl_model_event *ev; /* name and category */
	const tl_arg_list *args;  /* may be NULL */
	int closed_at_snapshot;
	int flow_mode; /* FLOW_* */
	uint64_t flow_id;
} event_spec;

/* Starts the packet and opens its TrackEvent; returns the mark to close. */
static size_t event_open(pf_writer *w, const event_spec *e)
{
	tl_proto *p = &w->packet;
	packet_start(w, 1, e->ts);
	size_t event = tl_proto_begin(p, TL_PF_PACKET_TRACK_EVENT);
	tl_proto_varint(p, TL_PF_EVENT_TYPE, e->type);
	tl_proto_varint(p, TL_PF_EVENT_TRACK_UUID, e->track);
	tl_proto_varint(p, TL_PF_EVENT_CATEGORY_IIDS,
	                intern_category(w, tl_export_event_cat(e->ev)));
	if (e->type != TL_PF_TYPE_COUNTER)
		tl_proto_varint(p, TL_PF_EVENT_NAME_IID,
		                intern(w, KIND_NAME, tl_export_event_name(e->ev)));
	write_annotations(w, e->args, e->closed_at_snapshot);
	if (e->flow_mode == FLOW_BEGIN_OR_STEP)
		tl_proto_fixed64(p, TL_PF_EVENT_FLOW_IDS, e->flow_id);
	else if (e->flow_mode == FLOW_TERMINATE)
		tl_proto_fixed64(p, TL_PF_EVENT_TERMINATING_FLOW_IDS, e->flow_id);
	return event;
}

static void event_close(pf_writer *w, size_t event)
{
	tl_proto_end(&w->packet, event);
	packet_finish(w);
}

static void write_event_spec(pf_writer *w, const event_spec *e)
{
	event_close(w, event_open(w, e));
}

/* ------------------------------------------------------------------------ */
/* Slices and other events */

/*
 * A slice's BEGIN at start_ns: ev its BEGIN, COMPLETE or flow event, with
 * the args of end (its END) and flow (the flow bound to it) too when it is
 * written as one X in JSON (else NULL); flow what it says of a flow (NULL:
 * nothing).
 */
static void write_slice_begin(pf_writer *w, const tl_model_event *ev, const tl_model_event *end,
                              const tl_model_event *flow, int closed_at_snapshot, int64_t start_ns,
                              const pf_slice_flow *flow_ref)
{
	uint32_t pid = tl_model_event_pid(w->model, ev);
	tl_arg_list args;
	tl_arg_list_collect(&args, ev, end, flow);
	event_spec e = {.ts = start_ns,
	                .type = TL_PF_TYPE_SLICE_BEGIN,
	                .track = thread_track(w, pid, ev->tid),
	                .ev = ev,
	                .args = &args,
	                .closed_at_snapshot = closed_at_snapshot};
	if (flow_ref) {
		e.flow_mode = flow_ref->mode;
		e.flow_id = flow_ref->id;
	}
	write_event_spec(w, &e);
}

/* A slice's END at end_ns: ev as for its BEGIN, with the args of end (its
 * END, unless they went on the BEGIN; else NULL). */
static void write_slice_end(pf_writer *w, const tl_model_event *ev, const tl_model_event *end,
                            int64_t end_ns, const pf_slice_flow *flow_ref)
{
	uint32_t pid = tl_model_event_pid(w->model, ev);
	tl_arg_list args;
	tl_arg_list_collect(&args, end, NULL, NULL);
	event_spec e = {.ts = end_ns,
	                .type = TL_PF_TYPE_SLICE_END,
	                .track = thread_track(w, pid, ev->tid),
	                .ev = ev,
	                .args = &args};
	if (flow_ref) {
		e.flow_mode = flow_ref->mode;
		e.flow_id = flow_ref->id;
	}
	write_event_spec(w, &e);
}

static void write_counter(pf_writer *w, const tl_model_event *ev)
{
	uint32_t pid = tl_model_event_pid(w->model, ev);
	double d = ev->counter_d;
	if (ev->counter_is_double && !isfinite(d)) {
		w->counter_values_non_finite++;
		if (isnan(d))
			return;
		d = d > 0 ? DBL_MAX : -DBL_MAX;
	}
	const char *name = tl_export_event_name(ev);
	uint64_t uuid = counter_uuid(pid, name);
	write_child_track(w, uuid, pid, name, " value", 1);

	tl_arg_list args;
	tl_arg_list_collect(&args, ev, NULL, NULL);
	event_spec e = {
	    .ts = ev->ts_ns, .type = TL_PF_TYPE_COUNTER, .track = uuid, .ev = ev, .args = &args};
	size_t event = event_open(w, &e);
	if (ev->counter_is_double)
		tl_proto_double(&w->packet, TL_PF_EVENT_DOUBLE_COUNTER_VALUE, d);
	else
		tl_proto_varint(&w->packet, TL_PF_EVENT_COUNTER_VALUE, (uint64_t)ev->counter_i);
	event_close(w, event);
}

static void write_event(pf_writer *w, const tl_model_event *ev)
{
	uint32_t pid = tl_model_event_pid(w->model, ev);
	tl_arg_list args;
	tl_arg_list_collect(&args, ev, NULL, NULL);
	event_spec e = {.ts = ev->ts_ns, .ev = ev, .args = &args};

	switch (ev->phase) {
	case TL_PHASE_COUNTER:
		write_counter(w, ev);
		return;
	case TL_PHASE_INSTANT:
		e.type = TL_PF_TYPE_INSTANT;
		switch (ev->scope & TL_EVENT_SCOPE_MASK) {
		case TL_EVENT_SCOPE_GLOBAL:
			e.track = 0;
			break;
		case TL_EVENT_SCOPE_PROCESS:
			e.track = process_uuid(pid);
			break;
		default:
			e.track = thread_track(w, pid, ev->tid);
			break;
		}
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
		e.type = ev->phase == TL_PHASE_ASYNC_BEGIN ? TL_PF_TYPE_SLICE_BEGIN
		         : ev->phase == TL_PHASE_ASYNC_END ? TL_PF_TYPE_SLICE_END
		                                           : TL_PF_TYPE_INSTANT;
		e.track = async_uuid(pid, tl_export_event_cat(ev), ev->id);
		write_child_track(w, e.track, pid, tl_export_event_name(ev), "", 0);
		break;
	default:
		return; /* slice_match lists no other phase as an event */
	}
	write_event_spec(w, &e);
}

/* ------------------------------------------------------------------------ */
/* Flows */

static int flow_phase_rank(char phase)
{
	return phase == TL_PHASE_FLOW_BEGIN ? 0 : phase == TL_PHASE_FLOW_STEP ? 1 : 2;
}

/*
 * A walk over every slice carrying a flow, the slices of one flow (one
 * Perfetto id) together, each flow's in the order the JSON writes its
 * events (tl_flow_refs): what each slice's TrackEvent says of its flow,
 * and whether its BEGIN or its END says it (see the file comment).
 */
typedef struct flow_walk {
	uint64_t id;
	int started;
	int active; /* the viewers have an open flow of this id */
	int64_t last;
} flow_walk;

/* The next slice: id its flow's Perfetto id, rank its flow event's phase
 * (flow_phase_rank), the slice from start_ns to end_ns. out->mode is
 * FLOW_NONE when the flow event is left out. */
static void flow_walk_next(flow_walk *fw, uint64_t id, int rank, int64_t start_ns, int64_t end_ns,
                           pf_slice_flow *out)
{
	if (!fw->started || id != fw->id) {
		fw->started = 1;
		fw->id = id;
		fw->active = 0;
		fw->last = INT64_MIN;
	}
	int mode;
	switch (rank) {
	case 0:
		mode = FLOW_BEGIN_OR_STEP;
		fw->active = 1;
		break;
	case 1:
		mode = fw->active ? FLOW_BEGIN_OR_STEP : FLOW_NONE;
		break;
	default:
		mode = fw->active ? FLOW_TERMINATE : FLOW_NONE;
		fw->active = 0;
		break;
	}
	*out = (pf_slice_flow){.id = id, .mode = (unsigned char)mode, .rank = (unsigned char)rank};
	if (mode == FLOW_NONE)
		return;
	if (start_ns >= fw->last || end_ns < fw->last) {
		fw->last = start_ns > fw->last ? start_ns : fw->last;
	} else {
		out->on_end = 1;
		fw->last = end_ns;
	}
}

/* ------------------------------------------------------------------------ */
/* Metadata */

static size_t meta_open(tl_proto *p, const char *name)
{
	size_t entry = tl_proto_begin(p, TL_PF_BUNDLE_METADATA);
	tl_proto_string(p, TL_PF_METADATA_NAME, name);
	return entry;
}

static void meta_int(tl_proto *p, const char *name, int64_t v)
{
	size_t entry = meta_open(p, name);
	tl_proto_varint(p, TL_PF_METADATA_INT, (uint64_t)v);
	tl_proto_end(p, entry);
}

static void meta_string(tl_proto *p, const char *name, const char *v)
{
	size_t entry = meta_open(p, name);
	tl_proto_string(p, TL_PF_METADATA_STRING, v);
	tl_proto_end(p, entry);
}

static void meta_bool(tl_proto *p, const char *name, int v)
{
	size_t entry = meta_open(p, name);
	tl_proto_varint(p, TL_PF_METADATA_BOOL, v ? 1 : 0);
	tl_proto_end(p, entry);
}

/* The keys and values of the JSON export's "metadata" object: the
 * snapshot's with st its stats, and this export's counts. */
static void write_metadata(pf_writer *w, const tl_stats *st, const tl_match_counts *counts)
{
	const tl_model *m = w->model;
	const char *recorder = m->recorder ? m->recorder : st->recorder;
	tl_proto *p = &w->packet;

	packet_start(w, 0, 0);
	size_t bundle = tl_proto_begin(p, TL_PF_PACKET_CHROME_EVENTS);
	meta_string(p, "recorder", recorder ? recorder : "");
	meta_string(p, "clock", m->clock_id == 7 ? "boot" : m->clock_id == 1 ? "mono" : "unknown");
	meta_int(p, "clock_id", m->clock_id);
	meta_int(p, "snapshot_ns", m->snapshot_ns);
	meta_int(p, "boottime_ns", m->boottime_ns);
	meta_int(p, "monotonic_ns", m->monotonic_ns);
	meta_int(p, "realtime_ns", m->realtime_ns);
	meta_bool(p, "snapshot_complete", m->complete);
	meta_int(p, "events_written", (int64_t)st->events_written);
	meta_int(p, "events_overwritten", (int64_t)st->events_overwritten);
	meta_int(p, "events_dropped", (int64_t)st->events_dropped);
	meta_int(p, "strings_truncated", (int64_t)st->strings_truncated);
	meta_int(p, "args_dropped", (int64_t)st->args_dropped);
	meta_int(p, "unmatched_begin", (int64_t)st->unmatched_begin);
	meta_int(p, "unmatched_end", (int64_t)st->unmatched_end);
	meta_int(p, "blocks_torn", (int64_t)st->blocks_torn);
	meta_int(p, "buffer_bytes", (int64_t)st->buffer_bytes);
	meta_int(p, "buffer_bytes_used", (int64_t)st->buffer_bytes_used);
	meta_int(p, "threads", (int64_t)st->threads);
	meta_int(p, "categories", (int64_t)st->categories);
	meta_int(p, "export_unmatched_begin", (int64_t)counts->unmatched_begin);
	meta_int(p, "export_unmatched_end", (int64_t)counts->unmatched_end);
	meta_int(p, "export_slices_too_deep", (int64_t)counts->too_deep);
	meta_int(p, "export_flow_markers", (int64_t)counts->flow_markers);
	meta_int(p, "export_flows_dropped", (int64_t)counts->flows_dropped);
	meta_int(p, "export_counter_values_non_finite", (int64_t)w->counter_values_non_finite);
	meta_int(p, "export_events_unknown", (int64_t)counts->events_unknown);
	tl_proto_end(p, bundle);
	packet_finish(w);
}

/* ------------------------------------------------------------------------ */
/* The writer's life */

static int writer_init(pf_writer *w, const tl_model *model, int fd)
{
	memset(w, 0, sizeof *w);
	w->model = model;
	w->first_packet = 1;
	tl_proto_init(&w->packet);
	w->out = malloc(sizeof *w->out);
	if (!w->out)
		return -ENOMEM;
	tl_out_init(w->out, fd);
	return 0;
}

static void writer_free(pf_writer *w)
{
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		tl_str_map *iids = &w->strings[kind].iids;
		for (size_t i = 0; i < iids->cap; i++)
			free((char *)iids->slots[i].key);
		tl_str_map_free(iids);
	}
	tl_id_map_free(&w->described);
	free(w->out);
	tl_proto_free(&w->packet);
}

/* The packets before the events: the clock snapshot, the processes, the
 * threads (by tid, the order of tl_slice_match.threads). */
static void write_head(pf_writer *w, const tl_match_thread *threads, size_t nthreads)
{
	write_clock_snapshot(w);
	write_process(w, w->model->pid);
	for (size_t t = 0; t < nthreads; t++)
		write_process(w, threads[t].pid);
	for (size_t t = 0; t < nthreads; t++)
		write_thread(w, &threads[t]);
}

/* ------------------------------------------------------------------------ */
/* From a model */

typedef struct model_export {
	pf_writer w;
	const tl_slice_match *match;
	pf_slice_flow *flows; /* per slice, when the model has flows (else NULL) */
} model_export;

typedef struct flow_order {
	uint64_t id;    /* the flow's Perfetto id */
	size_t written; /* position in tl_flow_refs order */
} flow_order;

static int compare_flow_order(const void *pa, const void *pb)
{
	const flow_order *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->written < b->written ? -1 : a->written > b->written;
}

/* Fills x->flows: what each slice carrying a flow says of it. 0 or -ENOMEM. */
static int plan_flows(model_export *x)
{
	const tl_slice_match *match = x->match;
	size_t n = tl_flow_count(match);
	if (n == 0)
		return 0;
	tl_flow_ref *refs = calloc(n, sizeof *refs);
	flow_order *order = calloc(n, sizeof *order);
	x->flows = calloc(match->nslices, sizeof *x->flows);
	if (!refs || !order || !x->flows) {
		free(refs);
		free(order);
		return -ENOMEM;
	}
	n = tl_flow_refs(x->w.model, match, refs);
	for (size_t i = 0; i < n; i++) {
		const tl_model_event *ev = refs[i].event;
		order[i].id =
		    flow_uuid(tl_export_event_cat(ev), tl_export_event_name(ev), refs[i].id);
		order[i].written = i;
	}
	qsort(order, n, sizeof *order, compare_flow_order);
	flow_walk walk = {0};
	for (size_t i = 0; i < n; i++) {
		const tl_flow_ref *ref = &refs[order[i].written];
		const tl_slice *s = &match->slices[ref->slice];
		flow_walk_next(&walk, order[i].id, flow_phase_rank(ref->event->phase), s->start_ns,
		               s->end_ns, &x->flows[ref->slice]);
	}
	free(refs);
	free(order);
	return 0;
}

/* What slice index says of its flow on its BEGIN (on_end 0) or END. */
static const pf_slice_flow *model_slice_flow(const model_export *x, size_t index, int on_end)
{
	if (!x->flows || x->flows[index].mode == FLOW_NONE || x->flows[index].on_end != on_end)
		return NULL;
	return &x->flows[index];
}

static void model_slice_open(model_export *x, size_t index)
{
	const tl_slice *s = &x->match->slices[index];
	const tl_model_event *events = x->w.model->events;
	const tl_model_event *end = NULL, *flow = NULL;
	if ((s->flags & TL_SLICE_AS_COMPLETE) && !(s->flags & TL_SLICE_FLOW_MARKER)) {
		if (s->end_event != TL_MATCH_NONE)
			end = &events[s->end_event];
		if (s->flow_event != TL_MATCH_NONE)
			flow = &events[s->flow_event];
	}
	write_slice_begin(&x->w, &events[s->event], end, flow,
	                  !!(s->flags & TL_SLICE_OPEN_AT_SNAPSHOT), s->start_ns,
	                  model_slice_flow(x, index, 0));
}

static void model_slice_close(model_export *x, size_t index)
{
	const tl_slice *s = &x->match->slices[index];
	const tl_model_event *events = x->w.model->events;
	const tl_model_event *end = NULL;
	if (!(s->flags & TL_SLICE_AS_COMPLETE) && s->end_event != TL_MATCH_NONE)
		end = &events[s->end_event];
	write_slice_end(&x->w, &events[s->event], end, s->end_ns, model_slice_flow(x, index, 1));
}

/* The order of the packets: each thread's sorted by compare_record, then
 * merged across threads by (ts, flow rank, thread). */
typedef struct pf_record {
	int64_t ts;
	size_t order;
	int rank;      /* 0: the end of a slice longer than zero; 1: the rest */
	int flow_rank; /* 0 to 2: carries a flow's begin, step, end; 3: none */
	const tl_match_item *item;
} pf_record;

static int compare_record(const void *pa, const void *pb)
{
	const pf_record *a = pa, *b = pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Whether thread a's next packet (at ts_a, flow_rank_a) goes before thread
 * b's: the merge's order, the same from a model and streamed. */
static int merge_before(int64_t ts_a, int flow_rank_a, size_t a, int64_t ts_b, int flow_rank_b,
                        size_t b)
{
	if (ts_a != ts_b)
		return ts_a < ts_b;
	if (flow_rank_a != flow_rank_b)
		return flow_rank_a < flow_rank_b;
	return a < b;
}

static void fill_records(const model_export *x, const tl_match_thread *t, pf_record *records)
{
	const tl_slice_match *match = x->match;
	for (size_t i = 0; i < t->nitems; i++) {
		const tl_match_item *item = &match->items[t->first_item + i];
		pf_record *r = &records[i];
		*r = (pf_record){.ts = item->ts_ns,
		                 .order = item->order,
		                 .rank = 1,
		                 .flow_rank = 3,
		                 .item = item};
		if (item->kind == TL_ITEM_EVENT)
			continue;
		const tl_slice *s = &match->slices[item->ref];
		if (item->kind == TL_ITEM_CLOSE && s->end_ns > s->start_ns)
			r->rank = 0;
		const pf_slice_flow *flow =
		    model_slice_flow(x, item->ref, item->kind == TL_ITEM_CLOSE);
		if (flow)
			r->flow_rank = flow->rank;
	}
	qsort(records, t->nitems, sizeof *records, compare_record);
}

/* The next record of each thread, in a binary heap of thread indices. */
typedef struct merge {
	const pf_record *records;
	size_t *next; /* per thread: index into records */
	size_t *heap;
	size_t nheap;
} merge;

static const pf_record *head(const merge *m, size_t thread)
{
	return &m->records[m->next[thread]];
}

static int heap_less(const merge *m, size_t a, size_t b)
{
	const pf_record *x = head(m, a), *y = head(m, b);
	return merge_before(x->ts, x->flow_rank, a, y->ts, y->flow_rank, b);
}

static void heap_down(merge *m, size_t i)
{
	for (;;) {
		size_t least = i, l = 2 * i + 1, r = l + 1;
		if (l < m->nheap && heap_less(m, m->heap[l], m->heap[least]))
			least = l;
		if (r < m->nheap && heap_less(m, m->heap[r], m->heap[least]))
			least = r;
		if (least == i)
			return;
		size_t tmp = m->heap[i];
		m->heap[i] = m->heap[least];
		m->heap[least] = tmp;
		i = least;
	}
}

static void write_record(model_export *x, const pf_record *r)
{
	const tl_match_item *item = r->item;
	switch (item->kind) {
	case TL_ITEM_OPEN:
		model_slice_open(x, item->ref);
		break;
	case TL_ITEM_CLOSE:
		model_slice_close(x, item->ref);
		break;
	case TL_ITEM_EVENT:
		write_event(&x->w, &x->w.model->events[item->ref]);
		break;
	}
}

/* Writes every thread's records, merged by timestamp. 0 or -ENOMEM. */
static int write_events(model_export *x)
{
	const tl_slice_match *match = x->match;
	pf_writer *w = &x->w;
	pf_record *records = calloc(match->nitems + 1, sizeof *records);
	merge m = {.records = records};
	m.next = calloc(match->nthreads + 1, sizeof *m.next);
	m.heap = calloc(match->nthreads + 1, sizeof *m.heap);
	size_t *last = calloc(match->nthreads + 1, sizeof *last);
	int rc = -ENOMEM;
	if (!records || !m.next || !m.heap || !last)
		goto out_free;
	for (size_t t = 0; t < match->nthreads; t++) {
		const tl_match_thread *th = &match->threads[t];
		fill_records(x, th, records + th->first_item);
		m.next[t] = th->first_item;
		last[t] = th->first_item + th->nitems;
		if (th->nitems)
			m.heap[m.nheap++] = t;
	}
	for (size_t i = m.nheap; i-- > 0;)
		heap_down(&m, i);
	while (m.nheap && !w->err && !w->out->err) {
		size_t t = m.heap[0];
		write_record(x, head(&m, t));
		if (++m.next[t] == last[t])
			m.heap[0] = m.heap[--m.nheap];
		heap_down(&m, 0);
	}
	rc = 0;
out_free:
	free(last);
	free(m.heap);
	free(m.next);
	free(records);
	return rc;
}

int tl_export_perfetto(const tl_model *model, int fd, tl_export_counts *counts)
{
	tl_slice_match match;
	int rc = tl_slice_match_build(model, &match);
	if (rc)
		return rc;
	model_export x = {.match = &match};
	rc = writer_init(&x.w, model, fd);
	if (rc == 0)
		rc = plan_flows(&x);
	if (rc)
		goto out_free;

	write_head(&x.w, match.threads, match.nthreads);
	rc = write_events(&x);
	if (rc == 0 && !x.w.err) {
		tl_match_counts totals = {match.unmatched_begin, match.unmatched_end,
		                          match.too_deep,        match.flow_markers,
		                          match.flows_dropped,   match.events_unknown};
		write_metadata(&x.w, &model->stats, &totals);
	}
	if (rc == 0)
		rc = x.w.err;
	if (rc == 0)
		rc = tl_out_flush(x.w.out);
	if (rc == 0 && counts) {
		counts->unmatched_begin = match.unmatched_begin;
		counts->unmatched_end = match.unmatched_end;
	}

out_free:
	writer_free(&x.w);
	free(x.flows);
	tl_slice_match_free(&match);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Streamed from a binary snapshot */

/*
 * Two passes over the threads (slice_stream.h). The first surveys every
 * thread and runs its matching once, noting what a slice's BEGIN will need
 * from events after it: the args of its END and flow when the JSON writes
 * it as one X, whether it closes at the snapshot; and every flow event, for
 * the flows' plan (flow_walk), made once all of them are known. The second
 * runs every thread's matching again, a segment at a time, its packets
 * waiting in a queue ordered as compare_record orders them until the
 * matching's floor passes them, and merges the threads' next packets as the
 * model's export does (merge_before).
 *
 * What it holds besides the input: the survey of every thread (as the
 * ftrace export), each thread's open slices and queue window; 32 bytes per
 * slice whose BEGIN needs its close (an END or flow event with args on a
 * slice the JSON writes as one X, or a close at the snapshot); per flow
 * event, 64 bytes until the plan (and 8 while it is grouped), then 24; the
 * interned strings (a copy of each distinct category, name and argument
 * key) and the described tracks (16 bytes each).
 */

/* What a slice's BEGIN needs from its close; kept for the slices that need
 * something. */
typedef struct stream_note {
	uint64_t slice;
	/* copies (pf_source.note_recs): the second pass reads them after the
	 * cursors passed them */
	const uint64_t *end_rec;  /* its END, whose args go on the BEGIN; or NULL */
	const uint64_t *flow_rec; /* its flow event, whose args go on the BEGIN; or NULL */
	uint64_t closed_at_snapshot;
} stream_note;

/* A slice whose TrackEvent says something of its flow: 24 bytes, one per
 * flow event, kept until the end. */
typedef struct stream_slice_flow {
	uint64_t slice;
	uint64_t id;
	uint32_t source; /* in the order of pf_stream's sources */
	unsigned char mode, on_end, rank;
} stream_slice_flow;

/* A flow event, from the first pass to the plan: 64 bytes. */
typedef struct stream_flow {
	uint64_t bind_id;    /* the id written in the JSON: tl_flow_refs' flows */
	uint64_t id;         /* the Perfetto id */
	int64_t event_ts_ns; /* the flow event's own time */
	uint64_t place;      /* rank << PLACE_RANK_SHIFT | index among all events */
	int64_t start_ns;    /* the slice's */
	int64_t end_ns;
	uint64_t slice;
	uint32_t source;
	/* tl_flow_refs writes it at its own time, not the slice's start */
	unsigned char at_event_ts;
	unsigned char mode, on_end; /* the plan's */
} stream_flow;
_Static_assert(sizeof(stream_flow) == 64, "a flow event in 64 bytes");

/* When tl_flow_refs writes a flow event. */
static int64_t flow_written_ns(const stream_flow *f)
{
	return f->at_event_ts ? f->event_ts_ns : f->start_ns;
}

#define PLACE_RANK_SHIFT 62

/* A packet waiting for its place. */
typedef struct stream_item {
	int64_t ts_ns;
	uint64_t order;
	const uint64_t *rec;      /* the event; a slice's BEGIN, COMPLETE or flow event */
	const uint64_t *end_rec;  /* the END whose args it carries, or NULL */
	const uint64_t *flow_rec; /* the flow event whose args it carries, or NULL */
	pf_slice_flow flow;       /* mode FLOW_NONE: says nothing of a flow */
	unsigned char kind;       /* tl_match_item_kind */
	unsigned char rank;       /* as pf_record's */
	unsigned char flow_rank;
	unsigned char closed_at_snapshot;
} stream_item;
_Static_assert(sizeof(stream_item) % 8 == 0 && sizeof(stream_item) <= TL_ITEM_QUEUE_SLOT &&
                   offsetof(stream_item, ts_ns) == 0,
               "a source's item");

typedef struct pf_stream pf_stream;

/* A thread with events. */
typedef struct pf_source {
	tl_stream_source base; /* first: its matching, its items waiting for their place */
	pf_stream *ps;
	uint32_t tid;
	uint64_t first_index; /* its first event among every thread's */
	tl_thread_survey survey;
	stream_note *notes; /* by slice */
	size_t nnotes, notes_cap, next_note;
	tl_rec_copies note_recs;
	const stream_slice_flow *flows; /* by slice, in pf_stream's flows */
	size_t nflows, next_flow;
	/* the flows said on the END of a slice still open, innermost last */
	stream_slice_flow *pending;
	size_t npending, pending_cap;
} pf_source;

struct pf_stream {
	tl_snapshot_read *r;
	pf_writer w;
	tl_stream_strings strings;
	pf_source *sources;
	/* stream_flow from the first pass to the plan, then stream_slice_flow */
	void *flows;
	size_t nflows, flows_cap;
	size_t flows_before; /* of the thread in its first pass */
	int error;           /* -ENOMEM while writing */
};

static int grow_array(void **array, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t new_cap = *cap ? *cap : 64;
	while (new_cap < need)
		new_cap *= 2;
	void *grown = new_cap <= SIZE_MAX / size ? realloc(*array, new_cap * size) : NULL;
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

/* First pass: a flow event bound to s, noted at s's close. */
static void note_flow(pf_source *src, const tl_stream_slice *s)
{
	pf_stream *ps = src->ps;
	const tl_cursor_event *e = &s->flow;
	if (grow_array(&ps->flows, &ps->flows_cap, ps->nflows + 1, sizeof(stream_flow)) ||
	    tl_stream_strings_reset(&ps->strings, &e->rec, 1)) {
		src->base.error = -ENOMEM;
		return;
	}
	tl_model_event ev;
	tl_stream_decode(ps->r, &ps->strings, e->rec, src->tid, 0, &ev);
	uint64_t bind_id = tl_flow_bind_id(ev.id, ev.scope, tl_model_event_pid(ps->r->model, &ev));
	uint64_t rank = (uint64_t)flow_phase_rank(e->phase);
	stream_flow *flows = ps->flows;
	flows[ps->nflows++] = (stream_flow){
	    .bind_id = bind_id,
	    .id = flow_uuid(tl_export_event_cat(&ev), tl_export_event_name(&ev), bind_id),
	    .event_ts_ns = e->ts_ns,
	    .place = rank << PLACE_RANK_SHIFT | (src->first_index + e->position),
	    .start_ns = s->start_ns,
	    .end_ns = s->end_ns,
	    .slice = s->index,
	    .source = (uint32_t)(src - ps->sources),
	};
}

/* First pass: at its close, what a slice's BEGIN will need. */
static void note_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	(void)order;
	pf_source *src = ctx;
	if (s->has_flow)
		note_flow(src, s);
	stream_note note = {.slice = s->index,
	                    .closed_at_snapshot = !!(s->flags & TL_SLICE_OPEN_AT_SNAPSHOT)};
	const uint64_t *end_rec = NULL, *flow_rec = NULL;
	if ((s->flags & TL_SLICE_AS_COMPLETE) && s->kind != TL_STREAM_MARKER) {
		/* an event without args adds none: as none */
		if (s->end_rec && tl_stream_has_args(s->end_rec))
			end_rec = s->end_rec;
		if (s->has_flow && tl_stream_has_args(s->flow.rec))
			flow_rec = s->flow.rec;
	}
	if (!end_rec && !flow_rec && !note.closed_at_snapshot)
		return;
	if (grow_array((void **)&src->notes, &src->notes_cap, src->nnotes + 1,
	               sizeof *src->notes) ||
	    tl_rec_copies_add(&src->note_recs, end_rec, &note.end_rec) ||
	    tl_rec_copies_add(&src->note_recs, flow_rec, &note.flow_rec)) {
		src->base.error = -ENOMEM;
		return;
	}
	src->notes[src->nnotes++] = note;
}

/* (No .keep: the first run keeps no record, the notes hold copies.) */
static const tl_slice_stream_ops note_ops = {
    .close = note_close,
};

/* Forgets what a first pass noted of the source's thread, to run it again. */
static void forget_notes(void *ctx)
{
	pf_source *src = ctx;
	src->nnotes = 0;
	tl_rec_copies_free(&src->note_recs);
	src->ps->nflows = src->ps->flows_before;
}

static int compare_note(const void *pa, const void *pb)
{
	const stream_note *a = pa, *b = pb;
	return a->slice < b->slice ? -1 : a->slice > b->slice;
}

/* The first pass over a thread. 0 or -ENOMEM. */
static int survey_source(pf_source *src, tl_snapshot_thread *t, tl_match_counts *totals)
{
	pf_stream *ps = src->ps;
	ps->flows_before = ps->nflows;
	int rc = tl_stream_first_run(ps->r, t, &src->survey, &note_ops, src, forget_notes, totals);
	if (rc == 0)
		rc = src->base.error;
	/* noted at the closes: in the order slices open */
	if (rc == 0 && src->nnotes > 1)
		qsort(src->notes, src->nnotes, sizeof *src->notes, compare_note);
	tl_snapshot_thread_release(t);
	return rc;
}

/* The events of one JSON flow together, in the order they happened. */
static int compare_flow_path(const void *pa, const void *pb)
{
	const stream_flow *a = pa, *b = pb;
	if (a->bind_id != b->bind_id)
		return a->bind_id < b->bind_id ? -1 : 1;
	if (a->event_ts_ns != b->event_ts_ns)
		return a->event_ts_ns < b->event_ts_ns ? -1 : 1;
	return a->place < b->place ? -1 : a->place > b->place;
}

/* The events of one Perfetto flow together, in tl_flow_refs' order. */
static int compare_flow_plan(const void *pa, const void *pb)
{
	const stream_flow *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	int64_t ta = flow_written_ns(a), tb = flow_written_ns(b);
	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (a->event_ts_ns != b->event_ts_ns)
		return a->event_ts_ns < b->event_ts_ns ? -1 : 1;
	return a->place < b->place ? -1 : a->place > b->place;
}

static int compare_slice_flow(const void *pa, const void *pb)
{
	const stream_slice_flow *a = pa, *b = pb;
	return a->slice < b->slice ? -1 : a->slice > b->slice;
}

/* The keys the flow events are grouped by: the JSON's and Perfetto's. */
static uint64_t flow_bind_key(const void *f)
{
	return ((const stream_flow *)f)->bind_id;
}

static uint64_t flow_id_key(const void *f)
{
	return ((const stream_flow *)f)->id;
}

/* Walks the flow events as plan_flows does: each written when the JSON
 * writes it (tl_flow_refs), then walked in each flow's order. 0 or -ENOMEM. */
static int walk_stream_flows(stream_flow *flows, size_t n)
{
	size_t *order = malloc(n * sizeof *order);
	if (!order)
		return -ENOMEM;
	int rc = tl_stream_group_order(flows, sizeof *flows, n, order, flow_bind_key,
	                               compare_flow_path);
	for (size_t i = 1; rc == 0 && i < n; i++) {
		stream_flow *f = &flows[order[i]];
		const stream_flow *prev = &flows[order[i - 1]];
		if (f->bind_id == prev->bind_id && f->start_ns < flow_written_ns(prev))
			f->at_event_ts = 1;
	}
	if (rc == 0)
		rc = tl_stream_group_order(flows, sizeof *flows, n, order, flow_id_key,
		                           compare_flow_plan);
	flow_walk walk = {0};
	for (size_t i = 0; rc == 0 && i < n; i++) {
		stream_flow *f = &flows[order[i]];
		pf_slice_flow plan;
		flow_walk_next(&walk, f->id, (int)(f->place >> PLACE_RANK_SHIFT), f->start_ns,
		               f->end_ns, &plan);
		f->mode = plan.mode;
		f->on_end = plan.on_end;
	}
	free(order);
	return rc;
}

/*
 * The flows' plan: gives each source the slices whose TrackEvent says
 * something of a flow, by slice, the flow events' 64 bytes each becoming 24
 * in place. 0 or -ENOMEM.
 */
static int plan_stream_flows(pf_stream *ps)
{
	size_t n = ps->nflows;
	if (n == 0)
		return 0;
	int rc = walk_stream_flows(ps->flows, n);
	if (rc)
		return rc;
	/* the first pass noted them source by source: each source's stay
	 * together, each written over flow events already read */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		stream_flow f = ((const stream_flow *)ps->flows)[i];
		if (f.mode == FLOW_NONE)
			continue;
		((stream_slice_flow *)ps->flows)[kept++] = (stream_slice_flow){
		    .slice = f.slice,
		    .id = f.id,
		    .source = f.source,
		    .mode = f.mode,
		    .on_end = f.on_end,
		    .rank = (unsigned char)(f.place >> PLACE_RANK_SHIFT),
		};
	}
	void *shrunk = realloc(ps->flows, (kept + 1) * sizeof(stream_slice_flow));
	if (shrunk)
		ps->flows = shrunk;
	ps->nflows = kept;
	stream_slice_flow *flows = ps->flows;
	for (size_t i = 0; i < kept;) {
		size_t end = i + 1;
		while (end < kept && flows[end].source == flows[i].source)
			end++;
		pf_source *src = &ps->sources[flows[i].source];
		src->flows = &flows[i];
		src->nflows = end - i;
		/* noted at the closes: in the order slices open */
		qsort(&flows[i], end - i, sizeof *flows, compare_slice_flow);
		i = end;
	}
	return 0;
}

static int compare_item(const void *pa, const void *pb)
{
	const stream_item *a = pa, *b = pb;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static void push_item(pf_source *src, const stream_item *item)
{
	tl_stream_source_push(&src->base, item);
}

static void carry_flow(stream_item *item, const stream_slice_flow *flow)
{
	item->flow = (pf_slice_flow){
	    .id = flow->id, .mode = flow->mode, .on_end = flow->on_end, .rank = flow->rank};
	item->flow_rank = flow->rank;
}

/* Second pass: the packets. */
static void item_open(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	pf_source *src = ctx;
	stream_item item = {.ts_ns = s->start_ns,
	                    .order = order,
	                    .rec = s->rec,
	                    .kind = TL_ITEM_OPEN,
	                    .rank = 1,
	                    .flow_rank = 3};
	while (src->next_note < src->nnotes && src->notes[src->next_note].slice < s->index)
		src->next_note++;
	if (src->next_note < src->nnotes && src->notes[src->next_note].slice == s->index) {
		const stream_note *note = &src->notes[src->next_note];
		item.end_rec = note->end_rec;
		item.flow_rec = note->flow_rec;
		item.closed_at_snapshot = (unsigned char)note->closed_at_snapshot;
	}
	while (src->next_flow < src->nflows && src->flows[src->next_flow].slice < s->index)
		src->next_flow++;
	if (src->next_flow < src->nflows && src->flows[src->next_flow].slice == s->index) {
		const stream_slice_flow *flow = &src->flows[src->next_flow];
		if (!flow->on_end) {
			carry_flow(&item, flow);
		} else if (grow_array((void **)&src->pending, &src->pending_cap, src->npending + 1,
		                      sizeof *src->pending)) {
			src->base.error = -ENOMEM;
		} else {
			src->pending[src->npending++] = *flow; /* for its close */
		}
	}
	push_item(src, &item);
}

static void item_close(void *ctx, const tl_stream_slice *s, uint64_t order)
{
	pf_source *src = ctx;
	stream_item item = {.ts_ns = s->end_ns,
	                    .order = order,
	                    .rec = s->rec,
	                    .kind = TL_ITEM_CLOSE,
	                    .rank = s->end_ns > s->start_ns ? 0 : 1,
	                    .flow_rank = 3};
	if (!(s->flags & TL_SLICE_AS_COMPLETE) && s->end_rec && tl_stream_has_args(s->end_rec))
		item.end_rec = s->end_rec;
	/* slices close innermost first */
	if (src->npending && src->pending[src->npending - 1].slice == s->index)
		carry_flow(&item, &src->pending[--src->npending]);
	push_item(src, &item);
}

static void item_event(void *ctx, const tl_cursor_event *e, uint64_t order)
{
	stream_item item = {.ts_ns = e->ts_ns,
	                    .order = order,
	                    .rec = e->rec,
	                    .kind = TL_ITEM_EVENT,
	                    .rank = 1,
	                    .flow_rank = 3};
	push_item(ctx, &item);
}

/* The second pass keeps the records of its packets waiting (those an
 * open takes from the notes are copies). */
static void keep_items(void *ctx, tl_kept_recs *k)
{
	static const size_t rec_at[] = {offsetof(stream_item, rec), offsetof(stream_item, end_rec),
	                                offsetof(stream_item, flow_rec)};
	const pf_source *src = ctx;
	tl_item_queue_keep(&src->base.items, rec_at, 3, k);
}

static const tl_slice_stream_ops item_ops = {
    .open = item_open,
    .close = item_close,
    .event = item_event,
    .keep = keep_items,
};

static void write_stream_item(pf_stream *ps, const pf_source *src, const stream_item *item)
{
	const uint64_t *recs[3] = {item->rec, item->end_rec, item->flow_rec};
	if (tl_stream_strings_reset(&ps->strings, recs, 3)) {
		ps->error = -ENOMEM;
		return;
	}
	tl_model_arg args[3][TL_MAX_ARGS]; /* a decoded event's args are its caller's */
	tl_model_event ev = {.args = args[0]}, end = {.args = args[1]}, flow = {.args = args[2]};
	/* a slice's END needs the name and category of its BEGIN only */
	tl_stream_decode(ps->r, &ps->strings, item->rec, src->tid, item->kind != TL_ITEM_CLOSE,
	                 &ev);
	ev.ts_ns = item->ts_ns;
	if (item->end_rec)
		tl_stream_decode(ps->r, &ps->strings, item->end_rec, src->tid, 1, &end);
	if (item->flow_rec)
		tl_stream_decode(ps->r, &ps->strings, item->flow_rec, src->tid, 1, &flow);
	const pf_slice_flow *flow_ref = item->flow.mode != FLOW_NONE ? &item->flow : NULL;
	switch (item->kind) {
	case TL_ITEM_OPEN:
		write_slice_begin(&ps->w, &ev, item->end_rec ? &end : NULL,
		                  item->flow_rec ? &flow : NULL, item->closed_at_snapshot,
		                  item->ts_ns, flow_ref);
		break;
	case TL_ITEM_CLOSE:
		write_slice_end(&ps->w, &ev, item->end_rec ? &end : NULL, item->ts_ns, flow_ref);
		break;
	default:
		write_event(&ps->w, &ev);
		break;
	}
}

static int source_before(const tl_stream_source *a, const tl_stream_source *b)
{
	const stream_item *x = tl_item_queue_first(&a->items);
	const stream_item *y = tl_item_queue_first(&b->items);
	return merge_before(x->ts_ns, x->flow_rank, a->index, y->ts_ns, y->flow_rank, b->index);
}

/* The second pass: every source's packets, merged. 0 or -ENOMEM. */
static int merge_sources(pf_stream *ps, pf_source *sources, size_t n)
{
	tl_source_heap heap;
	int rc = tl_source_heap_init(&heap, n, source_before);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = tl_stream_source_start(&sources[i].base, ps->r, &sources[i].survey, &item_ops,
		                            &sources[i]);
		if (rc == 0)
			rc = tl_source_heap_add(&heap, &sources[i].base);
	}
	tl_stream_source *top;
	while (rc == 0 && (top = tl_source_heap_top(&heap)) && !ps->w.err && !ps->w.out->err) {
		stream_item item;
		tl_item_queue_pop(&top->items, &item);
		write_stream_item(ps, (pf_source *)top, &item);
		rc = ps->error;
		if (rc == 0)
			rc = tl_source_heap_next(&heap);
	}
	tl_source_heap_free(&heap);
	return rc;
}

int tl_export_perfetto_stream(tl_snapshot_read *r, int fd, tl_export_counts *counts)
{
	pf_stream ps = {.r = r};
	tl_stream_thread *threads = NULL;
	tl_match_thread *infos = NULL;
	pf_source *sources = NULL;
	size_t nthreads = 0, nsources = 0;
	tl_match_counts totals = {0};
	int rc = writer_init(&ps.w, r->model, fd);
	if (rc == 0)
		rc = tl_stream_threads(r, &threads, &nthreads);
	if (rc == 0) {
		infos = calloc(nthreads + 1, sizeof *infos);
		sources = calloc(nthreads + 1, sizeof *sources);
		ps.sources = sources;
		rc = infos && sources ? 0 : -ENOMEM;
	}
	uint64_t first_index = 0;
	/* every record kept is named (keep_noted, keep_items): the passes
	 * free the unpacked records of a file recorder's file behind them */
	int trim_behind = r->trim_behind;
	r->trim_behind = 1;
	for (size_t t = 0; t < nthreads && rc == 0; t++) {
		infos[t] = threads[t].info;
		if (!threads[t].snapshot)
			continue;
		pf_source *src = &sources[nsources++];
		tl_stream_source_init(&src->base, t, sizeof(stream_item), compare_item);
		src->ps = &ps;
		src->tid = threads[t].info.tid;
		src->first_index = first_index;
		rc = survey_source(src, threads[t].snapshot, &totals);
		first_index += src->survey.nevents;
	}
	if (rc == 0)
		rc = plan_stream_flows(&ps);
	if (rc == 0) {
		write_head(&ps.w, infos, nthreads);
		rc = merge_sources(&ps, sources, nsources);
	}
	if (rc == 0 && !ps.w.err) {
		tl_stats stats = tl_stream_stats(r);
		write_metadata(&ps.w, &stats, &totals);
	}
	if (rc == 0)
		rc = ps.w.err;
	if (rc == 0)
		rc = tl_out_flush(ps.w.out);
	if (rc == 0 && r->unpack_failed)
		rc = -ENOMEM;
	if (rc == 0 && counts) {
		counts->unmatched_begin = totals.unmatched_begin;
		counts->unmatched_end = totals.unmatched_end;
	}

	for (size_t i = 0; i < nsources; i++) {
		pf_source *src = &sources[i];
		tl_stream_source_free(&src->base);
		tl_thread_survey_free(&src->survey);
		tl_snapshot_thread_unload(r, src->survey.thread);
		free(src->notes);
		tl_rec_copies_free(&src->note_recs);
		free(src->pending);
	}
	r->trim_behind = trim_behind;
	free(sources);
	free(infos);
	free(threads);
	free(ps.flows);
	tl_stream_strings_free(&ps.strings);
	writer_free(&ps.w);
	return rc;
}
