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
 *   traced_child identity FILE
 *                          writes to FILE who it runs as and what it was
 *                          given, one item a line: "uid R E S", "gid R E S",
 *                          "groups G..." (sorted), "home", "user", "logname"
 *                          and "shell" from the environment, "cwd DIR",
 *                          "appdir UID MODE" (the directory of TIMELINE_FILE,
 *                          or "appdir none"), "regain yes" when setuid(0)
 *                          succeeds (else "regain " and why not), and "fd N
 *                          TARGET" for each descriptor above 2 it inherited;
 *                          then records one slice, "identity", with the
 *                          recorder its environment chose ("recorder NAME").
 *
 * Exits 0, or 1 with the problem on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static int compare_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

static void put_env(FILE *out, const char *label, const char *name)
{
	const char *v = getenv(name);
	fprintf(out, "%s %s\n", label, v ? v : "(unset)");
}

static int identity(const char *path)
{
	/* the descriptors first, before this program opens any */
	char fds[8192] = "";
	size_t used = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *ent;
	while (d && (ent = readdir(d)) != NULL) {
		int fd = atoi(ent->d_name);
		if (ent->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		char link[64], target[PATH_MAX] = "";
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		int w = snprintf(fds + used, sizeof fds - used, "fd %d %s\n", fd, target);
		if (w > 0 && (size_t)w < sizeof fds - used)
			used += (size_t)w;
	}
	if (d)
		closedir(d);

	FILE *out = fopen(path, "we");
	if (!out) {
		fprintf(stderr, "traced_child: %s: %s\n", path, strerror(errno));
		return 1;
	}
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	getresuid(&ruid, &euid, &suid);
	getresgid(&rgid, &egid, &sgid);
	fprintf(out, "uid %u %u %u\ngid %u %u %u\ngroups", (unsigned)ruid, (unsigned)euid,
	        (unsigned)suid, (unsigned)rgid, (unsigned)egid, (unsigned)sgid);
	gid_t groups[256];
	int n = getgroups(256, groups);
	qsort(groups, n > 0 ? (size_t)n : 0, sizeof *groups, compare_gid);
	for (int i = 0; i < n; i++)
		fprintf(out, " %u", (unsigned)groups[i]);
	fputc('\n', out);
	put_env(out, "home", "HOME");
	put_env(out, "user", "USER");
	put_env(out, "logname", "LOGNAME");
	put_env(out, "shell", "SHELL");
	char cwd[PATH_MAX];
	fprintf(out, "cwd %s\n", getcwd(cwd, sizeof cwd) ? cwd : "(unknown)");
	const char *file = getenv("TIMELINE_FILE");
	struct stat st;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", file ? file : "");
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (slash && stat(dir, &st) == 0)
		fprintf(out, "appdir %u %o\n", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	else
		fprintf(out, "appdir none\n");
	if (setuid(0) == 0)
		fprintf(out, "regain yes\n");
	else
		fprintf(out, "regain %s\n", strerror(errno));
	fputs(fds, out);

	int rc = tl_init(NULL);
	fprintf(out, "recorder %s\n", rc == 0 ? tl_recorder_name() : strerror(-rc));
	fclose(out);
	if (rc == 0) {
		{
			TL_TRACE_EVENT0("it", "identity");
		}
		tl_shutdown();
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "flood") == 0)
		return flood(strtol(argv[2], NULL, 10));
	if (argc == 2 && strcmp(argv[1], "events") == 0)
		return events();
	if (argc == 3 && strcmp(argv[1], "identity") == 0)
		return identity(argv[2]);
	fprintf(stderr, "usage: traced_child flood N | traced_child events | traced_child identity "
	                "FILE\n");
	return 2;
}
