/* Helpers shared by the `timeline` subcommands. */
#ifndef TIMELINE_TOOLS_CLI_H
#define TIMELINE_TOOLS_CLI_H

#include <stdbool.h>

#include "recorder/export/symbolize.h"
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

/*
 * `--symbols on|off` and `--debug-dir DIR`, shared by the commands that read
 * binary snapshots (convert, slices, stats, merge): which files may name
 * their instrumented functions (recorder/export/symbolize.h). on, the
 * default: the files the trace names, and their debug files; off: no file
 * is opened, every function is named module+0xoffset (a trace from
 * elsewhere names paths of its writer's choosing). --debug-dir, given up
 * to TL_SYMBOL_DEBUG_DIRS_MAX times, is where debug files are looked for
 * by build-id, in that order, instead of /usr/lib/debug. Put
 * TL_CLI_SYMBOL_LONG_OPTIONS in a getopt_long table and TL_CLI_SYMBOL_USAGE
 * in the help.
 */
enum {
	TL_CLI_OPT_SYMBOLS = 0x3100, /* clear of --mode, the filters and the commands' own */
	TL_CLI_OPT_DEBUG_DIR,
};
/* clang-format off */
#define TL_CLI_SYMBOL_LONG_OPTIONS                                       \
	{"symbols", required_argument, NULL, TL_CLI_OPT_SYMBOLS},        \
	{"debug-dir", required_argument, NULL, TL_CLI_OPT_DEBUG_DIR}
/* clang-format on */
#define TL_CLI_SYMBOL_USAGE                                                                        \
	"function names (instrumented functions of a binary snapshot):\n"                          \
	"  --symbols on|off   on (default): read them from the files the trace names\n"            \
	"                     (mapped files, their debug files); off: open none, name\n"           \
	"                     each function module+0xoffset\n"                                     \
	"  --debug-dir DIR    look for debug files (.build-id/xx/rest.debug) in DIR,\n"            \
	"                     not in /usr/lib/debug; repeated: in that order\n"

/* Whether opt, a getopt_long return, is one of TL_CLI_SYMBOL_LONG_OPTIONS. */
static inline bool tl_cli_is_symbol_option(int opt)
{
	return opt == TL_CLI_OPT_SYMBOLS || opt == TL_CLI_OPT_DEBUG_DIR;
}

/*
 * Records one of them (opt and value: getopt_long's return and optarg,
 * which must outlive *symbols) in *symbols, which starts zeroed. Returns 0,
 * or reports a usage error as tl_cli_usage_error does and returns 2: an
 * unknown mode, a DIR that is not a directory, too many of them, or
 * --debug-dir with --symbols off, in either order.
 */
int tl_cli_symbol_option(const char *prefix, int opt, const char *value,
                         tl_symbol_options *symbols);

struct tl_import;

/* Reads a --assume-clock value: "boot" or "mono" into *clock and returns
 * 0; anything else is a usage error, reported as tl_cli_usage_error does
 * for OPTION, with its status (2). */
int tl_cli_parse_assume_clock(const char *prefix, const char *option, const char *value,
                              tl_trace_clock *clock);

/*
 * After reading path into imp: what of the input could not be read, on
 * stderr in one line naming the file: the text lines that are not events
 * or whose marker payload does not parse (how many, the first one's number
 * and text), a last line that no '\n' ends, and the events skipped for a
 * missing or invalid field or a limit (how many, per reason: the stat
 * names). When nothing could be read at all it is an error ("PREFIX: PATH:
 * nothing could be read: ...") and the return is 1, the exit status for
 * it; when the rest was read, a warning ("PREFIX: warning: PATH: ...; read
 * the rest") and 0. Nothing printed, 0, when everything was read: an input
 * that holds no events (a JSON "traceEvents": [], a kernel trace's header)
 * is not an error.
 */
int tl_cli_report_unread(const char *prefix, const char *path, const struct tl_import *imp);

/*
 * Reports on stderr, in one line, why reading path failed with rc (a
 * -errno of tl_import_read_file and the like, err what it said):
 * "PREFIX: PATH:LINE:COLUMN: reason" for malformed text, "PREFIX: PATH:
 * reason" otherwise. Returns 1, the exit status for it.
 */
int tl_cli_read_error(const char *prefix, const char *path, int rc, const tl_read_error *err);

/*
 * Reads the trace at path, whatever its format, into *imp
 * (tl_import_read_file), a snapshot's functions named from the files
 * symbols allows (NULL: the defaults), and reports on stderr, in one line,
 * what went wrong: "PREFIX: PATH:LINE:COLUMN: reason" for malformed text,
 * "PREFIX: PATH: reason" otherwise; then, as warnings, what a snapshot
 * read in part lost and what could not be read, as tl_cli_report_unread
 * says it (nothing read at all: the error). Returns 0, or 1 (the exit
 * status) with nothing to free.
 */
int tl_cli_read_import(const char *prefix, const char *path, const tl_symbol_options *symbols,
                       struct tl_import *imp);

/*
 * tl_cli_read_import handing the items to sink (tl_import_read_file_to).
 * data: NULL, or the bytes already read from path (a pipe's: malloc'd, a
 * NUL after them), which the call frees (tl_import_read_bytes_to).
 */
struct tl_import_sink;
int tl_cli_read_import_to(const char *prefix, const char *path, char *data, size_t len,
                          const struct tl_import_sink *sink, const tl_symbol_options *symbols,
                          struct tl_import *imp);

#endif /* TIMELINE_TOOLS_CLI_H */
