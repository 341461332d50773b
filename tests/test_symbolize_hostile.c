/*
 * Paths named inside a trace (recorder/export/symbolize.h): a snapshot's
 * MAPPING chunks name files of its writer's choosing. A FIFO, a terminal,
 * a device, a directory, a symbolic link are never opened, and the function
 * in them is named module+0xoffset, by the reader and by `timeline convert`,
 * `slices`, `stats` and `merge`, which finish (a FIFO or a terminal opened
 * for reading blocks its reader for good). `--symbols off` opens no file;
 * `--debug-dir` is where debug files are looked for by build-id.
 *
 * The snapshots are this process's, its MAPPING chunks replaced by one that
 * names the path under test with the layout of the executable; whether a
 * file was opened is seen through inotify (IN_OPEN), whoever opened it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "support/test_support.h"

#ifndef TL_OBJCOPY /* the build's binutils (tests/CMakeLists.txt), else the host's */
#define TL_OBJCOPY "objcopy"
#endif
#ifndef TL_STRIP
#define TL_STRIP "strip"
#endif

#include "recorder/export/symbolize.h"
#include "recorder/export/trace_model.h"
#include "recorder/snapshot_format.h"
#include "recorder/snapshot_writer.h"
#include "recorder/tracer.h"

/* What a run may take before it counts as blocked. */
#define RUN_SECONDS 30

static volatile int calls;

/* The function whose record every snapshot of this file holds. */
static void hostile_target(void)
{
	calls++;
}

#define TARGET_SYMBOL "hostile_target"

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

static void on_alarm(int signo)
{
	(void)signo;
	static const char message[] = "timed out: a path named in the trace blocked its reader\n";
	(void)!write(STDERR_FILENO, message, sizeof message - 1);
	_exit(1);
}

/* Fails the running test, instead of hanging the suite, when it blocks. */
static void start_alarm(void)
{
	signal(SIGALRM, on_alarm);
	alarm(RUN_SECONDS);
}

/* ---- crafted snapshots ---------------------------------------------------- */

/* One MAPPING chunk's fields. */
typedef struct mapping {
	uint64_t start, end, offset;
	const char *path;
	uint32_t path_len;
	const uint8_t *build_id;
	uint32_t build_id_len;
} mapping;

/* A snapshot of this process that holds a function record of
 * hostile_target (malloc'd, *len its size). */
static uint8_t *snapshot_with_target(size_t *len)
{
	assert_true(tl_tracer_function_enter((const void *)hostile_target, NULL) != 0);
	tl_tracer_end(tl_category_get("function"));
	unsigned char *data;
	assert_int_equal(tl_snapshot_to_memory(&data, len), 0);
	return data;
}

static uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* Calls fn for each whole chunk of the snapshot: its type, its bytes
 * (header and padding included) and its payload. */
static void each_chunk(const uint8_t *data, size_t len,
                       void (*fn)(uint32_t type, const uint8_t *chunk, size_t size,
                                  const uint8_t *payload, uint64_t payload_len, void *ctx),
                       void *ctx)
{
	for (size_t off = TL_SNAPSHOT_HEADER_BYTES; len - off >= 16;) {
		uint64_t payload = load_u64(data + off + 8);
		size_t size = 16 + (size_t)payload + (size_t)(-payload & 7);
		assert_true(size <= len - off);
		fn(load_u32(data + off), data + off, size, data + off + 16, payload, ctx);
		off += size;
	}
}

struct find_mapping {
	uint64_t address;
	mapping found;
	int n;
};

static void find_mapping_chunk(uint32_t type, const uint8_t *chunk, size_t size, const uint8_t *p,
                               uint64_t payload_len, void *ctx)
{
	(void)chunk;
	(void)size;
	(void)payload_len;
	struct find_mapping *q = ctx;
	if (type != TL_CHUNK_MAPPING)
		return;
	mapping m = {load_u64(p), load_u64(p + 8), load_u64(p + 16), NULL, 0, NULL, 0};
	uint32_t path_len = load_u32(p + 24);
	m.build_id_len = load_u32(p + 28);
	m.build_id = p + 32 + path_len;
	if (q->address >= m.start && q->address < m.end) {
		q->found = m;
		q->n++;
	}
}

