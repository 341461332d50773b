/*
 * `timeline slices IN [--kind LIST] [--stats]`: reads a trace (ftrace or
 * systrace text, Chrome JSON, or a binary snapshot) the way Perfetto's
 * trace processor does and prints what it contains, one item per line.
 * `timeline slices --markers FILE` parses trace_marker payloads instead,
 * one JSON string literal per line.
 */
#include "tools/cli.h"
#include "tools/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/filters.h"
#include "tools/readers/import_print.h"
#include "tools/readers/trace_import.h"

#define SLICES_PREFIX "timeline slices"

static const char slices_usage[] =
    "usage: timeline slices IN [--kind KINDS] [--stats] [filters]\n"
    "       timeline slices --markers FILE\n"
    "\n"
    "Reads IN (ftrace/systrace text, Chrome JSON or a timeline binary snapshot)\n"
    "the way Perfetto's trace processor reads it, and prints one item per line:\n"
    "  slice ts=... dur=... name=\"...\" tid=... pid=... depth=... cat=... thread_ts=...\n"
    "  instant ..., async ..., counter ..., flow out=\"...\" in=\"...\", arg ...\n"
    "Times are nanoseconds; dur=-1 is a slice that never ended.\n"
    "\n"
    "options:\n"
    "  -k, --kind KINDS   comma-separated: slice, instant, async, counter, flow,\n"
    "                     arg, process, thread (default: the first five)\n"
    "  -s, --stats        also print what was rejected, per reason (stat lines)\n"
    "  -m, --markers      FILE holds one trace_marker payload per line, written as a\n"
    "                     JSON string literal; print how each one parses\n"
    "  -h, --help         print this help\n"
    "\n" TL_FILTER_USAGE "\n" TL_CLI_SYMBOL_USAGE;

#define usage_error(...) tl_cli_usage_error(SLICES_PREFIX, __VA_ARGS__)

static int parse_kinds(const char *list, unsigned *kinds)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
	    {"slice", TL_PRINT_SLICE},     {"instant", TL_PRINT_INSTANT}, {"async", TL_PRINT_ASYNC},
	    {"counter", TL_PRINT_COUNTER}, {"flow", TL_PRINT_FLOW},       {"arg", TL_PRINT_ARG},
	    {"process", TL_PRINT_PROCESS}, {"thread", TL_PRINT_THREAD},   {"stat", TL_PRINT_STAT}};
	*kinds = 0;
	const char *p = list;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t i = 0;
		for (; i < sizeof names / sizeof names[0]; i++) {
			if (strlen(names[i].name) == n && strncmp(p, names[i].name, n) == 0)
				break;
		}
		if (i == sizeof names / sizeof names[0])
			return usage_error("--kind: unknown kind '%.*s'", (int)n, p);
		*kinds |= names[i].bit;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!*kinds)
		return usage_error("--kind: empty list");
	return 0;
}

/*
 * Decodes the JSON string literal at line[0..len) into out (capacity len:
 * decoding never grows). Returns the decoded length, or -1 with *column
 * set to where it is malformed.
 */
static long decode_string_literal(const char *line, size_t len, char *out, size_t *column)
{
	size_t i = 0, n = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i >= len || line[i] != '"') {
		*column = i + 1;
		return -1;
	}
	for (i++; i < len; i++) {
		char c = line[i];
		if (c == '"') {
			for (i++; i < len; i++) {
				if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
					*column = i + 1;
					return -1;
				}
			}
			return (long)n;
		}
		if (c != '\\') {
			out[n++] = c;
			continue;
		}
		if (++i >= len)
			break;
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
		const char *hit = strchr(from, line[i]);
		if (hit && line[i]) {
			out[n++] = to[hit - from];
			continue;
		}
		unsigned cp = 0;
		if (line[i] != 'u' || i + 4 >= len) {
			*column = i;
			return -1;
		}
		for (int k = 1; k <= 4; k++) {
			char h = line[i + (size_t)k];
			int v = h >= '0' && h <= '9'   ? h - '0'
			        : h >= 'a' && h <= 'f' ? h - 'a' + 10
			        : h >= 'A' && h <= 'F' ? h - 'A' + 10
			                               : -1;
			if (v < 0) {
				*column = i;
				return -1;
			}
			cp = cp << 4 | (unsigned)v;
		}
		i += 4;
		if (cp < 0x80) {
			out[n++] = (char)cp;
		} else if (cp < 0x800) {
			out[n++] = (char)(0xc0 | cp >> 6);
			out[n++] = (char)(0x80 | (cp & 0x3f));
		} else {
			out[n++] = (char)(0xe0 | cp >> 12);
			out[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
			out[n++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	*column = len + 1;
	return -1;
}

/* --markers: one parse line per input line (blank and '#' lines skipped). */
static int run_markers(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, SLICES_PREFIX ": %s: cannot open: %s\n", path, strerror(errno));
		return 1;
	}
	char *line = NULL;
	size_t cap = 0, line_no = 0;
	ssize_t got;
	int status = 0;
	while ((got = getline(&line, &cap, f)) >= 0) {
		line_no++;
		size_t len = (size_t)got;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		size_t lead = strspn(line, " \t");
		if (lead >= len || line[lead] == '#')
			continue;
		char *payload = malloc(len + 1);
		size_t column = 0;
		long n = payload ? decode_string_literal(line, len, payload, &column) : -1;
		if (n < 0) {
			if (payload)
				fprintf(stderr,
				        SLICES_PREFIX
				        ": %s:%zu:%zu: expected a JSON string literal\n",
				        path, line_no, column);
			else
				fprintf(stderr, SLICES_PREFIX ": out of memory\n");
			free(payload);
			status = 1;
			break;
		}
		tl_atrace_point point;
		tl_atrace_result result = tl_atrace_parse(payload, (size_t)n, &point);
		tl_import_print_marker(stdout, result, &point);
		free(payload);
	}
	free(line);
	fclose(f);
	if (fflush(stdout) != 0) {
		fprintf(stderr, SLICES_PREFIX ": writing: %s\n", strerror(errno));
		return 1;
	}
	return status;
}

