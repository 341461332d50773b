/*
 * One trace_marker payload (an atrace "tracing_mark_write" event), parsed
 * the way Perfetto's trace processor parses it: formats.md sections 1.1 and
 * 1.2. Pure: no allocation, no global state; every view points into the
 * payload (or into a static string), so the payload must outlive the
 * result. Safe on any bytes. Any thread may call it.
 */
#ifndef TIMELINE_ATRACE_PARSE_H
#define TIMELINE_ATRACE_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A byte range that is not NUL-terminated. */
typedef struct tl_str_view {
	const char *ptr;
	size_t len;
} tl_str_view;

typedef enum tl_atrace_result {
	TL_ATRACE_OK = 0,
	TL_ATRACE_FAIL,        /* malformed: Perfetto counts systrace_parse_failure */
	TL_ATRACE_UNSUPPORTED, /* well-formed but not a slice event (clock sync) */
} tl_atrace_result;

/* The name a B payload with an empty name gets. */
#define TL_ATRACE_EMPTY_SLICE_NAME "[empty slice name]"

typedef struct tl_atrace_point {
	char phase;        /* B E C S F I N G H */
	uint32_t tgid;     /* 0 when absent (only E may omit it) */
	tl_str_view name;  /* B C S F I N G; B: the whole rest, '|' included */
	tl_str_view track; /* N G H */
	int64_t value;     /* C */
	int64_t cookie;    /* S F G H */
} tl_atrace_point;

/*
 * Parses payload[0..len). Only trailing '\n' and '\0' bytes are stripped
 * first. Fills *out (zeroed on failure) and returns the result.
 */
tl_atrace_result tl_atrace_parse(const char *payload, size_t len, tl_atrace_point *out);

/*
 * strtoul / strtoll of a whole field, as Perfetto's CStringToUInt32 and
 * CStringToInt64 use them: leading whitespace and a sign are accepted, the
 * digits must run to the end of the field, an empty field fails; a value
 * out of range saturates (strtoul's then wraps to 32 bits). Return 1 and
 * set *out, or 0.
 */
int tl_atrace_parse_u32(tl_str_view field, uint32_t *out);
int tl_atrace_parse_i64(tl_str_view field, int64_t *out);

/* What a trace_event_clock_sync payload says (formats.md §1.1, "other"). */
typedef enum tl_clock_sync_kind {
	TL_CLOCK_SYNC_NONE = 0,    /* not one of the two forms below */
	TL_CLOCK_SYNC_PARENT_TS,   /* the writer's trace clock */
	TL_CLOCK_SYNC_REALTIME_TS, /* CLOCK_REALTIME, to the millisecond */
} tl_clock_sync_kind;

/*
 * Reads the clock sync payloads atrace, Chrome and the systrace recorder
 * write: "trace_event_clock_sync: parent_ts=SECONDS[.FRACTION]" (catapult's
 * parent_ts=(\d+\.?\d*): seconds, any number of decimals) and
 * "trace_event_clock_sync: realtime_ts=MILLISECONDS". Trailing '\n' and
 * '\0' are stripped first, blanks after the colon are skipped, and what
 * follows the number is ignored, as catapult ignores it. *ns gets the value
 * in nanoseconds (decimals past the ninth dropped). Returns the kind, or
 * TL_CLOCK_SYNC_NONE (*ns untouched) for any other payload, a number that
 * does not fit in int64 nanoseconds included. Pure.
 */
tl_clock_sync_kind tl_atrace_parse_clock_sync(const char *payload, size_t len, int64_t *ns);

#endif /* TIMELINE_ATRACE_PARSE_H */
