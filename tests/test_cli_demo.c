/*
 * `timeline demo`: runs the built CLI and reads what it wrote. The JSON is
 * checked for meaning by a small Python script this suite writes into the
 * test temp directory (strict parse, metadata, slices, counters, async,
 * flows, per-thread balance).
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEMO_SECONDS "0.3"

/* Checks over one Chrome JSON trace: check_demo.py CHECK FILE [ARGS...]. */
static const char demo_checker[] =
    "import json, sys\n"
    "\n"
    "def fail(msg):\n"
    "    print('demo check failed: ' + msg)\n"
    "    sys.exit(1)\n"
    "\n"
    "def reject_constant(name):\n"
    "    raise ValueError('not JSON: ' + name)\n"
    "\n"
    "def no_duplicates(pairs):\n"
    "    keys = [k for k, _ in pairs]\n"
    "    if len(keys) != len(set(keys)):\n"
    "        raise ValueError('duplicate key in ' + repr(keys))\n"
    "    return dict(pairs)\n"
    "\n"
    "def load(path):\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        doc = json.load(f, parse_constant=reject_constant,\n"
    "                        object_pairs_hook=no_duplicates)\n"
    "    if not isinstance(doc, dict) or not isinstance(doc.get('traceEvents'), list):\n"
    "        fail('no traceEvents array')\n"
    "    return doc['traceEvents']\n"
    "\n"
    "def thread_names(evs):\n"
    "    return {(e.get('pid'), e.get('tid')): e['args']['name'] for e in evs\n"
    "            if e.get('ph') == 'M' and e.get('name') == 'thread_name'}\n"
    "\n"
    "def on_thread(names, e, prefix):\n"
    "    return names.get((e.get('pid'), e.get('tid')), '').startswith(prefix)\n"
    "\n"
    "def check_events(evs, args):\n"
    "    if not [e for e in evs if e.get('ph') != 'M']:\n"
    "        fail('no events besides metadata')\n"
    "\n"
    "def check_process_name(evs, args):\n"
    "    names = [e['args']['name'] for e in evs\n"
    "             if e.get('ph') == 'M' and e.get('name') == 'process_name']\n"
    "    if args[0] not in names:\n"
    "        fail('process names ' + repr(names))\n"
    "\n"
    "def check_thread_names(evs, args):\n"
    "    names = set(thread_names(evs).values())\n"
    "    if not set(args) <= names:\n"
    "        fail('thread names ' + repr(sorted(names)))\n"
    "\n"
    "def check_begin_end(evs, args):\n"
    "    for ph in ('B', 'E'):\n"
    "        if not [e for e in evs if e.get('ph') == ph and e.get('name') == args[0]]:\n"
    "            fail('no ' + ph + ' event named ' + args[0])\n"
    "\n"
    "def check_slices(evs, args):\n"
    "    have = {e.get('name') for e in evs if e.get('ph') in ('B', 'X')}\n"
    "    missing = [n for n in args if n not in have]\n"
    "    if missing:\n"
    "        fail('missing slices ' + repr(missing) + ' in ' + repr(sorted(have)))\n"
    "\n"
    "def check_counter(evs, args):\n"
    "    for e in evs:\n"
    "        if e.get('ph') == 'C' and e.get('name') == args[0]:\n"
    "            values = list(e.get('args', {}).values())\n"
    "            if values and all(type(v) in (int, float) for v in values):\n"
    "                return\n"
    "    fail('no counter ' + args[0] + ' with numeric values')\n"
    "\n"
    "def async_pairs(evs):\n"
    "    def key(e):\n"
    "        ident = e.get('id', e.get('id2'))\n"
    "        return (e.get('cat'), e.get('name'), json.dumps(ident, sort_keys=True))\n"
    "    begins = {key(e): e for e in evs\n"
    "              if e.get('ph') == 'b' and ('id' in e or 'id2' in e)}\n"
    "    return [(begins[key(e)], e) for e in evs\n"
    "            if e.get('ph') == 'e' and key(e) in begins]\n"
    "\n"
    "def check_async_pair(evs, args):\n"
    "    if not async_pairs(evs):\n"
    "        fail('no b/e pair with the same cat, name and id')\n"
    "\n"
    "def check_async_across(evs, args):\n"
    "    names = thread_names(evs)\n"
    "    for b, e in async_pairs(evs):\n"
    "        if on_thread(names, b, args[0]) and on_thread(names, e, args[1]):\n"
    "            return\n"
    "    fail('no async slice begun on ' + args[0] + ' and ended on ' + args[1] + '*')\n"
    "\n"
    "def bound_slice(evs, e):\n"
    "    inner = None\n"
    "    for x in evs:\n"
    "        same_thread = (x.get('pid'), x.get('tid')) == (e.get('pid'), e.get('tid'))\n"
    "        if (x.get('ph') == 'X' and same_thread\n"
    "                and x['ts'] <= e['ts'] <= x['ts'] + x['dur']\n"
    "                and (inner is None or x['ts'] >= inner['ts'])):\n"
    "            inner = x\n"
    "    return inner\n"
    "\n"
    "def check_flow(evs, args):\n"
    "    names = thread_names(evs)\n"
    "    starts = {e.get('id'): e for e in evs if e.get('ph') == 's'}\n"
    "    for e in evs:\n"
    "        src = starts.get(e.get('id')) if e.get('ph') == 'f' else None\n"
    "        if src is None or e.get('bp') != 'e':\n"
    "            continue\n"
    "        out = bound_slice(evs, src)\n"
    "        if (out and out.get('name') == args[0] and on_thread(names, src, args[1])\n"
    "                and on_thread(names, e, args[2])):\n"
    "            return\n"
    "    fail('no flow out of ' + args[0] + ' on ' + args[1] + ' into ' + args[2] + '*')\n"
    "\n"
    "def check_balance(evs, args):\n"
    "    threads = {}\n"
    "    for e in evs:\n"
    "        if e.get('ph') in ('B', 'E'):\n"
    "            threads.setdefault((e.get('pid'), e.get('tid')), []).append(e)\n"
    "    if not threads:\n"
    "        fail('no B/E events')\n"
    "    for track, seq in threads.items():\n"
    "        seq.sort(key=lambda e: e['ts'])\n"
    "        stack = []\n"
    "        for e in seq:\n"
    "            if e['ph'] == 'B':\n"
    "                stack.append(e.get('name'))\n"
    "            elif not stack:\n"
    "                fail('E without B on %r at ts %r' % (track, e['ts']))\n"
    "            else:\n"
    "                name = stack.pop()\n"
    "                if e.get('name') != name:\n"
    "                    fail('E %r closes B %r on %r at ts %r'\n"
    "                         % (e.get('name'), name, track, e['ts']))\n"
    "        if stack:\n"
    "            fail('slices left open on %r: %r' % (track, stack))\n"
    "\n"
    "CHECKS = {\n"
    "    'events': check_events, 'process_name': check_process_name,\n"
    "    'thread_names': check_thread_names, 'begin_end': check_begin_end,\n"
    "    'slices': check_slices, 'counter': check_counter,\n"
    "    'async_pair': check_async_pair, 'async_across': check_async_across,\n"
    "    'flow': check_flow, 'balance': check_balance,\n"
    "}\n"
    "\n"
    "try:\n"
    "    events = load(sys.argv[2])\n"
    "except ValueError as err:\n"
    "    fail('%s is not strict JSON: %s' % (sys.argv[2], err))\n"
    "CHECKS[sys.argv[1]](events, sys.argv[3:])\n";

