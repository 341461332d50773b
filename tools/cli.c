/* Helpers shared by the `timeline` subcommands. */
#include "tools/cli.h"

#include <stdarg.h>
#include <stdio.h>

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
