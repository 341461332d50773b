/*
 * Decimal numbers for the tracers' own strings (frame slice names, dump
 * file names), without the printf family: no locale, no allocation,
 * async-signal-safe. Not installed.
 */
#ifndef TIMELINE_TRACERS_DECIMAL_H
#define TIMELINE_TRACERS_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* Writes v in decimal at out (no terminator, at most 20 bytes); returns
 * the number of digits. */
static inline size_t tracer_decimal_u64(char *out, uint64_t v)
{
	size_t digits = 1;
	for (uint64_t rest = v / 10; rest; rest /= 10)
		digits++;
	for (size_t i = digits; i-- > 0; v /= 10)
		out[i] = (char)('0' + v % 10);
	return digits;
}

#endif /* TIMELINE_TRACERS_DECIMAL_H */