static char checker_path[512];
static bool have_python;

/* One recorded run of the demo, shared by the tests that read it. */
struct demo_run {
	const char *key; /* NULL: free slot */
	int status;
	char output[512];
	char out_log[512];
	char err_log[512];
};

static struct demo_run demo_runs[16];

static const char *cli_or_skip(void)
{
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	return cli;
}

static void python_or_skip(void)
{
	if (!have_python) {
		print_message("python3 is not available\n");
		skip();
	}
}

/*
 * Runs `timeline demo ARGS -o <tmp>EXT` once per key (later calls return
 * the same run), with TIMELINE_RECORDER removed so --recorder decides.
 */
static const struct demo_run *demo_run_once(const char *key, const char *args, const char *ext)
{
	const char *cli = cli_or_skip();
	struct demo_run *run = NULL;
	for (size_t i = 0; i < sizeof demo_runs / sizeof demo_runs[0]; i++) {
		if (demo_runs[i].key && strcmp(demo_runs[i].key, key) == 0)
			return &demo_runs[i];
		if (!demo_runs[i].key && !run)
			run = &demo_runs[i];
	}
	assert_non_null(run);
	run->key = key;
	snprintf(run->output, sizeof run->output, "%s", tl_test_path("demo", ext));
	snprintf(run->out_log, sizeof run->out_log, "%s", tl_test_path("demo", ".stdout"));
	snprintf(run->err_log, sizeof run->err_log, "%s", tl_test_path("demo", ".stderr"));
	run->status = tl_test_run("env -u TIMELINE_RECORDER '%s' demo %s -o '%s' >'%s' 2>'%s'", cli,
	                          args, run->output, run->out_log, run->err_log);
	return run;
}

