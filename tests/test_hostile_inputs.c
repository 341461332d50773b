/*
 * Every command that reads traces (slices, stats, convert, merge, fps) on
 * the crafted inputs kept as fuzz seeds (tests/fuzz/seeds/): an input that
 * cannot be read is one line naming the file, the same for each command,
 * in the words of the format the file is, and exit status 1; what was
 * skipped to read the rest is a warning; a well-formed trace that holds no
 * events is no error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/timeline.h>
#include <timeline/trace_event.h>

#include "support/test_support.h"
#include "tools/readers/json_reader.h"

#define SEEDS TL_SOURCE_DIR "/tests/fuzz/seeds/"

static const char *cli;

static int group_setup(void **state)
{
	(void)state;
	tl_test_clear_environment();
	cli = tl_test_cli();
	return cli ? 0 : -1;
}

/* The commands, each with what follows the input on its command line. */
static const struct command {
	const char *name;
	const char *after; /* %s: an output path */
} commands[] = {
    {"slices", ""},       {"stats", ""},
    {"convert", "-o %s"}, {"merge", "%s -o %s"}, /* the input twice: merge takes two */
    {"fps", ""},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* Runs `timeline CMD PATH ...`: its exit status, its standard error in *err. */
static int run(const struct command *c, const char *path, char **err)
{
	char after[8192];
	const char *out = tl_test_path("hostile-out", ".json");
	if (strcmp(c->name, "merge") == 0)
		snprintf(after, sizeof after, c->after, path, out);
	else
		snprintf(after, sizeof after, c->after, out);
	int rc = tl_test_run_cli(NULL, err, "%s '%s' %s", c->name, path, after);
	assert_non_null(*err);
	return rc;
}

/* Every command exits with 1 and prints one line: "timeline CMD: PATH"
 * and then `says` (the message, ":LINE:COLUMN: ..." or ": ..."). */
static void assert_refused(const char *path, const char *says)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char *err;
		int rc = run(&commands[i], path, &err);
		char want[8192];
		snprintf(want, sizeof want, "timeline %s: %s%s\n", commands[i].name, path, says);
		if (rc != 1 || strcmp(err, want) != 0)
			fail_msg("timeline %s %s: exit %d, said:\n%swanted:\n%s", commands[i].name,
			         path, rc, err, want);
		free(err);
	}
}

static void test_every_command_refuses_a_json_number_out_of_range_naming_its_place(void **state)
{
	(void)state;
	static const struct {
		const char *seed, *says;
	} cases[] = {
	    {"ts-beyond-a-double.json", ":2:27: number out of range '1e400'"},
	    {"arg-beyond-a-double.json", ":2:65: number out of range '-1e400'"},
	    {"ts-beyond-64-bit-nanoseconds.json",
	     ":2:27: ts 1e300 is out of range (beyond 2^63 nanoseconds)"},
	    {"dur-beyond-64-bit-nanoseconds.json",
	     ":2:35: dur 9223372036854776 is out of range (beyond 2^63 nanoseconds)"},
	    {"tts-beyond-64-bit-nanoseconds.json",
	     ":2:59: tts -1e17 is out of range (beyond 2^63 nanoseconds)"},
	    {"tdur-beyond-64-bit-nanoseconds.json",
	     ":2:60: tdur 1e20 is out of range (beyond 2^63 nanoseconds)"},
	    {"tid-beyond-64-bits.json",
	     ":2:51: tid 18446744073709551617 is not an integer from 0 to 4294967295"},
	    {"pid-beyond-32-bits.json", ":2:43: pid 1e30 is not an integer from 0 to 4294967295"},
	    {"pid-negative.json", ":2:43: pid -1 is not an integer from 0 to 4294967295"},
	    {"tid-not-an-integer.json", ":2:51: tid 1.5 is not an integer from 0 to 4294967295"},
	    {"metadata-clock-value-not-an-integer.json",
	     ":4:42: metadata boottime_ns 1e30 is not an integer of nanoseconds"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, SEEDS "fuzz_json_reader/%s", cases[i].seed);
		assert_refused(path, cases[i].says);
	}
}

/* Nothing read: every line failed or is cut, every event was skipped, the
 * snapshot was cut before its first event, the file holds only blanks. */
