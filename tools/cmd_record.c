/*
 * `timeline record`: captures a systrace (ftrace) trace from the kernel in
 * a private tracefs instance, optionally around a command, and writes it
 * as ftrace text, Chrome JSON or Perfetto's protobuf format. The tracefs side is record_session.c;
 * this file is the command line, the child process, the signals, the live
 * progress and the summary.
 *
 * Exit status: 0, 1 for a recording or I/O error (tracefs missing, no
 * permission, a file that cannot be written), 2 for a usage error. With a
 * COMMAND, when the recording itself succeeded, the command's own status
 * when it is not 0 (128 + N when it was killed by signal N, 127 when it
 * could not be run), so that `timeline record -- make test` fails when
 * the tests fail.
 */
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/record_app_dir.h"
#include "tools/record_json.h"
#include "tools/record_session.h"
#include "tools/record_user.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder/atomic_file.h"

#define RECORD_PREFIX "timeline record"
/* The pool of each process the command starts, unless TIMELINE_BUFFER_KB
 * says otherwise (docs/capture.md). */
#define RECORD_APP_BUFFER_KB "4096"
#define RECORD_DEFAULT_BUFFER_KB 4096u
#define RECORD_MAX_BUFFER_KB (1024u * 1024u)
#define RECORD_MAX_EVENTS 64
#define RECORD_POLL_MS 100
#define RECORD_PROGRESS_NS 250000000LL

static const char record_usage[] =
    "usage: timeline record [-o FILE] [--format ftrace|json|perfetto] [-e EVENT]...\n"
    "                       [--buffer-kb N] [--duration S] [--clock boot|mono]\n"
    "                       [--app-recorder file|systrace] [--user USER]\n"
    "                       [-- COMMAND [ARGS...]]\n"
    "\n"
    "Records the kernel's trace in a private tracefs instance: trace_marker\n"
    "writes (the systrace recorder's events, atrace), sched_switch, sched_waking\n"
    "and the events named with -e. With a COMMAND, runs it and records until it\n"
    "exits: a program built with timeline records its own events with the file\n"
    "recorder (TIMELINE_RECORDER=file), and they are merged into the trace with\n"
    "their args, flows, categories and full thread names, on the capture's clock.\n"
    "Without a COMMAND, records the whole system until --duration or Ctrl-C.\n"
    "The COMMAND runs as the user who ran sudo (SUDO_UID) or the one --user\n"
    "names, with that user's groups, HOME, USER, LOGNAME and SHELL, in the\n"
    "current directory; run without sudo, as root.\n"
    "Needs root and a mounted tracefs.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the trace ('-': standard output);\n"
    "                      default timeline-record.txt, or .json with --format json,\n"
    "                      .perfetto-trace with --format perfetto\n"
    "  -f, --format FMT    ftrace (text, as the kernel prints it), json (Chrome\n"
    "                      JSON: markers as slices, sched as per-CPU slices) or\n"
    "                      perfetto (Perfetto's protobuf format, the same slices);\n"
    "                      default: json for a FILE ending in .json, perfetto for\n"
    "                      .perfetto-trace or .pftrace, else ftrace\n"
    "  -e, --event EVENT   also record SYSTEM/EVENT (or SYSTEM:EVENT), e.g.\n"
    "                      irq/irq_handler_entry; may be repeated\n"
    "  --buffer-kb N       kernel buffer per CPU in KiB (default 4096)\n"
    "  --duration S        stop after S seconds (fractions allowed); a COMMAND\n"
    "                      still running then gets SIGTERM\n"
    "  --clock CLOCK       boot (CLOCK_BOOTTIME, default) or mono (CLOCK_MONOTONIC)\n"
    "  --app-recorder R    file (default: the COMMAND's own events merged in) or\n"
    "                      systrace (it writes atrace markers into the capture)\n"
    "  --user USER         run the COMMAND as USER, a name or a uid ('root' keeps\n"
    "                      root); default: the user who ran sudo, else unchanged\n"
    "  --mode MODE         OUT's permission bits, octal (default 0600: private)\n"
    "  -h, --help          print this help\n"
    "\n"
    "Exit status: 0; 1 when recording or writing failed; 2 for a bad option;\n"
    "otherwise the COMMAND's own non-zero status.\n";