/* The JSON run for the recorder named by the test's state; must succeed. */
static const struct demo_run *demo_json_run(void **state)
{
	const char *recorder = *state;
	char args[128];
	snprintf(args, sizeof args, "--recorder %s --seconds " DEMO_SECONDS, recorder);
	const struct demo_run *run = demo_run_once(recorder, args, ".json");
	if (run->status != 0)
		tl_test_run("cat '%s'", run->err_log);
	assert_int_equal(run->status, 0);
	return run;
}

/* Runs the checker; 0 when the check passed (its reason is printed if not). */
static int check_json(const char *check, const char *path, const char *args)
{
	python_or_skip();
	return tl_test_run("python3 '%s' %s '%s' %s", checker_path, check, path, args);
}

static char *read_or_fail(const char *path)
{
	char *text = tl_test_read_file(path, NULL);
	assert_non_null(text);
	return text;
}

/* ---- per recorder: the JSON trace ---------------------------------------- */

static void test_demo_exits_0_with_strict_json(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("events", run->output, ""), 0);
}

static void test_demo_json_names_the_process(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("process_name", run->output, "timeline-demo"), 0);
}

static void test_demo_json_names_main_and_worker_threads(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	/* the last worker's name is longer than the kernel's 15-byte comm */
	assert_int_equal(check_json("thread_names", run->output,
	                            "main worker-1 worker-2 worker-3-with-a-long-name"),
	                 0);
}

static void test_demo_json_has_frame_begin_end(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("begin_end", run->output, "frame"), 0);
}

static void test_demo_json_has_queue_depth_counter(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("counter", run->output, "queue_depth"), 0);
}

static void test_demo_json_has_memory_counter(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("counter", run->output, "memory_kb"), 0);
}

static void test_demo_json_has_async_pair_with_one_id(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("async_pair", run->output, ""), 0);
}

static void test_demo_async_load_begins_on_main_and_ends_on_worker(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("async_across", run->output, "main worker-"), 0);
}

static void test_demo_flow_goes_from_submit_job_to_worker(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("flow", run->output, "submit_job main worker-"), 0);
}

static void test_demo_slices_balance_per_thread(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("balance", run->output, ""), 0);
}

static void test_demo_json_has_copied_level_name(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	assert_int_equal(check_json("slices", run->output, "'load level 1'"), 0);
}

/* ---- output formats -------------------------------------------------------- */

static void test_demo_txt_output_is_ftrace_text(void **state)
{
	(void)state;
	const struct demo_run *run = demo_run_once("ftrace", "--seconds " DEMO_SECONDS, ".txt");
	assert_int_equal(run->status, 0);
	char *text = read_or_fail(run->output);
	assert_true(strncmp(text, "# tracer: nop\n", 14) == 0);
	assert_non_null(strstr(text, "tracing_mark_write: B|"));
	free(text);
}

