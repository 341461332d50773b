/*
 * `timeline record` on the real tracefs: markers written by a command come
 * out as tracing_mark_write lines with the writer's pid, sched events are
 * there, the private instance is removed on every way out, lost events are
 * reported, and the options are checked.
 *
 * Needs root; mounts tracefs at /sys/kernel/tracing when it is not mounted.
 * Without root, or where tracefs cannot be mounted, the suite is skipped
 * (exit 77) with the reason printed.
 */
#include "support/test_support.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRACING_DIR "/sys/kernel/tracing"
#define MARKER_OF_INSTANCE TRACING_DIR "/instances/$TIMELINE_TRACEFS_INSTANCE/trace_marker"

static const char *cli;

static int tracefs_mounted(void)
{
	struct stat st;
	return stat(TRACING_DIR "/instances", &st) == 0 && S_ISDIR(st.st_mode);
}

/* Exits 77 with a reason when the suite cannot run here. */
static void require_root_and_tracefs(void)
{
#ifndef TL_HAVE_TRACEFS
	printf("skipped: built without libtracefs (TIMELINE_WITH_TRACEFS=OFF), the CLI has no "
	       "record (test_cli_without_tracefs checks that it says so)\n");
	exit(TL_TEST_SKIP_EXIT);
#endif
	cli = tl_test_cli();
	if (!cli) {
		printf("skipped: TIMELINE_CLI is not set (the CLI was not built)\n");
		exit(TL_TEST_SKIP_EXIT);
	}
	if (geteuid() != 0) {
		printf("skipped: timeline record needs root (CAP_SYS_ADMIN)\n");
		exit(TL_TEST_SKIP_EXIT);
	}
	if (!tracefs_mounted() && mount("nodev", TRACING_DIR, "tracefs", 0, NULL) != 0) {
		printf("skipped: tracefs is not mounted and cannot be mounted at %s: %s\n",
		       TRACING_DIR, strerror(errno));
		exit(TL_TEST_SKIP_EXIT);
	}
}

static int instance_exists(const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, TRACING_DIR "/instances/%s", name);
	return stat(path, &st) == 0;
}

/* The first line of a file, without its newline; "" when missing. */
static void read_word(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	char *text = tl_test_read_file(path, NULL);
	if (!text)
		return;
	snprintf(buf, len, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
}

struct run {
	const char *trace;
	const char *errors; /* the command's standard error */
	char *text;         /* the trace, read back */
	char *summary;      /* the standard error, read back */
	int status;
};

/* Runs `timeline record -o TRACE <args>` with stderr to a file. */
static void record(struct run *run, const char *args)
{
	run->trace = tl_test_path("record", ".txt");
	run->errors = tl_test_path("record", ".err");
	run->status =
	    tl_test_run("'%s' record -o '%s' %s 2>'%s'", cli, run->trace, args, run->errors);
	run->text = tl_test_read_file(run->trace, NULL);
	run->summary = tl_test_read_file(run->errors, NULL);
	printf("%s", run->summary ? run->summary : "(no standard error)\n");
}

static void run_free(struct run *run)
{
	free(run->text);
	free(run->summary);
}

/* A capture of the demo that several tests read, taken once: `timeline
 * record -o trace OPTIONS -- sh -c 'exec timeline demo ... >out'` run in
 * the fresh directory dir. With own, the demo writes its own trace there
 * (-o); with markers, the shell first writes a "frame" marker pair as its
 * pid (into pid), which is then the demo's. */
struct demo_capture {
	int done;
	char dir[512], trace[512], errors[512], own[512], out[512], pid[512];
	struct run run;
};

static struct demo_capture text_capture, json_capture, systrace_capture;

static const struct run *capture_demo(struct demo_capture *c, const char *options, int own,
                                      int markers)
{
	if (c->done)
		return &c->run;
	c->done = 1;
	snprintf(c->dir, sizeof c->dir, "%s", tl_test_path("record-cwd", ""));
	snprintf(c->trace, sizeof c->trace, "%s", tl_test_path("record", ".txt"));
	snprintf(c->errors, sizeof c->errors, "%s", tl_test_path("record", ".err"));
	snprintf(c->own, sizeof c->own, "%s", tl_test_path("record-demo-own", ".json"));
	snprintf(c->out, sizeof c->out, "%s", tl_test_path("record-demo", ".out"));
	snprintf(c->pid, sizeof c->pid, "%s", tl_test_path("pid", ".txt"));
	assert_int_equal(mkdir(c->dir, 0755), 0);
	char demo_output[600] = "", shell_markers[1024] = "";
	if (own)
		snprintf(demo_output, sizeof demo_output, "-o %s", c->own);
	if (markers)
		snprintf(shell_markers, sizeof shell_markers,
		         "echo $$ >%s; echo \"B|$$|frame\" >" MARKER_OF_INSTANCE
		         "; echo \"E|$$\" >" MARKER_OF_INSTANCE "; ",
		         c->pid);
	c->run.trace = c->trace;
	c->run.errors = c->errors;
	c->run.status = tl_test_run(
	    "cd '%s' && '%s' record -o '%s' %s -- sh -c '%sexec \"%s\" demo "
	    "--seconds 0.3 %s >%s' 2>'%s'",
	    c->dir, cli, c->trace, options, shell_markers, cli, demo_output, c->out, c->errors);
	c->run.text = tl_test_read_file(c->trace, NULL);
	c->run.summary = tl_test_read_file(c->errors, NULL);
	printf("%s", c->run.summary ? c->run.summary : "(no standard error)\n");
	return &c->run;
}

/* How often `needle` occurs in what `timeline slices` prints for a trace. */
static size_t count_items(const char *trace, const char *needle)
{
	char *items = tl_test_slices(trace);
	size_t n = tl_test_count(items, needle);
	free(items);
	return n;
}

/* The frames the demo says it ran ("frames   N at 60 Hz") in what it
 * printed to path. */
static unsigned demo_frames(const char *path)
{
	char *out = tl_test_read_file(path, NULL);
	assert_non_null(out);
	const char *frames = strstr(out, "frames   ");
	assert_non_null(frames);
	unsigned n = (unsigned)strtoul(frames + 9, NULL, 10);
	free(out);
	return n;
}

/* Whether some line of text contains all of a, b and c. */
static int line_has(const char *text, const char *a, const char *b, const char *c)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *copy = strndup(line, len);
		int hit = strstr(copy, a) && (!b || strstr(copy, b)) && (!c || strstr(copy, c));
		free(copy);
		if (hit)
			return 1;
		line = end ? end + 1 : NULL;
	}
	return 0;
}

static int compare_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

static void test_record_help_prints_usage(void **state)
{
	(void)state;
	const char *out = tl_test_path("help", ".txt");
	assert_int_equal(tl_test_run("'%s' record --help >'%s'", cli, out), 0);
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "usage: timeline record"));
	assert_non_null(strstr(text, "--buffer-kb"));
	assert_non_null(strstr(text, "--user USER"));
	free(text);
}

static void test_record_bad_options_exit_2_with_one_line(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "--bogus",     "--format xml", "--buffer-kb 0", "--buffer-kb lots", "--duration -1",
	    "--clock tai", "-e sched",     "-e 'a/b c'",    "--output",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *err = tl_test_path("bad", ".err");
		assert_int_equal(tl_test_run("'%s' record %s 2>'%s'", cli, bad[i], err), 2);
		char *text = tl_test_read_file(err, NULL);
		assert_non_null(text);
		printf("%s", text);
		assert_int_equal(tl_test_count(text, "\n"), 1);
		assert_non_null(strstr(text, "timeline record: "));
		free(text);
	}
}

