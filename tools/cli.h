/* Helpers shared by the `timeline` subcommands. */
#ifndef TIMELINE_TOOLS_CLI_H
#define TIMELINE_TOOLS_CLI_H

/* Reports a usage error on one line, "PREFIX: message (see 'PREFIX --help')",
 * on stderr; returns 2, the exit status for it. */
int tl_cli_usage_error(const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* TIMELINE_TOOLS_CLI_H */
