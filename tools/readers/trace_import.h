/*
 * The importer: rebuilds from ftrace/systrace text, Chrome JSON or a
 * decoded snapshot what Perfetto's trace processor would show - thread
 * slices, instants, async slices, counters, flows, args, thread and
 * process names - and counts what it rejects, per reason. docs/reading.md
 * lists the rules; formats.md sections 1 to 3 are the contract.
 *
 * Events are processed in Perfetto's order: by timestamp, then (only when
 * the trace has a JSON X event) E first, X by decreasing duration, the rest
 * in file order. JSON metadata (M) applies regardless of its position.
 *
 * Everything lives in plain arrays that reference each other by index;
 * strings live in the import's arena. Not signal-safe (allocates).
 */
#ifndef TIMELINE_TRACE_IMPORT_H
#define TIMELINE_TRACE_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/atrace_parse.h"
#include "tools/readers/ftrace_text.h"
#include "tools/readers/json_reader.h"
#include "tools/readers/perfetto_reader.h"

#define TL_IMPORT_NONE SIZE_MAX
#define TL_IMPORT_NULL INT64_MIN /* thread_ts / thread_dur not known */
#define TL_IMPORT_MAX_DEPTH 512

typedef enum tl_import_stat {
	TL_STAT_SYSTRACE_PARSE_FAILURE,      /* line or marker payload unreadable */
	TL_STAT_SYSTRACE_UNTERMINATED_LINE,  /* last line without '\n': not read */
	TL_STAT_SYSTRACE_MARKER_UNSUPPORTED, /* trace_event_clock_sync and the like */
	TL_STAT_SYSTRACE_KERNEL_EVENT,       /* non-marker ftrace events, not imported */
	TL_STAT_SLICE_MAX_DEPTH_EXCEEDED,
	TL_STAT_SLICE_END_UNMATCHED,     /* E with no open slice that matches */
	TL_STAT_SLICE_SPILL_OVERLAPPING, /* X moved to an overflow track */
	TL_STAT_ASYNC_END_UNMATCHED,
	TL_STAT_JSON_EMPTY_EVENT,
	TL_STAT_JSON_DISPLAY_TIME_UNIT,
	TL_STAT_JSON_MISSING_PHASE,
	TL_STAT_JSON_MISSING_TS,
	TL_STAT_JSON_PHASE_IGNORED,
	TL_STAT_JSON_COMPLETE_MISSING_DUR,
	TL_STAT_JSON_COMPLETE_NEGATIVE_DUR,
	TL_STAT_JSON_INSTANT_MISSING_TID,
	TL_STAT_JSON_ASYNC_MISSING_ID,
	TL_STAT_JSON_COUNTER_INVALID_VALUE,
	TL_STAT_JSON_METADATA_IGNORED,
	TL_STAT_FLOW_INVALID_ID,
	TL_STAT_FLOW_WITHOUT_DIRECTION,
	TL_STAT_FLOW_NO_ENCLOSING_SLICE,
	TL_STAT_FLOW_STEP_WITHOUT_START,
	TL_STAT_FLOW_END_WITHOUT_START,
	TL_STAT_TRACK_EVENT_PARSER_ERRORS, /* Perfetto: a TrackEvent with no track to go on */
	TL_STAT_COUNT
} tl_import_stat;

/* The reason names, as docs/reading.md lists them. */
extern const char *const tl_import_stat_names[TL_STAT_COUNT];

typedef enum tl_import_kind {
	TL_IMPORT_SLICE,   /* duration slice on a thread track */
	TL_IMPORT_INSTANT, /* zero-duration slice (thread, process or global track) */
	TL_IMPORT_ASYNC,   /* slice on an async (non-thread) track */
} tl_import_kind;

typedef enum tl_import_scope {
	TL_IMPORT_SCOPE_THREAD,
	TL_IMPORT_SCOPE_PROCESS,
	TL_IMPORT_SCOPE_GLOBAL,
} tl_import_scope;

typedef enum tl_import_track_kind {
	TL_TRACK_THREAD,   /* a thread's main track */
	TL_TRACK_OVERFLOW, /* partially overlapping X of a thread */
	TL_TRACK_ASYNC,
	TL_TRACK_INSTANT, /* atrace N, JSON process and global instants */
	TL_TRACK_COUNTER,
} tl_import_track_kind;

