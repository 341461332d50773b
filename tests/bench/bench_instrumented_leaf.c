/* Built with -finstrument-functions (tests/bench/CMakeLists.txt): a call of
 * it is an instrumented call, for bench_instrument.c. */
#include "bench.h"

void bench_instrumented_leaf(void)
{
	BENCH_BARRIER();
}
