#include "support/test_support.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <timeline/timeline.h>

#include "recorder/clock.h"
#include "recorder/export/trace_model.h"
#include "recorder/snapshot_writer.h"
#include "tools/readers/trace_import.h"

static const char *tmp_dir(void)
{
	const char *dir = getenv("TL_TEST_TMP");
	if (!dir || !*dir)
		dir = "/tmp";
	mkdir(dir, 0755);
	return dir;
}

const char *tl_test_path(const char *stem, const char *ext)
{
	static char paths[16][512];
	static unsigned next;
	char *p = paths[next++ % 16];
	snprintf(p, sizeof paths[0], "%s/%s-%d-%u%s", tmp_dir(), stem, (int)getpid(), next,
		 ext ? ext : "");
	unlink(p);
	return p;
}

char *tl_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int tl_test_run(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	fflush(stdout);
	int status = system(cmd);
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int tl_test_run_output(char **out, char **err, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char out_path[4096], err_path[4096];
	snprintf(out_path, sizeof out_path, "%s", tl_test_path("run-out", ".txt"));
	snprintf(err_path, sizeof err_path, "%s", tl_test_path("run-err", ".txt"));
	int rc = tl_test_run("%s > %s 2> %s", cmd, out_path, err_path);
	if (out) {
		*out = tl_test_read_file(out_path, NULL);
		assert_non_null(*out);
	}
	if (err) {
		*err = tl_test_read_file(err_path, NULL);
		assert_non_null(*err);
	}
	return rc;
}

int tl_test_run_cli(char **out, char **err, const char *fmt, ...)
{
	const char *cli = tl_test_cli();
	assert_non_null(cli);
	char args[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return tl_test_run_output(out, err, "%s %s", cli, args);
}

const char *tl_test_cli(void)
{
	const char *cli = getenv("TIMELINE_CLI");
	return cli && *cli ? cli : NULL;
}

const char *tl_test_emulator(void)
{
	const char *emulator = getenv("TL_TEST_EMULATOR");
	return emulator && *emulator ? emulator : NULL;
}

size_t tl_test_count(const char *haystack, const char *needle)
{
	size_t n = 0, len = strlen(needle);
	for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += len)
		n++;
	return n;
}

void tl_test_init(int recorder, size_t buffer_bytes)
{
	tl_options o = {0};
	o.struct_size = sizeof o;
	o.recorder = (tl_recorder_kind)recorder;
	o.buffer_bytes = buffer_bytes;
	assert_int_equal(tl_init(&o), 0);
}

void tl_test_snapshot_model(struct tl_model *model)
{
	unsigned char *data = NULL;
	size_t len = 0;
	assert_int_equal(tl_snapshot_to_memory(&data, &len), 0);
	char err[256] = "";
	int rc = tl_model_read_binary(data, len, model, err, sizeof err);
	if (rc)
		print_error("reading the snapshot back: %s\n", err);
	assert_int_equal(rc, 0);
	free(data);
}

size_t tl_test_count_events(const struct tl_model *model, char phase, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < model->nevents; i++) {
		const tl_model_event *e = &model->events[i];
		if (e->phase == phase && (!name || (e->name && strcmp(e->name, name) == 0)))
			n++;
	}
	return n;
}

/* The clock-path variables ctest sets for a suite's .vdso and .tsc entries:
 * tl_test_clear_environment keeps them. */
static const char *const clock_path_variables[] = {"TIMELINE_NO_TSC", "TIMELINE_FORCE_TSC"};
#define CLOCK_PATH_VARIABLES (sizeof clock_path_variables / sizeof clock_path_variables[0])

void tl_test_clear_environment(void)
{
	static int saved;
	static char value[CLOCK_PATH_VARIABLES][16];
	static int set[CLOCK_PATH_VARIABLES];
	if (!saved) {
		tl_test_require_clock_path();
		for (size_t i = 0; i < CLOCK_PATH_VARIABLES; i++) {
			const char *v = getenv(clock_path_variables[i]);
			set[i] = v != NULL;
			snprintf(value[i], sizeof value[i], "%s", v ? v : "");
		}
		saved = 1;
	}
	unsetenv("TIMELINE_RECORDER");
	unsetenv("TIMELINE_BUFFER_KB");
	unsetenv("TIMELINE_CATEGORIES");
	unsetenv("TIMELINE_FILE_MODE");
	for (size_t i = 0; i < CLOCK_PATH_VARIABLES; i++) {
		if (set[i])
			setenv(clock_path_variables[i], value[i], 1);
		else
			unsetenv(clock_path_variables[i]);
	}
}

