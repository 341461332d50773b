/*
 * `timeline merge`: traces on one clock taken as they are, traces on
 * different clocks aligned through what each says (clock values, clock
 * sync markers), refusals that name both files, the same event shown
 * once, bad inputs; and a snapshot merged with a live capture of the same
 * run (root and tracefs, else that test skips with the reason).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "systrace_fixture.h"

#include <timeline/trace_event.h>

#include "tools/readers/trace_import.h"

static const char *cli;

static int group_setup(void **state)
{
	(void)state;
	tl_test_clear_environment();
	cli = tl_test_cli();
	return cli ? 0 : -1;
}

/* A path of its own (tl_test_path reuses its buffers). */
static char *path_of(const char *stem, const char *ext)
{
	char *p = strdup(tl_test_path(stem, ext));
	assert_non_null(p);
	return p;
}

static char *write_input(const char *stem, const char *ext, const char *text)
{
	char *p = path_of(stem, ext);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

/* `timeline merge ARGS`, its standard error in *err (the caller frees).
 * Returns the exit status. */
static int merge(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int merge(char **err, const char *fmt, ...)
{
	char args[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	const char *err_path = tl_test_path("merge-err", ".txt");
	int rc = tl_test_run("%s merge %s 2> %s", cli, args, err_path);
	*err = tl_test_read_file(err_path, NULL);
	assert_non_null(*err);
	print_message("%s", *err);
	return rc;
}

/* The items of a trace as `timeline slices` prints them (the caller frees). */
static char *slices_of(const char *trace, const char *kinds)
{
	const char *out = tl_test_path("merge-slices", ".txt");
	assert_int_equal(tl_test_run("%s slices %s --kind %s > %s", cli, trace, kinds, out), 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	return text;
}

static void assert_has(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("'%s' not found in:\n%s", needle, text);
}

/* ---- hand-built traces ------------------------------------------------------ */

/* An in-process trace on the boot clock (JSON written from a snapshot: it
 * names its clock and gives the clock values), where boot is mono + 5 s
 * and realtime is 1700000000 s + boot - 1000 s. Process 100 ("app"),
 * thread 101 "render-thread-long-name": a 500 us "draw" at boot 1000 s. */
static const char json_boot[] =
    "{\"traceEvents\":[\n"
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":100,\"tid\":100,\"args\":{\"name\":\"app\"}},"
    "\n"
    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":100,\"tid\":101,"
    "\"args\":{\"name\":\"render-thread-long-name\"}},\n"
    "{\"ph\":\"X\",\"name\":\"draw\",\"cat\":\"gfx\",\"pid\":100,\"tid\":101,"
    "\"ts\":1000000000.000,\"dur\":500}\n"
    "],\n\"displayTimeUnit\":\"ns\",\n"
    "\"metadata\":{\"recorder\":\"ring\",\"clock\":\"boot\",\"clock_id\":7,"
    "\"snapshot_ns\":1000001000000,\"boottime_ns\":1000001000000,"
    "\"monotonic_ns\":995001000000,\"realtime_ns\":1700000000001000000}}\n";

/*
 * A capture: `head` (header lines), then kernel-text lines of thread 101
 * (comm "render") of process 100 and of process 300, at the seconds given,
 * on the clock the capture is on: the same instants as the JSON's events
 * when they are 100, 200 and 150 us past boot 1000 s. The caller frees.
 */
static char *capture(const char *head, const char *vsync_begin, const char *vsync_end,
                     const char *queue)
{
	char *text = NULL;
	int n = asprintf(&text,
	                 "# tracer: nop\n%s"
	                 "          render-101   (  100) [000] .... %s: tracing_mark_write: "
	                 "B|100|vsync\n"
	                 "          render-101   (  100) [000] .... %s: tracing_mark_write: E|100\n"
	                 "           other-300   (  300) [001] .... %s: tracing_mark_write: "
	                 "C|300|queue|4\n",
	                 head, vsync_begin, vsync_end, queue);
	assert_true(n > 0);
	return text;
}

static const char expect_vsync[] =
    "slice ts=1000000100000 dur=100000 name=\"vsync\" tid=101 pid=100 ";
/* a JSON counter is named after its one argument too */
static const char expect_queue[] = "counter ts=1000000150000 name=\"queue value\" value=4 pid=300";
static const char expect_draw[] =
    "slice ts=1000000000000 dur=500000 name=\"draw\" tid=101 pid=100 ";

/* The captures, as files: */
enum capture_kind {
	CAPTURE_BOOT,         /* on boot, named as `timeline record` names it */
	CAPTURE_MONO,         /* on mono (boot - 5 s), named */
	CAPTURE_MONO_UNNAMED, /* on mono, not named */
	CAPTURE_PARENT_TS,    /* on a clock it does not name (boot - 950 s), with the
	                         systrace recorder's parent_ts marker of process 100 */
	CAPTURE_REALTIME_TS,  /* the same with a realtime_ts marker alone */
	CAPTURE_UNNAMED,      /* the same with nothing to tie it to another clock */
};

static char *capture_file(enum capture_kind kind)
{
	static const char named_boot[] = "# timeline: recorder=tracefs clock=boot instance=t\n";
	static const char named_mono[] = "# timeline: recorder=tracefs clock=mono instance=t\n";
	static const char parent_ts[] = "             app-100   (  100) [000] .... 49.000000: "
	                                "tracing_mark_write: trace_event_clock_sync: "
	                                "parent_ts=999.000000\n";
	static const char realtime_ts[] = "             app-100   (  100) [000] .... 49.000000: "
	                                  "tracing_mark_write: trace_event_clock_sync: "
	                                  "realtime_ts=1699999999000\n";
	char *text;
	switch (kind) {
	case CAPTURE_BOOT:
		text = capture(named_boot, "1000.000100", "1000.000200", "1000.000150");
		break;
	case CAPTURE_MONO:
	case CAPTURE_MONO_UNNAMED:
		text = capture(kind == CAPTURE_MONO ? named_mono : "", "995.000100", "995.000200",
		               "995.000150");
		break;
	case CAPTURE_PARENT_TS:
		text = capture(parent_ts, "50.000100", "50.000200", "50.000150");
		break;
	case CAPTURE_REALTIME_TS:
		text = capture(realtime_ts, "50.000100", "50.000200", "50.000150");
		break;
	default:
		text = capture("", "50.000100", "50.000200", "50.000150");
		break;
	}
	char *path = write_input("merge-capture", ".txt", text);
	free(text);
	return path;
}

static void test_merge_of_traces_on_one_clock_keeps_their_timestamps(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_BOOT);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_int_equal(tl_test_count(err, ": as is"), 2);
	char *items = slices_of(out, "slice,counter");
	assert_has(items, expect_draw);
	assert_has(items, expect_vsync);
	assert_has(items, expect_queue);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* boot = mono + 5 s, from the JSON's clock values: the mono capture's
 * events land on the boot timeline to the nanosecond. */
static void test_merge_puts_a_mono_capture_on_a_boot_trace_through_its_clock_values(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_MONO);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "moved by +5000000000 ns through the clock values of");
	char *items = slices_of(out, "slice,counter");
	assert_has(items, expect_draw);
	assert_has(items, expect_vsync);
	assert_has(items, expect_queue);
	free(items);
	free(err);
	/* the other way round: the first input names the timeline's clock */
	assert_int_equal(merge(&err, "%s %s -o %s", text, json, out), 0);
	assert_has(err, "moved by -5000000000 ns through the clock values of");
	items = slices_of(out, "slice");
	assert_has(items, "slice ts=995000000000 dur=500000 name=\"draw\" tid=101 pid=100 ");
	free(items);
	char *json_out = tl_test_read_file(out, NULL);
	assert_has(json_out, "\"clock\":\"mono\"");
	free(json_out);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A capture that names no clock, tied by the parent_ts marker of process
 * 100 to the trace clock of the in-process trace that records it. */
static void test_merge_aligns_a_capture_through_its_parent_ts_marker(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_PARENT_TS);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "moved by +950000000000 ns through the parent_ts marker of process 100");
	assert_false(strstr(err, "warning"));
	char *items = slices_of(out, "slice,counter");
	assert_has(items, expect_vsync);
	assert_has(items, expect_queue);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* Realtime alone ties the capture to the in-process trace's clock values,
 * to the millisecond: aligned, with a warning. */
static void test_merge_through_realtime_ts_warns_it_is_within_a_millisecond(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_REALTIME_TS);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "the realtime_ts marker");
	assert_has(err, "warning: ");
	assert_has(err, "within about 1 ms only");
	char *items = slices_of(out, "slice");
	assert_has(items, expect_vsync);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* Two traces with no clock in common: one line naming both files and
 * what each lacks; nothing written. */
static void test_merge_refuses_traces_that_share_no_clock_naming_both(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_UNNAMED);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 1);
	assert_int_equal(tl_test_count(err, "\n"), 1);
	assert_has(err, "timeline merge: cannot align ");
	assert_has(err, json);
	assert_has(err, text);
	assert_has(err, "names no clock");
	assert_has(err, "has no trace_event_clock_sync marker");
	assert_has(err, "is on the boot clock");
	assert_has(err, "--assume-clock");
	struct stat st;
	assert_int_not_equal(stat(out, &st), 0);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A parent_ts marker of a process no other input records ties nothing. */
