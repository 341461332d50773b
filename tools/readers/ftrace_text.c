/*
 * ftrace / systrace text reader (formats.md section 2). The line pattern is
 * matched by hand, with the backtracking a regex engine would do where it
 * matters: the optional flags group (3 + 2, 3 + 1 or no characters) and the
 * event name, which is the non-space run up to its last ':'.
 */
#include "tools/readers/ftrace_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char atrace_marker[] = "TRACE:\n";
static const char html_trace_data[] = "<script class=\"trace-data\"";
static const char html_script_end[] = "</script>";

static int is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_flag_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.';
}

static int is_flag_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || c == '.';
}

static tl_str_view trimmed(const char *s, size_t len)
{
	while (len && is_space(*s)) {
		s++;
		len--;
	}
	while (len && is_space(s[len - 1]))
		len--;
	return (tl_str_view){s, len};
}

/* Decimal digits at s[*i..len) as a uint32; 0 when there are none or they
 * do not fit. Advances *i past the digits. */
static int read_u32(const char *s, size_t len, size_t *i, uint32_t *out)
{
	size_t start = *i;
	uint64_t v = 0;
	int fits = 1;
	for (; *i < len && is_digit(s[*i]); (*i)++) {
		v = v * 10 + (uint64_t)(s[*i] - '0');
		if (v > UINT32_MAX) {
			fits = 0;
			v = UINT32_MAX;
		}
	}
	*out = (uint32_t)v;
	return *i > start && fits;
}

/* Timestamps: seconds with a fraction, or (trace-cmd) raw nanoseconds too. */
enum ts_form { TS_SECONDS, TS_SECONDS_OR_NS };

/*
 * From s[i] on: (\d+\.\d+):\s+(\S+):  (with TS_SECONDS_OR_NS, (\d+(\.\d+)?)
 * instead). On a match sets the timestamp, the event name and *end (just
 * past the event's ':') and returns 1.
 */
static int match_tail(const char *s, size_t len, size_t i, enum ts_form form, tl_ftrace_line *out,
                      size_t *end)
{
	size_t ts_start = i;
	while (i < len && is_digit(s[i]))
		i++;
	if (i == ts_start || i >= len)
		return 0;
	int integer = s[i] == ':' && form == TS_SECONDS_OR_NS;
	if (!integer) {
		if (s[i] != '.')
			return 0;
		size_t frac = ++i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == frac || i >= len || s[i] != ':')
			return 0;
	}
	size_t ts_end = i;
	i++;
	size_t spaces = i;
	while (i < len && is_space(s[i]))
		i++;
	if (i == spaces)
		return 0;
	size_t name = i, colon = 0;
	while (i < len && !is_space(s[i])) {
		if (s[i] == ':' && i > name)
			colon = i;
		i++;
	}
	if (!colon)
		return 0;

	if (integer) {
		uint64_t ns = 0;
		for (size_t k = ts_start; k < ts_end; k++) {
			if (ns > ((uint64_t)INT64_MAX - 9) / 10)
				return 0;
			ns = ns * 10 + (uint64_t)(s[k] - '0');
		}
		out->ts_ns = (int64_t)ns;
	} else {
		/* s[ts_start..ts_end) is digits '.' digits followed by ':', so
		 * strtod stops inside the line. */
		double ns = strtod(s + ts_start, NULL) * 1e9;
		if (!(ns < 9223372036854775807.0))
			return 0;
		out->ts_ns = (int64_t)ns;
	}
	out->event = (tl_str_view){s + name, colon - name};
	*end = colon + 1;
	return 1;
}

/*
 * From s[i]: ([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)? then the tail, the longest
 * choice of flags first; with flags_required, no flags is not a choice.
 */
