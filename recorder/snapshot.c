/*
 * The JSON, ftrace and Perfetto snapshots: the binary snapshot written to memory,
 * read back into a trace model, exported. Going through the binary form
 * means a live snapshot and `timeline convert` of a dump give the same
 * output, and every snapshot exercises the signal-safe writer.
 */
#include <errno.h>
#include <stdlib.h>

#include "recorder/atomic_file.h"
#include "recorder/export/trace_model.h"
#include "recorder/recorder.h"
#include "recorder/snapshot_writer.h"
#include "recorder/stats.h"

typedef int (*exporter_fn)(const tl_model *model, int fd, tl_export_counts *counts);

static int snapshot_export(int fd, exporter_fn export_model)
{
	unsigned char *data;
	size_t len;
	int rc = tl_snapshot_to_memory(&data, &len);
	if (rc)
		return rc;
	tl_model model;
	rc = tl_model_read_binary(data, len, &model, NULL, 0);
	free(data);
	if (rc)
		return rc;
	tl_export_counts counts = {0, 0};
	rc = export_model(&model, fd, &counts);
	tl_model_free(&model);
	if (rc == 0)
		tl_stats_note_export(counts.unmatched_begin, counts.unmatched_end);
	return rc;
}

struct export_job {
	exporter_fn export_model;
};

static int export_to_fd(int fd, void *ctx)
{
	const struct export_job *job = ctx;
	return snapshot_export(fd, job->export_model);
}

static int snapshot_export_path(const char *path, exporter_fn export_model)
{
	if (!path)
		return -EINVAL;
	if (!tl_is_running() || tl_recorder_writes_through())
		return -ENODEV; /* before any file is created */
	struct export_job job = {export_model};
	return tl_atomic_file_write(path, export_to_fd, &job);
}

int tl_snapshot_json_fd(int fd)
{
	return snapshot_export(fd, tl_export_json);
}

int tl_snapshot_json(const char *path)
{
	return snapshot_export_path(path, tl_export_json);
}

int tl_snapshot_ftrace_fd(int fd)
{
	return snapshot_export(fd, tl_export_ftrace);
}

int tl_snapshot_ftrace(const char *path)
{
	return snapshot_export_path(path, tl_export_ftrace);
}

int tl_snapshot_perfetto_fd(int fd)
{
	return snapshot_export(fd, tl_export_perfetto);
}

int tl_snapshot_perfetto(const char *path)
{
	return snapshot_export_path(path, tl_export_perfetto);
}
