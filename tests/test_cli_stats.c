/*
 * `timeline stats`: the figures on hand-built traces (nearest-rank
 * percentiles, self time, counters, groups, the longest instances), the
 * shapes of the table, --json and --csv, the inputs it reads and its
 * errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/test_support.h"

static const char *cli;

/* Writes a JSON trace with the given events to a fresh path (static storage). */
static const char *write_trace(const char *events)
{
	static char paths[8][4096];
	static unsigned next;
	char *path = paths[next++ % 8];
	snprintf(path, sizeof paths[0], "%s", tl_test_path("stats-in", ".json"));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\":[%s]}\n", events);
	fclose(f);
	return path;
}

/* The CSV row of `stats --csv ARGS` whose first two fields are table and
 * name (static storage); fails the test when there is none. */
static const char *csv_row(const char *csv, const char *table, const char *name)
{
	static char row[4096];
	char needle[512];
	snprintf(needle, sizeof needle, "\n%s,%s,", table, name);
	const char *hit = strstr(csv, needle);
	if (!hit)
		fail_msg("no row %s,%s in:\n%s", table, name, csv);
	hit++;
	snprintf(row, sizeof row, "%.*s", (int)strcspn(hit, "\n"), hit);
	return row;
}

/* count,unfinished,total_ns,self_ns,min_ns,p50_ns,p90_ns,p99_ns,max_ns of
 * the slice row of name, grouped by name. */
static const char *figures_of(const char *csv, const char *name)
{
	const char *row = csv_row(csv, "slice", name);
	/* table,name,cat,tid,pid,thread, then the figures */
	for (int commas = 0; commas < 6; row++)
		commas += *row == ',';
	static char figures[1024];
	size_t n = 0;
	for (int commas = 0; row[n] && commas < 9; n++)
		commas += row[n] == ',';
	snprintf(figures, sizeof figures, "%.*s", (int)(n ? n - 1 : 0), row);
	return figures;
}

/* A complete slice event: name, start and duration in microseconds, tid. */
static void add_slice(char *buf, size_t len, const char *name, long ts, long dur, int tid)
{
	size_t used = strlen(buf);
	snprintf(buf + used, len - used,
	         "%s{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"c\",\"ts\":%ld,\"dur\":%ld,\"pid\":1,"
	         "\"tid\":%d}",
	         used ? "," : "", name, ts, dur, tid);
}

static void test_percentiles_are_nearest_rank_over_a_hundred(void **state)
{
	(void)state;
	/* durations 1..100 us, in a shuffled order */
	char events[32768] = "";
	for (long i = 0; i < 100; i++) {
		long dur = (i * 37) % 100 + 1;
		add_slice(events, sizeof events, "s", i * 1000, dur, 1);
	}
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	assert_string_equal(figures_of(out, "s"),
	                    "100,0,5050000,5050000,1000,50000,90000,99000,100000");
	free(out);
}

static void test_percentiles_of_four_take_a_value_not_an_interpolation(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "s", 0, 30, 1);
	add_slice(events, sizeof events, "s", 100, 10, 1);
	add_slice(events, sizeof events, "s", 200, 40, 1);
	add_slice(events, sizeof events, "s", 300, 20, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	/* ranks ceil(0.5 * 4) = 2, ceil(0.9 * 4) = 4, ceil(0.99 * 4) = 4 */
	assert_string_equal(figures_of(out, "s"),
	                    "4,0,100000,100000,10000,20000,40000,40000,40000");
	free(out);
}

static void test_percentiles_of_one_are_that_one(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "s", 0, 7, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	assert_string_equal(figures_of(out, "s"), "1,0,7000,7000,7000,7000,7000,7000,7000");
	free(out);
}

