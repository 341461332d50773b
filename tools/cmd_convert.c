/*
 * `timeline convert IN -o OUT [--format json|ftrace|perfetto]`: reads a
 * binary snapshot (tl_snapshot_binary, or one written from a signal
 * handler), ftrace/systrace text, Chrome JSON or a Perfetto trace (told
 * apart by content) and writes it as Chrome JSON, ftrace text or Perfetto's
 * protobuf format. Text, JSON and Perfetto inputs go through the importer
 * (tools/readers/trace_import.h), so what is written is what Perfetto
 * would read from IN.
 */
#include "tools/cli.h"
#include "tools/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/export/trace_model.h"
#include "recorder/snapshot_format.h"
#include "tools/filters.h"
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
    "  -h, --help            print this help\n"
    "\n" TL_FILTER_USAGE
    "With filters, IN is read as 'timeline slices' reads it, and what passes is\n"
    "written: whole slices, with their args and the flows whose both ends pass.\n";

struct convert_format {
	const char *name;
	int (*write)(const tl_model *model, int fd, tl_export_counts *counts);
};

static const struct convert_format format_json = {"json", tl_export_json};
static const struct convert_format format_ftrace = {"ftrace", tl_export_ftrace};
static const struct convert_format format_perfetto = {"perfetto", tl_export_perfetto};

static const struct convert_format *format_by_name(const char *name)
{
	if (strcmp(name, format_json.name) == 0)
		return &format_json;
	if (strcmp(name, format_ftrace.name) == 0)
		return &format_ftrace;
	if (strcmp(name, format_perfetto.name) == 0)
		return &format_perfetto;
	return NULL;
}

static const struct convert_format *format_from_path(const char *path)
{
	static const char *const ftrace_extensions[] = {".txt", ".ftrace", ".systrace"};
	static const char *const perfetto_extensions[] = {".perfetto-trace", ".pftrace", ".pb"};
	const char *base = strrchr(path, '/');
	const char *ext = strrchr(base ? base : path, '.');
	for (size_t i = 0; ext && i < sizeof ftrace_extensions / sizeof ftrace_extensions[0]; i++) {
		if (strcasecmp(ext, ftrace_extensions[i]) == 0)
			return &format_ftrace;
	}
	for (size_t i = 0; ext && i < sizeof perfetto_extensions / sizeof perfetto_extensions[0];
	     i++) {
		if (strcasecmp(ext, perfetto_extensions[i]) == 0)
			return &format_perfetto;
	}
	return &format_json;
}

#define usage_error(...) tl_cli_usage_error(CONVERT_PREFIX, __VA_ARGS__)

struct convert_args {
	const char *input;
	/* every input: more than one only for binary files that continue one
	 * another (a file recorder's rotation, oldest first) */
	const char *const *inputs;
	size_t ninputs;
	const char *output;
	const struct convert_format *format; /* NULL: from the output's extension */
	int help;
	tl_filter filter;
};

/* Returns 0, or the exit status of a usage error (already reported). */
static int parse_args(int argc, char **argv, struct convert_args *args)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    TL_FILTER_LONG_OPTIONS,
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
			args->format = format_by_name(optarg);
			if (!args->format)
				return usage_error(
				    "--format: expected json, ftrace or perfetto, got '%s'",
				    optarg);
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

static void print_summary(const struct convert_args *args, const struct convert_format *format,
                          const tl_model *model, const tl_export_counts *counts)
{
	const char *out = strcmp(args->output, "-") == 0 ? "standard output" : args->output;
	fprintf(stderr, CONVERT_PREFIX ": wrote %s (%s): %zu events, %zu threads", out,
	        format->name, model->nevents, model->nthreads);
	if (counts->unmatched_begin)
		fprintf(stderr, ", %llu open slices closed at the end",
		        (unsigned long long)counts->unmatched_begin);
	if (counts->unmatched_end)
		fprintf(stderr, ", %llu ends without a begin dropped",
		        (unsigned long long)counts->unmatched_end);
	fputc('\n', stderr);
}

/* Writes the model; returns the exit status, problems reported. A file is
 * written whole or not at all (recorder/atomic_file.h). */
