/*
 * `timeline stats IN`: per slice name (or name and thread, or name and
 * category) the count, total and self time, min, p50, p90, p99 and max;
 * per counter track min, mean and max; the longest instances of each
 * name. The slices are the import's (tools/readers/trace_import.h), the
 * ones `timeline slices` prints, so every duration is the one Perfetto's
 * slice table holds for the same trace. docs/reading.md, "Statistics",
 * says what each figure is.
 */
#include "tools/cli.h"
#include "tools/commands.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/slice_match.h"
#include "recorder/utf8.h"
#include "tools/filters.h"
#include "tools/readers/trace_import.h"

#define STATS_PREFIX "timeline stats"
#define STATS_DEFAULT_WORST 3

static const char stats_usage[] =
    "usage: timeline stats IN [--by name|thread|cat] [--json | --csv] [--worst N]\n"
    "                         [filters]\n"
    "\n"
    "Reads IN (ftrace/systrace text, trace-cmd report, Chrome JSON or a timeline\n"
    "binary snapshot, as 'timeline slices' does) and prints, per slice name:\n"
    "count, total time, self time (the slice's duration minus its direct\n"
    "children's), min, p50, p90, p99 and max; per counter track: the number of\n"
    "samples, min, mean and max; and the longest instances of each name with\n"
    "their start and thread. Durations are those of Perfetto's slice table;\n"
    "percentiles are nearest-rank (the smallest duration that at least P% of\n"
    "the instances do not exceed). Slices that never ended are counted apart\n"
    "and left out of the figures.\n"
    "\n"
    "The table gives durations in ns, us, ms or s, cut to three decimals, and\n"
    "starts in seconds after the trace's first event; --json and --csv give\n"
    "nanoseconds and timestamps of the trace's clock.\n"
    "\n"
    "options:\n"
    "  -b, --by KEY       group by name (default), by thread and name, or by\n"
    "                     category and name\n"
    "  -w, --worst N      the N longest instances of each group (default 3; 0: none)\n"
    "  -j, --json         one JSON object instead of the table\n"
    "  -c, --csv          CSV instead of the table: one row per group, per longest\n"
    "                     instance and per counter track, told apart by the first\n"
    "                     column\n"
    "  -h, --help         print this help\n"
    "\n" TL_FILTER_USAGE "\n" TL_CLI_SYMBOL_USAGE;

#define usage_error(...) tl_cli_usage_error(STATS_PREFIX, __VA_ARGS__)

typedef enum stats_by { BY_NAME, BY_THREAD, BY_CAT } stats_by;
typedef enum stats_format { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV } stats_format;

typedef struct stats_args {
	const char *input;
	stats_by by;
	stats_format format;
	size_t worst;
	tl_filter filter;
	tl_symbol_options symbols; /* which files name a snapshot's functions */
} stats_args;

/* One slice that passed the filters. */
typedef struct stat_item {
	const char *name;
	const char *cat;
	size_t thread; /* imp->threads index, TL_IMPORT_NONE off a thread's track */
	int64_t ts;
	int64_t dur; /* -1: never ended */
	int64_t self;
} stat_item;

/* The items of one group: items[first..first + count + unfinished), the
 * ended ones first, longest first. */
typedef struct stat_group {
	size_t first;
	size_t count; /* ended */
	size_t unfinished;
	int64_t total, self;
	int64_t min, p50, p90, p99, max;
} stat_group;

typedef struct counter_stat {
	size_t track;
	size_t count;
	double min, max, sum;
} counter_stat;

typedef struct stats {
	const tl_import *imp;
	const stats_args *args;
	stat_item *items;
	size_t nitems;
	stat_group *groups;
	size_t ngroups;
	counter_stat *counters;
	size_t ncounters;
	int64_t first_ts; /* of the whole trace; INT64_MAX when it is empty */
} stats;

/* ---- self time ------------------------------------------------------------ */

/*
 * self[i] = dur of slice i minus the time its direct children spend inside
 * it. A slice's parent is the slice open at its depth - 1 on its track when
 * it began: the importer appends slices in the order it begins them, so
 * that is the last slice seen at depth - 1 on the track. A child that runs
 * past its parent's end (a JSON E that closed the parent by name) counts
 * up to that end. Computed over the whole trace, before filtering: a
 * slice's self time does not depend on which of its children pass.
 */
