/*
 * timeline: an ftrace/systrace-compatible trace recorder.
 *
 * This header is the stable C API: lifetime, categories, the event emitters
 * the macros in <timeline/trace_event.h> call, thread names, stats and
 * snapshots. Everything here is C11 and compiles as C++ too.
 *
 * Concurrency contract
 * --------------------
 * "yes" means the two may run at the same time, from any threads.
 *
 * | operation            | writer (same thread) | writer (other thread) | snapshot     | signal snapshot | shutdown |
 * |----------------------|----------------------|-----------------------|--------------|-----------------|----------|
 * | emit (tl_emit_*)     | yes: a signal        | yes: per-thread       | yes          | yes             | yes: the |
 * |                      | handler's emit takes | blocks, no lock       |              |                 | event is |
 * |                      | a nesting level (3); |                       |              |                 | ignored  |
 * |                      | a 4th is dropped     |                       |              |                 |          |
 * | tl_snapshot_json/    | yes                  | yes                   | yes          | yes             | no       |
 * |   _ftrace/_perfetto  |                      |                       |              |                 |          |
 * | tl_snapshot_binary_fd| yes                  | yes                   | JSON/ftrace/ | -EBUSY          | no       |
 * |   (signal-safe)      |                      |                       | Perfetto:    |                 |          |
 * |                      |                      |                       | yes; binary: |                 |          |
 * |                      |                      |                       | -EBUSY       |                 |          |
 * | category enable/     | yes                  | yes                   | yes          | n/a             | yes      |
 * |   disable/set_filter |                      |                       |              |                 |          |
 * | tl_init/tl_shutdown  | no                   | writers see it as     | no           | no              | no       |
 * |                      |                      | "off" (ignored)       |              |                 |          |
 *
 * Two binary snapshots never overlap: whichever starts second, on any thread
 * or in a signal handler, gets -EBUSY. Emitting outside a session (before
 * tl_init, after tl_shutdown) is safe and the event is ignored.
 *
 * Events are never torn: a snapshot copies each block up to the last whole
 * event its writer published, and discards a block that was recycled while
 * it was being copied (counted).
 *
 * Errors: functions that can fail return 0 or a negative errno value.
 * Emitters return nothing; what they cannot record is counted in tl_stats.
 */
#ifndef TIMELINE_TIMELINE_H
#define TIMELINE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline_export.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIMELINE_VERSION_MAJOR 0
#define TIMELINE_VERSION_MINOR 1
#define TIMELINE_VERSION_PATCH 0

/* ---------------------------------------------------------------------------
 * Options and lifetime
 * ------------------------------------------------------------------------- */

typedef enum tl_recorder_kind {
	TL_RECORDER_DEFAULT = 0, /* ring, or TIMELINE_RECORDER */
	TL_RECORDER_RING,
	TL_RECORDER_ENDLESS,
	TL_RECORDER_STARTUP,
	TL_RECORDER_SYSTRACE, /* one trace_marker write per event (docs/systrace.md) */
	TL_RECORDER_FILE,     /* blocks streamed to a file as they fill (docs/recorders.md) */
	TL_RECORDER_CALLBACK, /* each event, decoded, to a function (docs/recorders.md) */
} tl_recorder_kind;

typedef enum tl_clock_kind {
	TL_CLOCK_BOOTTIME = 0, /* default: the ftrace "boot" clock */
	TL_CLOCK_MONOTONIC,
} tl_clock_kind;

typedef enum tl_log_level {
	TL_LOG_ERROR,
	TL_LOG_WARNING,
	TL_LOG_INFO,
} tl_log_level;

/* Called from the thread that hit the condition; never from the hot path. */
typedef void (*tl_log_fn)(tl_log_level level, const char *message, void *user);

/* An event as the callback recorder hands it over (declared with the events, below). */
typedef struct tl_event tl_event;

/*
 * The callback recorder's function (tl_options.callback): called once per
 * event, on the thread that emitted it, inside the emit. `event` and all
 * it points to are valid until it returns, except the category name and
 * the kept strings (see tl_event). An emit it makes itself is dropped and
 * counted, not delivered. It may run wherever an emit runs, a signal
 * handler included. docs/recorders.md#callback.
 */
typedef void (*tl_event_callback)(const tl_event *event, void *user);

