/*
 * uftrace beside the library's hooks: `uftrace record` (Debian's uftrace)
 * on the loop of bench_loop.c built with -pg (mcount: uftrace's own
 * instrumentation, which its documentation leads with) and built with
 * -finstrument-functions (the hooks ours use), and the same loop linked
 * with timeline::instrument recording into a ring. Every program times its
 * own loop (ns per call, the best slice of a run); each row is the best of
 * `reps` runs. The target compares with the -pg build; the
 * -finstrument-functions ratio is printed beside it. Skipped, with the
 * reason printed, when uftrace is not installed or a program cannot run.
 */
#include "bench.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TARGET_UFTRACE_OVER_OURS 5.0
#define LOOP_CALLS "2000000"

static struct {
	bool measured;
	char skip_reason[200];
	double uftrace_ns;    /* per call under uftrace record, -pg */
	double uftrace_fi_ns; /* the same, -finstrument-functions */
	double ours_ns;       /* per call with the library's hooks, ring */
} uftrace;

/* Whether `name` is an executable in PATH. */
static bool in_path(const char *name)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	char dir[4096];
	while (*path) {
		size_t len = strcspn(path, ":");
		snprintf(dir, sizeof dir, "%.*s/%s", (int)len, path, name);
		if (access(dir, X_OK) == 0)
			return true;
		path += len + (path[len] == ':');
	}
	return false;
}

/* Runs a shell command whose last output line is ns per call; NAN and a
 * reason when it fails. */
static double run_ns(const char *command, char *reason, size_t size)
{
	FILE *p = popen(command, "r");
	if (!p) {
		snprintf(reason, size, "cannot run: %s", strerror(errno));
		return NAN;
	}
	char line[256];
	double ns = NAN;
	while (fgets(line, sizeof line, p)) {
		char *end;
		double v = strtod(line, &end);
		if (end != line)
			ns = v;
	}
	int status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || isnan(ns)) {
		snprintf(reason, size, "'%s' failed (status %d)", command, status);
		return NAN;
	}
	return ns;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void bench_uftrace_measure(int reps)
{
	if (!in_path("uftrace")) {
		snprintf(uftrace.skip_reason, sizeof uftrace.skip_reason,
		         "uftrace is not installed (Debian package uftrace)");
		return;
	}
	char dir[] = "/tmp/timeline-bench-uftrace.XXXXXX";
	if (!mkdtemp(dir)) {
		snprintf(uftrace.skip_reason, sizeof uftrace.skip_reason, "mkdtemp: %s",
		         strerror(errno));
		return;
	}
	char record[1024], record_fi[1024], ours[1024];
	snprintf(record, sizeof record,
	         "uftrace record -d '%s/uftrace.data' '%s' " LOOP_CALLS " 2>/dev/null", dir,
	         BENCH_LOOP_PG);
	snprintf(record_fi, sizeof record_fi,
	         "uftrace record -d '%s/uftrace.data' '%s' " LOOP_CALLS " 2>/dev/null", dir,
	         BENCH_LOOP_PLAIN);
	snprintf(ours, sizeof ours, "'%s' " LOOP_CALLS, BENCH_LOOP_TIMELINE_PATH);
	uftrace.uftrace_ns = INFINITY;
	uftrace.uftrace_fi_ns = INFINITY;
	uftrace.ours_ns = INFINITY;
	for (int rep = 0; rep < reps; rep++) {
		const char *commands[] = {record, record_fi, ours};
		double *best[] = {&uftrace.uftrace_ns, &uftrace.uftrace_fi_ns, &uftrace.ours_ns};
		for (int i = 0; i < 3; i++) {
			double ns =
			    run_ns(commands[i], uftrace.skip_reason, sizeof uftrace.skip_reason);
			nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
			if (isnan(ns))
				return;
			if (mkdir(dir, 0700) != 0) {
				snprintf(uftrace.skip_reason, sizeof uftrace.skip_reason,
				         "mkdir %s: %s", dir, strerror(errno));
				return;
			}
			if (ns < *best[i])
				*best[i] = ns;
		}
	}
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	uftrace.measured = true;
	uftrace.skip_reason[0] = '\0';
}

double bench_uftrace_over_ours(void)
{
	return uftrace.measured ? uftrace.uftrace_ns / uftrace.ours_ns : NAN;
}

void bench_uftrace_print_table(void)
{
	printf("uftrace: the same loop of calls of an empty function\n");
	if (!uftrace.measured) {
		printf("  skipped: %s\n\n", uftrace.skip_reason);
		return;
	}
	printf("  %-52s %9.2f ns/call\n", "uftrace record, built with -pg", uftrace.uftrace_ns);
	printf("  %-52s %9.2f ns/call\n", "uftrace record, built with -finstrument-functions",
	       uftrace.uftrace_fi_ns);
	printf("  %-52s %9.2f ns/call\n", "timeline::instrument (-finstrument-functions), ring",
	       uftrace.ours_ns);
	printf("  %-52s %9.2f x    (target >= %.0f x: %s)\n", "uftrace record -pg / timeline",
	       bench_uftrace_over_ours(), TARGET_UFTRACE_OVER_OURS,
	       bench_uftrace_over_ours() >= TARGET_UFTRACE_OVER_OURS ? "PASS" : "MISS");
	printf("  %-52s %9.2f x\n\n", "uftrace record -finstrument-functions / timeline",
	       uftrace.uftrace_fi_ns / uftrace.ours_ns);
}

void bench_uftrace_print_json(void)
{
	printf(",\"uftrace\":{\"measured\":%s", uftrace.measured ? "true" : "false");
	if (!uftrace.measured) {
		printf(",\"skipped\":\"");
		for (const char *s = uftrace.skip_reason; *s; s++)
			putchar(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ? '?' : *s);
		printf("\"}");
		return;
	}
	printf(",\"uftrace_pg_ns_per_call\":%.3f,\"uftrace_finstrument_ns_per_call\":%.3f,"
	       "\"ours_ns_per_call\":%.3f,\"ratio\":%.3f,\"ratio_finstrument\":%.3f,"
	       "\"limit\":%.1f,\"met\":%s}",
	       uftrace.uftrace_ns, uftrace.uftrace_fi_ns, uftrace.ours_ns,
	       bench_uftrace_over_ours(), uftrace.uftrace_fi_ns / uftrace.ours_ns,
	       TARGET_UFTRACE_OVER_OURS,
	       bench_uftrace_over_ours() >= TARGET_UFTRACE_OVER_OURS ? "true" : "false");
}
