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