static int compute_self(const tl_import *imp, int64_t *self)
{
	size_t n = imp->nslices;
	size_t *start = calloc(imp->ntracks + 1, sizeof *start);
	size_t *order = malloc((n + 1) * sizeof *order);
	size_t *open = malloc((TL_IMPORT_MAX_DEPTH + 1) * sizeof *open);
	for (size_t d = 0; open && d <= TL_IMPORT_MAX_DEPTH; d++)
		open[d] = TL_IMPORT_NONE;
	if (!start || !order || !open) {
		free(start);
		free(order);
		free(open);
		return -ENOMEM;
	}
	/* the slices of each track, in import order (a counting sort) */
	for (size_t i = 0; i < n; i++)
		start[imp->slices[i].track + 1]++;
	for (size_t t = 0; t < imp->ntracks; t++)
		start[t + 1] += start[t];
	for (size_t i = 0; i < n; i++)
		order[start[imp->slices[i].track]++] = i;
	/* start[t] is now the end of track t's run */

	size_t run = 0;
	for (size_t t = 0; t < imp->ntracks; t++) {
		/* only the depths the last track used need clearing */
		size_t used = 0;
		for (; run < start[t]; run++) {
			size_t i = order[run];
			const tl_import_slice *s = &imp->slices[i];
			self[i] = s->dur;
			if (s->depth > TL_IMPORT_MAX_DEPTH)
				continue;
			open[s->depth] = i;
			if (s->depth >= used)
				used = s->depth + 1;
			size_t p = s->depth ? open[s->depth - 1] : TL_IMPORT_NONE;
			if (p == TL_IMPORT_NONE || imp->slices[p].dur < 0)
				continue;
			const tl_import_slice *parent = &imp->slices[p];
			int64_t parent_end = tl_add_ns(parent->ts, parent->dur);
			int64_t end = s->dur < 0 ? parent_end : tl_add_ns(s->ts, s->dur);
			if (end > parent_end)
				end = parent_end;
			if (end > s->ts && s->ts >= parent->ts)
				self[p] -= end - s->ts;
		}
		for (size_t d = 0; d < used; d++)
			open[d] = TL_IMPORT_NONE;
	}
	free(start);
	free(order);
	free(open);
	return 0;
}

/* ---- grouping ------------------------------------------------------------- */

static const stats_args *sort_args; /* for the qsort comparators */
static const tl_import *sort_imp;

static int compare_str(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a || !b)
		return a ? 1 : -1; /* none first */
	return strcmp(a, b);
}

static int compare_thread(size_t a, size_t b)
{
	if (a == b)
		return 0;
	if (a == TL_IMPORT_NONE || b == TL_IMPORT_NONE)
		return a == TL_IMPORT_NONE ? 1 : -1; /* no thread: last */
	const tl_import_thread *ta = &sort_imp->threads[a], *tb = &sort_imp->threads[b];
	if (ta->pid != tb->pid)
		return ta->pid < tb->pid ? -1 : 1;
	if (ta->tid != tb->tid)
		return ta->tid < tb->tid ? -1 : 1;
	return a < b ? -1 : 1;
}

/* The group key beside the name: thread or category. */
static int compare_key(const stat_item *a, const stat_item *b)
{
	if (sort_args->by == BY_THREAD)
		return compare_thread(a->thread, b->thread);
	if (sort_args->by == BY_CAT)
		return compare_str(a->cat, b->cat);
	return 0;
}

/* By key and name, then longest first (never ended last), then earliest. */
static int compare_item(const void *pa, const void *pb)
{
	const stat_item *a = pa, *b = pb;
	int c = compare_key(a, b);
	if (!c)
		c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return (a->ts > b->ts) - (a->ts < b->ts);
}

static const stat_item *sort_items;

/* Groups by key (thread or category), then the largest total first. */
static int compare_group(const void *pa, const void *pb)
{
	const stat_group *a = pa, *b = pb;
	const stat_item *ia = &sort_items[a->first], *ib = &sort_items[b->first];
	int c = compare_key(ia, ib);
	if (c)
		return c;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return strcmp(ia->name, ib->name);
}

/* Nearest rank: the value at rank ceil(p * n / 100), 1-based, ascending. */
static int64_t percentile(const stat_item *longest_first, size_t n, unsigned p)
{
	size_t rank = (p * n + 99) / 100;
	if (rank == 0)
		rank = 1;
	return longest_first[n - rank].dur;
}

