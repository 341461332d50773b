/*
 * Function records (tracer.h): a code address interned into an id held in
 * a two-word BEGIN, the retract that takes a record back, and the names a
 * snapshot gives them from its function table and mappings.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/timeline.h>

#include "recorder/export/trace_model.h"
#include "recorder/function_table.h"
#include "recorder/snapshot_format.h"
#include "recorder/snapshot_writer.h"
#include "recorder/tracer.h"

static const tl_category *function_cat(void)
{
	return tl_category_get("function");
}

static int setup(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	/* the thread's first event registers it: out of the measured records */
	tl_emit_begin(function_cat(), "warm-up");
	tl_emit_end(function_cat());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static void some_function(void)
{
}

static void other_function(void)
{
}

static volatile int fresh_calls;

static void fresh_function(void)
{
	fresh_calls++;
}

/* The name the reader gives an address: its symbol; in a build without
 * elfutils, module+0xoffset, from /proc/self/maps as the test reads it. */
static void expected_name(const void *address, const char *symbol, char *out, size_t size)
{
#ifdef TL_HAVE_LIBELF
	(void)address;
	snprintf(out, size, "%s", symbol);
	return;
#else
	(void)symbol;
#endif
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[1024];
	snprintf(out, size, "0x%llx", (unsigned long long)(uintptr_t)address);
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end, offset;
		char perms[8], path[512] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start, &end, perms, &offset,
		           path) < 4)
			continue;
		uintptr_t a = (uintptr_t)address;
		if (a < start || a >= end || perms[2] != 'x' || !path[0])
			continue;
		const char *base = strrchr(path, '/');
		snprintf(out, size, "%s+0x%llx", base ? base + 1 : path,
		         (unsigned long long)(a - start + offset));
	}
	fclose(f);
}

static void test_function_enter_is_two_words(void **state)
{
	(void)state;
	struct tl_thread_mark before, after_enter, after_exit;
	tl_thread_mark(&before);
	assert_true(tl_tracer_function_enter((const void *)some_function, NULL) != 0);
	tl_thread_mark(&after_enter);
	assert_true(tl_tracer_end(function_cat()) != 0);
	tl_thread_mark(&after_exit);
	assert_ptr_equal(before.block, after_exit.block);
	assert_int_equal(after_enter.offset - before.offset, 2);
	assert_int_equal(after_exit.offset - after_enter.offset, 2);
}

static void test_function_id_is_stable_per_address(void **state)
{
	(void)state;
	uint32_t a = tl_function_intern((uintptr_t)some_function);
	uint32_t b = tl_function_intern((uintptr_t)other_function);
	assert_int_not_equal(a, TL_FUNCTION_NONE);
	assert_int_not_equal(b, TL_FUNCTION_NONE);
	assert_int_not_equal(a, b);
	assert_int_equal(tl_function_intern((uintptr_t)some_function), a);
	assert_int_equal(tl_function_address(a), (uintptr_t)some_function);
	tl_shutdown();
	tl_test_init(TL_RECORDER_RING, 0);
	assert_int_equal(tl_function_intern((uintptr_t)some_function), a);
}

static void test_function_table_overflow_is_counted(void **state)
{
	(void)state;
	/* more addresses of one home entry than an address may probe */
	enum { WANT = TL_FUNCTION_PROBES + 1 };
	uintptr_t same[WANT];
	size_t n = 0;
	uint32_t home = tl_function_home(0x7f0000001000u);
	for (uintptr_t a = 0x7f0000001000u; n < WANT; a += 16)
		if (tl_function_home(a) == home)
			same[n++] = a;
	uint64_t before = tl_tracer_functions_unnamed();
	uint32_t last = 0;
	for (size_t i = 0; i < WANT; i++)
		last = tl_function_intern(same[i]);
	assert_int_equal(last, TL_FUNCTION_NONE);
	assert_true(tl_tracer_functions_unnamed() > before);
	uint64_t counted = tl_tracer_functions_unnamed();
	assert_int_equal(tl_tracer_function_enter((const void *)same[WANT - 1], NULL), 0);
	assert_int_equal(tl_tracer_functions_unnamed(), counted + 1);
}

static void test_retract_takes_back_the_last_record(void **state)
{
	(void)state;
	struct tl_thread_mark before, mark, after;
	tl_thread_mark(&before);
	assert_true(tl_tracer_function_enter((const void *)some_function, &mark) != 0);
	assert_non_null(mark.block);
	assert_true(tl_tracer_retract(&mark));
	tl_thread_mark(&after);
	assert_int_equal(after.offset, before.offset);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', NULL), 1); /* the warm-up */
	tl_model_free(&m);
}

static void test_retract_refused_once_another_record_follows(void **state)
{
	(void)state;
	struct tl_thread_mark mark;
	assert_true(tl_tracer_function_enter((const void *)some_function, &mark) != 0);
	tl_emit_begin(function_cat(), "inner");
	assert_false(tl_tracer_retract(&mark));
	tl_emit_end(function_cat());
	assert_false(tl_tracer_retract(&mark));
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', NULL), 3);
	tl_model_free(&m);
}

