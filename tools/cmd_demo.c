/*
 * `timeline demo`: records the simulated engine of demo_engine.c with any
 * recorder: the in-memory ones and the file recorder write the trace as
 * Chrome JSON, ftrace text or a binary snapshot; the systrace recorder
 * writes atrace markers for a capture (`timeline record --app-recorder
 * systrace -- timeline demo`); the callback recorder writes one line per
 * event it is handed. Under `timeline record` (the file recorder streaming
 * to TIMELINE_FILE) no other file is written unless -o asks for one.
 */
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/demo_engine.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <timeline/trace_event.h>

#include "recorder/atomic_file.h"
#include "recorder/export/trace_model.h"

#define DEMO_DEFAULT_SECONDS 3.0
#define DEMO_MAX_SECONDS 3600.0
#define DEMO_PROCESS_NAME "timeline-demo"

enum demo_format {
	DEMO_FORMAT_UNSET,
	DEMO_FORMAT_JSON,
	DEMO_FORMAT_FTRACE,
	DEMO_FORMAT_BINARY,
	DEMO_FORMAT_PERFETTO,
};

struct demo_args {
	tl_recorder_kind recorder;
	const char *output;
	double seconds;
	enum demo_format format;
	int help;
};

static const char demo_usage[] =
    "usage: timeline demo [--recorder KIND] [-o FILE] [--seconds S]\n"
    "                     [--format json|ftrace|perfetto|binary]\n"
    "\n"
    "Runs a simulated game engine (a 60 Hz main loop, 3 worker threads, job flows,\n"
    "async asset loads, counters) instrumented with the TRACE_EVENT macros, records\n"
    "it and writes the trace.\n"
    "\n"
    "  --recorder KIND   ring (default), endless or startup (in memory, the trace\n"
    "                    written at the end); file (streamed to FILE.tl as it runs,\n"
    "                    then written like the others); systrace (atrace markers to\n"
    "                    the kernel's trace_marker, no FILE: capture them with\n"
    "                    'timeline record --app-recorder systrace -- timeline\n"
    "                    demo'); callback (one line per event, as the callback\n"
    "                    receives it, to FILE).\n"
    "                    TIMELINE_RECORDER in the environment takes precedence\n"
    "  -o, --output FILE where to write the trace (default timeline-demo.json; none\n"
    "                    when TIMELINE_RECORDER=file and TIMELINE_FILE come from the\n"
    "                    environment, as under 'timeline record': that file is it)\n"
    "  --seconds S       how long to run, fractions allowed (default 3);\n"
    "                    Ctrl-C stops early and still writes the trace\n"
    "  --format FMT      json, ftrace, perfetto or binary; by default taken from the\n"
    "                    extension of FILE: .json, .txt/.ftrace/.systrace,\n"
    "                    .perfetto-trace/.pftrace, .bin/.tlsnap\n"
    "  --mode MODE       FILE's permission bits, octal (default 0600: private)\n"
    "  -h, --help        show this help\n";

/* Set by SIGINT while the engine runs: stop early, still write the trace. */
static volatile sig_atomic_t demo_interrupted;

static void demo_on_interrupt(int sig)
{
	(void)sig;
	demo_interrupted = 1;
}

/* ---- options -------------------------------------------------------------- */

static int demo_bad_value(const char *option, const char *expected, const char *value)
{
	fprintf(stderr, "timeline demo: %s: expected %s, got '%s'\n", option, expected, value);
	return -EINVAL;
}

static int demo_parse_recorder_quiet(const char *value, tl_recorder_kind *out);

static int demo_parse_recorder(const char *value, tl_recorder_kind *out)
{
	if (demo_parse_recorder_quiet(value, out) == 0)
		return 0;
	return demo_bad_value("--recorder", "ring, endless, startup, file, systrace or callback",
	                      value);
}