/* The recorded mapping of hostile_target: the executable's layout and
 * build-id (pointing into data); its path is left NULL. */
static mapping target_mapping(const uint8_t *data, size_t len)
{
	struct find_mapping q = {.address = (uintptr_t)hostile_target};
	each_chunk(data, len, find_mapping_chunk, &q);
	assert_int_equal(q.n, 1);
	return q.found;
}

struct rewrite {
	FILE *out;
	const mapping *m;
};

static void put_u32(FILE *f, uint32_t v)
{
	assert_int_equal(fwrite(&v, sizeof v, 1, f), 1);
}

static void put_u64(FILE *f, uint64_t v)
{
	assert_int_equal(fwrite(&v, sizeof v, 1, f), 1);
}

static void rewrite_chunk(uint32_t type, const uint8_t *chunk, size_t size, const uint8_t *p,
                          uint64_t payload_len, void *ctx)
{
	(void)p;
	(void)payload_len;
	struct rewrite *w = ctx;
	if (type == TL_CHUNK_MAPPING)
		return;
	if (type == TL_CHUNK_END) {
		const mapping *m = w->m;
		uint32_t path_len = m->path_len;
		uint64_t payload = 32 + (uint64_t)path_len + m->build_id_len;
		put_u32(w->out, TL_CHUNK_MAPPING);
		put_u32(w->out, 0);
		put_u64(w->out, payload);
		put_u64(w->out, m->start);
		put_u64(w->out, m->end);
		put_u64(w->out, m->offset);
		put_u32(w->out, path_len);
		put_u32(w->out, m->build_id_len);
		assert_int_equal(fwrite(m->path, 1, path_len, w->out), path_len);
		assert_int_equal(fwrite(m->build_id, 1, m->build_id_len, w->out), m->build_id_len);
		static const uint8_t zeros[8];
		size_t pad = (size_t)(-payload & 7);
		assert_int_equal(fwrite(zeros, 1, pad, w->out), pad);
	}
	assert_int_equal(fwrite(chunk, 1, size, w->out), size);
}

/*
 * Writes to a fresh file a snapshot of this process whose only mapping is
 * the executable's, named by the mapped_len bytes at `mapped` (its
 * build-id kept); returns the file (static storage: tl_test_path's) and
 * the name its function must have when the file is not read,
 * module+0xoffset, into module_offset.
 */
static const char *write_snapshot_naming_bytes(const char *mapped, size_t mapped_len,
                                               char *module_offset, size_t size)
{
	size_t len;
	uint8_t *data = snapshot_with_target(&len);
	mapping m = target_mapping(data, len);
	m.path = mapped;
	m.path_len = (uint32_t)mapped_len;
	const char *path = tl_test_path("hostile", ".tl");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, TL_SNAPSHOT_HEADER_BYTES, f), TL_SNAPSHOT_HEADER_BYTES);
	struct rewrite w = {f, &m};
	each_chunk(data, len, rewrite_chunk, &w);
	assert_int_equal(fclose(f), 0);
	free(data);
	const char *base = mapped + mapped_len;
	while (base[-1] != '/')
		base--;
	snprintf(module_offset, size, "%.*s+0x%llx", (int)(mapped + mapped_len - base), base,
	         (unsigned long long)((uintptr_t)hostile_target - m.start + m.offset));
	return path;
}

/* write_snapshot_naming_bytes of a string. */
static const char *write_snapshot_naming(const char *mapped, char *module_offset, size_t size)
{
	return write_snapshot_naming_bytes(mapped, strlen(mapped), module_offset, size);
}

/* The name the reader gives hostile_target in the snapshot at path, read
 * with options (NULL: the defaults), into name. */
