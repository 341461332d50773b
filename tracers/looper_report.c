/*
 * Looper reports as JSON, and the growing string buffer they are built in.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracers/looper_internal.h"

static bool buf_room(struct looper_buf *b, size_t n)
{
	if (b->failed)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void looper_buf_add(struct looper_buf *b, const char *s, size_t n)
{
	if (!buf_room(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void looper_buf_str(struct looper_buf *b, const char *s)
{
	looper_buf_add(b, s, strlen(s));
}

void looper_buf_printf(struct looper_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		looper_buf_add(b, small, (size_t)n);
		return;
	}
	if (!buf_room(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void looper_buf_json_string(struct looper_buf *b, const char *s)
{
	looper_buf_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"':
			looper_buf_add(b, "\\\"", 2);
			break;
		case '\\':
			looper_buf_add(b, "\\\\", 2);
			break;
		case '\n':
			looper_buf_add(b, "\\n", 2);
			break;
		case '\r':
			looper_buf_add(b, "\\r", 2);
			break;
		case '\t':
			looper_buf_add(b, "\\t", 2);
			break;
		default:
			if (*p < 0x20)
				looper_buf_printf(b, "\\u%04x", *p);
			else
				looper_buf_add(b, (const char *)p, 1);
		}
	}
	looper_buf_add(b, "\"", 1);
}

void looper_buf_free(struct looper_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

static const char *kind_name(tl_looper_report_kind kind)
{
	switch (kind) {
	case TL_LOOPER_REPORT_LAG:
		return "lag";
	case TL_LOOPER_REPORT_ANR:
		return "anr";
	default:
		return "slow";
	}
}

void looper_report_json(tl_looper_report *r, struct looper_buf *b)
{
	const char *kind = kind_name(r->kind);
	looper_buf_printf(b, "{\"kind\":\"%s\",\"verdict\":\"%s\",\"loop\":", kind,
	                  r->doubtful ? "doubtful" : kind);
	looper_buf_json_string(b, r->loop);
	looper_buf_str(b, ",\"message\":");
	looper_buf_json_string(b, r->message);
	looper_buf_printf(b,
	                  ",\"dispatch_seq\":%llu,\"tid\":%u,\"elapsed_ns\":%lld,"
	                  "\"thread_cpu_ns\":%lld",
	                  (unsigned long long)r->dispatch_seq, r->tid, (long long)r->elapsed_ns,
	                  (long long)r->thread_cpu_ns);
	if (r->kind != TL_LOOPER_REPORT_SLOW) {
		char state[2] = {r->thread_state ? r->thread_state : '?', '\0'};
		looper_buf_str(b, ",\"thread_state\":");
		looper_buf_json_string(b, state);
		looper_buf_printf(b,
		                  ",\"watchdog_late_ns\":%lld,\"suspended_ns\":%lld,"
		                  "\"doubtful\":%s",
		                  (long long)r->watchdog_late_ns, (long long)r->suspended_ns,
		                  r->doubtful ? "true" : "false");
	}
	if (r->kind == TL_LOOPER_REPORT_ANR) {
		looper_buf_str(b, ",\"dump_path\":");
		if (r->dump_path)
			looper_buf_json_string(b, r->dump_path);
		else
			looper_buf_str(b, "null");
		looper_buf_printf(b, ",\"dump_error\":%d", r->dump_error);
	}
	if (r->kind == TL_LOOPER_REPORT_SLOW) {
		looper_buf_printf(b, ",\"mark_valid\":%s,\"events_copied\":%zu,\"stack_key\":",
		                  r->mark_valid ? "true" : "false", r->events_copied);
		looper_buf_json_string(b, r->stack_key);
		looper_buf_str(b, ",\"tree\":");
		looper_buf_str(b, r->tree_json ? r->tree_json : "[]");
	}
	looper_buf_str(b, ",\"history\":[");
	for (size_t i = 0; i < r->history_count; i++) {
		looper_buf_str(b, i ? ",{\"name\":" : "{\"name\":");
		looper_buf_json_string(b, r->history[i].name);
		looper_buf_printf(b, ",\"begin_ns\":%lld,\"duration_ns\":%lld}",
		                  (long long)r->history[i].begin_ns,
		                  (long long)r->history[i].duration_ns);
	}
	looper_buf_str(b, "]}\n");
}
