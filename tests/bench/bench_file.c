/*
 * timeline-bench-file: the file recorder, side by side with the ring in one
 * run (docs/bench.md).
 *
 * 1. A thread's event cost: begin+end pairs on one thread into the file
 *    recorder (a pool large enough that nothing drops while the drain
 *    writes) and into the ring; the best of several runs of each, and
 *    their ratio (target: file <= 1.1 x ring), in elapsed time and in the
 *    thread's own CPU time (which leaves out the time the thread waited
 *    for a CPU the drain or another process had).
 * 2. The disk: what it takes, written as the drain writes (O_DIRECT where
 *    the file system allows it, 1 MiB at a time, then fdatasync) to a file
 *    beside the trace, in the same run.
 * 3. The drain: two threads writing begin/end pairs flat out for a while
 *    into the file recorder with its default pool; the events they emitted
 *    per second and in MB/s at the file's bytes per event, the share
 *    dropped because the drain was behind (target: none), what the drain
 *    wrote per second in events and MB/s; when in the run the drops fell
 *    (sampled every 10 ms); and the CPU time the drain had, and how long
 *    it waited for a CPU (/proc/self/task/TID/schedstat).
 *
 * Prints a table and exits 0 whatever the figures are: it is not a test.
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <timeline/trace_event.h>

#define RUNS 5
#define PAIRS_PER_RUN 2000000
#define TARGET_FILE_OVER_RING 1.10

static char path[4096];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void start(tl_recorder_kind kind, size_t bytes)
{
	tl_options o = {.struct_size = sizeof o, .recorder = kind, .buffer_bytes = bytes};
	if (kind == TL_RECORDER_FILE)
		o.file_path = path;
	int rc = tl_init(&o);
	if (rc) {
		fprintf(stderr, "timeline-bench-file: tl_init: %s\n", strerror(-rc));
		exit(1);
	}
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per event of PAIRS_PER_RUN pairs on this thread, best of RUNS; and
 * in the thread's CPU time, best of RUNS. */
static double event_cost(tl_recorder_kind kind, size_t bytes, uint64_t *dropped, double *cpu)
{
	double best = 1e30;
	*cpu = 1e30;
	*dropped = 0;
	for (int run = 0; run < RUNS; run++) {
		start(kind, bytes);
		for (int i = 0; i < 1000; i++) { /* warm: the first blocks */
			TL_TRACE_EVENT_BEGIN0("bench", "warm");
			TL_TRACE_EVENT_END0("bench", "warm");
		}
		double t0 = now_s(), c0 = thread_cpu_s();
		for (int i = 0; i < PAIRS_PER_RUN; i++) {
			TL_TRACE_EVENT_BEGIN0("bench", "pair");
			TL_TRACE_EVENT_END0("bench", "pair");
		}
		double ns = (now_s() - t0) * 1e9 / (2.0 * PAIRS_PER_RUN);
		double cpu_ns = (thread_cpu_s() - c0) * 1e9 / (2.0 * PAIRS_PER_RUN);
		if (cpu_ns < *cpu)
			*cpu = cpu_ns;
		tl_stats st = {.struct_size = sizeof st};
		tl_stats_get(&st);
		*dropped += st.events_dropped;
		tl_shutdown();
		if (ns < best)
			best = ns;
	}
	return best;
}

/* Removes `file` and lets the file system finish what that started: on a
 * mount with `discard` the freed blocks are discarded at the next journal
 * commit, which syncfs() makes now, rather than during the next phase,
 * whose writes would wait behind the discards in the device's queue. */
static void remove_and_settle(const char *file)
{
	unlink(file);
	char dir[sizeof path];
	snprintf(dir, sizeof dir, "%s", file);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		syncfs(fd);
		close(fd);
	}
}

/* The CPU time and the run-queue wait of this process's threads other
 * than the main one (after the writers are joined: the drain's), in
 * seconds; 0 where /proc is not there. */
static void other_threads_time(double *cpu, double *waited)
{
	*cpu = *waited = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	char self[32];
	snprintf(self, sizeof self, "%d", (int)getpid()); /* the main thread's id */
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0)
			continue;
		char p[300];
		snprintf(p, sizeof p, "/proc/self/task/%s/schedstat", e->d_name);
		FILE *f = fopen(p, "r");
		unsigned long long run = 0, wait = 0;
		if (f && fscanf(f, "%llu %llu", &run, &wait) == 2) {
			*cpu += (double)run * 1e-9;
			*waited += (double)wait * 1e-9;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
}