static int demo_parse_recorder_quiet(const char *value, tl_recorder_kind *out)
{
	if (strcmp(value, "ring") == 0)
		*out = TL_RECORDER_RING;
	else if (strcmp(value, "endless") == 0)
		*out = TL_RECORDER_ENDLESS;
	else if (strcmp(value, "startup") == 0)
		*out = TL_RECORDER_STARTUP;
	else if (strcmp(value, "file") == 0)
		*out = TL_RECORDER_FILE;
	else if (strcmp(value, "systrace") == 0)
		*out = TL_RECORDER_SYSTRACE;
	else if (strcmp(value, "callback") == 0)
		*out = TL_RECORDER_CALLBACK;
	else
		return -EINVAL;
	return 0;
}

static int demo_parse_seconds(const char *value, double *out)
{
	char *end;
	errno = 0;
	double s = strtod(value, &end);
	if (errno != 0 || end == value || *end != '\0' || !isfinite(s) || s <= 0)
		return demo_bad_value("--seconds", "a positive number", value);
	if (s > DEMO_MAX_SECONDS)
		return demo_bad_value("--seconds", "at most 3600", value);
	*out = s;
	return 0;
}

static int demo_parse_format(const char *value, enum demo_format *out)
{
	if (strcmp(value, "json") == 0)
		*out = DEMO_FORMAT_JSON;
	else if (strcmp(value, "ftrace") == 0)
		*out = DEMO_FORMAT_FTRACE;
	else if (strcmp(value, "perfetto") == 0)
		*out = DEMO_FORMAT_PERFETTO;
	else if (strcmp(value, "binary") == 0)
		*out = DEMO_FORMAT_BINARY;
	else
		return demo_bad_value("--format", "json, ftrace, perfetto or binary", value);
	return 0;
}

/* Options that take a value, in their long spelling. */
static const char *const demo_value_options[] = {"--recorder", "--output", "--seconds", "--format",
                                                 "--mode"};

/* Finds arg's long option; *inline_value gets the part after '=', if any. */
static const char *demo_find_option(const char *arg, const char **inline_value)
{
	for (size_t i = 0; i < sizeof demo_value_options / sizeof demo_value_options[0]; i++) {
		const char *name = demo_value_options[i];
		size_t len = strlen(name);
		if (strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=')) {
			*inline_value = arg[len] ? arg + len + 1 : NULL;
			return name;
		}
	}
	if (strncmp(arg, "-o", 2) == 0) {
		*inline_value = arg[2] ? arg + 2 : NULL;
		return "--output";
	}
	return NULL;
}

static int demo_apply_option(const char *name, const char *value, struct demo_args *args)
{
	if (strcmp(name, "--recorder") == 0)
		return demo_parse_recorder(value, &args->recorder);
	if (strcmp(name, "--seconds") == 0)
		return demo_parse_seconds(value, &args->seconds);
	if (strcmp(name, "--format") == 0)
		return demo_parse_format(value, &args->format);
	if (strcmp(name, "--mode") == 0)
		return tl_cli_parse_mode("timeline demo", value) ? -EINVAL : 0;
	args->output = value;
	return 0;
}

/* Fills *args from argv; reports a bad argument on stderr and returns -EINVAL. */
static int demo_parse_args(int argc, char **argv, struct demo_args *args)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value;

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			args->help = 1;
			return 0;
		}
		const char *name = demo_find_option(arg, &value);
		if (!name) {
			if (arg[0] == '-')
				fprintf(stderr,
				        "timeline demo: unknown option '%s' (see timeline demo "
				        "--help)\n",
				        arg);
			else
				fprintf(stderr, "timeline demo: unexpected argument '%s'\n", arg);
			return -EINVAL;
		}
		if (!value) {
			if (i + 1 >= argc) {
				fprintf(stderr, "timeline demo: %s: missing value\n", arg);
				return -EINVAL;
			}
			value = argv[++i];
		}
		int rc = demo_apply_option(name, value, args);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- output ------------------------------------------------------------------ */

static int demo_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static enum demo_format demo_format_from_path(const char *path)
{
	if (demo_has_suffix(path, ".txt") || demo_has_suffix(path, ".ftrace") ||
	    demo_has_suffix(path, ".systrace"))
		return DEMO_FORMAT_FTRACE;
	if (demo_has_suffix(path, ".perfetto-trace") || demo_has_suffix(path, ".pftrace"))
		return DEMO_FORMAT_PERFETTO;
	if (demo_has_suffix(path, ".bin") || demo_has_suffix(path, ".tlsnap"))
		return DEMO_FORMAT_BINARY;
	return DEMO_FORMAT_JSON;
}