enum record_format {
	RECORD_FORMAT_UNSET,
	RECORD_FORMAT_FTRACE,
	RECORD_FORMAT_JSON,
	RECORD_FORMAT_PERFETTO,
};

struct record_args {
	const char *output;
	enum record_format format;
	const char *events[RECORD_MAX_EVENTS];
	char event_names[RECORD_MAX_EVENTS][128];
	size_t nevents;
	unsigned buffer_kb;
	double duration; /* 0: none */
	enum record_clock clock;
	bool app_markers; /* the command records with systrace, not the file recorder */
	const char *user; /* --user, or NULL */
	char **command;   /* NULL-terminated, or NULL */
	int help;
};

/* Set by SIGINT, SIGTERM and SIGHUP: the signal number, and whether it was
 * sent with kill(2) rather than by the terminal (which signals the whole
 * foreground process group, the command included). */
static volatile sig_atomic_t record_stop_signal;
static volatile sig_atomic_t record_stop_by_kill;
static volatile sig_atomic_t record_signal_seen; /* never cleared during a run */

static void record_on_signal(int sig, siginfo_t *info, void *context)
{
	(void)context;
	record_stop_by_kill = info && (info->si_code == SI_USER || info->si_code == SI_QUEUE);
	record_stop_signal = sig;
	record_signal_seen = 1;
}

/* ---- options -------------------------------------------------------------------- */

#define usage_error(...) tl_cli_usage_error(RECORD_PREFIX, __VA_ARGS__)

static bool is_event_word(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* SYSTEM/EVENT or SYSTEM:EVENT, stored as SYSTEM/EVENT. */
static int add_event(struct record_args *args, const char *value)
{
	size_t sep = strcspn(value, "/:");
	const char *event = value + sep + 1;
	if (value[sep] == '\0' || !is_event_word(value, sep) ||
	    !is_event_word(event, strlen(event)) || sep + strlen(event) + 2 > 128)
		return usage_error("-e: expected SYSTEM/EVENT or SYSTEM:EVENT, got '%s'", value);
	if (args->nevents == RECORD_MAX_EVENTS)
		return usage_error("-e: at most %d events", RECORD_MAX_EVENTS);
	char *name = args->event_names[args->nevents];
	snprintf(name, 128, "%.*s/%s", (int)sep, value, event);
	args->events[args->nevents++] = name;
	return 0;
}

static int parse_buffer_kb(const char *value, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long long kb = strtoull(value, &end, 10);
	if (errno || end == value || *end != '\0' || value[0] == '-' || kb == 0 ||
	    kb > RECORD_MAX_BUFFER_KB)
		return usage_error("--buffer-kb: expected a whole number from 1 to %u, got '%s'",
		                   RECORD_MAX_BUFFER_KB, value);
	*out = (unsigned)kb;
	return 0;
}

static int parse_duration(const char *value, double *out)
{
	char *end;
	errno = 0;
	double s = strtod(value, &end);
	if (errno || end == value || *end != '\0' || !isfinite(s) || s <= 0 || s > 1e9)
		return usage_error("--duration: expected a positive number of seconds, got '%s'",
		                   value);
	*out = s;
	return 0;
}

enum {
	OPT_BUFFER_KB = 256,
	OPT_DURATION,
	OPT_CLOCK,
	OPT_APP_RECORDER,
	OPT_USER,
};

/* Returns 0, or the exit status of a usage error (already reported). */
static int parse_args(int argc, char **argv, struct record_args *args)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"event", required_argument, NULL, 'e'},
	    {"buffer-kb", required_argument, NULL, OPT_BUFFER_KB},
	    {"duration", required_argument, NULL, OPT_DURATION},
	    {"clock", required_argument, NULL, OPT_CLOCK},
	    {"app-recorder", required_argument, NULL, OPT_APP_RECORDER},
	    {"user", required_argument, NULL, OPT_USER},
	    TL_CLI_MODE_LONG_OPTION,
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	optind = 1;
	opterr = 0;
	int opt, status = 0;
	/* '+': stop at the first non-option, which starts the COMMAND. */
	while (status == 0 && (opt = getopt_long(argc, argv, "+:o:f:e:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			args->output = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "ftrace") == 0)
				args->format = RECORD_FORMAT_FTRACE;
			else if (strcmp(optarg, "json") == 0)
				args->format = RECORD_FORMAT_JSON;
			else if (strcmp(optarg, "perfetto") == 0)
				args->format = RECORD_FORMAT_PERFETTO;
			else
				status = usage_error(
				    "--format: expected ftrace, json or perfetto, got '%s'",
				    optarg);
			break;
		case 'e':
			status = add_event(args, optarg);
			break;
		case OPT_BUFFER_KB:
			status = parse_buffer_kb(optarg, &args->buffer_kb);
			break;
		case OPT_DURATION:
			status = parse_duration(optarg, &args->duration);
			break;
		case OPT_CLOCK:
			if (strcmp(optarg, "boot") == 0)
				args->clock = RECORD_CLOCK_BOOT;
			else if (strcmp(optarg, "mono") == 0)
				args->clock = RECORD_CLOCK_MONO;
			else
				status =
				    usage_error("--clock: expected boot or mono, got '%s'", optarg);
			break;
		case TL_CLI_OPT_MODE:
			if (tl_cli_parse_mode(RECORD_PREFIX, optarg))
				return 2;
			break;
		case OPT_APP_RECORDER:
			if (strcmp(optarg, "file") == 0)
				args->app_markers = false;
			else if (strcmp(optarg, "systrace") == 0)
				args->app_markers = true;
			else
				status = usage_error(
				    "--app-recorder: expected file or systrace, got '%s'", optarg);
			break;
		case OPT_USER:
			args->user = optarg;
			break;
		case 'h':
			args->help = 1;
			return 0;
		default: /* ':' or '?' */
			return tl_cli_option_error(RECORD_PREFIX, opt, argv);
		}
	}
	if (status)
		return status;
	if (optind < argc)
		args->command = argv + optind;
	return 0;
}