static void test_merge_refusal_says_no_input_records_the_marker_process(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = write_input(
	    "merge-other", ".txt",
	    "# tracer: nop\n"
	    "             app-555   (  555) [000] .... 49.000000: tracing_mark_write: "
	    "trace_event_clock_sync: parent_ts=999.000000\n"
	    "             app-555   (  555) [000] .... 50.000000: tracing_mark_write: B|555|x\n");
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 1);
	assert_has(err, "has a parent_ts clock sync marker of process 555 (no other input records "
	                "that process)");
	free(err);
	free(out);
	free(text);
	free(json);
}

static void test_merge_assume_clock_names_the_clock_of_a_capture_that_names_none(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_MONO_UNNAMED);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s --assume-clock mono", json, text, out), 0);
	char *items = slices_of(out, "slice,counter");
	assert_has(items, expect_vsync);
	assert_has(items, expect_queue);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* Process and thread ids are kept; the in-process trace's full thread
 * name wins over the capture's 16-byte comm; each process keeps its name. */
static void test_merge_keeps_pids_tids_and_the_in_process_names(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_MONO);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", text, json, out), 0);
	char *items = slices_of(out, "thread,process");
	assert_has(items, "thread tid=101 pid=100 name=\"render-thread-long-name\"");
	assert_has(items, "process pid=100 name=\"app\"");
	assert_has(items, "thread tid=300 pid=300 name=\"other\"");
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A capture's "draw" 3 us from the in-process one is the same event, shown
 * once (the in-process copy, with its category); one 500 us away is not. */
