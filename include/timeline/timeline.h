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
 * | operation            | writer (same thread) | writer (other thread) | snapshot | signal snapshot | shutdown |
 * |----------------------|----------------------|-----------------------|----------|-----------------|----------|
 * | emit (tl_emit_*)     | no (re-entry from a  | yes: per-thread       | yes      | yes             | yes: the |
 * |                      | signal handler is    | blocks, no lock       |          |                 | event is |
 * |                      | dropped and counted) |                       |          |                 | ignored  |
 * | tl_snapshot_json/    | yes                  | yes                   | yes      | yes             | no       |
 * |   _ftrace            |                      |                       |          |                 |          |
 * | tl_snapshot_binary_fd| yes                  | yes                   | yes      | one at a time:  | no       |
 * |   (signal-safe)      |                      |                       |          | else -EBUSY     |          |
 * | category enable/     | yes                  | yes                   | yes      | n/a             | no       |
 * |   disable            |                      |                       |          |                 |          |
 * | tl_init/tl_shutdown  | no                   | writers see it as     | no       | no              | no       |
 * |                      |                      | "off" (ignored)       |          |                 |          |
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
	TL_RECORDER_SYSTRACE,
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

/*
 * Options for tl_init(). Zero-initialise, set struct_size to sizeof, fill in
 * what you need. New fields are only ever appended.
 */
typedef struct tl_options {
	size_t struct_size;
	tl_recorder_kind recorder;
	/* ring/startup: the whole budget; endless: the hard cap. 0 = default
	 * (ring and startup 1 MiB, endless 256 MiB). */
	size_t buffer_bytes;
	/* Size of one per-thread block, 0 = chosen from buffer_bytes. */
	size_t block_bytes;
	/* Category filter, same syntax as TIMELINE_CATEGORIES (NULL = all
	 * categories except those named "disabled-by-default-*"). */
	const char *categories;
	tl_clock_kind clock;
	/* Disable the TSC fast path even where it is usable. */
	bool no_tsc;
	/* Process name for the trace metadata (NULL = /proc/self/comm). */
	const char *process_name;
	tl_log_fn log;
	void *log_user;
	/* systrace recorder: a named tracefs instance (NULL = top level or
	 * TIMELINE_TRACEFS_INSTANCE). */
	const char *tracefs_instance;
} tl_options;

/*
 * Starts recording. opts may be NULL for defaults. The environment overrides
 * the options: TIMELINE_RECORDER=ring|endless|startup|systrace,
 * TIMELINE_BUFFER_KB=N, TIMELINE_CATEGORIES=list (comma separated globs,
 * "-glob" disables). Returns 0, -EALREADY when already running, -EINVAL for
 * a bad option or environment value (logged), -ENOMEM.
 * Not thread-safe against tl_init/tl_shutdown; safe against emitters.
 */
TL_API int tl_init(const tl_options *opts);

/*
 * Stops recording: later events are ignored, writers in flight are waited
 * for (bounded, 100 ms), memory is released. Snapshots must not run at the
 * same time. Safe to call when not initialised.
 */
TL_API void tl_shutdown(void);

/* True between tl_init and tl_shutdown. Any thread. */
TL_API bool tl_is_running(void);

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
 * copied). Never NULL: when the table is full (1024 categories) the handle
 * of the "overflow" category is returned and the failure counted.
 * Thread-safe; takes a lock, so cache the result (the macros do).
 */
TL_API tl_category *tl_category_get(const char *name);

/*
 * Enables (or disables) every category matching a glob (`*`, `?`), now and
 * for categories registered later. Returns the number of categories that
 * matched, or -EINVAL for an empty pattern. Thread-safe.
 */
TL_API int tl_category_enable(const char *pattern);
TL_API int tl_category_disable(const char *pattern);

/*
 * Replaces the filter: a comma-separated list of globs applied in order,
 * "-glob" disables, "*" alone enables everything. "" disables everything.
 * Returns 0 or -EINVAL. Thread-safe.
 */
TL_API int tl_category_set_filter(const char *filter);

static inline bool tl_category_enabled(const tl_category *cat)
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
 * strings that outlive every snapshot) unless the COPY flag or
 * TL_ARG_STRING_COPY says otherwise; copies are capped at TL_COPY_MAX bytes
 * and a truncation is counted.
 * Thread-safe, lock-free, no syscall besides the clock read, no allocation
 * after a thread's first event. Not async-signal-safe against an emit in
 * progress on the same thread (that event is dropped and counted).
 * ------------------------------------------------------------------------- */