/* MB/s of `bytes` written to a new file at path in 1 MiB writes, with
 * O_DIRECT where the file system takes it (*direct set), and fdatasync;
 * 0 when it cannot be written. The file is removed. */
static double disk_bandwidth(const char *at, size_t bytes, int *direct)
{
	const size_t chunk = 1u << 20;
	int fd = open(at, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
	*direct = fd >= 0;
	if (fd < 0)
		fd = open(at, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	void *buf = NULL;
	if (fd < 0 || posix_memalign(&buf, 4096, chunk) != 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	memset(buf, 0x5a, chunk);
	double t0 = now_s();
	size_t done = 0;
	while (done < bytes) {
		ssize_t w = write(fd, buf, chunk);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	int synced = fdatasync(fd) == 0;
	double seconds = now_s() - t0;
	close(fd);
	remove_and_settle(at);
	free(buf);
	return done == bytes && synced ? (double)bytes / seconds / 1e6 : 0;
}

/* This process's resident memory in bytes (/proc/self/statm), 0 where
 * it cannot be read. */
static double resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size = 0, resident = 0;
	int ok = f && fscanf(f, "%llu %llu", &size, &resident) == 2;
	if (f)
		fclose(f);
	return ok ? (double)resident * (double)sysconf(_SC_PAGESIZE) : 0;
}

static _Atomic int stop;
static _Atomic uint64_t emitted;

static void *flat_out(void *arg)
{
	(void)arg;
	uint64_t n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 1024; i++) {
			TL_TRACE_EVENT_BEGIN0("bench", "pair");
			TL_TRACE_EVENT_END0("bench", "pair");
		}
		n += 2048;
	}
	atomic_fetch_add(&emitted, n);
	return NULL;
}

/* Where in the run the drops fell: the count sampled every WATCH_NS (a
 * fourth thread, asleep between samples), the windows with drops, the
 * first and last of them, and the most dropped in one. */
#define WATCH_NS (10 * 1000 * 1000)
struct drop_window {
	unsigned windows;          /* sampled */
	unsigned windows_dropping; /* with at least one drop */
	double first_s, last_s;
	uint64_t worst;
};

static void watch_drops(double seconds, struct drop_window *w)
{
	double t0 = now_s();
	uint64_t before = 0;
	w->first_s = -1;
	for (;;) {
		struct timespec period = {0, WATCH_NS};
		nanosleep(&period, NULL);
		double t = now_s() - t0;
		tl_stats st = {.struct_size = sizeof st};
		tl_stats_get(&st);
		uint64_t dropped = st.events_dropped - before;
		before = st.events_dropped;
		w->windows++;
		if (dropped) {
			w->windows_dropping++;
			if (w->first_s < 0)
				w->first_s = t;
			w->last_s = t;
			if (dropped > w->worst)
				w->worst = dropped;
		}
		if (t >= seconds)
			return;
	}
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	double seconds = quick ? 0.5 : 2.0;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/timeline-bench-file-%d.tl", dir, (int)getpid());

	uint64_t ring_dropped, file_dropped;
	double ring_cpu, file_cpu;
	double ring = event_cost(TL_RECORDER_RING, 1u << 20, &ring_dropped, &ring_cpu);
	double file = event_cost(TL_RECORDER_FILE, 256u << 20, &file_dropped, &file_cpu);
	remove_and_settle(path);

	char disk_path[sizeof path + 8];
	snprintf(disk_path, sizeof disk_path, "%s.disk", path);
	int direct;
	double disk = disk_bandwidth(disk_path, (quick ? 256u : 1024u) << 20, &direct);

	double resident_before = resident_bytes();
	start(TL_RECORDER_FILE, 0); /* the default pool */
	pthread_t t[2];
	double t0 = now_s();
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, flat_out, NULL);
	/* when the drops happen */
	struct drop_window when = {0};
	watch_drops(seconds, &when);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	double elapsed = now_s() - t0;
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	double drain_cpu, drain_waited;
	other_threads_time(&drain_cpu, &drain_waited);
	double resident_grown = resident_bytes() - resident_before;
	tl_shutdown();
	struct stat sb;
	double file_bytes = stat(path, &sb) == 0 ? (double)sb.st_size : 0;
	unlink(path);

	double total = (double)atomic_load(&emitted);
	double written = (double)st.events_written;
	double drop_share = total > 0 ? (double)st.events_dropped / total : 0;
	/* the file's bytes per event written (metadata included) */
	double event_bytes = written > 0 ? file_bytes / written : 0;
	double emitted_mb = total / elapsed * event_bytes / 1e6;
	double drained_mb = file_bytes / elapsed / 1e6;
	printf("file recorder (docs/bench.md)\n");
	printf("  begin+end, 1 thread, elapsed:    ring %6.2f ns/event, file %6.2f ns/event: "
	       "%.2f x (target <= %.2f x: %s)%s\n",
	       ring, file, file / ring, TARGET_FILE_OVER_RING,
	       file / ring <= TARGET_FILE_OVER_RING ? "PASS" : "MISS",
	       file_dropped ? " (the file runs dropped events)" : "");
	printf("  begin+end, 1 thread, thread CPU: ring %6.2f ns/event, file %6.2f ns/event: "
	       "%.2f x (target <= %.2f x: %s)\n",
	       ring_cpu, file_cpu, file_cpu / ring_cpu, TARGET_FILE_OVER_RING,
	       file_cpu / ring_cpu <= TARGET_FILE_OVER_RING ? "PASS" : "MISS");
	printf("  the disk, %s 1 MiB writes + fdatasync, %u MiB: %.0f MB/s\n",
	       direct ? "O_DIRECT" : "buffered", quick ? 256u : 1024u, disk);
	printf("  2 threads flat out for %.1f s, default pool:\n", elapsed);
	printf("    emitted   %7.1f M events/s = %6.0f MB/s at %.1f bytes/event in the file\n",
	       total / elapsed / 1e6, emitted_mb, event_bytes);
	printf("    drained   %7.1f M events/s = %6.0f MB/s (disk: %.0f MB/s)\n",
	       written / elapsed / 1e6, drained_mb, disk);
	printf("    dropped   %7.1f %% (target: none: %s)%s\n", 100 * drop_share,
	       st.events_dropped == 0 ? "PASS" : "MISS",
	       disk > 0 && emitted_mb > disk ? "; the writers emit more than the disk takes" : "");
	if (when.windows_dropping)
		printf("    drops in %u of %u windows of %d ms, from %.2f s to %.2f s, at most %" PRIu64
		       " in one\n",
		       when.windows_dropping, when.windows, WATCH_NS / 1000000, when.first_s,
		       when.last_s, when.worst);
	printf(
	    "    the drain %7.3f s of CPU (%.1f ns per event written), %.3f s waiting for a CPU\n",
	    drain_cpu, written > 0 ? drain_cpu * 1e9 / written : 0, drain_waited);
	printf("    writers ceded the CPU to the drain %" PRIu64 " times (half the pool waiting)\n",
	       st.writer_yields);
	printf("    resident memory grew by %.1f MiB (the pool's blocks backed as the drain's "
	       "backlog reached them, the staging buffers, the threads' stacks)\n",
	       resident_grown / (1 << 20));
	printf("{\"file_over_ring\":%.3f,\"ring_ns\":%.3f,\"file_ns\":%.3f,"
	       "\"file_over_ring_cpu\":%.3f,\"ring_cpu_ns\":%.3f,\"file_cpu_ns\":%.3f,"
	       "\"disk_bytes_per_s\":%.0f,\"disk_direct\":%d,"
	       "\"flat_out_events_per_s\":%.0f,\"flat_out_bytes_per_s\":%.0f,"
	       "\"bytes_per_event\":%.2f,\"dropped_share\":%.4f,\"drain_events_per_s\":%.0f,"
	       "\"drain_bytes_per_s\":%.0f,\"drain_cpu_s\":%.3f,\"drain_waited_s\":%.3f,"
	       "\"writer_yields\":%" PRIu64 ",\"resident_grown_bytes\":%.0f}\n",
	       file / ring, ring, file, file_cpu / ring_cpu, ring_cpu, file_cpu, disk * 1e6, direct,
	       total / elapsed, emitted_mb * 1e6, event_bytes, drop_share, written / elapsed,
	       drained_mb * 1e6, drain_cpu, drain_waited, st.writer_yields, resident_grown);
	return 0;
}