static void test_demo_format_option_overrides_extension(void **state)
{
	(void)state;
	const struct demo_run *run =
	    demo_run_once("format", "--format ftrace --seconds " DEMO_SECONDS, ".json");
	assert_int_equal(run->status, 0);
	char *text = read_or_fail(run->output);
	assert_true(strncmp(text, "# tracer: nop\n", 14) == 0);
	free(text);
}

static void test_demo_perfetto_output_decodes_with_its_slices(void **state)
{
	(void)state;
	const struct demo_run *run =
	    demo_run_once("perfetto", "--seconds " DEMO_SECONDS, ".perfetto-trace");
	assert_int_equal(run->status, 0);
	char *text = tl_test_perfetto_decode(run->output);
	assert_non_null(strstr(text, "name: \"frame\""));
	assert_non_null(strstr(text, "thread_name: \"worker-1\""));
	free(text);
	char *out = read_or_fail(run->out_log);
	assert_non_null(strstr(out, "(Perfetto, "));
	free(out);
}

static void test_demo_binary_output_converts_to_json_with_its_slices(void **state)
{
	(void)state;
	const struct demo_run *run = demo_run_once("binary", "--seconds " DEMO_SECONDS, ".tlsnap");
	assert_int_equal(run->status, 0);
	const char *json = tl_test_path("demo-converted", ".json");
	assert_int_equal(tl_test_run("'%s' convert '%s' -o '%s'", cli_or_skip(), run->output, json),
	                 0);
	assert_int_equal(
	    check_json("slices", json, "frame update physics render submit_job animate cull"), 0);
}

static void test_demo_binary_summary_says_how_to_convert(void **state)
{
	(void)state;
	const struct demo_run *run = demo_run_once("binary", "--seconds " DEMO_SECONDS, ".tlsnap");
	assert_int_equal(run->status, 0);
	char *out = read_or_fail(run->out_log);
	char expected[640];
	snprintf(expected, sizeof expected, "timeline convert %s -o trace.json", run->output);
	assert_non_null(strstr(out, expected));
	free(out);
}

/* ---- summary ------------------------------------------------------------------ */

static void test_demo_summary_names_recorder_output_and_viewer(void **state)
{
	const struct demo_run *run = demo_json_run(state);
	char *out = read_or_fail(run->out_log);
	assert_non_null(strstr(out, "ring recorder"));
	assert_non_null(strstr(out, run->output));
	assert_non_null(strstr(out, "written"));
	assert_non_null(strstr(out, "https://ui.perfetto.dev"));
	free(out);
}

/* ---- errors and help ------------------------------------------------------------ */

/* Runs the demo with arguments it answers before recording: returns its exit
 * status; *err and *out get what it printed (malloc'd). */
static int demo_run_quick(const char *args, char **err, char **out)
{
	const char *cli = cli_or_skip();
	char out_log[512], err_log[512];
	snprintf(out_log, sizeof out_log, "%s", tl_test_path("demo-fail", ".stdout"));
	snprintf(err_log, sizeof err_log, "%s", tl_test_path("demo-fail", ".stderr"));
	int status = tl_test_run("'%s' demo %s >'%s' 2>'%s'", cli, args, out_log, err_log);
	*err = read_or_fail(err_log);
	*out = read_or_fail(out_log);
	return status;
}

static void test_demo_bad_seconds_exits_2_with_message(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--seconds abc", &err, &out), 2);
	assert_string_equal(err,
	                    "timeline demo: --seconds: expected a positive number, got 'abc'\n");
	assert_string_equal(out, "");
	free(err);
	free(out);
}

static void test_demo_negative_seconds_exits_2(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--seconds=-1", &err, &out), 2);
	assert_non_null(strstr(err, "--seconds"));
	free(err);
	free(out);
}

