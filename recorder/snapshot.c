/*
 * The JSON, ftrace and Perfetto snapshots: the binary snapshot written to
 * memory, then exported from it as it is read (export_stream.h), without
 * a trace model. Going through the binary form means a live snapshot and
 * `timeline convert` of a dump give the same output, and every snapshot
 * exercises the signal-safe writer. Each is a snapshot request: what the
 * recorder holds is flushed first (tl_flush).
 */
#include <errno.h>
#include <stdlib.h>

#include "recorder/atomic_file.h"
#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"
#include "recorder/recorder.h"
#include "recorder/snapshot_writer.h"
#include "recorder/stats.h"

/* An exporter that streams. */
struct exporter {
	tl_export_stream_fn stream;
};

static int export_snapshot(const unsigned char *data, size_t len, int fd, const struct exporter *x,
                           tl_export_counts *counts)
{
	tl_model model;
	tl_snapshot_read reader;
	int rc = tl_snapshot_read_open(&reader, data, len, &model, NULL, 0);
	if (rc == 0) {
		rc = x->stream(&reader, fd, counts);
		tl_snapshot_read_close(&reader);
		tl_model_free(&model);
	}
	return rc;
}

static int snapshot_export(int fd, const struct exporter *x)
{
	unsigned char *data;
	size_t len;
	/* A snapshot request is a flush first, through the recorder's table
	 * (the file recorder writes its partly filled blocks to its file).
	 * A failure there is the file's, returned by tl_flush(); the snapshot
	 * is taken from memory all the same. */
	(void)tl_flush();
	int rc = tl_snapshot_to_memory(&data, &len);
	if (rc)
		return rc;
	tl_export_counts counts = {0, 0};
	rc = export_snapshot(data, len, fd, x, &counts);
	free(data);
	if (rc == 0)
		tl_stats_note_export(counts.unmatched_begin, counts.unmatched_end);
	return rc;
}

static int export_to_fd(int fd, void *ctx)
{
	return snapshot_export(fd, ctx);
}

static int snapshot_export_path(const char *path, const struct exporter *x)
{
	if (!path)
		return -EINVAL;
	if (!tl_is_running() || tl_recorder_writes_through())
		return -ENODEV; /* before any file is created */
	return tl_atomic_file_write(path, export_to_fd, (void *)x);
}

static const struct exporter json = {tl_export_json_stream};
static const struct exporter ftrace = {tl_export_ftrace_stream};
static const struct exporter perfetto = {tl_export_perfetto_stream};

int tl_snapshot_json_fd(int fd)
{
	return snapshot_export(fd, &json);
}

int tl_snapshot_json(const char *path)
{
	return snapshot_export_path(path, &json);
}

int tl_snapshot_ftrace_fd(int fd)
{
	return snapshot_export(fd, &ftrace);
}

int tl_snapshot_ftrace(const char *path)
{
	return snapshot_export_path(path, &ftrace);
}

int tl_snapshot_perfetto_fd(int fd)
{
	return snapshot_export(fd, &perfetto);
}

int tl_snapshot_perfetto(const char *path)
{
	return snapshot_export_path(path, &perfetto);
}