static void test_self_time_subtracts_direct_children_only(void **state)
{
	(void)state;
	/* parent [0, 100) holds a [10, 40) and b [50, 70); a holds g [15, 25) */
	char events[4096] = "";
	add_slice(events, sizeof events, "parent", 0, 100, 1);
	add_slice(events, sizeof events, "a", 10, 30, 1);
	add_slice(events, sizeof events, "g", 15, 10, 1);
	add_slice(events, sizeof events, "b", 50, 20, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	assert_string_equal(figures_of(out, "parent"),
	                    "1,0,100000,50000,100000,100000,100000,100000,100000");
	assert_string_equal(figures_of(out, "a"), "1,0,30000,20000,30000,30000,30000,30000,30000");
	assert_string_equal(figures_of(out, "g"), "1,0,10000,10000,10000,10000,10000,10000,10000");
	assert_string_equal(figures_of(out, "b"), "1,0,20000,20000,20000,20000,20000,20000,20000");
	free(out);
}

static void test_self_time_of_begin_end_slices_subtracts_children(void **state)
{
	(void)state;
	const char *trace =
	    write_trace("{\"ph\":\"B\",\"name\":\"outer\",\"ts\":0,\"pid\":1,\"tid\":1},"
	                "{\"ph\":\"B\",\"name\":\"inner\",\"ts\":2,\"pid\":1,\"tid\":1},"
	                "{\"ph\":\"E\",\"ts\":5,\"pid\":1,\"tid\":1},"
	                "{\"ph\":\"B\",\"name\":\"inner\",\"ts\":6,\"pid\":1,\"tid\":1},"
	                "{\"ph\":\"E\",\"ts\":7,\"pid\":1,\"tid\":1},"
	                "{\"ph\":\"E\",\"ts\":10,\"pid\":1,\"tid\":1}");
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", trace), 0);
	assert_string_equal(figures_of(out, "outer"),
	                    "1,0,10000,6000,10000,10000,10000,10000,10000");
	assert_string_equal(figures_of(out, "inner"), "2,0,4000,4000,1000,1000,3000,3000,3000");
	free(out);
}

static void test_self_time_does_not_depend_on_the_filters(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "parent", 0, 100, 1);
	add_slice(events, sizeof events, "child", 10, 30, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv --name parent", write_trace(events)),
	                 0);
	assert_string_equal(figures_of(out, "parent"),
	                    "1,0,100000,70000,100000,100000,100000,100000,100000");
	free(out);
}

static void test_slices_never_ended_are_counted_apart(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "s", 0, 10, 1);
	strcat(events, ",{\"ph\":\"B\",\"name\":\"s\",\"ts\":20,\"pid\":1,\"tid\":1}"
	               ",{\"ph\":\"B\",\"name\":\"open\",\"ts\":30,\"pid\":1,\"tid\":2}");
	char *out;
	const char *trace = write_trace(events);
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", trace), 0);
	assert_string_equal(figures_of(out, "s"), "1,1,10000,10000,10000,10000,10000,10000,10000");
	assert_string_equal(figures_of(out, "open"), "0,1,0,0,,,,,");
	free(out);
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s", trace), 0);
	assert_non_null(strstr(out, "(2 slices that never ended are left out of the figures;"));
	free(out);
}

static void test_instants_count_with_no_duration(void **state)
{
	(void)state;
	const char *trace = write_trace(
	    "{\"ph\":\"i\",\"name\":\"tick\",\"ts\":1,\"pid\":1,\"tid\":1,\"s\":\"t\"},"
	    "{\"ph\":\"i\",\"name\":\"tick\",\"ts\":2,\"pid\":1,\"tid\":1,\"s\":\"t\"}");
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", trace), 0);
	assert_string_equal(figures_of(out, "tick"), "2,0,0,0,0,0,0,0,0");
	assert_int_equal(tl_test_count(out, "\nworst,"), 0); /* no longest of no duration */
	free(out);
}

static const char counter_events[] =
    "{\"ph\":\"C\",\"name\":\"queue\",\"ts\":0,\"pid\":1,\"args\":{\"depth\":1}},"
    "{\"ph\":\"C\",\"name\":\"queue\",\"ts\":1,\"pid\":1,\"args\":{\"depth\":2}},"
    "{\"ph\":\"C\",\"name\":\"queue\",\"ts\":5,\"pid\":1,\"args\":{\"depth\":6}},"
    "{\"ph\":\"C\",\"name\":\"queue\",\"ts\":2,\"pid\":2,\"args\":{\"depth\":0.5}}";

