/*
 * Formatting of atrace payloads (layout in atrace_format.h). Its own
 * integer formatting and byte copies: no printf family, no allocation, so
 * the systrace recorder can call it on the hot path and from signal
 * handlers.
 */
#include "recorder/atrace_format.h"
#include "recorder/utf8.h"
#include "recorder/format_int.h"

#include <stdbool.h>
#include <string.h>

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

static const char replacement[3] = {(char)0xef, (char)0xbf, (char)0xbd}; /* U+FFFD */

size_t tl_atrace_clean(char *out, size_t cap, const char *s, size_t len, const char *fallback,
                       int *cut)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n = 0;
	while (i < len) {
		/* the common case: printable ASCII, copied as it is */
		if (tl_atrace_byte_kept((char)p[i])) {
			if (n == cap)
				break;
			out[n++] = (char)p[i++];
			continue;
		}
		size_t in = p[i] < 0x80 ? 1 : tl_utf8_char_len(p + i, len - i);
		const char *piece = (const char *)p + i;
		size_t piece_len = in;
		if (in == 0) {
			piece = replacement;
			piece_len = sizeof replacement;
			in = 1;
		} else if (in == 1) {
			piece = " "; /* a control byte or '|' */
		}
		if (piece_len > cap - n)
			break;
		for (size_t k = 0; k < piece_len; k++)
			out[n++] = piece[k];
		i += in;
	}
	if (i < len)
		*cut = 1;
	while (n > 0 && out[n - 1] == ' ')
		n--;
	if (n == 0) {
		const char *word = fallback ? fallback : TL_ATRACE_UNNAMED;
		while (word[n] != '\0' && n < cap) {
			out[n] = word[n];
			n++;
		}
	}
	return n;
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

	/* At most 22 + 21 fixed bytes: the track and the name always have room. */
	int cut = 0;
	if (has_track) {
		buf[n++] = '|';
		size_t room = TL_ATRACE_PAYLOAD_MAX - n - tail_len -
		              (has_name ? 1 + TL_ATRACE_NAME_MIN : 0);
		n += tl_atrace_clean(buf + n, room, p->track, p->track_len, p->track_fallback,
		                     &cut);
	}
	if (has_name) {
		buf[n++] = '|';
		n += tl_atrace_clean(buf + n, TL_ATRACE_PAYLOAD_MAX - n - tail_len, p->name,
		                     p->name_len, TL_ATRACE_UNNAMED, &cut);
	}
	for (size_t i = 0; i < tail_len; i++)
		buf[n++] = tail[i];
	if (cut)
		*truncated = 1;
	return n;
}

size_t tl_atrace_format_clock_sync(char buf[TL_ATRACE_CLOCK_SYNC_MAX],
                                   enum tl_atrace_clock_sync kind, int64_t ns)
{
	static const char parent[] = "trace_event_clock_sync: parent_ts=";
	static const char realtime[] = "trace_event_clock_sync: realtime_ts=";
	uint64_t v = ns > 0 ? (uint64_t)ns : 0;
	size_t n;
	if (kind == TL_ATRACE_PARENT_TS) {
		memcpy(buf, parent, sizeof parent - 1);
		n = sizeof parent - 1;
		n += tl_format_u64(buf + n, v / 1000000000u);
		buf[n++] = '.';
		uint64_t us = v % 1000000000u / 1000u;
		for (uint64_t digit = 100000; digit; digit /= 10)
			buf[n++] = (char)('0' + us / digit % 10);
	} else {
		memcpy(buf, realtime, sizeof realtime - 1);
		n = sizeof realtime - 1;
		n += tl_format_u64(buf + n, v / 1000000u);
	}
	return n;
}

size_t tl_atrace_comm(char out[TL_COMM_MAX + 1], const char *name)
{
	size_t len = 0;
	while (name[len] != '\0')
		len++;
	int cut = 0;
	size_t n = tl_atrace_clean(out, TL_COMM_MAX, name, len, "", &cut);
	out[n] = '\0';
	return n;
}