static void test_merge_shows_an_event_in_both_inputs_once_within_the_window(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = write_input(
	    "merge-dup", ".txt",
	    "# tracer: nop\n# timeline: recorder=tracefs clock=boot\n"
	    "          render-101   (  100) [000] .... 1000.000003: tracing_mark_write: "
	    "B|100|draw\n"
	    "          render-101   (  100) [000] .... 1000.000400: tracing_mark_write: E|100\n"
	    "          render-101   (  100) [000] .... 1000.000600: tracing_mark_write: "
	    "B|100|draw\n"
	    "          render-101   (  100) [000] .... 1000.000700: tracing_mark_write: E|100\n");
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "1 event also recorded in process, shown once");
	assert_has(err, "the farthest 3.000 us apart");
	char *items = slices_of(out, "slice");
	assert_int_equal(tl_test_count(items, "name=\"draw\""), 2);
	assert_has(items, "slice ts=1000000000000 dur=500000 name=\"draw\" tid=101 pid=100 depth=0 "
	                  "cat=\"gfx\"");
	assert_has(items, "slice ts=1000000600000 dur=100000 name=\"draw\" tid=101 pid=100 ");
	free(items);
	free(err);

	assert_int_equal(merge(&err, "%s %s -o %s --keep-duplicates", json, text, out), 0);
	items = slices_of(out, "slice");
	assert_int_equal(tl_test_count(items, "name=\"draw\""), 3);
	free(items);
	free(err);

	assert_int_equal(merge(&err, "%s %s -o %s --dedup-window 2", json, text, out), 0);
	items = slices_of(out, "slice");
	assert_int_equal(tl_test_count(items, "name=\"draw\""), 3);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A capture's async slice that the in-process trace has too goes whole:
 * its begin matched, its end with it. */
static void test_merge_drops_a_capture_async_slice_with_its_end(void **state)
{
	(void)state;
	char *json = write_input(
	    "merge-async", ".json",
	    "{\"traceEvents\":[\n"
	    "{\"ph\":\"b\",\"name\":\"load\",\"cat\":\"io\",\"id2\":{\"local\":\"0x7\"},"
	    "\"pid\":100,\"tid\":101,\"ts\":1000000010.000},\n"
	    "{\"ph\":\"e\",\"name\":\"load\",\"cat\":\"io\",\"id2\":{\"local\":\"0x7\"},"
	    "\"pid\":100,\"tid\":101,\"ts\":1000000300.000}],\n"
	    "\"metadata\":{\"clock\":\"boot\",\"boottime_ns\":1000001000000,"
	    "\"monotonic_ns\":995001000000,\"realtime_ns\":1700000000001000000}}\n");
	char *text = write_input(
	    "merge-async", ".txt",
	    "# tracer: nop\n# timeline: recorder=tracefs clock=boot\n"
	    "          render-101   (  100) [000] .... 1000.000012: tracing_mark_write: "
	    "S|100|load|7\n"
	    "          render-101   (  100) [000] .... 1000.000301: tracing_mark_write: "
	    "F|100|load|7\n");
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "1 event also recorded in process, shown once");
	assert_has(err, "(json, boot clock): 2 events"); /* the in-process begin and end */
	char *items = slices_of(out, "async");
	assert_int_equal(tl_test_count(items, "async "), 1);
	assert_has(items, "async ts=1000000010000 dur=290000 name=\"load\" pid=100 ");
	assert_has(items, "cat=\"io\"");
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A counter sample of the exporter's JSON ("queue", read back as "queue
 * value", after its argument) and the capture's marker of it 2 us later
 * are one sample; one 300 us later is another, on the same track. */