static void test_counters_give_min_mean_max_per_track(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(counter_events)), 0);
	assert_non_null(strstr(out, "\ncounter,queue depth,,,1,,3,,,,,,,,,,,,1,3,6\n"));
	assert_non_null(strstr(out, "\ncounter,queue depth,,,2,,1,,,,,,,,,,,,0.5,0.5,0.5\n"));
	free(out);
}

static void test_counters_table_lists_each_track(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s", write_trace(counter_events)), 0);
	assert_string_equal(out, "counter      pid  samples  min  mean  max\n"
	                         "queue depth    1        3    1     3    6\n"
	                         "queue depth    2        1  0.5   0.5  0.5\n");
	free(out);
}

/* Two threads run "work"; thread 2 is named. */
static const char *thread_trace(void)
{
	char events[4096] = "";
	add_slice(events, sizeof events, "work", 0, 10, 1);
	add_slice(events, sizeof events, "work", 20, 30, 2);
	add_slice(events, sizeof events, "work", 60, 50, 2);
	strcat(events, ",{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,"
	               "\"args\":{\"name\":\"render\"}}");
	return write_trace(events);
}

static void test_by_thread_gives_a_row_per_thread(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv --by thread", thread_trace()), 0);
	assert_non_null(
	    strstr(out, "\nslice,work,,1,1,,1,0,10000,10000,10000,10000,10000,10000,10000,"));
	assert_non_null(
	    strstr(out, "\nslice,work,,2,1,render,2,0,80000,80000,30000,30000,50000,50000,50000,"));
	assert_int_equal(tl_test_count(out, "\nslice,"), 2);
	free(out);
}

static void test_by_thread_table_names_the_thread(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --by thread --worst 0", thread_trace()), 0);
	assert_string_equal(
	    out, "thread        name  count      total       self        min        p50        p90"
	         "        p99        max\n"
	         "tid 1         work      1  10.000 us  10.000 us  10.000 us  10.000 us  10.000 us"
	         "  10.000 us  10.000 us\n"
	         "tid 2 render  work      2  80.000 us  80.000 us  30.000 us  30.000 us  50.000 us"
	         "  50.000 us  50.000 us\n");
	free(out);
}

static void test_by_cat_gives_a_row_per_category(void **state)
{
	(void)state;
	const char *trace =
	    write_trace("{\"ph\":\"X\",\"name\":\"io\",\"cat\":\"disk\",\"ts\":0,\"dur\":4,\"pid\":"
	                "1,\"tid\":1},"
	                "{\"ph\":\"X\",\"name\":\"io\",\"cat\":\"net\",\"ts\":10,\"dur\":6,\"pid\":"
	                "1,\"tid\":1},"
	                "{\"ph\":\"X\",\"name\":\"io\",\"ts\":20,\"dur\":1,\"pid\":1,\"tid\":1}");
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv --by cat", trace), 0);
	assert_non_null(strstr(out, "\nslice,io,,,,,1,0,1000,"));
	assert_non_null(strstr(out, "\nslice,io,disk,,,,1,0,4000,"));
	assert_non_null(strstr(out, "\nslice,io,net,,,,1,0,6000,"));
	free(out);
}

static void test_rows_are_ordered_by_total_time(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "small", 0, 1, 1);
	add_slice(events, sizeof events, "big", 10, 50, 1);
	add_slice(events, sizeof events, "middle", 100, 10, 1);
	add_slice(events, sizeof events, "middle", 200, 10, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	const char *big = strstr(out, "\nslice,big,"), *middle = strstr(out, "\nslice,middle,"),
	           *small = strstr(out, "\nslice,small,");
	assert_true(big && middle && small);
	assert_true(big < middle && middle < small);
	free(out);
}

static void test_worst_lists_the_longest_first_with_start_and_thread(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv --worst 2", thread_trace()), 0);
	assert_non_null(strstr(out, "\nworst,work,c,2,1,render,,,,,,,,,,1,60000,50000,,,\n"
	                            "worst,work,c,2,1,render,,,,,,,,,,2,20000,30000,,,\n"));
	assert_int_equal(tl_test_count(out, "\nworst,"), 2);
	free(out);
}