static int match_flags_and_tail(const char *s, size_t len, size_t i, int flags_required,
                                enum ts_form form, tl_ftrace_line *out, size_t *end)
{
	for (int hex = 2; hex >= (flags_required ? 1 : 0); hex--) {
		size_t j = i;
		if (hex > 0) {
			if (len - i < (size_t)(3 + hex))
				continue;
			int ok = is_flag_letter(s[i]) && is_flag_letter(s[i + 1]) &&
			         is_flag_letter(s[i + 2]) && is_flag_hex(s[i + 3]) &&
			         (hex == 1 || is_flag_hex(s[i + 4]));
			if (!ok)
				continue;
			j = i + 3 + (size_t)hex;
			while (j < len && is_space(s[j]))
				j++;
		}
		if (match_tail(s, len, j, form, out, end))
			return 1;
	}
	return 0;
}

/* The whole pattern, with the leading '-' at s[pos]. */
static int match_at(const char *s, size_t len, size_t pos, tl_ftrace_line *out, size_t *end)
{
	size_t i = pos + 1;
	if (!read_u32(s, len, &i, &out->tid))
		return 0;
	size_t spaces = i;
	while (i < len && is_space(s[i]))
		i++;
	if (i == spaces)
		return 0;
	if (i < len && s[i] == '(')
		i++;
	while (i < len && is_space(s[i]))
		i++;
	out->tgid = 0;
	if (i < len && is_digit(s[i])) {
		if (!read_u32(s, len, &i, &out->tgid))
			return 0;
	} else {
		while (i < len && s[i] == '-')
			i++;
	}
	if (i < len && s[i] == ')')
		i++;
	if (i < len && is_space(s[i]))
		i++;
	if (i >= len || s[i] != '[')
		return 0;
	i++;
	if (!read_u32(s, len, &i, &out->cpu) || i >= len || s[i] != ']')
		return 0;
	i++;
	while (i < len && is_space(s[i]))
		i++;

	return match_flags_and_tail(s, len, i, 0, TS_SECONDS, out, end);
}

/*
 * trace-cmd report's layouts, with the leading '-' at s[pos]:
 *   -(\d+)\s+\[(\d+)\]\s*TS:\s+(\S+):          the default
 *   -(\d+)\s+(\d+)FLAGS\s*TS:\s+(\S+):           -l, FLAGS 5 or 4 characters
 * TS as match_tail's TS_SECONDS_OR_NS.
 */
static int match_trace_cmd_at(const char *s, size_t len, size_t pos, tl_ftrace_line *out,
                              size_t *end)
{
	size_t i = pos + 1;
	if (!read_u32(s, len, &i, &out->tid))
		return 0;
	size_t spaces = i;
	while (i < len && is_space(s[i]))
		i++;
	if (i == spaces || i >= len)
		return 0;
	out->tgid = 0;
	if (s[i] == '[') {
		i++;
		if (!read_u32(s, len, &i, &out->cpu) || i >= len || s[i] != ']')
			return 0;
		i++;
		while (i < len && is_space(s[i]))
			i++;
		return match_tail(s, len, i, TS_SECONDS_OR_NS, out, end);
	}
	if (!read_u32(s, len, &i, &out->cpu))
		return 0;
	return match_flags_and_tail(s, len, i, 1, TS_SECONDS_OR_NS, out, end);
}