static void test_merge_shows_a_json_counter_sample_of_a_capture_once(void **state)
{
	(void)state;
	char *json =
	    write_input("merge-counter", ".json",
	                "{\"traceEvents\":[\n"
	                "{\"ph\":\"C\",\"name\":\"queue\",\"cat\":\"jobs\",\"pid\":100,\"tid\":101,"
	                "\"ts\":1000000150.000,\"args\":{\"value\":4}}],\n"
	                "\"metadata\":{\"clock\":\"boot\",\"boottime_ns\":1000001000000,"
	                "\"monotonic_ns\":995001000000,\"realtime_ns\":1700000000001000000}}\n");
	char *text = write_input(
	    "merge-counter", ".txt",
	    "# tracer: nop\n# timeline: recorder=tracefs clock=boot\n"
	    "          render-101   (  100) [000] .... 1000.000152: tracing_mark_write: "
	    "C|100|queue|4\n"
	    "          render-101   (  100) [000] .... 1000.000450: tracing_mark_write: "
	    "C|100|queue|5\n");
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "1 event also recorded in process, shown once");
	assert_has(err, "the farthest 2.000 us apart");
	char *items = slices_of(out, "counter");
	assert_int_equal(tl_test_count(items, "counter "), 2);
	assert_has(items, "counter ts=1000000150000 name=\"queue value\" value=4 pid=100");
	assert_has(items, "counter ts=1000000450000 name=\"queue value\" value=5 pid=100");
	free(items);
	free(err);

	assert_int_equal(merge(&err, "%s %s -o %s --keep-duplicates", json, text, out), 0);
	items = slices_of(out, "counter");
	assert_int_equal(tl_test_count(items, "counter "), 3);
	free(items);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* A Perfetto input is named as one, on the clock of its clock snapshot,
 * whose boot and mono clocks put a mono capture on its timeline. */
static void test_merge_reads_a_perfetto_input_on_its_snapshots_clock(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *pftrace = path_of("merge-in", ".perfetto-trace");
	assert_int_equal(tl_test_run("%s convert %s -o %s", cli, json, pftrace), 0);
	char *text = capture_file(CAPTURE_MONO);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", pftrace, text, out), 0);
	assert_has(err, ": Perfetto, on the boot clock: as is");
	assert_has(err, ": ftrace text, on the mono clock: moved by +5000000000 ns");
	char *items = slices_of(out, "slice");
	assert_has(items, expect_draw);
	assert_has(items, expect_vsync);
	free(items);
	free(err);
	free(out);
	free(text);
	free(pftrace);
	free(json);
}

static void test_merge_writes_ftrace_text_for_a_txt_output(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_MONO);
	char *out = path_of("merge-out", ".txt");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "(ftrace, boot clock)");
	char *written = tl_test_read_file(out, NULL);
	assert_non_null(written);
	assert_true(strncmp(written, "# tracer: nop\n", 14) == 0);
	assert_has(written, "# timeline: recorder=merge clock=boot ");
	assert_has(written, " 1000.000100: tracing_mark_write: B|100|vsync\n");
	free(written);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* Perfetto's format from a .pftrace output, read back by `timeline slices`. */
static void test_merge_writes_perfetto_for_a_pftrace_output(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_MONO);
	char *out = path_of("merge-out", ".pftrace");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", json, text, out), 0);
	assert_has(err, "(perfetto, boot clock)");
	char *slices = NULL;
	assert_int_equal(tl_test_run_output(&slices, NULL, "%s slices %s", tl_test_cli(), out), 0);
	assert_has(slices, "vsync");
	free(slices);
	free(err);
	free(out);
	free(text);
	free(json);
}

/* ---- bad inputs --------------------------------------------------------------- */

static void test_merge_names_a_missing_input(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *err;
	assert_int_equal(merge(&err, "%s /nonexistent/trace.txt -o -", json), 1);
	assert_has(err, "timeline merge: /nonexistent/trace.txt: ");
	assert_int_equal(tl_test_count(err, "\n"), 1);
	free(err);
	free(json);
}