static void test_record_markers_become_tracing_mark_write_lines(void **state)
{
	(void)state;
	const char *pidfile = tl_test_path("pid", ".txt");
	char args[2048];
	snprintf(args, sizeof args,
	         "-- sh -c 'echo $$ >%s; echo \"B|$$|hello\" >" MARKER_OF_INSTANCE "; "
	         "echo \"C|$$|queue|7\" >" MARKER_OF_INSTANCE "; sleep 0.05; "
	         "echo \"E|$$\" >" MARKER_OF_INSTANCE "'",
	         pidfile);
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 0);
	assert_non_null(run.text);

	char pid[32], expect[128], task[64];
	read_word(pidfile, pid, sizeof pid);
	assert_true(pid[0] != '\0');
	snprintf(task, sizeof task, "-%s ", pid);
	snprintf(expect, sizeof expect, "tracing_mark_write: B|%s|hello", pid);
	assert_true(line_has(run.text, expect, task, NULL));
	snprintf(expect, sizeof expect, "tracing_mark_write: C|%s|queue|7", pid);
	assert_true(line_has(run.text, expect, task, NULL));
	snprintf(expect, sizeof expect, "tracing_mark_write: E|%s\n", pid);
	assert_non_null(strstr(run.text, expect));

	assert_true(line_has(run.text, "sched_switch: prev_comm=", "==> next_comm=", NULL));
	assert_int_equal(strncmp(run.text, "# tracer: nop\n", 14), 0);
	assert_int_equal(run.text[strlen(run.text) - 1], '\n');
	assert_non_null(strstr(run.summary, "markers    3 (B 1, E 1, C 1)"));
	assert_non_null(strstr(run.summary, "missed     0"));
	run_free(&run);
}

static void test_record_perfetto_output_has_markers_and_cpu_slices(void **state)
{
	(void)state;
	const char *trace = tl_test_path("record", ".perfetto-trace");
	const char *err = tl_test_path("record", ".err");
	int status = tl_test_run(
	    "'%s' record -o '%s' -- sh -c 'echo \"B|$$|perfetto-hello\" >" MARKER_OF_INSTANCE
	    "; sleep 0.05; echo \"E|$$\" >" MARKER_OF_INSTANCE "' 2>'%s'",
	    cli, trace, err);
	char *summary = tl_test_read_file(err, NULL);
	printf("%s", summary ? summary : "(no standard error)\n");
	assert_int_equal(status, 0);
	assert_non_null(strstr(summary, "(Perfetto, "));
	free(summary);
	char *text = tl_test_perfetto_decode(trace);
	assert_non_null(strstr(text, "name: \"perfetto-hello\""));
	assert_non_null(strstr(text, "process_name: \"CPUs\""));
	assert_non_null(strstr(text, "thread_name: \"CPU "));
	free(text);
	char *items = tl_test_slices(trace);
	assert_true(line_has(items, "slice ", "name=\"perfetto-hello\"", NULL));
	free(items);
}

static void test_record_lines_are_sorted_by_timestamp(void **state)
{
	(void)state;
	struct run run;
	record(&run, "--duration 0.3");
	assert_int_equal(run.status, 0);
	assert_non_null(run.text);
	double last = 0;
	size_t lines = 0;
	for (const char *line = run.text; *line;) {
		const char *end = strchr(line, '\n');
		assert_non_null(end);
		if (line[0] != '#') {
			const char *ts = strstr(line, "] ");
			assert_non_null(ts);
			double t = strtod(ts + 2 + strcspn(ts + 2, " ") + 1, NULL);
			assert_true(t >= last);
			last = t;
			lines++;
		}
		line = end + 1;
	}
	assert_true(lines > 0);
	run_free(&run);
}

static void test_record_instance_removed_after_command_fails(void **state)
{
	(void)state;
	const char *namefile = tl_test_path("instance", ".txt");
	char args[512], name[128];
	snprintf(args, sizeof args, "-- sh -c 'echo $TIMELINE_TRACEFS_INSTANCE >%s; exit 3'",
	         namefile);
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 3); /* the command's status */
	read_word(namefile, name, sizeof name);
	assert_int_equal(strncmp(name, "timeline-", 9), 0);
	assert_false(instance_exists(name));
	assert_non_null(run.text);
	assert_non_null(strstr(run.summary, "exited with status 3"));
	run_free(&run);
}

static void test_record_command_not_found_exits_127(void **state)
{
	(void)state;
	struct run run;
	record(&run, "-- /nonexistent/program");
	assert_int_equal(run.status, 127);
	assert_non_null(strstr(run.summary, "cannot run '/nonexistent/program'"));
	run_free(&run);
}

static void test_record_instance_removed_after_sigint(void **state)
{
	(void)state;
	const char *trace = tl_test_path("sigint", ".txt");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(cli, cli, "record", "-o", trace, "--duration", "60", (char *)NULL);
		_exit(127);
	}
	char name[64];
	snprintf(name, sizeof name, "timeline-%d", (int)pid);
	for (int i = 0; i < 500 && !instance_exists(name); i++)
		usleep(10000);
	assert_true(instance_exists(name));
	usleep(200000);
	kill(pid, SIGINT);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_false(instance_exists(name));
	char *text = tl_test_read_file(trace, NULL);
	assert_non_null(text);
	assert_int_equal(strncmp(text, "# tracer: nop\n", 14), 0);
	free(text);
}

static void test_record_sigint_reaches_the_command(void **state)
{
	(void)state;
	const char *trace = tl_test_path("sigint-cmd", ".txt");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(cli, cli, "record", "-o", trace, "--", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	char name[64];
	snprintf(name, sizeof name, "timeline-%d", (int)pid);
	for (int i = 0; i < 500 && !instance_exists(name); i++)
		usleep(10000);
	usleep(200000);
	kill(pid, SIGINT);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + SIGINT); /* sleep was interrupted */
	assert_false(instance_exists(name));
}

static void test_record_reports_missed_events(void **state)
{
	(void)state;
	const char *child = getenv("TL_TRACED_CHILD");
	if (!child || !*child) {
		print_message("skipped: TL_TRACED_CHILD is not set; run this suite through ctest\n");
		skip();
	}
	char args[512];
	snprintf(args, sizeof args, "--buffer-kb 8 -- '%s' flood 300000", child);
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 0);
	const char *missed = strstr(run.summary, "missed     ");
	assert_non_null(missed);
	unsigned long long n = strtoull(missed + 11, NULL, 10);
	assert_true(n > 0);
	assert_non_null(strstr(run.summary, "raise --buffer-kb"));
	char header[96];
	snprintf(header, sizeof header, "missed_events=%llu\n", n);
	assert_non_null(strstr(run.text, header));
	run_free(&run);
}

static void test_record_mono_clock_is_set(void **state)
{
	(void)state;
	struct run run;
	record(&run, "--clock mono -e irq/irq_handler_entry --duration 0.1");
	assert_int_equal(run.status, 0);
	assert_non_null(strstr(run.text, "clock=mono"));
	assert_non_null(strstr(run.summary, "trace_clock mono"));
	run_free(&run);
}