const char *tl_test_clocksource(void)
{
	static char name[64];
	char *text = tl_test_read_file(
	    "/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL);
	snprintf(name, sizeof name, "%s", text && *text ? text : "unknown");
	free(text);
	name[strcspn(name, "\n")] = '\0';
	return name;
}

int tl_test_no_tsc_forced(void)
{
	const char *v = getenv("TIMELINE_NO_TSC");
	return v && strcmp(v, "1") == 0;
}

int tl_test_tsc_forced(void)
{
	const char *v = getenv("TIMELINE_FORCE_TSC");
	return v && strcmp(v, "1") == 0 && !tl_test_no_tsc_forced();
}

int tl_test_tsc_expected(void)
{
	if (tl_test_no_tsc_forced())
		return 0;
	return tl_test_tsc_forced() ? tl_clock_tsc_invariant() : tl_clock_tsc_usable();
}

const char *tl_test_clock_path(void)
{
	static char path[128];
	if (tl_test_no_tsc_forced())
		snprintf(path, sizeof path, "vDSO path (TIMELINE_NO_TSC=1)");
	else if (tl_clock_tsc_usable())
		snprintf(path, sizeof path, "TSC path (clocksource %s)", tl_test_clocksource());
	else if (tl_test_tsc_forced() && tl_clock_tsc_invariant())
		snprintf(path, sizeof path, "TSC path (TIMELINE_FORCE_TSC=1, clocksource %s)",
		         tl_test_clocksource());
	else if (!TL_HAVE_TSC)
		snprintf(path, sizeof path,
		         "vDSO path (clocksource %s, no TSC on this architecture)",
		         tl_test_clocksource());
	else if (!tl_clock_tsc_invariant())
		snprintf(path, sizeof path, "vDSO path (clocksource %s, the TSC is not invariant)",
		         tl_test_clocksource());
	else
		snprintf(path, sizeof path, "vDSO path (clocksource %s)", tl_test_clocksource());
	return path;
}

void tl_test_require_clock_path(void)
{
	if (!tl_test_tsc_forced() || tl_test_tsc_expected())
		return;
	printf("skipped: TIMELINE_FORCE_TSC=1 asks for the TSC path, which sessions here cannot "
	       "take: %s\n",
	       tl_test_clock_path());
	fflush(stdout);
	exit(TL_TEST_SKIP_EXIT);
}

void tl_test_skip_unless_tsc(void)
{
	if (tl_test_tsc_expected())
		return;
	print_message("skipped: about the TSC path; sessions here take the %s\n",
	              tl_test_clock_path());
	skip();
}

const char *tl_test_dir_entries(const char *dir)
{
	static char names[4096];
	names[0] = '\0';
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		strncat(names, names[0] ? " " : "", sizeof names - strlen(names) - 1);
		strncat(names, e->d_name, sizeof names - strlen(names) - 1);
	}
	closedir(d);
	return names;
}

/* ---- traces read back ------------------------------------------------------ */

int tl_test_have_protoc(void)
{
	static int have = -1;
	if (have < 0)
		have = tl_test_run("command -v protoc >/dev/null 2>&1") == 0;
	return have;
}