static void test_merge_names_the_line_and_column_of_malformed_json(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *bad = write_input("merge-bad", ".json", "{\"traceEvents\":[\n{\"ph\":\"B\",,}]}\n");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o -", json, bad), 1);
	char want[600];
	snprintf(want, sizeof want, "timeline merge: %s:2:11: ", bad); /* as slices says it */
	assert_has(err, want);
	assert_int_equal(tl_test_count(err, "\n"), 1);
	free(err);
	free(bad);
	free(json);
}

static void test_merge_of_a_file_that_is_no_trace_is_an_error(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *bad = write_input("merge-bad", ".bin", "\x01\x02 not a trace\x03");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o -", json, bad), 1);
	assert_has(err, bad);
	assert_has(err, "not a trace");
	free(err);
	free(bad);
	free(json);
}

static void test_merge_of_text_with_no_readable_line_is_an_error(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *bad =
	    write_input("merge-bad", ".txt",
	                "# tracer: nop\n  a-1 (1) [000] .... 1.0: tracing_mark_write: Q|1\n");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o -", json, bad), 1);
	assert_has(err, "nothing could be read");
	assert_has(err, bad);
	free(err);
	free(bad);
	free(json);
}

static void test_merge_of_a_directory_says_it_is_a_directory(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *err;
	assert_int_equal(merge(&err, "%s /tmp -o -", json), 1);
	assert_has(err, "timeline merge: /tmp: is a directory");
	free(err);
	free(json);
}

/* Files joined with commas are one file recorder's rotation: each must be
 * a binary snapshot. */
static void test_merge_rotation_of_files_that_are_no_snapshots_is_an_error(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	char *text = capture_file(CAPTURE_BOOT);
	char *err;
	assert_int_equal(merge(&err, "%s,%s %s -o -", json, json, text), 1);
	assert_has(err, "not a binary snapshot");
	free(err);
	free(text);
	free(json);
}

static void test_merge_usage_errors_exit_2(void **state)
{
	(void)state;
	char *json = write_input("merge-boot", ".json", json_boot);
	static const char *const bad[] = {
	    "%s -o -",                       /* one input */
	    "%s %s",                         /* no output */
	    "%s %s -o - --format svg",       /* unknown format */
	    "%s %s -o - --assume-clock tai", /* unknown clock */
	    "%s %s -o - --dedup-window -3",  /* negative window */
	    "%s %s -o - --no-such-option",   /* unknown option */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char args[1024], *err;
		snprintf(args, sizeof args, bad[i], json, json);
		assert_int_equal(merge(&err, "%s", args), 2);
		assert_has(err, "(see 'timeline merge --help')");
		free(err);
	}
	assert_int_equal(tl_test_run("%s merge --help > /dev/null", cli), 0);
	free(json);
}

/* ---- a file recorder's rotation ----------------------------------------------- */

/* PATH.1,PATH is one input: a file recorder's files read as one trace. */
static void test_merge_reads_a_file_recorders_rotation_as_one_input(void **state)
{
	(void)state;
	char *file = path_of("merge-rotation", ".tlsnap");
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .buffer_bytes = 16u * 1024 * 1024,
	                .block_bytes = 64 * 1024,
	                .file_path = file,
	                .file_max_bytes = 64 * 1024,
	                .file_keep = 2};
	assert_int_equal(tl_init(&o), 0);
	for (int i = 0; i < 20000; i++) {
		TL_TRACE_EVENT_BEGIN0("merge", "rotated");
		TL_TRACE_EVENT_END0("merge", "rotated");
	}
	tl_shutdown();
	char older[PATH_MAX];
	snprintf(older, sizeof older, "%s.1", file);
	struct stat st;
	assert_int_equal(stat(older, &st), 0);
	const char *set[] = {older, file};
	tl_model whole;
	char msg[256];
	assert_int_equal(tl_model_read_binary_files(set, 2, NULL, &whole, msg, sizeof msg), 0);
	size_t slices = tl_test_count_events(&whole, TL_PHASE_BEGIN, "rotated");
	tl_model_free(&whole);

	char *text = capture_file(CAPTURE_BOOT);
	char *out = path_of("merge-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s,%s %s -o %s", older, file, text, out), 0);
	char *items = slices_of(out, "slice");
	assert_int_equal(tl_test_count(items, "name=\"rotated\""), slices);
	assert_has(items, expect_vsync);
	free(items);
	free(err);
	free(out);
	free(text);
	free(file);
}

/* ---- a snapshot and a live capture of the same run ------------------------------- */