/*
 * Options for tl_init(). Zero-initialise, set struct_size to sizeof, fill in
 * what you need. New fields are only ever appended.
 */
typedef struct tl_options {
	size_t struct_size;
	tl_recorder_kind recorder;
	/* ring/startup: the whole budget; endless, file: the cap. 0 =
	 * default (ring and startup 1 MiB, file 64 MiB, endless 256 MiB). */
	size_t buffer_bytes;
	/* Size of one per-thread block, 0 = chosen from buffer_bytes. */
	size_t block_bytes;
	/* Category filter, same syntax as TIMELINE_CATEGORIES; replaces the
	 * filter and clears tl_category_enable/disable overrides. NULL leaves
	 * the filter in force (initially: all categories except those named
	 * "disabled-by-default-*"). */
	const char *categories;
	tl_clock_kind clock;
	/* Disable the TSC fast path even where it is usable. TIMELINE_NO_TSC=1
	 * sets it; TIMELINE_NO_TSC=0 does not clear it. */
	bool no_tsc;
	/* Process name for the trace metadata (NULL = /proc/self/comm). */
	const char *process_name;
	tl_log_fn log;
	void *log_user;
	/* systrace recorder: a named tracefs instance (NULL = top level or
	 * TIMELINE_TRACEFS_INSTANCE). Not read by the in-memory recorders. */
	const char *tracefs_instance;
	/* systrace recorder: write every event, without re-reading the
	 * tracefs `tracing_on` file (at most every 100 ms) to skip events
	 * while tracing is off. With the gate off, a write while tracing is off
	 * fails and is counted in write_errors and events_dropped. */
	bool systrace_no_gate;
	/* file recorder: the file written (or TIMELINE_FILE); required. "%p"
	 * in it stands for the process id, "%%" for "%". */
	const char *file_path;
	/* file recorder: the size at which the file is rotated (0 = never;
	 * TIMELINE_FILE_MAX_KB) and how many files are kept, the current one
	 * included (0 = 2; TIMELINE_FILE_KEEP). */
	uint64_t file_max_bytes;
	unsigned file_keep;
	/* callback recorder: the function that receives every event, and the
	 * pointer passed to it unchanged; required (also with
	 * TIMELINE_RECORDER=callback, which cannot name a function). Not read
	 * by the other recorders. */
	tl_event_callback callback;
	void *callback_user;
	/* The permission bits of every file the library creates: snapshots by
	 * path, the looper's dumps and reports, the file recorder's files
	 * (0 = 0600, private; TIMELINE_FILE_MODE, octal). Set exactly, the
	 * umask not applied: 0640 or 0644 to share traces, which hold the
	 * names and arguments of the program's events (docs/security.md). */
	unsigned file_mode;
	/* file recorder: write to this open descriptor (a pipe, a socket, a
	 * file the caller opened) instead of a file by name; > 0, and then
	 * file_path and TIMELINE_FILE must be unset and file_max_bytes 0. The
	 * recorder writes to a duplicate of it, closed at tl_shutdown; the
	 * caller's stays open. 0 = not set. */
	int file_fd;
} tl_options;

/*
 * Starts recording. opts may be NULL for defaults. The environment overrides
 * the options: TIMELINE_RECORDER=ring|endless|startup|systrace,
 * TIMELINE_BUFFER_KB=N (16 or more), TIMELINE_CATEGORIES=list (comma
 * separated globs, "-glob" disables), TIMELINE_TRACEFS_INSTANCE=name. A
 * variable set to "" is ignored.
 * Returns 0, -EALREADY when already running, -EINVAL for a bad option or
 * environment value (logged, except a too small struct_size),
 * -ENOMEM when the buffer cannot be allocated (logged). The systrace
 * recorder ignores the buffer sizes and returns -EINVAL for an instance
 * name with '/' (or "." or ".."), and -errno from open(2) of trace_marker:
 * -ENOENT when tracefs or the named instance is missing, -EACCES when it
 * is not writable (logged with the path). The callback recorder returns
 * -EINVAL, logged, when tl_options.callback is NULL.
 * Not thread-safe against tl_init/tl_shutdown; safe against emitters.
 */
TL_API int tl_init(const tl_options *opts);

/*
 * Stops recording: later events are ignored (emitting after shutdown is
 * safe), writers in flight are waited for (bounded, 100 ms; past that the
 * buffer is left mapped and a warning logged), memory is released.
 * Snapshots and tl_stats_get must not run at the same time. Safe to call
 * when not initialised.
 */