/* The filters, as the printer asks them (tools/filters.h). */
static bool slice_passes(void *ctx, const tl_import *imp, const tl_import_slice *s,
                         const tl_import_track *t)
{
	return tl_filter_slice_on_passes(ctx, imp, s, t);
}

static bool counter_passes(void *ctx, const tl_import *imp, const tl_import_counter *c)
{
	return tl_filter_sample_passes(ctx, imp, c);
}

static bool thread_passes(void *ctx, const tl_import *imp, const tl_import_thread *t)
{
	(void)imp;
	return tl_filter_thread_passes(ctx, t);
}

static bool process_passes(void *ctx, const tl_import *imp, const tl_import_process *p)
{
	return tl_filter_process_passes(ctx, imp, p->pid);
}

/*
 * The items are printed from what the import hands on as it reads
 * (memory: what is open, and the printer's sorters), in the order and
 * bytes of the whole import, filtered as tl_filter_import filters it.
 */
static int print_streamed(const char *path, tl_filter *filter, unsigned kinds,
                          const tl_symbol_options *symbols)
{
	tl_import_printer *printer = tl_import_printer_new(kinds);
	if (!printer) {
		fprintf(stderr, SLICES_PREFIX ": out of memory\n");
		return 1;
	}
	bool filtered = tl_filter_active(filter);
	if (filtered)
		tl_import_printer_filter(printer);
	tl_import imp;
	if (tl_cli_read_import_to(SLICES_PREFIX, path, NULL, 0, tl_import_printer_sink(printer),
	                          symbols, &imp)) {
		tl_import_printer_free(printer);
		return 1;
	}
	int rc = filtered ? tl_filter_resolve_from(filter, SLICES_PREFIX,
	                                           tl_import_printer_first_ts(printer))
	                  : 0;
	tl_import_print_filter passes = {.ctx = filter,
	                                 .slice = slice_passes,
	                                 .counter = counter_passes,
	                                 .thread = thread_passes,
	                                 .process = process_passes};
	if (rc == 0) {
		rc = tl_import_printer_write(printer, &imp, filtered ? &passes : NULL, stdout);
		if (rc)
			fprintf(stderr,
			        SLICES_PREFIX ": %s: reading back what was kept aside: %s\n", path,
			        strerror(-rc));
		else if (filtered && !tl_import_is_empty(&imp) &&
		         tl_import_printer_passing(printer) == 0)
			fprintf(stderr, SLICES_PREFIX ": warning: nothing passes the filters\n");
		rc = rc ? 1 : 0;
	}
	tl_import_free(&imp);
	tl_import_printer_free(printer);
	return rc;
}

int tl_cmd_slices(int argc, char **argv)
{
	static const struct option options[] = {
	    {"kind", required_argument, NULL, 'k'},
	    {"stats", no_argument, NULL, 's'},
	    {"markers", no_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    TL_FILTER_LONG_OPTIONS,
	    TL_CLI_SYMBOL_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	tl_filter filter = {0};
	tl_symbol_options symbols = {0};
	unsigned kinds = TL_PRINT_DEFAULT;
	int stats = 0, markers = 0, opt, rc;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":k:smh", options, NULL)) != -1) {
		switch (opt) {
		case 'k':
			if ((rc = parse_kinds(optarg, &kinds)))
				return rc;
			break;
		case 's':
			stats = 1;
			break;
		case 'm':
			markers = 1;
			break;
		case 'h':
			fputs(slices_usage, stdout);
			return 0;
		default:
			if (tl_filter_is_option(opt)) {
				if ((rc = tl_filter_option(&filter, SLICES_PREFIX, opt, optarg)))
					return rc;
				break;
			}
			if (tl_cli_is_symbol_option(opt)) {
				if ((rc = tl_cli_symbol_option(SLICES_PREFIX, opt, optarg,
				                               &symbols)))
					return rc;
				break;
			}
			return tl_cli_option_error(SLICES_PREFIX, opt, argv); /* ':' or '?' */
		}
	}
	if (optind == argc)
		return usage_error("missing the input file");
	if (argc - optind > 1)
		return usage_error("unexpected argument '%s'", argv[optind + 1]);
	const char *path = argv[optind];
	if (tl_cli_reject_directory(SLICES_PREFIX, path))
		return 1;
	if (markers && tl_filter_active(&filter))
		return usage_error("--markers: the filters apply to a trace, not to payloads");
	if (markers)
		return run_markers(path);

	kinds |= stats ? TL_PRINT_STAT : 0;
	if ((rc = print_streamed(path, &filter, kinds, &symbols)))
		return rc;
	if (fflush(stdout) != 0) {
		fprintf(stderr, SLICES_PREFIX ": writing: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
