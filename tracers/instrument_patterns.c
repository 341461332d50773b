/*
 * Include and exclude patterns on function names (instrument_patterns.h,
 * tl_instrument_set_patterns, TIMELINE_INSTRUMENT_INCLUDE and
 * TIMELINE_INSTRUMENT_EXCLUDE).
 *
 * A pattern set is made once and never changed or freed (a hook on
 * another thread, or in a signal handler, may be reading it); setting new
 * patterns publishes a new set with the next generation. Making it reads
 * the symbol tables of every file mapped in the process (tracer.h,
 * tl_tracer_function_symbols) and keeps, sorted by address, the address
 * ranges of the functions a pattern matches with their verdict, and the
 * ranges of the files read: a function of those files is decided by
 * address from its first call. A function outside them (a library loaded
 * with dlopen since) is decided by its name, which its first call waits
 * for from the resolver thread (tl_tracer_function_name_now). Each
 * function id has one verdict word, (generation << 1) | recorded, written
 * on its first call: from then on a call costs one load and one compare.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/instrument.h>

#include "recorder/tracer.h"
#include "tracers/instrument_patterns.h"

struct range {
	uint64_t start, end;
	bool recorded;
};

/* Ranges sorted by start, grown while a set is made. */
struct ranges {
	struct range *at;
	size_t n, cap;
	bool failed; /* without memory: the set keeps none */
};

struct pattern_set {
	uint32_t generation;
	char **include, **exclude; /* NULL-terminated lists into storage */
	size_t ninclude, nexclude;
	struct ranges functions;   /* the functions a pattern matches */
	struct ranges files;       /* the mapped files their symbols were read from */
	struct pattern_set *older; /* kept reachable, never freed */
};

static _Atomic(struct pattern_set *) current;
static _Atomic uint32_t verdicts[TL_TRACER_FUNCTION_IDS];
static pthread_mutex_t setting = PTHREAD_MUTEX_INITIALIZER;
static struct pattern_set *all_sets;
static uint32_t last_generation;