static void read_name(const char *path, const tl_symbol_options *options, char *name, size_t size)
{
	tl_model model;
	char err[256];
	assert_int_equal(tl_model_read_binary_files(&path, 1, options, &model, err, sizeof err), 0);
	name[0] = '\0';
	for (size_t i = 0; i < model.nevents; i++) {
		const tl_model_event *e = &model.events[i];
		if (e->phase == TL_PHASE_BEGIN && e->cat && strcmp(e->cat, "function") == 0)
			snprintf(name, size, "%s",
			         e->name); /* the latest: every one is the target */
	}
	tl_model_free(&model);
	assert_true(name[0] != '\0');
}

/* ---- files -------------------------------------------------------------------- */

/* A fresh path (a copy of tl_test_path's, which reuses its buffers). */
static char *fresh_path(const char *stem, const char *ext)
{
	char *p = strdup(tl_test_path(stem, ext));
	assert_non_null(p);
	return p;
}

static void skip_without_symbols(void)
{
	if (tl_symbolizer_available())
		return;
	print_message("skipped: built without elfutils (TIMELINE_WITH_ELFUTILS=OFF): no symbol "
	              "table is read, functions are named module+0xoffset\n");
	skip();
}

/* A copy of this test program at a fresh path (malloc'd). Its path is read
 * here, not by the shell: under qemu-user, /proc/PID/exe of another process
 * is the emulator, while this process's own link names the program. */
static const char *own_executable(void)
{
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	return exe;
}

static char *copy_of_executable(const char *stem)
{
	char *copy = fresh_path(stem, "");
	assert_int_equal(tl_test_run("cp '%s' '%s'", own_executable(), copy), 0);
	return copy;
}

/* The build-id of the recorded executable, as `xx/rest` under .build-id. */
static void build_id_path(char *out, size_t size)
{
	size_t len;
	uint8_t *data = snapshot_with_target(&len);
	mapping m = target_mapping(data, len);
	if (m.build_id_len < 2) {
		free(data);
		print_message("skipped: this test program has no NT_GNU_BUILD_ID note (linked "
		              "without --build-id): no debug file can be found for it\n");
		skip();
	}
	size_t n = (size_t)snprintf(out, size, "%02x/", m.build_id[0]);
	for (uint32_t i = 1; i < m.build_id_len && n < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", m.build_id[i]);
	free(data);
}

/*
 * A debug tree under dir for this program as distributions lay it out:
 * dir/.build-id/xx/rest.debug a symbolic link to ../../NAME.debug, the
 * debug file (objcopy --only-keep-debug); and a stripped copy of the
 * program, returned (malloc'd), whose symbols only the debug file holds.
 * Skips when binutils cannot make them.
 */
static char *stripped_copy_with_debug_tree(const char *dir)
{
	char id[160];
	build_id_path(id, sizeof id);
	char *stripped = fresh_path("hostile-stripped", "");
	const char *exe = own_executable();
	/* the build's own binutils: a cross build's program is not the host's kind */
	if (tl_test_run("mkdir -p '%s/.build-id/%.2s' && "
	                "'%s' --only-keep-debug '%s' '%s/program.debug' && "
	                "ln -s ../../program.debug '%s/.build-id/%s.debug' && "
	                "'%s' --strip-all -o '%s' '%s'",
	                dir, id, TL_OBJCOPY, exe, dir, dir, id, TL_STRIP, stripped, exe) != 0) {
		print_message("skipped: %s and %s could not make a debug file\n", TL_OBJCOPY,
		              TL_STRIP);
		skip();
	}
	return stripped;
}

/* ---- opens, seen by inotify --------------------------------------------------- */

/* Watches the file at path (not a symbolic link's target) for opens by
 * any process; skips the test, saying why, where inotify cannot. */
static int watch_opens(const char *path)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0) {
		print_message("skipped: inotify_init1: %s: opens cannot be seen\n",
		              strerror(errno));
		skip();
	}
	if (inotify_add_watch(fd, path, IN_OPEN | IN_DONT_FOLLOW) < 0) {
		print_message("skipped: inotify_add_watch %s: %s: opens cannot be seen\n", path,
		              strerror(errno));
		close(fd);
		skip();
	}
	return fd;
}

