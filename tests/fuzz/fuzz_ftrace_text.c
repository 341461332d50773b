/* libFuzzer target: the ftrace/systrace text reader, on any bytes, in its
 * tolerant and its strict mode, and the importer on what it reads. */
#include <stddef.h>
#include <stdint.h>

#include "tools/readers/ftrace_text.h"
#include "tools/readers/trace_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const unsigned modes[] = {0, TL_FTRACE_STRICT};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		tl_ftrace_text text;
		tl_read_error err;
		if (tl_ftrace_text_read((const char *)data, size, modes[i], &text, &err) != 0)
			continue;
		tl_import imp;
		if (tl_import_build(&text, NULL, &imp) == 0)
			tl_import_free(&imp);
		tl_ftrace_text_free(&text);
	}
	return 0;
}