static int view_is(tl_str_view v, const char *s)
{
	return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

/* Fills the views of a matched line: the task is line[0..pos), the text
 * what follows end. */
static void finish_line(const char *line, size_t len, size_t pos, size_t end, tl_ftrace_line *l)
{
	l->task = trimmed(line, pos);
	l->text = trimmed(line + end, len - end);
	l->line = (tl_str_view){line, len};
	l->kind = TL_FTRACE_LINE_OTHER;
	static const char *const marker_events[] = {"tracing_mark_write", "print", "0"};
	for (size_t k = 0; k < sizeof marker_events / sizeof marker_events[0]; k++) {
		if (view_is(l->event, marker_events[k]))
			l->kind = TL_FTRACE_LINE_MARKER;
	}
	/* trace-cmd prints the print event as "print: tracing_mark_write: PAYLOAD" */
	static const char mark_prefix[] = "tracing_mark_write:";
	if (view_is(l->event, "print") && l->text.len >= sizeof mark_prefix - 1 &&
	    memcmp(l->text.ptr, mark_prefix, sizeof mark_prefix - 1) == 0)
		l->text = trimmed(l->text.ptr + sizeof mark_prefix - 1,
		                  l->text.len - (sizeof mark_prefix - 1));
}

typedef int (*line_matcher)(const char *s, size_t len, size_t pos, tl_ftrace_line *out,
                            size_t *end);

/* The first '-' from which match matches; returns 0 with *l filled, or -EINVAL. */
static int tokenize_with(const char *line, size_t len, line_matcher match, tl_ftrace_line *l)
{
	size_t end = 0;
	for (size_t pos = 0; pos < len; pos++) {
		if (line[pos] == '-' && match(line, len, pos, l, &end)) {
			finish_line(line, len, pos, end, l);
			return 0;
		}
	}
	return -EINVAL;
}

int tl_ftrace_line_tokenize(const char *line, size_t len, tl_ftrace_line *out)
{
	tl_ftrace_line l = {.line_no = out->line_no};
	if (tokenize_with(line, len, match_at, &l))
		return -EINVAL;
	*out = l;
	return 0;
}

/*
 * trace-cmd prints a -B buffer's lines after "NAME: "; a task name, right-
 * aligned in its column, always has a blank before it, so a task that starts
 * with a word ending in ':' and has more after a blank starts with the name.
 */
static tl_str_view without_instance(tl_str_view task)
{
	size_t i = 0;
	while (i < task.len && !is_space(task.ptr[i]))
		i++;
	if (i == 0 || i == task.len || task.ptr[i - 1] != ':')
		return task;
	return trimmed(task.ptr + i, task.len - i);
}

int tl_ftrace_line_tokenize_trace_cmd(const char *line, size_t len, tl_ftrace_line *out)
{
	tl_ftrace_line l = {.line_no = out->line_no};
	if (tokenize_with(line, len, match_at, &l) &&
	    tokenize_with(line, len, match_trace_cmd_at, &l))
		return -EINVAL;
	l.task = without_instance(l.task);
	*out = l;
	return 0;
}

static int starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

static int starts_with_nocase(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && strncasecmp(s, prefix, n) == 0;
}

static int contains(const char *s, size_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle)) != NULL;
}

int tl_ftrace_text_sniff(const char *data, size_t len)
{
	size_t head = len < TL_FTRACE_HEAD_BYTES ? len : TL_FTRACE_HEAD_BYTES;
	if (contains(data, head, "# tracer") || contains(data, head, atrace_marker))
		return 1;
	return starts_with_nocase(data, len, "<!doctype html>") ||
	       starts_with_nocase(data, len, "<html>") || starts_with(data, len, "cpus=") ||
	       starts_with(data, len, " ");
}

/* Where the lines of an HTML systrace file are. */
enum html_state { TEXT_PLAIN, HTML_BEFORE_DATA, HTML_IN_DATA, HTML_IN_SYSTRACE, HTML_DONE };

static size_t count_newlines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

size_t tl_ftrace_reader_start(tl_ftrace_reader *r, unsigned flags, const char *head, size_t len)
{
	memset(r, 0, sizeof *r);
	r->flags = flags;
	r->line_no = 1;
	r->state = TEXT_PLAIN;
	if (flags & TL_FTRACE_LINES_ONLY)
		return 0;
	r->first_line = 1;
	size_t off = 0;
	size_t lookahead = len < TL_FTRACE_HEAD_BYTES ? len : TL_FTRACE_HEAD_BYTES;
	const char *marker = memmem(head, lookahead, atrace_marker, sizeof atrace_marker - 1);
	if (marker) {
		off = (size_t)(marker - head) + sizeof atrace_marker - 1;
		r->line_no += count_newlines(head, off);
	}
	return off;
}

/*
 * The first line after the header: an HTML file starts there, or else one
 * "cpus=N" line is dropped. Returns 1 when the line is that "cpus=" line.
 */
