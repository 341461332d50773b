/*
 * How much more memory the process can take before the kernel kills it
 * (memory_room.c): asked by the block pool before it backs a buffer with
 * memory, so that a buffer the process cannot have is refused with -ENOMEM
 * rather than ending in the OOM killer. Internal.
 */
#ifndef TIMELINE_MEMORY_ROOM_H
#define TIMELINE_MEMORY_ROOM_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Where the limits are read. Any path may be NULL: not read. */
struct tl_memory_sources {
	const char *proc_cgroup; /* the process's cgroups: /proc/self/cgroup */
	const char *cgroup2;     /* where the unified hierarchy is mounted */
	const char *cgroup1;     /* where the v1 memory controller is mounted */
	const char *meminfo;     /* /proc/meminfo */
};

/* The running system's: /proc/self/cgroup, /sys/fs/cgroup,
 * /sys/fs/cgroup/memory, /proc/meminfo. */
extern const struct tl_memory_sources tl_memory_sources_system;

struct tl_memory_room {
	uint64_t bytes;  /* UINT64_MAX: no limit found */
	char limit[320]; /* what sets it, for a message; "" when none */
};

/*
 * The memory the process can still take: the smallest of
 *   - for its memory cgroup and each cgroup above it (v2: memory.max,
 *     memory.current; v1: memory.limit_in_bytes, memory.usage_in_bytes),
 *     the limit less the usage, file-backed page cache counted as free (it
 *     is reclaimed before anything is killed; memory.stat's active_file and
 *     inactive_file);
 *   - the machine's MemAvailable.
 * Swap is not counted: a buffer is touched as a whole and must stay
 * resident. Limits that cannot be read are left out, so the answer errs
 * towards "room". Reads files; not async-signal-safe.
 */
void tl_memory_room_get(const struct tl_memory_sources *sources, struct tl_memory_room *out);

#pragma GCC visibility pop

#endif /* TIMELINE_MEMORY_ROOM_H */