static void test_retract_refused_twice(void **state)
{
	(void)state;
	struct tl_thread_mark outer, inner;
	assert_true(tl_tracer_function_enter((const void *)some_function, &outer) != 0);
	assert_true(tl_tracer_function_enter((const void *)other_function, &inner) != 0);
	assert_true(tl_tracer_retract(&inner));
	assert_false(tl_tracer_retract(&inner));
	/* the inner one gone, the outer one is last again */
	assert_true(tl_tracer_retract(&outer));
	assert_false(tl_tracer_retract(&outer));
}

static void test_retract_refused_across_a_block_change(void **state)
{
	(void)state;
	struct tl_thread_mark mark, now;
	assert_true(tl_tracer_function_enter((const void *)some_function, &mark) != 0);
	const struct tl_block *first = mark.block;
	size_t pairs = 0;
	do {
		tl_emit_begin(function_cat(), "filler");
		tl_emit_end(function_cat());
		tl_thread_mark(&now);
		pairs++;
	} while (now.block == first);
	assert_false(tl_tracer_retract(&mark));
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "filler"), pairs);
	tl_model_free(&m);
}

static void test_retract_refused_in_a_new_session(void **state)
{
	(void)state;
	struct tl_thread_mark mark;
	assert_true(tl_tracer_function_enter((const void *)some_function, &mark) != 0);
	tl_shutdown();
	tl_test_init(TL_RECORDER_RING, 0);
	tl_emit_begin(function_cat(), "warm-up");
	assert_false(tl_tracer_retract(&mark));
}

static void test_retract_without_mark_does_nothing(void **state)
{
	(void)state;
	struct tl_thread_mark none = {0};
	assert_false(tl_tracer_retract(&none));
	assert_false(tl_tracer_retract(NULL));
}

static void test_snapshot_names_functions(void **state)
{
	(void)state;
	assert_true(tl_tracer_function_enter((const void *)some_function, NULL) != 0);
	assert_true(tl_tracer_function_enter((const void *)0x10, NULL) != 0);
	tl_tracer_end(function_cat());
	tl_tracer_end(function_cat());
	char want[600];
	expected_name((const void *)some_function, "some_function", want, sizeof want);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', want), 1);
	assert_int_equal(tl_test_count_events(&m, 'B', "0x10"), 1);
	assert_int_equal(tl_test_count_events(&m, 'E', NULL), 3);
	for (size_t i = 0; i < m.nevents; i++)
		if (m.events[i].phase == 'B' && strcmp(m.events[i].name, want) == 0)
			assert_string_equal(m.events[i].cat, "function");
	tl_model_free(&m);
}

/* The NT_GNU_BUILD_ID of an ELF file, read from the file's note segments;
 * its length, 0 when none. */
static size_t file_build_id(const char *path, unsigned char *out, size_t size)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	Elf64_Ehdr eh;
	size_t len = 0;
	assert_int_equal(pread(fd, &eh, sizeof eh, 0), sizeof eh);
	for (unsigned i = 0; i < eh.e_phnum && !len; i++) {
		Elf64_Phdr ph;
		assert_int_equal(pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)),
		                 sizeof ph);
		if (ph.p_type != PT_NOTE || ph.p_filesz > 4096)
			continue;
		unsigned char notes[4096];
		assert_int_equal(pread(fd, notes, ph.p_filesz, (off_t)ph.p_offset),
		                 (ssize_t)ph.p_filesz);
		for (size_t at = 0; at + sizeof(Elf64_Nhdr) <= ph.p_filesz;) {
			Elf64_Nhdr nh;
			memcpy(&nh, notes + at, sizeof nh);
			at += sizeof nh;
			size_t name = (nh.n_namesz + 3u) & ~3u, desc = (nh.n_descsz + 3u) & ~3u;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= size) {
				memcpy(out, notes + at + name, nh.n_descsz);
				len = nh.n_descsz;
				break;
			}
			at += name + desc;
		}
	}
	close(fd);
	return len;
}

static void test_snapshot_maps_the_executable_with_its_build_id(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	unsigned char want[64];
	size_t want_len = file_build_id(exe, want, sizeof want);
	if (want_len == 0) {
		print_message("skipped: %s has no NT_GNU_BUILD_ID note (linked without "
		              "--build-id), so there is no build-id to compare\n",
		              exe);
		skip();
	}
	unsigned char *data;
	size_t len;
	assert_int_equal(tl_snapshot_to_memory(&data, &len), 0);
	unsigned found = 0;
	for (size_t off = TL_SNAPSHOT_HEADER_BYTES; off + 16 <= len;) {
		uint32_t type;
		uint64_t payload;
		memcpy(&type, data + off, 4);
		memcpy(&payload, data + off + 8, 8);
		const unsigned char *p = data + off + 16;
		if (type == TL_CHUNK_MAPPING) {
			uint64_t start;
			uint32_t path_len, id_len;
			memcpy(&start, p, 8);
			memcpy(&path_len, p + 24, 4);
			memcpy(&id_len, p + 28, 4);
			if (path_len == (size_t)n && memcmp(p + 32, exe, path_len) == 0 &&
			    start <= (uintptr_t)some_function) {
				assert_int_equal(id_len, want_len);
				assert_memory_equal(p + 32 + path_len, want, want_len);
				found++;
			}
		}
		off += 16 + payload + (-payload & 7);
	}
	free(data);
	assert_true(found >= 1);
}