static void test_worst_breaks_ties_by_the_earliest(void **state)
{
	(void)state;
	char events[4096] = "";
	add_slice(events, sizeof events, "s", 50, 5, 1);
	add_slice(events, sizeof events, "s", 10, 5, 2);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv --worst 1", write_trace(events)), 0);
	assert_non_null(strstr(out, "\nworst,s,c,2,1,,,,,,,,,,,1,10000,5000,,,\n"));
	free(out);
}

static void test_worst_defaults_to_three(void **state)
{
	(void)state;
	char events[4096] = "";
	for (int i = 0; i < 5; i++)
		add_slice(events, sizeof events, "s", i * 100, i + 1, 1);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", write_trace(events)), 0);
	assert_int_equal(tl_test_count(out, "\nworst,"), 3);
	free(out);
}

static void test_worst_zero_lists_none(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --worst 0", thread_trace()), 0);
	assert_null(strstr(out, "longest"));
	free(out);
}

static void test_worst_table_gives_the_start_after_the_first_event(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --worst 1", thread_trace()), 0);
	assert_non_null(strstr(out, "\nlongest 1 of each name (start: after the trace's first "
	                            "event)\n"
	                            "name  thread        rank        dur           start\n"
	                            "work  tid 2 render     1  50.000 us  +0.000060000 s\n"));
	free(out);
}

static void test_table_units_follow_each_value(void **state)
{
	(void)state;
	char *out;
	const char *trace = write_trace(
	    "{\"ph\":\"X\",\"name\":\"s\",\"ts\":0,\"dur\":2500000,\"pid\":1,\"tid\":1},"
	    "{\"ph\":\"X\",\"name\":\"s\",\"ts\":3000000,\"dur\":0.999,\"pid\":1,\"tid\":1},"
	    "{\"ph\":\"X\",\"name\":\"s\",\"ts\":3000010,\"dur\":1234.5678,\"pid\":1,\"tid\":1}");
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --worst 0", trace), 0);
	assert_string_equal(
	    out, "name  count    total     self     min       p50      p90      p99      max\n"
	         "s         3  2.501 s  2.501 s  999 ns  1.234 ms  2.500 s  2.500 s  2.500 s\n");
	free(out);
}

static void test_json_has_every_field(void **state)
{
	(void)state;
	const char *json = tl_test_path("stats", ".json");
	assert_int_equal(
	    tl_test_run("%s stats %s --json --by thread > %s", cli, thread_trace(), json), 0);
	int rc = tl_test_run(
	    "python3 -c 'import json,sys\n"
	    "d = json.load(open(sys.argv[1]))\n"
	    "assert d[\"by\"] == \"thread\" and d[\"first_ts\"] == 0, d\n"
	    "s = [g for g in d[\"slices\"] if g[\"tid\"] == 2][0]\n"
	    "want = dict(name=\"work\", tid=2, pid=1, thread=\"render\", count=2, unfinished=0,\n"
	    "            total_ns=80000, self_ns=80000, min_ns=30000, p50_ns=30000,\n"
	    "            p90_ns=50000, p99_ns=50000, max_ns=50000)\n"
	    "assert {k: s[k] for k in want} == want, s\n"
	    "assert s[\"worst\"][0] == dict(ts=60000, dur_ns=50000, tid=2, pid=1,\n"
	    "                                thread=\"render\", cat=\"c\"), s\n"
	    "assert d[\"counters\"] == [], d\n"
	    "' %s",
	    json);
	assert_int_equal(rc, 0);
}

static void test_json_of_counters_and_an_empty_group_is_valid(void **state)
{
	(void)state;
	char events[4096];
	snprintf(events, sizeof events,
	         "%s,{\"ph\":\"B\",\"name\":\"open\",\"ts\":3,\"pid\":1,\"tid\":1}",
	         counter_events);
	const char *json = tl_test_path("stats", ".json");
	assert_int_equal(tl_test_run("%s stats %s --json > %s", cli, write_trace(events), json), 0);
	int rc = tl_test_run("python3 -c 'import json,sys\n"
	                     "d = json.load(open(sys.argv[1]))\n"
	                     "o = d[\"slices\"][0]\n"
	                     "assert o[\"count\"] == 0 and o[\"unfinished\"] == 1, o\n"
	                     "assert o[\"p50_ns\"] is None and o[\"worst\"] == [], o\n"
	                     "c = d[\"counters\"][0]\n"
	                     "assert (c[\"min\"], c[\"mean\"], c[\"max\"]) == (1, 3, 6), c\n"
	                     "' %s",
	                     json);
	assert_int_equal(rc, 0);
}

