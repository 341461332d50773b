/*
 * The looper's watchdog with short thresholds: lag and ANR reports, once
 * per stall, none for idle or quick loops, the ANR dump and report files,
 * the dump signal while threads write, and fork.
 */
#include "support/test_support.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <timeline/looper.h>
#include <timeline/timeline.h>

#include "recorder/export/trace_model.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0)
		;
}

struct reports {
	pthread_mutex_t lock;
	int lag, anr, doubtful;
	char message[256];
	char dump_path[4096];
	char report_path[4096];
	char json[65536];
	int64_t elapsed_ns;
	char state;
	size_t history_count;
};

static void on_report(const tl_looper_report *r, void *user)
{
	struct reports *s = user;
	pthread_mutex_lock(&s->lock);
	if (r->kind == TL_LOOPER_REPORT_LAG)
		s->lag++;
	else if (r->kind == TL_LOOPER_REPORT_ANR)
		s->anr++;
	s->doubtful += r->doubtful;
	snprintf(s->message, sizeof s->message, "%s", r->message);
	snprintf(s->dump_path, sizeof s->dump_path, "%s", r->dump_path ? r->dump_path : "");
	snprintf(s->report_path, sizeof s->report_path, "%s", r->report_path ? r->report_path : "");
	snprintf(s->json, sizeof s->json, "%s", r->json);
	s->elapsed_ns = r->elapsed_ns;
	s->state = r->thread_state;
	s->history_count = r->history_count;
	pthread_mutex_unlock(&s->lock);
}

static void counts(struct reports *s, int *lag, int *anr)
{
	pthread_mutex_lock(&s->lock);
	*lag = s->lag;
	*anr = s->anr;
	pthread_mutex_unlock(&s->lock);
}

static tl_looper *watched_loop(struct reports *s, int lag_ms, int anr_ms, const char *dir)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.name = "test-loop";
	o.lag_threshold_ms = lag_ms;
	o.anr_timeout_ms = anr_ms;
	o.slow_dispatch_ms = 0;
	o.dump_directory = dir;
	o.on_report = on_report;
	o.user = s;
	tl_looper *l = tl_looper_create(&o);
	assert_non_null(l);
	return l;
}

static const char *temp_dir(void)
{
	static char dir[4096];
	snprintf(dir, sizeof dir, "%s", tl_test_path("looper-dumps", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	return dir;
}

static void test_lag_reported_once(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct reports s;
	tl_looper *l = watched_loop(&s, 100, 400, NULL);
	tl_looper_dispatch_begin(l, "lags");
	sleep_ms(250);
	tl_looper_dispatch_end(l);
	int lag, anr;
	counts(&s, &lag, &anr);
	assert_int_equal(lag, 1);
	assert_int_equal(anr, 0);
	assert_string_equal(s.message, "lags");
	assert_true(s.elapsed_ns >= 100000000);
	assert_non_null(strstr(s.json, "\"kind\":\"lag\""));
	assert_non_null(strstr(s.json, "\"loop\":\"test-loop\""));
	assert_true(s.state == 'S' || s.state == 'R');
	tl_looper_destroy(l);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'i', "looper.lag"), 1);
	tl_model_free(&m);
	tl_shutdown();
}

static void test_anr_reported_once_per_stall_with_dump(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const char *dir = temp_dir();
	struct reports s;
	tl_looper *l = watched_loop(&s, 0, 200, dir);
	for (int i = 0; i < 20; i++) {
		tl_looper_dispatch_begin(l, "before");
		tl_looper_dispatch_end(l);
	}
	tl_looper_dispatch_begin(l, "stuck dispatch");
	sleep_ms(700); /* three and a half timeouts: still one report */
	tl_looper_dispatch_end(l);
	int lag, anr;
	counts(&s, &lag, &anr);
	assert_int_equal(anr, 1);
	assert_int_equal(lag, 0);
	assert_int_equal(s.doubtful, 0);
	assert_string_equal(s.message, "stuck dispatch");
	assert_int_equal(s.history_count, 20);
	assert_non_null(strstr(s.json, "\"verdict\":\"anr\""));
	assert_non_null(strstr(s.json, "\"name\":\"before\""));

	/* the report file and the dump, which converts to a trace holding the
	 * stuck dispatch and the ANR instant */
	assert_true(s.dump_path[0] != '\0');
	assert_non_null(strstr(s.dump_path, ".tlsnap"));
	char *report = tl_test_read_file(s.report_path, NULL);
	assert_non_null(report);
	assert_non_null(strstr(report, "\"message\":\"stuck dispatch\""));
	free(report);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary_file(s.dump_path, &m, err, sizeof err), 0);
	const char *json_path = tl_test_path("looper-anr", ".json");
	FILE *f = fopen(json_path, "w");
	assert_non_null(f);
	assert_int_equal(tl_export_json(&m, fileno(f), NULL), 0);
	fclose(f);
	tl_model_free(&m);
	char *json = tl_test_read_file(json_path, NULL);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"name\":\"stuck dispatch\""));
	assert_non_null(strstr(json, "\"name\":\"looper.anr\""));
	free(json);

	/* a second stall is a second report */
	tl_looper_dispatch_begin(l, "stuck again");
	sleep_ms(300);
	tl_looper_dispatch_end(l);
	counts(&s, &lag, &anr);
	assert_int_equal(anr, 2);
	tl_looper_stats st = {.struct_size = sizeof st};
	tl_looper_stats_get(l, &st);
	assert_int_equal(st.anr_reports, 2);
	tl_looper_destroy(l);
	tl_shutdown();
}