static void test_file_recorder_names_functions(void **state)
{
	(void)state;
	tl_shutdown();
	char *path = strdup(tl_test_path("function-records", ".tl"));
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_FILE,
	                .block_bytes = 4096,
	                .file_path = path};
	assert_int_equal(tl_init(&o), 0);
	/* one address known before the file started, one interned after */
	const void *fresh = (const void *)fresh_function;
	for (int i = 0; i < 1000; i++) { /* several blocks */
		assert_true(tl_tracer_function_enter((const void *)other_function, NULL) != 0);
		assert_true(tl_tracer_function_enter(fresh, NULL) != 0);
		tl_tracer_end(function_cat());
		tl_tracer_end(function_cat());
	}
	tl_shutdown();
	char want[600], want_fresh[600];
	expected_name((const void *)other_function, "other_function", want, sizeof want);
	expected_name(fresh, "fresh_function", want_fresh, sizeof want_fresh);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary_file(path, &m, err, sizeof err), 0);
	assert_int_equal(tl_test_count_events(&m, 'B', want), 1000);
	assert_int_equal(tl_test_count_events(&m, 'B', want_fresh), 1000);
	tl_model_free(&m);
	unlink(path);
	free(path);
	tl_test_init(TL_RECORDER_RING, 0); /* for the teardown */
}

static void test_json_snapshot_names_functions(void **state)
{
	(void)state;
	assert_true(tl_tracer_function_enter((const void *)some_function, NULL) != 0);
	tl_tracer_end(function_cat());
	char want[600];
	expected_name((const void *)some_function, "some_function", want, sizeof want);
	char *path = strdup(tl_test_path("function-records", ".json"));
	assert_int_equal(tl_snapshot_json(path), 0);
	size_t len;
	char *json = tl_test_read_file(path, &len);
	assert_non_null(json);
	char quoted[640];
	snprintf(quoted, sizeof quoted, "\"%s\"", want);
	assert_non_null(strstr(json, quoted));
	assert_non_null(strstr(json, "\"function\""));
	free(json);
	unlink(path);
	free(path);
}

static void test_ftrace_snapshot_names_functions(void **state)
{
	(void)state;
	assert_true(tl_tracer_function_enter((const void *)some_function, NULL) != 0);
	tl_tracer_end(function_cat());
	char want[600], marker[640];
	expected_name((const void *)some_function, "some_function", want, sizeof want);
	snprintf(marker, sizeof marker, "B|%d|%s\n", (int)getpid(), want);
	char *path = strdup(tl_test_path("function-records", ".txt"));
	assert_int_equal(tl_snapshot_ftrace(path), 0);
	size_t len;
	char *text = tl_test_read_file(path, &len);
	assert_non_null(text);
	assert_non_null(strstr(text, marker));
	free(text);
	unlink(path);
	free(path);
}

static unsigned callback_functions;
static char callback_name[64];

static void on_event(const tl_event *event, void *user)
{
	(void)user;
	if (event->phase == TL_PHASE_BEGIN && event->name &&
	    strncmp(event->name, "0x", 2) == 0) {
		callback_functions++;
		snprintf(callback_name, sizeof callback_name, "%s", event->name);
	}
}

static void test_function_written_through_with_its_address_as_name(void **state)
{
	(void)state;
	tl_shutdown();
	tl_options o = {0};
	o.struct_size = sizeof o;
	o.recorder = TL_RECORDER_CALLBACK;
	o.callback = on_event;
	assert_int_equal(tl_init(&o), 0);
	callback_functions = 0;
	assert_true(tl_tracer_function_enter((const void *)some_function, NULL) != 0);
	char want[32];
	snprintf(want, sizeof want, "0x%llx", (unsigned long long)(uintptr_t)some_function);
	assert_int_equal(callback_functions, 1);
	assert_string_equal(callback_name, want);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_function_enter_is_two_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_function_id_is_stable_per_address, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_function_table_overflow_is_counted, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_retract_takes_back_the_last_record, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_retract_refused_once_another_record_follows,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_retract_refused_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retract_refused_across_a_block_change, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_retract_refused_in_a_new_session, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_retract_without_mark_does_nothing, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_names_functions,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_maps_the_executable_with_its_build_id,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_recorder_names_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ftrace_snapshot_names_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_snapshot_names_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_function_written_through_with_its_address_as_name,
		                                setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