TL_API void tl_shutdown(void);

/* True between tl_init and tl_shutdown. Any thread. */
TL_API bool tl_is_running(void);

/*
 * Writes out what the recorder holds so far: the file recorder writes its
 * full blocks and the published events of the partly filled ones, so that
 * the file is whole up to now (the other recorders have nothing to write).
 * Returns 0, -ENODEV when no session runs, or the -errno of the file
 * recorder's first failed write. Not signal-safe.
 */
TL_API int tl_flush(void);

/* Name of the active recorder ("ring", ...), or NULL. Static storage. */
TL_API const char *tl_recorder_name(void);

/* ---------------------------------------------------------------------------
 * Categories
 * ------------------------------------------------------------------------- */

/*
 * A registered category. Handles live until the process exits; `enabled`
 * is read with one relaxed load by the macros.
 */
typedef struct tl_category {
	unsigned char enabled; /* read through tl_category_enabled() */
	unsigned char pad_;
	uint16_t index;
	const char *name;
} tl_category;

/*
 * Returns the handle for name, registering it on first use (the name is
 * copied; NULL or "" means "default"). Never NULL: when the table is full
 * (1024 categories, "overflow" included) the handle of the "overflow"
 * category (index 0) is returned; the first time, a warning is logged.
 * Thread-safe; takes a lock, so cache the result (the macros do).
 */
TL_API tl_category *tl_category_get(const char *name);

/*
 * Enables (or disables) every category matching a glob (fnmatch: `*`, `?`,
 * `[...]`), now and for categories registered later. Each call is an
 * override applied after the filter; other categories keep their state.
 * There is one override per pattern (blanks around it ignored): a later
 * call with the same pattern replaces the earlier one and is applied last.
 * tl_category_set_filter() and a filter given to tl_init() clear the
 * overrides.
 * Returns the number of registered categories the pattern matches,
 * -EINVAL for a NULL or empty pattern, one containing ',' or starting with
 * '-', or one longer than 255 bytes, -ENOSPC when 64 distinct patterns are
 * already set. Thread-safe; not signal-safe.
 */
TL_API int tl_category_enable(const char *pattern);
TL_API int tl_category_disable(const char *pattern);

/*
 * Replaces the filter and clears the tl_category_enable/disable overrides.
 * The filter is a comma-separated list of globs applied in order, the last
 * match deciding; "-glob" disables; blanks around items and around '-' are
 * ignored. With no enabling item, categories start enabled except
 * "disabled-by-default-*"; with one, they start disabled. "*" alone enables
 * everything, "" disables everything. Returns 0, or -EINVAL for NULL or a
 * filter of 4096 bytes or more. Thread-safe; not signal-safe.
 */
TL_API int tl_category_set_filter(const char *filter);

static inline TL_NO_INSTRUMENT bool tl_category_enabled(const tl_category *cat)
{
	return __atomic_load_n(&cat->enabled, __ATOMIC_RELAXED) != 0;
}

/* ---------------------------------------------------------------------------
 * Clock
 * ------------------------------------------------------------------------- */

/*
 * A raw timestamp in the recorder's units (TSC ticks or nanoseconds). Cheap;
 * use it for TL_TRACE_EVENT_COMPLETE start/end. Any thread, signal-safe.
 */
typedef uint64_t tl_timestamp;
TL_API tl_timestamp tl_now(void);

/* Converts a tl_timestamp to nanoseconds of the trace clock. */
TL_API int64_t tl_timestamp_to_ns(tl_timestamp ts);

/* Nanoseconds of the trace clock (CLOCK_BOOTTIME unless MONOTONIC chosen). */
TL_API int64_t tl_now_ns(void);

/* ---------------------------------------------------------------------------
 * Events
 *
 * The macros are the usual way in. These functions are what they call; they
 * are stable and may be used directly. `cat` must come from
 * tl_category_get(). Names and keys are kept by pointer (string literals, or
 * strings that outlive every snapshot and keep their content) unless the COPY flag or
 * TL_ARG_STRING_COPY says otherwise; copies are capped at TL_COPY_MAX bytes
 * and a truncation is counted.
 * Thread-safe. The fast path takes no lock and makes no syscall besides the
 * clock read; a thread's first event registers it (a lock, no allocation
 * after it) and a change of block takes the pool lock. Outside a session
 * the event is ignored. An emit from a signal handler that interrupted an
 * emit on the same thread is kept on the thread's next nesting level (up to
 * three handlers deep), else dropped and counted.
 * ------------------------------------------------------------------------- */

