/*
 * `timeline convert IN -o OUT [--format json|ftrace|perfetto]`: reads a
 * binary snapshot (tl_snapshot_binary, or one written from a signal
 * handler), ftrace/systrace text, Chrome JSON or a Perfetto trace (told
 * apart by content) and writes it as Chrome JSON, ftrace text or Perfetto's
 * protobuf format. Text, JSON and Perfetto inputs go through the importer
 * (tools/readers/trace_import.h), so what is written is what Perfetto
 * would read from IN. A binary snapshot converted without filters is
 * exported as it is read (recorder/export/export_stream.h), in memory
 * bounded by its size.
 */
#include "tools/cli.h"
#include "tools/commands.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"
#include "recorder/snapshot_format.h"
#include "tools/filters.h"
#include "tools/output_format.h"
#include "tools/readers/trace_import.h"

#define CONVERT_PREFIX "timeline convert"

static const char convert_usage[] =
    "usage: timeline convert IN... -o OUT [--format json|ftrace|perfetto] [filters]\n"
    "\n"
    "Reads IN - a binary snapshot (written by tl_snapshot_binary(), also from a\n"
    "signal handler, or by the file recorder), ftrace/systrace text, Chrome JSON or\n"
    "a Perfetto trace, recognised by content - and writes it as Chrome JSON, for\n"
    "Perfetto and chrome://tracing, as ftrace text, for systrace and trace-cmd style\n"
    "tools, or in Perfetto's own protobuf format, for ui.perfetto.dev and\n"
    "trace_processor. Text, JSON and Perfetto traces are read the way Perfetto reads\n"
    "them (see 'timeline slices'). Several inputs are the files of one file\n"
    "recorder's rotation, oldest first (PATH.2 PATH.1 PATH), read as one trace.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT      the file to write; '-' for standard output\n"
    "  -f, --format FORMAT   json, ftrace or perfetto; without it, from OUT's\n"
    "                        extension: .txt, .ftrace, .systrace give ftrace,\n"
    "                        .perfetto-trace, .pftrace, .pb give perfetto,\n"
    "                        anything else json\n"
    "  --assume-clock CLOCK  boot or mono: the clock of an input that names none\n"
    "                        (a kernel's trace, trace-cmd report: they do not say)\n"
    "  --mode MODE           OUT's permission bits, octal (default 0600: private)\n"
    "  -h, --help            print this help\n"
    "\n" TL_FILTER_USAGE
    "With filters, IN is read as 'timeline slices' reads it, and what passes is\n"
    "written: whole slices, with their args and the flows whose both ends pass.\n"
    "\n" TL_CLI_SYMBOL_USAGE;

/* What is written: a model, or a binary snapshot read as it is exported. */
struct convert_source {
	const tl_model *model;    /* or */
	tl_snapshot_read *reader; /* when the format can stream */
	size_t nevents;
	size_t nthreads;
};

static int write_source(const tl_output_format *format, const struct convert_source *src,
                        int fd, tl_export_counts *counts)
{
	if (src->reader)
		return format->write_stream(src->reader, fd, counts);
	return format->write(src->model, fd, counts);
}

#define usage_error(...) tl_cli_usage_error(CONVERT_PREFIX, __VA_ARGS__)

struct convert_args {
	const char *input;
	/* every input: more than one only for binary files that continue one
	 * another (a file recorder's rotation, oldest first) */
	const char *const *inputs;
	size_t ninputs;
	const char *output;
	const tl_output_format *format; /* NULL: from the output's extension */
	tl_trace_clock assume_clock;    /* of an input that names none */
	int help;
	tl_filter filter;
	tl_symbol_options symbols; /* which files name a snapshot's functions */
};

enum { OPT_ASSUME_CLOCK = 0x2000 }; /* clear of the filters' TL_FILTER_OPT_* */

