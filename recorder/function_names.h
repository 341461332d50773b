/*
 * Function ids named in this process: the symbol of each interned address
 * (function_table.h), resolved once and kept for the life of the process,
 * for what writes names while the process runs (the systrace recorder, the
 * instrument tracer's name patterns, the looper's slow-dispatch trees).
 * Readers of snapshots name functions offline instead (symbolize.h).
 * Internal.
 *
 * Resolving reads /proc/self/maps and the mapped files' symbol tables
 * (symbolize.h): it allocates, takes a lock and opens files, so it never
 * runs on a path a signal handler may take. Those paths read what is
 * already resolved, lock-free, and hand the rest to a resolver thread
 * (tl_function_names_start), waking it with sem_post; a writer that needs
 * the name at once waits for it, bounded (tl_function_name_now).
 */
#ifndef TIMELINE_FUNCTION_NAMES_H
#define TIMELINE_FUNCTION_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/*
 * The name of function id `id` when it is resolved already, else NULL,
 * after asking the resolver thread to resolve it (when that runs). Any
 * thread; async-signal-safe, lock-free. The string lives as long as the
 * process.
 */
const char *tl_function_name_cached(uint32_t id);

/*
 * The name of function id `id`, resolved now when it was not: the symbol,
 * else `module+0xoffset`, else `0x` and the address; NULL for an id with
 * no address or without memory. Any thread, but not async-signal-safe
 * (lock, malloc, files). The string lives as long as the process.
 */
const char *tl_function_name_resolve(uint32_t id);

/*
 * The name of function id `id` for a writer that writes it at once (the
 * systrace recorder), from any thread, signal handlers included: the
 * resolved name when there is one; else, when the resolver thread runs,
 * the name it resolves within 200 ms (a call's first name of a file reads
 * the file: milliseconds; microseconds after); else, when the thread does
 * not run (a fork child) or the wait ran out (the thread stuck on a lock
 * the interrupted code holds: then no writer waits again until the thread
 * makes progress), `module+0xoffset` written into buf (size bytes,
 * NUL-terminated), as readers of snapshots name what has no symbol, or `0x`
 * and the address when no mapping of a file covers it. NULL for an id with
 * no address. The thread that calls it only posts a semaphore, sleeps,
 * reads atomics and /proc/self/maps: async-signal-safe, no lock, no
 * allocation.
 */
const char *tl_function_name_now(uint32_t id, char *buf, size_t size);

/*
 * Writes `module+0xoffset` for address into buf (size bytes,
 * NUL-terminated; the module's name cut to fit), read from
 * /proc/self/maps (open and read only), or `0x` and the address when no
 * executable mapping of a file covers it; returns the length, 0 when
 * size is under 19. Async-signal-safe; errno kept.
 */
size_t tl_function_name_in_module(uint64_t address, char *buf, size_t size);

/*
 * Calls fn(NULL, start, end, ctx) for each executable mapping of a file in
 * the process now, then fn(name, start, end, ctx) for each function symbol
 * in it (symbolize.h, tl_symbolizer_each_function: named as
 * tl_function_name_resolve names it). 0, or -ENOTSUP without elfutils (or
 * memory): fn is then not called. Not async-signal-safe (lock, malloc,
 * files); fn must not call into this file.
 */
typedef void tl_function_symbol_fn(const char *name, uint64_t start, uint64_t end, void *ctx);
int tl_function_symbols_each(tl_function_symbol_fn *fn, void *ctx);

/*
 * Starts the resolver thread, once per process (again in a fork child
 * that asks for names). 0 or -errno. Not async-signal-safe.
 */
int tl_function_names_start(void);

/* Waits until the resolver thread has nothing left to do, up to
 * timeout_ms; true when it has not. For tests. */
bool tl_function_names_settle(int timeout_ms);

#pragma GCC visibility pop

#endif /* TIMELINE_FUNCTION_NAMES_H */