static const char *demo_default_output(enum demo_format format)
{
	switch (format) {
	case DEMO_FORMAT_FTRACE:
		return "timeline-demo.txt";
	case DEMO_FORMAT_BINARY:
		return "timeline-demo.tlsnap";
	case DEMO_FORMAT_PERFETTO:
		return "timeline-demo.perfetto-trace";
	default:
		return "timeline-demo.json";
	}
}

static const char *demo_format_label(enum demo_format format)
{
	switch (format) {
	case DEMO_FORMAT_FTRACE:
		return "ftrace text";
	case DEMO_FORMAT_BINARY:
		return "binary snapshot";
	case DEMO_FORMAT_PERFETTO:
		return "Perfetto";
	default:
		return "Chrome JSON";
	}
}

static int demo_write_snapshot(enum demo_format format, int fd)
{
	switch (format) {
	case DEMO_FORMAT_FTRACE:
		return tl_snapshot_ftrace_fd(fd);
	case DEMO_FORMAT_BINARY:
		return tl_snapshot_binary_fd(fd);
	case DEMO_FORMAT_PERFETTO:
		return tl_snapshot_perfetto_fd(fd);
	default:
		return tl_snapshot_json_fd(fd);
	}
}

static void demo_print_size(off_t bytes)
{
	if (bytes >= 1024 * 1024)
		printf("%.1f MiB", (double)bytes / (1024.0 * 1024.0));
	else if (bytes >= 1024)
		printf("%.1f KiB", (double)bytes / 1024.0);
	else
		printf("%lld bytes", (long long)bytes);
}

static void demo_print_summary(const char *recorder, const struct demo_engine_report *run,
                               const tl_stats *stats, const char *path, enum demo_format format,
                               off_t size)
{
	printf("timeline demo: recorded %.2f s with the %s recorder%s\n", run->seconds, recorder,
	       demo_interrupted ? " (stopped by Ctrl-C)" : "");
	printf("  frames   %u at %d Hz (%u over budget), %u jobs on %u workers, %u async loads\n",
	       run->frames, DEMO_ENGINE_FPS, run->slow_frames, run->jobs, run->workers,
	       run->asset_loads);
	printf("  events   %llu written, %llu overwritten, %llu dropped\n",
	       (unsigned long long)stats->events_written,
	       (unsigned long long)stats->events_overwritten,
	       (unsigned long long)stats->events_dropped);
	if (stats->unmatched_begin > 0 || stats->unmatched_end > 0)
		printf("  slices   %llu left open by the buffer (closed), %llu ends whose begin "
		       "was lost (dropped)\n",
		       (unsigned long long)stats->unmatched_begin,
		       (unsigned long long)stats->unmatched_end);
	printf("  threads  %u\n", (unsigned)stats->threads);
	bool lines = strcmp(recorder, "callback") == 0;
	printf("  output   %s (%s, ", path, lines ? "one line per event" : demo_format_label(format));
	demo_print_size(size);
	printf(")\n");

	if (stats->events_overwritten > 0)
		printf("The ring kept the most recent events; --recorder endless keeps them "
		       "all.\n");
	if (stats->events_dropped > 0 && strcmp(recorder, "startup") == 0)
		printf("The startup recorder stopped when its buffer filled; --recorder endless "
		       "keeps everything.\n");
	else if (stats->events_dropped > 0 && strcmp(recorder, "endless") == 0)
		printf("The endless recorder reached its cap; raise TIMELINE_BUFFER_KB to keep "
		       "everything.\n");

	if (lines) {
		printf("Each line: timestamp (ns), tid, phase, category, name, then the id or "
		       "value.\n");
	} else if (format == DEMO_FORMAT_BINARY) {
		printf("Convert it with: timeline convert %s -o trace.json\n", path);
		printf("then open https://ui.perfetto.dev and drag trace.json in.\n");
	} else if (format == DEMO_FORMAT_JSON) {
		printf("Open https://ui.perfetto.dev and drag the file in (or chrome://tracing "
		       "for JSON).\n");
	} else {
		printf("Open https://ui.perfetto.dev and drag the file in.\n");
	}
}

