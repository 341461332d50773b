/*
 * Faults a user meets: a full disk (a 64 KiB tmpfs mounted here, as root)
 * under a snapshot by path, `timeline convert` and the looper's ANR files;
 * and a buffer the process cannot have (an address-space limit, a memory
 * cgroup's limit, v2 or v1), which tl_init must refuse with -ENOMEM instead of being
 * killed. Each test that cannot set its fault up here skips, saying why.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/looper.h>
#include <timeline/trace_event.h>

#define MIB (1024 * 1024)
#define CGROUP2 "/sys/fs/cgroup"
#define CGROUP1_MEMORY "/sys/fs/cgroup/memory"

/* ---- a full disk ----------------------------------------------------------- */

/* Mounts a 64 KiB tmpfs (tl_test_mount_disk). */
static const char *full_disk_or_skip(void)
{
	return tl_test_mount_disk("full-disk", 64 * 1024);
}

static int unmount_disk(void **state)
{
	(void)state;
	tl_shutdown();
	tl_test_unmount_disk();
	return 0;
}

/* Fills the disk to the last byte with one file, "filler". */
static void fill(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/filler", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	static const char block[4096];
	ssize_t n;
	while ((n = write(fd, block, sizeof block)) > 0)
		;
	while ((n = write(fd, block, 1)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
}

/* A session holding far more than 64 KiB of trace, in any format. */
static void record_a_lot(void)
{
	tl_test_init(TL_RECORDER_RING, 4 * MIB);
	for (int i = 0; i < 4000; i++) {
		TL_TRACE_EVENT_BEGIN1("faults", "a slice with a long enough name", "i", i);
		TL_TRACE_EVENT_END0("faults", "a slice with a long enough name");
	}
}

static void test_snapshot_json_on_a_full_disk_is_enospc_and_leaves_no_file(void **state)
{
	(void)state;
	const char *dir = full_disk_or_skip();
	record_a_lot();
	char path[4200];
	snprintf(path, sizeof path, "%s/trace.json", dir);
	assert_int_equal(tl_snapshot_json(path), -ENOSPC);
	assert_string_equal(tl_test_dir_entries(dir), "");
}

static void test_snapshot_binary_on_a_full_disk_is_enospc_and_leaves_no_file(void **state)
{
	(void)state;
	const char *dir = full_disk_or_skip();
	record_a_lot();
	char path[4200];
	snprintf(path, sizeof path, "%s/trace.tlsnap", dir);
	assert_int_equal(tl_snapshot_binary(path), -ENOSPC);
	assert_string_equal(tl_test_dir_entries(dir), "");
}

static void test_snapshot_on_a_full_disk_keeps_the_previous_file(void **state)
{
	(void)state;
	const char *dir = full_disk_or_skip();
	char path[4200];
	snprintf(path, sizeof path, "%s/trace.txt", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("the previous trace\n", f);
	assert_int_equal(fclose(f), 0);
	record_a_lot();
	assert_int_equal(tl_snapshot_ftrace(path), -ENOSPC);
	char *text = tl_test_read_file(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "the previous trace\n");
	free(text);
	assert_string_equal(tl_test_dir_entries(dir), "trace.txt");
}

static void test_convert_on_a_full_disk_prints_one_error_and_leaves_no_file(void **state)
{
	(void)state;
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("skipped: TIMELINE_CLI is not set; run this suite through ctest\n");
		skip();
	}
	const char *dir = full_disk_or_skip();
	record_a_lot();
	char input[4200], output[4200], err[4200];
	snprintf(input, sizeof input, "%s", tl_test_path("faults-in", ".tlsnap"));
	snprintf(err, sizeof err, "%s", tl_test_path("faults-convert-err", ".txt"));
	snprintf(output, sizeof output, "%s/trace.json", dir);
	assert_int_equal(tl_snapshot_binary(input), 0);
	int status = tl_test_run("'%s' convert '%s' -o '%s' 2> '%s'", cli, input, output, err);
	char *msg = tl_test_read_file(err, NULL);
	assert_non_null(msg);
	print_message("exit status %d, said: %s", status, msg);
	assert_int_equal(status, 1);
	char expected[8600];
	snprintf(expected, sizeof expected,
	         "timeline convert: %s: write failed: No space left on device\n", output);
	assert_string_equal(msg, expected);
	free(msg);
	assert_string_equal(tl_test_dir_entries(dir), "");
}

struct anr_seen {
	int reports;
	int dump_error;
	char dump_path[4096], report_path[4096];
};

static void on_anr(const tl_looper_report *r, void *user)
{
	struct anr_seen *seen = user;
	if (r->kind != TL_LOOPER_REPORT_ANR)
		return;
	seen->reports++;
	seen->dump_error = r->dump_error;
	snprintf(seen->dump_path, sizeof seen->dump_path, "%s", r->dump_path ? r->dump_path : "");
	snprintf(seen->report_path, sizeof seen->report_path, "%s",
	         r->report_path ? r->report_path : "");
}

static void test_looper_anr_on_a_full_disk_leaves_no_files(void **state)
{
	(void)state;
	const char *dir = full_disk_or_skip();
	record_a_lot();
	fill(dir);
	struct anr_seen seen = {0};
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.anr_timeout_ms = 100;
	o.lag_threshold_ms = 0;
	o.slow_dispatch_ms = 0;
	o.dump_directory = dir;
	o.on_report = on_anr;
	o.user = &seen;
	tl_looper *loop = tl_looper_create(&o);
	assert_non_null(loop);
	tl_looper_dispatch_begin(loop, "stuck");
	struct timespec stall = {0, 400 * 1000 * 1000};
	while (nanosleep(&stall, &stall) != 0)
		;
	tl_looper_dispatch_end(loop);
	tl_looper_destroy(loop);
	assert_int_equal(seen.reports, 1);
	assert_int_equal(seen.dump_error, -ENOSPC);
	assert_string_equal(seen.dump_path, "");
	assert_string_equal(seen.report_path, "");
	assert_string_equal(tl_test_dir_entries(dir), "filler");
}

/* ---- a buffer the process cannot have -------------------------------------- */

/* What a child reports back: tl_init's result and its log line. */
struct init_result {
	int rc;
	char logged[512];
};

static void log_to(tl_log_level level, const char *message, void *user)
{
	struct init_result *r = user;
	if (level == TL_LOG_ERROR && r->logged[0] == '\0')
		snprintf(r->logged, sizeof r->logged, "%s", message);
}

/* In the child: starts a recorder of `kind` and `bytes` (a file recorder
 * writes to a file of the test's) and writes the result to fd. */
static void child_init(int fd, size_t bytes, tl_recorder_kind kind)
{
	struct init_result r = {0};
	tl_options o = {0};
	o.struct_size = sizeof o;
	o.recorder = kind;
	o.buffer_bytes = bytes;
	if (kind == TL_RECORDER_FILE)
		o.file_path = tl_test_path("faults-file-recorder", ".tl");
	o.log = log_to;
	o.log_user = &r;
	r.rc = tl_init(&o);
	if (r.rc == 0) {
		TL_TRACE_EVENT_INSTANT0("faults", "recorded", TL_SCOPE_THREAD);
		tl_shutdown();
	}
	if (o.file_path)
		unlink(o.file_path);
	ssize_t n = write(fd, &r, sizeof r);
	_exit(n == (ssize_t)sizeof r ? 0 : 3);
}

/* Waits for the child; fails the test if it was killed (the OOM killer's
 * SIGKILL is what this suite guards against) and returns its report. */
static struct init_result child_result(pid_t pid, int fd)
{
	struct init_result r;
	memset(&r, 0, sizeof r);
	ssize_t n = read(fd, &r, sizeof r);
	close(fd);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		print_error("the child was killed by signal %d%s\n", WTERMSIG(status),
		            WTERMSIG(status) == SIGKILL ? " (the OOM killer?)" : "");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(n, sizeof r);
	print_message("tl_init: %d, logged: %s\n", r.rc, r.logged);
	return r;
}

/* The address space the process uses now (VmSize), in bytes. */
static size_t address_space_used(void)
{
	char *text = tl_test_read_file("/proc/self/statm", NULL);
	assert_non_null(text);
	unsigned long pages = strtoul(text, NULL, 10);
	free(text);
	return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void test_init_over_the_address_space_limit_is_enomem(void **state)
{
	(void)state;
	if (tl_test_emulator()) {
		/* qemu-user keeps RLIMIT_AS to itself: the guest's setrlimit is a no-op */
		print_message("skipped under %s: it does not apply RLIMIT_AS to the program\n",
		              tl_test_emulator());
		skip();
	}
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		struct rlimit as = {address_space_used() + 64 * MIB, RLIM_INFINITY};
		as.rlim_max = as.rlim_cur;
		if (setrlimit(RLIMIT_AS, &as) != 0)
			_exit(4);
		child_init(pipefd[1], 256 * MIB, TL_RECORDER_RING);
	}
	close(pipefd[1]);
	struct init_result r = child_result(pid, pipefd[0]);
	assert_int_equal(r.rc, -ENOMEM);
	assert_non_null(strstr(r.logged, "buffer of 268435456 bytes: cannot be mapped"));
	assert_non_null(strstr(r.logged, "RLIMIT_AS"));
}

/* A memory cgroup of its own with its limit set: cgroup v2 (memory.max)
 * where the unified hierarchy has the memory controller, else cgroup v1
 * (memory.limit_in_bytes); a skip with the reason when neither can be
 * made. */
static char cgroup[256];
static const char *cgroup_limit_file; /* the file that holds the limit */

static void write_value(const char *dir, const char *name, const char *value, bool required)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		assert_false(required);
		return;
	}
	fputs(value, f);
	int rc = fclose(f);
	if (required)
		assert_int_equal(rc, 0);
}

