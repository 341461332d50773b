/*
 * `timeline fps`: the pieces shared by tools/cmd_fps.c (arguments, tables,
 * JSON), tools/fps_trace.c (frames out of a trace) and tools/fps_svg.c (the
 * chart).
 */
#ifndef TIMELINE_TOOLS_FPS_H
#define TIMELINE_TOOLS_FPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracers/frame_stats.h"

/* One sequence of frames: a --latency file, or one thread of a trace. */
typedef struct fps_series {
	char label[300];
	bool from_trace;
	tl_present_frame *presents; /* input of the statistics */
	size_t npresents;
	tl_present_stats stats;
	/* The chart: one value per frame, in frame order. */
	int64_t *chart_ns;
	size_t nchart;
	/* --latency input: its row counts (frames not owned here). */
	tl_sf_latency latency;
	/* trace input: the frame slices' own numbers */
	uint64_t slices;
	int64_t duration_p50_ns, duration_p90_ns, duration_p99_ns, duration_max_ns;
	uint64_t dropped_frames, janky_frames;
	bool period_estimated; /* no period in the trace: from the intervals */
} fps_series;

typedef struct fps_series_list {
	fps_series *items;
	size_t count, cap;
} fps_series_list;

/* A fresh zeroed series at the end of the list, or NULL on ENOMEM. */
fps_series *fps_series_add(fps_series_list *list);
void fps_series_list_free(fps_series_list *list);

/*
 * Adds one series per thread with frame slices ("frame <n>") in the trace
 * at path, read by name, or from data[0..len) when data is not NULL (the
 * bytes read from a pipe: malloc'd, a NUL after them; freed by the call).
 * Returns 0, or 1 after printing one "timeline fps: PATH: ..." line on
 * stderr.
 */
int fps_read_trace(const char *path, char *data, size_t len, fps_series_list *out);

/* Whether data, a file's first bytes (64 KiB, or all of a shorter file),
 * is a trace fps_read_trace may read: one the importer tells the format of
 * (tl_trace_format_sniff), so that its errors are that format's. */
bool fps_trace_sniff(const char *data, size_t len);

/* Writes the SVG chart of every series (one panel each), whole or not at
 * all (recorder/atomic_file.h). Returns 0 or -errno. */
int fps_write_svg(const char *path, const fps_series_list *list);

#endif /* TIMELINE_TOOLS_FPS_H */
