/*
 * A program run under `timeline record` by tests/test_cli_record.c.
 *
 *   traced_child flood N   writes N "C|pid|flood|i" markers as fast as it
 *                          can, straight to the instance's trace_marker
 *                          (TIMELINE_TRACEFS_INSTANCE), to overflow a small
 *                          kernel buffer.
 *   traced_child events    records one of every event type through the
 *                          library (TIMELINE_RECORDER=systrace, as `timeline
 *                          record` sets it), names with '|', a newline and
 *                          2000 bytes, a forked child with its own slice, and
 *                          a slice left open when it exits. Prints its pid
 *                          and the child's as "pids PARENT CHILD".
 *
 * Exits 0, or 1 with the problem on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <timeline/trace_event.h>

static int open_marker(void)
{
	const char *instance = getenv("TIMELINE_TRACEFS_INSTANCE");
	if (!instance || !*instance) {
		fprintf(stderr, "traced_child: TIMELINE_TRACEFS_INSTANCE is not set\n");
		return -1;
	}
	char path[512];
	snprintf(path, sizeof path, "/sys/kernel/tracing/instances/%s/trace_marker", instance);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "traced_child: %s: %s\n", path, strerror(errno));
	return fd;
}

static int flood(long count)
{
	int fd = open_marker();
	if (fd < 0)
		return 1;
	for (long i = 0; i < count; i++) {
		char payload[64];
		int n = snprintf(payload, sizeof payload, "C|%d|flood|%ld", (int)getpid(), i);
		if (write(fd, payload, (size_t)n) != n) {
			fprintf(stderr, "traced_child: trace_marker: %s\n", strerror(errno));
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}

static void *async_ender(void *arg)
{
	(void)arg;
	TL_TRACE_EVENT_ASYNC_END0("it", "load", 7);
	return NULL;
}

static int events(void)
{
	int rc = tl_init(NULL);
	if (rc != 0 || strcmp(tl_recorder_name(), "systrace") != 0) {
		fprintf(stderr, "traced_child: tl_init: %s (recorder %s)\n", strerror(-rc),
			tl_recorder_name() ? tl_recorder_name() : "none");
		return 1;
	}
	{
		TL_TRACE_EVENT0("it", "outer");
		TL_TRACE_EVENT0("it", "inner");
		TL_TRACE_EVENT_COUNTER("it", "depth", 2);
	}
	TL_TRACE_EVENT_COUNTER("it", "depth", 0);
	TL_TRACE_EVENT_INSTANT0("it", "tick", TL_SCOPE_THREAD);
	TL_TRACE_EVENT_INSTANT0("it", "proc", TL_SCOPE_PROCESS);
	TL_TRACE_EVENT_ASYNC_BEGIN0("it", "load", 7);
	pthread_t t;
	pthread_create(&t, NULL, async_ender, NULL);
	pthread_join(t, NULL);
	TL_TRACE_EVENT_BEGIN0("it", "a|b\nc");
	TL_TRACE_EVENT_END0("it", "a|b\nc");
	static char long_name[2001];
	memset(long_name, 'x', 2000);
	TL_TRACE_EVENT_BEGIN0("it", long_name);
	TL_TRACE_EVENT_END0("it", long_name);

	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		TL_TRACE_EVENT_BEGIN0("it", "child work");
		TL_TRACE_EVENT_END0("it", "child work");
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);
	printf("pids %d %d\n", (int)getpid(), (int)child);
	fflush(stdout);
	TL_TRACE_EVENT_BEGIN0("it", "unfinished"); /* the process exits inside it */
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "flood") == 0)
		return flood(strtol(argv[2], NULL, 10));
	if (argc == 2 && strcmp(argv[1], "events") == 0)
		return events();
	fprintf(stderr, "usage: traced_child flood N | traced_child events\n");
	return 2;
}