static const char *memory_cgroup_or_skip(size_t max)
{
	char *controllers = tl_test_read_file(CGROUP2 "/cgroup.subtree_control", NULL);
	bool v2 = controllers && strstr(controllers, "memory");
	free(controllers);
	struct stat st;
	bool v1 = !v2 && stat(CGROUP1_MEMORY "/memory.limit_in_bytes", &st) == 0;
	if (!v2 && !v1) {
		print_message("skipped: no memory cgroup controller: none enabled in the cgroup v2 "
		              "hierarchy at " CGROUP2 " and no cgroup v1 one at " CGROUP1_MEMORY "\n");
		skip();
	}
	snprintf(cgroup, sizeof cgroup, "%s/timeline-test-%d", v2 ? CGROUP2 : CGROUP1_MEMORY,
	         (int)getpid());
	if (mkdir(cgroup, 0755) != 0) {
		int e = errno;
		cgroup[0] = '\0';
		print_message("skipped: cannot create a memory cgroup under %s: %s (needs root and a "
		              "writable cgroup mount)\n",
		              v2 ? CGROUP2 : CGROUP1_MEMORY, strerror(e));
		skip();
	}
	char value[32];
	snprintf(value, sizeof value, "%zu\n", max);
	cgroup_limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
	write_value(cgroup, cgroup_limit_file, value, true);
	/* no swap, where the kernel counts it: the buffer must stay resident */
	write_value(cgroup, v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes",
	            v2 ? "0\n" : value, false);
	return cgroup;
}