static bool has_suffix(const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);
	return n >= k && strcasecmp(path + n - k, suffix) == 0;
}

/* The format a FILE's name asks for: json, perfetto, else ftrace. */
static enum record_format format_from_path(const char *path)
{
	if (has_suffix(path, ".json"))
		return RECORD_FORMAT_JSON;
	if (has_suffix(path, ".perfetto-trace") || has_suffix(path, ".pftrace"))
		return RECORD_FORMAT_PERFETTO;
	return RECORD_FORMAT_FTRACE;
}

/* ---- time and progress ------------------------------------------------------------ */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void format_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
	else if (bytes >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)bytes / 1024.0);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
}

/* One line, rewritten in place on the terminal. */
static void show_progress(struct record_session *session, int64_t elapsed_ns)
{
	struct record_counts c;
	record_session_counts(session, &c);
	char size[32];
	format_size(size, sizeof size, c.bytes);
	fprintf(stderr, "\r" RECORD_PREFIX ": %.1f s, %llu events, %s, %llu missed\033[K",
	        (double)elapsed_ns / 1e9, (unsigned long long)c.events, size,
	        (unsigned long long)c.missed);
	fflush(stderr);
}

/* ---- the command ------------------------------------------------------------------- */

struct record_child {
	pid_t pid; /* 0: none, or already reaped */
	int status;
	int exited;
	int signalled; /* a stop was forwarded */
};

/* Why the child did not exec, sent through the pipe. */
enum start_failure_kind {
	START_EXEC,     /* exec failed */
	START_IDENTITY, /* taking the user's identity failed: what says which call */
	START_APP_DIR,  /* the user cannot write to the command's own directory */
};

struct start_failure {
	int kind;
	int err;
	char what[256];
};

/* In the child: says what failed to the parent, and exits 127. */
static _Noreturn void start_fail(int pipe_fd, int kind, int err, const char *what)
{
	struct start_failure f = {.kind = kind, .err = err};
	snprintf(f.what, sizeof f.what, "%s", what ? what : "");
	ssize_t w = write(pipe_fd, &f, sizeof f);
	(void)w;
	_exit(127);
}

/*
 * Forks and runs command with the recorder's environment, as user (when
 * user->change), its own events going to app (NULL: it writes atrace
 * markers into session's instance instead). A failure before the exec is
 * reported through a close-on-exec pipe. Returns 0, or -errno with the
 * problem reported (the child, if any, reaped).
 */
