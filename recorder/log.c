/*
 * The library's log: one line per condition a user should know about (a bad
 * environment value, a full thread table, a recorder that turned itself
 * off). Goes to the tl_options.log callback, or to stderr. Never called on
 * the hot path.
 */
#include <stdarg.h>
#include <stdio.h>

#include "recorder/log.h"

static tl_log_fn log_fn;
static void *log_user;

void tl_log_set(tl_log_fn fn, void *user)
{
	log_fn = fn;
	log_user = user;
}

void tl_log(tl_log_level level, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (log_fn) {
		log_fn(level, line, log_user);
		return;
	}
	static const char *const names[] = {"error", "warning", "info"};
	fprintf(stderr, "timeline: %s: %s\n", names[level <= TL_LOG_INFO ? level : TL_LOG_INFO],
		line);
}