#define TL_MAX_ARGS 4
#define TL_COPY_MAX 256

typedef enum tl_arg_type {
	TL_ARG_NONE = 0,
	TL_ARG_INT,         /* int64_t */
	TL_ARG_UINT,        /* uint64_t */
	TL_ARG_DOUBLE,      /* double */
	TL_ARG_BOOL,        /* bool; in C `true`/`false` are int: pass (bool) */
	TL_ARG_POINTER,     /* const void *, written as hex */
	TL_ARG_STRING,      /* const char *, kept by pointer */
	TL_ARG_STRING_COPY, /* const char *, copied into the record */
} tl_arg_type;

typedef struct tl_arg {
	const char *key; /* kept by pointer: use a literal */
	tl_arg_type type;
	union {
		int64_t i;
		uint64_t u;
		double d;
		bool b;
		const void *p;
		const char *s;
	} value;
} tl_arg;

typedef enum tl_phase {
	TL_PHASE_BEGIN = 'B',
	TL_PHASE_END = 'E',
	TL_PHASE_COMPLETE = 'X',
	TL_PHASE_INSTANT = 'i',
	TL_PHASE_ASYNC_BEGIN = 'b',
	TL_PHASE_ASYNC_END = 'e',
	TL_PHASE_ASYNC_INSTANT = 'n',
	TL_PHASE_FLOW_BEGIN = 's',
	TL_PHASE_FLOW_STEP = 't',
	TL_PHASE_FLOW_END = 'f',
	TL_PHASE_COUNTER = 'C',
} tl_phase;

/* Flags for tl_emit(). */
enum {
	TL_EVENT_COPY_NAME = 1u << 0,     /* copy `name` into the record */
	TL_EVENT_SCOPE_THREAD = 0u << 1,  /* instants: default */
	TL_EVENT_SCOPE_PROCESS = 1u << 1, /* instants */
	TL_EVENT_SCOPE_GLOBAL = 2u << 1,  /* instants; flows: global ids */
	TL_EVENT_COUNTER_DOUBLE = 1u << 3, /* counter value is a double */
};
#define TL_EVENT_SCOPE_MASK (3u << 1)

/* The fast forms: a slice begin with a kept name, a slice end. */
TL_API void tl_emit_begin(const tl_category *cat, const char *name);
TL_API void tl_emit_end(const tl_category *cat);

/*
 * A slice begin named `name`, a space and `number` in decimal ("frame 42",
 * "request 7"), for names that differ only by a counter: nothing is
 * formatted or copied when the event is emitted. The record keeps `name`
 * by pointer and the number; the full name is written out where the trace
 * is (snapshots, the systrace recorder). End it with tl_emit_end.
 */
TL_API void tl_emit_begin_numbered(const tl_category *cat, const char *name, uint64_t number);

/*
 * Every other event. `id` is the async/flow id, or for TL_PHASE_COMPLETE the
 * end timestamp (tl_timestamp), or for counters the value bits (int64_t, or
 * a double's bits with TL_EVENT_COUNTER_DOUBLE). `ts` is the event's
 * timestamp, or 0 for "now". args may be NULL when nargs is 0; at most
 * TL_MAX_ARGS are kept, more (and arguments of type TL_ARG_NONE or unknown)
 * are counted as dropped arguments. A counter's arguments are recorded but
 * not exported. An unknown phase or a NULL cat drops the event (counted).
 */
TL_API void tl_emit(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
		    uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs);

/* Convenience wrappers over tl_emit. */
TL_API void tl_emit_counter(const tl_category *cat, const char *name, int64_t value);
TL_API void tl_emit_counter_double(const tl_category *cat, const char *name, double value);
TL_API void tl_emit_complete(const tl_category *cat, const char *name, tl_timestamp start,
			     tl_timestamp end);