static int start_command(char **command, const struct record_session *session,
                         const struct record_app_dir *app, const struct record_user *user,
                         struct record_child *child)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		fprintf(stderr, RECORD_PREFIX ": cannot create a pipe: %s\n", strerror(errno));
		return -errno;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		fprintf(stderr, RECORD_PREFIX ": cannot start '%s': %s\n", command[0], strerror(e));
		return -e;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		setenv("TIMELINE_TRACEFS_INSTANCE", record_session_instance(session), 1);
		if (app) {
			/* its own events, whole, one file per process */
			char file[4096 + 16];
			snprintf(file, sizeof file, "%s/app-%%p.tl", app->path);
			setenv("TIMELINE_RECORDER", "file", 1);
			setenv("TIMELINE_FILE", file, 1);
			/* a command may start many processes: each a 4 MiB pool,
			 * not the recorder's 64 MiB cap, unless the user chose */
			setenv("TIMELINE_BUFFER_KB", RECORD_APP_BUFFER_KB, 0);
		} else {
			setenv("TIMELINE_RECORDER", "systrace", 1);
		}
		if (user->change) {
			const char *step = "";
			int rc = record_user_become(user, &step);
			if (rc != 0)
				start_fail(pipefd[1], START_IDENTITY, rc < 0 ? -rc : 0, step);
			record_user_setenv(user);
			if (app && access(app->path, W_OK | X_OK) != 0)
				start_fail(pipefd[1], START_APP_DIR, errno, app->path);
			char marker[4096 + 16];
			snprintf(marker, sizeof marker, "%s/trace_marker",
			         record_session_dir(session));
			if (!app && access(marker, W_OK) != 0)
				fprintf(stderr,
				        RECORD_PREFIX
				        ": warning: %s cannot write %s (%s): the "
				        "command's markers will not be in the capture\n",
				        user->name, marker, strerror(errno));
		}
		execvp(command[0], command);
		start_fail(pipefd[1], START_EXEC, errno, NULL);
	}
	close(pipefd[1]);
	struct start_failure f;
	ssize_t n;
	do
		n = read(pipefd[0], &f, sizeof f);
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	child->pid = pid;
	if (n == (ssize_t)sizeof f) {
		f.what[sizeof f.what - 1] = '\0';
		if (f.kind == START_EXEC)
			fprintf(stderr, RECORD_PREFIX ": cannot run '%s': %s\n", command[0],
			        strerror(f.err));
		else if (f.kind == START_IDENTITY)
			fprintf(stderr, RECORD_PREFIX ": cannot run '%s' as %s: %s%s%s\n",
			        command[0], user->name, f.what, f.err ? ": " : "",
			        f.err ? strerror(f.err) : "");
		else
			fprintf(stderr,
			        RECORD_PREFIX ": cannot run '%s' as %s: %s: %s (its own events go "
			                      "there: set TMPDIR to a directory %s can reach)\n",
			        command[0], user->name, f.what, strerror(f.err), user->name);
		while (waitpid(pid, &child->status, 0) < 0 && errno == EINTR)
			;
		child->pid = 0;
		child->exited = 1;
		return f.err ? -f.err : -EPERM;
	}
	return 0;
}

/* Reaps the child if it has exited; returns 1 when it has. */
static int poll_child(struct record_child *child)
{
	if (!child->pid)
		return child->exited;
	pid_t r = waitpid(child->pid, &child->status, WNOHANG);
	if (r == child->pid) {
		child->pid = 0;
		child->exited = 1;
	}
	return child->exited;
}

/* Shell convention: the exit code, or 128 + the signal. */
static int child_exit_status(const struct record_child *child)
{
	if (WIFEXITED(child->status))
		return WEXITSTATUS(child->status);
	if (WIFSIGNALED(child->status))
		return 128 + WTERMSIG(child->status);
	return 1;
}

/*
 * Records until the command exits, the duration elapses or a signal comes.
 * A stop asked while the command runs is passed on to it (SIGTERM at the
 * end of the duration, the same signal for a signal; SIGKILL for a second
 * one) and the recording goes on until it exits. Returns 0 or -errno.
 */