static void summarize(stat_group *g, const stat_item *items)
{
	const stat_item *it = &items[g->first];
	size_t n = g->count;
	g->total = g->self = 0;
	for (size_t i = 0; i < n; i++) {
		g->total = tl_add_ns(g->total, it[i].dur);
		g->self = tl_add_ns(g->self, it[i].self);
	}
	if (!n)
		return;
	g->max = it[0].dur;
	g->min = it[n - 1].dur;
	g->p50 = percentile(it, n, 50);
	g->p90 = percentile(it, n, 90);
	g->p99 = percentile(it, n, 99);
}

static int build_groups(stats *st)
{
	stat_item *items = st->items;
	size_t cap = 16;
	st->groups = malloc(cap * sizeof *st->groups);
	if (!st->groups)
		return -ENOMEM;
	for (size_t i = 0; i < st->nitems;) {
		size_t j = i;
		stat_group g = {.first = i};
		while (j < st->nitems && compare_key(&items[i], &items[j]) == 0 &&
		       strcmp(items[i].name, items[j].name) == 0) {
			if (items[j].dur < 0)
				g.unfinished++;
			else
				g.count++;
			j++;
		}
		summarize(&g, items);
		if (st->ngroups == cap) {
			stat_group *grown = realloc(st->groups, 2 * cap * sizeof *grown);
			if (!grown)
				return -ENOMEM;
			st->groups = grown;
			cap *= 2;
		}
		st->groups[st->ngroups++] = g;
		i = j;
	}
	sort_items = items;
	if (st->ngroups)
		qsort(st->groups, st->ngroups, sizeof *st->groups, compare_group);
	return 0;
}

static int compare_counter(const void *pa, const void *pb)
{
	const counter_stat *a = pa, *b = pb;
	const tl_import_track *ta = &sort_imp->tracks[a->track], *tb = &sort_imp->tracks[b->track];
	int c = strcmp(ta->name, tb->name);
	if (c)
		return c;
	if (ta->pid != tb->pid)
		return ta->pid < tb->pid ? -1 : 1;
	return (a->track > b->track) - (a->track < b->track);
}

static int build_counters(stats *st, const tl_filter *filter)
{
	const tl_import *imp = st->imp;
	size_t *slot = malloc((imp->ntracks + 1) * sizeof *slot);
	st->counters = malloc((imp->ntracks + 1) * sizeof *st->counters);
	if (!slot || !st->counters) {
		free(slot);
		return -ENOMEM;
	}
	for (size_t t = 0; t < imp->ntracks; t++)
		slot[t] = TL_IMPORT_NONE;
	for (size_t i = 0; i < imp->ncounters; i++) {
		if (!tl_filter_counter_passes(filter, imp, i))
			continue;
		const tl_import_counter *c = &imp->counters[i];
		if (slot[c->track] == TL_IMPORT_NONE) {
			slot[c->track] = st->ncounters;
			st->counters[st->ncounters++] =
			    (counter_stat){.track = c->track, .min = c->value, .max = c->value};
		}
		counter_stat *cs = &st->counters[slot[c->track]];
		cs->count++;
		cs->sum += c->value;
		if (c->value < cs->min)
			cs->min = c->value;
		if (c->value > cs->max)
			cs->max = c->value;
	}
	free(slot);
	if (st->ncounters)
		qsort(st->counters, st->ncounters, sizeof *st->counters, compare_counter);
	return 0;
}

static int build_stats(stats *st, tl_filter *filter)
{
	const tl_import *imp = st->imp;
	int64_t *self = malloc((imp->nslices + 1) * sizeof *self);
	st->items = malloc((imp->nslices + 1) * sizeof *st->items);
	if (!self || !st->items || compute_self(imp, self)) {
		free(self);
		return -ENOMEM;
	}
	st->first_ts = INT64_MAX;
	for (size_t i = 0; i < imp->nslices; i++)
		if (imp->slices[i].ts < st->first_ts)
			st->first_ts = imp->slices[i].ts;
	for (size_t i = 0; i < imp->ncounters; i++)
		if (imp->counters[i].ts < st->first_ts)
			st->first_ts = imp->counters[i].ts;

	for (size_t i = 0; i < imp->nslices; i++) {
		if (!tl_filter_slice_passes(filter, imp, i))
			continue;
		const tl_import_slice *s = &imp->slices[i];
		st->items[st->nitems++] = (stat_item){
		    .name = s->name,
		    .cat = s->cat,
		    .thread = imp->tracks[s->track].thread,
		    .ts = s->ts,
		    .dur = s->kind == TL_IMPORT_INSTANT ? 0 : s->dur,
		    .self = s->kind == TL_IMPORT_INSTANT ? 0 : self[i],
		};
	}
	free(self);
	sort_args = st->args;
	sort_imp = imp;
	if (st->nitems)
		qsort(st->items, st->nitems, sizeof *st->items, compare_item);
	if (build_groups(st) || build_counters(st, filter))
		return -ENOMEM;
	return 0;
}

