/*
 * A tolerant Chrome trace-event JSON reader with Perfetto's rules
 * (formats.md section 3): the object form {"traceEvents":[...]} (plus a
 * "systemTraceEvents" string of ftrace text) or a bare array, also a bare
 * array that was never closed; trailing commas; empty {} elements skipped.
 * A surrogate escape (\uD800-\uDFFF) or a raw control character in a string
 * (other than tab, line feed and carriage return, which Perfetto's own tests
 * accept) is a hard error with its line and column, and so is a number out
 * of range: beyond a double anywhere, or beyond the field it gives (ts,
 * dur, tts, tdur past 2^63 nanoseconds; a pid or tid that is not an integer
 * in [0, 2^32); a metadata clock value that is not an integer), and an
 * event larger than TL_JSON_EVENT_MAX.
 *
 * The reader does not interpret events beyond their fields: each element of
 * traceEvents becomes one tl_json_event with times already in nanoseconds.
 * Turning them into slices is trace_import's job. Not signal-safe.
 */
#ifndef TIMELINE_JSON_READER_H
#define TIMELINE_JSON_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tools/readers/ftrace_text.h"

/*
 * The most bytes one event object may take, and a string outside one
 * (systemTraceEvents excepted: the text of a whole trace, read whole):
 * past it the read stops with an error at the event's '{' (the string's
 * '"'), having held no more than that. A value no field reads (an unknown
 * key's, outside the events) is passed over in no memory, whatever its size.
 */
#define TL_JSON_EVENT_MAX ((size_t)64 << 20)

/* Strings copied once and freed together. */
typedef struct tl_str_arena {
	struct tl_str_chunk *chunks;
	struct tl_str_recent *recent; /* internal: short strings seen lately */
} tl_str_arena;

/* A NUL-terminated copy of s[0..len) owned by the arena; NULL on ENOMEM.
 * A short string copied lately is given again (a trace repeats its names,
 * categories and keys): never write to a copy. */
const char *tl_str_arena_copy(tl_str_arena *arena, const char *s, size_t len);
/* Frees every copy. Safe on a zeroed arena. */
void tl_str_arena_free(tl_str_arena *arena);
/* Forgets every copy but keeps the arena's first block of memory for the
 * next ones: for a reader that copies the strings of an event at a time
 * and moves on, without giving memory back and taking it again. */
void tl_str_arena_reset(tl_str_arena *arena);

typedef enum tl_json_type {
	TL_JSON_NONE = 0, /* absent */
	TL_JSON_NULL,
	TL_JSON_BOOL,   /* i: 0 or 1 */
	TL_JSON_INT,    /* i */
	TL_JSON_DOUBLE, /* d */
	TL_JSON_STRING, /* s */
	TL_JSON_OBJECT, /* args only: a container, its members follow flattened */
	TL_JSON_ARRAY,
} tl_json_type;

/* One value; the field its type says (16 bytes: a trace holds several per
 * event). */
typedef struct tl_json_value {
	tl_json_type type;
	union {
		int64_t i;     /* BOOL, INT */
		double d;      /* DOUBLE */
		const char *s; /* STRING: arena string */
	};
} tl_json_value;

/*
 * One member of an event's "args", flattened: nested object keys are
 * joined with '.', array elements get "[i]". A top-level object or array
 * value is listed once as TL_JSON_OBJECT / TL_JSON_ARRAY before its
 * members, so that a counter can reject it.
 */
typedef struct tl_json_arg {
	const char *key;
	int top_level;
	tl_json_value value;
} tl_json_arg;

typedef enum tl_json_id_scope {
	TL_JSON_ID_NONE = 0,
	TL_JSON_ID_PLAIN,  /* "id" */
	TL_JSON_ID_LOCAL,  /* "id2": {"local": ...} */
	TL_JSON_ID_GLOBAL, /* "id2": {"global": ...} */
} tl_json_id_scope;

enum {
	TL_JSON_HAS_TS = 1u << 0, /* each: present and valid */
	TL_JSON_HAS_DUR = 1u << 1,
	TL_JSON_HAS_TTS = 1u << 2,
	TL_JSON_HAS_TDUR = 1u << 3,
	TL_JSON_HAS_PID = 1u << 4, /* the key is present (any value) */
	TL_JSON_HAS_TID = 1u << 5,
	TL_JSON_BAD_TS = 1u << 6, /* "ts" present but not a number or numeric string */
};

typedef struct tl_json_event {
	/* (in an order that leaves no padding: a trace holds one per event) */
	size_t order;               /* index in file order */
	size_t line;                /* line of the event's '{' (1-based; 0 when synthesized) */
	const char *name;           /* NULL when absent or not a string */
	const char *cat;            /* NULL when absent, empty or not a string */
	int64_t ts, dur, tts, tdur; /* nanoseconds (CoerceToTs) */
	const char *pid_name;       /* a string pid or tid, else NULL */
	const char *tid_name;
	tl_json_value id; /* INT or STRING; DOUBLE when a float was given */
	tl_json_value bind_id;
	size_t first_arg; /* range in tl_json_trace.args */
	uint32_t nargs;
	unsigned has;      /* TL_JSON_HAS_* */
	uint32_t pid, tid; /* integers in [0, 2^32), else 0 */
	uint8_t id_scope;  /* tl_json_id_scope */
	uint8_t bp_enclosing; /* "bp": "e" */
	uint8_t flow_in, flow_out;
	char ph;    /* first character of "ph"; 0 when missing */
	char scope; /* first character of "s"; 0 when absent */
} tl_json_event;