static int record_loop(struct record_session *session, const struct record_args *args,
                       struct record_child *child, int64_t start_ns, int progress)
{
	char err[RECORD_ERR_MAX];
	int64_t last_progress = 0;
	for (;;) {
		int rc = record_session_wait_read(session, RECORD_POLL_MS, err, sizeof err);
		if (rc < 0) {
			fprintf(stderr, "%s" RECORD_PREFIX ": %s\n", progress ? "\n" : "", err);
			return rc;
		}
		int64_t now = now_ns();
		if (progress && now - last_progress >= RECORD_PROGRESS_NS) {
			show_progress(session, now - start_ns);
			last_progress = now;
		}
		if (args->command && poll_child(child))
			return 0;
		int sig = record_stop_signal;
		bool timed_out =
		    args->duration > 0 && (double)(now - start_ns) >= args->duration * 1e9;
		if (!args->command) {
			if (sig || timed_out)
				return 0;
			continue;
		}
		if (sig) {
			/* The first stop is passed on (unless the terminal already
			 * sent it to the command), a second one kills. */
			record_stop_signal = 0;
			if (child->signalled)
				kill(child->pid, SIGKILL);
			else if (record_stop_by_kill)
				kill(child->pid, sig);
			child->signalled = 1;
		} else if (timed_out && !child->signalled) {
			kill(child->pid, SIGTERM);
			child->signalled = 1;
		}
	}
}

/* " (cpuN count, ...": the CPUs whose count is not 0, for a summary line. */
static void print_per_cpu(const struct record_session *session,
                          uint64_t (*count_on)(const struct record_session *, int))
{
	const char *sep = " (";
	for (int i = 0; i < record_session_cpus(session); i++) {
		uint64_t n = count_on(session, i);
		if (!n)
			continue;
		fprintf(stderr, "%scpu%d %llu", sep, i, (unsigned long long)n);
		sep = ", ";
	}
}

static void print_summary(struct record_session *session, const struct record_args *args,
                          const char *path, const char *format_label, uint64_t size,
                          int64_t elapsed_ns, const struct record_child *child, bool stopped)
{
	struct record_counts c;
	record_session_counts(session, &c);
	char size_text[32];
	format_size(size_text, sizeof size_text, size);
	uint64_t markers = c.markers_other;
	for (size_t i = 0; i < RECORD_PHASE_COUNT; i++)
		markers += c.markers[i];

	fprintf(stderr, RECORD_PREFIX ": wrote %s (%s, %s)\n", path, format_label, size_text);
	fprintf(stderr, "  duration   %.2f s (trace_clock %s)%s\n", (double)elapsed_ns / 1e9,
	        args->clock == RECORD_CLOCK_MONO ? "mono" : "boot",
	        stopped ? ", stopped by a signal" : "");
	fprintf(stderr, "  events     %llu\n", (unsigned long long)c.events);
	fprintf(stderr, "  markers    %llu", (unsigned long long)markers);
	const char *sep = " (";
	for (size_t i = 0; i < RECORD_PHASE_COUNT; i++) {
		if (!c.markers[i])
			continue;
		fprintf(stderr, "%s%c %llu", sep, RECORD_MARKER_PHASES[i],
		        (unsigned long long)c.markers[i]);
		sep = ", ";
	}
	if (c.markers_other) {
		fprintf(stderr, "%sother %llu", sep, (unsigned long long)c.markers_other);
		sep = ", ";
	}
	fputs(sep[0] == ',' ? ")\n" : "\n", stderr);
	fprintf(stderr, "  sched      %llu sched_switch, %llu sched_waking\n",
	        (unsigned long long)c.sched_switch, (unsigned long long)c.sched_waking);
	if (c.unseen_switch_ins) {
		fprintf(stderr, "  unseen     %llu switch-ins",
		        (unsigned long long)c.unseen_switch_ins);
		print_per_cpu(session, record_session_unseen_switch_ins_on);
		fputs("): the kernel recorded a task leaving a CPU without the "
		      "sched_switch that put it there; those runs have no CPU slice\n",
		      stderr);
	}
	fprintf(stderr, "  others     %llu\n", (unsigned long long)c.others);
	fprintf(stderr, "  processes  %llu\n", (unsigned long long)c.processes);
	fprintf(stderr, "  missed     %llu", (unsigned long long)c.missed);
	if (c.missed) {
		print_per_cpu(session, record_session_missed_on);
		fputs("): the kernel buffer overflowed; raise --buffer-kb or record fewer "
		      "events",
		      stderr);
	}
	fputc('\n', stderr);
	if (args->command && child->exited) {
		if (WIFSIGNALED(child->status))
			fprintf(stderr, "  command    '%s' killed by signal %d\n", args->command[0],
			        WTERMSIG(child->status));
		else
			fprintf(stderr, "  command    '%s' exited with status %d\n",
			        args->command[0], child_exit_status(child));
	}
}

