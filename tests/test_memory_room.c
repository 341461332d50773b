/*
 * The memory the process can still take (recorder/memory_room.h), read from
 * hand-made cgroup trees and meminfo files; the real limits at work are in
 * test_faults.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/test_support.h"

#include "recorder/memory_room.h"

#define MIB (1024ull * 1024)

static char root[4096];
static char proc_cgroup[4200], cgroup2[4200], cgroup1[4200], meminfo[4200];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "%s", tl_test_path("memory-room", ""));
	snprintf(proc_cgroup, sizeof proc_cgroup, "%s/cgroup", root);
	snprintf(cgroup2, sizeof cgroup2, "%s/unified", root);
	snprintf(cgroup1, sizeof cgroup1, "%s/memory", root);
	snprintf(meminfo, sizeof meminfo, "%s/meminfo", root);
	return mkdir(root, 0755);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[8400];
	int n = snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_true(n > 0 && (size_t)n < sizeof path);
	tl_test_run("mkdir -p '%s'", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* A cgroup v2 directory under the fake mount, with its limit, usage and
 * page cache (bytes). */
static void cgroup2_dir(const char *path, const char *max, uint64_t current, uint64_t file)
{
	char dir[8400], text[256];
	snprintf(dir, sizeof dir, "%s%s", cgroup2, path);
	write_file(dir, "memory.max", max);
	snprintf(text, sizeof text, "%llu\n", (unsigned long long)current);
	write_file(dir, "memory.current", text);
	snprintf(text, sizeof text, "anon 1\nfile %llu\nactive_file %llu\ninactive_file %llu\n",
	         (unsigned long long)file, (unsigned long long)file / 2,
	         (unsigned long long)(file - file / 2));
	write_file(dir, "memory.stat", text);
}

static struct tl_memory_room room_of(const char *cgroup_line, const char *meminfo_text)
{
	write_file(root, "cgroup", cgroup_line);
	if (meminfo_text)
		write_file(root, "meminfo", meminfo_text);
	struct tl_memory_sources src = {proc_cgroup, cgroup2, cgroup1,
	                                meminfo_text ? meminfo : NULL};
	struct tl_memory_room room;
	tl_memory_room_get(&src, &room);
	print_message("room %llu: %s\n", (unsigned long long)room.bytes, room.limit);
	return room;
}

static void test_room_is_the_cgroup_limit_less_its_usage(void **state)
{
	(void)state;
	cgroup2_dir("/app", "104857600\n", 30 * MIB, 0);
	struct tl_memory_room room = room_of("0::/app\n", NULL);
	assert_int_equal(room.bytes, 70 * MIB);
	assert_non_null(strstr(room.limit, "/unified/app"));
	assert_non_null(strstr(room.limit, "memory.max 104857600"));
}

static void test_page_cache_counts_as_free(void **state)
{
	(void)state;
	cgroup2_dir("/cached", "104857600\n", 30 * MIB, 20 * MIB);
	struct tl_memory_room room = room_of("0::/cached\n", NULL);
	assert_int_equal(room.bytes, 90 * MIB);
}

static void test_a_tighter_parent_cgroup_wins(void **state)
{
	(void)state;
	cgroup2_dir("/parent", "52428800\n", 40 * MIB, 0);
	cgroup2_dir("/parent/child", "max\n", 1 * MIB, 0);
	struct tl_memory_room room = room_of("0::/parent/child\n", NULL);
	assert_int_equal(room.bytes, 10 * MIB);
	assert_non_null(strstr(room.limit, "/unified/parent ("));
}

static void test_max_means_no_limit(void **state)
{
	(void)state;
	cgroup2_dir("/free", "max\n", 30 * MIB, 0);
	struct tl_memory_room room = room_of("0::/free\n", NULL);
	assert_true(room.bytes == UINT64_MAX);
	assert_string_equal(room.limit, "");
}

static void test_usage_over_the_limit_leaves_no_room(void **state)
{
	(void)state;
	cgroup2_dir("/over", "1048576\n", 2 * MIB, 0);
	struct tl_memory_room room = room_of("0::/over\n", NULL);
	assert_int_equal(room.bytes, 0);
}

static void test_cgroup1_memory_controller_is_read(void **state)
{
	(void)state;
	char dir[8400];
	snprintf(dir, sizeof dir, "%s/job", cgroup1);
	write_file(dir, "memory.limit_in_bytes", "67108864\n");
	write_file(dir, "memory.usage_in_bytes", "16777216\n");
	write_file(dir, "memory.stat",
	           "cache 0\nactive_file 0\ntotal_active_file 4194304\n"
	           "total_inactive_file 4194304\n");
	write_file(cgroup1, "memory.limit_in_bytes", "9223372036854771712\n"); /* the root's */
	write_file(cgroup1, "memory.usage_in_bytes", "1\n");
	struct tl_memory_room room = room_of("5:cpu\n4:memory:/job\n0::/\n", NULL);
	assert_int_equal(room.bytes, (64 - 16 + 8) * MIB);
	assert_non_null(strstr(room.limit, "memory.limit_in_bytes 67108864"));
}

static void test_a_cgroup_path_missing_under_the_mount_reads_the_mount(void **state)
{
	(void)state;
	/* a container's own cgroup mounted as the root, /proc naming the host's path */
	cgroup2_dir("", "33554432\n", 8 * MIB, 0);
	struct tl_memory_room room = room_of("0::/docker/0123abcd\n", NULL);
	assert_int_equal(room.bytes, 24 * MIB);
	tl_test_run("rm -f '%s/memory.max'", cgroup2);
}

static void test_available_memory_is_a_limit(void **state)
{
	(void)state;
	struct tl_memory_room room =
	    room_of("0::/nowhere\n", "MemTotal:       2048 kB\nMemAvailable:   1000 kB\n");
	assert_int_equal(room.bytes, 1000 * 1024);
	assert_non_null(strstr(room.limit, "MemAvailable"));
}

static void test_nothing_readable_means_no_limit(void **state)
{
	(void)state;
	struct tl_memory_sources src = {"/nonexistent/cgroup", "/nonexistent", NULL,
	                                "/nonexistent/meminfo"};
	struct tl_memory_room room;
	tl_memory_room_get(&src, &room);
	assert_true(room.bytes == UINT64_MAX);
}

static void test_this_machine_has_room(void **state)
{
	(void)state;
	struct tl_memory_room room;
	tl_memory_room_get(&tl_memory_sources_system, &room);
	print_message("this process can still take %llu bytes (%s)\n",
	              (unsigned long long)room.bytes, room.limit[0] ? room.limit : "no limit");
	assert_true(room.bytes > 1 * MIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_room_is_the_cgroup_limit_less_its_usage),
	    cmocka_unit_test(test_page_cache_counts_as_free),
	    cmocka_unit_test(test_a_tighter_parent_cgroup_wins),
	    cmocka_unit_test(test_max_means_no_limit),
	    cmocka_unit_test(test_usage_over_the_limit_leaves_no_room),
	    cmocka_unit_test(test_cgroup1_memory_controller_is_read),
	    cmocka_unit_test(test_a_cgroup_path_missing_under_the_mount_reads_the_mount),
	    cmocka_unit_test(test_available_memory_is_a_limit),
	    cmocka_unit_test(test_nothing_readable_means_no_limit),
	    cmocka_unit_test(test_this_machine_has_room),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
