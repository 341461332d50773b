/*
 * uftrace beside the library's hooks: `uftrace record` (Debian's uftrace)
 * on the loop of bench_loop.c built with -pg (mcount: uftrace's own
 * instrumentation, which its documentation leads with) and built with
 * -finstrument-functions (the hooks ours use), and the same loop linked
 * with timeline::instrument recording into a ring, once per clock path the
 * bench measures. Every program times its own loop (ns per call, the best
 * slice of a run).
 *
 * The programs run in rounds, each once per round, in an order that turns
 * round by round (forward, then backward), so that a neighbour's load
 * spreads over all of them instead of landing on one: each figure is the
 * best and the median of its rounds, and each ratio is given three ways
 * (best over best, median over median, and the median of the ratios of
 * the two programs within one round). The target compares with the -pg
 * build, best over best; the -finstrument-functions ratio is printed
 * beside it. Skipped, with the reason printed, when uftrace is not
 * installed or a program cannot run.
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
#define LOOP_CALLS "1000000"
#define MAX_ROUNDS 16

enum program { UFTRACE_PG, UFTRACE_FI, OURS_TSC, OURS_VDSO, PROGRAM_COUNT };

static const char *const program_labels[PROGRAM_COUNT] = {
    [UFTRACE_PG] = "uftrace record, built with -pg",
    [UFTRACE_FI] = "uftrace record, built with -finstrument-functions",
    [OURS_TSC] = "timeline::instrument, ring, TSC path",
    [OURS_VDSO] = "timeline::instrument, ring, vDSO path",
};

static struct {
	bool measured;
	char skip_reason[200];
	int rounds;
	bool ran[PROGRAM_COUNT];              /* ours: the clock paths the bench measures */
	double ns[PROGRAM_COUNT][MAX_ROUNDS]; /* per call, each round */
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

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (n >= 1). */
static double median(const double *values, int n)
{
	double sorted[MAX_ROUNDS];
	memcpy(sorted, values, (size_t)n * sizeof *values);
	qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static double best(enum program p)
{
	double b = INFINITY;
	for (int r = 0; r < uftrace.rounds; r++)
		if (uftrace.ns[p][r] < b)
			b = uftrace.ns[p][r];
	return b;
}

static double median_of(enum program p)
{
	return median(uftrace.ns[p], uftrace.rounds);
}

/* The median, over the rounds, of a's figure over b's in the same round. */
static double median_ratio(enum program a, enum program b)
{
	double ratios[MAX_ROUNDS];
	for (int r = 0; r < uftrace.rounds; r++)
		ratios[r] = uftrace.ns[a][r] / uftrace.ns[b][r];
	return median(ratios, uftrace.rounds);
}

static enum program ours(enum bench_path path)
{
	return path == BENCH_PATH_TSC ? OURS_TSC : OURS_VDSO;
}

void bench_uftrace_measure(int rounds)
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
	/* ours on the TSC path where the library takes it with the
	 * environment as it is (the bench's TSC path); on the vDSO path
	 * with TIMELINE_NO_TSC=1 */
	char commands[PROGRAM_COUNT][1024];
	snprintf(commands[UFTRACE_PG], sizeof commands[0],
	         "uftrace record -d '%s/uftrace.data' '%s' " LOOP_CALLS " 2>/dev/null", dir,
	         BENCH_LOOP_PG);
	snprintf(commands[UFTRACE_FI], sizeof commands[0],
	         "uftrace record -d '%s/uftrace.data' '%s' " LOOP_CALLS " 2>/dev/null", dir,
	         BENCH_LOOP_PLAIN);
	snprintf(commands[OURS_TSC], sizeof commands[0], "'%s' " LOOP_CALLS,
	         BENCH_LOOP_TIMELINE_PATH);
	snprintf(commands[OURS_VDSO], sizeof commands[0], "TIMELINE_NO_TSC=1 '%s' " LOOP_CALLS,
	         BENCH_LOOP_TIMELINE_PATH);
	uftrace.ran[UFTRACE_PG] = uftrace.ran[UFTRACE_FI] = true;
	uftrace.ran[OURS_TSC] = bench_path_available(BENCH_PATH_TSC);
	uftrace.ran[OURS_VDSO] = bench_path_available(BENCH_PATH_VDSO);
	uftrace.rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	for (int round = 0; round < uftrace.rounds; round++) {
		for (int i = 0; i < PROGRAM_COUNT; i++) {
			int p = round % 2 ? PROGRAM_COUNT - 1 - i : i;
			if (!uftrace.ran[p])
				continue;
			double ns =
			    run_ns(commands[p], uftrace.skip_reason, sizeof uftrace.skip_reason);
			nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
			if (isnan(ns))
				return;
			if (mkdir(dir, 0700) != 0) {
				snprintf(uftrace.skip_reason, sizeof uftrace.skip_reason,
				         "mkdir %s: %s", dir, strerror(errno));
				return;
			}
			uftrace.ns[p][round] = ns;
		}
	}
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	uftrace.measured = true;
	uftrace.skip_reason[0] = '\0';
}

