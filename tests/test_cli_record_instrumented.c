/*
 * End to end on the real tracefs: a program instrumented with the library,
 * run under `timeline record --app-recorder systrace` (the systrace recorder),
 * gives exactly the expected markers, and `timeline slices` rebuilds the
 * slices, async slices, counters and instants from them; names with '|', a
 * newline and 2000 bytes; a forked child; a process that exits mid-slice.
 * The JSON output carries the same slices plus the per-CPU scheduling.
 *
 * Needs root; mounts tracefs when it is not mounted; otherwise skipped with
 * the reason printed (exit 77).
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRACING_DIR "/sys/kernel/tracing"

static const char *cli, *child;
static const char *trace_path, *slices_path;
static char *trace_text, *slices_text;
static int parent_pid, child_pid;

static int tracefs_ready(void)
{
	struct stat st;
	if (stat(TRACING_DIR "/instances", &st) == 0)
		return 1;
	return mount("nodev", TRACING_DIR, "tracefs", 0, NULL) == 0;
}

/* Records `traced_child events` once; every test reads the results. */
static int setup(void **state)
{
	(void)state;
	trace_path = tl_test_path("instrumented", ".txt");
	slices_path = tl_test_path("instrumented", ".slices");
	const char *out = tl_test_path("instrumented", ".out");
	if (tl_test_run("'%s' record --app-recorder systrace -o '%s' -- '%s' events > '%s' "
	                "2>/dev/null",
	                cli, trace_path,
			child, out) != 0)
		return -1;
	char *pids = tl_test_read_file(out, NULL);
	if (!pids || sscanf(pids, "pids %d %d", &parent_pid, &child_pid) != 2) {
		free(pids);
		return -1;
	}
	free(pids);
	if (tl_test_run("'%s' slices '%s' > '%s'", cli, trace_path, slices_path) != 0)
		return -1;
	trace_text = tl_test_read_file(trace_path, NULL);
	slices_text = tl_test_read_file(slices_path, NULL);
	return trace_text && slices_text ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(trace_text);
	free(slices_text);
	return 0;
}

/* The line of `timeline slices` output that starts with kind and contains
 * every given "key=value" fragment; NULL when none. */
