/* A library test_function_names.c loads with dlopen: a static function
 * whose address it hands out, to be named from this library's symbols. */
#include <stdint.h>

static volatile int plugin_calls;

static void names_plugin_local(void)
{
	plugin_calls++;
}

const void *names_plugin_local_address(void);

const void *names_plugin_local_address(void)
{
	return (const void *)(uintptr_t)names_plugin_local;
}
