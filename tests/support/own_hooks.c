/*
 * A program that writes its own -finstrument-functions hooks on the public
 * API, as a user would without timeline::instrument: built with
 * -finstrument-functions as a whole, hooks included (they carry
 * no_instrument_function, the header's inline functions must too).
 * tests/test_instrument.c builds it with gcc and with clang and runs it.
 * Exits 0 when every call of work() was recorded as a slice.
 */
#include <stdio.h>

#include <timeline/trace_event.h>

#define HOOK __attribute__((no_instrument_function))

static tl_category *hooks_cat;

HOOK void __cyg_profile_func_enter(void *function, void *call_site);
HOOK void __cyg_profile_func_exit(void *function, void *call_site);

HOOK void __cyg_profile_func_enter(void *function, void *call_site)
{
	(void)function;
	(void)call_site;
	if (hooks_cat && tl_category_enabled(hooks_cat))
		tl_emit_begin(hooks_cat, "call");
}

HOOK void __cyg_profile_func_exit(void *function, void *call_site)
{
	(void)function;
	(void)call_site;
	if (hooks_cat && tl_category_enabled(hooks_cat))
		tl_emit_end(hooks_cat);
}

static __attribute__((noinline)) int work(int i)
{
	TRACE_EVENT1("own_hooks", "work", "i", i); /* the macros' inline functions too */
	return i * 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (tl_init(NULL) != 0)
		return 1;
	hooks_cat = tl_category_get("hooks");
	int sum = 0;
	for (int i = 0; i < 5; i++)
		sum += work(i);
	hooks_cat = NULL;
	int rc = tl_snapshot_json(argv[1]);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	tl_shutdown();
	/* 5 calls of work, each a slice of the hooks around its own (main
	 * was entered before tl_init, and hooks_cat is cleared first) */
	printf("sum %d events %llu\n", sum, (unsigned long long)st.events_written);
	return rc == 0 && sum == 20 && st.events_written == 5 * 4 ? 0 : 1;
}
