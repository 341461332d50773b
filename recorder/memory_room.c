/*
 * The memory the process can still take (memory_room.h), from the limits of
 * its memory cgroups and the machine's MemAvailable.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/memory_room.h"

#define PATH_BYTES 4096
#define LINE_BYTES 512

/* A limit at or above this is "no limit" (cgroup v1 writes one near 2^63). */
#define NO_LIMIT ((uint64_t)1 << 60)

const struct tl_memory_sources tl_memory_sources_system = {
    .proc_cgroup = "/proc/self/cgroup",
    .cgroup2 = "/sys/fs/cgroup",
    .cgroup1 = "/sys/fs/cgroup/memory",
    .meminfo = "/proc/meminfo",
};

/* The file names of one cgroup version. */
struct cgroup_files {
	const char *limit, *usage;
	const char *active_file, *inactive_file; /* memory.stat keys */
};

static const struct cgroup_files v2_files = {"memory.max", "memory.current", "active_file",
                                             "inactive_file"};
/* v1: the total_ keys count the cgroups below too, as usage_in_bytes does */
static const struct cgroup_files v1_files = {"memory.limit_in_bytes", "memory.usage_in_bytes",
                                             "total_active_file", "total_inactive_file"};

/* The first line of dir/name as a number; "max" is NO_LIMIT. False when the
 * file is missing or holds something else. */
static bool read_number(const char *dir, const char *name, uint64_t *out)
{
	char path[PATH_BYTES], line[LINE_BYTES];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return false;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	if (strncmp(line, "max", 3) == 0) {
		*out = NO_LIMIT;
		return true;
	}
	char *end;
	unsigned long long v = strtoull(line, &end, 10);
	if (end == line)
		return false;
	*out = v;
	return true;
}

/* The value of `key value` lines (memory.stat) or `Key: value kB`
 * (meminfo, with scale 1024); false when the key is not there. */
static bool read_key(const char *path, const char *key, uint64_t scale, uint64_t *out)
{
	char line[LINE_BYTES];
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t len = strlen(key);
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, key, len) != 0 || (line[len] != ' ' && line[len] != ':'))
			continue;
		char *p = line + len + (line[len] == ':');
		*out = strtoull(p, NULL, 10) * scale;
		found = true;
	}
	fclose(f);
	return found;
}

static uint64_t file_cache(const char *dir, const struct cgroup_files *files)
{
	char path[PATH_BYTES];
	if ((size_t)snprintf(path, sizeof path, "%s/memory.stat", dir) >= sizeof path)
		return 0;
	uint64_t active = 0, inactive = 0;
	read_key(path, files->active_file, 1, &active);
	read_key(path, files->inactive_file, 1, &inactive);
	return active + inactive;
}

static void keep_smaller(struct tl_memory_room *room, uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void keep_smaller(struct tl_memory_room *room, uint64_t bytes, const char *fmt, ...)
{
	if (bytes >= room->bytes)
		return;
	room->bytes = bytes;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(room->limit, sizeof room->limit, fmt, ap);
	va_end(ap);
}

/* The cgroup at root + path and every one above it, up to root. */
static void walk_cgroups(const char *root, const char *path, const struct cgroup_files *files,
                         struct tl_memory_room *room)
{
	char dir[PATH_BYTES];
	size_t root_len = strlen(root);
	if ((size_t)snprintf(dir, sizeof dir, "%s%s", root, path) >= sizeof dir)
		return;
	size_t len = strlen(dir);
	while (len > root_len && dir[len - 1] == '/')
		dir[--len] = '\0';
	for (;;) {
		uint64_t limit, usage;
		if (read_number(dir, files->limit, &limit) && limit < NO_LIMIT &&
		    read_number(dir, files->usage, &usage)) {
			uint64_t cache = file_cache(dir, files);
			uint64_t used = usage > cache ? usage - cache : 0;
			keep_smaller(room, limit > used ? limit - used : 0,
			             "the memory cgroup %s (%s %" PRIu64 ", %" PRIu64
			             " in use, %" PRIu64 " of it page cache)",
			             dir, files->limit, limit, usage, cache);
		}
		if (len <= root_len)
			break;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < root_len)
			break;
		len = (size_t)(slash - dir);
		dir[len] = '\0';
	}
}

/* Finds the process's cgroup of each version in proc_cgroup and walks it. */
static void read_cgroups(const struct tl_memory_sources *src, struct tl_memory_room *room)
{
	FILE *f = src->proc_cgroup ? fopen(src->proc_cgroup, "re") : NULL;
	if (!f)
		return;
	char line[PATH_BYTES];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		/* hierarchy-id:controllers:path */
		char *controllers = strchr(line, ':');
		char *path = controllers ? strchr(controllers + 1, ':') : NULL;
		if (!path)
			continue;
		*controllers++ = '\0';
		*path++ = '\0';
		if (strcmp(line, "0") == 0 && *controllers == '\0') {
			if (src->cgroup2)
				walk_cgroups(src->cgroup2, path, &v2_files, room);
			continue;
		}
		char *save;
		for (char *c = strtok_r(controllers, ",", &save); c;
		     c = strtok_r(NULL, ",", &save)) {
			if (strcmp(c, "memory") == 0 && src->cgroup1)
				walk_cgroups(src->cgroup1, path, &v1_files, room);
		}
	}
	fclose(f);
}

void tl_memory_room_get(const struct tl_memory_sources *sources, struct tl_memory_room *out)
{
	out->bytes = UINT64_MAX;
	out->limit[0] = '\0';
	read_cgroups(sources, out);
	uint64_t available;
	if (sources->meminfo && read_key(sources->meminfo, "MemAvailable", 1024, &available))
		keep_smaller(out, available, "the machine's available memory (MemAvailable in %s)",
		             sources->meminfo);
}