/* Returns 0, or the exit status of a usage error (already reported). */
static int parse_args(int argc, char **argv, struct convert_args *args)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"assume-clock", required_argument, NULL, OPT_ASSUME_CLOCK},
	    TL_CLI_MODE_LONG_OPTION,
	    {"help", no_argument, NULL, 'h'},
	    TL_FILTER_LONG_OPTIONS,
	    TL_CLI_SYMBOL_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	optind = 1;
	opterr = 0;
	int opt, rc;
	while ((opt = getopt_long(argc, argv, ":o:f:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			args->output = optarg;
			break;
		case 'f':
			args->format = tl_output_format_by_name(optarg);
			if (!args->format)
				return usage_error(
				    "--format: expected json, ftrace or perfetto, got '%s'",
				    optarg);
			break;
		case OPT_ASSUME_CLOCK:
			if (tl_cli_parse_assume_clock(CONVERT_PREFIX, "--assume-clock", optarg,
			                              &args->assume_clock))
				return 2;
			break;
		case TL_CLI_OPT_MODE:
			if (tl_cli_parse_mode(CONVERT_PREFIX, optarg))
				return 2;
			break;
		case 'h':
			args->help = 1;
			return 0;
		default:
			if (tl_filter_is_option(opt)) {
				if ((rc = tl_filter_option(&args->filter, CONVERT_PREFIX, opt,
				                           optarg)))
					return rc;
				break;
			}
			if (tl_cli_is_symbol_option(opt)) {
				if ((rc = tl_cli_symbol_option(CONVERT_PREFIX, opt, optarg,
				                               &args->symbols)))
					return rc;
				break;
			}
			return tl_cli_option_error(CONVERT_PREFIX, opt, argv); /* ':' or '?' */
		}
	}
	if (optind == argc)
		return usage_error("missing the input file");
	args->input = argv[optind];
	args->inputs = (const char *const *)argv + optind;
	args->ninputs = (size_t)(argc - optind);
	if (!args->output)
		return usage_error("missing -o OUT");
	return 0;
}

static void print_summary(const struct convert_args *args, const tl_output_format *format,
                          const struct convert_source *src, const tl_export_counts *counts)
{
	const char *out = strcmp(args->output, "-") == 0 ? "standard output" : args->output;
	fprintf(stderr, CONVERT_PREFIX ": wrote %s (%s): %zu events, %zu threads", out,
	        format->name, src->nevents, src->nthreads);
	if (counts->unmatched_begin)
		fprintf(stderr, ", %llu open slices closed at the end",
		        (unsigned long long)counts->unmatched_begin);
	if (counts->unmatched_end)
		fprintf(stderr, ", %llu ends without a begin dropped",
		        (unsigned long long)counts->unmatched_end);
	fputc('\n', stderr);
}

/* The events each thread dropped in the recorder (a file recorder whose
 * drain fell behind: THREAD_DROPS), one line, the threads that dropped
 * most first; nothing when none did. */
#define DROPS_LISTED 16

