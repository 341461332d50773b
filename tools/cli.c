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

int tl_cli_report_unread_lines(const char *prefix, const char *path, const tl_import *imp)
{
	unsigned long long failed = imp->stats[TL_STAT_SYSTRACE_PARSE_FAILURE];
	if (!failed)
		return 0;
	/* the line as it was, control bytes shown as '?', long ones cut */
	char text[UNREAD_TEXT_SHOWN + 4];
	size_t len = strlen(imp->first_failure_text), n = 0;
	for (; n < len && n < UNREAD_TEXT_SHOWN; n++) {
		unsigned char c = (unsigned char)imp->first_failure_text[n];
		text[n] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	strcpy(text + n, len > n ? "..." : "");
	const char *lines = failed == 1 ? "line" : "lines";
	if (tl_import_is_empty(imp)) {
		fprintf(stderr,
		        "%s: %s: nothing could be read: %llu %s failed, the first at line %zu: "
		        "'%s'\n",
		        prefix, path, failed, lines, imp->first_failure_line, text);
		return 1;
	}
	fprintf(stderr,
	        "%s: warning: %s: %llu %s could not be read, the first at line %zu: '%s'; "
	        "read the rest\n",
	        prefix, path, failed, lines, imp->first_failure_line, text);
	return 0;
}

int tl_cli_read_import_to(const char *prefix, const char *path, char *data, size_t len,
                          const tl_import_sink *sink, tl_import *imp)
{
	tl_read_error err = {0};
	int rc = data   ? tl_import_read_bytes_to(data, len, sink, imp, NULL, &err)
	         : sink ? tl_import_read_file_to(path, sink, imp, NULL, &err)
	                : tl_import_read_file(path, imp, NULL, &err);
	if (rc) {
		if (rc == -EINVAL && err.line)
			fprintf(stderr, "%s: %s:%zu:%zu: %s\n", prefix, path, err.line, err.column,
			        err.message);
		else if (rc == -EINVAL || (rc != -ENOMEM && err.message[0]))
			fprintf(stderr, "%s: %s: %s\n", prefix, path, err.message);
		else
			fprintf(stderr, "%s: %s: %s\n", prefix, path, strerror(-rc));
		return 1;
	}
	if (tl_cli_report_unread_lines(prefix, path, imp)) {
		tl_import_free(imp);
		return 1;
	}
	return 0;
}

int tl_cli_read_import(const char *prefix, const char *path, tl_import *imp)
{
	return tl_cli_read_import_to(prefix, path, NULL, 0, NULL, imp);
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
