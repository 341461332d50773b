#include "recorder/format_int.h"

size_t tl_format_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

size_t tl_format_i64(char *out, int64_t v)
{
	if (v < 0) {
		out[0] = '-';
		return 1 + tl_format_u64(out + 1, 0 - (uint64_t)v);
	}
	return tl_format_u64(out, (uint64_t)v);
}

size_t tl_format_hex(char *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	out[0] = '0';
	out[1] = 'x';
	for (size_t i = 0; i < n; i++)
		out[2 + i] = tmp[n - 1 - i];
	return 2 + n;
}
