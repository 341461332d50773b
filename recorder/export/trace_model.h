/*
 * A decoded trace: what a snapshot contains, in nanoseconds of the trace
 * clock, with every string owned by the model. Built from a binary snapshot
 * (tl_model_read_binary) and written out by the exporters. Internal; not
 * signal-safe (allocates).
 */
#ifndef TIMELINE_TRACE_MODEL_H
#define TIMELINE_TRACE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

typedef struct tl_model_arg {
	const char *key;
	tl_arg_type type; /* TL_ARG_STRING_COPY is folded into TL_ARG_STRING */
	union {
		int64_t i;
		uint64_t u;
		double d;
		int b;
		uint64_t p;
		const char *s;
	} v;
} tl_model_arg;

/*
 * One event, in 64 bytes when it has no args (a model holds one per event
 * of the trace; model.c asserts the size). The args live out of line, in the
 * model's arena (tl_model_event_args_alloc), and only for events that have
 * some; an event decoded on its own (the streaming exporters) points args
 * at TL_MAX_ARGS slots of its caller's.
 */
typedef struct tl_model_event {
	int64_t ts_ns;
	union {
		int64_t end_ns;   /* TL_PHASE_COMPLETE: end timestamp */
		int64_t counter_i; /* TL_PHASE_COUNTER, counter_is_double 0 */
		double counter_d;  /* TL_PHASE_COUNTER, counter_is_double 1 */
	};
	const char *cat;
	const char *name; /* NULL for END */
	uint64_t id;      /* async / flow id */
	tl_model_arg *args; /* nargs of them; NULL when there are none */
	uint32_t tid;
	uint32_t pid; /* 0: model->pid (see tl_model_event_pid) */
	uint32_t seq; /* order of the event within its thread (increasing) */
	char phase;   /* tl_phase */
	uint8_t scope; /* TL_EVENT_SCOPE_* (instants; flows: global or not) */
	uint8_t counter_is_double;
	uint8_t nargs; /* <= TL_MAX_ARGS */
} tl_model_event;

typedef struct tl_model_thread {
	uint32_t tid;
	const char *name; /* never NULL: "" when unknown */
	uint32_t pid;     /* 0: model->pid */
} tl_model_thread;

/* A process other than model->pid, or model->pid itself, with its name. */
typedef struct tl_model_process {
	uint32_t pid;
	const char *name; /* never NULL */
} tl_model_process;

typedef struct tl_model {
	uint32_t pid;
	const char *process_name;
	int clock_id;          /* 7 = CLOCK_BOOTTIME, 1 = CLOCK_MONOTONIC, TL_MODEL_CLOCK_UNKNOWN */
	int64_t snapshot_ns;   /* trace clock at the snapshot */
	int64_t boottime_ns;   /* clock snapshot */
	int64_t monotonic_ns;
	int64_t realtime_ns;
	int complete;          /* 0 when the END chunk was missing */
	const char *recorder;  /* recorder name from the stats chunk */
	tl_stats stats;

	tl_model_thread *threads;
	size_t nthreads;
	/*
	 * Sorted by (pid, tid, seq), pid as tl_model_event_pid gives it: each
	 * thread's events are contiguous and in order. A snapshot has one pid;
	 * a model converted from another trace may have several.
	 */
	tl_model_event *events;
	size_t nevents;
	/* Names of processes; empty for a snapshot (process_name names model->pid). */
	tl_model_process *processes;
	size_t nprocesses;

	/* Internal: string arena. */
	struct tl_model_arena *arena;
} tl_model;

/*
 * Reads a binary snapshot held in memory. On failure returns -EINVAL (not a
 * snapshot, bad version, corrupt chunk), -ENODATA (cut before any of its
 * events: nothing to read) or -ENOMEM and writes a one-line reason into
 * err (may be NULL). On success the caller owns *out and frees
 * it with tl_model_free().
 */
int tl_model_read_binary(const void *data, size_t len, tl_model *out, char *err, size_t errlen);

/* Reads a whole file with tl_model_read_binary. Same returns, plus -errno. */
int tl_model_read_binary_file(const char *path, tl_model *out, char *err, size_t errlen);

/*
 * Reads files that continue one another (a file recorder's rotation, oldest
 * first), or one file, as one trace, its function records named from the
 * files symbols allows (recorder/export/symbolize.h; NULL: the defaults,
 * as the readers above name them). Same returns; err names the file that
 * failed when there are several.
 */
