/*
 * The C++ part of the instrumented example: a template instantiated twice,
 * an exception thrown and caught across an instrumented call (the shadow
 * stack closes the frame it skipped), and a library loaded with dlopen.
 * Readers name the calls demangled: `int example::scaled<int>(int, int)`.
 */
#include <dlfcn.h>
#include <stdexcept>

namespace example
{

template <typename T> T scaled(T value, T by)
{
	return value * by;
}

int checked(int value)
{
	if (value < 0)
		throw std::invalid_argument("negative");
	return value;
}

} // namespace example

/* Six calls: this one, scaled<int>, scaled<double>, checked, and the
 * plugin's plugin_work and plugin_square. Returns -1 when the plugin does
 * not load; it stays loaded, so that a snapshot maps it. */
extern "C" int example_cxx_work(const char *plugin)
{
	int total =
	    example::scaled<int>(3, 4) + static_cast<int>(example::scaled<double>(1.5, 2.0));
	try {
		total += example::checked(-1);
	} catch (const std::invalid_argument &) {
		total++;
	}
	void *library = dlopen(plugin, RTLD_NOW);
	if (!library)
		return -1;
	auto work = reinterpret_cast<int (*)(int)>(dlsym(library, "plugin_work"));
	return work ? total + work(3) : -1;
}
