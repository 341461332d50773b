/*
 * What timeline-bench-export and timeline-bench-readers share: a clock, the
 * lists of sizes their options take, and the run of one measure in a child
 * process of its own (the fork, the wait, the child's result and peak
 * resident memory). Not a test.
 */
#ifndef TIMELINE_BENCH_CHILD_H
#define TIMELINE_BENCH_CHILD_H

#include <stddef.h>

/* CLOCK_MONOTONIC, in seconds. */
double bench_now_seconds(void);

/* Parses "10,100" into sizes[0..max); a size must be positive, or zero
 * too when zero_ok. Returns the count, or -1. */
int bench_parse_sizes(const char *list, double *sizes, int max, int zero_ok);

typedef struct bench_child {
	int ok;           /* exited with 0, and its result read whole */
	int exit_status;  /* as it exited; -1 when it did not (a signal, no fork) */
	double seconds;   /* wall time from the fork to the exit */
	long peak_rss_kb; /* ru_maxrss of the child, from wait4 */
} bench_child;

/*
 * Forks; the child runs child(arg, result_fd), which writes result_size
 * bytes to result_fd and ends with _exit (or execs, and its exit status
 * tells). The parent waits for it and reads the result into result (none
 * when result_size is 0).
 */
bench_child bench_child_run(void (*child)(void *arg, int result_fd), void *arg, void *result,
                            size_t result_size);

#endif /* TIMELINE_BENCH_CHILD_H */
