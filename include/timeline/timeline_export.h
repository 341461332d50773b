/* The one export macro: the library is built with -fvisibility=hidden and
 * only TL_API symbols (listed in the linker version script) are public. */
#ifndef TIMELINE_TIMELINE_EXPORT_H
#define TIMELINE_TIMELINE_EXPORT_H

#if defined(TIMELINE_BUILDING_LIBRARY)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

/*
 * Never instrumented: the inline functions of the headers (and the
 * library's own hooks) carry it, so that a program built with gcc's or
 * clang's -finstrument-functions, whose own __cyg_profile_func_enter calls
 * the API, does not call its hook again from inside the API's inline
 * functions (both compilers instrument a function inlined into another).
 */
#if defined(__GNUC__) || defined(__clang__)
#define TL_NO_INSTRUMENT __attribute__((no_instrument_function))
#else
#define TL_NO_INSTRUMENT
#endif

#endif /* TIMELINE_TIMELINE_EXPORT_H */
