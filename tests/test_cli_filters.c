/*
 * The filters of `timeline slices`, `convert` and `stats` (tools/filters.h):
 * the window's edges, globs, threads and processes, what `convert` writes
 * with them, and the errors each command gives for a bad filter.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

static const char *cli;
static char window_trace[4096];  /* the window's edges, first event at 0 */
static char shifted_trace[4096]; /* the same, one second later */
static char flow_trace[4096];    /* flows and args */
static char snapshot[4096];      /* a binary snapshot written by `timeline demo` */

/*
 * Times in microseconds; the window of the tests is [200, 300).
 * Thread 1: slices on each side of the window's edges. Thread 2: one that
 * runs past `to`. Thread 3: instants. Threads 4 and 5: slices never ended.
 * Counter c at 199, 200, 299 and 300.
 */
static const char window_events[] =
    "{\"ph\":\"X\",\"name\":\"before\",\"ts\":%d,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"ends_at_from\",\"ts\":%d,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"across_from\",\"ts\":%d,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"ends_at_to\",\"ts\":%d,\"dur\":50,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"at_to\",\"ts\":%d,\"dur\":10,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"name\":\"at_from\",\"ts\":%d,\"dur\":10,\"pid\":1,\"tid\":2},"
    "{\"ph\":\"X\",\"name\":\"across_to\",\"ts\":%d,\"dur\":100,\"pid\":1,\"tid\":2},"
    "{\"ph\":\"i\",\"name\":\"instant_before_from\",\"ts\":%d,\"pid\":1,\"tid\":3,\"s\":\"t\"},"
    "{\"ph\":\"i\",\"name\":\"instant_at_from\",\"ts\":%d,\"pid\":1,\"tid\":3,\"s\":\"t\"},"
    "{\"ph\":\"i\",\"name\":\"instant_at_to\",\"ts\":%d,\"pid\":1,\"tid\":3,\"s\":\"t\"},"
    "{\"ph\":\"B\",\"name\":\"open_before\",\"ts\":%d,\"pid\":1,\"tid\":4},"
    "{\"ph\":\"B\",\"name\":\"open_at_to\",\"ts\":%d,\"pid\":1,\"tid\":5},"
    "{\"ph\":\"C\",\"name\":\"c\",\"ts\":%d,\"pid\":1,\"args\":{\"v\":1}},"
    "{\"ph\":\"C\",\"name\":\"c\",\"ts\":%d,\"pid\":1,\"args\":{\"v\":2}},"
    "{\"ph\":\"C\",\"name\":\"c\",\"ts\":%d,\"pid\":1,\"args\":{\"v\":3}},"
    "{\"ph\":\"C\",\"name\":\"c\",\"ts\":%d,\"pid\":1,\"args\":{\"v\":4}}";

static void write_window_trace(char *path, size_t len, const char *stem, int at)
{
	snprintf(path, len, "%s", tl_test_path(stem, ".json"));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\":[", f);
	fprintf(f, window_events, at + 0, at + 100, at + 150, at + 250, at + 300, at + 200,
	        at + 290, at + 199, at + 200, at + 300, at + 50, at + 300, at + 199, at + 200,
	        at + 299, at + 300);
	fputs("]}\n", f);
	fclose(f);
}

