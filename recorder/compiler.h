/*
 * Compiler helpers of the core: branch hints and the cache line size.
 * Internal.
 */
#ifndef TIMELINE_COMPILER_H
#define TIMELINE_COMPILER_H


#pragma GCC visibility push(hidden)

#define TL_LIKELY(x) __builtin_expect(!!(x), 1)
#define TL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TL_CACHELINE 64

#pragma GCC visibility pop

#endif /* TIMELINE_COMPILER_H */
