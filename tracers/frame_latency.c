/*
 * The reader of `dumpsys SurfaceFlinger --latency <layer>` output:
 *
 *   16666666                      refresh period, ns
 *   0	0	0                      an unused slot of the 128-frame ring
 *   <desired> <actual> <ready>    one frame; actual is INT64_MAX while its
 *   ...                           present fence has not signalled
 *   (blank line)
 *
 * Dumps polled one after the other may be concatenated; each starts with its
 * own refresh-period line. Nothing here trusts the input: every number is
 * range-checked and every line bounded by the buffer.
 */
#include "tracers/frame_stats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 4 /* one more than a row has, to see extra fields */

static void issue_set(tl_sf_issue *issue, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void issue_set(tl_sf_issue *issue, size_t line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	issue->line = line;
	vsnprintf(issue->message, sizeof issue->message, fmt, ap);
	va_end(ap);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* A field: a run of non-blank bytes within a line. */
struct field {
	const char *p;
	size_t len;
};

/* Splits [p, end) into fields; returns their count (up to MAX_FIELDS, more
 * are counted but not stored). */
static size_t split_fields(const char *p, const char *end, struct field *fields)
{
	size_t n = 0;
	while (p < end) {
		while (p < end && is_blank(*p))
			p++;
		if (p == end)
			break;
		const char *start = p;
		while (p < end && !is_blank(*p))
			p++;
		if (n < MAX_FIELDS)
			fields[n] = (struct field){start, (size_t)(p - start)};
		n++;
	}
	return n;
}

enum number_status { NUMBER_OK, NUMBER_NOT_A_NUMBER, NUMBER_NEGATIVE, NUMBER_TOO_LARGE };

/* A decimal integer in [0, INT64_MAX]; an optional leading '+' or '-'. */
static enum number_status parse_number(const struct field *f, int64_t *out)
{
	size_t i = 0;
	bool negative = false;
	if (f->len && (f->p[0] == '-' || f->p[0] == '+')) {
		negative = f->p[0] == '-';
		i = 1;
	}
	if (i == f->len)
		return NUMBER_NOT_A_NUMBER;
	uint64_t v = 0;
	bool overflow = false;
	for (; i < f->len; i++) {
		char c = f->p[i];
		if (c < '0' || c > '9')
			return NUMBER_NOT_A_NUMBER;
		unsigned digit = (unsigned)(c - '0');
		if (v > ((uint64_t)INT64_MAX - digit) / 10)
			overflow = true;
		else
			v = v * 10 + digit;
	}
	if (negative && (v != 0 || overflow))
		return NUMBER_NEGATIVE;
	if (overflow)
		return NUMBER_TOO_LARGE;
	*out = (int64_t)v;
	return NUMBER_OK;
}

static const char *number_problem(enum number_status st)
{
	switch (st) {
	case NUMBER_NOT_A_NUMBER:
		return "not a number";
	case NUMBER_NEGATIVE:
		return "negative";
	default:
		return "larger than INT64_MAX";
	}
}

/* A field quoted for a message: at most 24 bytes, non-printables as '?'. */
static void quote_field(const struct field *f, char *buf, size_t size)
{
	size_t n = f->len < 24 ? f->len : 24;
	if (n >= size)
		n = size - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)f->p[i];
		buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[n] = '\0';
	if (f->len > n && n >= 3)
		memcpy(buf + n - 3, "...", 3);
}

static void reject(tl_sf_latency *lat, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reject(tl_sf_latency *lat, size_t line, const char *fmt, ...)
{
	lat->rows_rejected++;
	if (lat->nissues == TL_SF_MAX_ISSUES)
		return;
	tl_sf_issue *issue = &lat->issues[lat->nissues++];
	va_list ap;
	va_start(ap, fmt);
	issue->line = line;
	vsnprintf(issue->message, sizeof issue->message, fmt, ap);
	va_end(ap);
}

static int push_frame(tl_sf_latency *lat, size_t *cap, int64_t present, int64_t period)
{
	if (lat->nframes == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 256;
		tl_present_frame *grown = realloc(lat->frames, grown_cap * sizeof *grown);
		if (!grown)
			return -ENOMEM;
		lat->frames = grown;
		*cap = grown_cap;
	}
	lat->frames[lat->nframes++] = (tl_present_frame){present, period};
	return 0;
}

/* One data row of the dump whose period is `period`. */
static int read_row(tl_sf_latency *lat, size_t *cap, size_t line_no, const struct field *fields,
                    size_t nfields, int64_t period)
{
	static const char *const names[3] = {"desired present", "actual present", "frame ready"};
	lat->rows++;
	if (nfields < 3) {
		reject(lat, line_no, "truncated row: %zu of 3 fields", nfields);
		return 0;
	}
	if (nfields > 3) {
		reject(lat, line_no, "%zu fields, expected 3", nfields);
		return 0;
	}
	int64_t v[3];
	for (int i = 0; i < 3; i++) {
		enum number_status st = parse_number(&fields[i], &v[i]);
		if (st != NUMBER_OK) {
			char quoted[32];
			quote_field(&fields[i], quoted, sizeof quoted);
			reject(lat, line_no, "%s '%s': %s", names[i], quoted, number_problem(st));
			return 0;
		}
	}
	if (v[0] == 0 && v[1] == 0 && v[2] == 0) {
		lat->rows_empty++;
		return 0;
	}
	if (v[1] == INT64_MAX) {
		lat->rows_pending++;
		return 0;
	}
	if (v[1] == 0) {
		lat->rows_not_presented++;
		return 0;
	}
	return push_frame(lat, cap, v[1], period);
}

int tl_sf_latency_sniff(const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		struct field fields[MAX_FIELDS];
		size_t n = split_fields(p, line_end, fields);
		if (n) {
			int64_t v;
			return n == 1 && parse_number(&fields[0], &v) == NUMBER_OK;
		}
		p = eol ? eol + 1 : end;
	}
	return 0;
}

int tl_sf_latency_parse(const char *data, size_t len, tl_sf_latency *out, tl_sf_issue *fatal)
{
	memset(out, 0, sizeof *out);
	size_t cap = 0;
	int64_t period = 0;
	bool expect_period = true; /* at the top, and after a blank line */
	size_t line_no = 0;
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		line_no++;
		struct field fields[MAX_FIELDS];
		size_t n = split_fields(p, line_end, fields);
		p = eol ? eol + 1 : end;
		if (n == 0) {
			expect_period = true;
			continue;
		}
		if (expect_period && n == 1) {
			int64_t v = 0;
			enum number_status st = parse_number(&fields[0], &v);
			if (st != NUMBER_OK || v == 0) {
				char quoted[32];
				quote_field(&fields[0], quoted, sizeof quoted);
				issue_set(fatal, line_no, "refresh period '%s': %s", quoted,
				          st != NUMBER_OK ? number_problem(st)
				                          : "zero (expected nanoseconds > 0)");
				tl_sf_latency_free(out);
				return -EINVAL;
			}
			period = v;
			if (out->dumps++ == 0)
				out->period_ns = v;
			expect_period = false;
			continue;
		}
		if (period == 0) {
			issue_set(fatal, line_no,
			          "expected the refresh period (one integer, ns) before the rows");
			tl_sf_latency_free(out);
			return -EINVAL;
		}
		expect_period = false;
		if (read_row(out, &cap, line_no, fields, n, period) < 0) {
			tl_sf_latency_free(out);
			return -ENOMEM;
		}
	}
	if (out->dumps == 0) {
		issue_set(fatal, line_no ? line_no : 1, "empty input: no refresh period");
		tl_sf_latency_free(out);
		return -EINVAL;
	}
	return 0;
}

void tl_sf_latency_free(tl_sf_latency *lat)
{
	free(lat->frames);
	lat->frames = NULL;
	lat->nframes = 0;
}