/* A slice as `timeline slices` prints it: begin and end in ns, its
 * thread, and for a scheduling slice of the "CPUs" process the tid that
 * ran (from its name, "comm tid"; 0 for other slices). */
struct read_slice {
	long long ts, end;
	unsigned tid, ran;
	char name[96];
};

static struct read_slice *read_slices(const char *trace, size_t *n)
{
	char *items = tl_test_slices(trace);
	struct read_slice *s = calloc(tl_test_count(items, "\n") + 1, sizeof *s);
	assert_non_null(s);
	*n = 0;
	for (const char *line = items; line && *line;) {
		const char *end = strchr(line, '\n');
		struct read_slice *r = &s[*n];
		long long dur;
		if (sscanf(line, "slice ts=%lld dur=%lld name=\"%95[^\"]\" tid=%u", &r->ts, &dur,
		           r->name, &r->tid) == 4 &&
		    dur >= 0) {
			r->end = r->ts + dur;
			const char *cpus = strstr(line, "process_name=\"CPUs\"");
			const char *space = strrchr(r->name, ' ');
			if (cpus && (!end || cpus < end) && space)
				r->ran = (unsigned)strtoul(space + 1, NULL, 10);
			++*n;
		}
		line = end ? end + 1 : NULL;
	}
	free(items);
	return s;
}

/* What the scheduler said of one task in a text capture: it left its
 * CPU asleep (prev_state S or D), or it was seen awake (woken, switched
 * in, or leaving its CPU runnable). */
struct sched_mark {
	long long ts;
	unsigned tid;
	int asleep;
};

/* The timestamp, in ns, of a text capture's line, from the "SECONDS.USEC:"
 * before its event name at `event`; -1 when there is none. */
static long long line_ts(const char *line, const char *event)
{
	const char *p = event;
	while (p > line && p[-1] != ' ')
		p--;
	unsigned long long sec, usec;
	if (sscanf(p, "%llu.%llu:", &sec, &usec) != 2)
		return -1;
	return (long long)(sec * 1000000000ull + usec * 1000ull);
}

/* The sched_switch and sched_waking lines of a text capture, in order. */
static struct sched_mark *read_sched_marks(const char *text, size_t *n)
{
	struct sched_mark *m = calloc(2 * tl_test_count(text, "\n") + 2, sizeof *m);
	assert_non_null(m);
	*n = 0;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		char *copy = strndup(line, end ? (size_t)(end - line) : strlen(line));
		const char *sw = strstr(copy, ": sched_switch: ");
		const char *wk = strstr(copy, ": sched_waking: ");
		unsigned prev, next, woken;
		char state[8];
		const char *p;
		if (sw && (p = strstr(sw, " prev_pid=")) && sscanf(p, " prev_pid=%u", &prev) == 1 &&
		    (p = strstr(sw, " prev_state=")) && sscanf(p, " prev_state=%7s", state) == 1 &&
		    (p = strstr(sw, " next_pid=")) && sscanf(p, " next_pid=%u", &next) == 1) {
			long long ts = line_ts(copy, sw);
			int asleep = state[0] == 'S' || state[0] == 'D';
			m[(*n)++] = (struct sched_mark){ts, prev, asleep};
			m[(*n)++] = (struct sched_mark){ts, next, 0};
		} else if (wk && (p = strstr(wk, " pid=")) && sscanf(p, " pid=%u", &woken) == 1) {
			m[(*n)++] = (struct sched_mark){line_ts(copy, wk), woken, 0};
		}
		free(copy);
		line = end ? end + 1 : NULL;
	}
	return m;
}

/* How deep ts lies inside a stretch where tid is known to sleep: from its
 * leaving a CPU asleep to the next sign of it awake. 0 outside them. */
static long long depth_asleep(const struct sched_mark *m, size_t n, unsigned tid, long long ts)
{
	long long since = -1;
	for (size_t i = 0; i < n; i++) {
		if (m[i].tid != tid)
			continue;
		if (m[i].ts > ts) {
			if (since < 0)
				return 0;
			long long in = ts - since, left = m[i].ts - ts;
			return in < left ? in : left;
		}
		since = m[i].asleep ? m[i].ts : -1;
	}
	return 0;
}

static int compare_long_long(const void *pa, const void *pb)
{
	long long a = *(const long long *)pa, b = *(const long long *)pb;
	return a < b ? -1 : a > b;
}

/*
 * Checks that the command's own frames line up with the kernel's view of
 * the same run, in a text capture: each lies inside the capture, and its
 * begin and end, read by the thread while it ran, lie outside the
 * stretches where the scheduler says the thread slept. The main thread
 * sleeps between frames, so a clock off by more than a few microseconds
 * puts begins (early) or ends (late) into those sleeps. The measure is the
 * median depth of the begins and ends inside a sleep, at most 2 us (the
 * text has microseconds).
 *
 * Sleeps, not scheduling slices: some kernels record a task leaving a CPU
 * without the switch that put it there (the capture's "unseen" line), and
 * a slice needs both; a sleep needs the switch out and the next waking,
 * and a lost switch only shortens it.
 */
static long long frames_median_asleep(const struct run *run)
{
	size_t n, nmarks;
	struct read_slice *s = read_slices(run->trace, &n);
	struct sched_mark *m = read_sched_marks(run->text, &nmarks);
	assert_true(nmarks > 0);
	long long first = m[0].ts, last = m[nmarks - 1].ts;
	long long *depths = calloc(2 * n + 1, sizeof *depths);
	assert_non_null(depths);
	size_t frames = 0, outside = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s[i].name, "frame") != 0 || s[i].ran)
			continue;
		assert_true(s[i].ts >= first && s[i].end <= last);
		depths[2 * frames] = depth_asleep(m, nmarks, s[i].tid, s[i].ts);
		depths[2 * frames + 1] = depth_asleep(m, nmarks, s[i].tid, s[i].end);
		outside += (depths[2 * frames] <= 2000) + (depths[2 * frames + 1] <= 2000);
		frames++;
	}
	assert_true(frames >= 10);
	qsort(depths, 2 * frames, sizeof *depths, compare_long_long);
	long long median = depths[frames];
	print_message("%zu of %zu frame begins and ends outside their thread's sleeps (2 us "
	              "slack); median depth %lld ns, deepest %lld ns\n",
	              outside, 2 * frames, median, depths[2 * frames - 1]);
	free(depths);
	free(m);
	free(s);
	return median;
}

/* The capture's "unseen" count (0 without the line) equals the switches
 * of its text whose prev_pid is not the task the CPU's previous switch
 * put there. */