/* ---- the command -------------------------------------------------------------- */

static int demo_record(const struct demo_args *args, struct demo_engine_report *run)
{
	struct sigaction on_int = {0}, old_int;
	on_int.sa_handler = demo_on_interrupt;
	sigemptyset(&on_int.sa_mask);
	demo_interrupted = 0;
	sigaction(SIGINT, &on_int, &old_int);

	int rc = demo_engine_run(args->seconds, &demo_interrupted, run);

	sigaction(SIGINT, &old_int, NULL);
	return rc;
}

static const char *demo_recorder_label(tl_recorder_kind kind)
{
	switch (kind) {
	case TL_RECORDER_ENDLESS:
		return "endless";
	case TL_RECORDER_STARTUP:
		return "startup";
	case TL_RECORDER_FILE:
		return "file";
	case TL_RECORDER_SYSTRACE:
		return "systrace";
	case TL_RECORDER_CALLBACK:
		return "callback";
	default:
		return "ring";
	}
}

/* The recorder tl_init will start: TIMELINE_RECORDER when set (it takes
 * precedence; a bad value is tl_init's to report), else --recorder. */
static tl_recorder_kind demo_effective_recorder(const struct demo_args *args)
{
	const char *env = secure_getenv("TIMELINE_RECORDER");
	tl_recorder_kind kind;
	if (env && *env && demo_parse_recorder_quiet(env, &kind) == 0)
		return kind;
	return args->recorder;
}

/* ---- the callback recorder: one line per event ---------------------------- */

static pthread_mutex_t demo_lines_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *demo_lines;
static unsigned long long demo_lines_count;

/* ts_ns tid phase category name [id|value]: the fields the callback gets. */
static void demo_write_line(const tl_event *e, void *user)
{
	(void)user;
	pthread_mutex_lock(&demo_lines_lock);
	fprintf(demo_lines, "%lld %u %c %s %.*s", (long long)e->ts_ns, (unsigned)e->tid,
	        (char)e->phase, e->category, (int)(e->name ? e->name_len : 0),
	        e->name ? e->name : "");
	if (e->phase == TL_PHASE_COUNTER) {
		if (e->flags & TL_EVENT_COUNTER_DOUBLE)
			fprintf(demo_lines, " value=%g", e->counter_double);
		else
			fprintf(demo_lines, " value=%lld", (long long)e->counter_int);
	} else if (e->id) {
		fprintf(demo_lines, " id=%llu", (unsigned long long)e->id);
	}
	fputc('\n', demo_lines);
	demo_lines_count++;
	pthread_mutex_unlock(&demo_lines_lock);
}

/* The file recorder's file, beside the output: FILE.tl-PID (removed once
 * the trace is written). */
static void demo_stream_path(const char *path, char *out, size_t size)
{
	snprintf(out, size, "%s.tl-%d", path, (int)getpid());
}

/* TIMELINE_FILE's value as the file recorder reads it: "%p" the process
 * id, "%%" a "%". */
static void demo_expand_pid(const char *pattern, char *out, size_t size)
{
	size_t n = 0;
	for (const char *p = pattern; *p && n + 1 < size; p++) {
		if (p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
			int w = p[1] == 'p' ? snprintf(out + n, size - n, "%d", (int)getpid())
			                    : snprintf(out + n, size - n, "%%");
			n += w > 0 ? (size_t)w : 0;
			p++;
			continue;
		}
		out[n++] = *p;
	}
	out[n < size ? n : size - 1] = '\0';
}

