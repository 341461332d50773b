/*
 * A reader of Perfetto's protobuf trace format (perfetto.protos.Trace), for
 * the traces timeline writes (recorder/export/export_perfetto.c): track
 * descriptors (process, thread, counter and child tracks) and TrackEvents
 * (slice begin and end, instants, counters) with interned names and
 * categories, debug annotations and flow ids. Every other packet and field
 * is skipped, whatever its number; a field with a wire type protobuf does
 * not have, or a length past its message's end, is an error.
 *
 * Like the JSON reader, it decodes and does not interpret: the importer
 * (trace_import.h, tl_import_perfetto) builds the slices. Names of
 * interned strings are resolved per packet sequence and incremental-state
 * generation, as trace_processor does. Not signal-safe (allocates).
 */
#ifndef TIMELINE_PERFETTO_READER_H
#define TIMELINE_PERFETTO_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tools/readers/json_reader.h"

typedef enum tl_perfetto_track_kind {
	TL_PERFETTO_TRACK_ROOT,    /* no process, thread or parent: global */
	TL_PERFETTO_TRACK_PROCESS, /* ProcessDescriptor */
	TL_PERFETTO_TRACK_THREAD,  /* ThreadDescriptor */
	TL_PERFETTO_TRACK_CHILD,   /* a parent_uuid and no process or thread */
} tl_perfetto_track_kind;

/* One track, the union of every descriptor with its uuid. */
typedef struct tl_perfetto_track {
	uint64_t uuid;
	uint64_t parent_uuid; /* CHILD */
	tl_perfetto_track_kind kind;
	int counter;       /* has a CounterDescriptor */
	uint32_t pid, tid; /* PROCESS: pid; THREAD: both */
	const char *name;  /* the track's name (or the process or thread name); NULL: none */
} tl_perfetto_track;

typedef enum tl_perfetto_event_type {
	TL_PERFETTO_SLICE_BEGIN = 1, /* TrackEvent.Type values */
	TL_PERFETTO_SLICE_END = 2,
	TL_PERFETTO_INSTANT = 3,
	TL_PERFETTO_COUNTER = 4,
} tl_perfetto_event_type;

typedef struct tl_perfetto_flow {
	uint64_t id;
	int terminating; /* terminating_flow_ids; else flow_ids */
} tl_perfetto_flow;

typedef struct tl_perfetto_event {
	size_t order;     /* position in the file */
	int64_t ts;       /* the packet's timestamp, ns */
	int type;         /* tl_perfetto_event_type, or another TrackEvent.Type */
	uint64_t track;   /* track_uuid; 0 when absent (the global track) */
	const char *name; /* NULL when absent or not interned */
	const char *cat;  /* the categories joined by ','; NULL when none */
	int counter_is_double;
	int64_t counter_i;
	double counter_d;
	size_t first_arg, nargs;   /* range in tl_perfetto_trace.args */
	size_t first_flow, nflows; /* range in tl_perfetto_trace.flows */
} tl_perfetto_event;

typedef struct tl_perfetto_trace {
	tl_perfetto_event *events; /* file order */
	size_t nevents;
	tl_perfetto_track *tracks; /* one per uuid, in the order first described */
	size_t ntracks;
	/* Debug annotations: key = the annotation's name; values INT, DOUBLE,
	 * BOOL or STRING (a pointer as "0x..."). Others are skipped. */
	tl_json_arg *args;
	size_t nargs;
	tl_perfetto_flow *flows;
	size_t nflows;
	uint64_t packets;
	tl_str_arena strings;

	struct tl_perfetto_state *state; /* internal */
} tl_perfetto_trace;

/*
 * Whether data[0..len) starts like a Perfetto trace: a packet (field 1,
 * length-delimited) whose bytes, as far as len holds them, are well-formed
 * fields.
 */
int tl_perfetto_sniff(const char *data, size_t len);

/*
 * Decodes the trace data[0..len). Returns 0 (the caller frees *out with
 * tl_perfetto_trace_free), -EINVAL with err (may be NULL) naming the byte
 * offset and what is wrong, or -ENOMEM. *out is empty after a failure.
 */
int tl_perfetto_read(const char *data, size_t len, tl_perfetto_trace *out, tl_read_error *err);

/* The track of a uuid, or NULL when no descriptor names it. */
const tl_perfetto_track *tl_perfetto_track_find(const tl_perfetto_trace *trace, uint64_t uuid);

/* Frees everything. Safe on a zeroed struct. */
void tl_perfetto_trace_free(tl_perfetto_trace *trace);

#endif /* TIMELINE_PERFETTO_READER_H */