struct tl_symbol_options;
int tl_model_read_binary_files(const char *const *paths, size_t n,
                               const struct tl_symbol_options *symbols, tl_model *out, char *err,
                               size_t errlen);

void tl_model_free(tl_model *model);

/* Copies a string into the model's arena. NULL on allocation failure. */
const char *tl_model_intern(tl_model *model, const char *s, size_t len);

/* Points the strings of e (a copy of another model's event: name,
 * category, arg keys and string values) and its args at copies in model's
 * arena, so that e outlives the model it came from. 0 or -ENOMEM. */
int tl_model_event_adopt_strings(tl_model *model, tl_model_event *e);

/* Appends a zeroed event to model->events (the array must come from this
 * function); NULL on allocation failure, or when the model already holds
 * UINT32_MAX events (seq is 32 bits). Earlier event pointers move. */
tl_model_event *tl_model_event_append(tl_model *model);

/*
 * Gives e room for n args (n <= TL_MAX_ARGS) in model's arena: e->args
 * then points to n slots, the first e->nargs of them a copy of e's args,
 * the rest zeroed; e->nargs is left as it is. Only the last args given
 * to an event count: earlier ones stay in the arena until the model is
 * freed. 0, or -ENOMEM (e untouched).
 */
int tl_model_event_args_alloc(tl_model *model, tl_model_event *e, unsigned n);

/* Adds thread tid, or renames it; 0 or -ENOMEM. The model indexes its
 * threads and processes as these functions add them: each lookup below
 * takes the same time however many the model holds (a model whose arrays
 * were set by hand is searched). */
int tl_model_thread_set(tl_model *model, uint32_t tid, const char *name, size_t len);

/* The same for thread tid of process pid (0: model->pid). */
int tl_model_thread_set_in(tl_model *model, uint32_t pid, uint32_t tid, const char *name,
                           size_t len);

/* The entry of thread tid of process pid (0: model->pid), as
 * tl_model_thread_set_in adds it, or NULL. Valid until threads are added. */
const tl_model_thread *tl_model_thread_find(const tl_model *model, uint32_t pid, uint32_t tid);

/* Adds process pid with a name, or renames it; 0 or -ENOMEM. */
int tl_model_process_set(tl_model *model, uint32_t pid, const char *name, size_t len);

/* The name of process pid: model->process_name for model->pid, else from
 * model->processes; NULL when it has none. */
const char *tl_model_process_name(const tl_model *model, uint32_t pid);

/* clock_id of a model whose source did not say its clock (an imported trace). */
#define TL_MODEL_CLOCK_UNKNOWN (-1)

/* The clock's name as the exporters write it: "boot", "mono" or "unknown". */
static inline const char *tl_model_clock_name(int clock_id)
{
	return clock_id == 7 ? "boot" : clock_id == 1 ? "mono" : "unknown";
}

/* The pid an event belongs to. */
static inline uint32_t tl_model_event_pid(const tl_model *model, const tl_model_event *event)
{
	return event->pid ? event->pid : model->pid;
}

/* The pid a thread entry belongs to. */
static inline uint32_t tl_model_thread_pid(const tl_model *model, const tl_model_thread *thread)
{
	return thread->pid ? thread->pid : model->pid;
}

/* Name of a thread, or NULL when the model has none for tid. */
const char *tl_model_thread_name(const tl_model *model, uint32_t tid);

/* What an exporter had to repair, for the stats. */
typedef struct tl_export_counts {
	uint64_t unmatched_begin; /* slices still open: closed at snapshot time */
	uint64_t unmatched_end;   /* ends whose begin was lost: dropped */
} tl_export_counts;

/*
 * Chrome JSON, formats.md sections 3 and 4.3. Returns 0 or -errno from
 * write(2). counts may be NULL.
 */
int tl_export_json(const tl_model *model, int fd, tl_export_counts *counts);

/* ftrace text, formats.md section 4.2. Same contract. */
int tl_export_ftrace(const tl_model *model, int fd, tl_export_counts *counts);

/* Perfetto's protobuf trace (perfetto.protos.Trace), docs/formats.md
 * "Perfetto". Same contract; also -ENOMEM. */
int tl_export_perfetto(const tl_model *model, int fd, tl_export_counts *counts);

#endif /* TIMELINE_TRACE_MODEL_H */
