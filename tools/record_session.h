/*
 * The tracefs side of `timeline record`: a private ftrace instance, its
 * per-CPU raw buffers read while the trace runs, and the events kept
 * (parsed with libtraceevent) until they are written out as ftrace text.
 *
 * Lifecycle, all from one thread:
 *
 *   record_session_open()       instance created, clock, events, buffer size
 *   record_session_start()      tracing on
 *   record_session_wait_read()  repeatedly: waits for data, drains every CPU
 *   record_session_stop()       tracing off, last drain, kernel drop counters
 *   record_session_write_text() the events merged by timestamp, as ftrace text
 *   record_session_close()      the instance removed, everything freed
 *
 * record_session_close() removes the instance whatever happened before, so
 * every path out of the command goes through it. Events wait in per-CPU
 * temporary files (already in time order per CPU), so memory stays small
 * however long the recording is. Not signal-safe; the caller's signal
 * handlers only set flags.
 */
#ifndef TIMELINE_TOOLS_RECORD_SESSION_H
#define TIMELINE_TOOLS_RECORD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#define RECORD_ERR_MAX 512

enum record_clock {
	RECORD_CLOCK_BOOT, /* trace_clock "boot": CLOCK_BOOTTIME */
	RECORD_CLOCK_MONO, /* trace_clock "mono": CLOCK_MONOTONIC */
};

struct record_config {
	/* Extra events as "system/event" (validated by the caller). */
	const char *const *events;
	size_t nevents;
	unsigned buffer_kb; /* per CPU */
	enum record_clock clock;
};

/* The atrace phases counted separately; anything else is "other". */
#define RECORD_MARKER_PHASES "BECSFINGH"
#define RECORD_PHASE_COUNT (sizeof RECORD_MARKER_PHASES - 1)

struct record_counts {
	uint64_t events; /* parsed and kept */
	uint64_t bytes;  /* read from the raw buffers */
	uint64_t markers[RECORD_PHASE_COUNT];
	uint64_t markers_other; /* trace_marker writes without a known phase */
	uint64_t sched_switch;
	uint64_t sched_waking;
	/* sched_switch events whose prev_pid is not the task the CPU's
	 * previous sched_switch put there, with no events missed on that CPU
	 * in between: the kernel did not record the switch that put the task
	 * there (some kernels drop the switch out of idle), so that run has
	 * no CPU slice */
	uint64_t unseen_switch_ins;
	uint64_t others;     /* the -e events */
	uint64_t missed;     /* lost in the kernel buffers, all CPUs */
	uint64_t processes;  /* distinct known tgids with events (0 excluded) */
	int64_t first_ts_ns; /* trace clock; 0 with no events */
	int64_t last_ts_ns;
};

struct record_session;

/* Why record_session_open failed, for the caller's message and exit status. */
enum record_open_failure {
	RECORD_FAIL_OTHER,
	RECORD_FAIL_NOT_MOUNTED, /* tracefs is not mounted */
	RECORD_FAIL_PERMISSION,  /* not root / no CAP_SYS_ADMIN */
	RECORD_FAIL_BAD_EVENT,   /* an -e event does not exist */
};

/*
 * Creates the instance (named timeline-<pid>, or with a suffix when taken)
 * and sets it up; tracing stays off. Returns 0, or -errno with a one-line
 * reason in err (without the command prefix) and *failure set; on failure
 * nothing is left behind. Never mounts tracefs.
 */
int record_session_open(struct record_session **out, const struct record_config *config,
                        enum record_open_failure *failure, char *err, size_t errlen);

/* The instance's name (for TIMELINE_TRACEFS_INSTANCE). Owned by the session. */
const char *record_session_instance(const struct record_session *session);

/* The instance's directory, e.g. /sys/kernel/tracing/instances/timeline-42. */
const char *record_session_dir(const struct record_session *session);

/* Turns tracing on. 0 or -errno (reason in err). */
int record_session_start(struct record_session *session, char *err, size_t errlen);

/*
 * Waits up to timeout_ms for data (returns early on a signal), then reads
 * every CPU's buffer until it is empty. 0 or -errno (reason in err).
 */
int record_session_wait_read(struct record_session *session, int timeout_ms, char *err,
                             size_t errlen);

/* Turns tracing off, reads what is left and the kernel's drop counters. */
int record_session_stop(struct record_session *session, char *err, size_t errlen);

/* Counters so far (complete after record_session_stop). */
void record_session_counts(const struct record_session *session, struct record_counts *out);

/* Number of CPUs read, and the events missed on one of them. */
int record_session_cpus(const struct record_session *session);
uint64_t record_session_missed_on(const struct record_session *session, int cpu);
uint64_t record_session_unseen_switch_ins_on(const struct record_session *session, int cpu);

/*
 * Writes every event kept, sorted by timestamp across CPUs, as ftrace text
 * (formats.md sections 2 and 4.2) to fd. Returns 0 or -errno.
 */
int record_session_write_text(struct record_session *session, int fd);

/* Closes the buffers, removes the instance, frees the session. NULL is fine. */
void record_session_close(struct record_session *session);

#endif /* TIMELINE_TOOLS_RECORD_SESSION_H */
