/* libFuzzer target: the Perfetto trace reader and the importer behind it,
 * and the model and the Perfetto exporter `timeline convert` runs on what
 * they accept. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/perfetto_reader.h"
#include "tools/readers/trace_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	tl_perfetto_sniff((const char *)data, size);
	tl_perfetto_trace trace;
	tl_read_error err;
	if (tl_perfetto_read((const char *)data, size, &trace, &err) != 0)
		return 0;
	tl_import imp;
	if (tl_import_perfetto(&trace, &imp) == 0) {
		tl_model model;
		if (tl_import_to_model(&imp, &model) == 0) {
			tl_export_perfetto(&model, devnull, NULL);
			tl_model_free(&model);
		}
		tl_import_free(&imp);
	}
	tl_perfetto_trace_free(&trace);
	return 0;
}
