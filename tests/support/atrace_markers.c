/*
 * Writes a fixed set of atrace payloads, by hand, to a trace_marker file
 * while a capture tool records: the program behind the trace-cmd fixture
 * (tests/fixtures/trace-cmd/README.md) and the documented-capture test
 * (tests/scripts/check_trace_cmd_capture.sh).
 *
 *   atrace_markers [TRACE_MARKER]   default /sys/kernel/tracing/trace_marker
 *
 * Two threads, named "tcm-main" and "tcm-worker" (their comm):
 *
 *   main     B "frame"  C "queue" 3  S "download" 42  I "tick"  B "draw: list"
 *            E  E  C "queue" 0
 *   worker   B "decode"  B "parse"  E  C "queue" 5  F "download" 42  I "done"  E
 *
 * The main thread waits for the worker inside "draw: list", so the
 * worker's events fall inside it on the timeline. Prints "pid PID main TID worker TID" on
 * standard output. Exits 0, or 1 with the problem on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int marker_fd = -1;
static int failed;

/* One payload, one write(2), as the atrace writers do. */
static void marker(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void marker(const char *fmt, ...)
{
	char payload[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(payload, sizeof payload, fmt, ap);
	va_end(ap);
	if (write(marker_fd, payload, (size_t)n) != n) {
		fprintf(stderr, "atrace_markers: write: %s\n", strerror(errno));
		failed = 1;
	}
	/* a gap between events, so that no two share a microsecond */
	struct timespec gap = {0, 200000};
	nanosleep(&gap, NULL);
}

static pid_t worker_tid;

static void *worker(void *arg)
{
	(void)arg;
	int pid = (int)getpid();
	worker_tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), "tcm-worker");
	marker("B|%d|decode", pid);
	marker("B|%d|parse", pid);
	marker("E|%d", pid);
	marker("C|%d|queue|5", pid);
	marker("F|%d|download|42", pid);
	marker("I|%d|done", pid);
	marker("E|%d", pid);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/sys/kernel/tracing/trace_marker";
	marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (marker_fd < 0) {
		fprintf(stderr, "atrace_markers: %s: %s\n", path, strerror(errno));
		return 1;
	}
	int pid = (int)getpid();
	pthread_setname_np(pthread_self(), "tcm-main");
	marker("B|%d|frame", pid);
	marker("C|%d|queue|3", pid);
	marker("S|%d|download|42", pid);
	marker("I|%d|tick", pid);
	marker("B|%d|draw: list", pid);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		fprintf(stderr, "atrace_markers: pthread_create failed\n");
		return 1;
	}
	pthread_join(t, NULL);
	marker("E|%d", pid);
	marker("E|%d", pid);
	marker("C|%d|queue|0", pid);
	close(marker_fd);
	printf("pid %d main %d worker %d\n", pid, pid, (int)worker_tid);
	return failed;
}
