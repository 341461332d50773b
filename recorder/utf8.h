/*
 * UTF-8 well-formedness, shared by every writer that cleans or escapes a
 * name (the atrace writer, the JSON and ftrace exporters, the capture CLI).
 * Internal.
 */
#ifndef TIMELINE_UTF8_H
#define TIMELINE_UTF8_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/*
 * Length (1 to 4) of the well-formed UTF-8 character at s[0..avail), or 0
 * when the bytes there are not one (stray continuation byte, overlong form,
 * surrogate, beyond U+10FFFF, cut short). Async-signal-safe.
 */
size_t tl_utf8_char_len(const unsigned char *s, size_t avail);

#pragma GCC visibility pop

#endif /* TIMELINE_UTF8_H */