static void test_anr_json_dump_format(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const char *dir = temp_dir();
	struct reports s;
	memset(&s, 0, sizeof s);
	pthread_mutex_init(&s.lock, NULL);
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.lag_threshold_ms = 0;
	o.anr_timeout_ms = 100;
	o.dump_directory = dir;
	o.dump_format = TL_LOOPER_DUMP_JSON;
	o.on_report = on_report;
	o.user = &s;
	tl_looper *l = tl_looper_create(&o);
	tl_looper_dispatch_begin(l, "json stall");
	sleep_ms(250);
	tl_looper_dispatch_end(l);
	tl_looper_destroy(l);
	char *json = tl_test_read_file(s.dump_path, NULL);
	assert_non_null(json);
	assert_non_null(strstr(json, "json stall"));
	free(json);
	tl_shutdown();
}

static void test_idle_and_quick_loops_are_not_reported(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct reports s;
	tl_looper *l = watched_loop(&s, 50, 100, NULL);
	tl_looper_idle_begin(l);
	sleep_ms(300);
	tl_looper_idle_end(l);
	for (int i = 0; i < 100000; i++) {
		tl_looper_dispatch_begin(l, "quick");
		tl_looper_dispatch_end(l);
	}
	sleep_ms(150); /* outside any dispatch */
	int lag, anr;
	counts(&s, &lag, &anr);
	assert_int_equal(lag, 0);
	assert_int_equal(anr, 0);
	tl_looper_stats st = {.struct_size = sizeof st};
	tl_looper_stats_get(l, &st);
	assert_int_equal(st.dispatches, 100000);
	tl_looper_destroy(l);
	tl_shutdown();
}

/* ---- several loops on their own threads -------------------------------------- */

struct loop_thread {
	tl_looper *loop;
	int stall_ms;
	const char *name;
};

static void *run_loop(void *arg)
{
	struct loop_thread *t = arg;
	for (int i = 0; i < 1000; i++) {
		tl_looper_dispatch_begin(t->loop, "tick");
		tl_looper_dispatch_end(t->loop);
	}
	tl_looper_dispatch_begin(t->loop, t->name);
	sleep_ms(t->stall_ms);
	tl_looper_dispatch_end(t->loop);
	return NULL;
}

static void test_one_watchdog_for_many_loops(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct reports s[3];
	struct loop_thread t[3] = {
	    {watched_loop(&s[0], 0, 150, NULL), 400, "slow-a"},
	    {watched_loop(&s[1], 0, 150, NULL), 10, "fast-b"},
	    {watched_loop(&s[2], 0, 150, NULL), 400, "slow-c"},
	};
	pthread_t id[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&id[i], NULL, run_loop, &t[i]), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(id[i], NULL);
	int lag, anr;
	counts(&s[0], &lag, &anr);
	assert_int_equal(anr, 1);
	counts(&s[1], &lag, &anr);
	assert_int_equal(anr, 0);
	counts(&s[2], &lag, &anr);
	assert_int_equal(anr, 1);
	assert_string_equal(s[2].message, "slow-c");
	for (int i = 0; i < 3; i++)
		tl_looper_destroy(t[i].loop);
	tl_shutdown();
}

/* ---- the dump signal ------------------------------------------------------------- */

static atomic_int writers_stop;

static void *writer(void *arg)
{
	(void)arg;
	const tl_category *cat = tl_category_get("writer");
	while (!atomic_load(&writers_stop)) {
		tl_emit_begin(cat, "write");
		tl_emit_end(cat);
	}
	return NULL;
}

static atomic_int chained;

static void previous_handler(int signo)
{
	(void)signo;
	atomic_fetch_add(&chained, 1);
}

