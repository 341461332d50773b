/*
 * The child process a benchmark's measure runs in (bench_child.h).
 */
#include "bench_child.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_parse_sizes(const char *list, double *sizes, int max, int zero_ok)
{
	int n = 0;
	const char *p = list;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || v < 0 || (v == 0 && !zero_ok) || n == max)
			return -1;
		sizes[n++] = v;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return n;
}

bench_child bench_child_run(void (*child)(void *arg, int result_fd), void *arg, void *result,
                            size_t result_size)
{
	bench_child c = {.exit_status = -1};
	int fds[2];
	if (pipe(fds) != 0)
		return c;
	fflush(NULL);
	double start = bench_now_seconds();
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return c;
	}
	if (pid == 0) {
		close(fds[0]);
		child(arg, fds[1]);
		_exit(1); /* not reached: the child exits */
	}
	close(fds[1]);
	int status = 0;
	struct rusage ru;
	pid_t got;
	while ((got = wait4(pid, &status, 0, &ru)) < 0 && errno == EINTR)
		;
	c.seconds = bench_now_seconds() - start;
	if (got == pid && WIFEXITED(status)) {
		c.exit_status = WEXITSTATUS(status);
		c.ok = c.exit_status == 0;
		c.peak_rss_kb = ru.ru_maxrss;
	}
	if (c.ok && result_size && read(fds[0], result, result_size) != (ssize_t)result_size)
		c.ok = 0;
	close(fds[0]);
	return c;
}