static int first_line_is_cpus(tl_ftrace_reader *r, const char *line, size_t len)
{
	r->first_line = 0;
	if (len && line[0] == '<') {
		r->state = HTML_BEFORE_DATA;
		r->html = 1;
		return 0;
	}
	r->trace_cmd = starts_with(line, len, "cpus=");
	return r->trace_cmd;
}

/* trace-cmd's note for a CPU without events: "CPU 3 is empty". */
static int is_empty_cpu_note(const char *line, size_t len)
{
	size_t i = 4;
	if (!starts_with(line, len, "CPU ") || i >= len || !is_digit(line[i]))
		return 0;
	while (i < len && is_digit(line[i]))
		i++;
	return len - i == strlen(" is empty") && memcmp(line + i, " is empty", len - i) == 0;
}

/* "# timeline: ... clock=boot ..." (the exporters' and `timeline record`'s
 * header): the clock it names, or TL_TRACE_CLOCK_UNKNOWN. */
static tl_trace_clock comment_clock(const char *line, size_t len)
{
	static const char key[] = " clock=";
	if (!starts_with(line, len, "# timeline:"))
		return TL_TRACE_CLOCK_UNKNOWN;
	const char *at = memmem(line, len, key, sizeof key - 1);
	if (!at)
		return TL_TRACE_CLOCK_UNKNOWN;
	const char *value = at + sizeof key - 1;
	size_t n = 0;
	while (value + n < line + len && !is_space(value[n]))
		n++;
	if (n == 4 && memcmp(value, "boot", 4) == 0)
		return TL_TRACE_CLOCK_BOOT;
	if (n == 4 && memcmp(value, "mono", 4) == 0)
		return TL_TRACE_CLOCK_MONO;
	return TL_TRACE_CLOCK_UNKNOWN;
}

/* The decimal value of " KEY=" in a "# timeline:" line; 0 when absent. */
static int64_t comment_value(const char *line, size_t len, const char *key)
{
	size_t key_len = strlen(key);
	for (const char *at = line; (at = memmem(at, (size_t)(line + len - at), key, key_len));
	     at += key_len) {
		if (at == line || at[-1] != ' ')
			continue;
		int64_t v = 0;
		const char *p = at + key_len;
		for (; p < line + len && is_digit(*p) && v <= (INT64_MAX - 9) / 10; p++)
			v = v * 10 + (*p - '0');
		return p < line + len && !is_space(*p) ? 0 : v;
	}
	return 0;
}

/* "# timeline: ... boottime_ns=B monotonic_ns=M realtime_ns=R ..." (the
 * ftrace exporter's header). */
static tl_clock_values comment_clock_values(const char *line, size_t len)
{
	tl_clock_values v = {0};
	if (!starts_with(line, len, "# timeline:"))
		return v;
	v.boottime_ns = comment_value(line, len, "boottime_ns=");
	v.monotonic_ns = comment_value(line, len, "monotonic_ns=");
	v.realtime_ns = comment_value(line, len, "realtime_ns=");
	v.known = v.boottime_ns > 0 && v.monotonic_ns > 0 && v.realtime_ns > 0;
	if (!v.known)
		v = (tl_clock_values){0};
	return v;
}

/* Counts a line that does not tokenize, keeping the first one's text. */
static void count_failure(tl_ftrace_reader *r, size_t line_no, const char *line, size_t len)
{
	if (!r->parse_failures++) {
		r->first_failure_line = line_no;
		size_t n = len < TL_FTRACE_FAILURE_TEXT - 1 ? len : TL_FTRACE_FAILURE_TEXT - 1;
		memcpy(r->first_failure_text, line, n);
		r->first_failure_text[n] = '\0';
	}
}

