/*
 * The one cleaning of atrace names (docs/systrace.md, "Names"): the table
 * of bytes for each case, through tl_atrace_clean, through the systrace
 * recorder's payloads on a real tracefs instance, and through the ftrace
 * snapshot's tracing_mark_write lines; the three give the same bytes.
 * Needs root for the tracefs instance (skips with the reason otherwise).
 */
#include <stdint.h>

#include "systrace_fixture.h"

#include <timeline/trace_event.h>

#include "recorder/atrace_format.h"

#define MAX_MARKERS 64

/* "B|" + the pid + "|": what the name's room in a 1023-byte payload leaves */
static char pid_text[16];
static size_t name_room;

static char long_ascii[2001];    /* 2000 'n' */
static char long_euros[3 * 400 + 1]; /* 400 U+20AC */
static char expect_ascii[1024];
static char expect_euros[1024];

struct name_case {
	const char *what;
	const char *name;
	const char *expect;
};

static struct name_case cases[] = {
    {"plain", "draw frame", "draw frame"},
    {"UTF-8 kept", "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
    {"pipe", "a|b", "a b"},
    {"tab", "a\tb", "a b"},
    {"newline", "a\nb", "a b"},
    {"carriage return", "a\rb", "a b"},
    {"other control bytes", "a\x01\x1f\x7f" "b", "a   b"},
    {"invalid UTF-8", "x\xff\xc0\xafy", "x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy"},
    {"cut UTF-8 sequence", "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd"},
    {"surrogate", "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"trailing blanks and separators", "name \t|\n\r ", "name"},
    {"leading blanks kept", "  name", "  name"},
    {"empty", "", "unnamed"},
    {"blank", " \t|\n", "unnamed"},
    {"over-long ASCII", long_ascii, expect_ascii},
    {"over-long UTF-8", long_euros, expect_euros},
};
#define NCASES (sizeof cases / sizeof cases[0])

static int group_setup(void **state)
{
	(void)state;
	tl_test_clear_environment();
	fixture_create("atrace_names");
	snprintf(pid_text, sizeof pid_text, "%d", (int)getpid());
	name_room = TL_ATRACE_PAYLOAD_MAX - strlen("B||") - strlen(pid_text);
	memset(long_ascii, 'n', 2000);
	memset(expect_ascii, 'n', name_room);
	for (int i = 0; i < 400; i++)
		memcpy(long_euros + 3 * i, "\xe2\x82\xac", 3);
	memcpy(expect_euros, long_euros, name_room / 3 * 3);
	return 0;
}

static bool is_long(const struct name_case *c)
{
	return c->name == long_ascii || c->name == long_euros;
}

static void emit_every_name(void)
{
	tl_category *cat = tl_category_get("names");
	for (size_t i = 0; i < NCASES; i++) {
		tl_emit_begin(cat, cases[i].name);
		tl_emit_end(cat);
	}
}

/* The name of a "B|<pid>|<name>" payload; fails on another payload. */
static const char *begin_name(const char *payload)
{
	char head[32];
	snprintf(head, sizeof head, "B|%s|", pid_text);
	if (strncmp(payload, head, strlen(head)) != 0)
		fail_msg("not a begin of this process: %s", payload);
	return payload + strlen(head);
}

static void test_clean_gives_the_table_bytes(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		char out[TL_ATRACE_PAYLOAD_MAX];
		int cut = 0;
		size_t n = tl_atrace_clean(out, name_room, cases[i].name, strlen(cases[i].name),
		                           NULL, &cut);
		print_message("%s\n", cases[i].what);
		assert_int_equal(n, strlen(cases[i].expect));
		assert_memory_equal(out, cases[i].expect, n);
		assert_int_equal(cut, is_long(&cases[i]));
	}
}

static void test_clean_falls_back_to_the_word_given(void **state)
{
	(void)state;
	char out[16];
	int cut = 0;
	size_t n = tl_atrace_clean(out, sizeof out, " |", 2, "default", &cut);
	assert_int_equal(n, 7);
	assert_memory_equal(out, "default", 7);
	assert_int_equal(cut, 0);
}

static void test_recorder_payloads_carry_the_table_bytes(void **state)
{
	(void)state;
	static struct fixture_marker markers[MAX_MARKERS];
	fixture_clear();
	tl_options opts = {.struct_size = sizeof opts, .recorder = TL_RECORDER_SYSTRACE};
	assert_int_equal(tl_init(&opts), 0);
	emit_every_name();
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	tl_shutdown();
	assert_int_equal(fixture_markers(markers, MAX_MARKERS), 2 * NCASES);
	for (size_t i = 0; i < NCASES; i++) {
		print_message("%s\n", cases[i].what);
		assert_string_equal(begin_name(markers[2 * i].payload), cases[i].expect);
	}
	assert_int_equal(st.events_written, 2 * NCASES);
	assert_int_equal(st.names_truncated, 2);
}

static void test_ftrace_snapshot_lines_carry_the_table_bytes(void **state)
{
	(void)state;
	tl_options opts = {.struct_size = sizeof opts, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&opts), 0);
	emit_every_name();
	const char *path = tl_test_path("atrace_names", "ftrace");
	assert_int_equal(tl_snapshot_ftrace(path), 0);
	tl_shutdown();

	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char line[4096];
	static const char tag[] = "tracing_mark_write: ";
	size_t found = 0;
	while (fgets(line, sizeof line, f)) {
		char *payload = strstr(line, tag);
		if (line[0] == '#' || !payload || payload[sizeof tag - 1] != 'B')
			continue;
		payload += sizeof tag - 1;
		payload[strcspn(payload, "\n")] = '\0';
		assert_true(found < NCASES);
		print_message("%s\n", cases[found].what);
		assert_string_equal(begin_name(payload), cases[found].expect);
		found++;
	}
	fclose(f);
	unlink(path);
	assert_int_equal(found, NCASES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_gives_the_table_bytes),
	    cmocka_unit_test(test_clean_falls_back_to_the_word_given),
	    cmocka_unit_test_teardown(test_recorder_payloads_carry_the_table_bytes, fixture_session_teardown),
	    cmocka_unit_test_teardown(test_ftrace_snapshot_lines_carry_the_table_bytes, fixture_session_teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, fixture_group_teardown);
}
