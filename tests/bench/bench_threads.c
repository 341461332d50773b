/*
 * timeline-bench-threads: what a read costs per thread, as traces get
 * wider. Not a test: it measures and prints, and never fails on a figure.
 *
 * For each size asked (threads; default 10 k, 100 k and 1 M) it writes the
 * traces of tests/support/wide_traces.h - each thread in a process of its
 * own, with names, categories, async ids, counters and flows of its own -
 * and runs the CLI on each, in a child process of its own, as a user
 * would: a binary snapshot through `timeline convert` (to Chrome JSON, the
 * snapshot streamed), ftrace text through `timeline slices`, Chrome JSON
 * through `timeline convert`. Each row gives the child's wall time, the
 * time per thread, that time over the one per thread of the size before
 * (1.0 for a read in linear time, the size ratio for a quadratic one) and
 * the child's peak resident memory. The sizes of one format are measured
 * one after the other in one run, so that the ratios compare like with like;
 * --cli runs another build's CLI on the same traces, and --timeout stops a
 * read that takes too long (a quadratic one, at a million threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_child.h"
#include "support/wide_traces.h"

#define MAX_SIZES 8
/* The exit status of a child whose exec failed. */
#define EXIT_NOT_FOUND 127

static const char usage[] =
    "usage: timeline-bench-threads [--threads LIST] [--cli PATH] [--timeout S] [--dir DIR]\n"
    "                              [--keep]\n"
    "\n"
    "Writes a binary snapshot, ftrace text and Chrome JSON of each number of\n"
    "threads (comma-separated; default 10000,100000,1000000), each thread in a\n"
    "process of its own with names, tracks and flows of its own, and times the\n"
    "CLI reading each in a child process: the time per thread, and its ratio to\n"
    "the time per thread of the size before.\n"
    "\n"
    "options:\n"
    "  --threads LIST   the sizes, in threads\n"
    "  --cli PATH       the timeline CLI to run (default: the one built with this)\n"
    "  --timeout S      stop a read after S seconds, shown as over (default: none)\n"
    "  --dir DIR        where to write the traces (default: $TMPDIR or /tmp)\n"
    "  --keep           keep the generated files\n"
    "  -h, --help       print this help\n";

/* A format and the command that reads it (the input's path goes last). */
typedef struct wide_input {
	const char *format;
	const char *ext;
	int (*write)(FILE *f, unsigned threads);
	const char *command; /* for the table */
	const char *argv[6]; /* after the CLI's path; NULL-terminated */
} wide_input;

static const wide_input inputs[] = {
    {"snapshot", "tl", tl_wide_snapshot, "convert -o - (JSON)", {"convert", "-o", "-", NULL}},
    {"ftrace", "txt", tl_wide_ftrace, "slices", {"slices", NULL}},
    {"json", "json", tl_wide_json, "convert -o - (JSON)", {"convert", "-o", "-", NULL}},
};

/* Writes the trace of in for threads threads at path: its size, or 0
 * after printing the failure. */
static unsigned long long generate(const char *path, const wide_input *in, unsigned threads)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "timeline-bench-threads: %s: %s\n", path, strerror(errno));
		return 0;
	}
	static char buffer[1 << 20];
	setvbuf(f, buffer, _IOFBF, sizeof buffer);
	int rc = in->write(f, threads);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	struct stat st;
	if (rc == 0 && stat(path, &st) != 0)
		rc = -errno;
	if (rc) {
		fprintf(stderr, "timeline-bench-threads: writing %s: %s\n", path, strerror(-rc));
		return 0;
	}
	return (unsigned long long)st.st_size;
}

/* A read in a child: the CLI's arguments, and its time limit. */
typedef struct read_job {
	char **argv;
	unsigned timeout; /* seconds; 0: none */
} read_job;

/* The child: the CLI on the input, its output to /dev/null, killed by
 * SIGALRM after the time limit (alarm outlives the exec). */
static void child_main(void *arg, int result_fd)
{
	(void)result_fd;
	const read_job *job = arg;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
		_exit(1);
	alarm(job->timeout);
	execv(job->argv[0], job->argv);
	_exit(EXIT_NOT_FOUND);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"threads", required_argument, NULL, 't'},
	    {"cli", required_argument, NULL, 'c'},
	    {"timeout", required_argument, NULL, 'o'},
	    {"dir", required_argument, NULL, 'd'},
	    {"keep", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	double sizes[MAX_SIZES] = {10000, 100000, 1000000};
	int nsizes = 3, keep = 0, opt;
	const char *cli = BENCH_TIMELINE_CLI;
	unsigned timeout = 0;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 't':
			nsizes = bench_parse_sizes(optarg, sizes, MAX_SIZES, 0);
			if (nsizes < 0) {
				fprintf(stderr, "timeline-bench-threads: expected sizes like "
				                "10000,100000\n");
				return 2;
			}
			break;
		case 'c':
			cli = optarg;
			break;
		case 'o':
			timeout = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	char workdir[4096];
	snprintf(workdir, sizeof workdir, "%s/timeline-bench-threads.XXXXXX", dir);
	if (!mkdtemp(workdir)) {
		fprintf(stderr, "timeline-bench-threads: %s: %s\n", workdir, strerror(errno));
		return 1;
	}
	printf("%-9s %9s %9s  %-20s %9s %10s %12s %9s\n", "format", "threads", "file MiB",
	       "command", "seconds", "us/thread", "x size before", "peak MiB");
	int status = 0;
	for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
		const wide_input *in = &inputs[k];
		double before = 0; /* seconds per thread at the size before */
		for (int s = 0; s < nsizes; s++) {
			unsigned threads = (unsigned)sizes[s];
			char path[4200];
			snprintf(path, sizeof path, "%s/wide-%u.%s", workdir, threads, in->ext);
			unsigned long long bytes = generate(path, in, threads);
			if (!bytes) {
				status = 1;
				continue;
			}
			char *args[8] = {(char *)cli};
			size_t n = 1;
			for (size_t a = 0; in->argv[a]; a++)
				args[n++] = (char *)in->argv[a];
			args[n++] = path;
			args[n] = NULL;
			read_job job = {args, timeout};
			bench_child c = bench_child_run(child_main, &job, NULL, 0);
			printf("%-9s %9u %9.1f  %-20s ", in->format, threads,
			       (double)bytes / (1024.0 * 1024.0), in->command);
			if (!c.ok && timeout && c.exit_status < 0 && c.seconds >= timeout) {
				printf("over %u s: stopped\n", timeout);
				before = 0;
			} else if (!c.ok) {
				printf("failed (exit status %d)\n", c.exit_status);
				status = 1;
			} else {
				double per = c.seconds / threads;
				printf("%9.2f %10.2f ", c.seconds, per * 1e6);
				if (before > 0)
					printf("%12.2f ", per / before);
				else
					printf("%12s ", "-");
				printf("%9.1f\n", (double)c.peak_rss_kb / 1024.0);
				before = per;
			}
			fflush(stdout);
			if (!keep)
				unlink(path);
		}
	}
	if (keep)
		printf("files kept in %s\n", workdir);
	else
		rmdir(workdir);
	return status;
}
