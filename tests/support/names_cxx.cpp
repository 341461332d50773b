// C++ functions for test_function_names.c: a template instantiation in a
// namespace, whose symbol readers demangle.
#include "support/names_cxx.h"

namespace names
{

template <typename T> T twice(T value)
{
	return value + value;
}

template int twice<int>(int);

} // namespace names

extern "C" const void *names_cxx_template_address(void)
{
	return reinterpret_cast<const void *>(&names::twice<int>);
}