static int by_drops(const void *pa, const void *pb)
{
	const struct tl_snapshot_drops *a = pa, *b = pb;
	if (a->dropped != b->dropped)
		return a->dropped > b->dropped ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static void print_thread_drops(const char *input, const tl_snapshot_read *reader,
                               const tl_model *meta)
{
	struct tl_snapshot_drops *drops = malloc((reader->ndrops + 1) * sizeof *drops);
	size_t n = 0;
	for (size_t i = 0; drops && i < reader->ndrops; i++)
		if (reader->drops[i].dropped)
			drops[n++] = reader->drops[i];
	if (n) {
		qsort(drops, n, sizeof drops[0], by_drops);
		fprintf(stderr, CONVERT_PREFIX ": %s: %llu events dropped by the recorder:", input,
		        (unsigned long long)reader->thread_drops_total);
		for (size_t i = 0; i < n && i < DROPS_LISTED; i++) {
			const char *name = "";
			for (size_t t = 0; t < meta->nthreads; t++)
				if (meta->threads[t].tid == drops[i].tid)
					name = meta->threads[t].name;
			fprintf(stderr, "%s %llu by thread %u%s%s%s", i ? "," : "",
			        (unsigned long long)drops[i].dropped, drops[i].tid,
			        name[0] ? " (" : "", name, name[0] ? ")" : "");
		}
		if (n > DROPS_LISTED)
			fprintf(stderr, ", and %zu more threads", n - DROPS_LISTED);
		fputc('\n', stderr);
	}
	free(drops);
}

/* Writes the source; returns the exit status, problems reported, the
 * summary left to the caller. A file is written whole or not at all
 * (recorder/atomic_file.h). */
static int write_output(const struct convert_args *args, const tl_output_format *format,
                        const struct convert_source *src, tl_export_counts *counts)
{
	if (strcmp(args->output, "-") == 0) {
		int rc = write_source(format, src, STDOUT_FILENO, counts);
		if (rc < 0) {
			fprintf(stderr, CONVERT_PREFIX ": standard output: write failed: %s\n",
			        strerror(-rc));
			return 1;
		}
		return 0;
	}
	struct tl_atomic_file out;
	int rc = tl_atomic_file_open(&out, args->output);
	if (rc < 0)
		return tl_cli_output_error(CONVERT_PREFIX, args->output, rc);
	rc = write_source(format, src, out.fd, counts);
	if (rc < 0)
		tl_atomic_file_abort(&out);
	else
		rc = tl_atomic_file_commit(&out);
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: write failed: %s\n", args->output,
		        strerror(-rc));
		return 1;
	}
	return 0;
}

/* Whether path starts as a binary snapshot does (an unreadable file: no). */
static bool is_binary_snapshot(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	char head[TL_SNAPSHOT_MAGIC_LEN];
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && memcmp(head, TL_SNAPSHOT_MAGIC, sizeof head) == 0;
}

/*
 * Reads IN into a model: a snapshot directly, text, JSON or a Perfetto
 * trace through the importer; then keeps what passes filter. Same contract
 * as tl_model_read_binary_file for a snapshot. Returns 1, the problem
 * reported, when the importer fails (tl_cli_read_error) or nothing could be
 * read (a warning is printed when some could not:
 * tl_cli_report_unread), 1 or 2 as tl_filter_import does. An
 * imported trace that names no clock is taken to be on assume_clock
 * (TL_TRACE_CLOCK_UNKNOWN: left unknown); a snapshot always names its own.
 * A snapshot's functions are named from the files symbols allows.
 */
static int read_input(const char *path, tl_filter *filter, tl_trace_clock assume_clock,
                      const tl_symbol_options *symbols, tl_model *model, char *err, size_t errlen)
{
	/* the format as the importer tells it (tl_trace_format_sniff): a
	 * snapshot by its magic, the rest by the importer, whose errors name
	 * the format the file is */
	if (is_binary_snapshot(path)) {
		int rc = tl_model_read_binary_files(&path, 1, symbols, model, err, errlen);
		int status = rc == 0 ? tl_filter_model(filter, CONVERT_PREFIX, model) : 0;
		if (status)
			tl_model_free(model);
		return status ? status : rc;
	}

	tl_import imp;
	tl_read_error rerr = {0};
	int rc = tl_import_read_file_to(path, NULL, symbols, &imp, NULL, &rerr);
	if (rc < 0)
		return tl_cli_read_error(CONVERT_PREFIX, path, rc, &rerr);
	if (tl_cli_report_unread(CONVERT_PREFIX, path, &imp)) {
		tl_import_free(&imp);
		return 1;
	}
	if (imp.clock == TL_TRACE_CLOCK_UNKNOWN)
		imp.clock = assume_clock;
	int status = tl_filter_import(filter, CONVERT_PREFIX, &imp);
	if (status) {
		tl_import_free(&imp);
		return status;
	}
	return tl_import_move_to_model(&imp, model);
}

/* Data lost in the snapshot (truncated file, undecodable records). */
static void warn_losses(const char *input, const char *err)
{
	if (err[0])
		fprintf(stderr, CONVERT_PREFIX ": warning: %s: %s; converting what was read\n",
		        input, err);
}

/*
 * Converts binary snapshots (the files of one rotation, oldest first) as
 * they are read, without a model. Returns the exit status.
 */