static void test_json_escapes_names(void **state)
{
	(void)state;
	const char *trace = write_trace(
	    "{\"ph\":\"X\",\"name\":\"a \\\"q\\\" \\\\ \\u0001 é\",\"ts\":0,\"dur\":1,\"pid\":1,"
	    "\"tid\":1}");
	const char *json = tl_test_path("stats", ".json");
	assert_int_equal(tl_test_run("%s stats %s --json > %s", cli, trace, json), 0);
	int rc = tl_test_run("python3 -c 'import json,sys\n"
	                     "d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
	                     "n = d[\"slices\"][0][\"name\"]\n"
	                     "assert n == \"a \\\"q\\\" \\\\ \\x01 \\u00e9\", repr(n)\n"
	                     "' %s",
	                     json);
	assert_int_equal(rc, 0);
}

static void test_csv_rows_all_have_the_header_columns(void **state)
{
	(void)state;
	char events[8192];
	snprintf(
	    events, sizeof events,
	    "%s,{\"ph\":\"X\",\"name\":\"a, \\\"b\\\"\",\"ts\":0,\"dur\":1,\"pid\":1,\"tid\":1},"
	    "{\"ph\":\"B\",\"name\":\"open\",\"ts\":3,\"pid\":1,\"tid\":1}",
	    counter_events);
	const char *csv = tl_test_path("stats", ".csv");
	assert_int_equal(
	    tl_test_run("%s stats %s --csv --by thread > %s", cli, write_trace(events), csv), 0);
	int rc = tl_test_run(
	    "python3 -c 'import csv,sys\n"
	    "rows = list(csv.reader(open(sys.argv[1], newline=\"\")))\n"
	    "assert rows[0] == \"table,name,cat,tid,pid,thread,count,unfinished,total_ns,"
	    "self_ns,min_ns,p50_ns,p90_ns,p99_ns,max_ns,rank,ts,dur_ns,min,mean,max\""
	    ".split(\",\"), rows[0]\n"
	    "assert all(len(r) == 21 for r in rows), rows\n"
	    "assert sorted(r[0] for r in rows[1:]) == "
	    "[\"counter\", \"counter\", \"slice\", \"slice\", \"worst\"], rows\n"
	    "assert [r[1] for r in rows if r[0] == \"worst\"] == [\"a, \\\"b\\\"\"], rows\n"
	    "' %s",
	    csv);
	assert_int_equal(rc, 0);
}

/* Runs tests/scripts/check_stats_against_slices.py on traces (a shell word list). */
static int check_against_slices(const char *traces)
{
	return tl_test_run("python3 %s/tests/scripts/check_stats_against_slices.py %s %s",
	                   TL_SOURCE_DIR, cli, traces);
}

static void test_figures_add_up_to_what_slices_prints_for_a_snapshot(void **state)
{
	(void)state;
	const char *snapshot = tl_test_path("stats-demo", ".tlsnap");
	assert_int_equal(tl_test_run("%s demo --seconds 0.1 -o %s >/dev/null", cli, snapshot), 0);
	assert_int_equal(check_against_slices(snapshot), 0);
}

static void test_figures_add_up_to_what_slices_prints_for_the_conformance_cases(void **state)
{
	(void)state;
	const char *dir = TL_SHARED_DIR "/conformance";
	struct stat st;
	if (stat(dir, &st) != 0) {
		printf("skipped: no conformance directory at %s\n", dir);
		skip();
	}
	char traces[4096];
	snprintf(traces, sizeof traces, "%s/*.input %s/tests/fixtures/trace-cmd/*.txt", dir,
	         TL_SOURCE_DIR);
	assert_int_equal(check_against_slices(traces), 0);
}

