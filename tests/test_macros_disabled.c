/* Built with TIMELINE_DISABLED: every macro compiles to nothing, arguments
 * are type-checked as the enabled build checks them but never evaluated.
 * The last tests run the compiler this suite was built with on small
 * sources: with TIMELINE_DISABLED they leave no symbol and no call in the
 * object, and a wrong-typed argument fails to compile. */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/trace_event.h>

static int side_effect(int *n)
{
	return ++*n;
}

static void test_disabled_build_records_nothing(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	int evaluated = 0;
	TL_TRACE_EVENT0("off", "scoped");
	TL_TRACE_EVENT1("off", "scoped", "n", side_effect(&evaluated));
	TL_TRACE_EVENT4("off", "scoped", "a", 1, "b", 2u, "c", 0.5, "n", side_effect(&evaluated));
	TL_TRACE_EVENT_BEGIN2("off", "b", "a", 1, "s", "str");
	TL_TRACE_EVENT_BEGIN3("off", "b", "a", 1, "s", "str", "n", side_effect(&evaluated));
	TL_TRACE_EVENT_END0("off", "b");
	TL_TRACE_EVENT_END4("off", side_effect(&evaluated) ? "b" : "c", "a", 1, "b", 2, "c", 3, "d",
	                    4);
	TL_TRACE_EVENT_INSTANT1("off", "i", TL_SCOPE_GLOBAL, "n", side_effect(&evaluated));
	TL_TRACE_EVENT_INSTANT4("off", "i", TL_SCOPE_GLOBAL, "a", 1, "b", 2, "c", 3, "n",
	                        side_effect(&evaluated));
	TL_TRACE_EVENT_ASYNC_BEGIN0("off", "a", 1);
	TL_TRACE_EVENT_ASYNC_END3("off", "a", side_effect(&evaluated), "a", 1, "b", 2, "c", 3);
	TL_TRACE_EVENT_FLOW_STEP0("off", "f", 2);
	TL_TRACE_EVENT_COUNTER("off", "c", side_effect(&evaluated));
	TL_TRACE_EVENT_COMPLETE("off", "x", tl_now(), tl_now());
	TRACE_EVENT_COPY_BEGIN0("off", "copy");
	TRACE_EVENT_COPY_INSTANT3("off", "copy", TL_SCOPE_THREAD, "a", 1, "b", 2, "c", 3);
	assert_false(TL_TRACE_ENABLED("off"));
	assert_int_equal(evaluated, 0);
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.events_written, 0);
	tl_shutdown();
}

/* ---- the compiler on small sources ---------------------------------------- */

/* Every macro once, with arguments of every type the macros take. */
static const char every_macro[] =
    "#include <stdbool.h>\n"
    "#include <timeline/trace_event.h>\n"
    "void every_macro(const char *s, int i, unsigned long u, double d, bool b, void *p,\n"
    "                 tl_timestamp t)\n"
    "{\n"
    "	TL_TRACE_EVENT0(\"c\", \"n\");\n"
    "	TL_TRACE_EVENT4(\"c\", \"n\", \"i\", i, \"u\", u, \"d\", d, \"b\", b);\n"
    "	TL_TRACE_EVENT_COPY3(\"c\", s, \"p\", p, \"s\", s, \"c\", TL_STR_COPY(s));\n"
    "	TL_TRACE_EVENT_BEGIN_NUMBERED(\"c\", \"n\", i);\n"
    "	TL_TRACE_EVENT_BEGIN4(\"c\", \"n\", \"i\", i, \"u\", u, \"d\", d, \"b\", b);\n"
    "	TL_TRACE_EVENT_COPY_BEGIN2(\"c\", s, \"i\", i, \"s\", s);\n"
    "	TL_TRACE_EVENT_END0(\"c\", \"n\");\n"
    "	TL_TRACE_EVENT_END3(\"c\", \"n\", \"i\", i, \"u\", u, \"d\", d);\n"
    "	TL_TRACE_EVENT_INSTANT4(\"c\", \"n\", TL_SCOPE_THREAD, \"i\", i, \"u\", u, \"d\", d,\n"
    "	                        \"p\", p);\n"
    "	TL_TRACE_EVENT_COPY_INSTANT1(\"c\", s, TL_SCOPE_GLOBAL, \"i\", i);\n"
    "	TL_TRACE_EVENT_ASYNC_BEGIN4(\"c\", \"n\", u, \"i\", i, \"u\", u, \"d\", d, \"b\", b);\n"
    "	TL_TRACE_EVENT_ASYNC_INSTANT3(\"c\", \"n\", u, \"i\", i, \"u\", u, \"d\", d);\n"
    "	TL_TRACE_EVENT_ASYNC_END2(\"c\", \"n\", u, \"i\", i, \"u\", u);\n"
    "	TL_TRACE_EVENT_COPY_ASYNC_BEGIN0(\"c\", s, u);\n"
    "	TL_TRACE_EVENT_COPY_ASYNC_END0(\"c\", s, u);\n"
    "	TL_TRACE_EVENT_FLOW_BEGIN1(\"c\", \"n\", u, \"i\", i);\n"
    "	TL_TRACE_EVENT_FLOW_STEP_GLOBAL0(\"c\", \"n\", u);\n"
    "	TL_TRACE_EVENT_FLOW_END0(\"c\", \"n\", u);\n"
    "	TL_TRACE_EVENT_COUNTER(\"c\", \"n\", d);\n"
    "	TL_TRACE_EVENT_COPY_COUNTER(\"c\", s, i);\n"
    "	TL_TRACE_COUNTER1(\"c\", \"n\", u);\n"
    "	TL_TRACE_EVENT_COMPLETE(\"c\", \"n\", t, t + 1);\n"
    "	TL_TRACE_EVENT_ASYNC_COMPLETE(\"c\", \"n\", u, t, t + 1);\n"
    "	TRACE_EVENT3(\"c\", \"n\", \"i\", i, \"u\", u, \"d\", d);\n"
    "	if (TL_TRACE_ENABLED(\"c\"))\n"
    "		TRACE_EVENT_INSTANT0(\"c\", \"n\", TL_SCOPE_PROCESS);\n"
    "}\n";

