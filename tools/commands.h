/*
 * The `timeline` CLI's subcommands. Each one is called by tools/timeline.c
 * with argv[0] set to "timeline <name>" and the command's own arguments
 * after it (getopt may be used from optind = 1). Each returns the process
 * exit status: 0 on success, 1 for an I/O or data error, 2 for a usage
 * error. A subcommand prints its usage on --help and exits 0.
 */
#ifndef TIMELINE_TOOLS_COMMANDS_H
#define TIMELINE_TOOLS_COMMANDS_H

/* `timeline demo`: runs a synthetic instrumented engine and writes its trace. */
int tl_cmd_demo(int argc, char **argv);

/* `timeline convert IN -o OUT [--format json|ftrace]`: binary snapshot to
 * Chrome JSON or ftrace text. */
int tl_cmd_convert(int argc, char **argv);

/* `timeline record [-o FILE] [--format ftrace|json] [-e EVENT]... [-- COMMAND]`:
 * records trace_marker writes and sched events from a private tracefs
 * instance. Built only with libtracefs (TL_HAVE_TRACEFS). */
int tl_cmd_record(int argc, char **argv);

/* `timeline fps FILE... [--json] [--plot OUT.svg]`: frame rate, jank and
 * frame times from dumpsys SurfaceFlinger --latency output or from the frame
 * slices of a trace. */
int tl_cmd_fps(int argc, char **argv);

/* `timeline slices IN [--kind KINDS] [--stats]`: what a trace contains, read the
 * way Perfetto reads it, one item per line; `--markers FILE` parses payloads. */
int tl_cmd_slices(int argc, char **argv);

/* `timeline stats IN [--by name|thread|cat] [--json|--csv] [--worst N]
 * [filters]`: per slice name, count, total and self time, min, p50, p90,
 * p99, max and the longest instances; per counter track min, mean, max. */
int tl_cmd_stats(int argc, char **argv);
/* `timeline merge IN IN... -o OUT [--format json|ftrace]`: several traces on
 * one timeline, aligned through their clocks. */
int tl_cmd_merge(int argc, char **argv);

#endif /* TIMELINE_TOOLS_COMMANDS_H */