static void assert_unseen_switch_ins_counted(const struct run *run)
{
	unsigned long long said = 0, found = 0;
	const char *missed = strstr(run->summary, "  missed     ");
	assert_non_null(missed);
	if (strtoull(missed + 13, NULL, 10) != 0) {
		/* the text does not say where on a CPU events were lost */
		print_message("skipped: the capture missed events, which explain mismatched "
		              "switches the text cannot tell apart\n");
		skip();
	}
	const char *line = strstr(run->summary, "  unseen     ");
	if (line)
		said = strtoull(line + 13, NULL, 10);
	long long running[4096];
	for (size_t i = 0; i < sizeof running / sizeof *running; i++)
		running[i] = -1;
	for (const char *l = run->text; l && *l;) {
		const char *end = strchr(l, '\n');
		const char *sw = strstr(l, ": sched_switch: ");
		const char *cpu = strstr(l, ") [");
		unsigned c, prev, next;
		if (sw && (!end || sw < end) && cpu && cpu < sw && sscanf(cpu, ") [%u]", &c) == 1 &&
		    c < sizeof running / sizeof *running && strstr(sw, " prev_pid=") &&
		    sscanf(strstr(sw, " prev_pid="), " prev_pid=%u", &prev) == 1 &&
		    strstr(sw, " next_pid=") &&
		    sscanf(strstr(sw, " next_pid="), " next_pid=%u", &next) == 1) {
			found += running[c] >= 0 && running[c] != (long long)prev;
			running[c] = next;
		}
		l = end ? end + 1 : NULL;
	}
	print_message("%llu switch-ins unseen, %llu in the text\n", said, found);
	assert_int_equal(said, found);
}

/* The product's own demo, captured by the product's own capture tool: the
 * capture's slices are the demo's frames and stages, on its threads. */
static void test_record_of_the_demo_holds_its_slices(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&text_capture, "", 0, 1);
	assert_int_equal(run->status, 0);
	assert_non_null(run->text);
	assert_true(line_has(run->text, "tracing_mark_write: B|", "|frame", NULL));
	assert_true(line_has(run->text, "tracing_mark_write: B|", "|update", NULL));
	assert_true(line_has(run->text, "tracing_mark_write: C|", "queue_depth", NULL));
	char *slices_out = (char *)tl_test_path("record-demo-slices", ".txt");
	assert_int_equal(tl_test_run("'%s' slices '%s' >'%s'", cli, run->trace, slices_out), 0);
	char *slices = tl_test_read_file(slices_out, NULL);
	assert_non_null(slices);
	assert_true(tl_test_count(slices, "name=\"frame\"") >= 10);
	assert_true(tl_test_count(slices, "thread_name=\"worker") > 0);
	free(slices);
}

/* ftrace text with the command's own events: a marker of the process whose
 * own record is merged is replaced by that record, as in the JSON. The
 * shell writes a "frame" marker pair as its pid, then execs the demo, which
 * records with the file recorder under the same pid: the text holds as
 * many frames as the demo ran, not one more. */
static void test_record_text_shows_each_event_of_the_command_once(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&text_capture, "", 0, 1);
	assert_int_equal(run->status, 0);
	assert_non_null(run->text);
	assert_non_null(strstr(run->summary, "markers    2 (B 1, E 1)"));
	char pid[32], begin[96];
	read_word(text_capture.pid, pid, sizeof pid);
	assert_true(pid[0] != '\0');
	snprintf(begin, sizeof begin, "tracing_mark_write: B|%s|frame\n", pid);
	size_t frames = tl_test_count(run->text, begin);
	unsigned ran = demo_frames(text_capture.out);
	print_message("%zu frames in the text, the demo ran %u\n", frames, ran);
	assert_true(ran >= 10);
	assert_int_equal(frames, ran);
	assert_int_equal(count_items(run->trace, "name=\"frame\""), ran);
}

/* `timeline record -- timeline demo`: the demo's events go to the file
 * recorder's stream that the capture merges; it leaves no trace file of
 * its own in the directory it runs in, and says where its events went. */
static void test_record_of_the_demo_leaves_no_file_of_its_own(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&text_capture, "", 0, 1);
	assert_int_equal(run->status, 0);
	assert_string_equal(tl_test_dir_entries(text_capture.dir), "");
	char *said = tl_test_read_file(text_capture.out, NULL);
	assert_non_null(said);
	printf("%s", said);
	assert_non_null(strstr(said, "(TIMELINE_FILE: the file recorder's stream, merged by the "
	                             "capture around this run; no other file without -o)"));
	free(said);
}

/* A merged capture: the command's own events (file recorder) with their
 * args, flows and full thread names, beside the per-CPU scheduling, each
 * event once. */
static void test_record_json_merges_the_commands_own_events(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&json_capture, "--format json", 1, 0);
	assert_int_equal(run->status, 0);
	assert_non_null(run->text);
	/* args and flows only the in-process record has: every flow of the
	 * demo's own trace */
	assert_non_null(strstr(run->text, "\"entities\":"));
	size_t flows = count_items(run->trace, "flow out=");
	size_t own_flows = count_items(json_capture.own, "flow out=");
	print_message("%zu flows, %zu in the demo's own trace\n", flows, own_flows);
	assert_true(own_flows > 0);
	assert_int_equal(flows, own_flows);
	/* names as the demo set them: the kernel's comm of the last worker is
	 * cut to 15 bytes, the merged name is whole */
	assert_non_null(strstr(run->text, "\"name\":\"worker-1\""));
	assert_non_null(strstr(run->text, "\"name\":\"worker-3-with-a-long-name\""));
	assert_null(strstr(run->text, "\"name\":\"worker-3-with-a\""));
	assert_non_null(strstr(run->text, "\"name\":\"timeline-demo\""));
	assert_non_null(strstr(run->text, "\"name\":\"CPU 0\""));
	/* each frame once: a begin and an end per frame slice, no marker copy */
	size_t frames = tl_test_count(run->text, "\"name\":\"frame\"");
	size_t frame_slices = count_items(run->trace, "name=\"frame\"");
	print_message("%zu frame events, %zu frame slices\n", frames, frame_slices);
	assert_true(frame_slices >= 10);
	assert_int_equal(frames, 2 * frame_slices);
	assert_int_equal(frame_slices, count_items(json_capture.own, "name=\"frame\""));
}

static void test_record_commands_own_events_line_up_with_the_scheduler(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&text_capture, "", 0, 1);
	assert_int_equal(run->status, 0);
	assert_true(frames_median_asleep(run) <= 2000);
}

/* Each process the command starts gets a 4 MiB pool for its file
 * recorder, unless the environment chose one: the shell records the value
 * it was given. */
static void assert_app_buffer_kb(const char *preset, const char *expected)
{
	const char *seen = tl_test_path("record-buffer-kb", ".txt");
	char args[1024];
	snprintf(args, sizeof args, "-- sh -c 'printf %%s \"$TIMELINE_BUFFER_KB\" >%s'", seen);
	if (preset)
		setenv("TIMELINE_BUFFER_KB", preset, 1);
	struct run run = {0};
	record(&run, args);
	unsetenv("TIMELINE_BUFFER_KB");
	assert_int_equal(run.status, 0);
	char value[64];
	read_word(seen, value, sizeof value);
	assert_string_equal(value, expected);
	run_free(&run);
}

static void test_record_gives_each_process_a_4_mib_pool_unless_chosen(void **state)
{
	(void)state;
	assert_app_buffer_kb(NULL, "4096");
	assert_app_buffer_kb("8192", "8192");
}

/* The summary's "unseen" line counts exactly the switches of the capture
 * that follow none putting their task on that CPU (0: no line). */
static void test_record_counts_switch_ins_the_kernel_did_not_record(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&text_capture, "", 0, 1);
	assert_int_equal(run->status, 0);
	assert_unseen_switch_ins_counted(run);
}

