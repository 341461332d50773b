/* libFuzzer target: the binary snapshot reader never crashes, never reads
 * outside its input, and whatever it accepts exports as JSON, ftrace text
 * and Perfetto protobuf, streamed (export_stream.h) to the same bytes as
 * through the model, and imports (`timeline slices`) from its records to
 * the items of its model. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder/export/export_stream.h"
#include "recorder/export/trace_model.h"
#include "tools/readers/trace_import.h"

/* A file in memory, emptied for each use. */
static int memory_file(void)
{
	static int fd = -1;
	if (fd < 0)
		fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	return fd;
}

/* What was written to fd; malloc'd, *len its size. */
static char *contents(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	char *text = malloc((size_t)end + 1);
	if (end < 0 || !text || pread(fd, text, (size_t)end, 0) != end)
		abort();
	*len = (size_t)end;
	return text;
}

static void check_same(const uint8_t *data, size_t size, const tl_model *model,
                       int (*export_model)(const tl_model *, int, tl_export_counts *),
                       tl_export_stream_fn export_stream)
{
	int fd = memory_file();
	export_model(model, fd, NULL);
	size_t model_len;
	char *model_text = contents(fd, &model_len);

	fd = memory_file();
	tl_model meta;
	tl_snapshot_read reader;
	if (tl_snapshot_read_open(&reader, data, size, &meta, NULL, 0) != 0)
		abort(); /* the model's reader accepted it */
	export_stream(&reader, fd, NULL);
	tl_snapshot_read_close(&reader);
	tl_model_free(&meta);
	size_t stream_len;
	char *stream_text = contents(fd, &stream_len);

	if (model_len != stream_len || memcmp(model_text, stream_text, model_len) != 0) {
		fprintf(stderr, "streamed export differs from the model's\n");
		abort();
	}
	free(model_text);
	free(stream_text);
}

/* Every item and stat of an import, as `timeline slices` prints them. */
static char *printed(const tl_import *imp, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	if (!f)
		abort();
	tl_import_print(imp, ~0u, f);
	fclose(f);
	return text;
}

static void check_import(const uint8_t *data, size_t size, const tl_model *model)
{
	tl_import from_records, from_model;
	if (tl_import_snapshot(data, size, &from_records, NULL, 0) != 0)
		abort(); /* the model's reader accepted it */
	if (tl_import_model(model, &from_model) != 0)
		abort();
	size_t a_len, b_len;
	char *a = printed(&from_records, &a_len), *b = printed(&from_model, &b_len);
	if (a_len != b_len || memcmp(a, b, a_len) != 0) {
		fprintf(stderr, "the import from the records differs from the model's\n");
		abort();
	}
	free(a);
	free(b);
	tl_import_free(&from_records);
	tl_import_free(&from_model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_model model;
	char err[256];
	if (tl_model_read_binary(data, size, &model, err, sizeof err) != 0)
		return 0;
	check_same(data, size, &model, tl_export_json, tl_export_json_stream);
	check_same(data, size, &model, tl_export_ftrace, tl_export_ftrace_stream);
	check_same(data, size, &model, tl_export_perfetto, tl_export_perfetto_stream);
	check_import(data, size, &model);
	tl_model_free(&model);
	return 0;
}