typedef struct tl_import_track {
	tl_import_track_kind kind;
	tl_import_scope scope;
	const char *name; /* "" for thread tracks */
	uint32_t pid;     /* process scope (and thread tracks) */
	size_t thread;    /* thread and overflow tracks, else TL_IMPORT_NONE */
	int has_cookie;   /* atrace S/F and G/H */
	int64_t cookie;
	/* Internal: the open slices (innermost last) and the next overflow track. */
	size_t *stack;
	size_t depth, stack_cap;
	size_t overflow;
} tl_import_track;

/* (40 bytes: an import holds one per slice of the trace. Its thread
 * timestamps, which only JSON traces have, are kept apart:
 * tl_import_slice_thread_ts.) */
typedef struct tl_import_slice {
	int64_t ts;
	int64_t dur; /* -1: begun, never ended */
	const char *name;
	const char *cat; /* NULL when none */
	uint32_t track;
	uint16_t depth;   /* < TL_IMPORT_MAX_DEPTH */
	uint8_t kind;     /* tl_import_kind */
	uint8_t complete; /* internal: an X or instant whose end was known at begin */
} tl_import_slice;

typedef struct tl_import_thread {
	uint32_t tid;
	uint32_t pid;     /* 0: unknown (systrace) */
	const char *name; /* NULL when unknown */
	int has_sort_index;
	int64_t sort_index;
	size_t track; /* its main track */
} tl_import_thread;

typedef struct tl_import_process {
	uint32_t pid;
	const char *name; /* NULL when unknown */
	int has_sort_index;
	int64_t sort_index;
} tl_import_process;

typedef struct tl_import_counter {
	int64_t ts;
	double value;
	size_t track; /* a TL_TRACK_COUNTER track: name and pid */
} tl_import_counter;

typedef struct tl_import_flow {
	size_t out, in; /* slice indices */
} tl_import_flow;

typedef struct tl_import_arg {
	size_t slice;
	const char *key;     /* "args.<key>" */
	tl_json_value value; /* TL_JSON_INT, DOUBLE or STRING (bools are ints) */
} tl_import_arg;

/*
 * A trace_event_clock_sync marker (tl_atrace_parse_clock_sync): at `ts`,
 * this trace's clock, the clock it names read `value_ns`. Written by
 * thread `tid` of process `pid` (0 when the trace does not say: the line
 * had no tgid and no payload of that thread named one).
 */
typedef struct tl_import_clock_sync {
	tl_clock_sync_kind kind;
	int64_t ts;
	int64_t value_ns; /* parent_ts: the writer's trace clock; realtime_ts: CLOCK_REALTIME */
	uint32_t tid, pid;
	size_t line;   /* 1-based line of the marker */
	size_t thread; /* internal */
} tl_import_clock_sync;

/* How tl_import_read_file read a file (for the tests and the figures). */
typedef enum tl_import_reading {
	TL_READING_WHOLE = 0,  /* not JSON in two passes: whole, streamed text, or no file */
	TL_READING_JSON_RUNS,  /* JSON in two passes: its runs of ordered events merged */
	TL_READING_JSON_INDEX, /* JSON in two passes: an index of its events sorted */
} tl_import_reading;

typedef struct tl_import {
	tl_import_slice *slices;
	size_t nslices;
	tl_import_track *tracks;
	size_t ntracks;
	tl_import_thread *threads;
	size_t nthreads;
	tl_import_process *processes;
	size_t nprocesses;
	tl_import_counter *counters;
	size_t ncounters;
	tl_import_flow *flows;
	size_t nflows;
	tl_import_arg *args;
	size_t nargs;
	/* The slices' thread_ts and thread_dur, two per slice up to the last
	 * slice that has one (TL_IMPORT_NULL when unknown); NULL when none
	 * has: read them with tl_import_slice_thread_ts and _dur. */
	int64_t *thread_times;
	size_t nthread_times; /* slices covered */
	uint64_t stats[TL_STAT_COUNT];
	/*
	 * The first line that could not be read - a text line that does not
	 * tokenize, or a marker whose payload does not parse: 1-based, 0 when
	 * none - and its first bytes. The number of such lines is
	 * stats[TL_STAT_SYSTRACE_PARSE_FAILURE].
	 */
	size_t first_failure_line;
	char first_failure_text[TL_FTRACE_FAILURE_TEXT];
	/* The last line of a text, not read because no '\n' ends it (as
	 * Perfetto does not read it; stats[TL_STAT_SYSTRACE_UNTERMINATED_LINE]):
	 * 1-based, 0 when none or when it is the last of a JSON trace's
	 * systemTraceEvents (counted all the same). */
	size_t unterminated_line;
	tl_trace_clock clock;         /* what the input says its clock is */
	tl_clock_values clock_values; /* the clocks at one instant, when the input gives them */
	tl_import_clock_sync *clock_syncs; /* in time order */
	size_t nclock_syncs;
	tl_str_arena strings;
	tl_import_reading reading;
	size_t json_runs; /* TL_READING_JSON_RUNS: how many runs were merged */
	/* Read with a sink (tl_import_read_file_to): the items it was given,
	 * and the most slices, args, tracks and distinct names (of slices,
	 * categories, tracks, arg keys) the import held at once. */
	uint64_t streamed;
	size_t held_slices, held_args, held_tracks, held_names;
	int sink_failed;             /* the read stopped on the sink's error (nothing else kept) */
	struct tl_import_maps *maps; /* internal lookup tables */
} tl_import;

