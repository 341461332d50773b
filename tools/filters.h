/*
 * The filters shared by `timeline convert`, `slices` and `stats`: a time
 * window, name and category globs, threads and processes. They act on an
 * import (tools/readers/trace_import.h), the trace as `timeline slices`
 * reads it, so every command keeps the same items for the same options.
 *
 * What passes (docs/reading.md, "Filters", is the user's version):
 *
 *  - The window is [from, to): a slice passes when it overlaps it -- it
 *    begins before `to` and is still running after `from` (a slice that
 *    never ended runs to the end of the trace); a zero-duration one (an
 *    instant) and a counter sample pass when from <= ts < to. A slice cut
 *    by an edge is kept whole, with its real start and duration.
 *  - --name and --cat are fnmatch(3) globs on the slice's name and category
 *    (no category matches as ""); a counter's name is its track's name and
 *    it has no category.
 *  - --tid keeps what is on that thread's tracks (slices and instants);
 *    --pid what belongs to that process (its threads' items, its async
 *    slices, instants and counters).
 *  - A repeated option passes when any of its values does; different
 *    options must all pass. Flows pass when both their slices do, args with
 *    their slice; thread and process records when --tid and --pid let them.
 *
 * Not thread-safe; the strings given to tl_filter_option (argv) must live
 * as long as the filter.
 */
#ifndef TIMELINE_TOOLS_FILTERS_H
#define TIMELINE_TOOLS_FILTERS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder/export/trace_model.h"

struct tl_import;

/* How many values one filter option takes at most. */
#define TL_FILTER_MAX_VALUES 32

/* getopt_long values of the filter options: outside the range of chars. */
enum {
	TL_FILTER_OPT_FROM = 0x1000,
	TL_FILTER_OPT_TO,
	TL_FILTER_OPT_NAME,
	TL_FILTER_OPT_CAT,
	TL_FILTER_OPT_TID,
	TL_FILTER_OPT_PID,
};

/* The filter options, for a command's struct option table. */
/* clang-format off */
#define TL_FILTER_LONG_OPTIONS                                   \
	{"from", required_argument, NULL, TL_FILTER_OPT_FROM},   \
	{"to", required_argument, NULL, TL_FILTER_OPT_TO},       \
	{"name", required_argument, NULL, TL_FILTER_OPT_NAME},   \
	{"cat", required_argument, NULL, TL_FILTER_OPT_CAT},     \
	{"tid", required_argument, NULL, TL_FILTER_OPT_TID},     \
	{"pid", required_argument, NULL, TL_FILTER_OPT_PID}
/* clang-format on */

/* Their lines for a command's --help text. */
#define TL_FILTER_USAGE                                                                            \
	"filters (a repeated option keeps what any of its values keeps; different\n"               \
	"options must all keep an item):\n"                                                        \
	"  --from TIME        keep what runs at or after TIME; slices cut by the window\n"         \
	"                     are kept whole\n"                                                    \
	"  --to TIME          keep what begins before TIME\n"                                      \
	"                     TIME: a number and a unit - s, ms, us or ns (1.5s, 200ms,\n"         \
	"                     350us, 10ns) - after the trace's first event, or with a\n"           \
	"                     leading @ a timestamp of the trace's clock (@9445.708925s)\n"        \
	"  --name GLOB        keep slices and counters whose name matches (fnmatch)\n"             \
	"  --cat GLOB         keep slices whose category matches\n"                                \
	"  --tid TID          keep what is on that thread\n"                                       \
	"  --pid PID          keep what belongs to that process\n"

/* One end of the window, as given. */
typedef struct tl_filter_time {
	bool set;
	bool absolute; /* '@': a timestamp; else after the trace's first event */
	int64_t ns;
	const char *text; /* the value as given, for messages */
} tl_filter_time;

typedef struct tl_filter {
	tl_filter_time from, to;
	const char *names[TL_FILTER_MAX_VALUES];
	size_t nnames;
	const char *cats[TL_FILTER_MAX_VALUES];
	size_t ncats;
	uint32_t tids[TL_FILTER_MAX_VALUES];
	size_t ntids;
	uint32_t pids[TL_FILTER_MAX_VALUES];
	size_t npids;
	/* The window in trace time, set by tl_filter_resolve: [from_ns, to_ns). */
	int64_t from_ns, to_ns;
	bool resolved;
} tl_filter;

/* Whether opt, a getopt_long return, is one of TL_FILTER_LONG_OPTIONS. */
static inline bool tl_filter_is_option(int opt)
{
	return opt >= TL_FILTER_OPT_FROM && opt <= TL_FILTER_OPT_PID;
}

/*
 * Records one filter option (opt from getopt_long, value its optarg) in f,
 * which starts zeroed. Returns 0, or 2 after reporting a bad value as a
 * usage error of prefix ("PREFIX: --from: ... (see 'PREFIX --help')").
 */
int tl_filter_option(tl_filter *f, const char *prefix, int opt, const char *value);

/* Whether any filter option was given. */
bool tl_filter_active(const tl_filter *f);

/*
 * Sets the window in trace time: relative times count from the first
 * timestamp of imp (slices, instants, counters). Returns 0, or 2 after
 * reporting as a usage error of prefix that --to is not after --from.
 */
int tl_filter_resolve(tl_filter *f, const char *prefix, const struct tl_import *imp);

/* tl_filter_resolve with the trace's first timestamp given (INT64_MAX:
 * the trace holds nothing). */
int tl_filter_resolve_from(tl_filter *f, const char *prefix, int64_t first_ts);

/* Whether slice i (counter i) of imp passes. f must be resolved. */
bool tl_filter_slice_passes(const tl_filter *f, const struct tl_import *imp, size_t i);
bool tl_filter_counter_passes(const tl_filter *f, const struct tl_import *imp, size_t i);

/* The same for a slice on track t and a counter sample handed on by the
 * import as it reads (tl_import_read_file_to): imp's threads at the end
 * give their tid and pid. */
struct tl_import_slice;
struct tl_import_track;
struct tl_import_counter;
struct tl_import_thread;
bool tl_filter_slice_on_passes(const tl_filter *f, const struct tl_import *imp,
                               const struct tl_import_slice *s, const struct tl_import_track *t);
bool tl_filter_sample_passes(const tl_filter *f, const struct tl_import *imp,
                             const struct tl_import_counter *c);

/* Whether a thread record passes; a process record, when its pid passes
 * and (with --tid) a thread of it that passes is in imp. */
bool tl_filter_thread_passes(const tl_filter *f, const struct tl_import_thread *t);
bool tl_filter_process_passes(const tl_filter *f, const struct tl_import *imp, uint32_t pid);

/*
 * Resolves f against imp and removes from imp, in place, everything that
 * does not pass (slices, counters, flows, args, threads, processes).
 * Slices keep their depth. Returns 0, 2 (the usage error of
 * tl_filter_resolve, reported) or 1 after reporting "PREFIX: out of
 * memory". When f is not active, imp is left as it is.
 */
int tl_filter_import(tl_filter *f, const char *prefix, struct tl_import *imp);

/*
 * For `convert`: replaces *model by what passes f, going through the
 * import as `slices` would read the model (tl_import_model, then
 * tl_import_to_model). Same returns as tl_filter_import; on failure *model
 * is left as it was.
 */
int tl_filter_model(tl_filter *f, const char *prefix, tl_model *model);

#endif /* TIMELINE_TOOLS_FILTERS_H */
