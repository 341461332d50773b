/*
 * Formatting of atrace payloads (layout in atrace_format.h). Its own
 * integer formatting and byte copies: no printf family, no allocation, so
 * the systrace recorder can call it on the hot path and from signal
 * handlers.
 */
#include "recorder/atrace_format.h"
#include "recorder/format_int.h"

#include <stdbool.h>

size_t tl_atrace_format_i64(char *out, int64_t v)
{
	return tl_format_i64(out, v);
}

int tl_atrace_counter_from_double(double v, int64_t *out)
{
	if (v != v)
		return 0;
	/* 2^63 is exact as a double; every double below it converts exactly. */
	if (v >= 9223372036854775808.0) {
		*out = INT64_MAX;
		return 1;
	}
	if (v < -9223372036854775808.0) {
		*out = INT64_MIN;
		return 1;
	}
	int64_t whole = (int64_t)v;      /* toward zero */
	double rest = v - (double)whole; /* exact: |rest| < 1 */
	if (rest >= 0.5)
		whole++;
	else if (rest <= -0.5)
		whole--;
	*out = whole;
	return 1;
}

static inline bool is_separator(char c)
{
	return tl_atrace_is_separator(c);
}

static inline bool is_blank(char c)
{
	return tl_atrace_is_blank(c);
}

/*
 * How much of a field of len bytes goes out with at most max bytes: cut at
 * max (backing off to the start of a UTF-8 sequence; *cut set), then
 * without trailing blanks (separators included: they become spaces).
 */
static size_t field_length(const char *s, size_t len, size_t max, int *cut)
{
	if (len > max) {
		len = max;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
		*cut = 1;
	}
	while (len > 0 && is_blank(s[len - 1]))
		len--;
	return len;
}

static size_t copy_field(char *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		out[i] = is_separator(s[i]) ? ' ' : s[i];
	return len;
}

size_t tl_atrace_format(char *buf, const struct tl_atrace_payload *p, int *truncated)
{
	bool has_track = false, has_name = true, has_number = false;
	switch (p->phase) {
	case 'B':
	case 'I':
		break;
	case 'E':
		has_name = false;
		break;
	case 'C':
	case 'S':
	case 'F':
		has_number = true;
		break;
	case 'N':
		has_track = true;
		break;
	case 'G':
		has_track = has_number = true;
		break;
	case 'H':
		has_track = has_number = true;
		has_name = false;
		break;
	default:
		return 0;
	}

	char tail[24];
	size_t tail_len = 0;
	if (has_number) {
		tail[0] = '|';
		tail_len = 1 + tl_atrace_format_i64(tail + 1, p->number);
	}

	size_t n = 0;
	buf[n++] = p->phase;
	buf[n++] = '|';
	size_t pid_len = p->pid_len < 20 ? p->pid_len : 20;
	for (size_t i = 0; i < pid_len; i++)
		buf[n++] = p->pid[i];

	/* At most 22 + 21 fixed bytes, so the track always has room. */
	size_t room = TL_ATRACE_PAYLOAD_MAX - n - tail_len - has_track - has_name;
	int cut = 0;
	size_t track_len = has_track ? field_length(p->track, p->track_len, room, &cut) : 0;
	size_t name_len = has_name ? field_length(p->name, p->name_len, room - track_len, &cut) : 0;

	if (has_track) {
		buf[n++] = '|';
		n += copy_field(buf + n, p->track, track_len);
	}
	if (has_name) {
		buf[n++] = '|';
		n += copy_field(buf + n, p->name, name_len);
	}
	for (size_t i = 0; i < tail_len; i++)
		buf[n++] = tail[i];
	if (cut)
		*truncated = 1;
	return n;
}