/* The run keeps emitting until RUN_EVENTS of its slices were quick (see
 * RUN_WINDOW_NS), at most RUN_MAX_SLICES in all; the clock sync marker is
 * written again, the capture cleared, until one is quick, at most
 * RUN_MAX_SYNCS times. A slice or marker that the scheduler delayed says
 * nothing of the alignment: it is left out of the 10 us check, so a busy
 * machine needs more tries, not a looser bound. */
#define RUN_EVENTS 16
#define RUN_MAX_SLICES 2000
#define RUN_MAX_SYNCS 200
/* The most a clock read, an emit and a marker write may take together for
 * a slice to measure the alignment and not the machine's load: the
 * distance of a quick event to its marker is at most this plus the clock
 * sync marker's own latency (bounded alike), plus 2 us of text
 * truncation. */
#define RUN_WINDOW_NS 8000

static struct {
	int done;
	char skip[256];
	char snapshot[PATH_MAX];
	char capture[PATH_MAX];
	const char *clock;              /* the capture's trace_clock */
	char names[RUN_MAX_SLICES][24]; /* "step N", emitted in this order */
	bool quick[RUN_MAX_SLICES];     /* its begin and end each within the window */
	int nslices, nquick;
} run;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The instance's trace_clock: tai where the kernel has it (1.7e9 s from
 * boot: a capture nothing could align by chance), else mono. */
static const char *capture_clock(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/trace_clock", fixture.dir);
	char *clocks = tl_test_read_file(path, NULL);
	assert_non_null(clocks);
	const char *clock = strstr(clocks, " tai") || strstr(clocks, "[tai]") ? "tai" : "mono";
	free(clocks);
	return clock;
}

static void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	char *data = tl_test_read_file(from, &len);
	assert_non_null(data);
	FILE *f = fopen(to, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	free(data);
}

/* Copies the instance's trace to run.capture. */
static void copy_capture(void)
{
	char trace_path[PATH_MAX];
	snprintf(trace_path, sizeof trace_path, "%s/trace", fixture.dir);
	copy_file(trace_path, run.capture);
}

/* Of the capture: the parent_ts marker's latency, its kernel timestamp
 * less its value, given the capture's clock less boot now. */
static int64_t clock_sync_latency(const char *capture, int64_t capture_minus_boot)
{
	tl_import imp;
	assert_int_equal(tl_import_read_file(capture, &imp, NULL, NULL), 0);
	assert_int_equal(imp.stats[TL_STAT_SYSTRACE_PARSE_FAILURE], 0);
	const tl_import_clock_sync *parent = NULL;
	for (size_t i = 0; i < imp.nclock_syncs && !parent; i++)
		if (imp.clock_syncs[i].kind == TL_CLOCK_SYNC_PARENT_TS)
			parent = &imp.clock_syncs[i];
	assert_non_null(parent);
	int64_t latency = parent->ts - (parent->value_ns + capture_minus_boot);
	tl_import_free(&imp);
	return latency;
}

/* A systrace session's clock sync markers in a cleared capture, until one
 * has a latency within the window: the best one's latency, in ns. */
static int64_t write_quick_clock_sync(void)
{
	int64_t best = INT64_MAX;
	for (int attempt = 0; attempt < RUN_MAX_SYNCS; attempt++) {
		fixture_clear();
		tl_options sys = {.struct_size = sizeof sys, .recorder = TL_RECORDER_SYSTRACE};
		assert_int_equal(tl_init(&sys), 0);
		tl_shutdown();
		int64_t boot = clock_ns(CLOCK_BOOTTIME);
		int64_t capture_minus_boot =
		    clock_ns(strcmp(run.clock, "tai") == 0 ? CLOCK_TAI : CLOCK_MONOTONIC) - boot;
		copy_capture();
		int64_t latency = clock_sync_latency(run.capture, capture_minus_boot);
		best = latency < best ? latency : best;
		if (latency >= 0 && latency <= RUN_WINDOW_NS) {
			print_message("clock sync marker: %lld ns latency, attempt %d\n",
			              (long long)latency, attempt + 1);
			return latency;
		}
	}
	return best;
}

/*
 * The run, after a quick clock sync marker: a ring session emitting
 * slices, each begin and end followed at once by its marker written by
 * hand to the instance's trace_marker, until RUN_EVENTS were quick; the
 * ring's snapshot and the instance's trace file. Returns 0, or -1 with a
 * reason in run.skip.
 */
