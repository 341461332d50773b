/*
 * The JSON and ftrace snapshots: the binary snapshot written to memory,
 * then exported from it as it is read (export_stream.h), without a trace
 * model. Going through the binary form means a live snapshot and
 * `timeline convert` of a dump give the same output, and every snapshot
 * exercises the signal-safe writer.
 */
#include <errno.h>
#include <stdlib.h>

#include "recorder/atomic_file.h"
#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"
#include "recorder/recorder.h"
#include "recorder/snapshot_writer.h"
#include "recorder/stats.h"

static int snapshot_export(int fd, tl_export_stream_fn export_stream)
{
	unsigned char *data;
	size_t len;
	int rc = tl_snapshot_to_memory(&data, &len);
	if (rc)
		return rc;
	tl_model meta;
	tl_snapshot_read reader;
	rc = tl_snapshot_read_open(&reader, data, len, &meta, NULL, 0);
	tl_export_counts counts = {0, 0};
	if (rc == 0) {
		rc = export_stream(&reader, fd, &counts);
		tl_snapshot_read_close(&reader);
		tl_model_free(&meta);
	}
	free(data);
	if (rc == 0)
		tl_stats_note_export(counts.unmatched_begin, counts.unmatched_end);
	return rc;
}

struct export_job {
	tl_export_stream_fn export_stream;
};

static int export_to_fd(int fd, void *ctx)
{
	const struct export_job *job = ctx;
	return snapshot_export(fd, job->export_stream);
}

static int snapshot_export_path(const char *path, tl_export_stream_fn export_stream)
{
	if (!path)
		return -EINVAL;
	if (!tl_is_running() || tl_recorder_writes_through())
		return -ENODEV; /* before any file is created */
	struct export_job job = {export_stream};
	return tl_atomic_file_write(path, export_to_fd, &job);
}

int tl_snapshot_json_fd(int fd)
{
	return snapshot_export(fd, tl_export_json_stream);
}

int tl_snapshot_json(const char *path)
{
	return snapshot_export_path(path, tl_export_json_stream);
}

int tl_snapshot_ftrace_fd(int fd)
{
	return snapshot_export(fd, tl_export_ftrace_stream);
}

int tl_snapshot_ftrace(const char *path)
{
	return snapshot_export_path(path, tl_export_ftrace_stream);
}
