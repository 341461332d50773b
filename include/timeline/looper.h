/*
 * The looper tracer: dispatch slices, a watchdog for lag and ANR, slow
 * dispatch call trees and a message history for an event loop.
 *
 * A loop (tl_looper) is any "wait for work, run it" cycle: a libuv or GLib
 * main loop, an Android Looper seen through its printer, a game loop. The
 * thread that runs the loop brackets each unit of work with
 * tl_looper_dispatch_begin/_end (and, if it wants idle time visible,
 * tl_looper_idle_begin/_end). The tracer uses the public timeline API and
 * the library's internal tracer interface only (emitters that hand back the
 * timestamp they recorded, thread marks to read back what a dispatch
 * recorded, and the conversion of timestamps to nanoseconds), nothing else
 * of the core: each dispatch is a slice in the loop's category, so it shows
 * up in every recorder (B|pid|name lines under systrace, records in the
 * ring).
 *
 * One watchdog thread serves every loop. A dispatch only stores atomics
 * (a sequence number, a start time, the name): no lock, no syscall besides
 * the clock read. The watchdog sleeps until the earliest deadline and
 * reports once per stalled dispatch: a lag report past the lag threshold,
 * an ANR report past the ANR timeout (with a snapshot of the recorder on
 * disk). A dispatch that ends past the slow-dispatch threshold is reported
 * by the loop's own thread with the call tree of the events it recorded.
 *
 * Times: every name ending in _ns is nanoseconds of the trace clock
 * (tl_now_ns), every name ending in _ms is milliseconds.
 * Errors: functions that can fail return 0 or a negative errno value.
 */
#ifndef TIMELINE_LOOPER_H
#define TIMELINE_LOOPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline_export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_looper tl_looper;

/* ---------------------------------------------------------------------------
 * Reports
 * ------------------------------------------------------------------------- */

typedef enum tl_looper_report_kind {
	TL_LOOPER_REPORT_LAG = 1, /* a dispatch outlived the lag threshold (watchdog) */
	TL_LOOPER_REPORT_ANR,     /* a dispatch outlived the ANR timeout (watchdog) */
	TL_LOOPER_REPORT_SLOW,    /* a dispatch ended past the slow threshold (loop thread) */
} tl_looper_report_kind;

/* One past dispatch. */
typedef struct tl_looper_history_entry {
	const char *name; /* owned by the report */
	int64_t begin_ns;
	int64_t duration_ns;
} tl_looper_history_entry;

/*
 * What a report callback receives. Everything it points to belongs to the
 * report and is valid during the callback only. New fields are appended.
 */
typedef struct tl_looper_report {
	size_t struct_size;
	tl_looper_report_kind kind;
	/* Lag/ANR: the machine was suspended, or the watchdog woke late, by
	 * more than doubtful_ms while the dispatch ran: the stall may not be
	 * the loop's. A doubtful ANR writes no dump. */
	bool doubtful;
	const char *loop;      /* the loop's name */
	const char *message;   /* the dispatch's name */
	uint64_t dispatch_seq; /* the loop's dispatch number (1, 2, ...) */
	uint32_t tid;          /* the loop's thread */
	/* Lag/ANR: how long the dispatch had run when the watchdog looked;
	 * slow: its whole cost. */
	int64_t elapsed_ns;
	/* Lag/ANR: the thread's CPU time since the watchdog first saw the
	 * dispatch (from /proc/self/task/<tid>/stat, clock-tick resolution);
	 * slow: the dispatch's CPU time when measure_cpu_time is set. -1 when
	 * unknown. */
	int64_t thread_cpu_ns;
	char thread_state;        /* lag/ANR: R, S, D, ... from stat; '?' unknown; slow: 0 */
	int64_t watchdog_late_ns; /* lag/ANR: how late the watchdog woke */
	int64_t suspended_ns;     /* lag/ANR: time the machine spent suspended */
	const tl_looper_history_entry *history; /* oldest first */
	size_t history_count;
	/* ANR only: the files written (NULL when none), and the error of the
	 * dump (0, or -errno; -ENODEV when no recorder buffers events). */
	const char *dump_path;
	const char *report_path;
	int dump_error;
	/* Slow only: the call tree of the events the thread recorded during
	 * the dispatch, trimmed; mark_valid is false when the recorder
	 * overwrote the start of the dispatch (the tree is then partial). */
	bool mark_valid;
	size_t events_copied;
	const char *tree_text; /* one node per line, two spaces per depth */
	const char
	    *tree_json; /* [{"name":..,"total_ns":..,"self_ns":..,"count":..,"children":[..]}] */
	const char *stack_key; /* the deepest node holding >= 30 % of the cost */
	/* The whole report as one JSON object. */
	const char *json;
} tl_looper_report;

/*
 * Called on the watchdog thread (lag, ANR) or on the loop's thread (slow,
 * from inside tl_looper_dispatch_end). Must not create or destroy loops.
 */
typedef void (*tl_looper_report_fn)(const tl_looper_report *report, void *user);

/* ---------------------------------------------------------------------------
 * Options and lifetime
 * ------------------------------------------------------------------------- */