/* Writes a JSON trace with the given events to a fresh path (static storage). */
static void write_json(char *path, size_t len, const char *stem, const char *events)
{
	snprintf(path, len, "%s", tl_test_path(stem, ".json"));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\":[%s]}\n", events);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	cli = tl_test_cli();
	write_window_trace(window_trace, sizeof window_trace, "filters-window", 0);
	write_window_trace(shifted_trace, sizeof shifted_trace, "filters-shifted", 1000000);
	/* src -> dst joins slices on either side of 100 us; near -> far both
	 * after it. near carries an arg, src one too. */
	write_json(flow_trace, sizeof flow_trace, "filters-flows",
	           "{\"ph\":\"X\",\"name\":\"src\",\"cat\":\"a\",\"ts\":0,\"dur\":10,\"pid\":1,"
	           "\"tid\":1,\"bind_id\":1,\"flow_out\":true,\"args\":{\"k\":1}},"
	           "{\"ph\":\"X\",\"name\":\"dst\",\"cat\":\"a\",\"ts\":500,\"dur\":10,\"pid\":1,"
	           "\"tid\":2,\"bind_id\":1,\"flow_in\":true},"
	           "{\"ph\":\"X\",\"name\":\"near\",\"cat\":\"b\",\"ts\":200,\"dur\":10,\"pid\":1,"
	           "\"tid\":1,\"bind_id\":2,\"flow_out\":true,\"args\":{\"k\":2}},"
	           "{\"ph\":\"X\",\"name\":\"far\",\"cat\":\"b\",\"ts\":250,\"dur\":10,\"pid\":1,"
	           "\"tid\":2,\"bind_id\":2,\"flow_in\":true}");
	snprintf(snapshot, sizeof snapshot, "%s", tl_test_path("filters-demo", ".tlsnap"));
	return tl_test_run("%s demo --seconds 0.2 -o %s >/dev/null", cli, snapshot) == 0 ? 0 : -1;
}

/* The line of `text` that holds name="NAME", or NULL (static storage). */
static const char *line_named(const char *text, const char *name)
{
	static char line[4096];
	char needle[256];
	snprintf(needle, sizeof needle, " name=\"%s\"", name);
	const char *hit = strstr(text, needle);
	if (!hit)
		return NULL;
	const char *start = hit;
	while (start > text && start[-1] != '\n')
		start--;
	size_t n = strcspn(start, "\n");
	snprintf(line, sizeof line, "%.*s", (int)n, start);
	return line;
}

/* `slices` of the window trace with the window [200 us, 300 us). */
static char *window_slices(void)
{
	/* (static: gcc -O3 takes a pointer returned through a local's
	 * address for one into that local, -Wdangling-pointer) */
	static char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --from 200us --to 300us", window_trace), 0);
	return out;
}

static void test_window_keeps_a_slice_begun_before_from_whole(void **state)
{
	(void)state;
	char *out = window_slices();
	const char *line = line_named(out, "across_from");
	assert_non_null(line);
	assert_non_null(strstr(line, "slice ts=150000 dur=100000 "));
	free(out);
}

static void test_window_drops_a_slice_that_ends_at_from(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_null(line_named(out, "ends_at_from"));
	assert_null(line_named(out, "before"));
	free(out);
}

static void test_window_keeps_a_slice_that_begins_at_from(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_non_null(line_named(out, "at_from"));
	free(out);
}

static void test_window_keeps_a_slice_that_ends_at_to(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_non_null(line_named(out, "ends_at_to"));
	free(out);
}

static void test_window_keeps_a_slice_running_past_to_whole(void **state)
{
	(void)state;
	char *out = window_slices();
	const char *line = line_named(out, "across_to");
	assert_non_null(line);
	assert_non_null(strstr(line, "slice ts=290000 dur=100000 "));
	free(out);
}

static void test_window_drops_a_slice_that_begins_at_to(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_null(line_named(out, "at_to"));
	assert_null(line_named(out, "open_at_to"));
	free(out);
}

static void test_window_keeps_instants_in_from_to_half_open(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_null(line_named(out, "instant_before_from"));
	assert_non_null(line_named(out, "instant_at_from"));
	assert_null(line_named(out, "instant_at_to"));
	free(out);
}

static void test_window_keeps_a_slice_never_ended_that_began_before(void **state)
{
	(void)state;
	char *out = window_slices();
	const char *line = line_named(out, "open_before");
	assert_non_null(line);
	assert_non_null(strstr(line, "slice ts=50000 dur=-1 "));
	free(out);
}

static void test_window_keeps_counter_samples_in_from_to_half_open(void **state)
{
	(void)state;
	char *out = window_slices();
	assert_null(strstr(out, "counter ts=199000 "));
	assert_non_null(strstr(out, "counter ts=200000 "));
	assert_non_null(strstr(out, "counter ts=299000 "));
	assert_null(strstr(out, "counter ts=300000 "));
	free(out);
}