/* The opens the watch saw; closes it. */
static int opens_seen(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int opens = 0;
	ssize_t len;
	while ((len = read(fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			opens += (e->mask & IN_OPEN) != 0;
			p += sizeof *e + e->len;
		}
	}
	close(fd);
	return opens;
}

/* Reads the snapshot naming `mapped` with the default options: its
 * function is module+0xoffset and `watched` (mapped, or what it leads
 * to) was never opened. */
static void assert_never_opened(const char *mapped, const char *watched)
{
	start_alarm();
	char want[600], name[600];
	const char *path = write_snapshot_naming(mapped, want, sizeof want);
	int watch = watch_opens(watched);
	read_name(path, NULL, name, sizeof name);
	assert_int_equal(opens_seen(watch), 0);
	assert_string_equal(name, want);
	unlink(path);
	alarm(0);
}

/* ---- the reader --------------------------------------------------------------- */

static void test_fifo_in_a_mapping_is_never_opened(void **state)
{
	(void)state;
	char *fifo = fresh_path("hostile-fifo", "");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_never_opened(fifo, fifo);
	unlink(fifo);
	free(fifo);
}

/* A terminal's reads block until someone types: the other end of a
 * pseudo-terminal stays silent. */
static void test_terminal_in_a_mapping_is_never_opened(void **state)
{
	(void)state;
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
		print_message("skipped: no pseudo-terminal: %s\n", strerror(errno));
		skip();
	}
	char terminal[256];
	assert_int_equal(ptsname_r(master, terminal, sizeof terminal), 0);
	assert_never_opened(terminal, terminal);
	close(master);
}

/* A device of this test's own (/dev/zero's numbers): nothing else opens it. */
static void test_character_device_in_a_mapping_is_never_opened(void **state)
{
	(void)state;
	char *device = fresh_path("hostile-zero", "");
	if (mknod(device, S_IFCHR | 0600, makedev(1, 5)) != 0) {
		print_message("skipped: mknod %s: %s (needs CAP_MKNOD)\n", device, strerror(errno));
		free(device);
		skip();
	}
	assert_never_opened(device, device);
	unlink(device);
	free(device);
}

static void test_directory_in_a_mapping_is_never_opened(void **state)
{
	(void)state;
	char *dir = fresh_path("hostile-dir", "");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_never_opened(dir, dir);
	rmdir(dir);
	free(dir);
}

/* Mapping paths are the kernel's, whose last component is never a link:
 * one that is, even to a good ELF file, is not followed. */
static void test_symbolic_link_in_a_mapping_is_never_followed(void **state)
{
	(void)state;
	char *copy = copy_of_executable("hostile-target");
	char *link = fresh_path("hostile-link", "");
	assert_int_equal(symlink(copy, link), 0);
	assert_never_opened(link, copy);
	unlink(link);
	unlink(copy);
	free(link);
	free(copy);
}

/* A path with a NUL byte in it, the good file before the NUL: what it
 * shows (its last component) is not what would be opened, so nothing is. */
static void test_path_with_a_nul_byte_is_never_opened(void **state)
{
	(void)state;
	char *copy = copy_of_executable("hostile-target");
	char mapped[1024];
	int n = snprintf(mapped, sizeof mapped, "%s%c/usr/lib/libshown.so", copy, '\0');
	char want[600], name[600];
	const char *path = write_snapshot_naming_bytes(mapped, (size_t)n, want, sizeof want);
	assert_int_equal(strncmp(want, "libshown.so+0x", strlen("libshown.so+0x")), 0);
	int watch = watch_opens(copy);
	read_name(path, NULL, name, sizeof name);
	assert_int_equal(opens_seen(watch), 0);
	assert_string_equal(name, want);
	unlink(path);
	unlink(copy);
	free(copy);
}

