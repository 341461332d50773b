/*
 * The systrace recorder when writing fails: a missing instance, a marker
 * descriptor closed under it, tracing off (with and without the gate),
 * markers off, and signals interrupting the writer. Real tracefs; needs
 * root (skips with the reason otherwise).
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "systrace_fixture.h"

#include <timeline/trace_event.h>

static tl_category *cat;
static int log_lines;
static char log_first[512], log_last[512];

static void capture_log(tl_log_level level, const char *message, void *user)
{
	(void)level;
	(void)user;
	if (log_lines++ == 0)
		snprintf(log_first, sizeof log_first, "%s", message);
	snprintf(log_last, sizeof log_last, "%s", message);
}

static int group_setup(void **state)
{
	(void)state;
	tl_test_clear_environment();
	fixture_create("faults");
	cat = tl_category_get("faults");
	return 0;
}

/* Every test leaves the instance as it found it. */
static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	fixture_write("tracing_on", "1");
	fixture_write("options/markers", "1");
	return 0;
}

static int start(bool gate)
{
	fixture_clear();
	log_lines = 0;
	log_last[0] = '\0';
	tl_options opts = {.struct_size = sizeof opts,
	                   .recorder = TL_RECORDER_SYSTRACE,
	                   .log = capture_log,
	                   .systrace_no_gate = !gate};
	return tl_init(&opts);
}

static tl_stats stats_now(void)
{
	tl_stats st = {.struct_size = sizeof st};
	assert_int_equal(tl_stats_get(&st), 0);
	return st;
}

static size_t markers_now(void)
{
	return fixture_markers(NULL, 0);
}

static void emit_instants(int n)
{
	for (int i = 0; i < n; i++)
		TL_TRACE_EVENT_INSTANT0("faults", "tick", TL_SCOPE_THREAD);
}

static void test_missing_instance_fails_init_and_the_program_goes_on(void **state)
{
	(void)state;
	char missing[96];
	snprintf(missing, sizeof missing, "timeline_missing_%d", (int)getpid());
	setenv("TIMELINE_TRACEFS_INSTANCE", missing, 1);
	int rc = start(true);
	setenv("TIMELINE_TRACEFS_INSTANCE", fixture.name, 1);
	assert_int_equal(rc, -ENOENT);
	assert_false(tl_is_running());
	assert_true(log_lines >= 1);
	assert_non_null(strstr(log_first, missing)); /* the path tells what is missing */
	emit_instants(3);                            /* ignored: no session */
	assert_int_equal(start(true), 0);
	emit_instants(1);
	assert_int_equal(markers_now(), 1);
}

static void test_instance_name_with_a_slash_is_rejected(void **state)
{
	(void)state;
	setenv("TIMELINE_TRACEFS_INSTANCE", "../escape", 1);
	int rc = start(true);
	setenv("TIMELINE_TRACEFS_INSTANCE", fixture.name, 1);
	assert_int_equal(rc, -EINVAL);
	assert_false(tl_is_running());
}

