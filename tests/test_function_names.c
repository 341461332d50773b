/*
 * Function names (recorder/export/symbolize.h, recorder/function_names.h):
 * function records read back from a snapshot named after their symbols, for
 * each kind of function (a static one, one of a PIE executable, one of a
 * library loaded with dlopen, a C++ template demangled); what has no symbol
 * keeps `module+0xoffset`; names resolved in the process.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/names_cxx.h"
#include "support/test_support.h"

#include "recorder/export/symbolize.h"
#include "recorder/export/trace_model.h"
#include "recorder/function_names.h"
#include "recorder/tracer.h"

static int setup(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

/* Skips the running test in a build without elfutils, saying why. */
static void skip_without_symbols(void)
{
	if (tl_symbolizer_available())
		return;
	print_message("skipped: built without elfutils (TIMELINE_WITH_ELFUTILS=OFF): "
	              "functions are named module+0xoffset\n");
	skip();
}

/* The name a reader gave a function whose symbol is `symbol`: that symbol,
 * or without elfutils, the fallback `module+0xoffset` (checked, not
 * skipped: each build's own contract). */
static void assert_named(const char *name, const char *symbol)
{
	if (tl_symbolizer_available()) {
		assert_string_equal(name, symbol);
		return;
	}
	const char *plus = strstr(name, "+0x");
	if (!plus || plus == name || plus[3] == '\0')
		fail_msg("%s: named '%s', expected module+0xoffset without elfutils", symbol, name);
	print_message("built without elfutils: %s is named %s\n", symbol, name);
}

static volatile int calls;

static void static_function(void)
{
	calls++;
}

void pie_function(void);

void pie_function(void)
{
	calls += 2;
}

/* The name a snapshot's reader gives the function at address. */
static void snapshot_name(const void *address, char *out, size_t size)
{
	const tl_category *cat = tl_category_get("function");
	assert_true(tl_tracer_function_enter(address, NULL) != 0);
	tl_tracer_end(cat);
	tl_model m;
	tl_test_snapshot_model(&m);
	out[0] = '\0';
	for (size_t i = 0; i < m.nevents; i++)
		if (m.events[i].phase == 'B' && strcmp(m.events[i].cat, "function") == 0)
			snprintf(out, size, "%s", m.events[i].name);
	tl_model_free(&m);
}

static void test_static_function_is_named_by_its_symbol(void **state)
{
	(void)state;
	char name[512];
	snapshot_name((const void *)static_function, name, sizeof name);
	assert_named(name, "static_function");
}

static void test_pie_executable_function_is_named_by_its_symbol(void **state)
{
	(void)state;
	Elf64_Ehdr eh;
	int fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &eh, sizeof eh), sizeof eh);
	close(fd);
	if (eh.e_type != ET_DYN) {
		print_message("skipped: this test program is not a PIE executable\n");
		skip();
	}
	char name[512];
	snapshot_name((const void *)pie_function, name, sizeof name);
	assert_named(name, "pie_function");
}

static void test_dlopen_library_function_is_named_by_its_symbol(void **state)
{
	(void)state;
	void *library = dlopen(TL_NAMES_PLUGIN, RTLD_NOW);
	assert_non_null(library);
	const void *(*local_address)(void) =
	    (const void *(*)(void))dlsym(library, "names_plugin_local_address");
	assert_non_null(local_address);
	char name[512];
	snapshot_name(local_address(), name, sizeof name); /* a static function */
	assert_named(name, "names_plugin_local");
	snapshot_name((const void *)local_address, name, sizeof name);
	assert_named(name, "names_plugin_local_address");
	dlclose(library);
}

static void test_cxx_template_is_demangled(void **state)
{
	(void)state;
	char name[512];
	snapshot_name(names_cxx_template_address(), name, sizeof name);
	assert_named(name, "int names::twice<int>(int)");
}

/* The executable mapping holding address, as /proc/self/maps has it. */
static tl_mapping mapping_of(const void *address, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[1024];
	tl_mapping m = {0};
	uintptr_t a = (uintptr_t)address;
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end, offset;
		char perms[8], file[1024];
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %1023s", &start, &end, perms, &offset,
		           file) == 5 &&
		    a >= start && a < end) {
			assert_true(strlen(file) < size);
			strcpy(path, file);
			m = (tl_mapping){start, end, offset, path, strlen(path), NULL, 0};
		}
	}
	fclose(f);
	assert_true(m.path_len > 0);
	return m;
}

/* This program's executable mapping. */
static tl_mapping own_mapping(char *path, size_t size)
{
	return mapping_of((const void *)static_function, path, size);
}

/* The GNU build-id of an ELF file, as `readelf -n` prints it, into id;
 * its length, 0 when none. */