/* What the window keeps, by name and kind, as "kind name" words. */
static void kept_names(const char *out, char *names, size_t len)
{
	names[0] = '\0';
	for (const char *line = out, *eol; *line; line = *eol ? eol + 1 : eol) {
		eol = line + strcspn(line, "\n");
		const char *name = strstr(line, " name=\"");
		if (!name || name > eol)
			continue;
		name += 7;
		size_t n = strcspn(name, "\"");
		size_t kind = strcspn(line, " ");
		size_t used = strlen(names);
		snprintf(names + used, len - used, "%s%.*s %.*s", used ? "," : "", (int)kind, line,
		         (int)n, name);
	}
}

static void test_window_relative_times_count_from_the_first_event(void **state)
{
	(void)state;
	char *a, *b, names_a[4096], names_b[4096];
	assert_int_equal(tl_test_run_cli(&a, NULL, "slices %s --from 200us --to 300us", window_trace), 0);
	assert_int_equal(tl_test_run_cli(&b, NULL, "slices %s --from 200us --to 300us", shifted_trace), 0);
	kept_names(a, names_a, sizeof names_a);
	kept_names(b, names_b, sizeof names_b);
	assert_true(names_a[0]);
	assert_string_equal(names_a, names_b);
	free(a);
	free(b);
}

static void test_window_absolute_times_start_with_at(void **state)
{
	(void)state;
	char *a, *b, names_a[4096], names_b[4096];
	assert_int_equal(tl_test_run_cli(&a, NULL, "slices %s --from 200us --to 300us", window_trace), 0);
	assert_int_equal(
	    tl_test_run_cli(&b, NULL, "slices %s --from @1.0002s --to @1000300000ns", shifted_trace), 0);
	kept_names(a, names_a, sizeof names_a);
	kept_names(b, names_b, sizeof names_b);
	assert_string_equal(names_a, names_b);
	free(a);
	free(b);
}

static void test_window_without_to_runs_to_the_end(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --from 300us", window_trace), 0);
	assert_non_null(line_named(out, "at_to"));
	assert_non_null(line_named(out, "across_to"));
	assert_null(line_named(out, "ends_at_to"));
	free(out);
}

static void test_name_glob_keeps_matching_slices_and_counters(void **state)
{
	(void)state;
	char *out, names[4096];
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --name 'at_*' --name 'c*'", window_trace),
	                 0);
	kept_names(out, names, sizeof names);
	assert_string_equal(names, "slice at_from,slice at_to,counter c v,counter c v,counter c "
	                           "v,counter c v");
	free(out);
}

static void test_cat_glob_keeps_matching_slices(void **state)
{
	(void)state;
	char *out, names[4096];
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --cat 'b*'", flow_trace), 0);
	kept_names(out, names, sizeof names);
	assert_string_equal(names, "slice near,slice far");
	free(out);
}

static void test_tid_keeps_that_threads_items(void **state)
{
	(void)state;
	char *out, names[4096];
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --tid 2 --kind slice,thread", window_trace),
	                 0);
	kept_names(out, names, sizeof names);
	assert_string_equal(names, "slice at_from,slice across_to");
	assert_int_equal(tl_test_count(out, "\nthread tid="), 1);
	assert_non_null(strstr(out, "\nthread tid=2 pid=1"));
	free(out);
}

static void test_pid_keeps_that_processes_items(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --pid 1", window_trace), 0);
	assert_non_null(line_named(out, "before"));
	assert_non_null(strstr(out, "counter ts="));
	free(out);
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --pid 2", window_trace), 0);
	assert_string_equal(out, "");
	free(out);
}

static void test_different_options_must_all_pass(void **state)
{
	(void)state;
	char *out, names[4096];
	assert_int_equal(
	    tl_test_run_cli(&out, NULL, "slices %s --name 'a*' --tid 1 --from 200us", window_trace), 0);
	kept_names(out, names, sizeof names);
	assert_string_equal(names, "slice across_from,slice at_to");
	free(out);
}

/* A slice kept keeps its own thread timestamps, not those of the slice
 * that was at its place before the filter. */