/* The trace of a file recorder run, written to out in `format`. */
static int demo_convert_stream(const char *stream, enum demo_format format, int fd)
{
	if (format == DEMO_FORMAT_BINARY) {
		FILE *in = fopen(stream, "rb");
		if (!in)
			return -errno;
		char buf[65536];
		size_t n;
		int rc = 0;
		while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
			for (size_t off = 0; off < n;) {
				ssize_t w = write(fd, buf + off, n - off);
				if (w < 0) {
					rc = -errno;
					break;
				}
				off += (size_t)w;
			}
		fclose(in);
		return rc;
	}
	/* with its rotation (TIMELINE_FILE_MAX_KB), oldest first: stream.N ...
	 * stream.1, stream */
	enum { DEMO_MAX_ROTATION = 64 };
	static char older[DEMO_MAX_ROTATION][4096 + 48];
	const char *set[DEMO_MAX_ROTATION + 1];
	size_t n = 0;
	for (; n < DEMO_MAX_ROTATION; n++) {
		snprintf(older[n], sizeof older[n], "%s.%zu", stream, n + 1);
		if (access(older[n], F_OK) != 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		set[i] = older[n - 1 - i];
	set[n] = stream;
	tl_model model;
	char err[256] = "";
	int rc = tl_model_read_binary_files(set, n + 1, NULL, &model, err, sizeof err);
	if (rc < 0)
		return rc;
	rc = format == DEMO_FORMAT_FTRACE     ? tl_export_ftrace(&model, fd, NULL)
	     : format == DEMO_FORMAT_PERFETTO ? tl_export_perfetto(&model, fd, NULL)
	                                      : tl_export_json(&model, fd, NULL);
	tl_model_free(&model);
	return rc;
}

/*
 * Starts the recorder, runs the engine, writes the trace to out and
 * commits it. Returns 0 with the summary printed, or 1 with the problem
 * reported on stderr (out is then still to be aborted). Shuts the recorder
 * down.
 */
static int demo_record_and_write(const struct demo_args *args, tl_recorder_kind kind,
                                 enum demo_format format, const char *path,
                                 struct tl_atomic_file *out)
{
	char stream[4096 + 32] = "";
	tl_options opts = {0};
	opts.struct_size = sizeof opts;
	opts.recorder = args->recorder;
	opts.process_name = DEMO_PROCESS_NAME;
	opts.file_mode = tl_file_mode(); /* --mode, for the stream too */
	bool keep_stream = false;
	if (kind == TL_RECORDER_FILE) {
		/* TIMELINE_FILE, when set, takes precedence inside tl_init: then
		 * that file is the stream, and it is kept */
		const char *env = secure_getenv("TIMELINE_FILE");
		keep_stream = env && *env;
		if (keep_stream)
			demo_expand_pid(env, stream, sizeof stream);
		else
			demo_stream_path(path, stream, sizeof stream);
		opts.file_path = stream;
		opts.buffer_bytes = 32u << 20; /* room while the drain writes: nothing dropped */
	}
	if (kind == TL_RECORDER_CALLBACK) {
		demo_lines = fdopen(dup(out->fd), "w");
		if (!demo_lines) {
			fprintf(stderr, "timeline demo: cannot write %s: %s\n", path, strerror(errno));
			return 1;
		}
		demo_lines_count = 0;
		opts.callback = demo_write_line;
	}
	int rc = tl_init(&opts);
	if (rc < 0) {
		/* The environment overrides --recorder inside tl_init: name what failed. */
		const char *env = secure_getenv("TIMELINE_RECORDER");
		bool from_env = env && *env;
		fprintf(stderr, "timeline demo: %s: cannot start the %s recorder%s: %s\n", path,
		        from_env ? env : demo_recorder_label(args->recorder),
		        from_env ? " (from TIMELINE_RECORDER)" : "", strerror(-rc));
		if (demo_lines)
			fclose(demo_lines);
		demo_lines = NULL;
		return 1;
	}
	tl_process_set_name(DEMO_PROCESS_NAME);
	const char *recorder = tl_recorder_name();

	struct demo_engine_report run;
	rc = demo_record(args, &run);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: %s: cannot start the engine's worker threads: %s\n",
		        path, strerror(-rc));
		tl_shutdown();
		if (stream[0] && !keep_stream)
			unlink(stream);
		return 1;
	}

	tl_stats stats = {0};
	stats.struct_size = sizeof stats;
	if (kind == TL_RECORDER_FILE || kind == TL_RECORDER_CALLBACK) {
		tl_stats_get(&stats);
		tl_shutdown(); /* the file ends, every callback has returned */
		rc = 0;
		if (kind == TL_RECORDER_FILE)
			rc = demo_convert_stream(stream, format, out->fd);
		else if (fclose(demo_lines) != 0)
			rc = -errno;
		demo_lines = NULL;
		if (stream[0] && !keep_stream)
			unlink(stream);
	} else {
		rc = demo_write_snapshot(format, out->fd);
		tl_stats_get(&stats);
		tl_shutdown();
	}
	struct stat st;
	off_t size = rc == 0 && fstat(out->fd, &st) == 0 ? st.st_size : 0;
	if (rc == 0)
		rc = tl_atomic_file_commit(out);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	demo_print_summary(recorder, &run, &stats, path, format, size);
	if (kind == TL_RECORDER_CALLBACK)
		printf("The callback recorder handed each event to a function, which wrote it as "
		       "one line.\n");
	return 0;
}

