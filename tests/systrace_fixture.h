/*
 * A private tracefs instance for the systrace suites: created for one test
 * run (libtracefs when the build has it, else mkdir under instances/),
 * destroyed at the end, also when a test fails. Reads back the instance's
 * `trace` file as (tid, payload) pairs. Included by tests/test_systrace*.c.
 */
#ifndef TIMELINE_SYSTRACE_FIXTURE_H
#define TIMELINE_SYSTRACE_FIXTURE_H

#include <timeline/timeline.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.h"

#if __has_include(<tracefs.h>)
#include <tracefs.h>
#define FIXTURE_HAVE_TRACEFS 1
#endif

#define FIXTURE_TRACEFS "/sys/kernel/tracing"
#define FIXTURE_PAYLOAD_MAX 2048

struct fixture_instance {
	char name[64];
	char dir[PATH_MAX - 64];
#ifdef FIXTURE_HAVE_TRACEFS
	struct tracefs_instance *handle;
#endif
	int created;
};

static struct fixture_instance fixture;

/* One tracing_mark_write line of the trace file. */
struct fixture_marker {
	int tid;
	char payload[FIXTURE_PAYLOAD_MAX];
};

static void fixture_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	fflush(stdout);
	exit(TL_TEST_SKIP_EXIT);
}

static void fixture_destroy(void)
{
	if (!fixture.created)
		return;
	fixture.created = 0;
#ifdef FIXTURE_HAVE_TRACEFS
	tracefs_instance_destroy(fixture.handle);
	tracefs_instance_free(fixture.handle);
	fixture.handle = NULL;
#else
	rmdir(fixture.dir);
#endif
}

/* Makes sure tracefs is mounted; skips (with the reason) when it cannot be. */
static const char *fixture_tracefs(void)
{
	if (geteuid() != 0)
		fixture_skip("the systrace tests write to tracefs and need root");
	if (access(FIXTURE_TRACEFS "/trace_marker", F_OK) != 0 &&
	    mount("nodev", FIXTURE_TRACEFS, "tracefs", 0, NULL) != 0) {
		printf("SKIP: tracefs is not mounted and mounting it on %s failed: %s\n",
		       FIXTURE_TRACEFS, strerror(errno));
		exit(TL_TEST_SKIP_EXIT);
	}
#ifdef FIXTURE_HAVE_TRACEFS
	const char *dir = tracefs_tracing_dir();
	if (!dir)
		fixture_skip("libtracefs finds no tracefs");
	return dir;
#else
	return FIXTURE_TRACEFS;
#endif
}

/* Creates the instance "timeline_<stem>_<pid>" and points
 * TIMELINE_TRACEFS_INSTANCE at it. Skips without root or tracefs. */
static void fixture_create(const char *stem)
{
	const char *top = fixture_tracefs();
	snprintf(fixture.name, sizeof fixture.name, "timeline_%s_%d", stem, (int)getpid());
	snprintf(fixture.dir, sizeof fixture.dir, "%s/instances/%s", top, fixture.name);
#ifdef FIXTURE_HAVE_TRACEFS
	fixture.handle = tracefs_instance_create(fixture.name);
	if (!fixture.handle) {
		printf("SKIP: cannot create the tracefs instance %s: %s\n", fixture.name,
		       strerror(errno));
		exit(TL_TEST_SKIP_EXIT);
	}
#else
	if (mkdir(fixture.dir, 0755) != 0) {
		printf("SKIP: cannot create the tracefs instance %s: %s\n", fixture.dir,
		       strerror(errno));
		exit(TL_TEST_SKIP_EXIT);
	}
#endif
	fixture.created = 1;
	atexit(fixture_destroy);
	setenv("TIMELINE_TRACEFS_INSTANCE", fixture.name, 1);
}

/* Writes value into a file of the instance; returns 0 or -errno. */
/* cmocka teardowns the systrace suites share: the instance at the end of
 * the group, the session after each test. */
static __attribute__((unused)) int fixture_group_teardown(void **state)
{
	(void)state;
	fixture_destroy();
	return 0;
}

static __attribute__((unused)) int fixture_session_teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static int fixture_write(const char *file, const char *value)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", fixture.dir, file);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int err = n < 0 ? errno : 0;
	close(fd);
	return -err;
}

/* Empties the instance's trace buffer. */
static void fixture_clear(void)
{
	assert_int_equal(fixture_write("trace", ""), 0);
}

static const char fixture_clock_sync[] = "trace_event_clock_sync: ";

/*
 * Reads the tracing_mark_write lines of the instance's trace file into out
 * (at most max), in order: the clock sync markers a session starts with
 * when `clock_syncs` is set, every other marker when it is not. The task
 * column is "comm-tid"; the tid is what follows the last '-' before
 * " [cpu]".
 */
static size_t fixture_read_markers(struct fixture_marker *out, size_t max, int clock_syncs)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/trace", fixture.dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char line[FIXTURE_PAYLOAD_MAX + 256];
	static const char tag[] = "tracing_mark_write: ";
	size_t n = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		char *payload = strstr(line, tag);
		char *cpu = strstr(line, " [");
		if (!payload || !cpu || cpu > payload)
			continue;
		char *dash = cpu;
		while (dash > line && *dash != '-')
			dash--;
		assert_true(*dash == '-');
		payload += sizeof tag - 1;
		payload[strcspn(payload, "\n")] = '\0';
		int is_clock_sync =
		    strncmp(payload, fixture_clock_sync, sizeof fixture_clock_sync - 1) == 0;
		if (is_clock_sync != (clock_syncs != 0))
			continue;
		if (n < max) {
			out[n].tid = atoi(dash + 1);
			snprintf(out[n].payload, sizeof out[n].payload, "%s", payload);
		}
		n++;
	}
	fclose(f);
	return n;
}

/* The markers of the events written: every marker but the clock syncs. */
static __attribute__((unused)) size_t fixture_markers(struct fixture_marker *out, size_t max)
{
	return fixture_read_markers(out, max, 0);
}

/* The clock sync markers (trace_event_clock_sync: ...) alone. */
static __attribute__((unused)) size_t fixture_clock_syncs(struct fixture_marker *out, size_t max)
{
	return fixture_read_markers(out, max, 1);
}

#endif /* TIMELINE_SYSTRACE_FIXTURE_H */