static int remove_cgroup(void **state)
{
	(void)state;
	if (cgroup[0]) {
		rmdir(cgroup);
		cgroup[0] = '\0';
	}
	return 0;
}

/* Runs a child in the cgroup that starts a recorder of `kind` and `bytes`. */
static struct init_result init_in_cgroup(const char *dir, size_t bytes, tl_recorder_kind kind)
{
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		char path[512];
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		FILE *f = fopen(path, "w");
		if (!f || fputs("0\n", f) < 0 || fclose(f) != 0)
			_exit(5);
		child_init(pipefd[1], bytes, kind);
	}
	close(pipefd[1]);
	return child_result(pid, pipefd[0]);
}

/* A recorder of `kind` with a budget of 256 MiB, in a cgroup limited to 64
 * MiB: -ENOMEM, logged with the cgroup and its limit. */
static void check_over_the_cgroup_memory_limit_is_enomem(tl_recorder_kind kind)
{
	const char *dir = memory_cgroup_or_skip(64 * MIB);
	struct init_result r = init_in_cgroup(dir, 256 * MIB, kind);
	assert_int_equal(r.rc, -ENOMEM);
	assert_non_null(strstr(r.logged, "buffer of 268435456 bytes: more than the"));
	assert_non_null(strstr(r.logged, dir));
	char limit[64];
	snprintf(limit, sizeof limit, "%s 67108864", cgroup_limit_file);
	assert_non_null(strstr(r.logged, limit));
}