static void test_slices_keep_their_own_thread_times(void **state)
{
	(void)state;
	char path[4096], *out;
	write_json(path, sizeof path, "filters-thread-times",
	           "{\"ph\":\"X\",\"name\":\"first\",\"ts\":0,\"dur\":10,\"tts\":1,\"tdur\":2,"
	           "\"pid\":1,\"tid\":1},"
	           "{\"ph\":\"X\",\"name\":\"second\",\"ts\":20,\"dur\":10,\"tts\":7,"
	           "\"tdur\":8,\"pid\":1,\"tid\":1},"
	           "{\"ph\":\"X\",\"name\":\"third\",\"ts\":40,\"dur\":10,\"pid\":1,\"tid\":1}");
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --name second --name third", path),
	                 0);
	assert_non_null(strstr(line_named(out, "second"), " thread_ts=7000 thread_dur=8000 "));
	assert_non_null(strstr(line_named(out, "third"), " thread_ts=null thread_dur=null "));
	free(out);
}

/* slices keeps a flow when both its slices pass, an arg with its slice. */
static void test_slices_keeps_flows_with_both_ends_and_args_with_their_slice(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(
	    tl_test_run_cli(&out, NULL, "slices %s --from 150us --kind slice,flow,arg", flow_trace), 0);
	assert_non_null(strstr(out, "\nflow out=\"near\" in=\"far\"\n"));
	assert_null(strstr(out, "out=\"src\""));
	assert_non_null(strstr(out, "\narg slice=\"near\" key=\"args.k\" value=2\n"));
	assert_null(strstr(out, "arg slice=\"src\""));
	free(out);
}

static void test_nothing_passing_is_a_warning(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(tl_test_run_cli(&out, &err, "slices %s --name nothing", window_trace), 0);
	assert_string_equal(out, "");
	assert_string_equal(err, "timeline slices: warning: nothing passes the filters\n");
	free(out);
	free(err);
	assert_int_equal(tl_test_run_cli(&out, &err, "stats %s --name nothing", window_trace), 0);
	assert_string_equal(out, "");
	assert_string_equal(err, "timeline stats: warning: nothing passes the filters\n");
	free(out);
	free(err);
	assert_int_equal(tl_test_run_cli(NULL, &err, "convert %s --name nothing -o -", window_trace), 0);
	assert_true(strncmp(err, "timeline convert: warning: nothing passes the filters\n",
	                    strlen("timeline convert: warning: nothing passes the filters\n")) ==
	            0);
	free(err);
}

static void test_convert_keeps_a_flow_only_with_both_ends(void **state)
{
	(void)state;
	const char *json = tl_test_path("filters-flows-out", ".json");
	char *out;
	assert_int_equal(
	    tl_test_run_cli(NULL, NULL, "convert %s --from 0us --to 300us -o %s", flow_trace, json), 0);
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --kind slice,flow", json), 0);
	assert_non_null(line_named(out, "src"));
	assert_null(line_named(out, "dst"));
	assert_int_equal(tl_test_count(out, "flow "), 1);
	assert_non_null(strstr(out, "flow out=\"near\" in=\"far\"\n"));
	free(out);
}

static void test_convert_keeps_the_args_of_kept_slices(void **state)
{
	(void)state;
	const char *json = tl_test_path("filters-args-out", ".json");
	char *out;
	assert_int_equal(tl_test_run_cli(NULL, NULL, "convert %s --cat b -o %s", flow_trace, json), 0);
	assert_int_equal(tl_test_run_cli(&out, NULL, "slices %s --kind arg", json), 0);
	assert_string_equal(out, "arg slice=\"near\" key=\"args.k\" value=2\n");
	free(out);
}

/* The counts of each kind of item in `slices` output, as "slice=N ...". */
static void kind_counts(const char *out, char *counts, size_t len)
{
	static const char *const kinds[] = {"slice ", "instant ", "async ", "flow "};
	counts[0] = '\0';
	for (size_t k = 0; k < 4; k++) {
		size_t n = (strncmp(out, kinds[k], strlen(kinds[k])) == 0);
		char needle[32];
		snprintf(needle, sizeof needle, "\n%s", kinds[k]);
		n += tl_test_count(out, needle);
		size_t used = strlen(counts);
		snprintf(counts + used, len - used, "%s%s%zu", used ? " " : "", kinds[k], n);
	}
}