/* The sources are compiled as C and as C++, each with its compiler. */
enum language { LANGUAGE_C, LANGUAGE_CXX };

/* The compiler and its language options. */
static const char *compiler(enum language language)
{
#if defined(TL_C_COMPILER) && defined(TL_CXX_COMPILER)
	const char *path = language == LANGUAGE_C ? TL_C_COMPILER : TL_CXX_COMPILER;
	static char command[1100];
	if (access(path, X_OK) == 0) {
		snprintf(command, sizeof command, "'%s' %s", path,
		         language == LANGUAGE_C ? "-std=gnu11" : "-x c++ -std=c++11");
		return command;
	}
	print_message("skipped: the compiler %s cannot be run here\n", path);
#else
	(void)language;
	print_message("skipped: built without TL_C_COMPILER; build this suite with CMake\n");
#endif
	skip();
	return NULL;
}

static const char *write_source(const char *stem, const char *text)
{
	const char *path = tl_test_path(stem, ".c");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* Compiles source to an object with or without TIMELINE_DISABLED (at -O0,
 * where nothing is optimised away) and returns `nm -C` of it, malloc'd. */
static char *symbols_of(const char *source, enum language language, bool disabled)
{
	const char *obj = tl_test_path("macros", ".o");
	const char *nm_out = tl_test_path("macros", ".nm");
	assert_int_equal(tl_test_run("%s -O0 -Wall -Wextra -Werror %s -I'%s' -c '%s' -o '%s'",
	                             compiler(language),
	                             disabled ? "-DTIMELINE_DISABLED" : "",
	                             TL_SOURCE_DIR "/include", source, obj),
	                 0);
	assert_int_equal(tl_test_run("'%s' -C '%s' > '%s'", TL_NM, obj, nm_out), 0);
	char *text = tl_test_read_file(nm_out, NULL);
	assert_non_null(text);
	unlink(obj);
	unlink(nm_out);
	return text;
}

static void check_no_symbol_and_no_call(enum language language)
{
	const char *source = write_source("every-macro", every_macro);
	/* the same source enabled calls into the library: the check can fail */
	char *enabled = symbols_of(source, language, false);
	assert_non_null(strstr(enabled, " U tl_emit"));
	assert_non_null(strstr(enabled, "tl_i_cache_"));
	free(enabled);

	char *disabled = symbols_of(source, language, true);
	unlink(source);
	print_message("nm of the disabled object:\n%s", disabled);
	assert_non_null(strstr(disabled, " T every_macro"));
	assert_null(strstr(disabled, "tl_"));
	assert_null(strstr(disabled, " U ")); /* no call to anything */
	assert_int_equal(tl_test_count(disabled, "\n"), 1);
	free(disabled);
}

static void test_disabled_build_leaves_no_symbol_and_no_call(void **state)
{
	(void)state;
	check_no_symbol_and_no_call(LANGUAGE_C);
}

static void test_disabled_build_leaves_no_symbol_and_no_call_in_cxx(void **state)
{
	(void)state;
	check_no_symbol_and_no_call(LANGUAGE_CXX);
}

/* One wrong argument each; every one fails to compile with and without
 * TIMELINE_DISABLED (-Werror: C makes some of these conversions warnings). */
static const struct wrong_argument {
	const char *what, *statement;
} wrong_arguments[] = {
    {"a category that is a number", "TL_TRACE_EVENT0(1.5, \"n\");"},
    {"a name that is a number", "TL_TRACE_EVENT_BEGIN0(\"c\", 42);"},
    {"the name of an END with arguments", "TL_TRACE_EVENT_END1(\"c\", 42, \"k\", 1);"},
    {"an argument key that is a number", "TL_TRACE_EVENT2(\"c\", \"n\", \"k\", 1, 7, 2);"},
    {"a first argument value that is a struct", "TL_TRACE_EVENT1(\"c\", \"n\", \"k\", v);"},
    {"a fourth argument value that is a struct",
     "TL_TRACE_EVENT_INSTANT4(\"c\", \"n\", TL_SCOPE_THREAD, \"a\", 1, \"b\", 2, \"c\", 3, "
     "\"d\", v);"},
    {"a third argument of an async end that is a struct",
     "TL_TRACE_EVENT_ASYNC_END3(\"c\", \"n\", 1, \"a\", 1, \"b\", 2, \"c\", v);"},
    {"an id that is a struct", "TL_TRACE_EVENT_ASYNC_BEGIN0(\"c\", \"n\", v);"},
    {"an id that is a pointer", "TL_TRACE_EVENT_FLOW_BEGIN0(\"c\", \"n\", \"id\");"},
    {"a counter value that is a string", "TL_TRACE_EVENT_COUNTER(\"c\", \"n\", \"x\");"},
    {"a complete event start that is a pointer",
     "TL_TRACE_EVENT_COMPLETE(\"c\", \"n\", \"x\", 0);"},
    {"a number for a numbered begin that is a struct",
     "TL_TRACE_EVENT_BEGIN_NUMBERED(\"c\", \"n\", v);"},
    {"an enabled check of a number", "(void)TL_TRACE_ENABLED(3);"},
};

/* 0 when `statement` compiles in a function with a struct `v` in scope. */
static int compile_statement(const char *statement, enum language language, bool disabled)
{
	char text[1024];
	snprintf(text, sizeof text,
	         "#include <timeline/trace_event.h>\n"
	         "struct pair { int a, b; };\n"
	         "void one_statement(void)\n"
	         "{\n"
	         "	struct pair v = {1, 2};\n"
	         "	(void)v;\n"
	         "	%s\n"
	         "}\n",
	         statement);
	const char *source = write_source("wrong-type", text);
	int status = tl_test_run("%s -fsyntax-only -Wall -Wextra -Werror %s -I'%s' '%s' "
	                         ">/dev/null 2>&1",
	                         compiler(language), disabled ? "-DTIMELINE_DISABLED" : "",
	                         TL_SOURCE_DIR "/include", source);
	unlink(source);
	return status;
}

static void check_wrong_typed_arguments_rejected(enum language language)
{
	/* the frame compiles: each failure below is the statement's */
	const char *right = "TL_TRACE_EVENT1(\"c\", \"n\", \"k\", v.a);";
	assert_int_equal(compile_statement(right, language, true), 0);
	assert_int_equal(compile_statement(right, language, false), 0);
	size_t accepted = 0;
	for (size_t i = 0; i < sizeof wrong_arguments / sizeof wrong_arguments[0]; i++) {
		const struct wrong_argument *w = &wrong_arguments[i];
		for (int disabled = 0; disabled <= 1; disabled++) {
			if (compile_statement(w->statement, language, disabled) == 0) {
				print_message("accepted%s: %s: %s\n",
				              disabled ? " with TIMELINE_DISABLED" : "", w->what,
				              w->statement);
				accepted++;
			}
		}
	}
	assert_int_equal(accepted, 0);
}

static void test_disabled_build_rejects_wrong_typed_arguments(void **state)
{
	(void)state;
	check_wrong_typed_arguments_rejected(LANGUAGE_C);
}

static void test_disabled_build_rejects_wrong_typed_arguments_in_cxx(void **state)
{
	(void)state;
	check_wrong_typed_arguments_rejected(LANGUAGE_CXX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disabled_build_records_nothing),
		cmocka_unit_test(test_disabled_build_leaves_no_symbol_and_no_call),
		cmocka_unit_test(test_disabled_build_leaves_no_symbol_and_no_call_in_cxx),
		cmocka_unit_test(test_disabled_build_rejects_wrong_typed_arguments),
		cmocka_unit_test(test_disabled_build_rejects_wrong_typed_arguments_in_cxx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
