/*
 * The demo engine built with -finstrument-functions
 * (tools/examples/demo_instrumented.c): its snapshot, converted by
 * `timeline convert --format perfetto`, decodes against Perfetto's schema
 * and holds every call of the engine, on every thread, as a balanced slice
 * between the engine's own slices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

#include "tools/readers/perfetto_reader.h"

#ifndef TL_DEMO_INSTRUMENTED
#define TL_DEMO_INSTRUMENTED "" /* not built: main skips */
#endif

static char perfetto[4096]; /* the Perfetto export of the run's snapshot */

static int setup(void **state)
{
	(void)state;
	char snapshot[4096];
	snprintf(snapshot, sizeof snapshot, "%s", tl_test_path("demo-instrumented", ".tlsnap"));
	snprintf(perfetto, sizeof perfetto, "%s",
	         tl_test_path("demo-instrumented", ".perfetto-trace"));
	const char *emulator = tl_test_emulator(); /* a cross build's program */
	if (tl_test_run("%s%s'%s' '%s' 0.2 >/dev/null", emulator ? emulator : "",
	                emulator ? " " : "", TL_DEMO_INSTRUMENTED, snapshot) != 0)
		return -1;
	int rc = tl_test_run("'%s' convert '%s' --format perfetto -o '%s' 2>/dev/null",
	                     tl_test_cli(), snapshot, perfetto);
	unlink(snapshot);
	return rc;
}

static int teardown(void **state)
{
	(void)state;
	unlink(perfetto);
	return 0;
}

static void test_instrumented_demo_decodes_with_the_perfetto_schema(void **state)
{
	(void)state;
	char *text = tl_test_perfetto_decode(perfetto);
	assert_non_null(strstr(text, "process_name: \"timeline-demo-instrumented\""));
	assert_non_null(strstr(text, "name: \"function\""));
	free(text);
}

/* Every track's slices nest: a slice end always closes an open slice, and
 * none is open at the end. Returns the function slices (category
 * "function"), each named; *threads: the tracks that have some. */
static size_t balanced_function_slices(const tl_perfetto_trace *t, size_t *threads)
{
	size_t functions = 0;
	*threads = 0;
	for (size_t k = 0; k < t->ntracks; k++) {
		uint64_t track = t->tracks[k].uuid;
		long depth = 0;
		size_t here = 0;
		for (size_t i = 0; i < t->nevents; i++) {
			const tl_perfetto_event *e = &t->events[i];
			if (e->track != track)
				continue;
			if (e->type == TL_PERFETTO_SLICE_BEGIN) {
				depth++;
				if (e->cat && strcmp(e->cat, "function") == 0) {
					assert_non_null(e->name);
					assert_true(e->name[0] != '\0');
					here++;
				}
			} else if (e->type == TL_PERFETTO_SLICE_END) {
				if (depth == 0)
					fail_msg("track %llu: a slice end with no slice open",
					         (unsigned long long)track);
				depth--;
			}
		}
		if (depth != 0)
			fail_msg("track %llu: %ld slices left open", (unsigned long long)track,
			         depth);
		functions += here;
		*threads += here > 0;
	}
	return functions;
}

static void test_instrumented_demo_has_every_function_as_a_balanced_slice(void **state)
{
	(void)state;
	size_t len;
	char *data = tl_test_read_file(perfetto, &len);
	assert_non_null(data);
	tl_perfetto_trace trace;
	tl_read_error err;
	assert_int_equal(tl_perfetto_read(data, len, &trace, &err), 0);
	size_t threads;
	size_t calls = balanced_function_slices(&trace, &threads);
	assert_true(calls > 1000);
	assert_true(threads >= 2); /* the main loop and the workers */
	tl_perfetto_trace_free(&trace);
	free(data);
}

int main(void)
{
	if (!*TL_DEMO_INSTRUMENTED) {
		printf("skipped: the examples are not built (TIMELINE_BUILD_EXAMPLES=OFF)\n");
		return TL_TEST_SKIP_EXIT;
	}
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_instrumented_demo_decodes_with_the_perfetto_schema),
	    cmocka_unit_test(test_instrumented_demo_has_every_function_as_a_balanced_slice),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
