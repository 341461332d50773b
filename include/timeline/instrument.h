/*
 * Function instrumentation: every call of code built with gcc's or clang's
 * -finstrument-functions, recorded as a slice. Link the small library
 * timeline::instrument (pkg-config: timeline-instrument), which holds the
 * hooks __cyg_profile_func_enter and __cyg_profile_func_exit, build the
 * code to trace with -finstrument-functions and call tl_init(): nothing
 * else to write. Guide: docs/instrument.md.
 *
 * Each call is a function record (16 bytes: the time and the function's
 * address, interned) and a plain END (16 bytes) in the calling thread's
 * block, in the category "function", between the thread's other events.
 * Snapshots carry the process's executable mappings: readers name a call
 * after its symbol in the ELF symbol tables, demangled, or `module+0xoffset`
 * when the file has none (docs/instrument.md, "Names").
 *
 * The hooks record nothing before tl_init() or after tl_shutdown(), nor
 * while the "function" category is disabled. A call made inside a hook or
 * an emit of the library (a signal handler that interrupts it) is dropped
 * and counted; each thread
 * matches exits against a shadow stack of its calls, so longjmp, C++
 * exceptions and thread exit leave no slice open (what was skipped is
 * closed and counted).
 *
 * Environment, read when the hooks' library loads: TIMELINE_INSTRUMENT=0
 * turns recording off (tl_instrument_enable turns it back on);
 * TIMELINE_INSTRUMENT_MIN_NS, a minimum duration; TIMELINE_INSTRUMENT_MAX_DEPTH,
 * a maximum depth; TIMELINE_INSTRUMENT_INCLUDE and TIMELINE_INSTRUMENT_EXCLUDE,
 * name patterns (tl_instrument_set_patterns).
 */
#ifndef TIMELINE_INSTRUMENT_H
#define TIMELINE_INSTRUMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shadow stack's depth per thread: calls deeper than this are not
 * recorded (counted in too_deep). */
#define TL_INSTRUMENT_STACK_MAX 512

/* Turns recording of calls on or off, for every thread, from the next call
 * on; calls in progress keep their slices balanced. Any thread;
 * async-signal-safe. */
TL_API void tl_instrument_enable(bool enabled);

/* Whether calls are recorded (tl_instrument_enable, TIMELINE_INSTRUMENT). */
TL_API bool tl_instrument_enabled(void);

/*
 * A call shorter than ns nanoseconds leaves no record: its exit takes back
 * its entry while that is still the thread's last record (a call with a
 * recorded callee, or any other event of its thread inside it, stays). 0,
 * the default, records every call. Any thread; from the next call on.
 */
TL_API void tl_instrument_set_min_duration_ns(uint64_t ns);

/*
 * Records calls at depth below max_depth only (depth 0: the outermost
 * instrumented call of a thread); deeper calls are counted in too_deep.
 * 0 means TL_INSTRUMENT_STACK_MAX, the default. Any thread.
 */
TL_API void tl_instrument_set_max_depth(unsigned max_depth);

/*
 * Records only the calls of functions whose name matches one of the
 * include patterns (when there is one) and none of the exclude patterns.
 * Each argument is a comma-separated list of globs (`*`, `?`, `[a-z]`,
 * `[!x]`) matched against the whole name as the trace shows it (C++ names
 * demangled, with their parameters: `ns::parse*`); NULL or "" for none.
 * Both empty: every call is recorded again.
 *
 * The patterns are resolved here to the address ranges of the functions
 * they match, from the symbol tables of every file mapped now, so that a
 * function's first call is decided too. A function of a library loaded
 * later is decided by its name on its first call, which waits (at most
 * 200 ms) for a thread of the library, started here, to resolve it.
 * Excluded calls are counted in `excluded`. Any thread; not
 * async-signal-safe; reads every mapped file. Returns 0, -ENOMEM, or
 * -errno when the thread could not be started (the patterns are set;
 * functions of later libraries then follow the default: recorded when
 * there is no include pattern, left out otherwise).
 */
TL_API int tl_instrument_set_patterns(const char *include, const char *exclude);

typedef struct tl_instrument_stats {
	size_t struct_size;         /* set by the caller: sizeof(tl_instrument_stats) */
	uint64_t filtered;          /* calls shorter than the minimum duration, taken back */
	uint64_t too_deep;          /* calls beyond the maximum depth, not recorded */
	uint64_t reentered;         /* hook calls inside a hook or an emit (signal
	                               handlers), dropped */
	uint64_t frames_closed;     /* calls closed for their caller's exit (longjmp,
	                               exceptions) or at their thread's exit */
	uint64_t exits_unmatched;   /* exits of calls the shadow stack does not hold */
	uint64_t functions_unnamed; /* calls not recorded: the function table was full */
	uint64_t threads_failed;    /* threads with no shadow stack (mmap failed) */
	uint64_t excluded;          /* calls left out by the name patterns */
	uint64_t after_exit;        /* hook calls on a thread that has exited (a later
	                               TLS destructor, a signal during the exit),
	                               dropped, enter and exit alike */
} tl_instrument_stats;

/* Fills *out with the counters since the process started. Returns 0, or
 * -EINVAL for NULL or a struct_size too small. Any thread;
 * async-signal-safe. */
TL_API int tl_instrument_stats_get(tl_instrument_stats *out);

/* The hooks' entry points (timeline::instrument calls them): the ABI, not
 * the API. */
TL_API void tl_i_instrument_setup(void);
TL_API void tl_i_instrument_enter(void *function, void *call_site);
TL_API void tl_i_instrument_exit(void *function, void *call_site);

#ifdef __cplusplus
}
#endif

#endif /* TIMELINE_INSTRUMENT_H */