static void test_every_command_refuses_an_input_of_which_nothing_could_be_read(void **state)
{
	(void)state;
	static const struct {
		const char *seed, *says;
	} cases[] = {
	    {"fuzz_json_reader/only-events-skipped.json",
	     ": nothing could be read: 2 skipped (json_missing_phase 1, json_missing_ts 1)"},
	    {"fuzz_json_reader/ts-string-that-is-no-time.json",
	     ": nothing could be read: 1 skipped (json_missing_ts 1)"},
	    {"fuzz_json_reader/async-id-beyond-64-bits.json",
	     ": nothing could be read: 1 skipped (json_async_missing_pid_or_id 1)"},
	    {"fuzz_ftrace_text/only-event-without-end-of-line.txt",
	     ": nothing could be read: line 2, the last, has no end of line: not read (as "
	     "Perfetto does not)"},
	    {"fuzz_binary_snapshot/file-recorder-cut-after-its-header.tl",
	     ": snapshot is truncated at byte 32 of 32 (no END chunk), before any event: nothing "
	     "could be read"},
	    {"fuzz_binary_snapshot/file-recorder-first-chunk-past-the-end.tl",
	     ": snapshot is truncated at byte 32 of 9016 (no END chunk), before any event: nothing "
	     "could be read"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, SEEDS "%s", cases[i].seed);
		assert_refused(path, cases[i].says);
	}
}

/* A file of blanks is said to be one; fps, which also reads SurfaceFlinger
 * latency dumps, says it its own way (docs/frame.md). */
static void test_every_command_says_a_file_of_blanks_holds_no_events(void **state)
{
	(void)state;
	const char *path = SEEDS "fuzz_ftrace_text/white-space-only.txt";
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char *err;
		int rc = run(&commands[i], path, &err);
		char want[4096];
		if (strcmp(commands[i].name, "fps") == 0)
			snprintf(want, sizeof want, "timeline fps: %s:1: error: empty file\n",
			         path);
		else
			snprintf(want, sizeof want,
			         "timeline %s: %s: nothing but white space (32 bytes): it holds no "
			         "events\n",
			         commands[i].name, path);
		assert_int_equal(rc, 1);
		assert_string_equal(err, want);
		free(err);
	}
}

/* A damaged file of a known format gets that format's error, with its
 * byte, from every command: not "not a trace", not a snapshot's "bad
 * magic", not a latency dump's. */
static void test_every_command_names_the_format_of_a_damaged_file(void **state)
{
	(void)state;
	assert_refused(SEEDS "fuzz_perfetto_reader/first-field-of-a-bad-wire-type.perfetto-trace",
	               ": byte 3: malformed protobuf field");
	assert_refused(SEEDS "fuzz_perfetto_reader/cut-inside-its-first-packet.perfetto-trace",
	               ": byte 0: malformed or cut short packet");
}

/* An event past TL_JSON_EVENT_MAX is refused at its line, having held no
 * more than the limit. */
static void test_every_command_refuses_an_event_larger_than_the_limit(void **state)
{
	(void)state;
	char *path = strdup(tl_test_path("hostile-large-event", ".json"));
	assert_non_null(path);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\":[\n{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1},\n"
	      "{\"ph\":\"X\",\"ts\":2,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"",
	      f);
	static char chunk[1 << 16];
	memset(chunk, 'n', sizeof chunk);
	for (size_t n = 0; n <= TL_JSON_EVENT_MAX; n += sizeof chunk)
		assert_int_equal(fwrite(chunk, 1, sizeof chunk, f), sizeof chunk);
	fputs("\"}]}\n", f);
	assert_int_equal(fclose(f), 0);
	assert_refused(path, ":3:1: event larger than 64 MiB (the limit for one event)");
	unlink(path);
	free(path);
}

/* Some of the input skipped, the rest read: one warning line per input,
 * and the command does what it does with the rest. */
