/*
 * The trace_marker payload grammar (formats.md 1.1, 1.2). Fields are
 * separated by '|' (a '\0' inside the payload also ends a field); the
 * phase is the first byte of field 0, whatever follows it.
 */
#include "tools/readers/atrace_parse.h"

#include <string.h>

static const char clock_sync_prefix[] = "trace_event_clock_sync:";

/* Splits the payload field by field. */
typedef struct field_reader {
	const char *s;
	size_t len;
	size_t off; /* may pass len by one: the separator that ended the last field */
} field_reader;

static tl_str_view next_field(field_reader *r)
{
	size_t start = r->off < r->len ? r->off : r->len;
	size_t end = start;
	while (end < r->len && r->s[end] != '|' && r->s[end] != '\0')
		end++;
	r->off = end + 1;
	return (tl_str_view){r->s + start, end - start};
}

/* Whether a separator followed the last field read. */
static int more_fields(const field_reader *r)
{
	return r->off <= r->len;
}

static tl_str_view rest(const field_reader *r)
{
	size_t start = r->off < r->len ? r->off : r->len;
	return (tl_str_view){r->s + start, r->len - start};
}

static int is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * The common part of strtoul and strtoll in base 10 over a whole field:
 * magnitude (saturated at UINT64_MAX, *overflow set) and sign.
 */
static int parse_digits(tl_str_view f, uint64_t *magnitude, int *negative, int *overflow)
{
	size_t i = 0;
	while (i < f.len && is_space(f.ptr[i]))
		i++;
	*negative = 0;
	if (i < f.len && (f.ptr[i] == '+' || f.ptr[i] == '-'))
		*negative = f.ptr[i++] == '-';
	size_t first_digit = i;
	uint64_t v = 0;
	*overflow = 0;
	for (; i < f.len && f.ptr[i] >= '0' && f.ptr[i] <= '9'; i++) {
		unsigned d = (unsigned)(f.ptr[i] - '0');
		if (v > (UINT64_MAX - d) / 10) {
			*overflow = 1;
			v = UINT64_MAX;
		} else if (!*overflow) {
			v = v * 10 + d;
		}
	}
	*magnitude = v;
	/* No digits: strtoul leaves the end at the field start, which only
	 * passes the "whole field" check for an empty field, rejected anyway. */
	return i > first_digit && i == f.len;
}

int tl_atrace_parse_u32(tl_str_view field, uint32_t *out)
{
	uint64_t v;
	int negative, overflow;
	if (!parse_digits(field, &v, &negative, &overflow))
		return 0;
	if (negative && !overflow)
		v = -v;
	*out = (uint32_t)v;
	return 1;
}

