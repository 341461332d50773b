/*
 * Integer formatting (decimal, hexadecimal) without the printf family: no locale, no
 * allocation, async-signal-safe. For the signal-safe snapshot path, the
 * systrace recorder's payloads and the dump-signal file names. Internal.
 */
#ifndef TIMELINE_FORMAT_INT_H
#define TIMELINE_FORMAT_INT_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Writes v in decimal at out (no terminator, at most 20 bytes); returns
 * the length. */
size_t tl_format_u64(char *out, uint64_t v);

/* The same for a signed value (at most 20 bytes with the '-'). */
size_t tl_format_i64(char *out, int64_t v);

/* Writes "0x" and v in lower-case hexadecimal, no leading zeros (at most
 * 18 bytes); returns the length. */
size_t tl_format_hex(char *out, uint64_t v);

#pragma GCC visibility pop

#endif /* TIMELINE_FORMAT_INT_H */
