/*
 * `timeline fps FILE... [--json] [--plot OUT.svg]`: frame rate, jank and
 * frame-time statistics from `dumpsys SurfaceFlinger --latency` output or
 * from the frame slices of a trace. Formulas: docs/frame.md.
 */
#include "recorder/atomic_file.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/fps.h"

#define FPS_PREFIX "timeline fps"
/* Inputs larger than this are refused rather than read into memory. */
#define MAX_INPUT_BYTES ((size_t)1 << 30)

static const char fps_usage[] =
    "usage: timeline fps FILE... [--json] [--plot OUT.svg]\n"
    "\n"
    "Frame rate and jank of each FILE, which is either the output of\n"
    "'dumpsys SurfaceFlinger --latency <layer>' (several polls may be\n"
    "concatenated), or a trace with frame slices recorded by the frame tracer\n"
    "(binary snapshot, Chrome JSON or ftrace text; one result per thread).\n"
    "\n"
    "options:\n"
    "  --json            one JSON object on standard output instead of the table\n"
    "  --plot OUT.svg    also write a frame-time chart (one panel per result)\n"
    "  --mode MODE       OUT.svg's permission bits, octal (default 0600: private)\n"
    "  -h, --help        print this help\n"
    "\n"
    "Rows that cannot be used are reported on standard error with their line\n"
    "and counted; the exit status is then 1. Exit status 2: usage error.\n";

struct fps_args {
	int json;
	const char *plot;
	int help;
	int first_file;
};

#define usage_error(...) tl_cli_usage_error(FPS_PREFIX, __VA_ARGS__)

static int parse_args(int argc, char **argv, struct fps_args *args)
{
	static const struct option options[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"plot", required_argument, NULL, 'p'},
	    TL_CLI_MODE_LONG_OPTION,
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	optind = 1;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			args->json = 1;
			break;
		case 'p':
			args->plot = optarg;
			break;
		case TL_CLI_OPT_MODE:
			if (tl_cli_parse_mode(FPS_PREFIX, optarg))
				return 2;
			break;
		case 'h':
			args->help = 1;
			return 0;
		default: /* ':' or '?' */
			return tl_cli_option_error(FPS_PREFIX, opt, argv);
		}
	}
	if (optind == argc)
		return usage_error("missing the input file");
	args->first_file = optind;
	return 0;
}

