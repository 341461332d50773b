/* Helpers shared by the `timeline` subcommands. */
#include "tools/cli.h"

#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <sys/stat.h>

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
