/*
 * A program built against the installed timeline-instrument, as a user
 * would: compiled with -finstrument-functions, linked with the hooks'
 * library, nothing else written but tl_init. tests/test_install.c builds
 * and runs it. Exits 0 when its three calls of twice() were recorded.
 */
#include <stdio.h>

#include <timeline/instrument.h>

static __attribute__((noinline)) int twice(int x)
{
	return 2 * x;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (tl_init(NULL) != 0)
		return 1;
	int sum = 0;
	for (int i = 0; i < 3; i++)
		sum += twice(i);
	int rc = tl_snapshot_json(argv[1]);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	tl_shutdown();
	/* main was entered before tl_init: three calls, a BEGIN and an END each */
	printf("sum %d events %llu\n", sum, (unsigned long long)st.events_written);
	return rc == 0 && sum == 6 && st.events_written == 6 ? 0 : 1;
}
