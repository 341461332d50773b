/* libFuzzer target: the trace_marker payload parser and the clock sync
 * reader, on any bytes. */
#include <stddef.h>
#include <stdint.h>

#include "tools/readers/atrace_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_atrace_point point;
	tl_atrace_parse((const char *)data, size, &point);
	int64_t ns;
	tl_atrace_parse_clock_sync((const char *)data, size, &ns);
	return 0;
}