static void stats_free(stats *st)
{
	free(st->items);
	free(st->groups);
	free(st->counters);
}

/* ---- writing: shared ------------------------------------------------------ */

static const tl_import_thread *item_thread(const stats *st, const stat_item *it)
{
	return it->thread == TL_IMPORT_NONE ? NULL : &st->imp->threads[it->thread];
}

/* How many of the group's longest to list: at most --worst, and none of no
 * duration (an instant has no "longest"). */
static size_t shown_worst(const stats *st, const stat_group *g)
{
	size_t n = 0;
	while (n < g->count && n < st->args->worst && st->items[g->first + n].dur > 0)
		n++;
	return n;
}

/* ---- writing: JSON -------------------------------------------------------- */

/* A JSON string: escaped, invalid UTF-8 bytes as U+FFFD; null for NULL. */
static void json_string(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t avail = strlen(s);
	fputc('"', out);
	while (avail) {
		unsigned char c = *p;
		size_t len = 1;
		if (c >= 0x80) {
			len = tl_utf8_char_len(p, avail);
			if (len)
				fwrite(p, 1, len, out);
			else
				fputs("\xef\xbf\xbd", out);
			len = len ? len : 1;
		} else if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
		} else if (c == '\n') {
			fputs("\\n", out);
		} else if (c == '\t') {
			fputs("\\t", out);
		} else if (c == '\r') {
			fputs("\\r", out);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
		} else {
			fputc(c, out);
		}
		p += len;
		avail -= len;
	}
	fputc('"', out);
}

/* The shortest text that reads back as d; null when JSON cannot say it. */
static void json_double(FILE *out, double d)
{
	if (isfinite(d))
		tl_import_print_double(out, d);
	else
		fputs("null", out);
}

static void json_thread(FILE *out, const tl_import_thread *t)
{
	if (t) {
		fprintf(out, "\"tid\": %u, \"pid\": %u, \"thread\": ", (unsigned)t->tid,
		        (unsigned)t->pid);
		json_string(out, t->name);
	} else {
		fputs("\"tid\": null, \"pid\": null, \"thread\": null", out);
	}
}

static void json_ns(FILE *out, const char *key, const stat_group *g, int64_t v)
{
	if (g->count)
		fprintf(out, ", \"%s\": %lld", key, (long long)v);
	else
		fprintf(out, ", \"%s\": null", key);
}

