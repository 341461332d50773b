/*
 * UTF-8 well-formedness, one character at a time (utf8.h). Async-signal-safe:
 * no library call.
 */
#include "recorder/utf8.h"

#include <stdint.h>

size_t tl_utf8_char_len(const unsigned char *s, size_t avail)
{
	if (avail == 0)
		return 0;
	unsigned c = s[0];
	if (c < 0x80)
		return 1;

	size_t len;
	uint32_t cp;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0; /* continuation byte, overlong lead (c0, c1) or beyond f4 */
	}
	if (avail < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
		return 0;
	if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
		return 0;
	return len;
}
