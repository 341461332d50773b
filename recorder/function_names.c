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
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder/export/symbolize.h"
#include "recorder/format_int.h"
#include "recorder/function_table.h"
#include "recorder/tracer.h"

#define NAME_MAX_BYTES 512
/* How long tl_function_name_now waits for the resolver thread. */
#define NAME_WAIT_MS 200

_Static_assert(TL_TRACER_FUNCTION_IDS == TL_FUNCTION_TABLE_CAPACITY,
               "tracer.h says how many function ids there are");

static _Atomic(const char *) names[TL_FUNCTION_TABLE_CAPACITY];
static _Atomic uint8_t wanted[TL_FUNCTION_TABLE_CAPACITY];
static _Atomic uint32_t pending; /* ids wanted and not resolved yet */
static _Atomic bool running;     /* the resolver thread runs in this process */
static _Atomic uint64_t resolved; /* names the resolver thread made: its progress */
/* resolved + 1 when a writer's wait (tl_function_name_now) last ran out:
 * while the thread makes no progress no writer waits again; 0: none did */
static _Atomic uint64_t stalled_at;
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
			symbolizer = tl_symbolizer_new(NULL);
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

/* Reads a hexadecimal number at *p (before end), moving *p past it. */
static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;
	for (; *p < end; (*p)++) {
		char c = **p;
		unsigned digit = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
		                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
		                                        : 16u;
		if (digit == 16)
			break;
		v = v << 4 | digit;
	}
	return v;
}

/* Moves *p past the next field of a maps line and the blanks after it. */
static void skip_field(const char **p, const char *end)
{
	while (*p < end && **p != ' ')
		(*p)++;
	while (*p < end && **p == ' ')
		(*p)++;
}

/* When the line [line, end) of /proc/self/maps is an executable mapping
 * of a file that covers address, writes `module+0xoffset` into buf
 * (size bytes, NUL-terminated, the module's name cut to fit) and returns
 * its length; else 0. */
static size_t maps_line_name(const char *line, const char *end, uint64_t address, char *buf,
                             size_t size)
{
	const char *p = line;
	uint64_t start = parse_hex(&p, end);
	if (p == end || *p++ != '-')
		return 0;
	uint64_t stop = parse_hex(&p, end);
	if (end - p < 6 || p[0] != ' ' || p[3] != 'x')
		return 0;
	p += 6; /* " rwxp " */
	uint64_t offset = parse_hex(&p, end);
	skip_field(&p, end); /* the offset's end */
	skip_field(&p, end); /* device */
	skip_field(&p, end); /* inode */
	if (address < start || address >= stop || p == end || *p != '/')
		return 0;
	const char *base = p;
	for (const char *q = p; q < end; q++)
		if (*q == '/')
			base = q + 1;
	char hex[20];
	size_t hex_len = tl_format_hex(hex, address - start + offset);
	if (size < hex_len + 2)
		return 0;
	size_t base_len = (size_t)(end - base);
	if (base_len > size - hex_len - 2)
		base_len = size - hex_len - 2;
	memcpy(buf, base, base_len);
	buf[base_len] = '+';
	memcpy(buf + base_len + 1, hex, hex_len);
	buf[base_len + 1 + hex_len] = '\0';
	return base_len + 1 + hex_len;
}

size_t tl_function_name_in_module(uint64_t address, char *buf, size_t size)
{
	int saved_errno = errno;
	size_t len = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char chunk[1024]; /* small: this may run on a signal handler's stack */
		size_t have = 0;
		for (;;) {
			ssize_t n = read(fd, chunk + have, sizeof chunk - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			have += (size_t)n;
			const char *line = chunk, *nl;
			while (!len && (nl = memchr(line, '\n', (size_t)(chunk + have - line)))) {
				len = maps_line_name(line, nl, address, buf, size);
				line = nl + 1;
			}
			if (len)
				break;
			have = (size_t)(chunk + have - line);
			memmove(chunk, line, have);
			if (have == sizeof chunk)
				have = 0; /* a line longer than the buffer: left out */
		}
		close(fd);
	}
	if (!len && size >= 19) {
		len = tl_format_hex(buf, address);
		buf[len] = '\0';
	}
	errno = saved_errno;
	return len;
}

const char *tl_function_name_now(uint32_t id, char *buf, size_t size)
{
	const char *name = tl_function_name_cached(id); /* asks the resolver thread */
	if (name)
		return name;
	uint64_t address = tl_function_address(id);
	if (!address)
		return NULL;
	uint64_t progress = atomic_load_explicit(&resolved, memory_order_acquire);
	if (atomic_load_explicit(&running, memory_order_acquire) &&
	    atomic_load_explicit(&stalled_at, memory_order_relaxed) != progress + 1) {
		int saved_errno = errno; /* nanosleep's EINTR */
		struct timespec now, until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += NAME_WAIT_MS % 1000 * 1000000L;
		until.tv_sec += NAME_WAIT_MS / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		do {
			nanosleep(&(struct timespec){0, 20 * 1000}, NULL);
			name = atomic_load_explicit(&names[id], memory_order_acquire);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (!name && (now.tv_sec < until.tv_sec ||
		                   (now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec)));
		errno = saved_errno;
		if (name)
			return name;
		progress = atomic_load_explicit(&resolved, memory_order_acquire);
		atomic_store_explicit(&stalled_at, progress + 1, memory_order_relaxed);
	}
	return tl_function_name_in_module(address, buf, size) ? buf : NULL;
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
			atomic_fetch_add_explicit(&resolved, 1, memory_order_release);
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

int tl_function_symbols_each(tl_function_symbol_fn *fn, void *ctx)
{
	pthread_mutex_lock(&lock);
	if (!symbolizer)
		symbolizer = tl_symbolizer_new(NULL);
	int rc = -ENOTSUP;
	if (symbolizer) {
		rc = 0;
		maps_read();
		for (size_t i = 0; i < nmaps; i++) {
			fn(NULL, maps[i].start, maps[i].end, ctx);
			tl_symbolizer_each_function(symbolizer, &maps[i], fn, ctx);
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int tl_tracer_function_symbols(tl_tracer_symbol_fn *fn, void *ctx)
{
	return tl_function_symbols_each(fn, ctx);
}

const char *tl_tracer_function_name_now(uint32_t id, char *buf, size_t size)
{
	return tl_function_name_now(id, buf, size);
}

const char *tl_tracer_function_name(uint32_t id)
{
	return tl_function_name_resolve(id);
}

int tl_tracer_function_names_start(void)
{
	return tl_function_names_start();
}
