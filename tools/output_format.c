#include "tools/output_format.h"

#include <string.h>
#include <strings.h>

static const tl_output_format formats[] = {
    {"json", tl_export_json, tl_export_json_stream},
    {"ftrace", tl_export_ftrace, tl_export_ftrace_stream},
    {"perfetto", tl_export_perfetto, tl_export_perfetto_stream},
};
enum { JSON, FTRACE, PERFETTO };

const tl_output_format *tl_output_format_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(name, formats[i].name) == 0)
			return &formats[i];
	return NULL;
}

const tl_output_format *tl_output_format_from_path(const char *path)
{
	static const struct {
		const char *ext;
		int format;
	} extensions[] = {
	    {".txt", FTRACE},          {".ftrace", FTRACE},   {".systrace", FTRACE},
	    {".perfetto-trace", PERFETTO}, {".pftrace", PERFETTO}, {".pb", PERFETTO},
	};
	const char *base = strrchr(path, '/');
	const char *ext = strrchr(base ? base : path, '.');
	for (size_t i = 0; ext && i < sizeof extensions / sizeof extensions[0]; i++)
		if (strcasecmp(ext, extensions[i].ext) == 0)
			return &formats[extensions[i].format];
	return &formats[JSON];
}
