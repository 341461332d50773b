/* A program built against the installed library, as a user would. */
#include <stdio.h>

#include <timeline/trace_event.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (tl_init(NULL) != 0)
		return 1;
	for (int i = 0; i < 3; i++) {
		TRACE_EVENT1("consumer", "step", "i", i);
		TRACE_EVENT_COUNTER("consumer", "value", i * 10);
	}
	int rc = tl_snapshot_json(argv[1]);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	printf("events %llu\n", (unsigned long long)st.events_written);
	tl_shutdown();
	return rc == 0 && st.events_written == 9 ? 0 : 1;
}