/* With --app-recorder systrace the command writes markers, as before. */
static void test_record_app_recorder_systrace_keeps_markers(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&systrace_capture, "--app-recorder systrace", 1, 0);
	assert_int_equal(run->status, 0);
	assert_non_null(run->text);
	assert_true(line_has(run->text, "tracing_mark_write: B|", "|frame", NULL));
}

/* --app-recorder systrace hands the demo TIMELINE_RECORDER=systrace: its
 * -o is not written, which it says, and the run and the capture go on. */
static void test_record_app_recorder_systrace_runs_the_demo_given_an_output(void **state)
{
	(void)state;
	const struct run *run = capture_demo(&systrace_capture, "--app-recorder systrace", 1, 0);
	assert_int_equal(run->status, 0);
	assert_int_equal(access(systrace_capture.own, F_OK), -1);
	char *said = tl_test_read_file(systrace_capture.out, NULL);
	assert_non_null(said);
	printf("%s", said);
	assert_non_null(strstr(said, "not written: the systrace recorder, chosen by "
	                             "TIMELINE_RECORDER in the environment"));
	free(said);
}

/* The same merged capture in Perfetto's format: args, flows, full names,
 * every frame and flow of the demo's own trace. */
static void test_record_perfetto_merges_the_commands_own_events(void **state)
{
	(void)state;
	const char *trace = tl_test_path("record-own", ".perfetto-trace");
	const char *own = tl_test_path("record-demo-own", ".json");
	const char *err = tl_test_path("record", ".err");
	int status = tl_test_run("'%s' record -o '%s' -- '%s' demo --seconds 0.3 -o '%s' 2>'%s'",
	                         cli, trace, cli, own, err);
	char *summary = tl_test_read_file(err, NULL);
	printf("%s", summary ? summary : "(no standard error)\n");
	free(summary);
	assert_int_equal(status, 0);
	char *text = tl_test_perfetto_decode(trace);
	assert_non_null(strstr(text, "process_name: \"timeline-demo\""));
	assert_non_null(strstr(text, "thread_name: \"worker-3-with-a-long-name\""));
	assert_non_null(strstr(text, "thread_name: \"CPU 0\""));
	assert_non_null(strstr(text, "name: \"entities\"")); /* a debug annotation */
	assert_non_null(strstr(text, "terminating_flow_ids: "));
	free(text);
	size_t frames = count_items(trace, "name=\"frame\"");
	size_t own_frames = count_items(own, "name=\"frame\"");
	size_t flows = count_items(trace, "flow out=");
	size_t own_flows = count_items(own, "flow out=");
	print_message("%zu frames and %zu flows, %zu and %zu in the demo's own trace\n", frames,
	              flows, own_frames, own_flows);
	assert_true(own_frames >= 10);
	assert_int_equal(frames, own_frames);
	assert_true(own_flows > 0);
	assert_int_equal(flows, own_flows);
}

/* --clock mono with a command on the boot clock: its events are moved by
 * the difference of the two clocks its file recorded. Where boot and mono
 * hardly differ (no suspend yet), the command runs in a time namespace
 * whose boot clock is 1000 s ahead. */
static void test_record_mono_capture_moves_the_commands_own_events(void **state)
{
	(void)state;
	if (tl_test_run("unshare --time --boottime 1000 --fork true 2>/dev/null") != 0) {
		print_message("skipped: unshare cannot make a time namespace here (util-linux "
		              "2.36 and a kernel with CONFIG_TIME_NS are needed)\n");
		skip();
	}
	char args[1024];
	snprintf(args, sizeof args,
	         "--clock mono -- unshare --time --boottime 1000 --fork '%s' demo --seconds 0.3 "
	         "-o '%s'",
	         cli, tl_test_path("record-demo-own", ".json"));
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 0);
	assert_non_null(run.text);
	assert_non_null(strstr(run.text, "clock=mono"));
	long long median = frames_median_asleep(&run);
	run_free(&run);
	assert_true(median <= 2000);
}

/* A command whose file recorder rotates (TIMELINE_FILE_MAX_KB in its
 * environment) is read whole: its older files with the current one (by
 * the capture, and by the demo for its own -o). */
static void test_record_merges_the_rotation_of_the_commands_file(void **state)
{
	(void)state;
	char out[512], own[512];
	snprintf(out, sizeof out, "%s", tl_test_path("record-demo", ".out"));
	snprintf(own, sizeof own, "%s", tl_test_path("record-demo-own", ".json"));
	char args[2048];
	snprintf(args, sizeof args,
	         "--format json -- env TIMELINE_FILE_MAX_KB=16 TIMELINE_FILE_KEEP=1000 sh -c "
	         "'exec \"%s\" demo --seconds 1 -o %s >%s'",
	         cli, own, out);
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 0);
	unsigned ran = demo_frames(out);
	size_t frames = count_items(run.trace, "name=\"frame\"");
	print_message("%zu frames in the capture, the demo ran %u\n", frames, ran);
	assert_true(ran >= 10);
	assert_int_equal(frames, ran);
	assert_int_equal(count_items(own, "name=\"frame\""), ran);
	assert_null(strstr(run.summary, "warning"));
	run_free(&run);
}

/* A command killed before its file recorder ended its file: the capture
 * says what was cut and keeps what was read. */
static void test_record_says_what_was_cut_of_the_commands_file(void **state)
{
	(void)state;
	char args[1024];
	snprintf(args, sizeof args,
	         /* long enough for the demo to have started its file on a loaded
	          * machine: at 0.3 s it once had not */
	         "--format json --duration 1.5 -- '%s' demo --seconds 30 -o '%s'", cli,
	         tl_test_path("record-demo-own", ".json"));
	struct run run;
	record(&run, args);
	assert_int_equal(run.status, 128 + SIGTERM);
	assert_non_null(run.text);
	assert_non_null(
	    strstr(run.summary, "timeline record: warning: the command's own events (app-"));
	assert_non_null(strstr(run.summary, "truncated"));
	assert_non_null(strstr(run.summary, "merging what was read"));
	run_free(&run);
}

static void test_record_json_names_the_capture_clock(void **state)
{
	(void)state;
	static const struct {
		const char *option, *metadata;
	} cases[] = {
	    {"", "\"clock\":\"boot\",\"clock_id\":7,"},
	    {"--clock mono", "\"clock\":\"mono\",\"clock_id\":1,"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char args[128];
		snprintf(args, sizeof args, "--format json %s --duration 0.1", cases[i].option);
		struct run run;
		record(&run, args);
		assert_int_equal(run.status, 0);
		assert_non_null(run.text);
		assert_non_null(strstr(run.text, cases[i].metadata));
		run_free(&run);
	}
}

static void test_record_unknown_event_is_named(void **state)
{
	(void)state;
	struct run run;
	record(&run, "-e nosuch/event --duration 0.1");
	assert_int_equal(run.status, 1);
	assert_non_null(strstr(run.summary, "no event 'nosuch/event'"));
	run_free(&run);
}

static void test_record_unwritable_output_is_named(void **state)
{
	(void)state;
	const char *err = tl_test_path("output", ".err");
	assert_int_equal(
	    tl_test_run("'%s' record -o /nonexistent/dir/t.txt --duration 0.1 2>'%s'", cli, err),
	    1);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "/nonexistent/dir/t.txt: cannot open for writing"));
	free(text);
}