char *tl_test_perfetto_decode(const char *path)
{
	if (!tl_test_have_protoc()) {
		print_message("protoc not found (Debian: protobuf-compiler, installed by "
		              "tools/scripts/install-deps.sh): the schema check is skipped\n");
		skip();
	}
	char out[512], err[512];
	snprintf(out, sizeof out, "%s", tl_test_path("protoc", ".txt"));
	snprintf(err, sizeof err, "%s", tl_test_path("protoc", ".err"));
	int rc =
	    tl_test_run("protoc -I '%s/tests/fixtures/perfetto' --decode=perfetto.protos.Trace "
	                "perfetto_trace.proto <'%s' >'%s' 2>'%s'",
	                TL_SOURCE_DIR, path, out, err);
	if (rc != 0) {
		tl_test_run("cat '%s'", err);
		fail_msg("protoc could not decode %s (status %d)", path, rc);
	}
	char *text = tl_test_read_file(out, NULL);
	assert_non_null(text);
	for (const char *line = text; *line;) {
		const char *p = line;
		while (*p == ' ')
			p++;
		if (*p >= '0' && *p <= '9') {
			const char *nl = strchr(p, '\n');
			fail_msg("%s: a field the schema does not know: %.*s", path,
			         (int)(nl ? nl - p : (long)strlen(p)), p);
		}
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	unlink(out);
	unlink(err);
	return text;
}

char *tl_test_slices(const char *path)
{
	tl_import imp;
	tl_read_error err = {0};
	int rc = tl_import_read_file(path, &imp, NULL, &err);
	if (rc != 0)
		fail_msg("%s: cannot read it back: %s (%d)", path, err.message, rc);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	tl_import_print(&imp, ~0u & ~(unsigned)TL_PRINT_STAT, f);
	assert_int_equal(fclose(f), 0);
	tl_import_free(&imp);
	return text;
}

int tl_test_thread_timer_try_start(tl_test_thread_timer *t, int signo, long first_ns,
                                   long interval_ns)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
#ifdef sigev_notify_thread_id
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
	if (timer_create(CLOCK_MONOTONIC, &sev, &t->timer) != 0)
		return -errno;
	struct itimerspec every = {{interval_ns / 1000000000, interval_ns % 1000000000},
	                           {first_ns / 1000000000, first_ns % 1000000000}};
	if (timer_settime(t->timer, 0, &every, NULL) != 0) {
		int e = errno;
		timer_delete(t->timer);
		return -e;
	}
	t->armed = 1;
	return 0;
}

void tl_test_thread_timer_start(tl_test_thread_timer *t, int signo, long first_ns, long interval_ns)
{
	assert_int_equal(tl_test_thread_timer_try_start(t, signo, first_ns, interval_ns), 0);
}

void tl_test_thread_timer_stop(tl_test_thread_timer *t)
{
	if (!t->armed)
		return;
	struct itimerspec off = {{0, 0}, {0, 0}};
	timer_settime(t->timer, 0, &off, NULL);
	timer_delete(t->timer);
	t->armed = 0;
}

/* Whether this process has CAP_SYS_ADMIN (mount(2) needs it). */
static int may_mount(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long caps = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, "CapEff:", 7) == 0)
			caps = strtoull(line + 7, NULL, 16);
	}
	if (f)
		fclose(f);
	return (caps >> 21) & 1; /* CAP_SYS_ADMIN */
}

static char mounted_disk[4096]; /* "" when none */

const char *tl_test_mount_disk(const char *stem, size_t bytes)
{
	snprintf(mounted_disk, sizeof mounted_disk, "%s", tl_test_path(stem, ""));
	assert_int_equal(mkdir(mounted_disk, 0755), 0);
	char options[64];
	snprintf(options, sizeof options, "size=%zu,mode=0755",
	         bytes); /* not 1777, a tmpfs's own */
	if (mount("tmpfs", mounted_disk, "tmpfs", 0, options) == 0)
		return mounted_disk;
	int e = errno;
	rmdir(mounted_disk);
	mounted_disk[0] = '\0';
	if (may_mount())
		fail_msg("cannot mount a %zu-byte tmpfs, with CAP_SYS_ADMIN: %s", bytes,
		         strerror(e));
	print_message("skipped: cannot mount a %zu-byte tmpfs to fill: %s (mounting needs "
	              "CAP_SYS_ADMIN, which this process does not have)\n",
	              bytes, strerror(e));
	skip();
	return NULL;
}

void tl_test_unmount_disk(void)
{
	if (!mounted_disk[0])
		return;
	umount2(mounted_disk, MNT_DETACH);
	rmdir(mounted_disk);
	mounted_disk[0] = '\0';
}