/* Runs the engine on the session tl_init started, takes its counters and
 * ends the session; returns demo_record's result. */
static int demo_record_session(const struct demo_args *args, struct demo_engine_report *run,
                               tl_stats *stats)
{
	tl_process_set_name(DEMO_PROCESS_NAME);
	int rc = demo_record(args, run);
	memset(stats, 0, sizeof *stats);
	stats->struct_size = sizeof *stats;
	tl_stats_get(stats);
	tl_shutdown();
	return rc;
}

/* The file recorder streaming to TIMELINE_FILE (pattern, "%p" the pid): no
 * other file. */
static int demo_run_streamed(const struct demo_args *args, const char *pattern)
{
	char stream[4096 + 32];
	demo_expand_pid(pattern, stream, sizeof stream);
	tl_options opts = {0};
	opts.struct_size = sizeof opts;
	opts.recorder = TL_RECORDER_FILE;
	opts.process_name = DEMO_PROCESS_NAME;
	opts.file_path = stream;
	opts.buffer_bytes = 32u << 20; /* room while the drain writes: nothing dropped */
	int rc = tl_init(&opts);
	if (rc < 0) {
		fprintf(stderr,
		        "timeline demo: %s: cannot start the file recorder (TIMELINE_FILE): %s\n",
		        stream, strerror(-rc));
		return 1;
	}
	struct demo_engine_report run;
	tl_stats stats;
	rc = demo_record_session(args, &run, &stats); /* the file ends */
	if (rc < 0) {
		fprintf(stderr, "timeline demo: cannot start the engine's worker threads: %s\n",
		        strerror(-rc));
		return 1;
	}
	printf("timeline demo: recorded %.2f s with the file recorder%s\n", run.seconds,
	       demo_interrupted ? " (stopped by Ctrl-C)" : "");
	printf("  frames   %u at %d Hz (%u over budget), %u jobs on %u workers, %u async loads\n",
	       run.frames, DEMO_ENGINE_FPS, run.slow_frames, run.jobs, run.workers,
	       run.asset_loads);
	printf("  events   %llu written, %llu dropped\n", (unsigned long long)stats.events_written,
	       (unsigned long long)stats.events_dropped);
	const char *instance = secure_getenv("TIMELINE_TRACEFS_INSTANCE");
	printf("  output   %s (TIMELINE_FILE: the file recorder's stream%s; no other file "
	       "without -o)\n",
	       stream, instance && *instance ? ", merged by the capture around this run" : "");
	if (!instance || !*instance)
		printf("Convert it with: timeline convert %s -o trace.json\n", stream);
	return 0;
}

