/*
 * Categories: registered at runtime by name, enabled by a filter of globs.
 * A category's `enabled` byte is what the macros read; it is on only while
 * a session runs and the filter allows the category.
 *
 * Filter syntax (TIMELINE_CATEGORIES, tl_options.categories,
 * tl_category_set_filter): comma-separated globs applied in order, "-glob"
 * disables. When the filter has no positive item, categories start enabled
 * (except "disabled-by-default-*"); otherwise they start disabled.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/trace_event.h>

#include "recorder/internal.h"

#define FILTER_MAX 4096

static tl_category categories[TL_MAX_CATEGORIES];
static _Atomic uint32_t ncategories;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char filter[FILTER_MAX]; /* under lock; "" = default */
static bool allowed[TL_MAX_CATEGORIES];
static bool running;
_Atomic uint64_t tl_category_overflows;

static const char *default_off_prefix = "disabled-by-default-";

static void set_enabled(uint32_t i)
{
	__atomic_store_n(&categories[i].enabled, (unsigned char)(running && allowed[i]),
			 __ATOMIC_RELAXED);
}

/* Applies one glob item to a name; returns 1 (on), 0 (off) or -1 (no match). */
static int apply_item(const char *item, size_t len, const char *name)
{
	char pattern[256];
	int negate = 0;
	if (len && item[0] == '-') {
		negate = 1;
		item++;
		len--;
	}
	while (len && (*item == ' ' || *item == '\t')) {
		item++;
		len--;
	}
	while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
		len--;
	if (len == 0 || len >= sizeof pattern)
		return -1;
	memcpy(pattern, item, len);
	pattern[len] = '\0';
	if (fnmatch(pattern, name, 0) != 0)
		return -1;
	return !negate;
}

static bool filter_allows(const char *spec, const char *name)
{
	bool positive = false;
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		size_t skip = 0;
		while (skip < len && (p[skip] == ' ' || p[skip] == '\t'))
			skip++;
		if (skip < len && p[skip] != '-')
			positive = true;
		p += len + (end ? 1 : 0);
	}
	bool on = !positive && strncmp(name, default_off_prefix, strlen(default_off_prefix)) != 0;
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int r = apply_item(p, len, name);
		if (r >= 0)
			on = r;
		p += len + (end ? 1 : 0);
	}
	return on;
}

static void recompute_locked(void)
{
	uint32_t n = atomic_load(&ncategories);
	for (uint32_t i = 0; i < n; i++) {
		allowed[i] = filter_allows(filter, categories[i].name);
		set_enabled(i);
	}
}

static uint32_t register_locked(const char *name)
{
	uint32_t n = atomic_load(&ncategories);
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(categories[i].name, name) == 0)
			return i;
	if (n == TL_MAX_CATEGORIES) {
		atomic_fetch_add(&tl_category_overflows, 1);
		return 0;
	}
	char *copy = strdup(name);
	if (!copy) {
		atomic_fetch_add(&tl_category_overflows, 1);
		return 0;
	}
	categories[n].name = copy; /* never freed: handles live forever */
	categories[n].index = (uint16_t)n;
	allowed[n] = filter_allows(filter, copy);
	atomic_store_explicit(&ncategories, n + 1, memory_order_release);
	set_enabled(n);
	return n;
}

static void ensure_overflow_category(void)
{
	if (atomic_load(&ncategories) == 0)
		register_locked("overflow");
}

tl_category *tl_category_get(const char *name)
{
	if (!name || !*name)
		name = "default";
	pthread_mutex_lock(&lock);
	ensure_overflow_category();
	uint32_t i = register_locked(name);
	pthread_mutex_unlock(&lock);
	return &categories[i];
}

tl_category *tl_i_category_resolve(tl_category **cache, const char *name)
{
	tl_category *cat = tl_category_get(name);
	__atomic_store_n(cache, cat, __ATOMIC_RELAXED);
	return cat;
}

static int append_item(const char *item)
{
	size_t used = strlen(filter), len = strlen(item);
	if (used + len + 2 > FILTER_MAX)
		return -ENOSPC;
	if (used)
		filter[used++] = ',';
	memcpy(filter + used, item, len + 1);
	return 0;
}

static int change(const char *pattern, bool enable)
{
	if (!pattern || !*pattern || strchr(pattern, ',') || pattern[0] == '-')
		return -EINVAL;
	char item[260];
	if (strlen(pattern) > 250)
		return -EINVAL;
	item[0] = '-';
	strcpy(item + 1, pattern);
	pthread_mutex_lock(&lock);
	ensure_overflow_category();
	int rc = append_item(enable ? item + 1 : item);
	int matched = 0;
	if (rc == 0) {
		recompute_locked();
		uint32_t n = atomic_load(&ncategories);
		for (uint32_t i = 0; i < n; i++)
			matched += fnmatch(pattern, categories[i].name, 0) == 0;
	}
	pthread_mutex_unlock(&lock);
	return rc ? rc : matched;
}

int tl_category_enable(const char *pattern)
{
	return change(pattern, true);
}

int tl_category_disable(const char *pattern)
{
	return change(pattern, false);
}

int tl_category_set_filter(const char *spec)
{
	if (!spec || strlen(spec) >= FILTER_MAX)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	ensure_overflow_category();
	if (*spec == '\0')
		strcpy(filter, "-*");
	else
		strcpy(filter, spec);
	recompute_locked();
	pthread_mutex_unlock(&lock);
	return 0;
}

void tl_categories_set_running(bool on)
{
	pthread_mutex_lock(&lock);
	ensure_overflow_category();
	running = on;
	uint32_t n = atomic_load(&ncategories);
	for (uint32_t i = 0; i < n; i++)
		set_enabled(i);
	pthread_mutex_unlock(&lock);
}

uint32_t tl_category_count(void)
{
	return atomic_load_explicit(&ncategories, memory_order_acquire);
}

const char *tl_category_name(uint32_t index)
{
	if (index >= tl_category_count())
		return NULL;
	return categories[index].name;
}

void tl_categories_lock(void)
{
	pthread_mutex_lock(&lock);
}

void tl_categories_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void tl_categories_after_fork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}