/* Reads a whole file; NULL after printing why. */
static char *read_input(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, FPS_PREFIX ": %s: %s\n", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		if (n == cap) {
			if (cap >= MAX_INPUT_BYTES) {
				fprintf(stderr, FPS_PREFIX ": %s: larger than %zu bytes\n", path,
				        MAX_INPUT_BYTES);
				free(buf);
				close(fd);
				return NULL;
			}
			char *grown = realloc(buf, 2 * cap + 1);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, FPS_PREFIX ": %s: %s\n", path, strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!buf) {
		fprintf(stderr, FPS_PREFIX ": %s: out of memory\n", path);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The intervals between consecutive presented frames, for the chart. */
static int chart_intervals(fps_series *s)
{
	size_t n = s->stats.frames;
	if (n < 2)
		return 0;
	s->chart_ns = malloc((n - 1) * sizeof *s->chart_ns);
	if (!s->chart_ns)
		return -ENOMEM;
	for (size_t i = 1; i < n; i++)
		s->chart_ns[i - 1] = s->presents[i].present_ns - s->presents[i - 1].present_ns;
	s->nchart = n - 1;
	return 0;
}

/* A --latency file: one series. Returns 0, or 1 after reporting. */
static int read_latency(const char *path, const char *data, size_t len, fps_series_list *out)
{
	fps_series *s = fps_series_add(out);
	if (!s) {
		fprintf(stderr, FPS_PREFIX ": %s: out of memory\n", path);
		return 1;
	}
	snprintf(s->label, sizeof s->label, "%s", path);
	tl_sf_issue fatal = {0};
	int rc = tl_sf_latency_parse(data, len, &s->latency, &fatal);
	if (rc == -EINVAL) {
		fprintf(stderr, FPS_PREFIX ": %s:%zu: error: %s\n", path, fatal.line,
		        fatal.message);
		out->count--;
		return 1;
	}
	if (rc == 0) {
		s->presents = s->latency.frames;
		s->npresents = s->latency.nframes;
		rc = tl_present_stats_compute(s->presents, s->npresents, &s->stats);
	}
	if (rc == 0)
		rc = chart_intervals(s);
	if (rc < 0) {
		fprintf(stderr, FPS_PREFIX ": %s: %s\n", path, strerror(-rc));
		return 1;
	}
	int status = 0;
	for (size_t i = 0; i < s->latency.nissues; i++)
		fprintf(stderr, FPS_PREFIX ": %s:%zu: error: %s\n", path, s->latency.issues[i].line,
		        s->latency.issues[i].message);
	if (s->latency.rows_rejected > s->latency.nissues)
		fprintf(stderr, FPS_PREFIX ": %s: %llu more rows rejected\n", path,
		        (unsigned long long)(s->latency.rows_rejected - s->latency.nissues));
	if (s->latency.rows_rejected)
		status = 1;
	if (s->stats.frames < 2) {
		fprintf(stderr,
		        FPS_PREFIX ": %s: error: %zu presented frame%s: at least 2 are needed for "
		                   "a frame rate\n",
		        path, s->stats.frames, s->stats.frames == 1 ? "" : "s");
		status = 1;
	}
	return status;
}

/* What fps_trace_sniff looks at: a file's first bytes. */
#define HEAD_BYTES ((size_t)64 << 10)

/* Whether the file at path is a trace fps_read_trace reads by name, as its
 * import streams (not a latency dump, nor blank at its start). */
static bool is_streamed_trace(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false; /* read_input says why */
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd); /* a pipe's bytes are read once: whole, below */
		return false;
	}
	char *head = malloc(HEAD_BYTES);
	size_t n = 0;
	while (head && n < HEAD_BYTES) {
		ssize_t got = read(fd, head + n, HEAD_BYTES - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	size_t i = 0;
	while (head && i < n &&
	       (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
		i++;
	bool trace = head && i < n && !tl_sf_latency_sniff(head, n) && fps_trace_sniff(head, n);
	free(head);
	return trace;
}

static int read_file(const char *path, fps_series_list *out)
{
	if (tl_cli_reject_directory(FPS_PREFIX, path))
		return 1;
	if (is_streamed_trace(path))
		return fps_read_trace(path, NULL, 0, out);
	size_t len = 0;
	char *data = read_input(path, &len);
	if (!data)
		return 1;
	int status;
	size_t i = 0;
	while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
		i++;
	if (i == len) {
		fprintf(stderr, FPS_PREFIX ": %s:1: error: empty file\n", path);
		status = 1;
	} else if (tl_sf_latency_sniff(data, len) || !fps_trace_sniff(data, len)) {
		/* Read as --latency when it is not a trace: its errors name the line. */
		status = read_latency(path, data, len, out);
	} else {
		status = fps_read_trace(path, data, len, out);
		data = NULL; /* (the import's to free) */
	}
	free(data);
	return status;
}

/* ---- output ----------------------------------------------------------------- */

static void print_distribution(FILE *f, const tl_present_stats *st)
{
	for (int k = 1; k < TL_PRESENT_HIST; k++)
		fprintf(f, "%s%d%s: %llu", k == 1 ? "" : ", ", k,
		        k == TL_PRESENT_HIST - 1 ? "+" : "", (unsigned long long)st->histogram[k]);
}

static void print_table(FILE *f, const fps_series *s)
{
	const tl_present_stats *st = &s->stats;
	fprintf(f, "%s\n", s->label);
	fprintf(f, "  source              %s\n",
	        s->from_trace ? "trace (frame slices)" : "dumpsys SurfaceFlinger --latency");
	fprintf(f, "  refresh period      %.3f ms (%.2f Hz)%s%s\n", st->period_ns / 1e6,
	        st->period_ns > 0 ? 1e9 / (double)st->period_ns : 0.0,
	        st->periods_distinct > 1 ? ", most frequent of several" : "",
	        s->period_estimated ? ", estimated from the frame intervals" : "");
	fprintf(f, "  presented frames    %zu", st->frames);
	if (st->duplicates)
		fprintf(f, " (%zu duplicates merged)", st->duplicates);
	fprintf(f, "\n  fps                 %.2f\n", st->fps);
	fprintf(f, "  jank count          %llu (pauses of 20+ periods: %llu)\n",
	        (unsigned long long)st->jank_count, (unsigned long long)st->pauses);
	fprintf(f, "  max frame delay     %lld periods\n", (long long)st->max_frame_delay);
	fprintf(f, "  intervals           %zu (%zu shorter than half a period dropped)\n",
	        st->intervals, st->intervals_short);
	fprintf(f, "  interval p50/90/99  %.3f / %.3f / %.3f ms, max %.3f ms\n", st->p50_ns / 1e6,
	        st->p90_ns / 1e6, st->p99_ns / 1e6, st->max_ns / 1e6);
	fprintf(f, "  periods per interval ");
	print_distribution(f, st);
	fputc('\n', f);
	if (s->from_trace) {
		fprintf(f, "  frame time p50/90/99 %.3f / %.3f / %.3f ms, max %.3f ms\n",
		        s->duration_p50_ns / 1e6, s->duration_p90_ns / 1e6,
		        s->duration_p99_ns / 1e6, s->duration_max_ns / 1e6);
		fprintf(f, "  dropped frames      %llu in %llu janky frames\n",
		        (unsigned long long)s->dropped_frames, (unsigned long long)s->janky_frames);
	} else {
		const tl_sf_latency *l = &s->latency;
		fprintf(
		    f,
		    "  rows                %llu in %zu dump%s: %llu empty, %llu pending, %llu not "
		    "presented, %llu rejected\n",
		    (unsigned long long)l->rows, l->dumps, l->dumps == 1 ? "" : "s",
		    (unsigned long long)l->rows_empty, (unsigned long long)l->rows_pending,
		    (unsigned long long)l->rows_not_presented,
		    (unsigned long long)l->rows_rejected);
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void print_json_series(FILE *f, const fps_series *s)
{
	const tl_present_stats *st = &s->stats;
	fputs("{\"label\":", f);
	json_string(f, s->label);
	fprintf(f, ",\"source\":\"%s\",\"refresh_period_ns\":%lld,\"period_estimated\":%s",
	        s->from_trace ? "trace" : "surfaceflinger_latency", (long long)st->period_ns,
	        s->period_estimated ? "true" : "false");
	fprintf(f, ",\"frames\":%zu,\"duplicates\":%zu,\"fps\":%.3f", st->frames, st->duplicates,
	        st->fps);
	fprintf(f, ",\"jank_count\":%llu,\"pauses\":%llu,\"max_frame_delay\":%lld",
	        (unsigned long long)st->jank_count, (unsigned long long)st->pauses,
	        (long long)st->max_frame_delay);
	fprintf(f, ",\"intervals\":%zu,\"intervals_short\":%zu", st->intervals,
	        st->intervals_short);
	fprintf(f, ",\"interval_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f}",
	        st->p50_ns / 1e6, st->p90_ns / 1e6, st->p99_ns / 1e6, st->max_ns / 1e6);
	fputs(",\"periods_per_interval\":{", f);
	for (int k = 1; k < TL_PRESENT_HIST; k++)
		fprintf(f, "%s\"%d%s\":%llu", k == 1 ? "" : ",", k,
		        k == TL_PRESENT_HIST - 1 ? "+" : "", (unsigned long long)st->histogram[k]);
	fputc('}', f);
	if (s->from_trace) {
		fprintf(f,
		        ",\"frame_slices\":%llu,\"frame_time_ms\":{\"p50\":%.3f,\"p90\":%.3f,"
		        "\"p99\":%.3f,\"max\":%.3f},\"dropped_frames\":%llu,\"janky_frames\":%llu",
		        (unsigned long long)s->slices, s->duration_p50_ns / 1e6,
		        s->duration_p90_ns / 1e6, s->duration_p99_ns / 1e6,
		        s->duration_max_ns / 1e6, (unsigned long long)s->dropped_frames,
		        (unsigned long long)s->janky_frames);
	} else {
		const tl_sf_latency *l = &s->latency;
		fprintf(f,
		        ",\"dumps\":%zu,\"rows\":{\"read\":%llu,\"empty\":%llu,\"pending\":%llu,"
		        "\"not_presented\":%llu,\"rejected\":%llu}",
		        l->dumps, (unsigned long long)l->rows, (unsigned long long)l->rows_empty,
		        (unsigned long long)l->rows_pending,
		        (unsigned long long)l->rows_not_presented,
		        (unsigned long long)l->rows_rejected);
	}
	fputc('}', f);
}

int tl_cmd_fps(int argc, char **argv)
{
	struct fps_args args = {0};
	int status = parse_args(argc, argv, &args);
	if (status)
		return status;
	if (args.help) {
		fputs(fps_usage, stdout);
		return 0;
	}

	fps_series_list list = {0};
	for (int i = args.first_file; i < argc; i++)
		if (read_file(argv[i], &list))
			status = 1;

	if (args.json) {
		fputs("{\"series\":[", stdout);
		for (size_t i = 0; i < list.count; i++) {
			fputs(i ? ",\n" : "\n", stdout);
			print_json_series(stdout, &list.items[i]);
		}
		fputs("\n]}\n", stdout);
	} else {
		for (size_t i = 0; i < list.count; i++) {
			if (i)
				fputc('\n', stdout);
			print_table(stdout, &list.items[i]);
		}
	}
	if (args.plot && list.count) {
		int rc = fps_write_svg(args.plot, &list);
		if (rc < 0) {
			fprintf(stderr, FPS_PREFIX ": %s: cannot write the chart: %s\n", args.plot,
			        tl_atomic_file_strerror(rc));
			status = 1;
		}
	}
	fps_series_list_free(&list);
	return status;
}
