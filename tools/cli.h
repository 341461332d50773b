/* Helpers shared by the `timeline` subcommands. */
#ifndef TIMELINE_TOOLS_CLI_H
#define TIMELINE_TOOLS_CLI_H

/* Reports a usage error on one line, "PREFIX: message (see 'PREFIX --help')",
 * on stderr; returns 2, the exit status for it. */
int tl_cli_usage_error(const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reports what getopt_long (with a leading ':' in its option string and
 * opterr = 0) returned as ':' (missing value) or '?' (unknown option), in
 * the same one-line form; returns 2. */
int tl_cli_option_error(const char *prefix, int opt, char **argv);

/* For an input file: when path names a directory, reports
 * "PREFIX: PATH: is a directory" on stderr and returns 1, the exit status
 * for it; else 0 (a path that cannot be read is the reader's to report). */
int tl_cli_reject_directory(const char *prefix, const char *path);

#endif /* TIMELINE_TOOLS_CLI_H */
