/* libFuzzer target: the binary snapshot reader never crashes, never reads
 * outside its input, and whatever it accepts exports as JSON and ftrace. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "recorder/export/trace_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	tl_model model;
	char err[256];
	if (tl_model_read_binary(data, size, &model, err, sizeof err) != 0)
		return 0;
	tl_export_json(&model, devnull, NULL);
	tl_export_ftrace(&model, devnull, NULL);
	tl_model_free(&model);
	return 0;
}
