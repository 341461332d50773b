/*
 * The hooks of gcc's and clang's -finstrument-functions, in a library of
 * their own (timeline::instrument): a program built with the flag and
 * linked with it records every call (include/timeline/instrument.h). They
 * hand the call to libtimeline, which keeps the per-thread state.
 *
 * This file is built without -finstrument-functions, and the hooks carry
 * no_instrument_function besides, so that they never call themselves.
 */
#include <timeline/instrument.h>


TL_NO_INSTRUMENT void __cyg_profile_func_enter(void *function, void *call_site);
TL_NO_INSTRUMENT void __cyg_profile_func_exit(void *function, void *call_site);

/* Before the program's own constructors (this library is loaded first):
 * the category, the thread-exit key and the environment. */
static TL_NO_INSTRUMENT __attribute__((constructor)) void instrument_load(void)
{
	tl_i_instrument_setup();
}

TL_NO_INSTRUMENT void __cyg_profile_func_enter(void *function, void *call_site)
{
	tl_i_instrument_enter(function, call_site);
}

TL_NO_INSTRUMENT void __cyg_profile_func_exit(void *function, void *call_site)
{
	tl_i_instrument_exit(function, call_site);
}