static void test_convert_of_a_snapshot_writes_what_slices_keeps(void **state)
{
	(void)state;
	const char *json = tl_test_path("filters-demo-out", ".json");
	char *filtered, *written, want[256], got[256];
	assert_int_equal(tl_test_run_cli(&filtered, NULL,
	                         "slices %s --from 50ms --to 100ms --kind slice,instant,async,flow",
	                         snapshot),
	                 0);
	assert_int_equal(
	    tl_test_run_cli(NULL, NULL, "convert %s --from 50ms --to 100ms -o %s", snapshot, json), 0);
	assert_int_equal(tl_test_run_cli(&written, NULL, "slices %s --kind slice,instant,async,flow", json),
	                 0);
	kind_counts(filtered, want, sizeof want);
	kind_counts(written, got, sizeof got);
	assert_string_equal(got, want);
	assert_true(strlen(filtered) > 0);
	free(filtered);
	free(written);
}

static void test_convert_to_ftrace_ends_every_slice_it_begins(void **state)
{
	(void)state;
	const char *txt = tl_test_path("filters-demo-out", ".txt");
	assert_int_equal(
	    tl_test_run_cli(NULL, NULL, "convert %s --from 50ms --to 100ms -o %s", snapshot, txt), 0);
	char *text = tl_test_read_file(txt, NULL);
	assert_non_null(text);
	size_t begins = tl_test_count(text, ": B|"), ends = tl_test_count(text, ": E|");
	assert_true(begins > 0);
	assert_int_equal(begins, ends);
	free(text);
}

static void test_stats_counts_what_the_window_keeps(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL,
	                         "stats %s --csv --from 200us --to 300us --name 'across_*'",
	                         window_trace),
	                 0);
	assert_non_null(strstr(out, "\nslice,across_from,,,,,1,0,100000,100000,"));
	assert_non_null(strstr(out, "\nslice,across_to,,,,,1,0,100000,100000,"));
	assert_int_equal(tl_test_count(out, "\nslice,"), 2);
	free(out);
}

/* Runs a command with a bad filter: exit 2, one line naming the option
 * and the value. */
static void expect_filter_error(const char *command, const char *options, const char *option,
                                const char *value)
{
	char *err, args[8192];
	const char *output = strcmp(command, "convert") == 0 ? " -o -" : "";
	snprintf(args, sizeof args, "%s %s%s %s", command, window_trace, output, options);
	assert_int_equal(tl_test_run_cli(NULL, &err, "%s", args), 2);
	char prefix[64];
	snprintf(prefix, sizeof prefix, "timeline %s: %s", command, option);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, value))
		fail_msg("'%s' said: %s", args, err);
	assert_int_equal(tl_test_count(err, "\n"), 1);
	free(err);
}

static const char *const filter_commands[] = {"slices", "convert", "stats"};

static void test_every_command_refuses_a_time_without_a_unit(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++)
		expect_filter_error(filter_commands[i], "--from 1.5", "--from", "'1.5'");
}

static void test_every_command_refuses_an_unknown_unit(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++)
		expect_filter_error(filter_commands[i], "--to 3min", "--to", "'3min'");
}

static void test_every_command_refuses_a_time_finer_than_a_nanosecond(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++)
		expect_filter_error(filter_commands[i], "--from 1.5ns", "--from", "nanosecond");
}

static void test_every_command_refuses_to_before_from(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++) {
		expect_filter_error(filter_commands[i], "--from 2ms --to 1ms", "--to",
		                    "--from 2ms");
		expect_filter_error(filter_commands[i], "--from 2ms --to 2ms", "--to",
		                    "--from 2ms");
		/* only comparable once the trace is read */
		expect_filter_error(filter_commands[i], "--from @1s --to 1ms", "--to",
		                    "--from @1s");
	}
}

static void test_every_command_refuses_a_tid_that_is_not_a_number(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++) {
		expect_filter_error(filter_commands[i], "--tid main", "--tid", "'main'");
		expect_filter_error(filter_commands[i], "--pid -1", "--pid", "'-1'");
	}
}