static int record_run_slices(void)
{
	int64_t latency = write_quick_clock_sync();
	if (latency < 0 || latency > RUN_WINDOW_NS) {
		snprintf(run.skip, sizeof run.skip,
		         "the machine is too busy: in %d tries the clock sync marker took at best "
		         "%lld ns (%d allowed)",
		         RUN_MAX_SYNCS, (long long)latency, RUN_WINDOW_NS);
		return -1;
	}
	tl_test_init(TL_RECORDER_RING, 4 << 20);
	/* the thread's first event registers it: not one of the timed ones */
	TL_TRACE_EVENT_INSTANT0("merge_run", "warm up", TL_SCOPE_THREAD);
	char marker_path[PATH_MAX];
	snprintf(marker_path, sizeof marker_path, "%s/trace_marker", fixture.dir);
	int fd = open(marker_path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	char begin[64], end[32];
	int end_len = snprintf(end, sizeof end, "E|%d", (int)getpid());
	run.nslices = run.nquick = 0;
	while (run.nquick < RUN_EVENTS && run.nslices < RUN_MAX_SLICES) {
		int i = run.nslices++;
		snprintf(run.names[i], sizeof run.names[i], "step %d", i);
		int begin_len =
		    snprintf(begin, sizeof begin, "B|%d|%s", (int)getpid(), run.names[i]);
		int64_t before = clock_ns(CLOCK_BOOTTIME);
		TL_TRACE_EVENT_BEGIN0("merge_run", run.names[i]);
		assert_int_equal(write(fd, begin, (size_t)begin_len), begin_len);
		int64_t between = clock_ns(CLOCK_BOOTTIME);
		TL_TRACE_EVENT_END0("merge_run", run.names[i]);
		assert_int_equal(write(fd, end, (size_t)end_len), end_len);
		int64_t after = clock_ns(CLOCK_BOOTTIME);
		run.quick[i] =
		    between - before <= RUN_WINDOW_NS && after - between <= RUN_WINDOW_NS;
		run.nquick += run.quick[i];
	}
	close(fd);
	assert_int_equal(tl_snapshot_binary(run.snapshot), 0);
	tl_shutdown();
	copy_capture();
	print_message("run on the %s clock: %d slices, %d of them quick\n", run.clock, run.nslices,
	              run.nquick);
	if (run.nquick < RUN_EVENTS) {
		snprintf(run.skip, sizeof run.skip,
		         "the machine is too busy: of %d slices only %d had a clock read, an emit "
		         "and a marker write within %d ns",
		         run.nslices, run.nquick, RUN_WINDOW_NS);
		return -1;
	}
	return 0;
}

/* Records the run once for the tests that read it; a reason in run.skip
 * when it cannot be. */
static void record_run(void)
{
	if (run.done)
		return;
	run.done = 1;
	if (tl_test_emulator()) {
		snprintf(run.skip, sizeof run.skip,
		         "under %s a write takes far longer than the microseconds measured here",
		         tl_test_emulator());
		return;
	}
	if (geteuid() != 0) {
		snprintf(run.skip, sizeof run.skip,
		         "a live capture writes to tracefs and needs root");
		return;
	}
	if (access(FIXTURE_TRACEFS "/trace_marker", F_OK) != 0) {
		snprintf(run.skip, sizeof run.skip, "no tracefs at %s", FIXTURE_TRACEFS);
		return;
	}
	fixture_create("merge");
	run.clock = capture_clock();
	assert_int_equal(fixture_write("trace_clock", run.clock), 0);
	snprintf(run.snapshot, sizeof run.snapshot, "%s", tl_test_path("merge-run", ".tlsnap"));
	snprintf(run.capture, sizeof run.capture, "%s", tl_test_path("merge-run", ".txt"));
	record_run_slices();
}

static void skip_without_run(void)
{
	record_run();
	if (run.skip[0]) {
		print_message("skipped: %s\n", run.skip);
		skip();
	}
}

/* The slice of a name and category (NULL: none given, "default") in an import. */
static const tl_import_slice *run_slice(const tl_import *imp, const char *name, const char *cat)
{
	for (size_t i = 0; i < imp->nslices; i++) {
		const tl_import_slice *s = &imp->slices[i];
		if (strcmp(s->name, name) == 0 && s->cat && strcmp(s->cat, cat) == 0)
			return s;
	}
	fail_msg("no slice %s of category %s", name, cat);
	return NULL;
}

/* Both copies kept: each app event within 10 us of its marker, which the
 * capture had on a clock the snapshot does not share. */
static void test_merge_puts_each_app_event_within_10us_of_its_marker(void **state)
{
	(void)state;
	skip_without_run();
	char *out = path_of("merge-run-out", ".json");
	char *err;
	assert_int_equal(
	    merge(&err, "%s %s -o %s --keep-duplicates", run.snapshot, run.capture, out), 0);
	char want[128];
	snprintf(want, sizeof want, "through the parent_ts marker of process %d", (int)getpid());
	assert_has(err, want);
	free(err);
	tl_import imp;
	assert_int_equal(tl_import_read_file(out, &imp, NULL, NULL), 0);
	int checked = 0;
	for (int i = 0; i < run.nslices; i++) {
		if (!run.quick[i])
			continue;
		const tl_import_slice *app = run_slice(&imp, run.names[i], "merge_run");
		const tl_import_slice *marker = run_slice(&imp, run.names[i], "default");
		int64_t begin = marker->ts - app->ts;
		int64_t end = (marker->ts + marker->dur) - (app->ts + app->dur);
		print_message("%s: marker %+lld ns at the begin, %+lld ns at the end\n",
		              run.names[i], (long long)begin, (long long)end);
		assert_true(llabs(begin) <= 10000);
		assert_true(llabs(end) <= 10000);
		checked++;
	}
	assert_int_equal(checked, RUN_EVENTS);
	tl_import_free(&imp);
	free(out);
}

/* Without --keep-duplicates each event is there once: the in-process copy. */
static void test_merge_of_the_same_run_shows_each_event_once(void **state)
{
	(void)state;
	skip_without_run();
	char *out = path_of("merge-run-out", ".json");
	char *err;
	assert_int_equal(merge(&err, "%s %s -o %s", run.snapshot, run.capture, out), 0);
	/* every quick slice, and those the scheduler delayed less than the
	 * dedup window */
	const char *shown_once = strstr(err, " events also recorded in process, shown once");
	assert_non_null(shown_once);
	while (shown_once > err && shown_once[-1] >= '0' && shown_once[-1] <= '9')
		shown_once--;
	int dropped = atoi(shown_once);
	print_message("%d events shown once; %d slices, %d quick\n", dropped, run.nslices,
	              run.nquick);
	assert_true(dropped >= run.nquick && dropped <= run.nslices);
	free(err);
	tl_import imp;
	assert_int_equal(tl_import_read_file(out, &imp, NULL, NULL), 0);
	for (int i = 0; i < run.nslices; i++) {
		if (!run.quick[i])
			continue;
		size_t copies = 0;
		for (size_t k = 0; k < imp.nslices; k++)
			copies += strcmp(imp.slices[k].name, run.names[i]) == 0;
		assert_int_equal(copies, 1);
		run_slice(&imp, run.names[i], "merge_run");
	}
	tl_import_free(&imp);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge_of_traces_on_one_clock_keeps_their_timestamps),
	    cmocka_unit_test(
	        test_merge_puts_a_mono_capture_on_a_boot_trace_through_its_clock_values),
	    cmocka_unit_test(test_merge_aligns_a_capture_through_its_parent_ts_marker),
	    cmocka_unit_test(test_merge_through_realtime_ts_warns_it_is_within_a_millisecond),
	    cmocka_unit_test(test_merge_refuses_traces_that_share_no_clock_naming_both),
	    cmocka_unit_test(test_merge_refusal_says_no_input_records_the_marker_process),
	    cmocka_unit_test(test_merge_assume_clock_names_the_clock_of_a_capture_that_names_none),
	    cmocka_unit_test(test_merge_keeps_pids_tids_and_the_in_process_names),
	    cmocka_unit_test(test_merge_shows_an_event_in_both_inputs_once_within_the_window),
	    cmocka_unit_test(test_merge_drops_a_capture_async_slice_with_its_end),
	    cmocka_unit_test(test_merge_shows_a_json_counter_sample_of_a_capture_once),
	    cmocka_unit_test(test_merge_reads_a_perfetto_input_on_its_snapshots_clock),
	    cmocka_unit_test(test_merge_writes_ftrace_text_for_a_txt_output),
	    cmocka_unit_test(test_merge_writes_perfetto_for_a_pftrace_output),
	    cmocka_unit_test(test_merge_names_a_missing_input),
	    cmocka_unit_test(test_merge_names_the_line_and_column_of_malformed_json),
	    cmocka_unit_test(test_merge_of_a_file_that_is_no_trace_is_an_error),
	    cmocka_unit_test(test_merge_of_text_with_no_readable_line_is_an_error),
	    cmocka_unit_test(test_merge_of_a_directory_says_it_is_a_directory),
	    cmocka_unit_test(test_merge_rotation_of_files_that_are_no_snapshots_is_an_error),
	    cmocka_unit_test(test_merge_usage_errors_exit_2),
	    cmocka_unit_test(test_merge_reads_a_file_recorders_rotation_as_one_input),
	    cmocka_unit_test(test_merge_puts_each_app_event_within_10us_of_its_marker),
	    cmocka_unit_test(test_merge_of_the_same_run_shows_each_event_once),
	};
	return cmocka_run_group_tests(tests, group_setup, fixture_group_teardown);
}