static void test_record_without_tracefs_says_how_to_mount(void **state)
{
	(void)state;
	if (tl_test_run("unshare -m true 2>/dev/null") != 0) {
		print_message("skipped: unshare cannot make a private mount namespace here\n");
		skip();
	}
	const char *err = tl_test_path("nomount", ".err");
	int status = tl_test_run("unshare -m sh -c 'umount " TRACING_DIR " 2>/dev/null; "
	                         "umount /sys/kernel/debug 2>/dev/null; "
	                         "exec \"%s\" record -o /dev/null --duration 0.1' 2>'%s'",
	                         cli, err);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	printf("%s", text);
	assert_int_equal(status, 1);
	assert_non_null(strstr(text, "tracefs is not mounted: run 'mount -t tracefs nodev "
	                             "/sys/kernel/tracing' as root"));
	free(text);
}

static void test_record_without_root_says_needs_root(void **state)
{
	(void)state;
	if (tl_test_run("setpriv --reuid=65534 --regid=65534 --clear-groups '%s' --version "
	                ">/dev/null 2>&1",
	                cli) != 0) {
		print_message("skipped: setpriv is missing or the CLI cannot run as an "
			      "unprivileged user here\n");
		skip();
	}
	const char *err = tl_test_path("noroot", ".err");
	int status = tl_test_run("setpriv --reuid=65534 --regid=65534 --clear-groups '%s' record "
	                         "-o /dev/null --duration 0.1 2>'%s'",
	                         cli, err);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	printf("%s", text);
	assert_int_equal(status, 1);
	assert_non_null(strstr(text, "needs root (CAP_SYS_ADMIN)"));
	free(text);
}

/* ---- the user the command runs as ----------------------------------------- */

#define AS_NOBODY "setpriv --reuid=nobody --regid=nogroup --clear-groups"

/* nobody's entry in the user database, as the tests expect it applied. */
static struct nobody_user {
	uid_t uid;
	gid_t gid;
	char home[256], shell[256];
	char groups[256]; /* "G G ...", sorted, as traced_child writes them */
} nobody;

/* Fills nobody, or skips the running test, saying why, when the command
 * cannot run as nobody here. */
static void require_nobody(void)
{
	const char *child = getenv("TL_TRACED_CHILD");
	if (!child || !*child) {
		print_message(
		    "skipped: TL_TRACED_CHILD is not set; run this suite through ctest\n");
		skip();
	}
	struct passwd *pw = getpwnam("nobody");
	if (!pw) {
		print_message("skipped: no user 'nobody' in the user database\n");
		skip();
	}
	nobody.uid = pw->pw_uid;
	nobody.gid = pw->pw_gid;
	snprintf(nobody.home, sizeof nobody.home, "%s", pw->pw_dir);
	snprintf(nobody.shell, sizeof nobody.shell, "%s", pw->pw_shell);
	gid_t groups[64];
	int n = 64;
	assert_true(getgrouplist("nobody", nobody.gid, groups, &n) >= 0);
	qsort(groups, (size_t)n, sizeof *groups, compare_gid);
	size_t used = 0;
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(nobody.groups + used, sizeof nobody.groups - used, "%s%u",
		                         i ? " " : "", (unsigned)groups[i]);
	if (tl_test_run(AS_NOBODY " '%s' --version >/dev/null 2>&1 && " AS_NOBODY " test -x '%s'",
	                cli, child) != 0) {
		print_message("skipped: setpriv is missing, or nobody cannot run %s or %s here\n",
		              cli, child);
		skip();
	}
}

/* A fresh directory owned by nobody. */
static void make_nobody_dir(char *dir, size_t len)
{
	snprintf(dir, len, "%s", tl_test_path("record-user", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chown(dir, nobody.uid, nobody.gid), 0);
}

/* A fresh directory of the given mode (chmod'ed: no umask), owned by root. */
static void make_dir(char *dir, size_t len, const char *stem, mode_t mode)
{
	snprintf(dir, len, "%s", tl_test_path(stem, ""));
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, mode), 0);
}

/* A run of `ENV timeline record -o TRACE.json OPTIONS -- traced_child
 * identity REPORT` in a fresh directory of nobody's, with TMPDIR a fresh
 * sticky directory, record itself given the supplementary group adm (4),
 * which the command keeps only when its identity does not change. Run once
 * per capture, read by several tests. */
struct identity_capture {
	int done;
	char dir[512], tmpdir[512], report[600], trace[512], errors[512];
	int status;
	char *text;    /* the report */
	char *summary; /* record's standard error */
};

static struct identity_capture nobody_capture, sudo_capture, root_capture;

static const struct identity_capture *capture_identity(struct identity_capture *c, const char *env,
                                                       const char *options)
{
	require_nobody();
	if (c->done)
		return c;
	c->done = 1;
	make_nobody_dir(c->dir, sizeof c->dir);
	make_dir(c->tmpdir, sizeof c->tmpdir, "record-tmpdir", 01777);
	snprintf(c->report, sizeof c->report, "%s/identity.txt", c->dir);
	snprintf(c->trace, sizeof c->trace, "%s", tl_test_path("record-user", ".json"));
	snprintf(c->errors, sizeof c->errors, "%s", tl_test_path("record-user", ".err"));
	c->status = tl_test_run("cd '%s' && %s TMPDIR='%s' setpriv --groups=4 '%s' record -o '%s' "
	                        "%s -- '%s' identity '%s' 2>'%s'",
	                        c->dir, env, c->tmpdir, cli, c->trace, options,
	                        getenv("TL_TRACED_CHILD"), c->report, c->errors);
	c->text = tl_test_read_file(c->report, NULL);
	c->summary = tl_test_read_file(c->errors, NULL);
	printf("%s%s", c->summary ? c->summary : "(no standard error)\n",
	       c->text ? c->text : "(no report)\n");
	return c;
}

/* The rest of the report's line that begins with "KEY ", or "" when there
 * is none; static storage. */
static const char *report_item(const struct identity_capture *c, const char *key)
{
	static char value[512];
	value[0] = '\0';
	size_t k = strlen(key);
	for (const char *line = c->text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > k && strncmp(line, key, k) == 0 && line[k] == ' ') {
			snprintf(value, sizeof value, "%.*s", (int)(len - k - 1), line + k + 1);
			break;
		}
		line = end ? end + 1 : NULL;
	}
	return value;
}

static void assert_runs_as_nobody(const struct identity_capture *c)
{
	char ids[64];
	assert_int_equal(c->status, 0);
	assert_non_null(c->text);
	snprintf(ids, sizeof ids, "%u %u %u", (unsigned)nobody.uid, (unsigned)nobody.uid,
	         (unsigned)nobody.uid);
	assert_string_equal(report_item(c, "uid"), ids);
	snprintf(ids, sizeof ids, "%u %u %u", (unsigned)nobody.gid, (unsigned)nobody.gid,
	         (unsigned)nobody.gid);
	assert_string_equal(report_item(c, "gid"), ids);
	assert_string_equal(report_item(c, "groups"), nobody.groups);
}

static const struct identity_capture *capture_as_nobody(void)
{
	return capture_identity(&nobody_capture, "", "--user nobody");
}

/* --user nobody: the command has nobody's uid, gid and groups, and none of
 * record's (adm). */
static void test_record_user_runs_the_command_as_that_user(void **state)
{
	(void)state;
	assert_runs_as_nobody(capture_as_nobody());
}

