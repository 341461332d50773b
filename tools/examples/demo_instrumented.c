/*
 * The demo engine (tools/demo_engine.c) built with -finstrument-functions
 * and linked with timeline::instrument: every call of the engine's
 * functions is a slice, between the TRACE_EVENT slices the engine writes
 * itself, on the main loop and on every worker thread. Nothing else of the
 * program knows about instrumentation.
 *
 * usage: demo-instrumented SNAPSHOT [SECONDS]
 *
 * Runs the engine for SECONDS (default 0.3) under the endless recorder and
 * writes a binary snapshot to SNAPSHOT, for `timeline convert` (any
 * format: `--format perfetto` opens in Perfetto's UI). Prints the engine's
 * report and the instrumentation's counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <timeline/instrument.h>
#include <timeline/timeline.h>

#include "tools/demo_engine.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s SNAPSHOT [SECONDS]\n", argv[0]);
		return 2;
	}
	double seconds = argc == 3 ? strtod(argv[2], NULL) : 0.3;
	if (!(seconds > 0)) {
		fprintf(stderr, "%s: SECONDS must be a positive number\n", argv[0]);
		return 2;
	}
	/* every call kept: nothing overwritten, room for a few seconds */
	tl_options opts = {.struct_size = sizeof opts,
	                   .recorder = TL_RECORDER_ENDLESS,
	                   .buffer_bytes = 256u << 20,
	                   .process_name = "timeline-demo-instrumented"};
	int rc = tl_init(&opts);
	if (rc) {
		fprintf(stderr, "%s: tl_init: %s\n", argv[0], strerror(-rc));
		return 1;
	}
	struct demo_engine_report run;
	rc = demo_engine_run(seconds, NULL, &run);
	if (rc == 0)
		rc = tl_snapshot_binary(argv[1]);
	tl_stats stats = {.struct_size = sizeof stats};
	tl_stats_get(&stats);
	tl_shutdown();
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[0], strerror(-rc));
		return 1;
	}
	tl_instrument_stats st = {.struct_size = sizeof st};
	tl_instrument_stats_get(&st);
	printf("frames %u, jobs %u, workers %u; events written %llu, dropped %llu; "
	       "calls filtered %llu, too deep %llu, re-entered %llu, closed %llu\n",
	       run.frames, run.jobs, run.workers, (unsigned long long)stats.events_written,
	       (unsigned long long)stats.events_dropped, (unsigned long long)st.filtered,
	       (unsigned long long)st.too_deep, (unsigned long long)st.reentered,
	       (unsigned long long)st.frames_closed);
	return stats.events_dropped ? 1 : 0;
}