static void test_every_command_warns_of_what_it_skipped_and_reads_the_rest(void **state)
{
	(void)state;
	static const struct {
		const char *seed, *says;
	} cases[] = {
	    {"fuzz_json_reader/counter-values-not-finite.json",
	     ": 3 skipped (json_counter_invalid_value 3); read the rest"},
	    {"fuzz_json_reader/flow-id-beyond-64-bits.json",
	     ": 1 skipped (flow_invalid_id 1); read the rest"},
	    {"fuzz_json_reader/system-trace-events-last-line-without-end.json",
	     ": the last line of systemTraceEvents has no end of line: not read (as Perfetto does "
	     "not); read the rest"},
	    {"fuzz_ftrace_text/last-event-without-end-of-line.txt",
	     ": line 3, the last, has no end of line: not read (as Perfetto does not); read the "
	     "rest"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, SEEDS "%s", cases[i].seed);
		for (size_t k = 0; k < NCOMMANDS; k++) {
			const struct command *c = &commands[k];
			char *err;
			int rc = strcmp(c->name, "merge") == 0
			             ? tl_test_run_cli(
			                   NULL, &err, "merge '%s' '%s' --assume-clock boot -o %s",
			                   path, path, tl_test_path("hostile-out", ".json"))
			             : run(c, path, &err);
			char want[8192];
			snprintf(want, sizeof want, "timeline %s: warning: %s%s\n", c->name, path,
			         cases[i].says);
			if (!strstr(err, want))
				fail_msg("timeline %s %s: exit %d, said:\n%swanted:\n%s", c->name,
				         path, rc, err, want);
			/* fps finds no frame slices in them: its own error */
			assert_int_equal(rc, strcmp(c->name, "fps") == 0);
			assert_int_equal(tl_test_count(err, "warning"),
			                 strcmp(c->name, "merge") == 0 ? 2 : 1);
			free(err);
		}
	}
}

/* A snapshot cut after some of its events: slices, stats and fps say what
 * was lost, as convert and merge do, and read the rest. */
static void test_every_command_warns_of_a_snapshot_cut_after_its_first_events(void **state)
{
	(void)state;
	const char *path = SEEDS "fuzz_binary_snapshot/file-recorder-cut.tl";
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char *err;
		run(&commands[i], path, &err);
		char want[4096];
		snprintf(
		    want, sizeof want,
		    "timeline %s: warning: %s: snapshot is truncated (no END chunk; whole chunks "
		    "up to byte 272 of 5000 written)",
		    commands[i].name, path);
		if (!strstr(err, want))
			fail_msg("timeline %s %s said:\n%swanted:\n%s", commands[i].name, path, err,
			         want);
		free(err);
	}
}

/* A well-formed trace with no events in it - Chrome JSON's empty
 * traceEvents, a kernel trace's header alone, a whole snapshot of a
 * recorder that recorded nothing - is no error, and no warning. */
static void test_a_well_formed_trace_without_events_is_no_error(void **state)
{
	(void)state;
	const char *json = strdup(tl_test_path("hostile-empty", ".json"));
	const char *text = strdup(tl_test_path("hostile-empty", ".txt"));
	const char *snap = strdup(tl_test_path("hostile-empty", ".tl"));
	assert_non_null(json);
	assert_non_null(text);
	assert_non_null(snap);
	FILE *f = fopen(json, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\":[]}\n", f);
	fclose(f);
	f = fopen(text, "w");
	assert_non_null(f);
	fputs("# tracer: nop\n#\n", f);
	fclose(f);
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	assert_int_equal(tl_snapshot_binary(snap), 0);
	tl_shutdown();
	const char *const paths[] = {json, text, snap};
	for (size_t i = 0; i < 3; i++) {
		for (size_t k = 0; k < 3; k++) { /* slices, stats, convert */
			char *err;
			int rc = run(&commands[k], paths[i], &err);
			if (rc != 0 || strstr(err, "nothing") || strstr(err, "warning"))
				fail_msg("timeline %s %s: exit %d, said:\n%s", commands[k].name,
				         paths[i], rc, err);
			free(err);
		}
		unlink(paths[i]);
	}
	free((void *)json);
	free((void *)text);
	free((void *)snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_every_command_refuses_a_json_number_out_of_range_naming_its_place),
	    cmocka_unit_test(test_every_command_refuses_an_input_of_which_nothing_could_be_read),
	    cmocka_unit_test(test_every_command_says_a_file_of_blanks_holds_no_events),
	    cmocka_unit_test(test_every_command_names_the_format_of_a_damaged_file),
	    cmocka_unit_test(test_every_command_refuses_an_event_larger_than_the_limit),
	    cmocka_unit_test(test_every_command_warns_of_what_it_skipped_and_reads_the_rest),
	    cmocka_unit_test(test_every_command_warns_of_a_snapshot_cut_after_its_first_events),
	    cmocka_unit_test(test_a_well_formed_trace_without_events_is_no_error),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
