/*
 * Reading ftrace / systrace text (formats.md section 2) the way Perfetto's
 * trace processor reads it: what `cat tracing/trace`, atrace and trace-cmd
 * print, and the text of HTML systrace files.
 *
 * The reader only tokenizes: each event line becomes a tl_ftrace_line whose
 * views point into the caller's buffer (keep it alive and unchanged while
 * the lines are used). Interpreting marker payloads is tl_atrace_parse's
 * job, building slices trace_import's. Not signal-safe (allocates).
 */
#ifndef TIMELINE_FTRACE_TEXT_H
#define TIMELINE_FTRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/readers/atrace_parse.h"

/* Where a reader stopped, for "FILE:LINE:COLUMN: message" errors. */
typedef struct tl_read_error {
	size_t line;   /* 1-based; 0 when not tied to a position */
	size_t column; /* 1-based byte column; 0 when unknown */
	char message[200];
} tl_read_error;

/* The clock an input says its timestamps are read from. */
typedef enum tl_trace_clock {
	TL_TRACE_CLOCK_UNKNOWN = 0, /* the input does not say */
	TL_TRACE_CLOCK_BOOT,        /* CLOCK_BOOTTIME: the ftrace "boot" clock */
	TL_TRACE_CLOCK_MONO,        /* CLOCK_MONOTONIC: the ftrace "mono" clock */
} tl_trace_clock;

/*
 * The boot, monotonic and real-time clocks read at one instant, as a trace
 * gives them: a snapshot's CLOCK chunk, the JSON exporter's metadata, the
 * ftrace exporter's "# timeline:" line. `known` is 0 unless all three were
 * given and positive (the exporters write 0 for a trace that has none).
 */
typedef struct tl_clock_values {
	int known;
	int64_t boottime_ns, monotonic_ns, realtime_ns;
} tl_clock_values;

typedef enum tl_ftrace_line_kind {
	TL_FTRACE_LINE_MARKER, /* tracing_mark_write, print or 0: text is an atrace payload */
	TL_FTRACE_LINE_OTHER,  /* any other kernel event (sched_switch...): text is its fields */
} tl_ftrace_line_kind;

typedef struct tl_ftrace_line {
	size_t line_no; /* 1-based line in the input */
	int64_t ts_ns;  /* (int64)(strtod(seconds) * 1e9): truncated */
	uint32_t tid;
	uint32_t tgid; /* 0: no tgid column, or "(-----)" */
	uint32_t cpu;
	tl_str_view task;  /* text before "-tid", trimmed ("<...>" when unknown) */
	tl_str_view event; /* the event name */
	tl_str_view text;  /* after "event:", trimmed; a marker's payload */
	tl_str_view line;  /* the whole line, for messages */
	tl_ftrace_line_kind kind;
} tl_ftrace_line;

/*
 * Tokenizes one line (without its '\n') with the semantics of Perfetto's
 * line regex (formats.md 2.1), unanchored:
 *   -(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):
 * One departure: the text of a `print` event loses a leading
 * "tracing_mark_write: ", the symbol trace-cmd prints before the payload
 * (Perfetto keeps it, and the marker fails); the kernel's own text never
 * names the `print` event. Returns 0, or -EINVAL when the line does not
 * match (or its timestamp does not fit in int64 nanoseconds). line_no is
 * left to the caller. Pure.
 */
int tl_ftrace_line_tokenize(const char *line, size_t len, tl_ftrace_line *out);

/*
 * A line of `trace-cmd report` (3.x): "[INSTANCE: ]COMM-PID [CPU] TS:
 * EVENT: TEXT" (the default), or with -l the latency layout "COMM-PID
 * CPUFLAGS TS: EVENT: TEXT" (CPU and the 4 or 5 flags run together, no
 * brackets). TS has six decimals, nine with -t, and none for a clock
 * trace-cmd does not print in seconds (boot, x86-tsc, counter): the raw
 * clock value, often glued to the column before it, taken as nanoseconds.
 * The tgid is 0 (no such column); INSTANCE (a -B buffer's name) is not
 * part of the task. A line tl_ftrace_line_tokenize reads is read as it
 * reads it. Returns 0 or -EINVAL. Pure.
 */
int tl_ftrace_line_tokenize_trace_cmd(const char *line, size_t len, tl_ftrace_line *out);

/*
 * Whether data looks like systrace text to Perfetto: within its first
 * 64 KiB it contains "# tracer" or "TRACE:\n", or it starts with
 * "<!doctype html>", "<html>", "cpus=" or a space. Pure.
 */
int tl_ftrace_text_sniff(const char *data, size_t len);