/* An arg as a sink receives it: seq is its place among the trace's args
 * (its index in a whole import's args). */
typedef struct tl_import_sink_arg {
	uint64_t seq;
	const char *key; /* "args.<key>" */
	tl_json_value value;
} tl_import_sink_arg;

/*
 * What an import read with a sink hands on as it goes, instead of keeping
 * it: each item once, when nothing can change it any more, then given
 * back. The seq of each is the index it has in a whole import, so a sink
 * can put the items back in that order. A callback returning non-zero (a
 * -errno) stops the import, which returns that value.
 *
 * slice: a slice, instant or async slice that has ended, or is still open
 *   at the end of the trace (dur -1), with its thread times (TL_IMPORT_NULL
 *   when unknown) and its args in the order they were added. s->track is
 *   valid during the call only: an async track is given back once empty.
 * counter: a counter sample, as it is read; c->track stays valid.
 * flow: a flow as it is bound, with the seq of its two slices; `out` may
 *   have been handed on already (only its ts, dur, name, cat and kind are
 *   then still meaningful: not its track), `in` may still be open (dur -1).
 *   counter and flow may be NULL: not wanted.
 * restart: forget everything handed on so far; the file is read again
 *   from its start (ftrace text whose markers go back in time). May be NULL
 *   only when the sink keeps nothing.
 * what: what the sink does, for the message of its error (may be NULL).
 *
 * Strings (names, categories, track names, args) are valid during the call
 * only: a name no item uses any more is given back.
 */
typedef struct tl_import_sink {
	void *ctx;
	int (*slice)(void *ctx, const tl_import *imp, const tl_import_slice *s, uint64_t seq,
	             int64_t thread_ts, int64_t thread_dur, const tl_import_sink_arg *args,
	             size_t nargs);
	int (*counter)(void *ctx, const tl_import *imp, const tl_import_counter *c, uint64_t seq);
	int (*flow)(void *ctx, const tl_import *imp, const tl_import_slice *out, uint64_t out_seq,
	            const tl_import_slice *in, uint64_t in_seq, uint64_t seq);
	void (*restart)(void *ctx);
	const char *what;
} tl_import_sink;

/*
 * Imports ftrace text and/or a JSON trace (either may be NULL; a JSON
 * trace's systemTraceEvents are included) into *out, merged by time. The
 * clock (and the clock values) are the JSON trace's when it names one,
 * else the text's; the clock sync markers of every text are kept, as
 * Perfetto does without moving any timestamp (docs/reading.md). Returns 0
 * or -ENOMEM. The inputs must outlive nothing: strings are copied. Free
 * with tl_import_free.
 */
int tl_import_build(const tl_ftrace_text *text, const tl_json_trace *json, tl_import *out);

/* Whether the import holds nothing: no slice, instant, async slice,
 * counter or flow (none kept, none handed to a sink). */
int tl_import_is_empty(const tl_import *imp);

/*
 * Imports a decoded snapshot as Perfetto would read its Chrome JSON export:
 * COMPLETE as X, instants with their scope, async b/e/n with local ids,
 * counters as "<name> value", flows keyed by id alone and bound to the
 * enclosing slice; an event at a time, in the order tl_import_build gives
 * those JSON events (24 bytes per event for the order). Returns 0 or -ENOMEM.
 */
int tl_import_model(const tl_model *model, tl_import *out);