static const char *find_item(const char *kind, const char *a, const char *b, const char *c)
{
	size_t klen = strlen(kind);
	for (const char *line = slices_text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *copy = strndup(line, len);
		int hit = strncmp(copy, kind, klen) == 0 && copy[klen] == ' ' && strstr(copy, a) &&
			  (!b || strstr(copy, b)) && (!c || strstr(copy, c));
		free(copy);
		if (hit)
			return line;
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

static void expect_marker(const char *fmt, int pid)
{
	char payload[256];
	snprintf(payload, sizeof payload, fmt, pid);
	char needle[300];
	snprintf(needle, sizeof needle, ": tracing_mark_write: %s\n", payload);
	if (!strstr(trace_text, needle))
		fail_msg("no marker line '%s'", payload);
}

static void test_every_event_type_becomes_its_marker(void **state)
{
	(void)state;
	expect_marker("B|%d|outer", parent_pid);
	expect_marker("B|%d|inner", parent_pid);
	expect_marker("E|%d", parent_pid);
	expect_marker("C|%d|depth|2", parent_pid);
	expect_marker("C|%d|depth|0", parent_pid);
	expect_marker("I|%d|tick", parent_pid);
	expect_marker("N|%d|it|proc", parent_pid);
	expect_marker("S|%d|load|7", parent_pid);
	expect_marker("F|%d|load|7", parent_pid);
	expect_marker("B|%d|a b c", parent_pid);
	expect_marker("B|%d|child work", child_pid);
	expect_marker("B|%d|unfinished", parent_pid);
}

static void test_nested_slices_are_rebuilt(void **state)
{
	(void)state;
	char pid[32];
	snprintf(pid, sizeof pid, "pid=%d ", parent_pid);
	assert_non_null(find_item("slice", "name=\"outer\"", pid, "depth=0"));
	assert_non_null(find_item("slice", "name=\"inner\"", pid, "depth=1"));
	assert_null(find_item("slice", "name=\"outer\"", "dur=-1", NULL));
}

static void test_counters_async_and_instants_are_rebuilt(void **state)
{
	(void)state;
	char pid[32];
	snprintf(pid, sizeof pid, "pid=%d", parent_pid);
	assert_non_null(find_item("counter", "name=\"depth\"", "value=2", pid));
	assert_non_null(find_item("counter", "name=\"depth\"", "value=0", pid));
	/* begun on one thread, ended on another: one async slice, ended */
	const char *load = find_item("async", "name=\"load\"", pid, "cookie=7");
	assert_non_null(load);
	assert_null(find_item("async", "name=\"load\"", "dur=-1", NULL));
	assert_non_null(find_item("instant", "name=\"tick\"", pid, "scope=thread"));
	assert_non_null(find_item("instant", "name=\"proc\"", "track=\"it\"", "scope=process"));
}

static void test_names_are_made_safe_and_capped(void **state)
{
	(void)state;
	/* '|' and the newline are replaced: one slice, one line */
	assert_non_null(find_item("slice", "name=\"a b c\"", "depth=0", NULL));
	/* the 2000-byte name is cut so that the payload is 1023 bytes */
	char prefix[64];
	int n = snprintf(prefix, sizeof prefix, "B|%d|", parent_pid);
	size_t kept = 1023 - (size_t)n;
	char *name = malloc(kept + 16);
	assert_non_null(name);
	strcpy(name, "name=\"");
	memset(name + 6, 'x', kept);
	strcpy(name + 6 + kept, "\"");
	assert_non_null(find_item("slice", name, NULL, NULL));
	free(name);
}

static void test_forked_child_slices_carry_its_pid(void **state)
{
	(void)state;
	char pid[32];
	snprintf(pid, sizeof pid, "pid=%d ", child_pid);
	assert_non_null(find_item("slice", "name=\"child work\"", pid, NULL));
}

static void test_slice_open_at_exit_is_kept_unended(void **state)
{
	(void)state;
	assert_non_null(find_item("slice", "name=\"unfinished\"", "dur=-1", NULL));
}

static void test_json_output_has_slices_and_cpu_scheduling(void **state)
{
	(void)state;
	const char *json = tl_test_path("instrumented", ".json");
	assert_int_equal(tl_test_run("'%s' record --app-recorder systrace -o '%s' -- '%s' events "
	                             ">/dev/null 2>&1",
	                             cli,
				     json, child),
			 0);
	assert_int_equal(
	    tl_test_run("python3 -c 'import json,sys\n"
			"d = json.load(open(sys.argv[1]))\n"
			"ev = d[\"traceEvents\"]\n"
			"names = {e.get(\"name\") for e in ev if e.get(\"ph\") in (\"B\", \"X\")}\n"
			"assert {\"outer\", \"inner\", \"child work\"} <= names, names\n"
			"cpus = [e for e in ev if e.get(\"ph\") == \"M\" and "
			"e[\"args\"].get(\"name\") == \"CPUs\"]\n"
			"assert cpus, \"no CPUs process\"\n"
			"cpu_pid = cpus[0][\"pid\"]\n"
			"assert any(e.get(\"ph\") == \"X\" and e[\"pid\"] == cpu_pid for e in ev)\n"
			"assert any(e.get(\"ph\") == \"C\" and e[\"name\"] == \"depth\" for e in ev)\n"
			"assert any(e.get(\"ph\") == \"b\" and e[\"name\"] == \"load\" for e in ev)' '%s'",
			json),
	    0);
}

int main(void)
{
	tl_test_require_clock_path();
#ifndef TL_HAVE_TRACEFS
	printf("skipped: built without libtracefs (TIMELINE_WITH_TRACEFS=OFF), the CLI has no "
	       "record\n");
	return TL_TEST_SKIP_EXIT;
#endif
	cli = tl_test_cli();
	child = getenv("TL_TRACED_CHILD");
	if (!cli || !child || !*child) {
		printf("skipped: TIMELINE_CLI or TL_TRACED_CHILD is not set (run through ctest)\n");
		return TL_TEST_SKIP_EXIT;
	}
	if (geteuid() != 0) {
		printf("skipped: recording from tracefs needs root\n");
		return TL_TEST_SKIP_EXIT;
	}
	if (!tracefs_ready()) {
		printf("skipped: tracefs is not mounted and cannot be mounted at %s: %s\n",
		       TRACING_DIR, strerror(errno));
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_event_type_becomes_its_marker),
		cmocka_unit_test(test_nested_slices_are_rebuilt),
		cmocka_unit_test(test_counters_async_and_instants_are_rebuilt),
		cmocka_unit_test(test_names_are_made_safe_and_capped),
		cmocka_unit_test(test_forked_child_slices_carry_its_pid),
		cmocka_unit_test(test_slice_open_at_exit_is_kept_unended),
		cmocka_unit_test(test_json_output_has_slices_and_cpu_scheduling),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