static void test_demo_unknown_recorder_exits_2_with_message(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--recorder tape", &err, &out), 2);
	assert_non_null(strstr(err, "--recorder"));
	assert_non_null(strstr(err, "'tape'"));
	free(err);
	free(out);
}

static void test_demo_unknown_option_exits_2_with_message(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--frobnicate", &err, &out), 2);
	assert_non_null(strstr(err, "--frobnicate"));
	free(err);
	free(out);
}

static void test_demo_missing_value_exits_2_with_message(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--format", &err, &out), 2);
	assert_non_null(strstr(err, "--format: missing value"));
	free(err);
	free(out);
}

static void test_demo_unwritable_output_exits_1_naming_the_file(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("-o /nonexistent-dir/demo.json", &err, &out), 1);
	assert_non_null(strstr(err, "/nonexistent-dir/demo.json"));
	assert_non_null(strstr(err, "No such file or directory"));
	free(err);
	free(out);
}

/* The callback recorder: one line per event, as the callback got it. */
static void test_demo_callback_recorder_writes_one_line_per_event(void **state)
{
	(void)state;
	const struct demo_run *run =
	    demo_run_once("callback", "--recorder callback --seconds " DEMO_SECONDS, ".txt");
	assert_int_equal(run->status, 0);
	char *lines = read_or_fail(run->output);
	char *out = read_or_fail(run->out_log);
	assert_non_null(strstr(out, "with the callback recorder"));
	assert_true(tl_test_count(lines, " B engine frame\n") > 0);
	assert_true(tl_test_count(lines, " C jobs queue_depth value=") > 0);
	/* as many lines as events written */
	const char *w = strstr(out, "events   ");
	assert_non_null(w);
	unsigned long long written = strtoull(w + strlen("events   "), NULL, 10);
	assert_int_equal(tl_test_count(lines, "\n"), written);
	free(lines);
	free(out);
}

/* The systrace recorder writes no file: -o is refused with the way to
 * capture it. */
static void test_demo_systrace_with_an_output_exits_2_saying_how_to_capture(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--recorder systrace -o x.json", &err, &out), 2);
	assert_non_null(strstr(err, "timeline record"));
	free(err);
	free(out);
}

/* The systrace recorder writes its markers and says where they went:
 * every event written, none dropped. It writes into a tracefs instance of
 * its own (TIMELINE_TRACEFS_INSTANCE), whose tracing_on no other program
 * turns off meanwhile. Needs root; tracefs is mounted at
 * /sys/kernel/tracing when it is not, as test_cli_record does. */
static void test_demo_systrace_writes_markers_and_says_where(void **state)
{
	(void)state;
	struct stat st;
	if (geteuid() != 0) {
		print_message("skipped: the systrace recorder needs root to write trace_marker\n");
		skip();
	}
	if (stat("/sys/kernel/tracing/instances", &st) != 0 &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
		print_message("skipped: tracefs is not mounted and cannot be mounted at "
		              "/sys/kernel/tracing: %s\n",
		              strerror(errno));
		skip();
	}
	char instance[64], dir[128];
	snprintf(instance, sizeof instance, "timeline-demo-test-%d", (int)getpid());
	snprintf(dir, sizeof dir, "/sys/kernel/tracing/instances/%s", instance);
	assert_int_equal(mkdir(dir, 0755), 0);
	char *err, *out;
	setenv("TIMELINE_TRACEFS_INSTANCE", instance, 1);
	int status = demo_run_quick("--recorder systrace --seconds 0.1", &err, &out);
	unsetenv("TIMELINE_TRACEFS_INSTANCE");
	rmdir(dir);
	printf("%s%s", out, err);
	assert_int_equal(status, 0);
	const char *events = strstr(out, "  events   ");
	assert_non_null(events);
	char *end;
	unsigned long long written = strtoull(events + 11, &end, 10);
	assert_true(written > 0);
	char where[160];
	snprintf(where, sizeof where,
	         " written to trace_marker of tracefs instance '%s', 0 dropped\n", instance);
	assert_non_null(strstr(end, where));
	free(err);
	free(out);
}