typedef enum tl_looper_dump_format {
	TL_LOOPER_DUMP_BINARY = 0, /* <dir>/anr-<pid>-<seq>.tlsnap, signal-safe writer */
	TL_LOOPER_DUMP_JSON,       /* ....json (Chrome JSON) */
	TL_LOOPER_DUMP_FTRACE,     /* ....txt (ftrace text) */
} tl_looper_dump_format;

/*
 * Initialise with tl_looper_options_init(), which fills in the defaults,
 * then change what you need. Every threshold takes 0 for "off".
 * New fields are appended.
 */
typedef struct tl_looper_options {
	size_t struct_size;
	const char *name;         /* copied; default "looper" */
	const char *category;     /* of the dispatch slices; default "looper" */
	int64_t anr_timeout_ms;   /* default 5000 */
	int64_t lag_threshold_ms; /* default 2000 */
	int64_t slow_dispatch_ms; /* default 700 */
	/* Lag/ANR reports are doubtful past this much suspend or watchdog
	 * lateness; default 1000. */
	int64_t doubtful_ms;
	size_t history_size; /* dispatches kept; default 200, 0 = none */
	/* Directory for ANR dumps and report files (copied); NULL (default):
	 * no files, the report is still delivered. */
	const char *dump_directory;
	tl_looper_dump_format dump_format;
	/* Read the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) at every
	 * dispatch begin and end, for observers and slow reports. Costs two
	 * clock_gettime calls per dispatch; default off (observers get -1). */
	bool measure_cpu_time;
	/* Slow-dispatch tree trimming: nodes under this are dropped (default
	 * 5), at most this many nodes are kept (default 30). */
	int64_t tree_min_node_ms;
	size_t tree_max_nodes;
	tl_looper_report_fn on_report; /* NULL: reports go to the trace only */
	void *user;
} tl_looper_options;

/* Fills *opts with the defaults (struct_size included). */
TL_API void tl_looper_options_init(tl_looper_options *opts);

/*
 * Creates a loop and registers it with the watchdog (started on the first
 * loop). opts may be NULL for the defaults. Returns NULL and sets errno on
 * failure: EINVAL for a bad option (struct_size too small, a negative
 * threshold or one of INT64_MAX / 4 ns or more, history_size above 2^20,
 * an unknown dump_format, a dump_directory of 4032 bytes or more), ENOMEM,
 * or pthread_create's error (EAGAIN) when the watchdog thread cannot start.
 * Any thread; takes the watchdog's lock; not async-signal-safe. The loop
 * belongs to whichever thread dispatches on it.
 */
TL_API tl_looper *tl_looper_create(const tl_looper_options *opts);

/*
 * Unregisters and frees a loop; the watchdog stops when the last loop goes.
 * Not during a dispatch callback of the same loop, nor from a report
 * callback. NULL is ignored.
 */
TL_API void tl_looper_destroy(tl_looper *looper);

/* The loop's name (owned by the loop). */
TL_API const char *tl_looper_name(const tl_looper *looper);

/* ---------------------------------------------------------------------------
 * Dispatches (the loop's thread only; never blocks; allocates only to
 * build a slow dispatch's report, in tl_looper_dispatch_end)
 * ------------------------------------------------------------------------- */

enum {
	/* copy `what` (up to 255 bytes): for names that do not outlive the
	 * dispatch; otherwise it is kept by pointer, like an event name */
	TL_LOOPER_COPY_NAME = 1u << 0,
	/* this dispatch draws a frame: observers get is_frame = true */
	TL_LOOPER_FRAME = 1u << 1,
};

/*
 * Begins a dispatch named `what` (kept by pointer: a literal, or a string
 * that outlives every snapshot and report). A begin inside a dispatch
 * nests: only the outermost dispatch is watched and kept in the history.
 * A begin while idle ends the idle slice first.
 */
TL_API void tl_looper_dispatch_begin(tl_looper *looper, const char *what);
/* The same with TL_LOOPER_* flags. */
TL_API void tl_looper_dispatch_begin_flags(tl_looper *looper, const char *what, unsigned flags);
/* Flags the current dispatch as a frame (e.g. from a vsync callback that
 * runs inside it). Ignored outside a dispatch. */
TL_API void tl_looper_mark_frame(tl_looper *looper);
/* Ends the innermost dispatch. Without one it is counted and ignored. */
TL_API void tl_looper_dispatch_end(tl_looper *looper);

/* Idle time: a slice named "idle", never watched, never counted as work. */
TL_API void tl_looper_idle_begin(tl_looper *looper);
TL_API void tl_looper_idle_end(tl_looper *looper);

/* ---------------------------------------------------------------------------
 * Android Looper printer lines
 * ------------------------------------------------------------------------- */

typedef enum tl_looper_line_kind {
	TL_LOOPER_LINE_BEGIN = 1, /* ">>>>> Dispatching to <handler> <callback>: <what>" */
	TL_LOOPER_LINE_END,       /* "<<<<< Finished to <handler> <callback>" */
} tl_looper_line_kind;

