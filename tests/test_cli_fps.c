/*
 * `timeline fps`: the built CLI on the --latency fixtures and on traces the
 * frame tracer recorded (binary snapshot, Chrome JSON, ftrace text), with
 * --json and --plot.
 */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/frame.h>
#include <timeline/timeline.h>

#define FIXTURES TL_SOURCE_DIR "/tests/fixtures/sf_latency/"

static const char *cli(void)
{
	const char *path = tl_test_cli();
	if (!path) {
		print_message("skipped: TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	return path;
}

/* Runs the CLI with output to a file; returns its exit status and the
 * output (malloc'd) in *out. */
static int run(char **out, const char *args)
{
	const char *path = tl_test_path("fps-out", ".txt");
	int status = tl_test_run("'%s' fps %s > '%s' 2>&1", cli(), args, path);
	*out = tl_test_read_file(path, NULL);
	assert_non_null(*out);
	return status;
}

static void test_cli_fps_latency_table_and_json(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(run(&out, FIXTURES "janky.txt"), 0);
	assert_non_null(strstr(out, "fps                 19.50"));
	assert_non_null(strstr(out, "jank count          2 (pauses of 20+ periods: 1)"));
	assert_non_null(strstr(out, "max frame delay     25 periods"));
	free(out);

	assert_int_equal(
	    run(&out, "--json " FIXTURES "overlapping_polls.txt " FIXTURES "pending.txt"), 0);
	assert_non_null(strstr(out, "\"frames\":120,\"duplicates\":40"));
	assert_non_null(strstr(out, "\"pending\":3"));
	assert_int_equal(tl_test_count(out, "\"source\":\"surfaceflinger_latency\""), 2);
	free(out);
}

static void test_cli_fps_bad_input_names_file_and_line(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(run(&out, FIXTURES "malformed.txt"), 1);
	assert_non_null(strstr(out, "malformed.txt:4: error: truncated row"));
	assert_non_null(strstr(out, "malformed.txt:6: error: desired present '12a'"));
	assert_non_null(strstr(out, "5 rejected"));
	free(out);
	assert_int_equal(run(&out, FIXTURES "empty.txt"), 1);
	assert_non_null(strstr(out, "empty.txt:1: error: empty file"));
	free(out);
	assert_int_equal(run(&out, FIXTURES "zero_period.txt"), 1);
	assert_non_null(strstr(out, "zero_period.txt:1: error: refresh period '0'"));
	free(out);
	assert_int_equal(run(&out, "/nonexistent/file"), 1);
	free(out);
	assert_int_equal(run(&out, "--bogus x"), 2);
	free(out);
	assert_int_equal(run(&out, "--help"), 0);
	assert_non_null(strstr(out, "usage: timeline fps"));
	free(out);
}

/* Records 120 frames at 60 Hz with two janky ones (3 and 4 dropped). */
static void record_frames(void)
{
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	tl_thread_set_name("render");
	tl_frame_options o = {.struct_size = sizeof o, .refresh_period_ns = 16666667};
	tl_frame_tracer *ft = tl_frame_tracer_create(&o);
	assert_non_null(ft);
	int64_t vsync = tl_now_ns();
	for (int i = 0; i < 120; i++) {
		int64_t duration = i == 40 ? 3 * 16666667 : i == 80 ? 4 * 16666667 : 5000000;
		tl_frame_times t = {.struct_size = sizeof t,
		                    .vsync_ns = vsync,
		                    .start_ns = vsync + 1000000,
		                    .end_ns = vsync + 1000000 + duration};
		assert_int_equal(tl_frame_record(ft, &t, NULL), 0);
		tl_frame_info info;
		assert_int_equal(tl_frame_last(ft, &info), 0);
		vsync += (int64_t)(info.dropped + 1) * 16666667;
	}
	tl_frame_tracer_destroy(ft);
}

static void check_trace_stats(const char *out)
{
	assert_non_null(strstr(out, "\"source\":\"trace\""));
	assert_non_null(strstr(out, "\"frames\":120"));
	assert_non_null(strstr(out, "\"refresh_period_ns\":16666667"));
	assert_non_null(strstr(out, "\"jank_count\":2"));
	assert_non_null(strstr(out, "\"max_frame_delay\":5"));
}

static void test_cli_fps_of_a_directory_says_it_is_a_directory(void **state)
{
	(void)state;
	char *out, expected[4200];
	assert_int_equal(run(&out, FIXTURES), 1);
	snprintf(expected, sizeof expected, "timeline fps: %s: is a directory\n", FIXTURES);
	assert_string_equal(out, expected);
	free(out);
}

static void test_cli_fps_reads_frame_slices_of_every_trace_format(void **state)
{
	(void)state;
	cli();
	record_frames();
	const char *bin = tl_test_path("frames", ".tlsnap");
	const char *json = tl_test_path("frames", ".json");
	const char *text = tl_test_path("frames", ".txt");
	assert_int_equal(tl_snapshot_binary(bin), 0);
	assert_int_equal(tl_snapshot_json(json), 0);
	assert_int_equal(tl_snapshot_ftrace(text), 0);
	tl_shutdown();

	char args[1024];
	char *out;
	snprintf(args, sizeof args, "--json '%s'", bin);
	assert_int_equal(run(&out, args), 0);
	check_trace_stats(out);
	assert_non_null(strstr(out, "\"dropped_frames\":7,\"janky_frames\":2"));
	assert_non_null(strstr(out, "thread render"));
	free(out);

	snprintf(args, sizeof args, "--json '%s'", json);
	assert_int_equal(run(&out, args), 0);
	check_trace_stats(out);
	assert_non_null(strstr(out, "\"dropped_frames\":7,\"janky_frames\":2"));
	free(out);

	/* ftrace text keeps no arguments: frames end where they were presented
	 * to within a frame, and the period comes from the counter */
	snprintf(args, sizeof args, "--json '%s'", text);
	assert_int_equal(run(&out, args), 0);
	assert_non_null(strstr(out, "\"frames\":120"));
	assert_non_null(strstr(out, "\"refresh_period_ns\":16666667"));
	free(out);
}

/* Frames that started at their vsync carry no vsync_ns argument: the slice
 * start is the vsync. The fixture's 10 frames at 50 Hz start on vsyncs; frame
 * 5 takes 2.5 periods (2 dropped) and frame 8 takes 1.2 (1 dropped). */
static void test_cli_fps_counts_drops_from_slice_starts_without_vsync_arg(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(
	    run(&out, "--json " TL_SOURCE_DIR "/tests/fixtures/frames/no_vsync_arg.json"), 0);
	assert_non_null(strstr(out, "\"frames\":10,"));
	assert_non_null(strstr(out, "\"refresh_period_ns\":20000000,"));
	assert_non_null(strstr(out, "\"dropped_frames\":3,\"janky_frames\":2"));
	/* presents on the vsync slots each frame made: 20 ms apart, 60 ms after
	 * frame 5, 40 ms after frame 8 */
	assert_non_null(strstr(out, "\"periods_per_interval\":{\"1\":7,\"2\":1,\"3\":1,"));
	assert_non_null(strstr(out, "\"max\":60.000}"));
	free(out);
}

/* `fps --json` of ftrace text: lines[n] after the task column given; the
 * output (free it). */
static char *fps_of_text(const char *stem, const char *task, const char *const *lines, size_t n)
{
	const char *path = tl_test_path(stem, ".txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# tracer: nop\n", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %s [000] .... %s\n", task, lines[i]);
	assert_int_equal(fclose(f), 0);
	char *out, args[512];
	snprintf(args, sizeof args, "--json '%s'", path);
	assert_int_equal(run(&out, args), 0);
	return out;
}

/* Text whose markers go back in time is read again from its start: the
 * frames the first reading took are forgotten, not counted twice. */
static void test_cli_fps_counts_each_frame_once_when_text_goes_back_in_time(void **state)
{
	(void)state;
	static const char *const lines[] = {
	    "1.000000: tracing_mark_write: B|7|frame 1", "1.010000: tracing_mark_write: E|7",
	    "1.016667: tracing_mark_write: B|7|frame 2", "1.026667: tracing_mark_write: E|7",
	    "1.033334: tracing_mark_write: B|7|frame 3", "1.043334: tracing_mark_write: E|7",
	    /* an earlier frame, last in the file */
	    "0.983333: tracing_mark_write: B|7|frame 0", "0.993333: tracing_mark_write: E|7"};
	char *out = fps_of_text("fps-unsorted", "main-7 (7)", lines, sizeof lines / sizeof *lines);
	assert_non_null(strstr(out, "\"frame_slices\":4,"));
	free(out);
}

/* A thread first seen without its process learns it later: its frames are
 * that process's, the period its counter's (8.33 ms), not estimated. */
static void test_cli_fps_takes_the_process_a_thread_learns_later(void **state)
{
	(void)state;
	static const char *const lines[] = {
	    "0.900000: tracing_mark_write: C|555|refresh_period_ns|8333333",
	    "1.000000: tracing_mark_write: B|0|frame 1",
	    "1.030000: tracing_mark_write: E",
	    "1.036000: tracing_mark_write: B|0|frame 2",
	    "1.040000: tracing_mark_write: E",
	    "1.053000: tracing_mark_write: B|555|frame 3",
	    "1.060000: tracing_mark_write: E"};
	char *out =
	    fps_of_text("fps-late-pid", "t-101 (-----)", lines, sizeof lines / sizeof *lines);
	assert_non_null(strstr(out, "\"refresh_period_ns\":8333333,\"period_estimated\":false"));
	assert_non_null(strstr(out, "\"frame_slices\":3,"));
	free(out);
}

/* A pipe is read once, whole: the same figures as the file. */
static void test_cli_fps_reads_a_trace_from_a_pipe(void **state)
{
	(void)state;
	char *from_file, *from_pipe;
	assert_int_equal(
	    run(&from_file, "--json " TL_SOURCE_DIR "/tests/fixtures/frames/no_vsync_arg.json"), 0);
	assert_int_equal(run(&from_pipe, "--json /dev/stdin < " TL_SOURCE_DIR
	                                 "/tests/fixtures/frames/no_vsync_arg.json"),
	                 0);
	assert_non_null(strstr(from_pipe, "\"frame_slices\":10,"));
	const char *a = strstr(from_file, "\"source\""), *b = strstr(from_pipe, "\"source\"");
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b); /* all but the label */
	free(from_file);
	free(from_pipe);
}

static void test_cli_fps_plot_writes_an_svg(void **state)
{
	(void)state;
	const char *svg = tl_test_path("fps", ".svg");
	char args[1024];
	snprintf(args, sizeof args, "'%s' '%s' --plot '%s'", FIXTURES "janky.txt",
	         FIXTURES "steady_60hz.txt", svg);
	char *out;
	assert_int_equal(run(&out, args), 0);
	free(out);
	char *doc = tl_test_read_file(svg, NULL);
	assert_non_null(doc);
	assert_non_null(strstr(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_int_equal(tl_test_count(doc, "class=\"period\""), 6); /* 1x 2x 3x, 2 panels */
	assert_int_equal(tl_test_count(doc, "<title>frame "), 13 + 119);
	assert_non_null(strstr(doc, "</svg>\n"));
	free(doc);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli_fps_latency_table_and_json),
	    cmocka_unit_test(test_cli_fps_bad_input_names_file_and_line),
	    cmocka_unit_test(test_cli_fps_of_a_directory_says_it_is_a_directory),
	    cmocka_unit_test(test_cli_fps_reads_frame_slices_of_every_trace_format),
	    cmocka_unit_test(test_cli_fps_counts_drops_from_slice_starts_without_vsync_arg),
	    cmocka_unit_test(test_cli_fps_counts_each_frame_once_when_text_goes_back_in_time),
	    cmocka_unit_test(test_cli_fps_takes_the_process_a_thread_learns_later),
	    cmocka_unit_test(test_cli_fps_reads_a_trace_from_a_pipe),
	    cmocka_unit_test(test_cli_fps_plot_writes_an_svg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