/* Writes the trace to fd, with the command's own events from the file
 * recorder files in app_dir (NULL: none). 0 or -errno; reported. */
static int write_trace(struct record_session *session, const char *app_dir, int clock_id, int fd,
		       const char *label, enum record_format format)
{
	char err[RECORD_ERR_MAX] = "";
	int rc = format == RECORD_FORMAT_JSON ? record_write_json(session, app_dir, fd, err, sizeof err)
	         : format == RECORD_FORMAT_PERFETTO
	             ? record_write_perfetto(session, app_dir, fd, err, sizeof err)
	             : record_write_text(session, app_dir, clock_id, fd, err, sizeof err);
	if (rc < 0)
		fprintf(stderr, RECORD_PREFIX ": %s: %s\n", label, err);
	return rc;
}

/* ---- who runs the command, and where it writes its own events --------------------- */

/* The user the command runs as (record_user.h). 0, or the exit status of
 * an error (reported): 2 for an unknown user, 1 when it cannot be taken. */
static int choose_user(const char *spec, struct record_user *user)
{
	int rc = spec ? record_user_find(user, spec) : record_user_of_sudo(user);
	if (rc == -ENOENT)
		return usage_error("--user: no user '%s' in the user database", spec);
	if (rc == -EINVAL)
		fprintf(stderr,
		        RECORD_PREFIX ": warning: SUDO_UID '%s' names no user: the command runs as "
		                      "root (--user says who)\n",
		        secure_getenv("SUDO_UID"));
	if (rc == 0 || rc == -EINVAL)
		rc = record_user_prepare(user);
	if (rc == -EPERM)
		fprintf(stderr,
		        RECORD_PREFIX ": --user %s: only root can run the command as another user "
		                      "(this is uid %u)\n",
		        spec ? spec : "", (unsigned)geteuid());
	else if (rc < 0)
		fprintf(stderr, RECORD_PREFIX ": cannot read the user database: %s\n",
		        strerror(-rc));
	if (rc < 0) {
		record_user_free(user);
		return 1;
	}
	return 0;
}

/* record_app_dir_make, its failure said on stderr. */
static int make_app_dir(struct record_app_dir *app, const struct record_user *user)
{
	char err[RECORD_ERR_MAX];
	int rc = record_app_dir_make(app, user, err, sizeof err);
	if (rc < 0)
		fprintf(stderr, RECORD_PREFIX ": %s\n", err);
	return rc;
}

static void install_signals(struct sigaction *old)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {0};
	sa.sa_sigaction = record_on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a signal ends the poll at once. */
	for (size_t i = 0; i < 3; i++)
		sigaction(signals[i], &sa, &old[i]);
}

static void restore_signals(const struct sigaction *old)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < 3; i++)
		sigaction(signals[i], &old[i], NULL);
}