static void test_dump_signal_while_threads_write(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const char *dir = temp_dir();
	signal(SIGUSR2, previous_handler);
	assert_int_equal(tl_set_dump_directory(dir), 0);
	assert_int_equal(tl_install_dump_signal(SIGUSR2), 0);
	assert_int_equal(tl_install_dump_signal(SIGUSR2), -EBUSY);
	atomic_store(&writers_stop, 0);
	pthread_t id[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&id[i], NULL, writer, NULL), 0);
	tl_dump_signal_stats before = {.struct_size = sizeof before};
	assert_int_equal(tl_dump_signal_stats_get(&before), 0);
	sleep_ms(20); /* the writers are writing */
	for (int i = 0; i < 3; i++) {
		raise(SIGUSR2);
		sleep_ms(20);
	}
	atomic_store(&writers_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(id[i], NULL);
	tl_dump_signal_stats after = {.struct_size = sizeof after};
	assert_int_equal(tl_dump_signal_stats_get(&after), 0);
	assert_int_equal(after.dumps - before.dumps, 3);
	assert_int_equal(after.failures, before.failures);
	assert_int_equal(atomic_load(&chained), 3);
	char path[4096 + 64];
	int written = snprintf(path, sizeof path, "%s/dump-%d-3.tlsnap", dir, (int)getpid());
	assert_true(written > 0 && (size_t)written < sizeof path);
	tl_model m;
	char err[256];
	assert_int_equal(tl_model_read_binary_file(path, &m, err, sizeof err), 0);
	assert_true(m.nevents > 0);
	tl_model_free(&m);
	assert_int_equal(tl_uninstall_dump_signal(), 0);
	assert_int_equal(tl_uninstall_dump_signal(), -ENOENT);
	signal(SIGUSR2, SIG_DFL);
	assert_int_equal(tl_set_dump_directory(""), -EINVAL);
	tl_shutdown();
}

/* ---- fork --------------------------------------------------------------------------- */

#if defined(__SANITIZE_THREAD__)
#define TL_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TL_UNDER_TSAN 1
#endif
#endif

static void test_dump_signal_stats_refuse_a_short_struct(void **state)
{
	(void)state;
	assert_int_equal(tl_dump_signal_stats_get(NULL), -EINVAL);
	tl_dump_signal_stats short_one = {.struct_size = sizeof(size_t)};
	assert_int_equal(tl_dump_signal_stats_get(&short_one), -EINVAL);
	tl_dump_signal_stats whole = {.struct_size = sizeof whole, .dumps = UINT64_MAX};
	assert_int_equal(tl_dump_signal_stats_get(&whole), 0);
	assert_true(whole.dumps != UINT64_MAX);
}

static void test_watchdog_runs_again_in_fork_child(void **state)
{
	(void)state;
#ifdef TL_UNDER_TSAN
	/* ThreadSanitizer cannot start threads in the child of a threaded fork */
	print_message("skipped under ThreadSanitizer: no threads in the child of a threaded fork\n");
	skip();
#endif
	if (tl_test_emulator()) {
		/* qemu-user 7.2 aborts in qemu_plugin_vcpu_init_hook */
		print_message("skipped under %s: it cannot start threads in the child of a "
		              "threaded fork\n",
		              tl_test_emulator());
		skip();
	}
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	struct reports s;
	tl_looper *l = watched_loop(&s, 0, 150, NULL);
	/* a loop stalled on another thread must not be reported in the child */
	struct reports other_s;
	struct loop_thread other = {watched_loop(&other_s, 0, 150, NULL), 600, "other"};
	pthread_t id;
	assert_int_equal(pthread_create(&id, NULL, run_loop, &other), 0);
	sleep_ms(50);
	tl_looper_dispatch_begin(l, "warm");
	tl_looper_dispatch_end(l);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tl_looper_dispatch_begin(l, "child stall");
		sleep_ms(400);
		tl_looper_dispatch_end(l);
		int lag, anr, other_lag, other_anr;
		counts(&s, &lag, &anr);
		counts(&other_s, &other_lag, &other_anr);
		/* the parent's count of the other loop may be copied in: no more */
		_exit(anr == 1 && strcmp(s.message, "child stall") == 0 && other_anr <= 1 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	pthread_join(id, NULL);
	int lag, anr;
	counts(&s, &lag, &anr);
	assert_int_equal(anr, 0); /* the child's stall is the child's */
	tl_looper_destroy(other.loop);
	tl_looper_destroy(l);
	tl_shutdown();
}

static int stop_session(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_lag_reported_once, stop_session),
	    cmocka_unit_test_teardown(test_anr_reported_once_per_stall_with_dump, stop_session),
	    cmocka_unit_test_teardown(test_anr_json_dump_format, stop_session),
	    cmocka_unit_test_teardown(test_idle_and_quick_loops_are_not_reported, stop_session),
	    cmocka_unit_test_teardown(test_one_watchdog_for_many_loops, stop_session),
	    cmocka_unit_test_teardown(test_dump_signal_while_threads_write, stop_session),
	    cmocka_unit_test(test_dump_signal_stats_refuse_a_short_struct),
	    cmocka_unit_test_teardown(test_watchdog_runs_again_in_fork_child, stop_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