/* A parsed line: pieces point into the input, not terminated. */
typedef struct tl_looper_line {
	tl_looper_line_kind kind;
	const char *handler; /* "Handler (class) {hash}" */
	size_t handler_len;
	const char *callback; /* the callback or "null"; may be empty */
	size_t callback_len;
	const char *what; /* begin: the message's what; may be empty */
	size_t what_len;
} tl_looper_line;

/*
 * Parses one printer line of len bytes (no terminator needed). Returns 0,
 * or -EINVAL when it is not a printer line. Pure function, any thread.
 */
TL_API int tl_looper_parse_line(const char *line, size_t len, tl_looper_line *out);

/*
 * Feeds a printer line: a ">>>>>" line begins a dispatch named
 * "<handler> <callback>: <what>" (copied), a "<<<<<" line ends it.
 * Returns 0, or -EINVAL for a malformed line (counted, nothing else
 * happens). The loop's thread only.
 */
TL_API int tl_looper_println(tl_looper *looper, const char *line);

/* ---------------------------------------------------------------------------
 * Observers
 * ------------------------------------------------------------------------- */

/*
 * Called on the loop's thread around every outermost dispatch. Times are
 * trace-clock nanoseconds; CPU times are the thread's CPU time, or -1 when
 * measure_cpu_time is off. Either function may be NULL.
 */
typedef struct tl_looper_observer {
	void (*dispatch_begin)(tl_looper *looper, int64_t begin_ns, void *user);
	void (*dispatch_end)(tl_looper *looper, int64_t begin_ns, int64_t end_ns,
	                     int64_t cpu_begin_ns, int64_t cpu_end_ns, bool is_frame, void *user);
	void *user;
} tl_looper_observer;

#define TL_LOOPER_MAX_OBSERVERS 8

/*
 * Adds (copies) an observer. The loop's thread, outside its dispatches, or
 * before the loop runs. Returns 0, -EINVAL, -EEXIST (same functions and
 * user already added), -ENOSPC (TL_LOOPER_MAX_OBSERVERS).
 */
TL_API int tl_looper_add_observer(tl_looper *looper, const tl_looper_observer *observer);
/* Removes the observer with the same functions and user: 0 or -ENOENT. Same
 * threads as adding. */
TL_API int tl_looper_remove_observer(tl_looper *looper, const tl_looper_observer *observer);

/* ---------------------------------------------------------------------------
 * Stats
 * ------------------------------------------------------------------------- */

typedef struct tl_looper_stats {
	size_t struct_size;
	uint64_t dispatches;      /* outermost dispatches ended */
	uint64_t frames;          /* of which flagged as frames */
	uint64_t malformed_lines; /* tl_looper_println input rejected */
	uint64_t unbalanced;      /* ends without a begin, idle misuse */
	uint64_t lag_reports;
	uint64_t anr_reports;
	uint64_t slow_reports;
	uint64_t doubtful_reports; /* lag/ANR reports marked doubtful */
} tl_looper_stats;

/* Fills *out (set out->struct_size first). Any thread. Returns 0, -EINVAL. */
TL_API int tl_looper_stats_get(const tl_looper *looper, tl_looper_stats *out);

/* ---------------------------------------------------------------------------
 * Dump on a signal
 * ------------------------------------------------------------------------- */

/*
 * Sets the directory the dump signal handler writes into (copied, at most
 * 200 bytes; default "."). Takes effect for the next signal. Not from a
 * signal handler. Returns 0 or -EINVAL (NULL, empty or too long).
 */
TL_API int tl_set_dump_directory(const char *dir);

/*
 * Installs a handler for signo that writes a binary snapshot to
 * <dir>/dump-<pid>-<n>.tlsnap, the way Android dumps traces on SIGQUIT.
 * The handler runs on its own alternate stack (SA_ONSTACK; installed for
 * the calling thread), uses only async-signal-safe calls (the file is
 * written whole or not at all by tl_snapshot_binary: open, write, fsync,
 * rename) and then chains to the previous handler when that was a function
 * (SIG_DFL and SIG_IGN are not re-raised). Never installed unless asked;
 * one signal at a time.
 * Returns 0, -EINVAL (bad signal), -EBUSY (already installed), -ENOMEM,
 * -errno from sigaction/sigaltstack.
 */
TL_API int tl_install_dump_signal(int signo);
/* Restores the previous handler. Returns 0 or -ENOENT when none installed. */
TL_API int tl_uninstall_dump_signal(void);
/* The dump handler's counters since the process started (never reset). */
typedef struct tl_dump_signal_stats {
	size_t struct_size; /* set to sizeof before the call */
	uint64_t dumps;     /* dumps the handler wrote */
	uint64_t failures;  /* signals whose dump failed (no file left) */
} tl_dump_signal_stats;
/* Fills *out (set out->struct_size first). Returns 0, or -EINVAL for NULL
 * or a struct_size too small. Any thread; async-signal-safe. */
TL_API int tl_dump_signal_stats_get(tl_dump_signal_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TIMELINE_LOOPER_H */