int tl_ftrace_reader_line(tl_ftrace_reader *r, const char *line, size_t n, tl_ftrace_line *out,
                          tl_read_error *err)
{
	if (r->finished)
		return 0;
	size_t line_no = r->line_no++;
	if (r->first_line && first_line_is_cpus(r, line, n))
		return 0;

	switch (r->state) {
	case HTML_BEFORE_DATA:
		if (contains(line, n, html_trace_data))
			r->state = HTML_IN_DATA;
		return 0;
	case HTML_IN_DATA:
		if (n && line[0] == '#' && contains(line, n, "TASK-PID"))
			r->state = HTML_IN_SYSTRACE;
		else if (contains(line, n, html_script_end))
			r->state = HTML_BEFORE_DATA;
		return 0;
	case HTML_IN_SYSTRACE:
		if (contains(line, n, html_script_end)) {
			r->state = HTML_DONE;
			r->finished = 1;
			return 0;
		}
		break;
	default:
		break;
	}
	if (n && line[0] == '#' && !r->clock)
		r->clock = comment_clock(line, n);
	if (n && line[0] == '#' && !r->clock_values.known)
		r->clock_values = comment_clock_values(line, n);
	if (n == 0 || line[0] == '#')
		return 0;
	if (r->trace_cmd && is_empty_cpu_note(line, n))
		return 0;

	out->line_no = line_no;
	int rc = r->trace_cmd ? tl_ftrace_line_tokenize_trace_cmd(line, n, out)
	                      : tl_ftrace_line_tokenize(line, n, out);
	if (rc == 0)
		return 1;
	if (r->flags & TL_FTRACE_STRICT) {
		if (err) {
			err->line = line_no;
			err->column = 1;
			snprintf(err->message, sizeof err->message,
			         "not an ftrace event line: '%.*s'", n > 60 ? 60 : (int)n, line);
		}
		return -EINVAL;
	}
	count_failure(r, line_no, line, n);
	return 0;
}

void tl_ftrace_reader_finish(tl_ftrace_reader *r, const char *rest, size_t len)
{
	if (r->finished || len == 0)
		return;
	if (r->first_line && first_line_is_cpus(r, rest, len))
		return;
	if (r->state == HTML_BEFORE_DATA || r->state == HTML_IN_DATA)
		return; /* HTML around the trace data */
	/* Dropped, as Perfetto does; counted unless it is only blanks or a
	 * comment, which no reading would have kept. */
	r->unterminated = trimmed(rest, len).len != 0 && rest[0] != '#';
	r->unterminated_line = r->unterminated ? r->line_no : 0;
}

static int append_line(tl_ftrace_text *out, size_t *cap, const tl_ftrace_line *line)
{
	if (out->nlines == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		tl_ftrace_line *grown = realloc(out->lines, n * sizeof *grown);
		if (!grown)
			return -ENOMEM;
		out->lines = grown;
		*cap = n;
	}
	out->lines[out->nlines++] = *line;
	return 0;
}

int tl_ftrace_text_read(const char *data, size_t len, unsigned flags, tl_ftrace_text *out,
                        tl_read_error *err)
{
	size_t cap = 0;
	tl_ftrace_reader r;
	memset(out, 0, sizeof *out);
	size_t off = tl_ftrace_reader_start(&r, flags, data, len);
	while (off < len && !r.finished) {
		const char *line = data + off;
		const char *nl = memchr(line, '\n', len - off);
		if (!nl)
			break;
		size_t n = (size_t)(nl - line);
		off += n + 1;
		tl_ftrace_line l;
		int rc = tl_ftrace_reader_line(&r, line, n, &l, err);
		if (rc == 1)
			rc = append_line(out, &cap, &l);
		if (rc < 0) {
			tl_ftrace_text_free(out);
			return rc;
		}
	}
	tl_ftrace_reader_finish(&r, data + off, len - off);
	out->parse_failures = r.parse_failures;
	out->first_failure_line = r.first_failure_line;
	memcpy(out->first_failure_text, r.first_failure_text, sizeof out->first_failure_text);
	out->unterminated = r.unterminated;
	out->unterminated_line = r.unterminated_line;
	out->html = r.html;
	out->trace_cmd = r.trace_cmd;
	out->clock = r.clock;
	out->clock_values = r.clock_values;
	return 0;
}

void tl_ftrace_text_free(tl_ftrace_text *text)
{
	free(text->lines);
	memset(text, 0, sizeof *text);
}
