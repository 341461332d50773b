/* The installed package: headers, shared library, pkg-config file and
 * CMake package config work for a program built outside the tree. */
#include <stdio.h>
#include <stdlib.h>

#include "support/test_support.h"

static const char *prefix;

static int setup(void **state)
{
	(void)state;
	prefix = tl_test_path("install", "");
	int rc = tl_test_run("cmake --install %s --prefix %s >/dev/null", TL_BINARY_DIR, prefix);
	return rc == 0 ? 0 : -1;
}

static void test_pkg_config_consumer_builds_and_records(void **state)
{
	(void)state;
	const char *exe = tl_test_path("consumer-pc", "");
	const char *json = tl_test_path("consumer-pc", ".json");
	assert_int_equal(tl_test_run("PKG_CONFIG_PATH=%s/lib/pkgconfig:%s/lib64/pkgconfig "
				     "cc -std=c11 -Wall -Werror %s/tests/consumer/consumer.c -o %s "
				     "$(PKG_CONFIG_PATH=%s/lib/pkgconfig:%s/lib64/pkgconfig "
				     "pkg-config --cflags --libs timeline)",
				     prefix, prefix, TL_SOURCE_DIR, exe, prefix, prefix),
			 0);
	assert_int_equal(tl_test_run("LD_LIBRARY_PATH=%s/lib:%s/lib64 %s %s", prefix, prefix, exe,
				     json),
			 0);
	assert_int_equal(tl_test_run("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s",
				     json),
			 0);
}

static void test_pkg_config_instrumented_consumer_records_its_calls(void **state)
{
	(void)state;
	const char *exe = tl_test_path("consumer-instrument", "");
	const char *json = tl_test_path("consumer-instrument", ".json");
	assert_int_equal(tl_test_run("cc -std=c11 -O2 -Wall -Werror -finstrument-functions "
	                             "%s/tests/support/instrument_consumer.c -o %s "
	                             "$(PKG_CONFIG_PATH=%s/lib/pkgconfig:%s/lib64/pkgconfig "
	                             "pkg-config --cflags --libs timeline-instrument)",
	                             TL_SOURCE_DIR, exe, prefix, prefix),
	                 0);
	assert_int_equal(
	    tl_test_run("LD_LIBRARY_PATH=%s/lib:%s/lib64 %s %s", prefix, prefix, exe, json), 0);
	char *text = tl_test_read_file(json, NULL);
	assert_non_null(text);
	/* three calls: each a B/E pair, or one X where its entry and exit
	 * share a timestamp (a TSC that advances in steps of 10 ns, as some
	 * CPUs' does, stamps an empty function's entry and exit alike) */
	size_t pairs = tl_test_count(text, "{\"ph\":\"B\"");
	size_t ends = tl_test_count(text, "{\"ph\":\"E\"");
	size_t whole = tl_test_count(text, "{\"ph\":\"X\"");
	assert_int_equal(pairs, ends);
	assert_int_equal(pairs + whole, 3);
	assert_int_equal(tl_test_count(text, "\"cat\":\"function\""), 2 * pairs + whole);
	free(text);
}

static void test_cmake_package_consumer_builds_and_records(void **state)
{
	(void)state;
	const char *build = tl_test_path("consumer-cmake", "");
	const char *json = tl_test_path("consumer-cmake", ".json");
	assert_int_equal(tl_test_run("cmake -S %s/tests/consumer -B %s -DCMAKE_PREFIX_PATH=%s "
				     ">/dev/null && cmake --build %s >/dev/null",
				     TL_SOURCE_DIR, build, prefix, build),
			 0);
	assert_int_equal(tl_test_run("%s/consumer %s", build, json), 0);
}

static void test_only_api_symbols_are_exported(void **state)
{
	(void)state;
	/* every dynamic symbol is tl_* and versioned; no internal helper leaks */
	assert_int_equal(tl_test_run("nm -D --defined-only %s/libtimeline.so | awk '{print $3}' | "
				     "grep -v -E '^(tl_[a-z0-9_]+@@TIMELINE_[0-9.]+|TIMELINE_[0-9.]+)$' "
				     "| grep . && exit 1 || exit 0",
				     TL_BINARY_DIR),
			 0);
	assert_int_equal(tl_test_run("nm -D --defined-only %s/libtimeline.so | grep -q "
				     "tl_i_category_resolve",
				     TL_BINARY_DIR),
			 0);
	assert_int_equal(tl_test_run("nm -D --defined-only %s/libtimeline.so | grep -q "
				     "tl_pool_next_block && exit 1 || exit 0",
				     TL_BINARY_DIR),
			 0);
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	printf("skipped: a sanitizer build installs a library that plain consumers cannot link\n");
	return TL_TEST_SKIP_EXIT;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pkg_config_consumer_builds_and_records),
		cmocka_unit_test(test_pkg_config_instrumented_consumer_records_its_calls),
		cmocka_unit_test(test_cmake_package_consumer_builds_and_records),
		cmocka_unit_test(test_only_api_symbols_are_exported),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
