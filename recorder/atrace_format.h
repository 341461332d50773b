/*
 * The atrace payloads the systrace recorder writes to trace_marker
 * (formats.md §1 and §4.1). Internal.
 *
 * Everything here is async-signal-safe: no allocation, no locale, no stdio,
 * no lock. Nothing is NUL-terminated: lengths are returned.
 */
#ifndef TIMELINE_ATRACE_FORMAT_H
#define TIMELINE_ATRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Largest payload of one write(2): AOSP's 1024-byte buffer minus its NUL. */
#define TL_ATRACE_PAYLOAD_MAX 1023

/*
 * One payload. The fields a phase does not use are ignored:
 *
 *   B  B|pid|name             S  S|pid|name|number     N  N|pid|track|name
 *   E  E|pid                  F  F|pid|name|number     G  G|pid|track|name|number
 *   C  C|pid|name|number      I  I|pid|name            H  H|pid|track|number
 */
struct tl_atrace_payload {
	char phase;
	const char *pid; /* the tgid in decimal (tl_atrace_format_i64) */
	size_t pid_len;
	const char *track; /* N, G, H; not NUL-terminated */
	size_t track_len;
	const char *track_fallback; /* for a track empty once cleaned; NULL: "unnamed" */
	const char *name; /* all but E and H; not NUL-terminated */
	size_t name_len;
	int64_t number; /* C: the value; S, F, G, H: the cookie */
};

/*
 * Formats p into buf, which must hold TL_ATRACE_PAYLOAD_MAX bytes. The name
 * and the track go through tl_atrace_clean. When the payload would pass
 * TL_ATRACE_PAYLOAD_MAX bytes, the name is shortened, then, only if that is
 * not enough, the track (which always leaves the name TL_ATRACE_NAME_MIN
 * bytes); the numbers are never cut. *truncated is set to 1 when something
 * was shortened, and left alone otherwise. Returns the payload's length. An
 * unknown phase gives 0.
 */
size_t tl_atrace_format(char *buf, const struct tl_atrace_payload *p, int *truncated);

/* What a name empty once cleaned is written as (the exporters' word). */
#define TL_ATRACE_UNNAMED "unnamed"
/* The room a name or a track always keeps: the longest fallback. */
#define TL_ATRACE_NAME_MIN 7

/*
 * The one cleaning of a name or a track of the atrace grammar, used by the
 * systrace recorder and by the ftrace exporter, so that the same name gives
 * the same bytes in both (table in docs/systrace.md, "Names"):
 *
 *  - a control byte (0x00-0x1f: tab, newline, CR, NUL...; 0x7f) and '|'
 *    become a space: nothing can shift a field or split a line;
 *  - a byte that does not start a valid UTF-8 sequence becomes U+FFFD;
 *  - trailing spaces are dropped;
 *  - at most cap bytes are written, never a character in part (*cut set to
 *    1 when something did not fit, left alone otherwise);
 *  - an empty result is written as `fallback` (NULL: TL_ATRACE_UNNAMED), so
 *    a field is never empty. cap must be at least TL_ATRACE_NAME_MIN.
 *
 * s may be NULL (len 0) and need not be NUL-terminated. Returns the length
 * written to out. Async-signal-safe.
 */
size_t tl_atrace_clean(char *out, size_t cap, const char *s, size_t len, const char *fallback,
                       int *cut);

/* The longest kernel comm (TASK_COMM_LEN less its NUL). */
#define TL_COMM_MAX 15

/*
 * The kernel comm for a thread or process name: the name cleaned as a
 * marker name (tl_atrace_clean), at most TL_COMM_MAX bytes, never a
 * character in part, NUL-terminated in out. Returns its length, 0 for a
 * name empty once cleaned (the comm is then left alone).
 */
size_t tl_atrace_comm(char out[TL_COMM_MAX + 1], const char *name);

/* Whether the byte c goes out of tl_atrace_clean as it is (printable
 * ASCII but '|'). */
static inline bool tl_atrace_byte_kept(char c)
{
	return c >= 0x20 && c < 0x7f && c != '|';
}

/* Writes v in decimal (at most 20 bytes, '-' included) and returns the length. */
size_t tl_atrace_format_i64(char *out, int64_t v);

/*
 * A counter value for C: v rounded to the nearest integer, halves away from
 * zero, saturated to the int64 range. Returns 0 for NaN (not representable),
 * 1 otherwise.
 */
int tl_atrace_counter_from_double(double v, int64_t *out);

/*
 * The cookie of an async event with id `id`: the id's bits read as an int64.
 * Ids up to INT32_MAX (and the sign extension of negative int32 values) stay
 * in the int32 range AOSP writes; larger ones keep all 64 bits, so distinct
 * ids never share a cookie, and the same id always gets the same one.
 */
static inline int64_t tl_atrace_cookie(uint64_t id)
{
	return (int64_t)id;
}

/*
 * The clock sync markers atrace and Chrome write at the start of a trace,
 * and catapult reads to tie the kernel's clock to the writer's (formats.md
 * §1.1, "other"):
 *
 *   trace_event_clock_sync: realtime_ts=MILLISECONDS
 *   trace_event_clock_sync: parent_ts=SECONDS.MICROSECONDS
 *
 * parent_ts is the writer's trace clock, realtime_ts CLOCK_REALTIME since the
 * epoch; each is read just before its write, so the kernel's own timestamp
 * of the marker pairs the kernel's clock with it. A value is given in ns and
 * truncated to the unit written (as the kernel truncates its text
 * timestamps); a negative one is written as 0. Perfetto reads both payloads
 * as unsupported, not as failures.
 */
enum tl_atrace_clock_sync {
	TL_ATRACE_PARENT_TS,
	TL_ATRACE_REALTIME_TS,
};

/* Room for either payload. */
#define TL_ATRACE_CLOCK_SYNC_MAX 64

/* Formats one clock sync payload into buf (no newline); returns its length. */
size_t tl_atrace_format_clock_sync(char buf[TL_ATRACE_CLOCK_SYNC_MAX],
                                   enum tl_atrace_clock_sync kind, int64_t ns);

#pragma GCC visibility pop

#endif /* TIMELINE_ATRACE_FORMAT_H */