TL_NO_INSTRUMENT bool tl_instrument_glob_match(const char *pattern, const char *name)
{
	const char *star = NULL, *resume = NULL;
	while (*name) {
		const char *p = pattern;
		bool ok = false;
		if (*p == '*') {
			star = ++pattern;
			resume = name;
			continue;
		}
		if (*p == '?') {
			ok = true;
			p++;
		} else if (*p == '[' && strchr(p + 1, ']')) {
			p++;
			bool negate = *p == '!';
			if (negate)
				p++;
			bool in = false;
			do {
				if (p[1] == '-' && p[2] && p[2] != ']') {
					in |= (unsigned char)*name >= (unsigned char)p[0] &&
					      (unsigned char)*name <= (unsigned char)p[2];
					p += 3;
				} else {
					in |= *p == *name;
					p++;
				}
			} while (*p != ']');
			p++;
			ok = in != negate;
		} else if (*p) {
			ok = *p == *name;
			p++;
		}
		if (ok) {
			pattern = p;
			name++;
		} else if (star) {
			pattern = star;
			name = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return !*pattern;
}

static TL_NO_INSTRUMENT bool any_match(char *const *patterns, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (tl_instrument_glob_match(patterns[i], name))
			return true;
	return false;
}

/* The verdict of a name under the set. */
static TL_NO_INSTRUMENT bool name_recorded(const struct pattern_set *set, const char *name)
{
	return (set->ninclude == 0 || any_match(set->include, set->ninclude, name)) &&
	       !any_match(set->exclude, set->nexclude, name);
}

/* The range of r holding address, or NULL: the last one starting at or
 * before it (function symbols that overlap are not looked through).
 * Async-signal-safe. */
static TL_NO_INSTRUMENT const struct range *range_at(const struct ranges *r, uint64_t address)
{
	size_t lo = 0, hi = r->n; /* the first range starting above address */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->at[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && address < r->at[lo - 1].end ? &r->at[lo - 1] : NULL;
}

TL_NO_INSTRUMENT bool tl_instrument_patterns_allow(const void *address)
{
	const struct pattern_set *set = atomic_load_explicit(&current, memory_order_acquire);
	if (!set)
		return true;
	uint32_t id = tl_tracer_function_intern(address);
	if (id >= TL_TRACER_FUNCTION_IDS)
		return set->ninclude == 0;
	uint32_t verdict = atomic_load_explicit(&verdicts[id], memory_order_relaxed);
	if (verdict >> 1 == set->generation)
		return verdict & 1;
	bool recorded;
	if (range_at(&set->files, (uintptr_t)address)) {
		const struct range *f = range_at(&set->functions, (uintptr_t)address);
		recorded = f ? f->recorded : set->ninclude == 0; /* no pattern matches it */
	} else {
		char buf[TL_TRACER_NAME_NOW_MAX];
		const char *name = tl_tracer_function_name_now(id, buf, sizeof buf);
		if (!name || name == buf)
			return set->ninclude == 0; /* no symbol yet: decided later */
		recorded = name_recorded(set, name);
	}
	atomic_store_explicit(&verdicts[id], set->generation << 1 | recorded, memory_order_relaxed);
	return recorded;
}

static TL_NO_INSTRUMENT void range_add(struct ranges *r, uint64_t start, uint64_t end,
                                       bool recorded)
{
	if (r->failed)
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct range *grown = realloc(r->at, cap * sizeof *grown);
		if (!grown) {
			r->failed = true;
			return;
		}
		r->at = grown;
		r->cap = cap;
	}
	r->at[r->n++] = (struct range){start, end, recorded};
}

static TL_NO_INSTRUMENT int by_start(const void *pa, const void *pb)
{
	const struct range *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* A file mapped, or a function symbol in it: its range kept when a
 * pattern matches it (a function no pattern matches gets the default). */
static TL_NO_INSTRUMENT void symbol_seen(const char *name, uint64_t start, uint64_t end, void *ctx)
{
	struct pattern_set *set = ctx;
	if (!name) {
		range_add(&set->files, start, end, false);
		return;
	}
	if (any_match(set->include, set->ninclude, name) ||
	    any_match(set->exclude, set->nexclude, name))
		range_add(&set->functions, start, end, name_recorded(set, name));
}

/* The set's ranges, from the symbol tables of the files mapped now; none
 * (every function then decided by its name) without elfutils or memory. */
static TL_NO_INSTRUMENT void ranges_read(struct pattern_set *set)
{
	if (tl_tracer_function_symbols(symbol_seen, set) != 0 || set->files.failed ||
	    set->functions.failed) {
		free(set->files.at);
		free(set->functions.at);
		set->files = (struct ranges){0};
		set->functions = (struct ranges){0};
		return;
	}
	if (set->files.n)
		qsort(set->files.at, set->files.n, sizeof *set->files.at, by_start);
	if (set->functions.n) /* none: no function matches a pattern */
		qsort(set->functions.at, set->functions.n, sizeof *set->functions.at, by_start);
}

/* The comma-separated patterns of text, blanks around each one removed,
 * empty ones left out, copied into a NULL-terminated list. */
static TL_NO_INSTRUMENT char **split(const char *text, size_t *count)
{
	*count = 0;
	size_t n = 1;
	for (const char *p = text; p && *p; p++)
		n += *p == ',';
	size_t bytes = text ? strlen(text) + 1 : 1;
	char **list = calloc(1, (n + 1) * sizeof *list + bytes);
	if (!list)
		return NULL;
	char *copy = (char *)(list + n + 1);
	if (!text)
		return list;
	memcpy(copy, text, bytes);
	for (char *item = copy, *next; item; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		while (*item == ' ' || *item == '\t')
			item++;
		size_t len = strlen(item);
		while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
			item[--len] = '\0';
		if (len)
			list[(*count)++] = item;
	}
	return list;
}

TL_NO_INSTRUMENT int tl_instrument_set_patterns(const char *include, const char *exclude)
{
	size_t ninclude, nexclude;
	char **in = split(include, &ninclude);
	char **out = split(exclude, &nexclude);
	struct pattern_set *set = calloc(1, sizeof *set);
	if (!in || !out || !set) {
		free(in);
		free(out);
		free(set);
		return -ENOMEM;
	}
	*set = (struct pattern_set){
	    .include = in, .exclude = out, .ninclude = ninclude, .nexclude = nexclude};
	bool any = ninclude || nexclude;
	if (any)
		ranges_read(set);
	int rc = any ? tl_tracer_function_names_start() : 0;
	pthread_mutex_lock(&setting);
	set->generation = ++last_generation;
	set->older = all_sets;
	all_sets = set;
	atomic_store_explicit(&current, any ? set : NULL, memory_order_release);
	tl_i_instrument_patterns_changed(any);
	pthread_mutex_unlock(&setting);
	return rc;
}