/*
 * One event as the callback recorder passes it to tl_options.callback:
 * decoded, its timestamps in nanoseconds of the trace clock (as
 * tl_now_ns reads it and as snapshots write them). Filled by the library
 * on the emitting thread's stack; nothing is allocated per event.
 *
 * Extensible: fields are only ever appended, and struct_size is the size
 * the library filled. A callback built against a newer header reads a
 * field only when struct_size covers it (offsetof(tl_event, field) +
 * sizeof(field) <= struct_size); the fields a callback was compiled with
 * are always there.
 *
 * Lifetimes: the category name lives until the process exits. A kept name
 * and a TL_ARG_STRING argument are the caller's own pointers (they live as
 * long as the caller promised: literals, or strings that outlive the
 * trace). A copied name (flags has TL_EVENT_COPY_NAME), a
 * TL_ARG_STRING_COPY argument, the args array and the event itself live in
 * the emitting frame: valid until the callback returns, to be copied by a
 * callback that keeps them.
 */
struct tl_event {
	size_t struct_size; /* sizeof(tl_event) of the library */
	tl_phase phase;
	/* TL_EVENT_COPY_NAME: the name was copied (cut at TL_COPY_MAX bytes as
	 * a recording keeps it, NUL-terminated in the emitting frame);
	 * TL_EVENT_COUNTER_DOUBLE: the counter's value is counter_double. */
	unsigned flags;
	/* TL_EVENT_SCOPE_THREAD, _PROCESS or _GLOBAL: instants' scope, flows'
	 * global ids; TL_EVENT_SCOPE_THREAD (0) for the other events. */
	unsigned scope;
	const char *category; /* the category's name, never NULL */
	/* NUL-terminated, name_len bytes; NULL (and 0) for TL_PHASE_END. */
	const char *name;
	size_t name_len;
	/* tl_emit_begin_numbered: the slice's name is name, a space and
	 * number in decimal ("frame 42"), not formatted here. */
	bool numbered;
	uint64_t number;
	int64_t ts_ns;  /* the event's time; TL_PHASE_COMPLETE: its start */
	int64_t end_ns; /* TL_PHASE_COMPLETE: its end; else 0 */
	uint32_t tid;   /* the emitting thread, as snapshots name it */
	/* Async and flow events: the id; else 0. */
	uint64_t id;
	/* TL_PHASE_COUNTER: the value, in counter_double with
	 * TL_EVENT_COUNTER_DOUBLE, else in counter_int; the other reads 0. */
	int64_t counter_int;
	double counter_double;
	/* The arguments kept (as a recording keeps them: at most TL_MAX_ARGS,
	 * none of type TL_ARG_NONE); NULL when nargs is 0. */
	const tl_arg *args;
	unsigned nargs;
};

/* ---------------------------------------------------------------------------
 * Threads and process
 * ------------------------------------------------------------------------- */

/*
 * Names the calling thread in the trace metadata (copied, up to 255 bytes;
 * kept after the thread exits, until a new thread reuses its entry), and
 * sets the thread's kernel comm to the name cleaned as atrace names are, cut
 * to 15 bytes (so a live capture shows it too). Threads never named get the
 * kernel's comm. Needs no session.
 * Returns 0, -EINVAL for NULL, -ENOSPC when the thread table is full (or the
 * thread is exiting).
 */
TL_API int tl_thread_set_name(const char *name);

/* Names the process in the trace metadata (copied), and sets the main
 * thread's kernel comm to it (cleaned, 15 bytes), from any thread. Returns 0
 * or -EINVAL. */
TL_API int tl_process_set_name(const char *name);

/* ---------------------------------------------------------------------------
 * Stats
 * ------------------------------------------------------------------------- */

