/*
 * libFuzzer target: the Android Looper printer-line parser on any bytes,
 * then the same bytes fed to a loop as a printer line (no session).
 */
#include <stdlib.h>
#include <string.h>

#include <timeline/looper.h>

static int inside(const char *p, size_t n, const uint8_t *data, size_t size)
{
	return p >= (const char *)data && p + n <= (const char *)data + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static tl_looper *loop;
	if (!loop) {
		tl_looper_options o;
		tl_looper_options_init(&o);
		o.anr_timeout_ms = 0;
		o.lag_threshold_ms = 0;
		o.slow_dispatch_ms = 0;
		loop = tl_looper_create(&o);
	}
	tl_looper_line line;
	if (tl_looper_parse_line((const char *)data, size, &line) == 0) {
		if (!inside(line.handler, line.handler_len, data, size) || line.handler_len == 0 ||
		    !inside(line.callback, line.callback_len, data, size) ||
		    !inside(line.what, line.what_len, data, size))
			abort();
	}
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	tl_looper_println(loop, text);
	free(text);
	return 0;
}
