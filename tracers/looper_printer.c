/*
 * Android Looper printer lines, for apps that hook the Java printer
 * (Looper.setMessageLogging) through JNI:
 *
 *   >>>>> Dispatching to <target> <callback>: <what>
 *   <<<<< Finished to <target> <callback>
 *
 * <target> is the Handler's toString(), normally "Handler (<class>) {<hash>}"
 * but free-form when a subclass overrides it; <callback> is a Runnable's
 * toString() or "null"; <what> is the message code.
 */
#include <errno.h>
#include <string.h>

#include "tracers/looper_internal.h"

static const char BEGIN_PREFIX[] = ">>>>> Dispatching to ";
static const char END_PREFIX[] = "<<<<< Finished to ";

static bool starts_with(const char *s, size_t len, const char *prefix, size_t plen)
{
	return len >= plen && memcmp(s, prefix, plen) == 0;
}

static const char *find(const char *s, size_t len, const char *needle, size_t nlen)
{
	for (size_t i = 0; i + nlen <= len; i++)
		if (memcmp(s + i, needle, nlen) == 0)
			return s + i;
	return NULL;
}

/* The target: "Handler (class) {hash}" up to its '}', else up to the
 * first space (or the end). Returns its length, 0 when empty. */
static size_t target_length(const char *s, size_t len)
{
	static const char HANDLER[] = "Handler (";
	if (starts_with(s, len, HANDLER, sizeof HANDLER - 1)) {
		const char *close = find(s, len, ") {", 3);
		if (close) {
			const char *brace = memchr(close + 3, '}', len - (size_t)(close + 3 - s));
			if (brace)
				return (size_t)(brace + 1 - s);
		}
	}
	const char *space = memchr(s, ' ', len);
	return space ? (size_t)(space - s) : len;
}

int tl_looper_parse_line(const char *line, size_t len, tl_looper_line *out)
{
	if (!line || !out)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (memchr(line, '\0', len))
		return -EINVAL;
	const char *p;
	size_t rest;
	if (starts_with(line, len, BEGIN_PREFIX, sizeof BEGIN_PREFIX - 1)) {
		out->kind = TL_LOOPER_LINE_BEGIN;
		p = line + sizeof BEGIN_PREFIX - 1;
	} else if (starts_with(line, len, END_PREFIX, sizeof END_PREFIX - 1)) {
		out->kind = TL_LOOPER_LINE_END;
		p = line + sizeof END_PREFIX - 1;
	} else {
		return -EINVAL;
	}
	rest = len - (size_t)(p - line);
	size_t target = target_length(p, rest);
	if (target == 0)
		return -EINVAL;
	out->handler = p;
	out->handler_len = target;
	p += target;
	rest -= target;
	if (rest && *p == ' ') {
		p++;
		rest--;
	}
	if (out->kind == TL_LOOPER_LINE_BEGIN) {
		/* what: after the last ": " (a callback's toString may hold one) */
		const char *sep = NULL;
		for (size_t i = 0; i + 2 <= rest; i++)
			if (p[i] == ':' && p[i + 1] == ' ')
				sep = p + i;
		if (!sep) {
			memset(out, 0, sizeof *out);
			return -EINVAL;
		}
		out->callback = p;
		out->callback_len = (size_t)(sep - p);
		out->what = sep + 2;
		out->what_len = rest - (size_t)(sep + 2 - p);
	} else {
		out->callback = p;
		out->callback_len = rest;
		out->what = p + rest;
	}
	return 0;
}

static size_t append(char *dst, size_t at, size_t cap, const char *s, size_t n)
{
	if (at >= cap)
		return at;
	if (n > cap - at)
		n = cap - at;
	memcpy(dst + at, s, n);
	return at + n;
}

int tl_looper_println(tl_looper *l, const char *line)
{
	tl_looper_line parsed;
	if (!line || tl_looper_parse_line(line, strlen(line), &parsed) != 0) {
		atomic_store_explicit(
		    &l->stat_malformed,
		    atomic_load_explicit(&l->stat_malformed, memory_order_relaxed) + 1,
		    memory_order_relaxed);
		return -EINVAL;
	}
	if (parsed.kind == TL_LOOPER_LINE_END) {
		tl_looper_dispatch_end(l);
		return 0;
	}
	/* "<handler> <callback>: <what>", cut at the copy limit */
	char name[LOOPER_NAME_MAX];
	const size_t cap = sizeof name - 1;
	size_t n = append(name, 0, cap, parsed.handler, parsed.handler_len);
	if (parsed.callback_len) {
		n = append(name, n, cap, " ", 1);
		n = append(name, n, cap, parsed.callback, parsed.callback_len);
	}
	n = append(name, n, cap, ": ", 2);
	n = append(name, n, cap, parsed.what, parsed.what_len);
	name[n] = '\0';
	tl_looper_dispatch_begin_flags(l, name, TL_LOOPER_COPY_NAME);
	return 0;
}