int tl_cmd_record(int argc, char **argv)
{
	struct record_args args = {
	    .buffer_kb = RECORD_DEFAULT_BUFFER_KB,
	    .clock = RECORD_CLOCK_BOOT,
	};
	int status = parse_args(argc, argv, &args);
	if (status)
		return status;
	if (args.help) {
		fputs(record_usage, stdout);
		return 0;
	}
	struct record_user user = {0};
	if ((args.command || args.user) && (status = choose_user(args.user, &user)) != 0)
		return status;
	enum record_format format = args.format;
	if (format == RECORD_FORMAT_UNSET)
		format = args.output ? format_from_path(args.output) : RECORD_FORMAT_FTRACE;
	const char *path = args.output                        ? args.output
	                   : format == RECORD_FORMAT_JSON     ? "timeline-record.json"
	                   : format == RECORD_FORMAT_PERFETTO ? "timeline-record.perfetto-trace"
	                                                      : "timeline-record.txt";
	const char *label = strcmp(path, "-") == 0 ? "standard output" : path;
	const char *format_label = format == RECORD_FORMAT_JSON       ? "Chrome JSON"
	                           : format == RECORD_FORMAT_PERFETTO ? "Perfetto"
	                                                              : "ftrace text";

	struct sigaction old_signals[3];
	record_stop_signal = 0;
	record_signal_seen = 0;
	install_signals(old_signals);

	struct record_session *session = NULL;
	struct record_child child = {0};
	struct record_app_dir app = RECORD_APP_DIR_NONE; /* the command's file recorder files */
	char app_dir[64] = ""; /* app as the capture reads it, once reclaimed */
	char err[RECORD_ERR_MAX] = "";
	status = 1;

	/* Open the output first: a bad path fails before anything is set up. A
	 * file appears whole under its name or not at all. */
	bool to_stdout = strcmp(path, "-") == 0;
	struct tl_atomic_file out = {.fd = STDOUT_FILENO};
	int rc = to_stdout ? 0 : tl_atomic_file_open(&out, path);
	if (rc < 0) {
		tl_cli_output_error(RECORD_PREFIX, path, rc);
		goto out_signals;
	}

	struct record_config config = {
	    .events = args.events,
	    .nevents = args.nevents,
	    .buffer_kb = args.buffer_kb,
	    .clock = args.clock,
	};
	enum record_open_failure failure;
	if (record_session_open(&session, &config, &failure, err, sizeof err) < 0) {
		fprintf(stderr, RECORD_PREFIX ": %s\n", err);
		goto out_output;
	}
	if (record_session_start(session, err, sizeof err) < 0) {
		fprintf(stderr, RECORD_PREFIX ": %s\n", err);
		goto out_session;
	}
	int64_t start_ns = now_ns();
	if (args.command && ((!args.app_markers && make_app_dir(&app, &user) < 0) ||
	                     start_command(args.command, session, args.app_markers ? NULL : &app,
	                                   &user, &child) < 0)) {
		status = 127;
		goto out_session;
	}

	int progress = isatty(STDERR_FILENO);
	if (!record_stop_signal || args.command)
		rc = record_loop(session, &args, &child, start_ns, progress);
	bool stopped = record_signal_seen;
	int64_t elapsed_ns = now_ns() - start_ns;
	if (progress)
		fputs("\r\033[K", stderr);
	if (rc < 0)
		goto out_child;
	if (app.fd >= 0 &&
	    record_app_dir_reclaim(&app, app_dir, sizeof app_dir, err, sizeof err) < 0) {
		fprintf(stderr, RECORD_PREFIX ": %s\n", err);
		goto out_child;
	}

	if (record_session_stop(session, err, sizeof err) < 0) {
		fprintf(stderr, RECORD_PREFIX ": %s\n", err);
		goto out_child;
	}
	if (write_trace(session, app_dir[0] ? app_dir : NULL,
	                args.clock == RECORD_CLOCK_MONO ? 1 : 7, out.fd, label, format) < 0)
		goto out_child;
	struct stat st;
	uint64_t size = !to_stdout && fstat(out.fd, &st) == 0 && S_ISREG(st.st_mode)
	                    ? (uint64_t)st.st_size
	                    : 0;
	if (!to_stdout && (rc = tl_atomic_file_commit(&out)) < 0) {
		fprintf(stderr, RECORD_PREFIX ": %s: write failed: %s\n", label, strerror(-rc));
		goto out_child;
	}
	print_summary(session, &args, label, format_label, size, elapsed_ns, &child, stopped);
	status = 0;
	if (args.command && child.exited && child_exit_status(&child) != 0)
		status = child_exit_status(&child);

out_child:
	/* On an error while the command still runs: stop it, never leave it behind
	 * writing into a removed instance. */
	if (child.pid) {
		if (status == 1 || !child.exited) {
			kill(child.pid, SIGTERM);
			while (waitpid(child.pid, &child.status, 0) < 0 && errno == EINTR)
				;
		}
	}
out_session:
	record_session_close(session);
	record_app_dir_remove(&app);
out_output:
	if (!to_stdout)
		tl_atomic_file_abort(&out); /* no half-written trace left behind */
out_signals:
	restore_signals(old_signals);
	record_user_free(&user);
	return status;
}
