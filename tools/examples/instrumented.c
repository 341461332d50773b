/*
 * An instrumented program: built with -finstrument-functions and linked
 * with timeline::instrument, it records every call of its own functions
 * with nothing else written but tl_init() and a snapshot, a thread that
 * exits mid-call included, C++ (instrumented_cxx.cpp: a template, an
 * exception) and a library it loads with dlopen (instrumented_plugin.c,
 * libinstrumented-plugin.so, next to the program).
 *
 * usage: instrumented-example SNAPSHOT
 *
 * Writes the binary snapshot to SNAPSHOT, then prints the number of calls
 * it made while recording and the name a reader gives each of its
 * functions, one a line, for tests/test_instrument.c to compare with the
 * snapshot: the symbol, and for the program's own C functions, after a
 * tab, the name a reader without symbols gives (module+0xoffset, from
 * /proc/self/maps).
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <timeline/instrument.h>
#include <timeline/timeline.h>

static volatile int sink;

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void work(void)
{
	sink = fib(6); /* 25 calls */
}

/* A thread that exits two calls deep: its calls are closed at its exit. */
static void leave_thread(void)
{
	pthread_exit(NULL);
}

static void *thread_body(void *arg)
{
	(void)arg;
	leave_thread();
	return NULL;
}

int example_cxx_work(const char *plugin); /* instrumented_cxx.cpp */

/* The symbol and the module+0xoffset name of a code address, as readers
 * of a snapshot give them. Not recorded: it runs after the snapshot. */
static void print_name(const char *symbol, const void *address)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end, offset;
		char perms[8], path[512] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start, &end, perms, &offset,
		           path) < 5)
			continue;
		uintptr_t a = (uintptr_t)address;
		if (a < start || a >= end || perms[2] != 'x')
			continue;
		const char *base = strrchr(path, '/');
		printf("%s\t%s+0x%llx\n", symbol, base ? base + 1 : path,
		       (unsigned long long)(a - start + offset));
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SNAPSHOT\n", argv[0]);
		return 2;
	}
	/* the plugin: next to this program */
	char plugin[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", plugin, sizeof plugin - 32);
	if (len <= 0) {
		fprintf(stderr, "instrumented-example: cannot read /proc/self/exe\n");
		return 1;
	}
	plugin[len] = '\0';
	char *slash = strrchr(plugin, '/');
	strcpy(slash ? slash + 1 : plugin, "libinstrumented-plugin.so");
	int rc = tl_init(NULL);
	if (rc) {
		fprintf(stderr, "instrumented-example: tl_init: %s\n", strerror(-rc));
		return 1;
	}
	work();
	if (example_cxx_work(plugin) < 0) {
		fprintf(stderr, "instrumented-example: cannot load %s\n", plugin);
		tl_shutdown();
		return 1;
	}
	pthread_t thread;
	if (pthread_create(&thread, NULL, thread_body, NULL) == 0)
		pthread_join(thread, NULL);
	rc = tl_snapshot_binary(argv[1]);
	tl_shutdown();
	if (rc) {
		fprintf(stderr, "instrumented-example: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	/* work, the 25 calls of fib(6), the C++ part's six, the thread's two */
	printf("34\n");
	print_name("work", (const void *)work);
	print_name("fib", (const void *)fib);
	print_name("leave_thread", (const void *)leave_thread);
	printf("example_cxx_work\n"
	       "int example::scaled<int>(int, int)\n"
	       "double example::scaled<double>(double, double)\n"
	       "example::checked(int)\n"
	       "plugin_work\n"
	       "plugin_square\n");
	return 0;
}