static void test_demo_help_exits_0_with_usage(void **state)
{
	(void)state;
	char *err, *out;
	assert_int_equal(demo_run_quick("--help", &err, &out), 0);
	assert_non_null(strstr(out, "usage: timeline demo"));
	assert_string_equal(err, "");
	free(err);
	free(out);
}

/* ---- setup ------------------------------------------------------------------------ */

static int write_checker(void **state)
{
	(void)state;
	snprintf(checker_path, sizeof checker_path, "%s", tl_test_path("check_demo", ".py"));
	FILE *f = fopen(checker_path, "w");
	if (!f)
		return -1;
	fputs(demo_checker, f);
	if (fclose(f) != 0)
		return -1;
	have_python = tl_test_run("python3 -c pass >/dev/null 2>&1") == 0;
	return 0;
}

static char recorder_ring[] = "ring";
static char recorder_endless[] = "endless";
static char recorder_startup[] = "startup";
static char recorder_file[] = "file";

/* The test once per recorder that writes the trace as a file, named
 * "test(recorder)". */
#define PER_RECORDER(f)                                                                            \
	{#f "(ring)", f, NULL, NULL, recorder_ring},                                               \
	    {#f "(endless)", f, NULL, NULL, recorder_endless},                                     \
	    {#f "(startup)", f, NULL, NULL, recorder_startup},                                     \
	{                                                                                          \
#f "(file)", f, NULL, NULL, recorder_file                                          \
	}

int main(void)
{
	tl_test_require_clock_path();
	const struct CMUnitTest tests[] = {
	    PER_RECORDER(test_demo_exits_0_with_strict_json),
	    PER_RECORDER(test_demo_json_names_the_process),
	    PER_RECORDER(test_demo_json_names_main_and_worker_threads),
	    PER_RECORDER(test_demo_json_has_frame_begin_end),
	    PER_RECORDER(test_demo_json_has_queue_depth_counter),
	    PER_RECORDER(test_demo_json_has_memory_counter),
	    PER_RECORDER(test_demo_json_has_async_pair_with_one_id),
	    PER_RECORDER(test_demo_async_load_begins_on_main_and_ends_on_worker),
	    PER_RECORDER(test_demo_flow_goes_from_submit_job_to_worker),
	    PER_RECORDER(test_demo_slices_balance_per_thread),
	    PER_RECORDER(test_demo_json_has_copied_level_name),
	    cmocka_unit_test_prestate(test_demo_summary_names_recorder_output_and_viewer,
	                              recorder_ring),
	    cmocka_unit_test(test_demo_txt_output_is_ftrace_text),
	    cmocka_unit_test(test_demo_format_option_overrides_extension),
	    cmocka_unit_test(test_demo_perfetto_output_decodes_with_its_slices),
	    cmocka_unit_test(test_demo_binary_output_converts_to_json_with_its_slices),
	    cmocka_unit_test(test_demo_binary_summary_says_how_to_convert),
	    cmocka_unit_test(test_demo_bad_seconds_exits_2_with_message),
	    cmocka_unit_test(test_demo_negative_seconds_exits_2),
	    cmocka_unit_test(test_demo_unknown_recorder_exits_2_with_message),
	    cmocka_unit_test(test_demo_unknown_option_exits_2_with_message),
	    cmocka_unit_test(test_demo_missing_value_exits_2_with_message),
	    cmocka_unit_test(test_demo_unwritable_output_exits_1_naming_the_file),
	    cmocka_unit_test(test_demo_help_exits_0_with_usage),
	    cmocka_unit_test(test_demo_callback_recorder_writes_one_line_per_event),
	    cmocka_unit_test(test_demo_systrace_with_an_output_exits_2_saying_how_to_capture),
	    cmocka_unit_test(test_demo_systrace_writes_markers_and_says_where),
	};
	return cmocka_run_group_tests(tests, write_checker, NULL);
}