/* The mapped file gone, the debug file looked for by the recorded build-id
 * is a FIFO: never opened. */
static void test_debug_file_that_is_a_fifo_is_never_opened(void **state)
{
	(void)state;
	start_alarm();
	char id[160];
	build_id_path(id, sizeof id);
	char *dir = fresh_path("hostile-debug", "");
	char fifo[1024];
	snprintf(fifo, sizeof fifo, "%s/.build-id/%s.debug", dir, id);
	assert_int_equal(tl_test_run("mkdir -p '%s/.build-id/%.2s'", dir, id), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	char want[600], name[600];
	const char *path = write_snapshot_naming("/nonexistent/hostile-gone", want, sizeof want);
	tl_symbol_options options = {.debug_dirs = {dir}, .ndebug_dirs = 1};
	int watch = watch_opens(fifo);
	read_name(path, &options, name, sizeof name);
	assert_int_equal(opens_seen(watch), 0);
	assert_string_equal(name, want);
	tl_test_run("rm -rf '%s' '%s'", dir, path);
	free(dir);
	alarm(0);
}

/* Distributions link .build-id/xx/rest.debug to the debug file: a debug
 * file is reached through that link. */
static void test_debug_file_behind_a_build_id_link_names_the_function(void **state)
{
	(void)state;
	skip_without_symbols();
	char *dir = fresh_path("hostile-debug", "");
	char *stripped = stripped_copy_with_debug_tree(dir);
	char want[600], name[600];
	const char *path = write_snapshot_naming(stripped, want, sizeof want);
	read_name(path, NULL, name, sizeof name);
	assert_string_equal(name, want); /* not in /usr/lib/debug */
	tl_symbol_options options = {.debug_dirs = {dir}, .ndebug_dirs = 1};
	read_name(path, &options, name, sizeof name);
	assert_string_equal(name, TARGET_SYMBOL);
	tl_test_run("rm -rf '%s' '%s' '%s'", dir, stripped, path);
	free(stripped);
	free(dir);
}

static void test_debug_dirs_are_searched_in_order(void **state)
{
	(void)state;
	skip_without_symbols();
	char *empty = fresh_path("hostile-empty", "");
	char *dir = fresh_path("hostile-debug", "");
	assert_int_equal(mkdir(empty, 0700), 0);
	char *stripped = stripped_copy_with_debug_tree(dir);
	char want[600], name[600];
	const char *path = write_snapshot_naming(stripped, want, sizeof want);
	tl_symbol_options options = {.debug_dirs = {empty, dir}, .ndebug_dirs = 2};
	read_name(path, &options, name, sizeof name);
	assert_string_equal(name, TARGET_SYMBOL);
	options.ndebug_dirs = 1; /* the empty one alone */
	read_name(path, &options, name, sizeof name);
	assert_string_equal(name, want);
	tl_test_run("rm -rf '%s' '%s' '%s' '%s'", empty, dir, stripped, path);
	free(stripped);
	free(dir);
	free(empty);
}

/* The same good file, once past TL_SYMBOL_FILE_MAX bytes (a hole at its
 * end), is not read. */
static void test_file_larger_than_the_limit_is_not_read(void **state)
{
	(void)state;
	skip_without_symbols();
	char *copy = copy_of_executable("hostile-large");
	char want[600], name[600];
	const char *path = write_snapshot_naming(copy, want, sizeof want);
	read_name(path, NULL, name, sizeof name);
	assert_string_equal(name, TARGET_SYMBOL);
	if (truncate(copy, (off_t)TL_SYMBOL_FILE_MAX + 1) != 0) {
		print_message("skipped: truncate %s to %llu bytes: %s\n", copy,
		              (unsigned long long)TL_SYMBOL_FILE_MAX + 1, strerror(errno));
		unlink(copy);
		unlink(path);
		free(copy);
		skip();
	}
	read_name(path, NULL, name, sizeof name);
	assert_string_equal(name, want);
	unlink(path);
	unlink(copy);
	free(copy);
}

/* no_files: neither the mapped file nor a debug file is opened; the
 * defaults open the mapped file (what shows that the watch sees opens). */
static void test_no_files_opens_no_file(void **state)
{
	(void)state;
	char *copy = copy_of_executable("hostile-target");
	char want[600], name[600];
	const char *path = write_snapshot_naming(copy, want, sizeof want);
	char *dir = fresh_path("hostile-debug", "");
	assert_int_equal(mkdir(dir, 0700), 0);
	tl_symbol_options options = {.no_files = true, .debug_dirs = {dir}, .ndebug_dirs = 1};
	int watch = watch_opens(copy);
	int dir_watch = watch_opens(dir);
	read_name(path, &options, name, sizeof name);
	assert_int_equal(opens_seen(watch), 0);
	assert_int_equal(opens_seen(dir_watch), 0);
	assert_string_equal(name, want);
	if (tl_symbolizer_available()) {
		watch = watch_opens(copy);
		read_name(path, NULL, name, sizeof name);
		assert_true(opens_seen(watch) > 0);
		assert_string_equal(name, TARGET_SYMBOL);
	}
	rmdir(dir);
	unlink(path);
	unlink(copy);
	free(dir);
	free(copy);
}

/* ---- the commands --------------------------------------------------------------- */

/* Runs `timeline ARGS` bounded in time: its exit status (124 when it had
 * to be stopped), what it printed into *out (stdout) and *err. */
static int run_cli(char **out, char **err, const char *args)
{
	const char *cli = tl_test_cli();
	assert_non_null(cli);
	return tl_test_run_output(out, err, "timeout -k 5 %d %s %s", RUN_SECONDS, cli, args);
}

/* Runs each command that reads snapshots on the snapshot at path, with
 * options, and checks that it finished and named the function `want`. */
static void assert_commands_name(const char *path, const char *options, const char *want)
{
	char json[600];
	snprintf(json, sizeof json, "%s", tl_test_path("hostile-out", ".json"));
	char lines[5][4096];
	snprintf(lines[0], sizeof lines[0], "convert %s %s -o %s", options, path, json);
	/* with a filter: through a model */
	snprintf(lines[1], sizeof lines[1], "convert --from 0s %s %s -o %s", options, path, json);
	snprintf(lines[2], sizeof lines[2], "slices %s %s", options, path);
	snprintf(lines[3], sizeof lines[3], "stats %s %s", options, path);
	snprintf(lines[4], sizeof lines[4], "merge %s %s %s -o %s", options, path, path, json);
	for (size_t i = 0; i < 5; i++) {
		char *out, *err;
		unlink(json);
		int rc = run_cli(&out, &err, lines[i]);
		if (rc != 0)
			fail_msg("timeline %s: exit %d%s: %s", lines[i], rc,
			         rc == 124 ? " (blocked: stopped by timeout)" : "", err);
		char *text = strstr(lines[i], " -o ") ? tl_test_read_file(json, NULL) : strdup(out);
		assert_non_null(text);
		if (!strstr(text, want))
			fail_msg("timeline %s: '%s' not in what it wrote", lines[i], want);
		free(text);
		free(out);
		free(err);
	}
	unlink(json);
}

/* The commands finish on a snapshot naming `mapped`, the function named
 * module+0xoffset, and none opened `watched` (mapped, or what it leads to;
 * NULL: not watched). */
static void assert_commands_finish(const char *mapped, const char *watched)
{
	char want[600];
	char *path = strdup(write_snapshot_naming(mapped, want, sizeof want));
	int watch = watched ? watch_opens(watched) : -1;
	assert_commands_name(path, "", want);
	if (watched)
		assert_int_equal(opens_seen(watch), 0);
	unlink(path);
	free(path);
}

static void test_commands_finish_on_a_fifo(void **state)
{
	(void)state;
	char *fifo = fresh_path("hostile-fifo", "");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_commands_finish(fifo, fifo);
	unlink(fifo);
	free(fifo);
}

static void test_commands_finish_on_a_terminal(void **state)
{
	(void)state;
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
		print_message("skipped: no pseudo-terminal: %s\n", strerror(errno));
		skip();
	}
	char terminal[256];
	assert_int_equal(ptsname_r(master, terminal, sizeof terminal), 0);
	assert_commands_finish(terminal, terminal);
	close(master);
}

