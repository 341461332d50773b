/* libFuzzer target: the `dumpsys SurfaceFlinger --latency` reader and the
 * statistics over what it accepts, on any bytes. */
#include <stddef.h>
#include <stdint.h>

#include "tracers/frame_stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	(void)tl_sf_latency_sniff(text, size);
	tl_sf_latency lat;
	tl_sf_issue fatal;
	if (tl_sf_latency_parse(text, size, &lat, &fatal) != 0)
		return 0;
	tl_present_stats stats;
	(void)tl_present_stats_compute(lat.frames, lat.nframes, &stats);
	tl_sf_latency_free(&lat);
	return 0;
}
