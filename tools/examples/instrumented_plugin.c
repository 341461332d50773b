/*
 * A library the instrumented example loads with dlopen, built with
 * -finstrument-functions: its calls are recorded through the hooks the
 * program already has, and named from this library's own symbol table
 * (its static function too).
 */

static int plugin_square(int value)
{
	return value * value;
}

int plugin_work(int value);

int plugin_work(int value)
{
	return plugin_square(value) + 1;
}