/* ... with nobody's HOME, USER, LOGNAME and SHELL, in record's directory. */
static void test_record_user_gives_the_command_the_users_environment(void **state)
{
	(void)state;
	const struct identity_capture *c = capture_as_nobody();
	assert_int_equal(c->status, 0);
	assert_string_equal(report_item(c, "home"), nobody.home);
	assert_string_equal(report_item(c, "user"), "nobody");
	assert_string_equal(report_item(c, "logname"), "nobody");
	assert_string_equal(report_item(c, "shell"), nobody.shell);
	assert_string_equal(report_item(c, "cwd"), c->dir);
}

/* ... and the directory of its TIMELINE_FILE is nobody's, 0700, removed
 * once the trace is written. */
static void test_record_user_gives_the_command_a_directory_of_its_own(void **state)
{
	(void)state;
	const struct identity_capture *c = capture_as_nobody();
	assert_int_equal(c->status, 0);
	char expect[64];
	snprintf(expect, sizeof expect, "%u 700", (unsigned)nobody.uid);
	assert_string_equal(report_item(c, "appdir"), expect);
	assert_string_equal(tl_test_dir_entries(c->tmpdir), "");
}

/* After the change of identity, setuid(0) fails in the command. */
static void test_record_user_command_cannot_regain_root(void **state)
{
	(void)state;
	const struct identity_capture *c = capture_as_nobody();
	assert_int_equal(c->status, 0);
	assert_string_equal(report_item(c, "regain"), strerror(EPERM));
}

/* The command inherits none of the capture's descriptors: no per-CPU
 * buffer of the instance, no temporary file. */
static void test_record_command_inherits_no_descriptor_of_the_capture(void **state)
{
	(void)state;
	const struct identity_capture *c = capture_as_nobody();
	assert_int_equal(c->status, 0);
	assert_null(strstr(c->text, "trace_pipe_raw"));
	assert_null(strstr(c->text, "/tracing/"));
	assert_null(strstr(c->text, "(deleted)"));
}

/* A command run as nobody records its own events with the file recorder,
 * and they are merged into the capture. */
static void test_record_user_merges_the_commands_own_events(void **state)
{
	(void)state;
	const struct identity_capture *c = capture_as_nobody();
	assert_int_equal(c->status, 0);
	assert_string_equal(report_item(c, "recorder"), "file");
	assert_int_equal(count_items(c->trace, "name=\"identity\""), 1);
	assert_null(strstr(c->summary, "warning"));
}

/* Under sudo (SUDO_UID, SUDO_GID) and without --user, the command runs as
 * the user who ran sudo. */
static void test_record_runs_the_command_as_the_sudo_user(void **state)
{
	(void)state;
	require_nobody();
	char env[128];
	snprintf(env, sizeof env, "SUDO_UID=%u SUDO_GID=%u", (unsigned)nobody.uid,
	         (unsigned)nobody.gid);
	const struct identity_capture *c = capture_identity(&sudo_capture, env, "");
	assert_runs_as_nobody(c);
	assert_string_equal(report_item(c, "home"), nobody.home);
	assert_string_equal(report_item(c, "user"), "nobody");
	assert_int_equal(count_items(c->trace, "name=\"identity\""), 1);
}

/* --user root, even under sudo: the command keeps record's identity,
 * groups and environment as they are. */
static void test_record_user_root_keeps_root(void **state)
{
	(void)state;
	require_nobody();
	char env[128];
	snprintf(env, sizeof env, "SUDO_UID=%u SUDO_GID=%u USER=someone", (unsigned)nobody.uid,
	         (unsigned)nobody.gid);
	const struct identity_capture *c = capture_identity(&root_capture, env, "--user root");
	assert_int_equal(c->status, 0);
	assert_non_null(c->text);
	assert_string_equal(report_item(c, "uid"), "0 0 0");
	assert_string_equal(report_item(c, "gid"), "0 0 0");
	assert_string_equal(report_item(c, "groups"), "4");
	assert_string_equal(report_item(c, "user"), "someone");
	assert_string_equal(report_item(c, "regain"), "yes");
	assert_string_equal(report_item(c, "appdir"), "0 700");
	assert_int_equal(count_items(c->trace, "name=\"identity\""), 1);
}

static void test_record_unknown_user_exits_2_with_one_line(void **state)
{
	(void)state;
	static const char *const users[] = {"no-such-user-here", "3999999"};
	for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) {
		const char *err = tl_test_path("user", ".err");
		assert_int_equal(tl_test_run("'%s' record -o /dev/null --user %s -- true 2>'%s'",
		                             cli, users[i], err),
		                 2);
		char *text = tl_test_read_file(err, NULL);
		assert_non_null(text);
		printf("%s", text);
		assert_int_equal(tl_test_count(text, "\n"), 1);
		char expect[128];
		snprintf(expect, sizeof expect, "timeline record: --user: no user '%s'", users[i]);
		assert_non_null(strstr(text, expect));
		free(text);
	}
}

/* Not root, record cannot run the command as another user: one line, 1. */
static void test_record_user_other_than_self_needs_root(void **state)
{
	(void)state;
	require_nobody();
	const char *err = tl_test_path("user", ".err");
	int status =
	    tl_test_run(AS_NOBODY " '%s' record -o /dev/null --user root -- true 2>'%s'", cli, err);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	printf("%s", text);
	assert_int_equal(status, 1);
	assert_int_equal(tl_test_count(text, "\n"), 1);
	assert_non_null(strstr(text, "timeline record: --user root: only root can run the command "
	                             "as another user"));
	free(text);
}

/* A file recorder file of root's, in a directory of root's: "app-1.tl"
 * holding one "identity" slice, at path. */
static void make_private_trace(char *dir, size_t len, char *path, size_t path_len)
{
	make_dir(dir, len, "record-private", 0700);
	snprintf(path, path_len, "%s/app-1.tl", dir);
	assert_int_equal(tl_test_run("TIMELINE_RECORDER=file TIMELINE_FILE='%s' '%s' identity "
	                             "/dev/null",
	                             path, getenv("TL_TRACED_CHILD")),
	                 0);
	assert_int_equal(count_items(path, "name=\"identity\""), 1);
}

/* A link the command leaves in its directory is removed, not followed: a
 * trace of root's it points to is not merged, and is left as it was. */
static void test_record_user_links_left_by_the_command_are_not_followed(void **state)
{
	(void)state;
	require_nobody();
	char private_dir[512], private_trace[600], dir[512];
	make_private_trace(private_dir, sizeof private_dir, private_trace, sizeof private_trace);
	make_nobody_dir(dir, sizeof dir);
	const char *trace = tl_test_path("record-user", ".json");
	const char *err = tl_test_path("record-user", ".err");
	int status = tl_test_run("cd '%s' && '%s' record -o '%s' --user nobody -- sh -c 'ln -s %s "
	                         "\"${TIMELINE_FILE%%/*}/app-1.tl\"' 2>'%s'",
	                         dir, cli, trace, private_trace, err);
	char *summary = tl_test_read_file(err, NULL);
	printf("%s", summary ? summary : "(no standard error)\n");
	free(summary);
	assert_int_equal(status, 0);
	assert_int_equal(count_items(trace, "name=\"identity\""), 0);
	assert_int_equal(count_items(private_trace, "name=\"identity\""), 1);
}