/* The recorder's trace_marker descriptor, found through /proc/self/fd. */
static int marker_fd(void)
{
	char suffix[128];
	snprintf(suffix, sizeof suffix, "/instances/%s/trace_marker", fixture.name);
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int found = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char link[300], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		size_t len = strlen(suffix);
		if ((size_t)n >= len && strcmp(target + n - len, suffix) == 0)
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static void test_closed_marker_fd_turns_the_recorder_off(void **state)
{
	(void)state;
	assert_int_equal(start(true), 0);
	emit_instants(1);
	int fd = marker_fd();
	assert_true(fd >= 0);
	close(fd);
	emit_instants(10);
	tl_stats st = stats_now();
	assert_int_equal(st.events_written, 1);
	assert_int_equal(st.events_dropped, 10);
	assert_int_equal(st.write_errors, 1); /* then off: no more writes */
	assert_int_equal(log_lines, 1);
	assert_non_null(strstr(log_last, "recorder off"));
	assert_true(tl_is_running()); /* the program and the session go on */
	/* the number now belongs to another file: shutdown must not close it */
	int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(other >= 0);
	if (other != fd) {
		assert_int_equal(dup2(other, fd), fd);
		close(other);
	}
	tl_shutdown();
	assert_int_not_equal(fcntl(fd, F_GETFD), -1);
	close(fd);
	assert_int_equal(markers_now(), 1);
}

static void test_gate_skips_events_while_tracing_is_off(void **state)
{
	(void)state;
	assert_int_equal(fixture_write("tracing_on", "0"), 0);
	assert_int_equal(start(true), 0);
	emit_instants(100);
	tl_stats st = stats_now();
	assert_int_equal(st.events_tracing_off, 100);
	assert_int_equal(st.write_errors, 0);
	assert_int_equal(st.events_written, 0);
	/* the gate reads tracing_on again within 100 ms */
	assert_int_equal(fixture_write("tracing_on", "1"), 0);
	struct timespec pause = {0, 150 * 1000 * 1000};
	nanosleep(&pause, NULL);
	emit_instants(1);
	st = stats_now();
	assert_int_equal(st.events_written, 1);
	assert_int_equal(markers_now(), 1);
}

/* Tracing off at start: no clock sync can be written; when the gate finds
 * tracing on again, the clock syncs go first, so a capture that started
 * after tl_init has them. */
static void test_gate_writes_the_clock_syncs_when_tracing_turns_on(void **state)
{
	(void)state;
	assert_int_equal(fixture_write("tracing_on", "0"), 0);
	assert_int_equal(start(true), 0);
	emit_instants(1);
	assert_int_equal(fixture_clock_syncs(NULL, 0), 0);
	assert_int_equal(fixture_write("tracing_on", "1"), 0);
	struct timespec pause = {0, 150 * 1000 * 1000};
	nanosleep(&pause, NULL);
	emit_instants(1);
	struct fixture_marker syncs[4];
	assert_int_equal(fixture_clock_syncs(syncs, 4), 2);
	assert_true(strstr(syncs[0].payload, "realtime_ts=") != NULL);
	assert_true(strstr(syncs[1].payload, "parent_ts=") != NULL);
	assert_int_equal(markers_now(), 1);
	tl_stats st = stats_now();
	assert_int_equal(st.events_written, 1);
	assert_int_equal(st.write_errors, 0);
}

static void test_without_gate_writes_while_tracing_is_off_are_counted(void **state)
{
	(void)state;
	assert_int_equal(fixture_write("tracing_on", "0"), 0);
	assert_int_equal(start(false), 0);
	emit_instants(10);
	tl_stats st = stats_now();
	assert_int_equal(st.write_errors, 10);
	assert_int_equal(st.events_dropped, 10);
	assert_int_equal(st.events_tracing_off, 0);
	assert_int_equal(log_lines, 0); /* not fatal */
	assert_int_equal(fixture_write("tracing_on", "1"), 0);
	emit_instants(2);
	st = stats_now();
	assert_int_equal(st.events_written, 2);
	assert_int_equal(markers_now(), 2);
}

static void test_markers_option_off_gives_counted_einval(void **state)
{
	(void)state;
	assert_int_equal(fixture_write("options/markers", "0"), 0);
	assert_int_equal(start(true), 0);
	emit_instants(5);
	tl_stats st = stats_now();
	assert_int_equal(st.write_errors, 5);
	assert_int_equal(st.events_dropped, 5);
	assert_int_equal(log_lines, 0);
	assert_int_equal(fixture_write("options/markers", "1"), 0);
	emit_instants(1);
	assert_int_equal(stats_now().events_written, 1);
}

/* ---- EINTR storm -------------------------------------------------------------- */

#define STORM_EVENTS 20000

static atomic_int storm_signals;
static atomic_int storm_done;

static void storm_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&storm_signals, 1);
}

static void *storm_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < STORM_EVENTS; i++)
		tl_emit_counter(cat, "storm", i);
	atomic_store(&storm_done, 1);
	return NULL;
}

static void test_signals_interrupting_the_writer_lose_no_event(void **state)
{
	(void)state;
	/* room for every line in the instance's buffer */
	assert_int_equal(fixture_write("buffer_size_kb", "8192"), 0);
	struct sigaction sa = {0}, old;
	sa.sa_handler = storm_handler; /* no SA_RESTART: interrupted calls fail with EINTR */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	assert_int_equal(start(true), 0);

	atomic_store(&storm_signals, 0);
	atomic_store(&storm_done, 0);
	pthread_t writer;
	assert_int_equal(pthread_create(&writer, NULL, storm_writer, NULL), 0);
	while (!atomic_load(&storm_done))
		pthread_kill(writer, SIGUSR1);
	pthread_join(writer, NULL);
	tl_stats st = stats_now();
	tl_shutdown();
	sigaction(SIGUSR1, &old, NULL);

	assert_true(atomic_load(&storm_signals) > 0);
	assert_int_equal(st.events_written, STORM_EVENTS);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.write_errors, 0);

	static struct fixture_marker lines[STORM_EVENTS];
	size_t n = fixture_markers(lines, STORM_EVENTS);
	assert_int_equal(n, STORM_EVENTS);
	char prefix[32];
	int len = snprintf(prefix, sizeof prefix, "C|%d|storm|", (int)getpid());
	for (size_t i = 0; i < n; i++) {
		assert_memory_equal(lines[i].payload, prefix, (size_t)len);
		assert_int_equal(atoi(lines[i].payload + len), (int)i);
	}
	printf("storm: %d signals during %d events\n", atomic_load(&storm_signals), STORM_EVENTS);
	fixture_write("buffer_size_kb", "1408");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_missing_instance_fails_init_and_the_program_goes_on,
	                              teardown),
	    cmocka_unit_test_teardown(test_instance_name_with_a_slash_is_rejected, teardown),
	    cmocka_unit_test_teardown(test_closed_marker_fd_turns_the_recorder_off, teardown),
	    cmocka_unit_test_teardown(test_gate_skips_events_while_tracing_is_off, teardown),
	    cmocka_unit_test_teardown(test_gate_writes_the_clock_syncs_when_tracing_turns_on,
	                              teardown),
	    cmocka_unit_test_teardown(test_without_gate_writes_while_tracing_is_off_are_counted,
	                              teardown),
	    cmocka_unit_test_teardown(test_markers_option_off_gives_counted_einval, teardown),
	    cmocka_unit_test_teardown(test_signals_interrupting_the_writer_lose_no_event, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, fixture_group_teardown);
}
