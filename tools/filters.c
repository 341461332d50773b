/* The filters of `convert`, `slices` and `stats` (tools/filters.h). */
#include "tools/filters.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/hash_map.h"
#include "tools/cli.h"
#include "tools/readers/trace_import.h"

static const char *const option_names[] = {"--from", "--to", "--name", "--cat", "--tid", "--pid"};

static const char *option_name(int opt)
{
	return option_names[opt - TL_FILTER_OPT_FROM];
}

/*
 * Parses "[@]DIGITS[.DIGITS]UNIT", UNIT one of s, ms, us, ns, into *t.
 * Exact: a value finer than a nanosecond is refused, not rounded.
 * Returns 0, or -EINVAL with *why saying what is wrong.
 */
static int parse_time(const char *text, tl_filter_time *t, const char **why)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {{"s", 1000000000}, {"ms", 1000000}, {"us", 1000}, {"ns", 1}};
	const char *p = text;
	t->absolute = *p == '@';
	if (t->absolute)
		p++;
	*why = "expected a number and a unit (s, ms, us, ns), such as 1.5s, 200ms, 350us, "
	       "10ns, or @ and a timestamp of the trace";
	if (*p < '0' || *p > '9')
		return -EINVAL;
	int64_t whole = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, *p - '0', &whole)) {
			*why = "out of range";
			return -EINVAL;
		}
	}
	const char *fraction = NULL;
	size_t fraction_len = 0;
	if (*p == '.') {
		fraction = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		fraction_len = (size_t)(p - fraction);
		if (fraction_len == 0)
			return -EINVAL;
	}
	size_t u = 0;
	while (u < sizeof units / sizeof units[0] && strcmp(p, units[u].name) != 0)
		u++;
	if (u == sizeof units / sizeof units[0])
		return -EINVAL;
	int64_t scale = units[u].ns, ns;
	if (__builtin_mul_overflow(whole, scale, &ns)) {
		*why = "out of range";
		return -EINVAL;
	}
	/* Each fraction digit divides the scale by ten; what is left after
	 * the scale reaches a nanosecond must be zeros. */
	for (size_t i = 0; i < fraction_len; i++) {
		int digit = fraction[i] - '0';
		if (scale == 1) {
			if (digit) {
				*why = "finer than a nanosecond";
				return -EINVAL;
			}
			continue;
		}
		scale /= 10;
		if (__builtin_add_overflow(ns, digit * scale, &ns)) {
			*why = "out of range";
			return -EINVAL;
		}
	}
	t->set = true;
	t->ns = ns;
	t->text = text;
	return 0;
}