static void test_every_command_refuses_too_many_values(void **state)
{
	(void)state;
	char options[4096] = "";
	for (int i = 0; i < 33; i++)
		strcat(options, "--name x ");
	for (size_t i = 0; i < 3; i++)
		expect_filter_error(filter_commands[i], options, "--name", "at most 32");
}

static void test_every_command_says_a_filter_value_is_missing(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++)
		expect_filter_error(filter_commands[i], "--cat", "--cat", "missing value");
}

static void test_slices_markers_take_no_filter(void **state)
{
	(void)state;
	char *err;
	assert_int_equal(tl_test_run_cli(NULL, &err, "slices --markers %s --from 1s", window_trace), 2);
	assert_non_null(strstr(err, "timeline slices: --markers: "));
	free(err);
}

static void test_every_command_lists_the_filters_in_its_help(void **state)
{
	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char *out;
		assert_int_equal(tl_test_run_cli(&out, NULL, "%s --help", filter_commands[i]), 0);
		assert_non_null(strstr(out, "  --from TIME "));
		assert_non_null(strstr(out, "  --pid PID "));
		free(out);
	}
}

int main(void)
{
	if (!tl_test_cli()) {
		printf("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_window_keeps_a_slice_begun_before_from_whole),
	    cmocka_unit_test(test_window_drops_a_slice_that_ends_at_from),
	    cmocka_unit_test(test_window_keeps_a_slice_that_begins_at_from),
	    cmocka_unit_test(test_window_keeps_a_slice_that_ends_at_to),
	    cmocka_unit_test(test_window_keeps_a_slice_running_past_to_whole),
	    cmocka_unit_test(test_window_drops_a_slice_that_begins_at_to),
	    cmocka_unit_test(test_window_keeps_instants_in_from_to_half_open),
	    cmocka_unit_test(test_window_keeps_a_slice_never_ended_that_began_before),
	    cmocka_unit_test(test_window_keeps_counter_samples_in_from_to_half_open),
	    cmocka_unit_test(test_window_relative_times_count_from_the_first_event),
	    cmocka_unit_test(test_window_absolute_times_start_with_at),
	    cmocka_unit_test(test_window_without_to_runs_to_the_end),
	    cmocka_unit_test(test_name_glob_keeps_matching_slices_and_counters),
	    cmocka_unit_test(test_cat_glob_keeps_matching_slices),
	    cmocka_unit_test(test_tid_keeps_that_threads_items),
	    cmocka_unit_test(test_pid_keeps_that_processes_items),
	    cmocka_unit_test(test_different_options_must_all_pass),
	    cmocka_unit_test(test_slices_keep_their_own_thread_times),
	    cmocka_unit_test(test_slices_keeps_flows_with_both_ends_and_args_with_their_slice),
	    cmocka_unit_test(test_nothing_passing_is_a_warning),
	    cmocka_unit_test(test_convert_keeps_a_flow_only_with_both_ends),
	    cmocka_unit_test(test_convert_keeps_the_args_of_kept_slices),
	    cmocka_unit_test(test_convert_of_a_snapshot_writes_what_slices_keeps),
	    cmocka_unit_test(test_convert_to_ftrace_ends_every_slice_it_begins),
	    cmocka_unit_test(test_stats_counts_what_the_window_keeps),
	    cmocka_unit_test(test_every_command_refuses_a_time_without_a_unit),
	    cmocka_unit_test(test_every_command_refuses_an_unknown_unit),
	    cmocka_unit_test(test_every_command_refuses_a_time_finer_than_a_nanosecond),
	    cmocka_unit_test(test_every_command_refuses_to_before_from),
	    cmocka_unit_test(test_every_command_refuses_a_tid_that_is_not_a_number),
	    cmocka_unit_test(test_every_command_refuses_too_many_values),
	    cmocka_unit_test(test_every_command_says_a_filter_value_is_missing),
	    cmocka_unit_test(test_slices_markers_take_no_filter),
	    cmocka_unit_test(test_every_command_lists_the_filters_in_its_help),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