/* A device of this test's own, watched; else /dev/zero, which other
 * processes open too. */
static void test_commands_finish_on_a_character_device(void **state)
{
	(void)state;
	char *device = fresh_path("hostile-zero", "");
	if (mknod(device, S_IFCHR | 0600, makedev(1, 5)) == 0) {
		assert_commands_finish(device, device);
		unlink(device);
	} else {
		print_message("mknod %s: %s: /dev/zero instead, its opens not watched\n", device,
		              strerror(errno));
		assert_commands_finish("/dev/zero", NULL);
	}
	free(device);
}

static void test_commands_finish_on_a_directory(void **state)
{
	(void)state;
	char *dir = fresh_path("hostile-dir", "");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_commands_finish(dir, dir);
	rmdir(dir);
	free(dir);
}

static void test_commands_finish_on_a_symbolic_link_to_a_fifo(void **state)
{
	(void)state;
	char *fifo = fresh_path("hostile-fifo", "");
	char *link = fresh_path("hostile-link", "");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink(fifo, link), 0);
	assert_commands_finish(link, fifo);
	unlink(link);
	unlink(fifo);
	free(link);
	free(fifo);
}

/* --symbols off: no command opens the mapped file, whose function is then
 * module+0xoffset; without it they open it and name the function. */
