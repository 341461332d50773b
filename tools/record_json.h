/* `timeline record --format json|perfetto`: the capture as Chrome JSON or
 * in Perfetto's protobuf format. */
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

/* The same trace model in Perfetto's format (tl_export_perfetto): the
 * per-CPU scheduling slices are slices too, not ftrace events. */
int record_write_perfetto(struct record_session *session, int fd, char *err, size_t errlen);

#endif
