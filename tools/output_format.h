/*
 * The formats `timeline convert` and `timeline merge` write: by name
 * (--format) or from the output's extension.
 */
#ifndef TIMELINE_TOOLS_OUTPUT_FORMAT_H
#define TIMELINE_TOOLS_OUTPUT_FORMAT_H

#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"

typedef struct tl_output_format {
	const char *name;
	int (*write)(const tl_model *model, int fd, tl_export_counts *counts);
	/* the same from a binary snapshot, as it is read, without a model */
	tl_export_stream_fn write_stream;
} tl_output_format;

/* json, ftrace or perfetto; NULL for another name. */
const tl_output_format *tl_output_format_by_name(const char *name);

/* From the output's extension: .txt, .ftrace, .systrace give ftrace;
 * .perfetto-trace, .pftrace, .pb give perfetto; anything else json. */
const tl_output_format *tl_output_format_from_path(const char *path);

#endif /* TIMELINE_TOOLS_OUTPUT_FORMAT_H */
