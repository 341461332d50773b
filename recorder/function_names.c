/*
 * Function ids named in this process (function_names.h).
 *
 * One name per function-table entry, published with a release store and
 * never changed: an address keeps its id, and its name, for the life of
 * the process (a library unloaded and another loaded at the same address
 * keeps the first one's names). The mappings come from /proc/self/maps,
 * read again when an address falls outside the ones read before (a
 * library loaded since, with dlopen); the mapped files are not checked
 * against a build-id, as they are the ones the process runs.
 */
#include "recorder/function_names.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recorder/export/symbolize.h"
#include "recorder/function_table.h"
#include "recorder/tracer.h"

#define NAME_MAX_BYTES 512

_Static_assert(TL_TRACER_FUNCTION_IDS == TL_FUNCTION_TABLE_CAPACITY,
               "tracer.h says how many function ids there are");

static _Atomic(const char *) names[TL_FUNCTION_TABLE_CAPACITY];
static _Atomic uint8_t wanted[TL_FUNCTION_TABLE_CAPACITY];
static _Atomic uint32_t pending; /* ids wanted and not resolved yet */
static _Atomic bool running;     /* the resolver thread runs in this process */
static sem_t wake;

/* What resolving needs, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tl_symbolizer *symbolizer;
static tl_mapping *maps;
static size_t nmaps;

static void maps_free(void)
{
	for (size_t i = 0; i < nmaps; i++)
		free((char *)maps[i].path);
	free(maps);
	maps = NULL;
	nmaps = 0;
}

/* Reads the executable mappings of /proc/self/maps again. */
static void maps_read(void)
{
	maps_free();
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0, maps_cap = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, end, offset;
		char perms[5];
		int path_at = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &start, &end, perms, &offset,
		           &path_at) < 4 ||
		    perms[2] != 'x' || !path_at || line[path_at] != '/')
			continue;
		char *path = line + path_at;
		path[strcspn(path, "\n")] = '\0';
		if (nmaps == maps_cap) {
			size_t grown_cap = maps_cap ? 2 * maps_cap : 32;
			tl_mapping *grown = realloc(maps, grown_cap * sizeof *grown);
			if (!grown)
				break;
			maps = grown;
			maps_cap = grown_cap;
		}
		char *copy = strdup(path);
		if (!copy)
			break;
		maps[nmaps++] = (tl_mapping){.start = start,
		                             .end = end,
		                             .offset = offset,
		                             .path = copy,
		                             .path_len = strlen(copy)};
	}
	free(line);
	fclose(f);
}

static bool maps_cover(uint64_t address)
{
	for (size_t i = 0; i < nmaps; i++)
		if (address >= maps[i].start && address < maps[i].end)
			return true;
	return false;
}

uint32_t tl_tracer_function_intern(const void *address)
{
	return tl_function_intern((uintptr_t)address);
}

const char *tl_function_name_resolve(uint32_t id)
{
	if (id >= TL_FUNCTION_TABLE_CAPACITY)
		return NULL;
	const char *name = atomic_load_explicit(&names[id], memory_order_acquire);
	if (name)
		return name;
	uint64_t address = tl_function_address(id);
	if (!address)
		return NULL;
	pthread_mutex_lock(&lock);
	name = atomic_load_explicit(&names[id], memory_order_acquire);
	if (!name) {
		if (!symbolizer)
			symbolizer = tl_symbolizer_new();
		if (!maps_cover(address))
			maps_read();
		char buf[NAME_MAX_BYTES];
		size_t len = tl_function_name(symbolizer, maps, nmaps, address, buf, sizeof buf);
		char *copy = strndup(buf, len);
		if (copy) {
			atomic_store_explicit(&names[id], copy, memory_order_release);
			name = copy;
		}
	}
	pthread_mutex_unlock(&lock);
	return name;
}

const char *tl_function_name_cached(uint32_t id)
{
	if (id >= TL_FUNCTION_TABLE_CAPACITY)
		return NULL;
	const char *name = atomic_load_explicit(&names[id], memory_order_acquire);
	if (name || !atomic_load_explicit(&running, memory_order_acquire))
		return name;
	if (!atomic_exchange_explicit(&wanted[id], 1, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&pending, 1, memory_order_release);
		sem_post(&wake); /* async-signal-safe */
	}
	return NULL;
}

static void *resolver_main(void *arg)
{
	(void)arg;
	for (;;) {
		while (sem_wait(&wake) != 0 && errno == EINTR)
			;
		while (sem_trywait(&wake) == 0)
			; /* one pass serves every post so far */
		for (uint32_t id = 0; id < TL_FUNCTION_TABLE_CAPACITY; id++) {
			if (!atomic_load_explicit(&wanted[id], memory_order_relaxed))
				continue;
			tl_function_name_resolve(id);
			atomic_store_explicit(&wanted[id], 0, memory_order_relaxed);
			atomic_fetch_sub_explicit(&pending, 1, memory_order_release);
		}
	}
	return NULL;
}

/* A fork child has no resolver thread: it stops asking for one, until
 * tl_function_names_start; the names resolved before the fork stay. */
static void after_fork_child(void)
{
	atomic_store_explicit(&running, false, memory_order_relaxed);
	for (uint32_t id = 0; id < TL_FUNCTION_TABLE_CAPACITY; id++)
		atomic_store_explicit(&wanted[id], 0, memory_order_relaxed);
	atomic_store_explicit(&pending, 0, memory_order_relaxed);
	pthread_mutex_init(&lock, NULL);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

int tl_function_names_start(void)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&lock);
	int rc = 0;
	if (!atomic_load_explicit(&running, memory_order_relaxed)) {
		pthread_attr_t attr;
		pthread_t thread;
		if (sem_init(&wake, 0, 0) != 0) {
			rc = -errno;
		} else if ((rc = -pthread_attr_init(&attr)) == 0) {
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			rc = -pthread_create(&thread, &attr, resolver_main, NULL);
			pthread_attr_destroy(&attr);
			if (rc == 0) {
				pthread_setname_np(thread, "tl-names");
				atomic_store_explicit(&running, true, memory_order_release);
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

bool tl_function_names_settle(int timeout_ms)
{
	for (int waited = 0;; waited++) {
		if (atomic_load_explicit(&pending, memory_order_acquire) == 0)
			return true;
		if (waited >= timeout_ms)
			return false;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

const char *tl_tracer_function_name_cached(uint32_t id)
{
	return tl_function_name_cached(id);
}

const char *tl_tracer_function_name(uint32_t id)
{
	return tl_function_name_resolve(id);
}

int tl_tracer_function_names_start(void)
{
	return tl_function_names_start();
}
