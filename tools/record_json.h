/* `timeline record --format json|perfetto`: the capture as Chrome JSON or
 * in Perfetto's protobuf format. */
#ifndef TIMELINE_TOOLS_RECORD_JSON_H
#define TIMELINE_TOOLS_RECORD_JSON_H

#include <stddef.h>

#include "tools/record_session.h"

/*
 * Writes the stopped session's events to fd as Chrome JSON: markers rebuilt
 * as `timeline convert` rebuilds them from ftrace text, sched_switch as
 * per-CPU slices of a "CPUs" process, and the command's own events from the
 * file recorder files "app-PID.tl" of app_dir (NULL: none), each with the
 * older files of its rotation ("app-PID.tl.N"), with their args, flows,
 * categories and names. Data lost in such a file is said on standard error
 * and what was read is merged. Returns 0 or -errno with a one-line reason
 * in err.
 */
int record_write_json(struct record_session *session, const char *app_dir, int fd, char *err,
                      size_t errlen);

/* The same trace model in Perfetto's format (tl_export_perfetto): the
 * per-CPU scheduling slices are slices too, not ftrace events. */
int record_write_perfetto(struct record_session *session, const char *app_dir, int fd, char *err,
                          size_t errlen);

/* The session as ftrace text (record_session_write_text), with the
 * command's own events of app_dir (NULL: none) as the ftrace exporter
 * writes them, moved to the capture's clock (capture_clock: 7 boot, 1
 * mono) and merged by timestamp. The capture's atrace markers of a process
 * whose own events are merged are left out, as in the JSON: each event is
 * shown once. */
int record_write_text(struct record_session *session, const char *app_dir, int capture_clock,
                      int fd, char *err, size_t errlen);

#endif
