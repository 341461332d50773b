/*
 * Include and exclude patterns on function names (instrument_patterns.h,
 * tl_instrument_set_patterns, TIMELINE_INSTRUMENT_INCLUDE and
 * TIMELINE_INSTRUMENT_EXCLUDE).
 *
 * A pattern set is made once and never changed or freed (a hook on
 * another thread, or in a signal handler, may be reading it); setting new
 * patterns publishes a new set with the next generation. Each function id
 * has one verdict word, (generation << 1) | recorded, written on the first
 * call that finds the function's name resolved: from then on a call costs
 * one load and one compare. Names are resolved by the resolver thread
 * (tracer.h), started when patterns are set; until a
 * function's name is known its calls get the default verdict.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/instrument.h>

#include "recorder/tracer.h"
#include "tracers/instrument_patterns.h"


struct pattern_set {
	uint32_t generation;
	char **include, **exclude; /* NULL-terminated lists into storage */
	size_t ninclude, nexclude;
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
	const char *name = tl_tracer_function_name_cached(id);
	if (!name)
		return set->ninclude == 0;
	bool recorded = (set->ninclude == 0 || any_match(set->include, set->ninclude, name)) &&
	                !any_match(set->exclude, set->nexclude, name);
	atomic_store_explicit(&verdicts[id], set->generation << 1 | recorded, memory_order_relaxed);
	return recorded;
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