static void write_json(const stats *st, FILE *out)
{
	static const char *const by_names[] = {"name", "thread", "cat"};
	fputs("{\n  \"trace\": ", out);
	json_string(out, st->args->input);
	if (st->first_ts == INT64_MAX)
		fputs(",\n  \"first_ts\": null", out);
	else
		fprintf(out, ",\n  \"first_ts\": %lld", (long long)st->first_ts);
	fprintf(out, ",\n  \"by\": \"%s\",\n  \"slices\": [", by_names[st->args->by]);
	for (size_t i = 0; i < st->ngroups; i++) {
		const stat_group *g = &st->groups[i];
		const stat_item *head = &st->items[g->first];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		json_string(out, head->name);
		if (st->args->by == BY_THREAD) {
			fputs(", ", out);
			json_thread(out, item_thread(st, head));
		} else if (st->args->by == BY_CAT) {
			fputs(", \"cat\": ", out);
			json_string(out, head->cat);
		}
		fprintf(out, ", \"count\": %zu, \"unfinished\": %zu", g->count, g->unfinished);
		fprintf(out, ", \"total_ns\": %lld, \"self_ns\": %lld", (long long)g->total,
		        (long long)g->self);
		json_ns(out, "min_ns", g, g->min);
		json_ns(out, "p50_ns", g, g->p50);
		json_ns(out, "p90_ns", g, g->p90);
		json_ns(out, "p99_ns", g, g->p99);
		json_ns(out, "max_ns", g, g->max);
		fputs(", \"worst\": [", out);
		for (size_t k = 0; k < shown_worst(st, g); k++) {
			const stat_item *it = &st->items[g->first + k];
			fprintf(out, "%s{\"ts\": %lld, \"dur_ns\": %lld, ", k ? ", " : "",
			        (long long)it->ts, (long long)it->dur);
			json_thread(out, item_thread(st, it));
			fputs(", \"cat\": ", out);
			json_string(out, it->cat);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputs(st->ngroups ? "\n  ],\n  \"counters\": [" : "],\n  \"counters\": [", out);
	for (size_t i = 0; i < st->ncounters; i++) {
		const counter_stat *c = &st->counters[i];
		const tl_import_track *t = &st->imp->tracks[c->track];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		json_string(out, t->name);
		fprintf(out, ", \"pid\": %u, \"count\": %zu, \"min\": ", (unsigned)t->pid,
		        c->count);
		json_double(out, c->min);
		fputs(", \"mean\": ", out);
		json_double(out, c->sum / (double)c->count);
		fputs(", \"max\": ", out);
		json_double(out, c->max);
		fputc('}', out);
	}
	fputs(st->ncounters ? "\n  ]\n}\n" : "]\n}\n", out);
}

/* ---- writing: CSV --------------------------------------------------------- */

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or newline. */
static void csv_string(FILE *out, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void csv_thread(FILE *out, const tl_import_thread *t)
{
	if (!t) {
		fputs(",,", out);
		return;
	}
	fprintf(out, "%u,%u,", (unsigned)t->tid, (unsigned)t->pid);
	csv_string(out, t->name);
}

static void csv_double(FILE *out, double d)
{
	if (isfinite(d))
		json_double(out, d);
	else
		fputs(isnan(d) ? "nan" : d > 0 ? "inf" : "-inf", out);
}

#define CSV_HEADER                                                                                 \
	"table,name,cat,tid,pid,thread,count,unfinished,total_ns,self_ns,min_ns,p50_ns,p90_ns,"    \
	"p99_ns,max_ns,rank,ts,dur_ns,min,mean,max\n"

static void write_csv(const stats *st, FILE *out)
{
	fputs(CSV_HEADER, out);
	for (size_t i = 0; i < st->ngroups; i++) {
		const stat_group *g = &st->groups[i];
		const stat_item *head = &st->items[g->first];
		fputs("slice,", out);
		csv_string(out, head->name);
		fputc(',', out);
		if (st->args->by == BY_CAT)
			csv_string(out, head->cat);
		fputc(',', out);
		if (st->args->by == BY_THREAD)
			csv_thread(out, item_thread(st, head));
		else
			fputs(",,", out);
		fprintf(out, ",%zu,%zu,%lld,%lld,", g->count, g->unfinished, (long long)g->total,
		        (long long)g->self);
		if (g->count)
			fprintf(out, "%lld,%lld,%lld,%lld,%lld", (long long)g->min,
			        (long long)g->p50, (long long)g->p90, (long long)g->p99,
			        (long long)g->max);
		else
			fputs(",,,,", out);
		fputs(",,,,,,\n", out);
	}
	for (size_t i = 0; i < st->ngroups; i++) {
		const stat_group *g = &st->groups[i];
		for (size_t k = 0; k < shown_worst(st, g); k++) {
			const stat_item *it = &st->items[g->first + k];
			fputs("worst,", out);
			csv_string(out, it->name);
			fputc(',', out);
			csv_string(out, it->cat);
			fputc(',', out);
			csv_thread(out, item_thread(st, it));
			fprintf(out, ",,,,,,,,,,%zu,%lld,%lld,,,\n", k + 1, (long long)it->ts,
			        (long long)it->dur);
		}
	}
	for (size_t i = 0; i < st->ncounters; i++) {
		const counter_stat *c = &st->counters[i];
		const tl_import_track *t = &st->imp->tracks[c->track];
		fputs("counter,", out);
		csv_string(out, t->name);
		fprintf(out, ",,,%u,,%zu,,,,,,,,,,,,", (unsigned)t->pid, c->count);
		csv_double(out, c->min);
		fputc(',', out);
		csv_double(out, c->sum / (double)c->count);
		fputc(',', out);
		csv_double(out, c->max);
		fputc('\n', out);
	}
}

/* ---- writing: the table --------------------------------------------------- */

#define CELL 64

/* A duration in the largest unit it reaches, cut to three decimals. */
static void format_duration(char *buf, int64_t ns)
{
	static const struct {
		int64_t scale;
		const char *unit;
	} units[] = {{1000000000, "s"}, {1000000, "ms"}, {1000, "us"}};
	uint64_t v = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		uint64_t scale = (uint64_t)units[i].scale;
		if (v >= scale) {
			snprintf(buf, CELL, "%s%llu.%03llu %s", sign,
			         (unsigned long long)(v / scale),
			         (unsigned long long)(v % scale / (scale / 1000)), units[i].unit);
			return;
		}
	}
	snprintf(buf, CELL, "%s%llu ns", sign, (unsigned long long)v);
}

/* Text as a table shows it: control bytes and invalid UTF-8 as '?'. */
static char *display_text(const char *s)
{
	if (!s)
		s = "";
	size_t avail = strlen(s);
	char *out = malloc(avail + 1), *o = out;
	const unsigned char *p = (const unsigned char *)s;
	if (!out)
		return NULL;
	while (avail) {
		size_t len = *p >= 0x80 ? tl_utf8_char_len(p, avail) : 1;
		if (len == 0 || (*p < 0x80 && (*p < 0x20 || *p == 0x7f))) {
			*o++ = '?';
			len = 1;
		} else {
			memcpy(o, p, len);
			o += len;
		}
		p += len;
		avail -= len;
	}
	*o = '\0';
	return out;
}

/* Columns a display_text string takes: one per character. */
static size_t text_width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* s, left-aligned in width columns. */
static void put_left(FILE *out, const char *s, size_t width)
{
	fputs(s, out);
	for (size_t w = text_width(s); w < width; w++)
		fputc(' ', out);
}

/* Cells of one table: rows x columns of strings, written aligned; the
 * first `left` columns to the left, the others to the right. */
typedef struct table {
	size_t ncols, nrows, left;
	char **cells; /* (nrows + 1) * ncols, row 0 the header */
	size_t *width;
	int nomem;
} table;

static int table_init(table *t, size_t ncols, size_t nrows, size_t left)
{
	*t = (table){.ncols = ncols, .nrows = nrows, .left = left};
	t->cells = calloc((nrows + 1) * ncols, sizeof *t->cells);
	t->width = calloc(ncols, sizeof *t->width);
	return t->cells && t->width ? 0 : -ENOMEM;
}

/* Sets a cell to a copy of text (display_text); row 0 is the header. */
static void table_set(table *t, size_t row, size_t col, const char *text)
{
	char *copy = display_text(text);
	if (!copy) {
		t->nomem = 1;
		return;
	}
	t->cells[row * t->ncols + col] = copy;
	size_t w = text_width(copy);
	if (w > t->width[col])
		t->width[col] = w;
}

static void table_write(const table *t, FILE *out)
{
	for (size_t r = 0; r <= t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			s = s ? s : "";
			size_t pad = t->width[c] - text_width(s);
			if (c)
				fputs("  ", out);
			if (c < t->left) {
				/* the last column is not padded: no trailing blanks */
				if (c + 1 == t->ncols)
					fputs(s, out);
				else
					put_left(out, s, t->width[c]);
			} else {
				for (size_t k = 0; k < pad; k++)
					fputc(' ', out);
				fputs(s, out);
			}
		}
		fputc('\n', out);
	}
}

static void table_free(table *t)
{
	for (size_t i = 0; t->cells && i < (t->nrows + 1) * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->width);
}

/* "tid 42 main", "tid 42", or "no thread". */
static void thread_label(char *buf, size_t len, const tl_import_thread *t)
{
	if (!t)
		snprintf(buf, len, "no thread");
	else if (t->name)
		snprintf(buf, len, "tid %u %s", (unsigned)t->tid, t->name);
	else
		snprintf(buf, len, "tid %u", (unsigned)t->tid);
}

static int write_slice_table(const stats *st, FILE *out)
{
	static const char *const figures[] = {"count", "total", "self", "min",
	                                      "p50",   "p90",   "p99",  "max"};
	size_t keys = st->args->by == BY_NAME ? 1 : 2;
	table t;
	int rc = table_init(&t, keys + 8, st->ngroups, keys);
	if (rc)
		return rc;
	if (st->args->by == BY_THREAD)
		table_set(&t, 0, 0, "thread");
	if (st->args->by == BY_CAT)
		table_set(&t, 0, 0, "cat");
	table_set(&t, 0, keys - 1, "name");
	for (size_t c = 0; c < 8; c++)
		table_set(&t, 0, keys + c, figures[c]);
	size_t unfinished = 0;
	for (size_t i = 0; i < st->ngroups; i++) {
		const stat_group *g = &st->groups[i];
		const stat_item *head = &st->items[g->first];
		size_t row = i + 1;
		char cell[CELL + 256];
		unfinished += g->unfinished;
		if (st->args->by == BY_THREAD) {
			thread_label(cell, sizeof cell, item_thread(st, head));
			table_set(&t, row, 0, cell);
		} else if (st->args->by == BY_CAT) {
			table_set(&t, row, 0, head->cat ? head->cat : "-");
		}
		table_set(&t, row, keys - 1, head->name);
		snprintf(cell, sizeof cell, "%zu", g->count);
		table_set(&t, row, keys, cell);
		const int64_t values[] = {g->total, g->self, g->min, g->p50,
		                          g->p90,   g->p99,  g->max};
		for (size_t c = 0; c < 7; c++) {
			if (g->count)
				format_duration(cell, values[c]);
			else
				strcpy(cell, "-");
			table_set(&t, row, keys + 1 + c, cell);
		}
	}
	if (t.nomem) {
		table_free(&t);
		return -ENOMEM;
	}
	table_write(&t, out);
	table_free(&t);
	if (unfinished)
		fprintf(out,
		        "(%zu %s that never ended %s left out of the figures; --json and --csv "
		        "count them per group)\n",
		        unfinished, unfinished == 1 ? "slice" : "slices",
		        unfinished == 1 ? "is" : "are");
	return 0;
}

static int write_counter_table(const stats *st, FILE *out)
{
	static const char *const head[] = {"counter", "pid", "samples", "min", "mean", "max"};
	table t;
	int rc = table_init(&t, 6, st->ncounters, 1);
	if (rc)
		return rc;
	for (size_t c = 0; c < 6; c++)
		table_set(&t, 0, c, head[c]);
	for (size_t i = 0; i < st->ncounters; i++) {
		const counter_stat *cs = &st->counters[i];
		const tl_import_track *track = &st->imp->tracks[cs->track];
		char cell[64];
		const double values[] = {cs->min, cs->sum / (double)cs->count, cs->max};
		table_set(&t, i + 1, 0, track->name);
		snprintf(cell, sizeof cell, "%u", (unsigned)track->pid);
		table_set(&t, i + 1, 1, cell);
		snprintf(cell, sizeof cell, "%zu", cs->count);
		table_set(&t, i + 1, 2, cell);
		for (size_t c = 0; c < 3; c++) {
			snprintf(cell, sizeof cell, "%.6g", values[c]);
			table_set(&t, i + 1, 3 + c, cell);
		}
	}
	if (!t.nomem)
		table_write(&t, out);
	rc = t.nomem ? -ENOMEM : 0;
	table_free(&t);
	return rc;
}

/* Seconds after the trace's first event, to the nanosecond. */
static void format_offset(char *buf, size_t len, int64_t ts, int64_t first)
{
	int64_t d = ts - first; /* both from one trace: no overflow in practice */
	uint64_t v = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
	snprintf(buf, len, "%s%llu.%09llu s", d < 0 ? "-" : "+",
	         (unsigned long long)(v / 1000000000), (unsigned long long)(v % 1000000000));
}

static int write_worst_table(const stats *st, FILE *out)
{
	size_t rows = 0;
	for (size_t i = 0; i < st->ngroups; i++)
		rows += shown_worst(st, &st->groups[i]);
	if (!rows)
		return 0;
	table t;
	int rc = table_init(&t, 5, rows, 2);
	if (rc)
		return rc;
	static const char *const head[] = {"name", "thread", "rank", "dur", "start"};
	for (size_t c = 0; c < 5; c++)
		table_set(&t, 0, c, head[c]);
	size_t row = 1;
	for (size_t i = 0; i < st->ngroups; i++) {
		const stat_group *g = &st->groups[i];
		for (size_t k = 0; k < shown_worst(st, g); k++, row++) {
			const stat_item *it = &st->items[g->first + k];
			char cell[CELL + 256];
			table_set(&t, row, 0, it->name);
			thread_label(cell, sizeof cell, item_thread(st, it));
			table_set(&t, row, 1, cell);
			snprintf(cell, sizeof cell, "%zu", k + 1);
			table_set(&t, row, 2, cell);
			format_duration(cell, it->dur);
			table_set(&t, row, 3, cell);
			format_offset(cell, sizeof cell, it->ts, st->first_ts);
			table_set(&t, row, 4, cell);
		}
	}
	if (!t.nomem) {
		fprintf(out, "\nlongest %zu of each %s (start: after the trace's first event)\n",
		        st->args->worst, st->args->by == BY_NAME ? "name" : "group");
		table_write(&t, out);
	}
	rc = t.nomem ? -ENOMEM : 0;
	table_free(&t);
	return rc;
}

static int write_table(const stats *st, FILE *out)
{
	if (!st->ngroups && !st->ncounters) {
		/* with filters, tl_cmd_stats has said that nothing passes */
		if (tl_import_is_empty(st->imp))
			fputs("no slice or counter in the trace\n", out);
		return 0;
	}
	int rc = 0;
	if (st->ngroups)
		rc = write_slice_table(st, out);
	if (!rc)
		rc = write_worst_table(st, out);
	if (!rc && st->ncounters) {
		if (st->ngroups)
			fputc('\n', out);
		rc = write_counter_table(st, out);
	}
	return rc;
}

/* ---- the command ---------------------------------------------------------- */

static int parse_count(const char *text, size_t *n)
{
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end || v > SIZE_MAX)
		return -EINVAL;
	*n = (size_t)v;
	return 0;
}