typedef struct tl_stats {
	size_t struct_size;
	const char *recorder;        /* static storage, NULL when not running */
	uint64_t events_written;     /* committed, overwritten ones included (systrace:
	                              * written; callback: delivered) */
	uint64_t events_overwritten; /* ring: lost to block reuse */
	/* no block, stopped startup, a signal handler four deep (and an emit
	 * from inside the callback), refused thread, bad phase/cat; systrace:
	 * a failed write, or the recorder turned itself off. Written + dropped
	 * = emitted. */
	uint64_t events_dropped;
	uint64_t strings_truncated;  /* copies cut at TL_COPY_MAX */
	uint64_t args_dropped;       /* beyond TL_MAX_ARGS, or of type NONE/unknown */
	uint64_t unmatched_begin;    /* last JSON/ftrace/Perfetto snapshot: slices closed at it */
	uint64_t unmatched_end;      /* last JSON/ftrace/Perfetto snapshot: ends without a begin */
	uint64_t blocks_torn;        /* blocks a snapshot skipped (reused while read) */
	uint64_t buffer_bytes;       /* budget or cap */
	uint64_t buffer_bytes_used;  /* bytes of blocks handed to threads */
	/* Entries in the thread table: threads that recorded or were named,
	 * exited ones included while their names stay in snapshots (at most
	 * 1024; not reset by tl_init). */
	uint32_t threads;
	uint32_t categories;         /* registered, "overflow" included */
	/* systrace recorder; 0 for the others. Every event it receives is
	 * counted once: written, dropped, not representable, flow lost or
	 * skipped while tracing was off. */
	uint64_t names_truncated;          /* names (or tracks) cut to fit 1023 bytes; written */
	uint64_t events_not_representable; /* late complete/async events, NaN counters */
	uint64_t flows_lost;               /* flow events: atrace has no flows */
	uint64_t events_tracing_off;       /* skipped by the tracing_on gate */
	uint64_t write_errors;             /* failed write(2)s; those events are dropped */
	/* callback recorder; 0 for the others: emits a thread made while its
	 * callback ran (from the callback, or a signal handler interrupting
	 * it), not delivered; each also counted in events_dropped. */
	uint64_t events_reentered;
	/* file recorder; 0 for the others: block changes at which a writer
	 * ceded its CPU to the drain, half the pool waiting for it (a drain
	 * behind: see docs/recorders.md) */
	uint64_t writer_yields;
} tl_stats;

/* Fills *out (set out->struct_size first). Returns 0, -EINVAL. Any thread,
 * signal-safe; not during tl_shutdown. */
TL_API int tl_stats_get(tl_stats *out);

/* ---------------------------------------------------------------------------
 * Snapshots
 *
 * Every snapshot records the clock id, a clock snapshot (boot, monotonic,
 * realtime), the process and thread names and the stats. Writers keep
 * writing while a snapshot runs.
 * ------------------------------------------------------------------------- */

/*
 * Chrome JSON (object form) for Perfetto and chrome://tracing. Returns 0,
 * -EINVAL for a NULL path, -ENODEV when not running or the recorder keeps
 * no buffer (systrace; the path forms check this before creating the file),
 * -ENOMEM, -errno from open/write/fsync/rename (-ENOSPC: the disk is full).
 * Allocates; not async-signal-safe.
 *
 * The path forms write the file whole or not at all: under a temporary name
 * in the same directory (".NAME.tmp-PID-N"), synced, then renamed to path.
 * On failure the temporary file is removed and a file already at path is
 * left as it was. A path that is a symbolic link, a FIFO or a device
 * (/dev/stdout) is written in place; a directory is -EISDIR.
 */
TL_API int tl_snapshot_json(const char *path);
TL_API int tl_snapshot_json_fd(int fd);

/* ftrace text ("# tracer: nop", tracing_mark_write lines). Same contract. */
TL_API int tl_snapshot_ftrace(const char *path);
TL_API int tl_snapshot_ftrace_fd(int fd);

/* Perfetto's protobuf trace format (a perfetto.protos.Trace: TracePackets
 * with track descriptors and TrackEvents), for ui.perfetto.dev and
 * trace_processor. Same contract. */
TL_API int tl_snapshot_perfetto(const char *path);
TL_API int tl_snapshot_perfetto_fd(int fd);

/*
 * The self-contained binary snapshot. Async-signal-safe: no lock, no
 * allocation, errno preserved; its only calls are write(2), clock_gettime(2)
 * and, for live threads never named, open/read/close of their
 * /proc/self/task/<tid>/comm. Binary snapshots never overlap: one that
 * starts while another runs (any thread, or a signal handler) gets -EBUSY.
 * Returns 0, -ENODEV (not running, or systrace), -EBUSY or -errno from
 * write(2).
 */
TL_API int tl_snapshot_binary_fd(int fd);
/* The same into a file, written whole or not at all as tl_snapshot_json
 * writes one. Also -EINVAL for a NULL path, -ENODEV before creating any
 * file, -errno from open/fsync/rename. Async-signal-safe as the _fd form,
 * errno preserved: a signal handler may write a dump by name. */
TL_API int tl_snapshot_binary(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* TIMELINE_TIMELINE_H */