/* The same recorder with 16 MiB records, and logs nothing. */
static void check_within_the_cgroup_memory_limit_records(tl_recorder_kind kind)
{
	const char *dir = memory_cgroup_or_skip(64 * MIB);
	struct init_result r = init_in_cgroup(dir, 16 * MIB, kind);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.logged, "");
}

static void test_init_over_the_cgroup_memory_limit_is_enomem(void **state)
{
	(void)state;
	check_over_the_cgroup_memory_limit_is_enomem(TL_RECORDER_RING);
}

static void test_init_within_the_cgroup_memory_limit_records(void **state)
{
	(void)state;
	check_within_the_cgroup_memory_limit_records(TL_RECORDER_RING);
}

/* A file recorder backs its pool only as its drain falls behind, but a
 * pool it could never have is refused at tl_init all the same: the disk's
 * first long stall would otherwise end the process. */
static void test_a_file_pool_over_the_cgroup_memory_limit_is_enomem(void **state)
{
	(void)state;
	check_over_the_cgroup_memory_limit_is_enomem(TL_RECORDER_FILE);
}

static void test_a_file_pool_within_the_cgroup_memory_limit_records(void **state)
{
	(void)state;
	check_within_the_cgroup_memory_limit_records(TL_RECORDER_FILE);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(
	        test_snapshot_json_on_a_full_disk_is_enospc_and_leaves_no_file, unmount_disk),
	    cmocka_unit_test_teardown(
	        test_snapshot_binary_on_a_full_disk_is_enospc_and_leaves_no_file, unmount_disk),
	    cmocka_unit_test_teardown(test_snapshot_on_a_full_disk_keeps_the_previous_file,
	                              unmount_disk),
	    cmocka_unit_test_teardown(
	        test_convert_on_a_full_disk_prints_one_error_and_leaves_no_file, unmount_disk),
	    cmocka_unit_test_teardown(test_looper_anr_on_a_full_disk_leaves_no_files, unmount_disk),
	    cmocka_unit_test(test_init_over_the_address_space_limit_is_enomem),
	    cmocka_unit_test_teardown(test_init_over_the_cgroup_memory_limit_is_enomem,
	                              remove_cgroup),
	    cmocka_unit_test_teardown(test_a_file_pool_over_the_cgroup_memory_limit_is_enomem,
	                              remove_cgroup),
	    cmocka_unit_test_teardown(test_a_file_pool_within_the_cgroup_memory_limit_records,
	                              remove_cgroup),
	    cmocka_unit_test_teardown(test_init_within_the_cgroup_memory_limit_records,
	                              remove_cgroup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
