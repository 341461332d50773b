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

/* Whether any pattern is set: one relaxed load, for the hooks' fast path. */
extern _Atomic bool tl_instrument_patterns_set;

/*
 * Whether the calls of the function at `address` are recorded under the
 * patterns: its verdict from the table; on the function's first call
 * under these patterns, its name matched when this process has resolved
 * it (function_names.h), else the default (recorded unless there are
 * include patterns) without keeping a verdict, so that a later call
 * decides once the name is known. Any thread; async-signal-safe,
 * lock-free, no allocation.
 */
bool tl_instrument_patterns_allow(const void *address);

/* Whether name matches the glob pattern (`*`, `?`, `[...]` with ranges
 * and `!`), whole. Async-signal-safe. */
bool tl_instrument_glob_match(const char *pattern, const char *name);

#pragma GCC visibility pop

#endif /* TIMELINE_INSTRUMENT_PATTERNS_H */
