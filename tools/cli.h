/* Helpers shared by the `timeline` subcommands. */
#ifndef TIMELINE_TOOLS_CLI_H
#define TIMELINE_TOOLS_CLI_H

#include "tools/readers/ftrace_text.h"

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

/*
 * `--mode MODE`, shared by the commands that write files (convert, merge,
 * record, fps --plot, demo): the permission bits of what they write, octal,
 * 0 to 0777; without it 0600, private (recorder/atomic_file.h). Put
 * TL_CLI_MODE_LONG_OPTION in a getopt_long table; tl_cli_parse_mode sets
 * the mode for every file the process writes afterwards and returns 0, or
 * reports a usage error for the value as tl_cli_usage_error does and
 * returns its status (2).
 */
#define TL_CLI_OPT_MODE 0x3000 /* clear of every command's own and the filters' */
/* clang-format off */
#define TL_CLI_MODE_LONG_OPTION {"mode", required_argument, NULL, TL_CLI_OPT_MODE}
/* clang-format on */
int tl_cli_parse_mode(const char *prefix, const char *value);

/* For an output that cannot be written: "PREFIX: PATH: cannot open for
 * writing: why" on stderr (a planted link or FIFO said in words); 1. */
int tl_cli_output_error(const char *prefix, const char *path, int rc);

struct tl_import;

/* Reads a --assume-clock value: "boot" or "mono" into *clock and returns
 * 0; anything else is a usage error, reported as tl_cli_usage_error does
 * for OPTION, with its status (2). */
int tl_cli_parse_assume_clock(const char *prefix, const char *option, const char *value,
                              tl_trace_clock *clock);

/*
 * After reading path into imp: when lines could not be read (a text line
 * that is not an event, a marker whose payload does not parse), says so on
 * stderr in one line naming the file, how many there were, and the first
 * one's number and text. When nothing could be read at all it is an error
 * ("PREFIX: PATH: nothing could be read: ...") and the return is 1, the
 * exit status for it; when the rest was read, a warning ("PREFIX: warning:
 * PATH: ...") and 0. Nothing printed, 0, when every line was read.
 */
int tl_cli_report_unread_lines(const char *prefix, const char *path, const struct tl_import *imp);

/*
 * Reads the trace at path, whatever its format, into *imp
 * (tl_import_read_file) and reports on stderr, in one line, what went
 * wrong: "PREFIX: PATH:LINE:COLUMN: reason" for malformed text, "PREFIX:
 * PATH: reason" otherwise; then the lines that could not be read, as
 * tl_cli_report_unread_lines does. Returns 0, or 1 (the exit status) with
 * nothing to free.
 */
int tl_cli_read_import(const char *prefix, const char *path, struct tl_import *imp);

/*
 * tl_cli_read_import handing the items to sink (tl_import_read_file_to).
 * data: NULL, or the bytes already read from path (a pipe's: malloc'd, a
 * NUL after them), which the call frees (tl_import_read_bytes_to).
 */
struct tl_import_sink;
int tl_cli_read_import_to(const char *prefix, const char *path, char *data, size_t len,
                          const struct tl_import_sink *sink, struct tl_import *imp);

#endif /* TIMELINE_TOOLS_CLI_H */
