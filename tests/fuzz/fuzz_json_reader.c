/* libFuzzer target: the Chrome JSON reader and the importer behind it, and
 * the model and exporters `timeline convert` runs on what they accept; and
 * the two-pass reading of a file (tl_json_scan, then tl_json_read_event on
 * the place of each event), which must accept what the whole read accepts
 * and read every event again as the scan read it, and whose import of the
 * input as a file (tl_import_read_file: runs merged, or the index) must be
 * the whole read's. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/json_reader.h"
#include "tools/readers/trace_import.h"

static int same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_value(const tl_json_value *a, const tl_json_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TL_JSON_BOOL:
	case TL_JSON_INT:
		return a->i == b->i;
	case TL_JSON_DOUBLE:
		return a->d == b->d || (isnan(a->d) && isnan(b->d));
	case TL_JSON_STRING:
		return same_string(a->s, b->s);
	default:
		return 1;
	}
}

/* Reads the event at its place again and aborts unless it is the same. */
static int read_again(void *ctx, const tl_json_trace *trace, const tl_json_event *e, size_t offset,
                      size_t len)
{
	const char *data = ctx;
	tl_json_trace again = {0};
	if (tl_json_read_event(data + offset, len, &again) != 0)
		abort();
	const tl_json_event *r = &again.events[0];
	if (r->ph != e->ph || r->ts != e->ts || r->dur != e->dur || r->has != e->has ||
	    r->pid != e->pid || r->tid != e->tid || r->nargs != e->nargs ||
	    !same_string(r->name, e->name) || !same_string(r->cat, e->cat) ||
	    !same_value(&r->id, &e->id) || !same_value(&r->bind_id, &e->bind_id))
		abort();
	for (uint32_t i = 0; i < e->nargs; i++) {
		const tl_json_arg *a = &trace->args[e->first_arg + i], *b = &again.args[i];
		if (!same_string(a->key, b->key) || a->top_level != b->top_level ||
		    !same_value(&a->value, &b->value))
			abort();
	}
	tl_json_trace_free(&again);
	return 0;
}

/* Everything an import holds, as text (malloc'd). */
static char *printed(const tl_import *imp)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	tl_import_print(imp, ~0u, f);
	fprintf(f, "clock=%d known=%d boot=%lld mono=%lld real=%lld\n", (int)imp->clock,
	        imp->clock_values.known, (long long)imp->clock_values.boottime_ns,
	        (long long)imp->clock_values.monotonic_ns,
	        (long long)imp->clock_values.realtime_ns);
	fclose(f);
	return text;
}

/* The input imported as a file must be the whole read's import. */
static void import_as_a_file(const uint8_t *data, size_t size, const tl_import *whole)
{
	int fd = memfd_create("fuzz-json", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	tl_import imp;
	tl_trace_format format;
	if (tl_import_read_file(path, &imp, &format, NULL) == 0) {
		if (format == TL_TRACE_FORMAT_JSON) {
			char *a = printed(whole), *b = printed(&imp);
			if (strcmp(a, b) != 0)
				abort();
			free(a);
			free(b);
		}
		tl_import_free(&imp);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	tl_json_trace trace;
	tl_read_error err;
	int whole = tl_json_read((const char *)data, size, &trace, &err);
	tl_json_trace scanned;
	int scan =
	    tl_json_scan((const char *)data, size, 0, read_again, (void *)data, &scanned, NULL);
	if ((whole == 0) != (scan == 0))
		abort();
	if (scan == 0)
		tl_json_trace_free(&scanned);
	if (whole != 0)
		return 0;
	tl_import imp;
	if (tl_import_build(NULL, &trace, &imp) == 0) {
		import_as_a_file(data, size, &imp);
		tl_model model;
		if (tl_import_to_model(&imp, &model) == 0) {
			tl_export_json(&model, devnull, NULL);
			tl_model_free(&model);
		}
		tl_import_free(&imp);
	}
	tl_json_trace_free(&trace);
	return 0;
}