int tl_atrace_parse_i64(tl_str_view field, int64_t *out)
{
	uint64_t v;
	int negative, overflow;
	if (!parse_digits(field, &v, &negative, &overflow))
		return 0;
	if (negative)
		*out = v >= (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
	return 1;
}

tl_atrace_result tl_atrace_parse(const char *payload, size_t len, tl_atrace_point *out)
{
	memset(out, 0, sizeof *out);
	if (!payload)
		return TL_ATRACE_FAIL;
	while (len > 0 && (payload[len - 1] == '\n' || payload[len - 1] == '\0'))
		len--;
	size_t prefix = sizeof clock_sync_prefix - 1;
	if (len >= prefix && memcmp(payload, clock_sync_prefix, prefix) == 0)
		return TL_ATRACE_UNSUPPORTED;

	field_reader r = {payload, len, 0};
	tl_str_view phase = next_field(&r);
	if (phase.len == 0)
		return TL_ATRACE_FAIL;
	char ph = phase.ptr[0];
	tl_str_view tgid_field = next_field(&r);
	uint32_t tgid = 0;
	int has_tgid = tl_atrace_parse_u32(tgid_field, &tgid);
	tl_atrace_point p = {.phase = ph, .tgid = has_tgid ? tgid : 0};

	switch (ph) {
	case 'B':
		if (!has_tgid)
			return TL_ATRACE_FAIL;
		p.name = rest(&r);
		if (p.name.len == 0)
			p.name = (tl_str_view){TL_ATRACE_EMPTY_SLICE_NAME,
			                       sizeof TL_ATRACE_EMPTY_SLICE_NAME - 1};
		break;
	case 'E':
		break;
	case 'C': {
		p.name = next_field(&r);
		tl_str_view value = next_field(&r);
		if (!has_tgid || p.name.len == 0 || !tl_atrace_parse_i64(value, &p.value))
			return TL_ATRACE_FAIL;
		break;
	}
	case 'S':
	case 'F': {
		p.name = next_field(&r);
		tl_str_view cookie = next_field(&r);
		if (!has_tgid || p.name.len == 0 || !tl_atrace_parse_i64(cookie, &p.cookie))
			return TL_ATRACE_FAIL;
		break;
	}
	case 'I':
		p.name = next_field(&r);
		if (!has_tgid || p.name.len == 0)
			return TL_ATRACE_FAIL;
		break;
	case 'N':
		p.track = next_field(&r);
		p.name = next_field(&r);
		if (!has_tgid || p.track.len == 0 || p.name.len == 0)
			return TL_ATRACE_FAIL;
		break;
	case 'G': {
		p.track = next_field(&r);
		p.name = next_field(&r);
		tl_str_view cookie = next_field(&r);
		if (!has_tgid || p.track.len == 0 || p.name.len == 0 ||
		    !tl_atrace_parse_i64(cookie, &p.cookie))
			return TL_ATRACE_FAIL;
		break;
	}
	case 'H': {
		p.track = next_field(&r);
		tl_str_view cookie = next_field(&r);
		/* H|P|track|cookie, or H|P|track|name|cookie since Android 15. */
		if (more_fields(&r))
			cookie = next_field(&r);
		if (!has_tgid || p.track.len == 0 || !tl_atrace_parse_i64(cookie, &p.cookie))
			return TL_ATRACE_FAIL;
		break;
	}
	default:
		return TL_ATRACE_FAIL;
	}
	*out = p;
	return TL_ATRACE_OK;
}

/* Digits at s[*i..len) as an unsigned value; 0 when there is none or it
 * passes limit. */
static int read_number(const char *s, size_t len, size_t *i, uint64_t limit, uint64_t *out)
{
	size_t first = *i;
	uint64_t v = 0;
	for (; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
		unsigned d = (unsigned)(s[*i] - '0');
		if (v > (limit - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*out = v;
	return *i > first;
}

static int starts_with_at(const char *s, size_t len, size_t i, const char *word)
{
	size_t n = strlen(word);
	return len - i >= n && memcmp(s + i, word, n) == 0;
}

tl_clock_sync_kind tl_atrace_parse_clock_sync(const char *payload, size_t len, int64_t *ns)
{
	static const uint64_t ns_max = INT64_MAX;
	if (!payload)
		return TL_CLOCK_SYNC_NONE;
	while (len > 0 && (payload[len - 1] == '\n' || payload[len - 1] == '\0'))
		len--;
	size_t i = sizeof clock_sync_prefix - 1;
	if (len < i || memcmp(payload, clock_sync_prefix, i) != 0)
		return TL_CLOCK_SYNC_NONE;
	while (i < len && (payload[i] == ' ' || payload[i] == '\t'))
		i++;
	uint64_t whole, fraction = 0;
	if (starts_with_at(payload, len, i, "realtime_ts=")) {
		i += strlen("realtime_ts=");
		if (!read_number(payload, len, &i, ns_max / 1000000, &whole))
			return TL_CLOCK_SYNC_NONE;
		*ns = (int64_t)(whole * 1000000);
		return TL_CLOCK_SYNC_REALTIME_TS;
	}
	if (!starts_with_at(payload, len, i, "parent_ts="))
		return TL_CLOCK_SYNC_NONE;
	i += strlen("parent_ts=");
	if (!read_number(payload, len, &i, ns_max / 1000000000, &whole))
		return TL_CLOCK_SYNC_NONE;
	if (i < len && payload[i] == '.') {
		uint64_t scale = 100000000;
		for (i++; i < len && payload[i] >= '0' && payload[i] <= '9'; i++, scale /= 10)
			fraction += (uint64_t)(payload[i] - '0') * scale;
	}
	if (whole * 1000000000 > ns_max - fraction)
		return TL_CLOCK_SYNC_NONE;
	*ns = (int64_t)(whole * 1000000000 + fraction);
	return TL_CLOCK_SYNC_PARENT_TS;
}
