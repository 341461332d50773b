/*
 * The log (log.c): one line per condition, through the user's callback or
 * stderr; never on the hot path. Internal.
 */
#ifndef TIMELINE_LOG_H
#define TIMELINE_LOG_H

#include <timeline/timeline.h>

#pragma GCC visibility push(hidden)

void tl_log_set(tl_log_fn fn, void *user);
void tl_log(tl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#pragma GCC visibility pop

#endif /* TIMELINE_LOG_H */
