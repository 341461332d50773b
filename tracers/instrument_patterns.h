/*
 * The instrument tracer's name patterns (tl_instrument_set_patterns): which
 * functions' calls are recorded, decided once per function (per interned
 * address) and kept in a table by function id. Internal.
 */
#ifndef TIMELINE_INSTRUMENT_PATTERNS_H
#define TIMELINE_INSTRUMENT_PATTERNS_H

#include <stdatomic.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)

/*
 * Whether the calls of the function at `address` are recorded under the
 * patterns: its verdict from the table; on the function's first call
 * under these patterns, from the address ranges read when they were set,
 * or for a function outside the files read then, its name, waited for
 * from the resolver thread (at most 200 ms); without a name, the default
 * (recorded unless there are include patterns) without keeping a verdict,
 * so that a later call decides. Any thread; async-signal-safe, lock-free,
 * no allocation.
 */
bool tl_instrument_patterns_allow(const void *address);

/* Tells the hooks (instrument.c) whether any pattern is set: while one
 * is, their fast path leaves every decision to their slow path. */
void tl_i_instrument_patterns_changed(bool any);

/* Whether name matches the glob pattern (`*`, `?`, `[...]` with ranges
 * and `!`), whole. Async-signal-safe. */
bool tl_instrument_glob_match(const char *pattern, const char *name);

#pragma GCC visibility pop

#endif /* TIMELINE_INSTRUMENT_PATTERNS_H */