/* A command that moves its directory away and puts a link to another in
 * its place: the capture still reads and removes its own directory, never
 * the one linked. */
static void test_record_user_moved_directory_is_still_the_one_removed(void **state)
{
	(void)state;
	require_nobody();
	char private_dir[512], private_trace[600], dir[512], tmpdir[512];
	make_private_trace(private_dir, sizeof private_dir, private_trace, sizeof private_trace);
	assert_int_equal(chmod(private_dir, 0755), 0);
	make_nobody_dir(dir, sizeof dir);
	make_dir(tmpdir, sizeof tmpdir, "record-tmpdir", 01777);
	const char *trace = tl_test_path("record-user", ".json");
	const char *err = tl_test_path("record-user", ".err");
	int status = tl_test_run(
	    "cd '%s' && TMPDIR='%s' '%s' record -o '%s' --user nobody -- sh -c "
	    "'d=\"${TIMELINE_FILE%%/*}\"; mv \"$d\" \"$d.moved\" && ln -s %s \"$d\"' 2>'%s'",
	    dir, tmpdir, cli, trace, private_dir, err);
	char *summary = tl_test_read_file(err, NULL);
	printf("%s", summary ? summary : "(no standard error)\n");
	free(summary);
	printf("left in TMPDIR: %s\n", tl_test_dir_entries(tmpdir));
	assert_int_equal(status, 0);
	assert_int_equal(count_items(trace, "name=\"identity\""), 0);
	assert_int_equal(access(private_trace, F_OK), 0);
	assert_string_equal(tl_test_dir_entries(private_dir), "app-1.tl");
}

/* A TMPDIR the user cannot reach: the command is not run, one line says
 * why, exit status 127, nothing left in TMPDIR. */
static void test_record_user_needs_a_tmpdir_it_can_reach(void **state)
{
	(void)state;
	require_nobody();
	char tmpdir[512];
	make_dir(tmpdir, sizeof tmpdir, "record-tmpdir", 0700);
	const char *err = tl_test_path("record-user", ".err");
	int status = tl_test_run(
	    "TMPDIR='%s' '%s' record -o /dev/null --user nobody -- true 2>'%s'", tmpdir, cli, err);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	printf("%s", text);
	assert_int_equal(status, 127);
	assert_int_equal(tl_test_count(text, "\n"), 1);
	assert_non_null(strstr(text, "timeline record: cannot run 'true' as nobody: "));
	assert_non_null(strstr(text, strerror(EACCES)));
	free(text);
	assert_string_equal(tl_test_dir_entries(tmpdir), "");
}

/* --app-recorder systrace as nobody: a warning when nobody cannot write
 * the instance's trace_marker (tracefs lets only root, unless mounted
 * otherwise), none when it can. */
static void test_record_user_says_when_its_markers_cannot_be_written(void **state)
{
	(void)state;
	require_nobody();
	char dir[512];
	make_nobody_dir(dir, sizeof dir);
	const char *err = tl_test_path("record-user", ".err");
	int status =
	    tl_test_run("cd '%s' && '%s' record -o /dev/null --app-recorder systrace --user "
	                "nobody -- sh -c 'test -w " MARKER_OF_INSTANCE " || exit 3' 2>'%s'",
	                dir, cli, err);
	char *text = tl_test_read_file(err, NULL);
	assert_non_null(text);
	printf("%s", text);
	const char *warning = "timeline record: warning: nobody cannot write ";
	if (status == 0) {
		assert_null(strstr(text, warning));
	} else {
		assert_int_equal(status, 3);
		assert_non_null(strstr(text, warning));
		assert_non_null(strstr(text, "/trace_marker ("));
	}
	free(text);
}

int main(void)
{
	tl_test_require_clock_path();
	require_root_and_tracefs();
	/* sudo's: the command would run as the user who ran the suite */
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_help_prints_usage),
	    cmocka_unit_test(test_record_bad_options_exit_2_with_one_line),
	    cmocka_unit_test(test_record_markers_become_tracing_mark_write_lines),
	    cmocka_unit_test(test_record_perfetto_output_has_markers_and_cpu_slices),
	    cmocka_unit_test(test_record_lines_are_sorted_by_timestamp),
	    cmocka_unit_test(test_record_instance_removed_after_command_fails),
	    cmocka_unit_test(test_record_command_not_found_exits_127),
	    cmocka_unit_test(test_record_instance_removed_after_sigint),
	    cmocka_unit_test(test_record_sigint_reaches_the_command),
	    cmocka_unit_test(test_record_reports_missed_events),
	    cmocka_unit_test(test_record_mono_clock_is_set),
	    cmocka_unit_test(test_record_json_names_the_capture_clock),
	    cmocka_unit_test(test_record_of_the_demo_holds_its_slices),
	    cmocka_unit_test(test_record_json_merges_the_commands_own_events),
	    cmocka_unit_test(test_record_text_shows_each_event_of_the_command_once),
	    cmocka_unit_test(test_record_perfetto_merges_the_commands_own_events),
	    cmocka_unit_test(test_record_commands_own_events_line_up_with_the_scheduler),
	    cmocka_unit_test(test_record_gives_each_process_a_4_mib_pool_unless_chosen),
	    cmocka_unit_test(test_record_counts_switch_ins_the_kernel_did_not_record),
	    cmocka_unit_test(test_record_mono_capture_moves_the_commands_own_events),
	    cmocka_unit_test(test_record_merges_the_rotation_of_the_commands_file),
	    cmocka_unit_test(test_record_says_what_was_cut_of_the_commands_file),
	    cmocka_unit_test(test_record_app_recorder_systrace_keeps_markers),
	    cmocka_unit_test(test_record_of_the_demo_leaves_no_file_of_its_own),
	    cmocka_unit_test(test_record_app_recorder_systrace_runs_the_demo_given_an_output),
	    cmocka_unit_test(test_record_unknown_event_is_named),
	    cmocka_unit_test(test_record_unwritable_output_is_named),
	    cmocka_unit_test(test_record_without_tracefs_says_how_to_mount),
	    cmocka_unit_test(test_record_without_root_says_needs_root),
	    cmocka_unit_test(test_record_user_runs_the_command_as_that_user),
	    cmocka_unit_test(test_record_user_gives_the_command_the_users_environment),
	    cmocka_unit_test(test_record_user_gives_the_command_a_directory_of_its_own),
	    cmocka_unit_test(test_record_user_command_cannot_regain_root),
	    cmocka_unit_test(test_record_command_inherits_no_descriptor_of_the_capture),
	    cmocka_unit_test(test_record_user_merges_the_commands_own_events),
	    cmocka_unit_test(test_record_runs_the_command_as_the_sudo_user),
	    cmocka_unit_test(test_record_user_root_keeps_root),
	    cmocka_unit_test(test_record_unknown_user_exits_2_with_one_line),
	    cmocka_unit_test(test_record_user_other_than_self_needs_root),
	    cmocka_unit_test(test_record_user_links_left_by_the_command_are_not_followed),
	    cmocka_unit_test(test_record_user_moved_directory_is_still_the_one_removed),
	    cmocka_unit_test(test_record_user_needs_a_tmpdir_it_can_reach),
	    cmocka_unit_test(test_record_user_says_when_its_markers_cannot_be_written),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