static void test_reads_the_file_recorders_file(void **state)
{
	(void)state;
	const char *file = tl_test_path("stats-file-recorder", ".tl");
	const char *json = tl_test_path("stats-file-recorder", ".json");
	assert_int_equal(
	    tl_test_run("TIMELINE_RECORDER=file TIMELINE_FILE=%s %s demo --seconds 0.1 "
	                "-o %s >/dev/null",
	                file, cli, json),
	    0);
	char *from_file, *from_json;
	assert_int_equal(tl_test_run_cli(&from_file, NULL, "stats %s --csv", file), 0);
	assert_int_equal(tl_test_run_cli(&from_json, NULL, "stats %s --csv", json), 0);
	/* the same run: the same slices, whichever way it was written */
	assert_non_null(strstr(from_file, "\nslice,frame,"));
	assert_string_equal(figures_of(from_file, "frame"), figures_of(from_json, "frame"));
	free(from_file);
	free(from_json);
}

static void test_reads_systrace_text(void **state)
{
	(void)state;
	const char *path = tl_test_path("stats-systrace", ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(
	    "# tracer: nop\n"
	    "#\n"
	    "           app-42    (   42) [000] ...1   100.000000: tracing_mark_write: B|42|draw\n"
	    "           app-42    (   42) [000] ...1   100.000500: tracing_mark_write: E|42\n"
	    "           app-42    (   42) [000] ...1   100.001000: tracing_mark_write: B|42|draw\n"
	    "           app-42    (   42) [000] ...1   100.003000: tracing_mark_write: E|42\n",
	    f);
	fclose(f);
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats %s --csv", path), 0);
	assert_string_equal(figures_of(out, "draw"),
	                    "2,0,2500000,2500000,500000,500000,2000000,2000000,2000000");
	free(out);
}

static void test_a_malformed_trace_names_its_file_line_and_column(void **state)
{
	(void)state;
	const char *trace = write_trace("{\"ph\":\"X\",\"name\":\"a\",\"ts\":0,\"dur\":1,\"pid\":1,"
	                                "\"tid\":1},\n{\"ph\":\"X\",\"name\":\"a\x01\"}");
	char *out, *err, expected[8192];
	assert_int_equal(tl_test_run_cli(&out, &err, "stats %s", trace), 1);
	snprintf(expected, sizeof expected,
	         "timeline stats: %s:2:20: raw control character 0x01 in a string\n", trace);
	assert_string_equal(err, expected);
	assert_string_equal(out, "");
	free(out);
	free(err);
}

static void test_a_file_that_is_no_trace_is_an_error(void **state)
{
	(void)state;
	const char *path = tl_test_path("stats-garbage", ".bin");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("\x01\x02 not a trace\n", f);
	fclose(f);
	char *err, expected[8192];
	assert_int_equal(tl_test_run_cli(NULL, &err, "stats %s", path), 1);
	snprintf(expected, sizeof expected,
	         "timeline stats: %s: not a trace: neither Chrome JSON, a Perfetto trace, ftrace "
	         "text nor a timeline snapshot\n",
	         path);
	assert_string_equal(err, expected);
	free(err);
}

static void test_a_missing_file_or_a_directory_is_an_error(void **state)
{
	(void)state;
	char *err;
	assert_int_equal(tl_test_run_cli(NULL, &err, "stats /nonexistent/trace.json"), 1);
	assert_string_equal(err,
	                    "timeline stats: /nonexistent/trace.json: No such file or directory\n");
	free(err);
	const char *dir = tl_test_path("stats-dir", "");
	assert_int_equal(mkdir(dir, 0755), 0);
	char expected[4096];
	snprintf(expected, sizeof expected, "timeline stats: %s: is a directory\n", dir);
	assert_int_equal(tl_test_run_cli(NULL, &err, "stats %s", dir), 1);
	assert_string_equal(err, expected);
	free(err);
}

/* A usage error: exit 2 and one line that starts with what is expected. */
static void expect_usage_error(const char *args, const char *start)
{
	char *err;
	assert_int_equal(tl_test_run_cli(NULL, &err, "stats %s", args), 2);
	if (strncmp(err, start, strlen(start)) != 0 || tl_test_count(err, "\n") != 1)
		fail_msg("'stats %s' said: %s", args, err);
	free(err);
}

static void test_usage_errors_exit_2_with_one_line(void **state)
{
	(void)state;
	const char *trace = thread_trace();
	char args[4096];
	expect_usage_error("", "timeline stats: missing the input file");
	snprintf(args, sizeof args, "%s %s", trace, trace);
	expect_usage_error(args, "timeline stats: unexpected argument");
	snprintf(args, sizeof args, "%s --by process", trace);
	expect_usage_error(args,
	                   "timeline stats: --by: expected name, thread or cat, got 'process'");
	snprintf(args, sizeof args, "%s --worst -1", trace);
	expect_usage_error(args, "timeline stats: --worst: expected a count, got '-1'");
	snprintf(args, sizeof args, "%s --json --csv", trace);
	expect_usage_error(args, "timeline stats: --json and --csv: choose one");
	snprintf(args, sizeof args, "%s --bogus", trace);
	expect_usage_error(args, "timeline stats: unknown option '--bogus'");
}

static void test_help_says_how_percentiles_are_taken(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(tl_test_run_cli(&out, NULL, "stats --help"), 0);
	assert_non_null(strstr(out, "nearest-rank"));
	free(out);
	assert_int_equal(tl_test_run_cli(&out, NULL, "--help"), 0);
	assert_non_null(strstr(out, "\n  stats "));
	free(out);
}

int main(void)
{
	cli = tl_test_cli();
	if (!cli) {
		printf("skipped: TIMELINE_CLI is not set (run through ctest)\n");
		return TL_TEST_SKIP_EXIT;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_percentiles_are_nearest_rank_over_a_hundred),
	    cmocka_unit_test(test_percentiles_of_four_take_a_value_not_an_interpolation),
	    cmocka_unit_test(test_percentiles_of_one_are_that_one),
	    cmocka_unit_test(test_self_time_subtracts_direct_children_only),
	    cmocka_unit_test(test_self_time_of_begin_end_slices_subtracts_children),
	    cmocka_unit_test(test_self_time_does_not_depend_on_the_filters),
	    cmocka_unit_test(test_slices_never_ended_are_counted_apart),
	    cmocka_unit_test(test_instants_count_with_no_duration),
	    cmocka_unit_test(test_counters_give_min_mean_max_per_track),
	    cmocka_unit_test(test_counters_table_lists_each_track),
	    cmocka_unit_test(test_by_thread_gives_a_row_per_thread),
	    cmocka_unit_test(test_by_thread_table_names_the_thread),
	    cmocka_unit_test(test_by_cat_gives_a_row_per_category),
	    cmocka_unit_test(test_rows_are_ordered_by_total_time),
	    cmocka_unit_test(test_worst_lists_the_longest_first_with_start_and_thread),
	    cmocka_unit_test(test_worst_breaks_ties_by_the_earliest),
	    cmocka_unit_test(test_worst_defaults_to_three),
	    cmocka_unit_test(test_worst_zero_lists_none),
	    cmocka_unit_test(test_worst_table_gives_the_start_after_the_first_event),
	    cmocka_unit_test(test_table_units_follow_each_value),
	    cmocka_unit_test(test_json_has_every_field),
	    cmocka_unit_test(test_json_of_counters_and_an_empty_group_is_valid),
	    cmocka_unit_test(test_json_escapes_names),
	    cmocka_unit_test(test_csv_rows_all_have_the_header_columns),
	    cmocka_unit_test(test_figures_add_up_to_what_slices_prints_for_a_snapshot),
	    cmocka_unit_test(test_figures_add_up_to_what_slices_prints_for_the_conformance_cases),
	    cmocka_unit_test(test_reads_the_file_recorders_file),
	    cmocka_unit_test(test_reads_systrace_text),
	    cmocka_unit_test(test_a_malformed_trace_names_its_file_line_and_column),
	    cmocka_unit_test(test_a_file_that_is_no_trace_is_an_error),
	    cmocka_unit_test(test_a_missing_file_or_a_directory_is_an_error),
	    cmocka_unit_test(test_usage_errors_exit_2_with_one_line),
	    cmocka_unit_test(test_help_says_how_percentiles_are_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
