/* Helpers shared by the `timeline` subcommands. */
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/atomic_file.h"
#include "tools/readers/trace_import.h"

int tl_cli_usage_error(const char *prefix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prefix);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see '%s --help')\n", prefix);
	va_end(ap);
	return 2;
}

int tl_cli_option_error(const char *prefix, int opt, char **argv)
{
	if (opt == ':')
		return tl_cli_usage_error(prefix, "%s: missing value", argv[optind - 1]);
	if (optopt)
		return tl_cli_usage_error(prefix, "unknown option '-%c'", optopt);
	return tl_cli_usage_error(prefix, "unknown option '%s'", argv[optind - 1]);
}

int tl_cli_reject_directory(const char *prefix, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0;
	fprintf(stderr, "%s: %s: is a directory\n", prefix, path);
	return 1;
}

/* At most this many bytes of a line that could not be read are shown. */
#define UNREAD_TEXT_SHOWN 120

/* The reasons an event, a sample or a flow of the input was skipped for
 * what it holds (a missing or invalid field, a limit): each warned of. */
static const tl_import_stat skip_stats[] = {
    TL_STAT_JSON_MISSING_PHASE,         TL_STAT_JSON_MISSING_TS,
    TL_STAT_JSON_COMPLETE_MISSING_DUR,  TL_STAT_JSON_COMPLETE_NEGATIVE_DUR,
    TL_STAT_JSON_INSTANT_MISSING_TID,   TL_STAT_JSON_ASYNC_MISSING_ID,
    TL_STAT_JSON_COUNTER_INVALID_VALUE, TL_STAT_FLOW_INVALID_ID,
    TL_STAT_TRACK_EVENT_PARSER_ERRORS,  TL_STAT_SLICE_MAX_DEPTH_EXCEEDED,
};

/* Appends to buf[0..size) what fmt says, "; " before it when buf holds
 * something already (cut at size). */
