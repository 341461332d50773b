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
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/trace_event.h>

#include "recorder/categories.h"
#include "recorder/log.h"

#define FILTER_MAX 4096
#define PATTERN_MAX 256
#define OVERRIDES_MAX 64

static tl_category categories[TL_MAX_CATEGORIES];
static _Atomic uint32_t ncategories;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char filter[FILTER_MAX]; /* under lock; "" = the default */
/* tl_category_enable/disable calls since the filter was last set, applied
 * after it in order; one entry per pattern (the latest call wins). */
static struct {
	char pattern[PATTERN_MAX];
	bool enable;
} overrides[OVERRIDES_MAX];
static size_t noverrides;
static bool allowed[TL_MAX_CATEGORIES];
static bool running;
static bool overflow_logged;
static bool overflow_pending; /* logged once the lock is released */

static const char *default_off_prefix = "disabled-by-default-";

/* Set while this thread holds the lock: a signal handler's call site that
 * meets an unregistered category then does not wait for its own thread. */
static __thread volatile sig_atomic_t lock_held;
/* A call site's handle while its category cannot be registered (a handler
 * interrupted its thread inside the lock): off, and not cached. */
static tl_category unresolved = {.enabled = 0, .index = 0, .name = "unresolved"};
static _Atomic uint64_t unresolved_dropped;

static void cat_lock(void)
{
	lock_held = 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(&lock);
}

static void cat_unlock(void)
{
	pthread_mutex_unlock(&lock);
	atomic_signal_fence(memory_order_seq_cst);
	lock_held = 0;
}

static void set_enabled(uint32_t i)
{
	__atomic_store_n(&categories[i].enabled, (unsigned char)(running && allowed[i]),
			 __ATOMIC_RELAXED);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* One comma-separated item, trimmed, with its leading '-' split off.
 * Returns 0, or -1 for an empty or over-long item. */
static int parse_item(const char *item, size_t len, char pattern[PATTERN_MAX], bool *negate)
{
	while (len && is_blank(*item)) {
		item++;
		len--;
	}
	*negate = len && item[0] == '-';
	if (*negate) {
		item++;
		len--;
	}
	while (len && is_blank(*item)) {
		item++;
		len--;
	}
	while (len && is_blank(item[len - 1]))
		len--;
	if (len == 0 || len >= PATTERN_MAX)
		return -1;
	memcpy(pattern, item, len);
	pattern[len] = '\0';
	return 0;
}

static bool filter_allows(const char *spec, const char *name)
{
	char pattern[PATTERN_MAX];
	bool negate, positive = false;
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (parse_item(p, len, pattern, &negate) == 0 && !negate)
			positive = true;
		p += len + (end ? 1 : 0);
	}
	bool on = !positive && strncmp(name, default_off_prefix, strlen(default_off_prefix)) != 0;
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (parse_item(p, len, pattern, &negate) == 0 && fnmatch(pattern, name, 0) == 0)
			on = !negate;
		p += len + (end ? 1 : 0);
	}
	for (size_t i = 0; i < noverrides; i++)
		if (fnmatch(overrides[i].pattern, name, 0) == 0)
			on = overrides[i].enable;
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
	char *copy = n < TL_MAX_CATEGORIES ? strdup(name) : NULL;
	if (!copy) {
		overflow_pending = !overflow_logged;
		overflow_logged = true;
		return 0;
	}
	categories[n].name = copy; /* never freed: handles live forever */
	categories[n].index = (uint16_t)n;
	allowed[n] = filter_allows(filter, copy);
	/* whole, enabled flag included, before a lock-free find() can see it:
	 * a thread that found it in between would skip its events as off */
	set_enabled(n);
	atomic_store_explicit(&ncategories, n + 1, memory_order_release);
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
	cat_lock();
	ensure_overflow_category();
	uint32_t i = register_locked(name);
	bool log_overflow = overflow_pending;
	overflow_pending = false;
	cat_unlock();
	if (log_overflow)
		tl_log(TL_LOG_WARNING, "category table full (%d): '%s' and later ones share 'overflow'",
		       TL_MAX_CATEGORIES, name);
	return &categories[i];
}

/* A registered category by name, without the lock; NULL when not found. */
static tl_category *find(const char *name)
{
	uint32_t n = atomic_load_explicit(&ncategories, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(categories[i].name, name) == 0)
			return &categories[i];
	return NULL;
}

/*
 * A call site's first run. The category is looked up without the lock;
 * registering a new one takes it, unless a signal handler interrupted its
 * own thread inside it: that call's event is then dropped and counted,
 * and the next run of the call site tries again.
 */
tl_category *tl_i_category_resolve(tl_category **cache, const char *name)
{
	tl_category *cat = find(name && *name ? name : "default");
	if (!cat && lock_held) {
		atomic_fetch_add_explicit(&unresolved_dropped, 1, memory_order_relaxed);
		return &unresolved;
	}
	if (!cat)
		cat = tl_category_get(name);
	__atomic_store_n(cache, cat, __ATOMIC_RELEASE);
	return cat;
}

uint64_t tl_categories_dropped(void)
{
	return atomic_load_explicit(&unresolved_dropped, memory_order_relaxed);
}

static int change(const char *pattern, bool enable)
{
	char item[PATTERN_MAX];
	bool negate;
	if (!pattern || strchr(pattern, ',') ||
	    parse_item(pattern, strlen(pattern), item, &negate) != 0 || negate)
		return -EINVAL;
	cat_lock();
	ensure_overflow_category();
	size_t at = 0;
	while (at < noverrides && strcmp(overrides[at].pattern, item) != 0)
		at++;
	if (at == noverrides && noverrides == OVERRIDES_MAX) {
		cat_unlock();
		return -ENOSPC;
	}
	/* the latest call for a pattern goes last */
	if (at < noverrides) {
		memmove(&overrides[at], &overrides[at + 1], (noverrides - at - 1) * sizeof overrides[0]);
		noverrides--;
	}
	strcpy(overrides[noverrides].pattern, item);
	overrides[noverrides].enable = enable;
	noverrides++;
	recompute_locked();
	int matched = 0;
	uint32_t n = atomic_load(&ncategories);
	for (uint32_t i = 0; i < n; i++)
		matched += fnmatch(item, categories[i].name, 0) == 0;
	cat_unlock();
	return matched;
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
	cat_lock();
	ensure_overflow_category();
	if (*spec == '\0')
		strcpy(filter, "-*");
	else
		strcpy(filter, spec);
	noverrides = 0;
	recompute_locked();
	cat_unlock();
	return 0;
}

void tl_categories_set_running(bool on)
{
	cat_lock();
	ensure_overflow_category();
	running = on;
	if (on)
		atomic_store(&unresolved_dropped, 0); /* a new session's count */
	uint32_t n = atomic_load(&ncategories);
	for (uint32_t i = 0; i < n; i++)
		set_enabled(i);
	cat_unlock();
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
	cat_lock();
}

void tl_categories_unlock(void)
{
	cat_unlock();
}
