/* Built with TIMELINE_DISABLED: every macro compiles to nothing, arguments
 * are type-checked but never evaluated. */
#include "support/test_support.h"

#include <timeline/trace_event.h>

static int side_effect(int *n)
{
	return ++*n;
}

static void test_disabled_build_records_nothing(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	int evaluated = 0;
	TL_TRACE_EVENT0("off", "scoped");
	TL_TRACE_EVENT1("off", "scoped", "n", side_effect(&evaluated));
	TL_TRACE_EVENT_BEGIN2("off", "b", "a", 1, "s", "str");
	TL_TRACE_EVENT_END0("off", "b");
	TL_TRACE_EVENT_INSTANT1("off", "i", TL_SCOPE_GLOBAL, "n", side_effect(&evaluated));
	TL_TRACE_EVENT_ASYNC_BEGIN0("off", "a", 1);
	TL_TRACE_EVENT_FLOW_STEP0("off", "f", 2);
	TL_TRACE_EVENT_COUNTER("off", "c", side_effect(&evaluated));
	TL_TRACE_EVENT_COMPLETE("off", "x", tl_now(), tl_now());
	TRACE_EVENT_COPY_BEGIN0("off", "copy");
	assert_false(TL_TRACE_ENABLED("off"));
	assert_int_equal(evaluated, 0);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.events_written, 0);
	tl_shutdown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disabled_build_records_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
