/*
 * libFuzzer target: any bytes read from a file as `timeline slices` reads
 * them, twice: the whole import printed (tl_import_print) and the items
 * handed to the printer as the import goes (tl_import_read_file_to). Both
 * must succeed or fail alike, with the same bytes out; a difference
 * aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/readers/import_print.h"
#include "tools/readers/trace_import.h"

#define KINDS (TL_PRINT_DEFAULT | TL_PRINT_ARG | TL_PRINT_PROCESS | TL_PRINT_THREAD | TL_PRINT_STAT)

/* The input's file: one per process, rewritten for each input. */
static const char *input_path(void)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof path, "fuzz-import-stream-%ld.input", (long)getpid());
	return path;
}

static char *printed(FILE *mem, char **text)
{
	if (fclose(mem) != 0)
		abort();
	return *text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = input_path();
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();

	char *whole = NULL, *streamed = NULL;
	size_t whole_len = 0, streamed_len = 0;
	tl_import imp;
	int rc_whole = tl_import_read_file(path, &imp, NULL, NULL);
	if (rc_whole == 0) {
		FILE *mem = open_memstream(&whole, &whole_len);
		if (!mem)
			abort();
		tl_import_print(&imp, KINDS, mem);
		printed(mem, &whole);
		tl_import_free(&imp);
	}

	tl_import_printer *p = tl_import_printer_new(KINDS);
	if (!p)
		abort();
	int rc_streamed =
	    tl_import_read_file_to(path, tl_import_printer_sink(p), NULL, &imp, NULL, NULL);
	if (rc_streamed == 0) {
		FILE *mem = open_memstream(&streamed, &streamed_len);
		if (!mem || tl_import_printer_write(p, &imp, NULL, mem) != 0)
			abort();
		printed(mem, &streamed);
		tl_import_free(&imp);
	}
	tl_import_printer_free(p);

	if (rc_whole != rc_streamed) {
		fprintf(stderr, "whole import: %d, streamed: %d\n", rc_whole, rc_streamed);
		abort();
	}
	if (rc_whole == 0 && (whole_len != streamed_len || memcmp(whole, streamed, whole_len))) {
		fprintf(stderr, "whole import printed:\n%s\nstreamed:\n%s\n", whole, streamed);
		abort();
	}
	free(whole);
	free(streamed);
	return 0;
}