/*
 * A binary snapshot (data[0..len), 8-byte aligned or not) imported as
 * tl_import_model imports its model, without the model: the events are
 * read in place, 36 bytes of each kept for their order (time and place,
 * record and thread) where the model took 64 and the order 24 more, and
 * each decoded from its record just before it is imported. Returns 0,
 * -EINVAL (not a snapshot), -ENODATA (cut before any event) or -ENOMEM;
 * err (may be NULL) gets what tl_model_read_binary would write, a
 * truncated snapshot's note included.
 */
int tl_import_snapshot(const void *data, size_t len, tl_import *out, char *err, size_t errlen);

/*
 * Imports a decoded Perfetto trace the way trace_processor reads its
 * TrackEvents: by timestamp, then file order; descriptors (process and
 * thread names) first. A thread track's begin and end are B/E (an end
 * closes the innermost open slice of its name and category, when it has
 * them), instants are zero-duration slices on their thread, process or the
 * global track, slices on any other track are async slices of a track per
 * uuid (named after the track), counters go on their counter track (per
 * process and name), flow_ids begin a flow or continue it and
 * terminating_flow_ids end it, on the slice the event begins, ends or is.
 * Args are stored as "args.<name>", as for JSON. Returns 0 or -ENOMEM.
 */
int tl_import_perfetto(const tl_perfetto_trace *trace, tl_import *out);

/* Frees everything. Safe on a zeroed struct. */
void tl_import_free(tl_import *imp);

typedef enum tl_trace_format {
	TL_TRACE_FORMAT_UNKNOWN = 0,
	TL_TRACE_FORMAT_BINARY,   /* a timeline binary snapshot */
	TL_TRACE_FORMAT_JSON,     /* Chrome JSON (tl_json_sniff) */
	TL_TRACE_FORMAT_FTRACE,   /* ftrace / systrace text (tl_ftrace_text_sniff) */
	TL_TRACE_FORMAT_PERFETTO, /* Perfetto's protobuf trace (tl_perfetto_sniff) */
} tl_trace_format;

/*
 * What data[0..len) is (its first 64 KiB are enough): a snapshot by its
 * magic first, then JSON, a Perfetto trace whose first packet parses,
 * ftrace text, then a Perfetto trace by Perfetto's own rule (byte 0x0a
 * first) when its first 4 KiB hold a control byte text does not: a damaged
 * file of a known format is that format, for that reader's error. Pure.
 */
tl_trace_format tl_trace_format_sniff(const char *data, size_t len);

/*
 * Reads the file at path, whatever its format, and imports it. Returns 0,
 * -errno when the file cannot be read, -ENOMEM, or -EINVAL with err (may be
 * NULL) saying what is wrong and where (line and column for text formats;
 * an empty file, one of white space only, a snapshot cut before any event
 * are errors too). On success err->message is empty, or says what a
 * snapshot read in part lost (cut short, blocks that do not decode).
 * *format (may be NULL) receives the format found.
 *
 * ftrace text in a regular file is read a chunk at a time and imported as
 * it is read, so memory is the import, not the file, when its markers come
 * in time order (a kernel's trace does). A JSON trace is read twice: once
 * through, noting its runs of events in the importer's order (a thread's,
 * as the exporters write them) and an index of 32 bytes per event, then
 * again with a cursor per run, their events merged (out->reading says
 * TL_READING_JSON_RUNS), or, past 256 runs, event by event in the index's
 * order (TL_READING_JSON_INDEX): memory is the import and what the second
 * pass holds, not the file and its parsed events. A JSON file of 1 MiB or
 * more is mapped for the first pass, its pages given back as they are
 * parsed, and read with pread in the second. A JSON trace with a
 * systemTraceEvents text, ftrace text whose markers go back in time, and
 * every other format are read whole; a binary snapshot's events are
 * imported from the file in memory, as tl_import_model imports its model,
 * without the model (36 bytes an event for their order).
 */
int tl_import_read_file(const char *path, tl_import *out, tl_trace_format *format,
                        tl_read_error *err);

/*
 * tl_import_read_file with a sink: every slice, counter, flow and arg goes
 * to the sink as soon as it is final and is not kept, so memory is what is
 * open, not the trace: the threads, processes and their tracks; the
 * slices not yet ended and their args; the sources of flows not yet ended
 * (a JSON v2 flow's source stays, as another event may bind to it); one
 * copy of each name, category and arg key in use; the async tracks of
 * JSON and Perfetto ids (named after their first slice, kept for the next
 * slice of that id; an atrace async track is given back once empty); and
 * what the reader holds (a file read whole: see tl_import_read_file). The
 * import left in *out holds no item: its threads, processes, stats, clock
 * and counts (streamed, held_*). Returns what tl_import_read_file returns,
 * or the sink's error (out->sink_failed set, err->message saying
 * sink->what and the error). sink NULL: every item is kept, as
 * tl_import_read_file keeps them.
 *
 * A binary snapshot's function records are named from the files symbols
 * allows (recorder/export/symbolize.h; NULL: the defaults, as
 * tl_import_read_file names them): a trace from elsewhere names paths of
 * its writer's choosing.
 */
