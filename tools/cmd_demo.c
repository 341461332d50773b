/*
 * `timeline demo`: records the simulated engine of demo_engine.c with one of
 * the in-memory recorders and writes the trace as Chrome JSON, ftrace text
 * or a binary snapshot.
 */
#include "tools/commands.h"
#include "tools/demo_engine.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <timeline/timeline.h>

#include "recorder/atomic_file.h"

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
    "usage: timeline demo [--recorder ring|endless|startup] [-o FILE] [--seconds S]\n"
    "                     [--format json|ftrace|perfetto|binary]\n"
    "\n"
    "Runs a simulated game engine (a 60 Hz main loop, 3 worker threads, job flows,\n"
    "async asset loads, counters) instrumented with the TRACE_EVENT macros, records\n"
    "it in memory and writes the trace.\n"
    "\n"
    "  --recorder KIND   in-memory recorder: ring (default), endless or startup;\n"
    "                    TIMELINE_RECORDER in the environment takes precedence\n"
    "  -o, --output FILE where to write the trace (default timeline-demo.json)\n"
    "  --seconds S       how long to run, fractions allowed (default 3);\n"
    "                    Ctrl-C stops early and still writes the trace\n"
    "  --format FMT      json, ftrace, perfetto or binary; by default taken from the\n"
    "                    extension of FILE: .json, .txt/.ftrace/.systrace,\n"
    "                    .perfetto-trace/.pftrace, .bin/.tlsnap\n"
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

static int demo_parse_recorder(const char *value, tl_recorder_kind *out)
{
	if (strcmp(value, "ring") == 0)
		*out = TL_RECORDER_RING;
	else if (strcmp(value, "endless") == 0)
		*out = TL_RECORDER_ENDLESS;
	else if (strcmp(value, "startup") == 0)
		*out = TL_RECORDER_STARTUP;
	else
		return demo_bad_value("--recorder", "ring, endless or startup", value);
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
static const char *const demo_value_options[] = {"--recorder", "--output", "--seconds", "--format"};

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
	printf("  output   %s (%s, ", path, demo_format_label(format));
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

	if (format == DEMO_FORMAT_BINARY) {
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
	default:
		return "ring";
	}
}

/*
 * Starts the recorder, runs the engine, writes the snapshot to out and
 * commits it. Returns 0 with the summary printed, or 1 with the problem
 * reported on stderr (out is then still to be aborted). The caller shuts the
 * recorder down either way.
 */
static int demo_record_and_write(const struct demo_args *args, enum demo_format format,
                                 const char *path, struct tl_atomic_file *out)
{
	tl_options opts = {0};
	opts.struct_size = sizeof opts;
	opts.recorder = args->recorder;
	opts.process_name = DEMO_PROCESS_NAME;
	int rc = tl_init(&opts);
	if (rc < 0) {
		/* The environment overrides --recorder inside tl_init: name what failed. */
		const char *env = getenv("TIMELINE_RECORDER");
		bool from_env = env && *env;
		fprintf(stderr, "timeline demo: %s: cannot start the %s recorder%s: %s\n", path,
		        from_env ? env : demo_recorder_label(args->recorder),
		        from_env ? " (from TIMELINE_RECORDER)" : "", strerror(-rc));
		return 1;
	}
	tl_process_set_name(DEMO_PROCESS_NAME);

	const char *recorder = tl_recorder_name();
	if (!recorder || strcmp(recorder, "systrace") == 0) {
		fprintf(stderr,
		        "timeline demo: %s: the systrace recorder (from TIMELINE_RECORDER) keeps "
		        "no buffer to write; unset it, or capture with timeline record\n",
		        path);
		return 1;
	}

	struct demo_engine_report run;
	rc = demo_record(args, &run);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: %s: cannot start the engine's worker threads: %s\n",
		        path, strerror(-rc));
		return 1;
	}

	rc = demo_write_snapshot(format, out->fd);
	struct stat st;
	off_t size = rc == 0 && fstat(out->fd, &st) == 0 ? st.st_size : 0;
	if (rc == 0)
		rc = tl_atomic_file_commit(out);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}

	tl_stats stats = {0};
	stats.struct_size = sizeof stats;
	tl_stats_get(&stats);
	demo_print_summary(recorder, &run, &stats, path, format, size);
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
	enum demo_format format = args.format;
	if (format == DEMO_FORMAT_UNSET)
		format = args.output ? demo_format_from_path(args.output) : DEMO_FORMAT_JSON;
	const char *path = args.output ? args.output : demo_default_output(format);

	/* Open the output first: a bad path fails now, not after the run. The
	 * trace appears whole under its name or not at all. */
	struct tl_atomic_file out;
	int rc = tl_atomic_file_open(&out, path);
	if (rc < 0) {
		fprintf(stderr, "timeline demo: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	int status = demo_record_and_write(&args, format, path, &out);
	tl_shutdown();
	tl_atomic_file_abort(&out); /* nothing left to do once committed */
	return status;
}
