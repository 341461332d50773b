/*
 * `timeline`: the command-line tool. main() only dispatches: each subcommand
 * is one row of the table below and lives in its own tools/cmd_<name>.c.
 * A build without libtracefs has no `record`: it is left out of the table
 * and of --help, and invoking it says why.
 */
#include <stdio.h>
#include <string.h>

#include <timeline/timeline.h>

#include "tools/commands.h"
#include "tools/readers/reading_memory.h"

struct tl_command {
	const char *name;
	const char *summary; /* one line for the usage text */
	int (*run)(int argc, char **argv);
};

static const struct tl_command commands[] = {
    {"demo", "run a simulated instrumented engine and write its trace", tl_cmd_demo},
    {"convert", "turn a snapshot, ftrace text or JSON into Chrome JSON or ftrace text",
     tl_cmd_convert},
    {"slices", "print the slices, counters and flows of a trace, as Perfetto reads it",
     tl_cmd_slices},
    {"stats", "count, total and self time, percentiles and the longest of each slice name",
     tl_cmd_stats},
    {"merge", "join traces on one timeline, aligned through their clocks", tl_cmd_merge},
#ifdef TL_HAVE_TRACEFS
    {"record", "record a systrace (ftrace) trace from the kernel, around a command", tl_cmd_record},
#endif
    {"fps", "frame rate and jank from SurfaceFlinger --latency dumps or frame slices", tl_cmd_fps},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out)
{
	fputs("usage: timeline <command> [options]\n"
	      "       timeline --help | --version\n"
	      "\n"
	      "commands:\n",
	      out);
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Run 'timeline <command> --help' for a command's options.\n",
	      out);
}

static const struct tl_command *find_command(const char *name)
{
	for (size_t i = 0; i < COMMAND_COUNT; i++) {
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	tl_reading_memory_setup();
	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		print_usage(stdout);
		return 0;
	}
	if (strcmp(name, "--version") == 0) {
		printf("timeline %d.%d.%d\n", TIMELINE_VERSION_MAJOR, TIMELINE_VERSION_MINOR,
		       TIMELINE_VERSION_PATCH);
		return 0;
	}
	const struct tl_command *cmd = find_command(name);
#ifndef TL_HAVE_TRACEFS
	if (!cmd && strcmp(name, "record") == 0) {
		fputs("timeline record: not available: this timeline was built without "
		      "libtracefs (TIMELINE_WITH_TRACEFS=OFF)\n",
		      stderr);
		return 1;
	}
#endif
	if (!cmd) {
		if (name[0] == '-')
			fprintf(stderr, "timeline: unknown option '%s' (see 'timeline --help')\n",
			        name);
		else
			fprintf(stderr, "timeline: unknown command '%s' (see 'timeline --help')\n",
			        name);
		return 2;
	}

	/* The command sees its own name as argv[0], so getopt's messages read
	 * "timeline convert: ...". */
	char prog[64];
	snprintf(prog, sizeof prog, "timeline %s", cmd->name);
	argv[1] = prog;
	return cmd->run(argc - 1, argv + 1);
}