/* Returns 0, or the exit status of a usage error (reported); -1 for --help. */
static int parse_args(int argc, char **argv, stats_args *args)
{
	static const struct option options[] = {
	    {"by", required_argument, NULL, 'b'},
	    {"worst", required_argument, NULL, 'w'},
	    {"json", no_argument, NULL, 'j'},
	    {"csv", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    TL_FILTER_LONG_OPTIONS,
	    TL_CLI_SYMBOL_LONG_OPTIONS, /* --symbols, --debug-dir */
	    {NULL, 0, NULL, 0},
	};
	int opt, rc;
	bool json = false, csv = false;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":b:w:jch", options, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (strcmp(optarg, "name") == 0)
				args->by = BY_NAME;
			else if (strcmp(optarg, "thread") == 0)
				args->by = BY_THREAD;
			else if (strcmp(optarg, "cat") == 0)
				args->by = BY_CAT;
			else
				return usage_error("--by: expected name, thread or cat, got '%s'",
				                   optarg);
			break;
		case 'w':
			if (parse_count(optarg, &args->worst))
				return usage_error("--worst: expected a count, got '%s'", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			csv = true;
			break;
		case 'h':
			return -1;
		default:
			if (tl_filter_is_option(opt)) {
				if ((rc = tl_filter_option(&args->filter, STATS_PREFIX, opt,
				                           optarg)))
					return rc;
				break;
			}
			if (tl_cli_is_symbol_option(opt)) {
				if ((rc = tl_cli_symbol_option(STATS_PREFIX, opt, optarg,
				                               &args->symbols)))
					return rc;
				break;
			}
			return tl_cli_option_error(STATS_PREFIX, opt, argv);
		}
	}
	if (json && csv)
		return usage_error("--json and --csv: choose one");
	args->format = json ? FORMAT_JSON : csv ? FORMAT_CSV : FORMAT_TABLE;
	if (optind == argc)
		return usage_error("missing the input file");
	if (argc - optind > 1)
		return usage_error("unexpected argument '%s'", argv[optind + 1]);
	args->input = argv[optind];
	return 0;
}