static void test_commands_with_symbols_off_open_no_file(void **state)
{
	(void)state;
	char *copy = copy_of_executable("hostile-target");
	char want[600];
	char *path = strdup(write_snapshot_naming(copy, want, sizeof want));
	int watch = watch_opens(copy);
	assert_commands_name(path, "--symbols off", want);
	assert_int_equal(opens_seen(watch), 0);
	assert_commands_name(path, "--symbols=off", want);
	if (tl_symbolizer_available()) {
		watch = watch_opens(copy);
		assert_commands_name(path, "--symbols on", TARGET_SYMBOL);
		assert_true(opens_seen(watch) > 0);
	}
	unlink(path);
	unlink(copy);
	free(path);
	free(copy);
}

static void test_commands_find_a_debug_file_in_debug_dir(void **state)
{
	(void)state;
	skip_without_symbols();
	char *dir = fresh_path("hostile-debug", "");
	char *stripped = stripped_copy_with_debug_tree(dir);
	char want[600], options[1200];
	char *path = strdup(write_snapshot_naming(stripped, want, sizeof want));
	snprintf(options, sizeof options, "--debug-dir %s", dir);
	assert_commands_name(path, options, TARGET_SYMBOL);
	tl_test_run("rm -rf '%s' '%s' '%s'", dir, stripped, path);
	free(path);
	free(stripped);
	free(dir);
}

/* The fuzz seeds of the snapshot reader that name such paths (devices,
 * links to descriptors, a directory, a NUL byte, a FIFO's usual place):
 * read to the end, the function in them named module+0xoffset. */
