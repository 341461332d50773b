/*
 * The import printed one item per line, in the line format of the
 * conformance files: from a whole import (tl_import_print), or as a file is
 * read, from what the import hands a sink (tl_import_printer), in the same
 * order and bytes.
 */
#include "tools/readers/import_print.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/hash_map.h"
#include "tools/readers/spill_sort.h"

void tl_import_print_string(FILE *out, const char *s, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\r')
			fputs("\\r", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_str_key(FILE *out, const char *key, const char *s)
{
	fprintf(out, " %s=", key);
	if (s)
		tl_import_print_string(out, s, strlen(s));
	else
		fputs("null", out);
}

void tl_import_print_double(FILE *out, double d)
{
	char buf[40];
	for (int precision = 15; precision <= 17; precision++) {
		snprintf(buf, sizeof buf, "%.*g", precision, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	fputs(buf, out);
}

static void print_opt_i64(FILE *out, const char *key, int64_t v)
{
	if (v == TL_IMPORT_NULL)
		fprintf(out, " %s=null", key);
	else
		fprintf(out, " %s=%lld", key, (long long)v);
}

static const char *scope_name(tl_import_scope scope)
{
	return scope == TL_IMPORT_SCOPE_GLOBAL    ? "global"
	       : scope == TL_IMPORT_SCOPE_PROCESS ? "process"
	                                          : "thread";
}

/* Indexes imp's processes by pid, the first entry of each, into *by_pid
 * (zeroed first): 0, or -ENOMEM with *by_pid empty. */
static int index_processes(const tl_import *imp, tl_id_map *by_pid)
{
	*by_pid = (tl_id_map){0};
	for (size_t i = 0; i < imp->nprocesses; i++) {
		if (!tl_id_map_add(by_pid, imp->processes[i].pid, i, NULL)) {
			tl_id_map_free(by_pid);
			return -ENOMEM;
		}
	}
	return 0;
}

/* The name of process pid: from by_pid (index_processes), or searched
 * for when by_pid is NULL. */
static const char *process_name(const tl_import *imp, const tl_id_map *by_pid, uint32_t pid)
{
	if (by_pid) {
		const uint64_t *i = tl_id_map_get(by_pid, pid);
		return i ? imp->processes[*i].name : NULL;
	}
	for (size_t i = 0; i < imp->nprocesses; i++) {
		if (imp->processes[i].pid == pid)
			return imp->processes[i].name;
	}
	return NULL;
}

/* A slice's line; t is its track (a streamed slice's, as it was);
 * processes: imp's by pid, or NULL. */
static void print_slice(const tl_import *imp, const tl_id_map *processes, const tl_import_slice *s,
                        const tl_import_track *t, int64_t thread_ts, int64_t thread_dur, FILE *out)
{
	const tl_import_thread *th = t->thread != TL_IMPORT_NONE ? &imp->threads[t->thread] : NULL;
	uint32_t pid = th ? th->pid : t->pid;
	static const char *const kinds[] = {"slice", "instant", "async"};
	fprintf(out, "%s ts=%lld", kinds[s->kind], (long long)s->ts);
	if (s->kind != TL_IMPORT_INSTANT)
		fprintf(out, " dur=%lld", (long long)s->dur);
	print_str_key(out, "name", s->name);
	if (th) {
		fprintf(out, " tid=%u pid=%u depth=%u", (unsigned)th->tid, (unsigned)pid, s->depth);
		print_str_key(out, "cat", s->cat);
		print_opt_i64(out, "thread_ts", thread_ts);
		print_opt_i64(out, "thread_dur", thread_dur);
		print_str_key(out, "thread_name", th->name);
		print_str_key(out, "process_name", pid ? process_name(imp, processes, pid) : NULL);
		fprintf(out, " track=%s scope=thread\n",
		        t->kind == TL_TRACK_OVERFLOW ? "\"overflow\"" : "null");
		return;
	}
	if (t->scope == TL_IMPORT_SCOPE_PROCESS)
		fprintf(out, " pid=%u", (unsigned)pid);
	else
		fputs(" pid=null", out);
	print_str_key(out, "track", t->name);
	if (t->has_cookie)
		fprintf(out, " cookie=%lld", (long long)t->cookie);
	else
		fputs(" cookie=null", out);
	print_str_key(out, "cat", s->cat);
	fprintf(out, " depth=%u scope=%s\n", s->depth, scope_name(t->scope));
}

static void print_arg_value(FILE *out, const tl_json_value *v)
{
	if (v->type == TL_JSON_STRING)
		tl_import_print_string(out, v->s, strlen(v->s));
	else if (v->type == TL_JSON_DOUBLE)
		tl_import_print_double(out, v->d);
	else
		fprintf(out, "%lld", (long long)v->i);
}

static void print_counter(const tl_import *imp, const tl_import_counter *c, FILE *out)
{
	const tl_import_track *t = &imp->tracks[c->track];
	fprintf(out, "counter ts=%lld", (long long)c->ts);
	print_str_key(out, "name", t->name);
	fputs(" value=", out);
	tl_import_print_double(out, c->value);
	fprintf(out, " pid=%u\n", (unsigned)t->pid);
}

static void print_flow(const char *from, const char *to, FILE *out)
{
	fputs("flow", out);
	print_str_key(out, "out", from);
	print_str_key(out, "in", to);
	fputc('\n', out);
}

static void print_arg(const char *slice, const char *key, const tl_json_value *v, FILE *out)
{
	fputs("arg", out);
	print_str_key(out, "slice", slice);
	print_str_key(out, "key", key);
	fputs(" value=", out);
	print_arg_value(out, v);
	fputc('\n', out);
}

/* What follows the items: processes, threads, stats (those that pass
 * filter, when there is one). */
static void print_tables(const tl_import *imp, unsigned kinds, const tl_import_print_filter *filter,
                         FILE *out)
{
	for (size_t i = 0; (kinds & TL_PRINT_PROCESS) && i < imp->nprocesses; i++) {
		const tl_import_process *p = &imp->processes[i];
		if (filter && !filter->process(filter->ctx, imp, p))
			continue;
		fprintf(out, "process pid=%u", (unsigned)p->pid);
		print_str_key(out, "name", p->name);
		print_opt_i64(out, "sort_index",
		              p->has_sort_index ? p->sort_index : TL_IMPORT_NULL);
		fputc('\n', out);
	}
	for (size_t i = 0; (kinds & TL_PRINT_THREAD) && i < imp->nthreads; i++) {
		const tl_import_thread *t = &imp->threads[i];
		if (filter && !filter->thread(filter->ctx, imp, t))
			continue;
		fprintf(out, "thread tid=%u pid=%u", (unsigned)t->tid, (unsigned)t->pid);
		print_str_key(out, "name", t->name);
		print_opt_i64(out, "sort_index",
		              t->has_sort_index ? t->sort_index : TL_IMPORT_NULL);
		fputc('\n', out);
	}
	for (size_t i = 0; (kinds & TL_PRINT_STAT) && i < TL_STAT_COUNT; i++) {
		if (!imp->stats[i])
			continue;
		fputs("stat", out);
		print_str_key(out, "name", tl_import_stat_names[i]);
		fprintf(out, " value=%llu\n", (unsigned long long)imp->stats[i]);
	}
}

static const unsigned kind_bits[] = {TL_PRINT_SLICE, TL_PRINT_INSTANT, TL_PRINT_ASYNC};

void tl_import_print(const tl_import *imp, unsigned kinds, FILE *out)
{
	tl_id_map by_pid;
	const tl_id_map *processes = index_processes(imp, &by_pid) == 0 ? &by_pid : NULL;
	for (size_t i = 0; i < imp->nslices; i++) {
		const tl_import_slice *s = &imp->slices[i];
		if (kinds & kind_bits[s->kind])
			print_slice(imp, processes, s, &imp->tracks[s->track],
			            tl_import_slice_thread_ts(imp, i),
			            tl_import_slice_thread_dur(imp, i), out);
	}
	tl_id_map_free(&by_pid);
	for (size_t i = 0; (kinds & TL_PRINT_COUNTER) && i < imp->ncounters; i++)
		print_counter(imp, &imp->counters[i], out);
	for (size_t i = 0; (kinds & TL_PRINT_FLOW) && i < imp->nflows; i++)
		print_flow(imp->slices[imp->flows[i].out].name, imp->slices[imp->flows[i].in].name,
		           out);
	for (size_t i = 0; (kinds & TL_PRINT_ARG) && i < imp->nargs; i++)
		print_arg(imp->slices[imp->args[i].slice].name, imp->args[i].key,
		          &imp->args[i].value, out);
	print_tables(imp, kinds, NULL, out);
}

void tl_import_print_marker(FILE *out, tl_atrace_result result, const tl_atrace_point *p)
{
	if (result == TL_ATRACE_FAIL) {
		fputs("parse result=fail\n", out);
		return;
	}
	if (result == TL_ATRACE_UNSUPPORTED) {
		fputs("parse result=unsupported\n", out);
		return;
	}
	fprintf(out, "parse result=ok phase=%c tgid=%u", p->phase, (unsigned)p->tgid);
	if (p->track.ptr) {
		fputs(" track=", out);
		tl_import_print_string(out, p->track.ptr, p->track.len);
	}
	if (p->name.ptr) {
		fputs(" name=", out);
		tl_import_print_string(out, p->name.ptr, p->name.len);
	}
	if (p->phase == 'C')
		fprintf(out, " value=%lld", (long long)p->value);
	if (strchr("SFGH", p->phase))
		fprintf(out, " cookie=%lld", (long long)p->cookie);
	fputc('\n', out);
}

/* ------------------------------------------------------------------------ */
/* As the import hands its items on */

/*
 * The items wait in external sorters keyed by their place in a whole
 * import (the seq the sink is given), as records that carry the bytes of
 * their strings (a sink's strings live only during the call). Each sorter
 * holds SORT_BUDGET bytes in memory and writes the rest, in sorted runs,
 * to a temporary file.
 */
#define SORT_BUDGET ((size_t)4 << 20)
#define NO_STRING UINT32_MAX /* a string that is NULL */

/* A slice, followed by its name, category and track name. */
typedef struct slice_record {
	int64_t ts, dur, thread_ts, thread_dur, cookie;
	size_t thread;
	uint32_t pid, name_len, cat_len, track_name_len;
	uint16_t depth;
	uint8_t kind, track_kind, scope, has_cookie;
} slice_record;

/* A flow, followed by its slices' names. */
typedef struct flow_record {
	uint64_t from_seq, to_seq;
	uint32_t from_len, to_len;
} flow_record;

/* An arg, followed by its slice's name, its key and a string value. */
typedef struct arg_record {
	tl_json_value value;
	uint64_t slice_seq;
	uint32_t slice_len, key_len, value_len;
} arg_record;

enum { GROUP_SLICES, GROUP_COUNTERS, GROUP_FLOWS, GROUP_ARGS, GROUPS };

struct tl_import_printer {
	unsigned kinds;
	/* With a filter: every slice, counter and flow is kept (what passes is
	 * known once the trace's first time is), and the slices that passed
	 * are noted, a bit each, for their flows and args. */
	bool filtered;
	int64_t first_ts;
	uint8_t *passed;
	size_t passed_cap;
	uint64_t passing; /* slices, counters and flows that passed */
	tl_import_sink sink;
	tl_spill_sort *sorts[GROUPS];
	char *rec; /* the record being made */
	size_t rec_len, rec_cap;
	char *text[3]; /* a record's strings read back */
	size_t text_cap[3];
	tl_id_map processes; /* while writing: the import's by pid */
};

/* Starts a record with its fixed part; 0 or -ENOMEM. */
static int rec_start(tl_import_printer *p, const void *fixed, size_t len)
{
	p->rec_len = 0;
	if (len > p->rec_cap) {
		char *grown = realloc(p->rec, len + 256);
		if (!grown)
			return -ENOMEM;
		p->rec = grown;
		p->rec_cap = len + 256;
	}
	memcpy(p->rec, fixed, len);
	p->rec_len = len;
	return 0;
}

/* Appends s (NULL: nothing) to the record; its length, or NO_STRING. */
static uint32_t rec_string(tl_import_printer *p, const char *s, int *rc)
{
	if (!s || *rc)
		return NO_STRING;
	size_t len = strlen(s);
	if (len >= NO_STRING || p->rec_len + len > SIZE_MAX / 2) {
		*rc = -E2BIG;
		return NO_STRING;
	}
	if (p->rec_len + len > p->rec_cap) {
		size_t cap = 2 * (p->rec_len + len);
		char *grown = realloc(p->rec, cap);
		if (!grown) {
			*rc = -ENOMEM;
			return NO_STRING;
		}
		p->rec = grown;
		p->rec_cap = cap;
	}
	memcpy(p->rec + p->rec_len, s, len);
	p->rec_len += len;
	return (uint32_t)len;
}

/* Adds the record made to a group's sorter, made when first needed. */
static int keep(tl_import_printer *p, int group, uint64_t seq, int rc)
{
	if (rc)
		return rc;
	if (!p->sorts[group]) {
		p->sorts[group] = tl_spill_sort_new(SORT_BUDGET, NULL);
		if (!p->sorts[group])
			return -errno;
	}
	return tl_spill_sort_add(p->sorts[group], seq, p->rec, p->rec_len);
}

/* The fixed part of a record read back, and *at past it. */
static void rec_fixed(const void *rec, void *fixed, size_t len, size_t *at)
{
	memcpy(fixed, rec, len);
	*at = len;
}

/* String i of a record read back (len NO_STRING: NULL), NUL-terminated in
 * the printer's buffer i; *at moves past it. NULL with *rc set on ENOMEM. */
static const char *rec_text(tl_import_printer *p, int i, const void *rec, uint32_t len, size_t *at,
                            int *rc)
{
	if (len == NO_STRING)
		return NULL;
	if (len + 1 > p->text_cap[i]) {
		char *grown = realloc(p->text[i], (size_t)len + 1);
		if (!grown) {
			*rc = -ENOMEM;
			return NULL;
		}
		p->text[i] = grown;
		p->text_cap[i] = (size_t)len + 1;
	}
	memcpy(p->text[i], (const char *)rec + *at, len);
	p->text[i][len] = '\0';
	*at += len;
	return p->text[i];
}

static int keep_slice(void *ctx, const tl_import *imp, const tl_import_slice *s, uint64_t seq,
                      int64_t thread_ts, int64_t thread_dur, const tl_import_sink_arg *args,
                      size_t nargs)
{
	tl_import_printer *p = ctx;
	int rc = 0;
	if (s->ts < p->first_ts)
		p->first_ts = s->ts;
	if (p->filtered || (p->kinds & kind_bits[s->kind])) {
		const tl_import_track *t = &imp->tracks[s->track];
		slice_record r = {.ts = s->ts,
		                  .dur = s->dur,
		                  .thread_ts = thread_ts,
		                  .thread_dur = thread_dur,
		                  .cookie = t->cookie,
		                  .thread = t->thread,
		                  .pid = t->pid,
		                  .depth = s->depth,
		                  .kind = s->kind,
		                  .track_kind = (uint8_t)t->kind,
		                  .scope = (uint8_t)t->scope,
		                  .has_cookie = (uint8_t)t->has_cookie};
		rc = rec_start(p, &r, sizeof r);
		r.name_len = rec_string(p, s->name, &rc);
		r.cat_len = rec_string(p, s->cat, &rc);
		r.track_name_len = rec_string(p, t->name, &rc);
		if (rc == 0)
			memcpy(p->rec, &r, sizeof r);
		rc = keep(p, GROUP_SLICES, seq, rc);
	}
	for (size_t i = 0; rc == 0 && (p->kinds & TL_PRINT_ARG) && i < nargs; i++) {
		const tl_json_value *v = &args[i].value;
		arg_record r = {.value = *v, .slice_seq = seq};
		if (v->type == TL_JSON_STRING)
			r.value.s = NULL;
		rc = rec_start(p, &r, sizeof r);
		r.slice_len = rec_string(p, s->name, &rc);
		r.key_len = rec_string(p, args[i].key, &rc);
		r.value_len = rec_string(p, v->type == TL_JSON_STRING ? v->s : NULL, &rc);
		if (rc == 0)
			memcpy(p->rec, &r, sizeof r);
		rc = keep(p, GROUP_ARGS, args[i].seq, rc);
	}
	return rc;
}

static int keep_counter(void *ctx, const tl_import *imp, const tl_import_counter *c, uint64_t seq)
{
	(void)imp; /* a counter's track stays: its index is enough */
	tl_import_printer *p = ctx;
	if (c->ts < p->first_ts)
		p->first_ts = c->ts;
	if (!p->filtered && !(p->kinds & TL_PRINT_COUNTER))
		return 0;
	return keep(p, GROUP_COUNTERS, seq, rec_start(p, c, sizeof *c));
}

static int keep_flow(void *ctx, const tl_import *imp, const tl_import_slice *from,
                     uint64_t from_seq, const tl_import_slice *to, uint64_t to_seq, uint64_t seq)
{
	(void)imp;
	tl_import_printer *p = ctx;
	if (!p->filtered && !(p->kinds & TL_PRINT_FLOW))
		return 0;
	flow_record r = {.from_seq = from_seq, .to_seq = to_seq};
	int rc = rec_start(p, &r, sizeof r);
	r.from_len = rec_string(p, from->name, &rc);
	r.to_len = rec_string(p, to->name, &rc);
	if (rc == 0)
		memcpy(p->rec, &r, sizeof r);
	return keep(p, GROUP_FLOWS, seq, rc);
}

static void forget(void *ctx)
{
	tl_import_printer *p = ctx;
	for (int g = 0; g < GROUPS; g++) {
		tl_spill_sort_free(p->sorts[g]);
		p->sorts[g] = NULL;
	}
}

tl_import_printer *tl_import_printer_new(unsigned kinds)
{
	tl_import_printer *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->kinds = kinds;
	p->first_ts = INT64_MAX;
	p->sink = (tl_import_sink){.ctx = p,
	                           .slice = keep_slice,
	                           .counter = keep_counter,
	                           .flow = keep_flow,
	                           .restart = forget,
	                           .what = "keeping the items aside in temporary files ($TMPDIR, "
	                                   "else /var/tmp) to print them in order"};
	return p;
}

const tl_import_sink *tl_import_printer_sink(tl_import_printer *p)
{
	return &p->sink;
}

/* One record read back, printed. */
/* Notes that slice seq passed the filter. 0 or -ENOMEM. */
static int note_passed(tl_import_printer *p, uint64_t seq)
{
	size_t byte = (size_t)(seq / 8);
	if (byte >= p->passed_cap) {
		size_t cap = p->passed_cap ? 2 * p->passed_cap : 4096;
		while (cap <= byte)
			cap *= 2;
		uint8_t *grown = realloc(p->passed, cap);
		if (!grown)
			return -ENOMEM;
		memset(grown + p->passed_cap, 0, cap - p->passed_cap);
		p->passed = grown;
		p->passed_cap = cap;
	}
	p->passed[byte] |= (uint8_t)(1u << (seq % 8));
	return 0;
}

static bool has_passed(const tl_import_printer *p, uint64_t seq)
{
	size_t byte = (size_t)(seq / 8);
	return byte < p->passed_cap && (p->passed[byte] >> (seq % 8) & 1);
}

/* One record read back, printed when it passes filter (NULL: all do). */
static int print_record(tl_import_printer *p, int group, uint64_t seq, const void *rec,
                        const tl_import *imp, const tl_import_print_filter *filter, FILE *out)
{
	int rc = 0;
	size_t at;
	if (group == GROUP_SLICES) {
		slice_record r;
		rec_fixed(rec, &r, sizeof r, &at);
		tl_import_slice s = {.ts = r.ts, .dur = r.dur, .depth = r.depth, .kind = r.kind};
		s.name = rec_text(p, 0, rec, r.name_len, &at, &rc);
		s.cat = rec_text(p, 1, rec, r.cat_len, &at, &rc);
		tl_import_track t = {.kind = (tl_import_track_kind)r.track_kind,
		                     .scope = (tl_import_scope)r.scope,
		                     .name = rec_text(p, 2, rec, r.track_name_len, &at, &rc),
		                     .pid = r.pid,
		                     .thread = r.thread,
		                     .has_cookie = r.has_cookie,
		                     .cookie = r.cookie};
		if (rc || (filter && !filter->slice(filter->ctx, imp, &s, &t)))
			return rc;
		if (filter && (rc = note_passed(p, seq)) == 0)
			p->passing++;
		if (rc == 0 && (p->kinds & kind_bits[s.kind]))
			print_slice(imp, &p->processes, &s, &t, r.thread_ts, r.thread_dur, out);
	} else if (group == GROUP_COUNTERS) {
		tl_import_counter c;
		rec_fixed(rec, &c, sizeof c, &at);
		if (filter && !filter->counter(filter->ctx, imp, &c))
			return 0;
		p->passing++;
		if (p->kinds & TL_PRINT_COUNTER)
			print_counter(imp, &c, out);
	} else if (group == GROUP_FLOWS) {
		flow_record r;
		rec_fixed(rec, &r, sizeof r, &at);
		if (filter && !(has_passed(p, r.from_seq) && has_passed(p, r.to_seq)))
			return 0;
		p->passing++;
		const char *from = rec_text(p, 0, rec, r.from_len, &at, &rc);
		const char *to = rec_text(p, 1, rec, r.to_len, &at, &rc);
		if (rc == 0 && (p->kinds & TL_PRINT_FLOW))
			print_flow(from, to, out);
	} else {
		arg_record r;
		rec_fixed(rec, &r, sizeof r, &at);
		if (filter && !has_passed(p, r.slice_seq))
			return 0;
		const char *slice = rec_text(p, 0, rec, r.slice_len, &at, &rc);
		const char *key = rec_text(p, 1, rec, r.key_len, &at, &rc);
		if (r.value.type == TL_JSON_STRING)
			r.value.s = rec_text(p, 2, rec, r.value_len, &at, &rc);
		if (rc == 0)
			print_arg(slice, key, &r.value, out);
	}
	return rc;
}

/* The records of a group in their order, each printed when it passes. */
static int print_group(tl_import_printer *p, int group, const tl_import *imp,
                       const tl_import_print_filter *filter, FILE *out)
{
	tl_spill_sort *sort = p->sorts[group];
	if (!sort)
		return 0;
	int rc = tl_spill_sort_finish(sort);
	uint64_t seq;
	const void *rec;
	size_t len;
	while (rc == 0 && (rc = tl_spill_sort_next(sort, &seq, &rec, &len)) == 1)
		rc = print_record(p, group, seq, rec, imp, filter, out);
	return rc;
}

void tl_import_printer_filter(tl_import_printer *p)
{
	p->filtered = true;
}

int64_t tl_import_printer_first_ts(const tl_import_printer *p)
{
	return p->first_ts;
}

int tl_import_printer_write(tl_import_printer *p, const tl_import *imp,
                            const tl_import_print_filter *filter, FILE *out)
{
	int rc = filter && !p->filtered ? -EINVAL : 0;
	if (rc == 0)
		rc = index_processes(imp, &p->processes);
	p->passing = 0;
	for (int g = 0; g < GROUPS && rc == 0; g++)
		rc = print_group(p, g, imp, filter, out);
	if (rc == 0)
		print_tables(imp, p->kinds, filter, out);
	tl_id_map_free(&p->processes);
	return rc;
}

uint64_t tl_import_printer_passing(const tl_import_printer *p)
{
	return p->passing;
}

uint64_t tl_import_printer_spilled(const tl_import_printer *p)
{
	uint64_t bytes = 0;
	for (int g = 0; g < GROUPS; g++)
		bytes += p->sorts[g] ? tl_spill_sort_spilled_bytes(p->sorts[g]) : 0;
	return bytes;
}

void tl_import_printer_free(tl_import_printer *p)
{
	if (!p)
		return;
	forget(p);
	free(p->passed);
	free(p->rec);
	for (int i = 0; i < 3; i++)
		free(p->text[i]);
	free(p);
}