static int convert_binary(const struct convert_args *args, const tl_output_format *format)
{
	void *data;
	size_t len, failed;
	const char *input = args->inputs[args->ninputs - 1];
	int rc = tl_snapshot_load_files(args->inputs, args->ninputs, &data, &len, &failed);
	if (rc < 0) {
		if (args->ninputs > 1)
			fprintf(stderr, CONVERT_PREFIX ": %s: %s: %s\n", input,
			        args->inputs[failed], strerror(-rc));
		else
			fprintf(stderr, CONVERT_PREFIX ": %s: %s\n", input, strerror(-rc));
		return 1;
	}
	tl_model meta;
	tl_snapshot_read reader;
	char err[256] = "";
	rc = tl_snapshot_read_open(&reader, data, len, &meta, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: %s\n", input, err[0] ? err : strerror(-rc));
		free(data);
		return 1;
	}
	reader.symbols = &args->symbols;
	struct convert_source src = {.reader = &reader};
	tl_export_counts counts = {0};
	int status = write_output(args, format, &src, &counts);
	if (status == 0) {
		tl_snapshot_read_finish(&reader);
		warn_losses(input, err);
		src.nevents = (size_t)reader.nevents;
		src.nthreads = meta.nthreads;
		print_summary(args, format, &src, &counts);
		print_thread_drops(input, &reader, &meta);
	}
	tl_snapshot_read_close(&reader);
	tl_model_free(&meta);
	free(data);
	return status;
}

/* Whether the format can stream, nothing is filtered and every input is
 * a binary snapshot. */
static bool can_stream(const struct convert_args *args, const tl_output_format *format)
{
	if (tl_filter_active(&args->filter))
		return false;
	for (size_t i = 0; format->write_stream && i < args->ninputs; i++) {
		if (!is_binary_snapshot(args->inputs[i]))
			return false;
	}
	return format->write_stream != NULL;
}

int tl_cmd_convert(int argc, char **argv)
{
	struct convert_args args = {0};
	int status = parse_args(argc, argv, &args);
	if (status)
		return status;
	if (args.help) {
		fputs(convert_usage, stdout);
		return 0;
	}
	const tl_output_format *format =
	    args.format ? args.format : tl_output_format_from_path(args.output);

	for (size_t i = 0; i < args.ninputs; i++)
		if (tl_cli_reject_directory(CONVERT_PREFIX, args.inputs[i]))
			return 1;
	if (can_stream(&args, format))
		return convert_binary(&args, format);
	tl_model model;
	char err[256] = "";
	int rc;
	if (args.ninputs > 1) {
		/* the files of one rotation: binary snapshots, read as one */
		for (size_t i = 0; i < args.ninputs; i++) {
			if (!is_binary_snapshot(args.inputs[i])) {
				fprintf(stderr,
				        CONVERT_PREFIX ": %s: not a binary snapshot; several inputs must "
				                       "be the files of one file recorder's rotation, "
				                       "oldest first\n",
				        args.inputs[i]);
				return 1;
			}
		}
		rc = tl_model_read_binary_files(args.inputs, args.ninputs, &args.symbols, &model,
		                                err, sizeof err);
		args.input = args.inputs[args.ninputs - 1];
		status = rc == 0 ? tl_filter_model(&args.filter, CONVERT_PREFIX, &model) : 0;
		if (status) {
			tl_model_free(&model);
			return status;
		}
	} else {
		rc = read_input(args.input, &args.filter, args.assume_clock, &args.symbols, &model,
		                err, sizeof err);
	}
	if (rc > 0)
		return rc;
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: %s\n", args.input,
		        err[0] ? err : strerror(-rc));
		return 1;
	}
	warn_losses(args.input, err);

	struct convert_source src = {
	    .model = &model, .nevents = model.nevents, .nthreads = model.nthreads};
	tl_export_counts counts = {0};
	status = write_output(&args, format, &src, &counts);
	if (status == 0)
		print_summary(&args, format, &src, &counts);
	tl_model_free(&model);
	return status;
}
