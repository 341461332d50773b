/*
 * C++ built with -finstrument-functions for tests/test_instrument.c: an
 * exception thrown through C frames built without -fexceptions
 * (instrumented_calls.c), caught above them.
 */
/* instrumented_calls.h, whose C11 atomics C++ does not read */
extern "C" void instrumented_c_through(void (*fn)(void));

static void thrower()
{
	throw 7;
}

extern "C" int instrumented_exception_through_c(void)
{
	try {
		instrumented_c_through(thrower);
	} catch (int caught) {
		return caught;
	}
	return 0;
}