/* The systrace recorder: markers to the kernel's trace_marker, no file. */
static int demo_run_systrace(const struct demo_args *args)
{
	tl_options opts = {0};
	opts.struct_size = sizeof opts;
	opts.recorder = TL_RECORDER_SYSTRACE;
	opts.process_name = DEMO_PROCESS_NAME;
	int rc = tl_init(&opts);
	if (rc < 0) {
		fprintf(stderr,
		        "timeline demo: cannot start the systrace recorder: %s (it needs a mounted "
		        "tracefs with a writable trace_marker: run as root, or mount it with 'mount "
		        "-t tracefs nodev /sys/kernel/tracing')\n",
		        strerror(-rc));
		return 1;
	}
	struct demo_engine_report run;
	tl_stats stats;
	rc = demo_record_session(args, &run, &stats);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: cannot start the engine's worker threads: %s\n",
		        strerror(-rc));
		return 1;
	}
	const char *instance = secure_getenv("TIMELINE_TRACEFS_INSTANCE");
	printf("timeline demo: recorded %.2f s with the systrace recorder%s\n", run.seconds,
	       demo_interrupted ? " (stopped by Ctrl-C)" : "");
	printf("  frames   %u at %d Hz (%u over budget), %u jobs on %u workers, %u async loads\n",
	       run.frames, DEMO_ENGINE_FPS, run.slow_frames, run.jobs, run.workers,
	       run.asset_loads);
	printf("  events   %llu written to trace_marker%s%s%s, %llu dropped\n",
	       (unsigned long long)stats.events_written, instance && *instance ? " of tracefs instance '" : " (the top-level tracefs buffer)",
	       instance && *instance ? instance : "", instance && *instance ? "'" : "",
	       (unsigned long long)stats.events_dropped);
	if (!instance || !*instance)
		printf("Nothing keeps them unless a capture runs: record one with "
		       "'timeline record -o trace.json -- timeline demo'.\n");
	return 0;
}

int tl_cmd_demo(int argc, char **argv)
{
	struct demo_args args = {
	    .recorder = TL_RECORDER_RING,
	    .seconds = DEMO_DEFAULT_SECONDS,
	};
	if (demo_parse_args(argc, argv, &args) < 0)
		return 2;
	if (args.help) {
		fputs(demo_usage, stdout);
		return 0;
	}
	tl_recorder_kind kind = demo_effective_recorder(&args);
	if (kind == TL_RECORDER_SYSTRACE) {
		const char *option = args.output ? "-o" : "--format";
		if ((args.output || args.format != DEMO_FORMAT_UNSET) &&
		    args.recorder == TL_RECORDER_SYSTRACE) {
			fprintf(stderr,
			        "timeline demo: %s: the systrace recorder writes markers to the "
			        "kernel's trace_marker, not a file; capture them with 'timeline "
			        "record -o FILE -- timeline demo --recorder systrace'\n",
			        option);
			return 2;
		}
		/* The environment chose it (`timeline record --app-recorder
		 * systrace`): the run goes on, without the file. */
		if (args.output || args.format != DEMO_FORMAT_UNSET)
			printf(
			    "timeline demo: %s%s: %s: the systrace recorder, chosen by "
			    "TIMELINE_RECORDER in the environment, writes markers to the kernel's "
			    "trace_marker, not a file\n",
			    args.output ? "-o " : option, args.output ? args.output : "",
			    args.output ? "not written" : "ignored");
		return demo_run_systrace(&args);
	}
	/* The file recorder with TIMELINE_FILE from the environment (`timeline
	 * record -- timeline demo`): that file is the trace; no other is
	 * written unless -o asks for one. */
	const char *env_file = secure_getenv("TIMELINE_FILE");
	if (kind == TL_RECORDER_FILE && env_file && *env_file && !args.output &&
	    args.format == DEMO_FORMAT_UNSET)
		return demo_run_streamed(&args, env_file);
	if (kind == TL_RECORDER_CALLBACK && args.format != DEMO_FORMAT_UNSET) {
		fprintf(stderr, "timeline demo: --format: the callback recorder writes one line per "
		                "event, in no other format\n");
		return 2;
	}
	enum demo_format format = args.format;
	if (format == DEMO_FORMAT_UNSET)
		format = args.output ? demo_format_from_path(args.output) : DEMO_FORMAT_JSON;
	const char *path = args.output ? args.output
	                   : kind == TL_RECORDER_CALLBACK ? "timeline-demo-events.txt"
	                                                  : demo_default_output(format);

	/* Open the output first: a bad path fails now, not after the run. The
	 * trace appears whole under its name or not at all. */
	struct tl_atomic_file out;
	int rc = tl_atomic_file_open(&out, path);
	if (rc < 0)
		return tl_cli_output_error("timeline demo", path, rc);
	int status = demo_record_and_write(&args, kind, format, path, &out);
	tl_shutdown(); /* when it stopped early */
	tl_atomic_file_abort(&out); /* nothing left to do once committed */
	return status;
}