enum {
	/* A line that does not tokenize is an error (JSON systemTraceEvents),
	 * instead of a counted failure. */
	TL_FTRACE_STRICT = 1u << 0,
	/* Do not look for "TRACE:\n", a "cpus=" line or HTML: lines only. */
	TL_FTRACE_LINES_ONLY = 1u << 1,
};

/* How much of a line that failed is kept for messages (NUL included). */
#define TL_FTRACE_FAILURE_TEXT 160

typedef struct tl_ftrace_text {
	tl_ftrace_line *lines; /* event lines, in file order */
	size_t nlines;
	uint64_t parse_failures;   /* lines that did not tokenize (systrace_parse_failure) */
	size_t first_failure_line; /* line number of the first of them, 0 when none */
	char first_failure_text[TL_FTRACE_FAILURE_TEXT]; /* its first bytes */
	uint64_t unterminated;     /* 1 when the last line had no '\n': not read */
	size_t unterminated_line;  /* its line number, 0 when none */
	int html;                  /* the text came from an HTML systrace file */
	int trace_cmd;             /* `trace-cmd report` output: its first line is "cpus=N" */
	tl_trace_clock clock;      /* from a "# timeline: ... clock=NAME" comment line */
	tl_clock_values clock_values; /* from a "# timeline:" line's boottime_ns= ... */
} tl_ftrace_text;

/*
 * Reads data[0..len) (file rules of formats.md 2.2: text up to "TRACE:\n"
 * dropped, one leading "cpus=N" line dropped, '#' and empty lines skipped,
 * an unterminated last line not read, HTML trace-data blocks). After a
 * "cpus=N" first line the text is `trace-cmd report` output: a line
 * tl_ftrace_line_tokenize does not read goes to
 * tl_ftrace_line_tokenize_trace_cmd, and "CPU N is empty" lines are
 * skipped. The clock is that of the first "# timeline:" comment line
 * naming one (the exporters and `timeline record` write it), the clock
 * values those of the first such line giving boottime_ns=, monotonic_ns=
 * and realtime_ns= (the ftrace exporter writes them). On success
 * returns 0 and the caller frees *out with tl_ftrace_text_free. Returns
 * -ENOMEM, or -EINVAL with err filled (may be NULL) when TL_FTRACE_STRICT
 * is set and a line does not tokenize.
 */
int tl_ftrace_text_read(const char *data, size_t len, unsigned flags, tl_ftrace_text *out,
                        tl_read_error *err);

/* Frees what tl_ftrace_text_read allocated. Safe on a zeroed struct. */
void tl_ftrace_text_free(tl_ftrace_text *text);

/*
 * The same rules one line at a time, for input read in pieces: memory is
 * then what the caller keeps of each line, not the file.
 *
 * tl_ftrace_reader_start looks for "TRACE:\n" in the first
 * TL_FTRACE_HEAD_BYTES of the input (head holds them, or the whole input
 * when it is shorter) and returns the offset in head where the lines
 * begin. Then each line goes to tl_ftrace_reader_line, without its '\n',
 * in order; then what follows the last '\n' (maybe nothing) to
 * tl_ftrace_reader_finish. Pure: no allocation.
 */
#define TL_FTRACE_HEAD_BYTES (64 * 1024)

typedef struct tl_ftrace_reader {
	unsigned flags;
	size_t line_no;          /* line number of the next line */
	uint64_t parse_failures; /* as in tl_ftrace_text */
	size_t first_failure_line;
	char first_failure_text[TL_FTRACE_FAILURE_TEXT];
	uint64_t unterminated;
	size_t unterminated_line;
	int html;
	int trace_cmd;
	tl_trace_clock clock;
	tl_clock_values clock_values;
	int finished;   /* the end of an HTML file's trace data: no more lines are read */
	int state;      /* internal: where in an HTML file */
	int first_line; /* internal: the next line is the first after the header */
} tl_ftrace_reader;

size_t tl_ftrace_reader_start(tl_ftrace_reader *reader, unsigned flags, const char *head,
                              size_t len);

/*
 * Returns 1 with *out filled (views into line) for an event line; 0 for a
 * line that is skipped, or does not tokenize (counted); -EINVAL with err
 * filled (may be NULL) when it does not tokenize and TL_FTRACE_STRICT is set.
 */
int tl_ftrace_reader_line(tl_ftrace_reader *reader, const char *line, size_t len,
                          tl_ftrace_line *out, tl_read_error *err);

/* The bytes after the last '\n': an unterminated line is not read (as
 * Perfetto does not), only counted, with its line number, for a warning. */
void tl_ftrace_reader_finish(tl_ftrace_reader *reader, const char *rest, size_t len);

#endif /* TIMELINE_FTRACE_TEXT_H */
