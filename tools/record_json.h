/* `timeline record --format json`: the capture as Chrome JSON. */
#ifndef TIMELINE_TOOLS_RECORD_JSON_H
#define TIMELINE_TOOLS_RECORD_JSON_H

#include <stddef.h>

#include "tools/record_session.h"

/*
 * Writes the stopped session's events to fd as Chrome JSON: markers rebuilt
 * as `timeline convert` rebuilds them from ftrace text, and sched_switch as
 * per-CPU slices of a "CPUs" process. Returns 0 or -errno with a one-line
 * reason in err.
 */
int record_write_json(struct record_session *session, int fd, char *err, size_t errlen);

#endif