static void test_commands_finish_on_the_mapping_seeds(void **state)
{
	(void)state;
	static const char *const seeds[][2] = {
	    {"mapping-dev-zero.tl", "zero+0x7bd0"},
	    {"mapping-dev-tty.tl", "tty+0x7bd0"},
	    {"mapping-dev-stdin-link.tl", "stdin+0x7bd0"},
	    {"mapping-proc-self-fd-0.tl", "0+0x7bd0"},
	    {"mapping-directory.tl", "\"+0x7bd0\""},
	    {"mapping-path-with-nul.tl", "x.so+0x7bd0"},
	    {"mapping-fifo.tl", "timeline-fuzz-fifo+0x7bd0"},
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		char args[1024], *out, *err;
		snprintf(args, sizeof args, "slices %s/tests/fuzz/seeds/fuzz_binary_snapshot/%s",
		         TL_SOURCE_DIR, seeds[i][0]);
		int rc = run_cli(&out, &err, args);
		if (rc != 0 || !strstr(out, seeds[i][1]))
			fail_msg("timeline %s: exit %d, '%s' expected in: %s%s", args, rc,
			         seeds[i][1], out, err);
		free(out);
		free(err);
	}
}

/* A bad value is one usage line naming the option; exit 2. */
static void assert_usage_error(const char *args, const char *message)
{
	char *out, *err;
	assert_int_equal(run_cli(&out, &err, args), 2);
	if (!strstr(err, message))
		fail_msg("timeline %s: '%s' not in: %s", args, message, err);
	assert_int_equal(tl_test_count(err, "\n"), 1);
	free(out);
	free(err);
}

static void test_commands_reject_an_unknown_symbols_mode(void **state)
{
	(void)state;
	assert_usage_error("slices --symbols maybe x.tl",
	                   "timeline slices: --symbols: expected on or off, got 'maybe'");
	assert_usage_error("convert --symbols= x.tl -o y.json",
	                   "timeline convert: --symbols: expected on or off, got ''");
}

static void test_commands_reject_a_debug_dir_that_is_not_a_directory(void **state)
{
	(void)state;
	assert_usage_error("stats --debug-dir /nonexistent/debug x.tl",
	                   "timeline stats: --debug-dir: /nonexistent/debug: No such file");
	assert_usage_error("merge --debug-dir /dev/null a.tl b.tl -o y.json",
	                   "timeline merge: --debug-dir: /dev/null: not a directory");
}

static void test_commands_reject_debug_dir_with_symbols_off(void **state)
{
	(void)state;
	assert_usage_error("convert --symbols off --debug-dir / x.tl -o y.json",
	                   "timeline convert: --debug-dir: no file is read with --symbols off");
	assert_usage_error("slices --debug-dir / --symbols off x.tl",
	                   "timeline slices: --debug-dir: no file is read with --symbols off");
}

int main(void)
{
	tl_test_clear_environment();
	if (!tl_test_cli()) {
		print_message("skipped: TIMELINE_CLI is not set (ctest sets it)\n");
		return TL_TEST_SKIP_EXIT;
	}
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_fifo_in_a_mapping_is_never_opened),
	    T(test_terminal_in_a_mapping_is_never_opened),
	    T(test_character_device_in_a_mapping_is_never_opened),
	    T(test_directory_in_a_mapping_is_never_opened),
	    T(test_symbolic_link_in_a_mapping_is_never_followed),
	    T(test_path_with_a_nul_byte_is_never_opened),
	    T(test_debug_file_that_is_a_fifo_is_never_opened),
	    T(test_debug_file_behind_a_build_id_link_names_the_function),
	    T(test_debug_dirs_are_searched_in_order),
	    T(test_file_larger_than_the_limit_is_not_read),
	    T(test_no_files_opens_no_file),
	    T(test_commands_finish_on_a_fifo),
	    T(test_commands_finish_on_a_terminal),
	    T(test_commands_finish_on_a_character_device),
	    T(test_commands_finish_on_a_directory),
	    T(test_commands_finish_on_a_symbolic_link_to_a_fifo),
	    T(test_commands_with_symbols_off_open_no_file),
	    T(test_commands_find_a_debug_file_in_debug_dir),
	    cmocka_unit_test(test_commands_finish_on_the_mapping_seeds),
	    cmocka_unit_test(test_commands_reject_an_unknown_symbols_mode),
	    cmocka_unit_test(test_commands_reject_a_debug_dir_that_is_not_a_directory),
	    cmocka_unit_test(test_commands_reject_debug_dir_with_symbols_off),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