static int parse_id(const char *text, uint32_t *id)
{
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

/* Appends value to list (count n); 2 after a usage error when full. */
static int add_value(const char *prefix, int opt, void *list, size_t *n, size_t elem,
                     const void *value)
{
	if (*n == TL_FILTER_MAX_VALUES)
		return tl_cli_usage_error(prefix, "%s: at most %d values", option_name(opt),
		                          TL_FILTER_MAX_VALUES);
	memcpy((char *)list + *n * elem, value, elem);
	(*n)++;
	return 0;
}

int tl_filter_option(tl_filter *f, const char *prefix, int opt, const char *value)
{
	const char *why;
	uint32_t id;
	switch (opt) {
	case TL_FILTER_OPT_FROM:
	case TL_FILTER_OPT_TO: {
		tl_filter_time *t = opt == TL_FILTER_OPT_FROM ? &f->from : &f->to;
		if (parse_time(value, t, &why))
			return tl_cli_usage_error(prefix, "%s: %s, got '%s'", option_name(opt), why,
			                          value);
		/* Comparable now when both count from the same origin. */
		if (f->from.set && f->to.set && f->from.absolute == f->to.absolute &&
		    f->to.ns <= f->from.ns)
			return tl_cli_usage_error(prefix, "--to %s is not after --from %s",
			                          f->to.text, f->from.text);
		return 0;
	}
	case TL_FILTER_OPT_NAME:
		return add_value(prefix, opt, f->names, &f->nnames, sizeof value, &value);
	case TL_FILTER_OPT_CAT:
		return add_value(prefix, opt, f->cats, &f->ncats, sizeof value, &value);
	case TL_FILTER_OPT_TID:
	case TL_FILTER_OPT_PID:
		if (parse_id(value, &id))
			return tl_cli_usage_error(prefix,
			                          "%s: expected a number from 0 to %u, got '%s'",
			                          option_name(opt), UINT32_MAX, value);
		if (opt == TL_FILTER_OPT_TID)
			return add_value(prefix, opt, f->tids, &f->ntids, sizeof id, &id);
		return add_value(prefix, opt, f->pids, &f->npids, sizeof id, &id);
	default:
		return tl_cli_usage_error(prefix, "unknown filter option");
	}
}

bool tl_filter_active(const tl_filter *f)
{
	return f->from.set || f->to.set || f->nnames || f->ncats || f->ntids || f->npids;
}

/* origin + t, saturated. */
static int64_t time_at(const tl_filter_time *t, int64_t origin)
{
	int64_t at;
	if (t->absolute)
		return t->ns;
	return __builtin_add_overflow(origin, t->ns, &at) ? INT64_MAX : at;
}

int tl_filter_resolve(tl_filter *f, const char *prefix, const tl_import *imp)
{
	int64_t origin = INT64_MAX;
	for (size_t i = 0; i < imp->nslices; i++)
		if (imp->slices[i].ts < origin)
			origin = imp->slices[i].ts;
	for (size_t i = 0; i < imp->ncounters; i++)
		if (imp->counters[i].ts < origin)
			origin = imp->counters[i].ts;
	return tl_filter_resolve_from(f, prefix, origin);
}

int tl_filter_resolve_from(tl_filter *f, const char *prefix, int64_t origin)
{
	if (origin == INT64_MAX)
		origin = 0; /* nothing in the trace: nothing will pass a window */
	f->from_ns = f->from.set ? time_at(&f->from, origin) : INT64_MIN;
	f->to_ns = f->to.set ? time_at(&f->to, origin) : INT64_MAX;
	f->resolved = true;
	if (f->from.set && f->to.set && f->to_ns <= f->from_ns)
		return tl_cli_usage_error(prefix,
		                          "--to %s is not after --from %s (the trace's first event "
		                          "is at @%lldns)",
		                          f->to.text, f->from.text, (long long)origin);
	return 0;
}

/* The window test of a slice [ts, ts + dur), dur -1: never ended. */
static bool window_holds_slice(const tl_filter *f, int64_t ts, int64_t dur)
{
	if (f->to.set && ts >= f->to_ns)
		return false;
	if (!f->from.set || ts >= f->from_ns || dur < 0)
		return true;
	/* began before the window: kept when still running after from */
	int64_t left;
	if (__builtin_sub_overflow(f->from_ns, ts, &left))
		return false;
	return dur > left;
}

static bool window_holds_point(const tl_filter *f, int64_t ts)
{
	return (!f->from.set || ts >= f->from_ns) && (!f->to.set || ts < f->to_ns);
}

static bool any_glob(const char *const *globs, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	return false;
}

static bool any_id(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

bool tl_filter_slice_passes(const tl_filter *f, const tl_import *imp, size_t i)
{
	const tl_import_slice *s = &imp->slices[i];
	return tl_filter_slice_on_passes(f, imp, s, &imp->tracks[s->track]);
}

bool tl_filter_slice_on_passes(const tl_filter *f, const tl_import *imp, const tl_import_slice *s,
                               const tl_import_track *t)
{
	if (!window_holds_slice(f, s->ts, s->kind == TL_IMPORT_INSTANT ? 0 : s->dur))
		return false;
	if (f->nnames && !any_glob(f->names, f->nnames, s->name))
		return false;
	if (f->ncats && !any_glob(f->cats, f->ncats, s->cat ? s->cat : ""))
		return false;
	if (f->ntids && (t->thread == TL_IMPORT_NONE ||
	                 !any_id(f->tids, f->ntids, imp->threads[t->thread].tid)))
		return false;
	if (f->npids && (t->thread == TL_IMPORT_NONE && t->scope != TL_IMPORT_SCOPE_PROCESS))
		return false; /* a global track belongs to no process */
	uint32_t pid = t->thread != TL_IMPORT_NONE ? imp->threads[t->thread].pid : t->pid;
	if (f->npids && !any_id(f->pids, f->npids, pid))
		return false;
	return true;
}

bool tl_filter_counter_passes(const tl_filter *f, const tl_import *imp, size_t i)
{
	return tl_filter_sample_passes(f, imp, &imp->counters[i]);
}

bool tl_filter_sample_passes(const tl_filter *f, const tl_import *imp, const tl_import_counter *c)
{
	const tl_import_track *t = &imp->tracks[c->track];
	if (!window_holds_point(f, c->ts))
		return false;
	if (f->nnames && !any_glob(f->names, f->nnames, t->name))
		return false;
	if (f->ncats && !any_glob(f->cats, f->ncats, ""))
		return false;
	if (f->ntids)
		return false; /* counters are on process tracks */
	return !f->npids || any_id(f->pids, f->npids, t->pid);
}

bool tl_filter_thread_passes(const tl_filter *f, const tl_import_thread *t)
{
	return (!f->ntids || any_id(f->tids, f->ntids, t->tid)) &&
	       (!f->npids || any_id(f->pids, f->npids, t->pid));
}

/* Whether a process record passes, given the threads that passed: those
 * of imp that pass, or when kept_pids is not NULL, the pids of the threads
 * kept. */
static bool process_passes(const tl_filter *f, const tl_import *imp, uint32_t pid,
                           const tl_id_map *kept_pids)
{
	if (f->npids && !any_id(f->pids, f->npids, pid))
		return false;
	if (!f->ntids)
		return true;
	if (kept_pids)
		return tl_id_map_get(kept_pids, pid) != NULL;
	for (size_t i = 0; i < imp->nthreads; i++)
		if (imp->threads[i].pid == pid && tl_filter_thread_passes(f, &imp->threads[i]))
			return true;
	return false;
}

bool tl_filter_process_passes(const tl_filter *f, const tl_import *imp, uint32_t pid)
{
	return process_passes(f, imp, pid, NULL);
}

int tl_filter_import(tl_filter *f, const char *prefix, tl_import *imp)
{
	if (!tl_filter_active(f))
		return 0;
	int rc = tl_filter_resolve(f, prefix, imp);
	if (rc)
		return rc;
	bool was_empty = tl_import_is_empty(imp);
	size_t *slice_at = malloc((imp->nslices + 1) * sizeof *slice_at);
	size_t *thread_at = malloc((imp->nthreads + 1) * sizeof *thread_at);
	if (!slice_at || !thread_at) {
		free(slice_at);
		free(thread_at);
		fprintf(stderr, "%s: out of memory\n", prefix);
		return 1;
	}

	/* Slices, and where each one went (TL_IMPORT_NONE: dropped). */
	size_t n = 0;
	for (size_t i = 0; i < imp->nslices; i++) {
		slice_at[i] = TL_IMPORT_NONE;
		if (tl_filter_slice_passes(f, imp, i)) {
			slice_at[i] = n;
			if (n < imp->nthread_times) { /* (n <= i: read before written) */
				imp->thread_times[2 * n] = tl_import_slice_thread_ts(imp, i);
				imp->thread_times[2 * n + 1] = tl_import_slice_thread_dur(imp, i);
			}
			imp->slices[n++] = imp->slices[i];
		}
	}
	imp->nslices = n;

	n = 0;
	for (size_t i = 0; i < imp->ncounters; i++)
		if (tl_filter_counter_passes(f, imp, i))
			imp->counters[n++] = imp->counters[i];
	imp->ncounters = n;

	n = 0;
	for (size_t i = 0; i < imp->nflows; i++) {
		tl_import_flow flow = imp->flows[i];
		if (slice_at[flow.out] == TL_IMPORT_NONE || slice_at[flow.in] == TL_IMPORT_NONE)
			continue;
		imp->flows[n++] = (tl_import_flow){slice_at[flow.out], slice_at[flow.in]};
	}
	imp->nflows = n;

	n = 0;
	for (size_t i = 0; i < imp->nargs; i++) {
		if (slice_at[imp->args[i].slice] == TL_IMPORT_NONE)
			continue;
		imp->args[n] = imp->args[i];
		imp->args[n++].slice = slice_at[imp->args[i].slice];
	}
	imp->nargs = n;

	/* Threads; the tracks of a dropped thread hold nothing any more. */
	n = 0;
	for (size_t i = 0; i < imp->nthreads; i++) {
		thread_at[i] = TL_IMPORT_NONE;
		if (tl_filter_thread_passes(f, &imp->threads[i])) {
			thread_at[i] = n;
			imp->threads[n++] = imp->threads[i];
		}
	}
	imp->nthreads = n;
	for (size_t i = 0; i < imp->ntracks; i++)
		if (imp->tracks[i].thread != TL_IMPORT_NONE)
			imp->tracks[i].thread = thread_at[imp->tracks[i].thread];

	tl_id_map kept_pids = {0};
	bool nomem = false;
	for (size_t i = 0; f->ntids && i < imp->nthreads && !nomem; i++)
		nomem = !tl_id_map_add(&kept_pids, imp->threads[i].pid, 0, NULL);
	n = 0;
	for (size_t i = 0; i < imp->nprocesses && !nomem; i++)
		if (process_passes(f, imp, imp->processes[i].pid, &kept_pids))
			imp->processes[n++] = imp->processes[i];
	if (!nomem)
		imp->nprocesses = n;
	tl_id_map_free(&kept_pids);

	free(slice_at);
	free(thread_at);
	if (nomem) {
		fprintf(stderr, "%s: out of memory\n", prefix);
		return 1;
	}
	if (!was_empty && tl_import_is_empty(imp))
		fprintf(stderr, "%s: warning: nothing passes the filters\n", prefix);
	return 0;
}

int tl_filter_model(tl_filter *f, const char *prefix, tl_model *model)
{
	if (!tl_filter_active(f))
		return 0;
	tl_import imp;
	tl_model filtered;
	if (tl_import_model(model, &imp) != 0) {
		fprintf(stderr, "%s: out of memory\n", prefix);
		return 1;
	}
	int rc = tl_filter_import(f, prefix, &imp);
	if (rc) {
		tl_import_free(&imp);
		return rc;
	}
	if (tl_import_move_to_model(&imp, &filtered) != 0) {
		fprintf(stderr, "%s: out of memory\n", prefix);
		return 1;
	}
	tl_model_free(model);
	*model = filtered;
	return 0;
}