int tl_cmd_stats(int argc, char **argv)
{
	stats_args args = {.worst = STATS_DEFAULT_WORST};
	int rc = parse_args(argc, argv, &args);
	if (rc < 0) {
		fputs(stats_usage, stdout);
		return 0;
	}
	if (rc)
		return rc;
	if (tl_cli_reject_directory(STATS_PREFIX, args.input))
		return 1;
	tl_import imp;
	if (tl_cli_read_import(STATS_PREFIX, args.input, &args.symbols, &imp))
		return 1;
	rc = tl_filter_resolve(&args.filter, STATS_PREFIX, &imp);
	if (rc) {
		tl_import_free(&imp);
		return rc;
	}
	stats st = {.imp = &imp, .args = &args};
	rc = build_stats(&st, &args.filter);
	if (rc == 0 && !st.ngroups && !st.ncounters && !tl_import_is_empty(&imp))
		fprintf(stderr, STATS_PREFIX ": warning: nothing passes the filters\n");
	if (rc == 0) {
		if (args.format == FORMAT_JSON)
			write_json(&st, stdout);
		else if (args.format == FORMAT_CSV)
			write_csv(&st, stdout);
		else
			rc = write_table(&st, stdout);
	}
	stats_free(&st);
	tl_import_free(&imp);
	if (rc) {
		fprintf(stderr, STATS_PREFIX ": out of memory\n");
		return 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, STATS_PREFIX ": writing: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