#define TL_MAX_ARGS 4
#define TL_COPY_MAX 256

typedef enum tl_arg_type {
	TL_ARG_NONE = 0,
	TL_ARG_INT,         /* int64_t */
	TL_ARG_UINT,        /* uint64_t */
	TL_ARG_DOUBLE,      /* double */
	TL_ARG_BOOL,        /* bool */
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
 * Every other event. `id` is the async/flow id, or for TL_PHASE_COMPLETE the
 * end timestamp (tl_timestamp), or for counters the value bits (int64_t, or
 * a double's bits with TL_EVENT_COUNTER_DOUBLE). `ts` is the event's
 * timestamp, or 0 for "now". args may be NULL when nargs is 0; at most
 * TL_MAX_ARGS are kept, more are counted as dropped arguments.
 */
TL_API void tl_emit(const tl_category *cat, tl_phase phase, unsigned flags, const char *name,
		    uint64_t id, tl_timestamp ts, const tl_arg *args, unsigned nargs);

/* Convenience wrappers over tl_emit. */
TL_API void tl_emit_counter(const tl_category *cat, const char *name, int64_t value);
TL_API void tl_emit_counter_double(const tl_category *cat, const char *name, double value);
TL_API void tl_emit_complete(const tl_category *cat, const char *name, tl_timestamp start,
			     tl_timestamp end);

/* ---------------------------------------------------------------------------
 * Threads and process
 * ------------------------------------------------------------------------- */

/*
 * Names the calling thread in the trace metadata (copied, up to 255 bytes;
 * kept after the thread exits). Threads never named get the kernel's comm.
 * Returns 0, -EINVAL for NULL, -ENOSPC when the thread table is full.
 */
TL_API int tl_thread_set_name(const char *name);

/* Names the process in the trace metadata (copied). Returns 0 or -EINVAL. */
TL_API int tl_process_set_name(const char *name);

/* ---------------------------------------------------------------------------
 * Stats
 * ------------------------------------------------------------------------- */

typedef struct tl_stats {
	size_t struct_size;
	const char *recorder;        /* static storage, NULL when not running */
	uint64_t events_written;     /* events committed to the recorder */
	uint64_t events_overwritten; /* ring: lost to block reuse */
	uint64_t events_dropped;     /* full buffer, stopped startup, re-entry */
	uint64_t strings_truncated;  /* copies cut at TL_COPY_MAX */
	uint64_t args_dropped;       /* arguments beyond TL_MAX_ARGS */
	uint64_t unmatched_begin;    /* last snapshot: slices closed at snapshot time */
	uint64_t unmatched_end;      /* last snapshot: ends whose begin was lost */
	uint64_t blocks_torn;        /* blocks a snapshot skipped (reused while read) */
	uint64_t buffer_bytes;       /* budget or cap */
	uint64_t buffer_bytes_used;  /* bytes of blocks handed to threads */
	uint32_t threads;            /* threads that recorded since init */
	uint32_t categories;
} tl_stats;

/* Fills *out (set out->struct_size first). Returns 0, -EINVAL. Any thread. */
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
 * -ENODEV when not running or the recorder keeps no buffer (systrace),
 * -errno from open/write. Allocates; not async-signal-safe.
 */
TL_API int tl_snapshot_json(const char *path);
TL_API int tl_snapshot_json_fd(int fd);

/* ftrace text ("# tracer: nop", tracing_mark_write lines). Same contract. */
TL_API int tl_snapshot_ftrace(const char *path);
TL_API int tl_snapshot_ftrace_fd(int fd);

/*
 * The self-contained binary snapshot. Async-signal-safe: write(2) only, no
 * lock, no allocation, errno preserved. One runs at a time (-EBUSY).
 * Returns 0, -ENODEV, -EBUSY or -errno from write(2).
 */
TL_API int tl_snapshot_binary_fd(int fd);
TL_API int tl_snapshot_binary(const char *path); /* not signal-safe: open(2) */

#ifdef __cplusplus
}
#endif

#endif /* TIMELINE_TIMELINE_H */