static void add_part(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_part(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used && used + 2 < size) {
		memcpy(buf + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

int tl_cli_report_unread(const char *prefix, const char *path, const tl_import *imp)
{
	unsigned long long failed = imp->stats[TL_STAT_SYSTRACE_PARSE_FAILURE];
	unsigned long long unterminated = imp->stats[TL_STAT_SYSTRACE_UNTERMINATED_LINE];
	unsigned long long skipped = 0;
	for (size_t i = 0; i < sizeof skip_stats / sizeof skip_stats[0]; i++)
		skipped += imp->stats[skip_stats[i]];
	if (!failed && !unterminated && !skipped)
		return 0;
	int nothing = tl_import_is_empty(imp);
	char what[1024] = "";
	if (failed) {
		/* the line as it was, control bytes shown as '?', long ones cut */
		char text[UNREAD_TEXT_SHOWN + 4];
		size_t len = strlen(imp->first_failure_text), n = 0;
		for (; n < len && n < UNREAD_TEXT_SHOWN; n++) {
			unsigned char c = (unsigned char)imp->first_failure_text[n];
			text[n] = c < 0x20 || c == 0x7f ? '?' : (char)c;
		}
		strcpy(text + n, len > n ? "..." : "");
		add_part(what, sizeof what, "%llu %s %s, the first at line %zu: '%s'", failed,
		         failed == 1 ? "line" : "lines", nothing ? "failed" : "could not be read",
		         imp->first_failure_line, text);
	}
	if (unterminated && imp->unterminated_line)
		add_part(what, sizeof what,
		         "line %zu, the last, has no end of line: not read (as Perfetto does not)",
		         imp->unterminated_line);
	else if (unterminated)
		add_part(what, sizeof what,
		         "the last line of systemTraceEvents has no end of line: not read (as "
		         "Perfetto does not)");
	if (skipped) {
		add_part(what, sizeof what, "%llu skipped (", skipped);
		const char *sep = "";
		for (size_t i = 0; i < sizeof skip_stats / sizeof skip_stats[0]; i++) {
			uint64_t count = imp->stats[skip_stats[i]];
			if (!count)
				continue;
			size_t used = strlen(what);
			snprintf(what + used, sizeof what - used, "%s%s %llu", sep,
			         tl_import_stat_names[skip_stats[i]], (unsigned long long)count);
			sep = ", ";
		}
		size_t used = strlen(what);
		snprintf(what + used, sizeof what - used, ")");
	}
	if (nothing) {
		fprintf(stderr, "%s: %s: nothing could be read: %s\n", prefix, path, what);
		return 1;
	}
	fprintf(stderr, "%s: warning: %s: %s; read the rest\n", prefix, path, what);
	return 0;
}

int tl_cli_read_error(const char *prefix, const char *path, int rc, const tl_read_error *err)
{
	if (rc == -EINVAL && err->line)
		fprintf(stderr, "%s: %s:%zu:%zu: %s\n", prefix, path, err->line, err->column,
		        err->message);
	else if (rc == -EINVAL || (rc != -ENOMEM && err->message[0]))
		fprintf(stderr, "%s: %s: %s\n", prefix, path, err->message);
	else
		fprintf(stderr, "%s: %s: %s\n", prefix, path, strerror(-rc));
	return 1;
}

int tl_cli_read_import_to(const char *prefix, const char *path, char *data, size_t len,
                          const tl_import_sink *sink, const tl_symbol_options *symbols,
                          tl_import *imp)
{
	tl_read_error err = {0};
	int rc = data ? tl_import_read_bytes_to(data, len, sink, symbols, imp, NULL, &err)
	              : tl_import_read_file_to(path, sink, symbols, imp, NULL, &err);
	if (rc)
		return tl_cli_read_error(prefix, path, rc, &err);
	if (err.message[0]) /* what a snapshot lost: truncated, undecodable records */
		fprintf(stderr, "%s: warning: %s: %s; read the rest\n", prefix, path, err.message);
	if (tl_cli_report_unread(prefix, path, imp)) {
		tl_import_free(imp);
		return 1;
	}
	return 0;
}

int tl_cli_read_import(const char *prefix, const char *path, const tl_symbol_options *symbols,
                       tl_import *imp)
{
	return tl_cli_read_import_to(prefix, path, NULL, 0, NULL, symbols, imp);
}

int tl_cli_symbol_option(const char *prefix, int opt, const char *value, tl_symbol_options *symbols)
{
	if (opt == TL_CLI_OPT_SYMBOLS) {
		if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
			return tl_cli_usage_error(prefix, "--symbols: expected on or off, got '%s'",
			                          value);
		symbols->no_files = strcmp(value, "off") == 0;
	} else {
		struct stat st;
		if (stat(value, &st) != 0)
			return tl_cli_usage_error(prefix, "--debug-dir: %s: %s", value,
			                          strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return tl_cli_usage_error(prefix, "--debug-dir: %s: not a directory",
			                          value);
		if (symbols->ndebug_dirs == TL_SYMBOL_DEBUG_DIRS_MAX)
			return tl_cli_usage_error(prefix, "--debug-dir: at most %d directories",
			                          TL_SYMBOL_DEBUG_DIRS_MAX);
		symbols->debug_dirs[symbols->ndebug_dirs++] = value;
	}
	if (symbols->no_files && symbols->ndebug_dirs)
		return tl_cli_usage_error(prefix,
		                          "--debug-dir: no file is read with --symbols off");
	return 0;
}

int tl_cli_parse_mode(const char *prefix, const char *value)
{
	unsigned mode = 0;
	const char *p = value;
	for (; *p >= '0' && *p <= '7' && mode <= 0777; p++)
		mode = mode * 8 + (unsigned)(*p - '0');
	if (!*value || *p || tl_file_mode_set(mode) != 0)
		return tl_cli_usage_error(prefix,
		                          "--mode: expected octal permission bits from 0 to "
		                          "0777 (0600, 0640, 0644), got '%s'",
		                          value);
	return 0;
}

int tl_cli_output_error(const char *prefix, const char *path, int rc)
{
	fprintf(stderr, "%s: %s: cannot open for writing: %s\n", prefix, path,
	        tl_atomic_file_strerror(rc));
	return 1;
}

int tl_cli_parse_assume_clock(const char *prefix, const char *option, const char *value,
                              tl_trace_clock *clock)
{
	if (strcmp(value, "boot") == 0)
		*clock = TL_TRACE_CLOCK_BOOT;
	else if (strcmp(value, "mono") == 0)
		*clock = TL_TRACE_CLOCK_MONO;
	else
		return tl_cli_usage_error(prefix, "%s: expected boot or mono, got '%s'", option,
		                          value);
	return 0;
}