typedef struct tl_json_trace {
	tl_json_event *events; /* file order */
	size_t nevents;
	tl_json_arg *args;
	size_t nargs;
	int has_system_text;        /* "systemTraceEvents" was present */
	tl_ftrace_text system;      /* its lines; views into the arena */
	int bare_array;             /* the file was a bare array */
	int truncated;              /* a bare array that ended early: complete events kept */
	uint64_t display_time_unit; /* 1 when "displayTimeUnit" was set (ignored) */
	tl_trace_clock clock;       /* "metadata": {"clock": "boot" or "mono"} (the exporter's) */
	tl_clock_values clock_values; /* "metadata": boottime_ns, monotonic_ns, realtime_ns */
	uint64_t empty_events;      /* {} elements skipped */
	tl_str_arena strings;

	size_t events_cap; /* internal */
	size_t args_cap;
} tl_json_trace;

/* Whether data starts (after whitespace) with {" or [{" as Perfetto asks. */
int tl_json_sniff(const char *data, size_t len);

/*
 * Reads the JSON trace data[0..len). On success returns 0 and the caller
 * frees *out with tl_json_trace_free. On a malformed file returns -EINVAL
 * with err (may be NULL) holding the line, column and reason; -ENOMEM when
 * out of memory. *out is empty after a failure.
 */
int tl_json_read(const char *data, size_t len, tl_json_trace *out, tl_read_error *err);

/*
 * tl_json_read for data that is a read-only private mapping of a file
 * (mmap with PROT_READ and MAP_PRIVATE, so page-aligned): as the parser
 * moves on, the pages behind it are given back (madvise MADV_DONTNEED),
 * so that the file's bytes are not held next to the events read from
 * them. The mapping stays valid: a page touched again is read again from
 * the file. Never pass it memory of another kind (MADV_DONTNEED zeroes
 * anonymous pages).
 */
int tl_json_read_mapped(const char *data, size_t len, tl_json_trace *out, tl_read_error *err);

/*
 * What tl_json_scan hands on: one event of the trace, read whole from
 * data[offset..offset + len) (its object, braces included), with its args
 * in trace->args. What it points to (strings, args) is gone once the hook
 * returns: copy what is kept. Returns 0 to go on, or a negative errno that
 * stops the scan, which then returns it.
 */
typedef int (*tl_json_event_fn)(void *ctx, const tl_json_trace *trace, const tl_json_event *event,
                                size_t offset, size_t len);

/*
 * tl_json_read that keeps no event: each is handed to on_event as soon as
 * it is read (in file order, its order counting every event before it),
 * then forgotten, so that memory is one event, not the trace. *out holds
 * the rest of the trace afterwards (clock, metadata, empty events, the
 * systemTraceEvents text, truncated), with no events or args; free it with
 * tl_json_trace_free. mapped: data is a file mapping to give back as it is
 * read (tl_json_read_mapped). Errors are tl_json_read's, with their lines,
 * or the hook's.
 */
int tl_json_scan(const char *data, size_t len, int mapped, tl_json_event_fn on_event, void *ctx,
                 tl_json_trace *out, tl_read_error *err);

/*
 * Reads the one event object data[0..len) (as tl_json_scan gave its place)
 * and appends it to out, its order being out's event count before the
 * call. 0, -ENOMEM, or -EINVAL when the bytes are not one non-empty event
 * (out unchanged). A second reading of what a scan read whole.
 */
int tl_json_read_event(const char *data, size_t len, tl_json_trace *out);

/*
 * Reads the next event of a run of events that follow one another in an
 * array, as a scan found them: data[0..len) starts at the event, or at the
 * ',' before it (white space allowed before either). Returns 0 with *used
 * the bytes read through its '}' and *appended 1 when the event was
 * appended to out (0 for an empty {}), its order being out's event count
 * before the call; -EAGAIN when data ends first (call again with more of
 * the same bytes); -EINVAL when they are not an event; -ENOMEM.
 */
int tl_json_read_next_event(const char *data, size_t len, size_t *used, int *appended,
                            tl_json_trace *out);

/* Appends a zeroed event (order set, first_arg = current nargs) to build a
 * trace by hand; NULL on ENOMEM. Earlier event pointers may move. */
tl_json_event *tl_json_trace_add_event(tl_json_trace *trace);

/* Appends a zeroed arg; NULL on ENOMEM. The caller updates its event's
 * nargs. Earlier arg pointers may move. */
tl_json_arg *tl_json_trace_add_arg(tl_json_trace *trace);

/* Frees everything the trace holds. Safe on a zeroed struct. */
void tl_json_trace_free(tl_json_trace *trace);

/*
 * Perfetto's CoerceToTs: microseconds as an integer, a float or a numeric
 * string to nanoseconds (integral: v * 1000, else llround(v * 1000)).
 * Returns 1 and sets *ns, or 0 (not numeric, trailing junk, out of range).
 */
int tl_json_coerce_ts(const tl_json_value *v, int64_t *ns);

/* strtod of a whole string (no trailing bytes, not empty). 1 or 0. */
int tl_json_parse_double(const char *s, double *out);

#endif /* TIMELINE_JSON_READER_H */