int tl_import_read_file_to(const char *path, const tl_import_sink *sink,
                           const struct tl_symbol_options *symbols, tl_import *out,
                           tl_trace_format *format, tl_read_error *err);

/*
 * tl_import_read_file_to for bytes already read (a pipe's): data[0..len),
 * malloc'd with a NUL at data[len], is the call's to free (it goes as soon
 * as the import no longer needs it). Read whole, as tl_import_read_file
 * reads a file that is not regular.
 */
int tl_import_read_bytes_to(char *data, size_t len, const tl_import_sink *sink,
                            const struct tl_symbol_options *symbols, tl_import *out,
                            tl_trace_format *format, tl_read_error *err);

/*
 * Builds a trace model from an import, for the exporters (its clock_id is
 * the import's clock, TL_MODEL_CLOCK_UNKNOWN when it has none): ended thread
 * slices become COMPLETE events and open ones a BEGIN (closed at the end of
 * the trace by the exporters); instants keep their scope (a process track's
 * name becomes the category); async slices become b/e pairs, one id per
 * track; counters are double samples named after their track; flows become
 * a flow begin and end on the slices they join; at most TL_MAX_ARGS args
 * per event, without the "args." prefix. Each event and thread carries its
 * pid; model->pid is the first process seen. Returns 0 or -ENOMEM; free the
 * model with tl_model_free. The model's clock values are the import's
 * (0 when it has none); its clock sync markers are not in the model.
 */
int tl_import_to_model(const tl_import *imp, tl_model *out);

/*
 * tl_import_to_model for an import that is no longer needed: the same
 * model, built in less memory, as the import is given back while the
 * model grows (its slices as they become events). *imp is freed, on
 * success and on failure. Returns 0 or -ENOMEM.
 */
int tl_import_move_to_model(tl_import *imp, tl_model *out);

/* The pid and tid shown for a slice (0 when unknown). */
uint32_t tl_import_slice_pid(const tl_import *imp, const tl_import_slice *s);

/* The thread timestamp and thread duration of slice `slice` (an index in
 * imp->slices), TL_IMPORT_NULL when unknown. */
int64_t tl_import_slice_thread_ts(const tl_import *imp, size_t slice);
int64_t tl_import_slice_thread_dur(const tl_import *imp, size_t slice);
uint32_t tl_import_slice_tid(const tl_import *imp, const tl_import_slice *s);

enum {
	TL_PRINT_SLICE = 1u << 0,
	TL_PRINT_INSTANT = 1u << 1,
	TL_PRINT_ASYNC = 1u << 2,
	TL_PRINT_COUNTER = 1u << 3,
	TL_PRINT_FLOW = 1u << 4,
	TL_PRINT_ARG = 1u << 5,
	TL_PRINT_PROCESS = 1u << 6,
	TL_PRINT_THREAD = 1u << 7,
	TL_PRINT_STAT = 1u << 8,
	TL_PRINT_DEFAULT =
	    TL_PRINT_SLICE | TL_PRINT_INSTANT | TL_PRINT_ASYNC | TL_PRINT_COUNTER | TL_PRINT_FLOW,
};

/*
 * Writes the items of the kinds asked, one per line, in the line format
 * of the conformance files ("slice ts=... dur=... name=\"...\" ..."):
 * strings JSON-escaped, absent values "null". Stats: only those not zero.
 */
void tl_import_print(const tl_import *imp, unsigned kinds, FILE *out);

/* One marker parse as "parse result=ok phase=B tgid=42 name=\"foo\" ...". */
void tl_import_print_marker(FILE *out, tl_atrace_result result, const tl_atrace_point *point);

/* s as a JSON string literal (quotes included). */
void tl_import_print_string(FILE *out, const char *s, size_t len);

/* d as the shortest decimal text that reads back as d (%.15g to %.17g). */
void tl_import_print_double(FILE *out, double d);

#endif /* TIMELINE_TRACE_IMPORT_H */