static int write_output(const struct convert_args *args, const struct convert_format *format,
                        const tl_model *model)
{
	tl_export_counts counts = {0};
	if (strcmp(args->output, "-") == 0) {
		int rc = format->write(model, STDOUT_FILENO, &counts);
		if (rc < 0) {
			fprintf(stderr, CONVERT_PREFIX ": standard output: write failed: %s\n",
			        strerror(-rc));
			return 1;
		}
		print_summary(args, format, model, &counts);
		return 0;
	}
	struct tl_atomic_file out;
	int rc = tl_atomic_file_open(&out, args->output);
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: cannot open for writing: %s\n", args->output,
		        strerror(-rc));
		return 1;
	}
	rc = format->write(model, out.fd, &counts);
	if (rc < 0)
		tl_atomic_file_abort(&out);
	else
		rc = tl_atomic_file_commit(&out);
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: write failed: %s\n", args->output,
		        strerror(-rc));
		return 1;
	}
	print_summary(args, format, model, &counts);
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
 * as tl_model_read_binary_file; err gets "LINE:COLUMN: reason" for
 * malformed text. Returns 1, the problem reported, when no line of a text
 * could be read (a warning is printed when some could not), 1 or 2 as
 * tl_filter_import does.
 */
static int read_input(const char *path, tl_filter *filter, tl_model *model, char *err,
                      size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	char head[4096];
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	tl_trace_format format = tl_json_sniff(head, n)          ? TL_TRACE_FORMAT_JSON
	                         : tl_perfetto_sniff(head, n)    ? TL_TRACE_FORMAT_PERFETTO
	                         : tl_ftrace_text_sniff(head, n) ? TL_TRACE_FORMAT_FTRACE
	                                                         : TL_TRACE_FORMAT_BINARY;
	if (format == TL_TRACE_FORMAT_BINARY) {
		int rc = tl_model_read_binary_file(path, model, err, errlen);
		int status = rc == 0 ? tl_filter_model(filter, CONVERT_PREFIX, model) : 0;
		if (status)
			tl_model_free(model);
		return status ? status : rc;
	}

	tl_import imp;
	tl_read_error rerr = {0};
	int rc = tl_import_read_file(path, &imp, NULL, &rerr);
	if (rc < 0) {
		if (rerr.line)
			snprintf(err, errlen, "%zu:%zu: %s", rerr.line, rerr.column, rerr.message);
		else
			snprintf(err, errlen, "%s", rerr.message);
		return rc;
	}
	if (tl_cli_report_unread_lines(CONVERT_PREFIX, path, &imp)) {
		tl_import_free(&imp);
		return 1;
	}
	int status = tl_filter_import(filter, CONVERT_PREFIX, &imp);
	if (status) {
		tl_import_free(&imp);
		return status;
	}
	rc = tl_import_to_model(&imp, model);
	tl_import_free(&imp);
	return rc;
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
	const struct convert_format *format =
	    args.format ? args.format : format_from_path(args.output);

	for (size_t i = 0; i < args.ninputs; i++)
		if (tl_cli_reject_directory(CONVERT_PREFIX, args.inputs[i]))
			return 1;
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
		rc = tl_model_read_binary_files(args.inputs, args.ninputs, &model, err, sizeof err);
		args.input = args.inputs[args.ninputs - 1];
		status = rc == 0 ? tl_filter_model(&args.filter, CONVERT_PREFIX, &model) : 0;
		if (status) {
			tl_model_free(&model);
			return status;
		}
	} else {
		rc = read_input(args.input, &args.filter, &model, err, sizeof err);
	}
	if (rc > 0)
		return rc;
	if (rc < 0) {
		fprintf(stderr, CONVERT_PREFIX ": %s: %s\n", args.input,
		        err[0] ? err : strerror(-rc));
		return 1;
	}
	/* Data lost in the snapshot (truncated file, undecodable records). */
	if (err[0])
		fprintf(stderr, CONVERT_PREFIX ": warning: %s: %s; converting what was read\n",
		        args.input, err);

	status = write_output(&args, format, &model);
	tl_model_free(&model);
	return status;
}