double bench_uftrace_over_ours(enum bench_path path)
{
	enum program o = ours(path);
	return uftrace.measured && uftrace.ran[o] ? best(UFTRACE_PG) / best(o) : NAN;
}

void bench_uftrace_print_table(void)
{
	printf("uftrace: the same loop of calls of an empty function\n");
	if (!uftrace.measured) {
		printf("  skipped: %s\n\n", uftrace.skip_reason);
		return;
	}
	printf("  %d rounds, every program once per round, the order turned round by round;\n"
	       "  ns per call of each program (its best slice of a run), best and median of the "
	       "rounds\n",
	       uftrace.rounds);
	printf("  %-58s %9s %9s\n", "", "best", "median");
	for (int p = 0; p < PROGRAM_COUNT; p++) {
		printf("  %-58s", program_labels[p]);
		if (uftrace.ran[p])
			printf(" %9.2f %9.2f ns/call\n", best(p), median_of(p));
		else
			printf(" %9s\n", "skipped");
	}
	printf("  %-58s %9s %9s %9s\n", "ratio", "best", "median", "in round");
	static const enum program uftrace_programs[] = {UFTRACE_PG, UFTRACE_FI};
	for (int path = 0; path < BENCH_PATH_COUNT; path++) {
		enum program o = ours((enum bench_path)path);
		if (!uftrace.ran[o])
			continue;
		for (size_t u = 0; u < 2; u++) {
			enum program up = uftrace_programs[u];
			char label[96];
			snprintf(label, sizeof label, "uftrace %s / timeline::instrument, %s",
			         up == UFTRACE_PG ? "-pg" : "-finstrument-functions",
			         bench_path_label((enum bench_path)path));
			printf("  %-58s %8.2fx %8.2fx %8.2fx", label, best(up) / best(o),
			       median_of(up) / median_of(o), median_ratio(up, o));
			if (up == UFTRACE_PG)
				printf("  (target >= %.0f x: %s)", TARGET_UFTRACE_OVER_OURS,
				       best(up) / best(o) >= TARGET_UFTRACE_OVER_OURS ? "PASS"
				                                                      : "MISS");
			printf("\n");
		}
	}
	printf("  (\"in round\": the median of the ratios of the two programs' figures within "
	       "one round)\n\n");
}

/* The figures of program p: "<key>_ns_per_call" (best) and
 * "<key>_ns_per_call_median", null when it did not run. */
static void json_program(const char *key, enum program p)
{
	if (uftrace.ran[p])
		printf(",\"%s_ns_per_call\":%.3f,\"%s_ns_per_call_median\":%.3f", key, best(p), key,
		       median_of(p));
	else
		printf(",\"%s_ns_per_call\":null,\"%s_ns_per_call_median\":null", key, key);
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
	/* ours_ns_per_call, ratio, ratio_finstrument and met: the path the
	 * other targets measured first (the TSC where the bench measures it) */
	enum bench_path first = uftrace.ran[OURS_TSC] ? BENCH_PATH_TSC : BENCH_PATH_VDSO;
	enum program o = ours(first);
	printf(",\"rounds\":%d", uftrace.rounds);
	json_program("uftrace_pg", UFTRACE_PG);
	json_program("uftrace_finstrument", UFTRACE_FI);
	json_program("ours_tsc", OURS_TSC);
	json_program("ours_vdso", OURS_VDSO);
	printf(",\"ours_path\":\"%s\",\"ours_ns_per_call\":%.3f,\"ratio\":%.3f,"
	       "\"ratio_median\":%.3f,\"ratio_in_round\":%.3f,\"ratio_finstrument\":%.3f,"
	       "\"limit\":%.1f,\"met\":%s}",
	       bench_path_key(first), best(o), best(UFTRACE_PG) / best(o),
	       median_of(UFTRACE_PG) / median_of(o), median_ratio(UFTRACE_PG, o),
	       best(UFTRACE_FI) / best(o), TARGET_UFTRACE_OVER_OURS,
	       best(UFTRACE_PG) / best(o) >= TARGET_UFTRACE_OVER_OURS ? "true" : "false");
}