static size_t readelf_build_id(const char *path, uint8_t *id, size_t size, char *hex,
                               size_t hex_size)
{
	char command[1200];
	snprintf(command, sizeof command, "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(command, "r");
	if (!p)
		return 0;
	char line[512];
	size_t len = 0;
	while (fgets(line, sizeof line, p)) {
		const char *at = strstr(line, "Build ID: ");
		if (!at || len)
			continue;
		at += strlen("Build ID: ");
		unsigned byte;
		while (len < size && sscanf(at + 2 * len, "%2x", &byte) == 1)
			id[len++] = (uint8_t)byte;
		snprintf(hex, hex_size, "%.*s", (int)(2 * len), at);
	}
	pclose(p);
	return len;
}

/* A stripped copy of the plugin (no .symtab: its static function is not in
 * .dynsym) is named from its debug file, found by build-id in a tree of
 * debug files. */
static void test_stripped_file_is_named_from_its_debug_file(void **state)
{
	(void)state;
	skip_without_symbols();
	uint8_t id[64];
	char hex[129];
	size_t id_len = readelf_build_id(TL_NAMES_PLUGIN, id, sizeof id, hex, sizeof hex);
	if (id_len < 2) {
		print_message("skipped: readelf finds no build-id in %s\n", TL_NAMES_PLUGIN);
		skip();
	}
	char root[512], stripped[600];
	snprintf(root, sizeof root, "%s", tl_test_path("names-debug", ""));
	snprintf(stripped, sizeof stripped, "%s/libnames_plugin.so", root);
	if (tl_test_run("mkdir -p '%s/.build-id/%.2s' && "
	                "objcopy --only-keep-debug '%s' '%s/.build-id/%.2s/%s.debug' && "
	                "strip --strip-all -o '%s' '%s'",
	                root, hex, TL_NAMES_PLUGIN, root, hex, hex + 2, stripped,
	                TL_NAMES_PLUGIN) != 0) {
		print_message("skipped: objcopy and strip could not make a debug file\n");
		skip();
	}
	void *library = dlopen(TL_NAMES_PLUGIN, RTLD_NOW);
	assert_non_null(library);
	const void *(*local_address)(void) =
	    (const void *(*)(void))dlsym(library, "names_plugin_local_address");
	assert_non_null(local_address);
	const void *local = local_address();
	char path[1024];
	tl_mapping m = mapping_of(local, path, sizeof path);
	m.path = stripped; /* the same layout, without .symtab */
	m.path_len = strlen(stripped);
	m.build_id = id;
	m.build_id_len = id_len;
	char name[512];
	tl_symbolizer *s = tl_symbolizer_new(NULL);
	tl_function_name(s, &m, 1, (uintptr_t)local, name, sizeof name);
	assert_non_null(strstr(name, "libnames_plugin.so+0x")); /* not in /usr/lib/debug */
	tl_symbolizer_free(s);
	tl_symbol_options options = {.debug_dirs = {root}, .ndebug_dirs = 1};
	s = tl_symbolizer_new(&options);
	tl_function_name(s, &m, 1, (uintptr_t)local, name, sizeof name);
	assert_string_equal(name, "names_plugin_local");
	tl_symbolizer_free(s);
	dlclose(library);
	tl_test_run("rm -rf '%s'", root);
}

static void test_file_with_another_build_id_keeps_module_offset(void **state)
{
	(void)state;
	char path[1024];
	tl_mapping m = own_mapping(path, sizeof path);
	static const uint8_t other[20] = {0xde, 0xad, 0xbe, 0xef};
	m.build_id = other;
	m.build_id_len = sizeof other;
	tl_symbolizer *s = tl_symbolizer_new(NULL);
	char name[512], want[600];
	uint64_t address = (uintptr_t)static_function;
	tl_function_name(s, &m, 1, address, name, sizeof name);
	snprintf(want, sizeof want, "%s+0x%llx", strrchr(path, '/') + 1,
	         (unsigned long long)(address - m.start + m.offset));
	assert_string_equal(name, want);
	tl_symbolizer_free(s);
}

static void test_missing_file_keeps_module_offset(void **state)
{
	(void)state;
	const char *path = "/nonexistent/dir/libgone.so";
	tl_mapping m = {0x1000, 0x3000, 0x2000, path, strlen(path), NULL, 0};
	tl_symbolizer *s = tl_symbolizer_new(NULL);
	char name[64];
	assert_int_equal(tl_function_name(s, &m, 1, 0x1010, name, sizeof name), 17);
	assert_string_equal(name, "libgone.so+0x2010");
	tl_symbolizer_free(s);
}

static void test_address_outside_every_mapping_is_hex(void **state)
{
	(void)state;
	char name[64];
	assert_int_equal(tl_function_name(NULL, NULL, 0, 0x10, name, sizeof name), 4);
	assert_string_equal(name, "0x10");
}

static void test_long_name_is_cut_to_the_buffer(void **state)
{
	(void)state;
	skip_without_symbols();
	char path[1024];
	tl_mapping m = own_mapping(path, sizeof path);
	tl_symbolizer *s = tl_symbolizer_new(NULL);
	char name[7];
	assert_int_equal(tl_function_name(s, &m, 1, (uintptr_t)static_function, name, sizeof name),
	                 6);
	assert_string_equal(name, "static");
	tl_symbolizer_free(s);
}

static void test_in_process_name_is_resolved_once(void **state)
{
	(void)state;
	uint32_t id = tl_tracer_function_intern((const void *)pie_function);
	const char *name = tl_tracer_function_name(id);
	assert_non_null(name);
	assert_named(name, "pie_function");
	assert_ptr_equal(tl_tracer_function_name(id), name);
	assert_ptr_equal(tl_tracer_function_name_cached(id), name);
}

/* The writers' module+0xoffset, read from /proc/self/maps without a lock
 * or an allocation, is the one readers of snapshots give. */
static void test_name_in_module_is_the_readers_module_offset(void **state)
{
	(void)state;
	char path[1024];
	tl_mapping m = own_mapping(path, sizeof path);
	char want[512], name[512];
	tl_function_name(NULL, &m, 1, (uintptr_t)static_function, want, sizeof want);
	assert_non_null(strstr(want, "+0x"));
	size_t len = tl_function_name_in_module((uintptr_t)static_function, name, sizeof name);
	assert_int_equal(len, strlen(want));
	assert_string_equal(name, want);
	assert_int_equal(tl_function_name_in_module(0x10, name, sizeof name), 4);
	assert_string_equal(name, "0x10");
}

static void never_named_before(void)
{
}

/* With no resolver thread (none runs in this process: no systrace
 * recorder, no pattern), a writer gets module+0xoffset at once. */
static void test_writer_without_the_resolver_thread_gets_module_offset(void **state)
{
	(void)state;
	uint32_t id = tl_tracer_function_intern((const void *)never_named_before);
	char want[512], buf[512];
	tl_function_name_in_module((uintptr_t)never_named_before, want, sizeof want);
	const char *name = tl_tracer_function_name_now(id, buf, sizeof buf);
	assert_ptr_equal(name, buf);
	assert_string_equal(name, want);
	assert_null(tl_tracer_function_name_cached(id));
}

static void named_by_the_writer(void)
{
}

/* With it, the writer waits for the name: a function's first write is
 * named by its symbol. */
static void test_writer_with_the_resolver_thread_gets_the_symbol(void **state)
{
	(void)state;
	skip_without_symbols();
	uint32_t id = tl_tracer_function_intern((const void *)named_by_the_writer);
	assert_null(tl_tracer_function_name_cached(id));
	assert_int_equal(tl_tracer_function_names_start(), 0);
	char buf[512];
	const char *name = tl_tracer_function_name_now(id, buf, sizeof buf);
	assert_non_null(name);
	assert_named(name, "named_by_the_writer");
	assert_ptr_equal(tl_tracer_function_name_cached(id), name);
}

struct symbol_search {
	uint64_t address;
	bool in_file; /* a file's range holds it */
	char name[TL_SYMBOL_NAME_MAX];
	uint64_t start, end;
};

static void symbol_search_visit(const char *name, uint64_t start, uint64_t end, void *ctx)
{
	struct symbol_search *q = ctx;
	if (q->address < start || q->address >= end)
		return;
	if (!name) {
		q->in_file = true;
	} else if (!q->name[0]) {
		snprintf(q->name, sizeof q->name, "%s", name);
		q->start = start;
		q->end = end;
	}
}

/* The process's function symbols, listed once (for name patterns): a
 * static function, with its range, inside its file's. */
static void test_process_symbols_list_a_static_function(void **state)
{
	(void)state;
	skip_without_symbols();
	struct symbol_search q = {.address = (uintptr_t)static_function};
	assert_int_equal(tl_tracer_function_symbols(symbol_search_visit, &q), 0);
	assert_true(q.in_file);
	assert_string_equal(q.name, "static_function");
	assert_int_equal(q.start, (uintptr_t)static_function);
	assert_true(q.end > q.start);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_static_function_is_named_by_its_symbol, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_pie_executable_function_is_named_by_its_symbol,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dlopen_library_function_is_named_by_its_symbol,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cxx_template_is_demangled, setup, teardown),
	    cmocka_unit_test(test_stripped_file_is_named_from_its_debug_file),
	    cmocka_unit_test(test_file_with_another_build_id_keeps_module_offset),
	    cmocka_unit_test(test_missing_file_keeps_module_offset),
	    cmocka_unit_test(test_address_outside_every_mapping_is_hex),
	    cmocka_unit_test(test_long_name_is_cut_to_the_buffer),
	    cmocka_unit_test(test_in_process_name_is_resolved_once),
	    cmocka_unit_test(test_name_in_module_is_the_readers_module_offset),
	    cmocka_unit_test(test_process_symbols_list_a_static_function),
	    cmocka_unit_test(test_writer_without_the_resolver_thread_gets_module_offset),
	    cmocka_unit_test(test_writer_with_the_resolver_thread_gets_the_symbol),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
