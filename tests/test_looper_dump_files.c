/*
 * The looper's dump directory and files as an attacker would meet them: the
 * directory made private when missing and refused when others may write it
 * or when it is a link, dumps and reports created 0600, and a FIFO planted
 * at the predictable name anr-<pid>-<n>.* neither written to nor able to
 * block the watchdog; and the snapshot path forms, with the same names
 * planted at theirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/looper.h>
#include <timeline/timeline.h>

struct seen {
	pthread_mutex_t lock;
	int anr;
	int dump_error;
	char dump_path[4096];
	char report_path[4096];
};

static void on_report(const tl_looper_report *r, void *user)
{
	struct seen *s = user;
	if (r->kind != TL_LOOPER_REPORT_ANR)
		return;
	pthread_mutex_lock(&s->lock);
	s->anr++;
	s->dump_error = r->dump_error;
	snprintf(s->dump_path, sizeof s->dump_path, "%s", r->dump_path ? r->dump_path : "");
	snprintf(s->report_path, sizeof s->report_path, "%s", r->report_path ? r->report_path : "");
	pthread_mutex_unlock(&s->lock);
}

static tl_looper *loop_dumping_into(const char *dir, struct seen *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	tl_looper_options o;
	tl_looper_options_init(&o);
	o.anr_timeout_ms = 100;
	o.lag_threshold_ms = 0;
	o.slow_dispatch_ms = 0;
	o.dump_directory = dir;
	o.on_report = on_report;
	o.user = s;
	return tl_looper_create(&o);
}

/* One stall of four timeouts: one ANR report. */
static void stall(tl_looper *l)
{
	tl_looper_dispatch_begin(l, "stuck");
	struct timespec t = {0, 400 * 1000 * 1000};
	while (nanosleep(&t, &t) != 0)
		;
	tl_looper_dispatch_end(l);
}

static const char *new_path(const char *stem)
{
	static char path[4096];
	snprintf(path, sizeof path, "%s", tl_test_path(stem, ""));
	return path;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_a_fifo_at_the_dump_names_is_neither_written_nor_blocking(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", new_path("looper-fifo"));
	assert_int_equal(mkdir(dir, 0700), 0);
	/* the names of the first dumps of this process, planted in advance */
	for (int n = 1; n <= 4; n++) {
		char name[4200];
		snprintf(name, sizeof name, "%s/anr-%d-%d.tlsnap", dir, (int)getpid(), n);
		assert_int_equal(mkfifo(name, 0666), 0);
		snprintf(name, sizeof name, "%s/anr-%d-%d.report.json", dir, (int)getpid(), n);
		assert_int_equal(mkfifo(name, 0666), 0);
	}
	struct seen s;
	tl_looper *l = loop_dumping_into(dir, &s);
	assert_non_null(l);
	alarm(20); /* a watchdog blocked in open(2) would never report */
	stall(l);
	tl_looper_destroy(l);
	alarm(0);
	assert_int_equal(s.anr, 1);
	assert_int_equal(s.dump_error, -ENXIO);
	assert_string_equal(s.dump_path, "");
	assert_string_equal(s.report_path, ""); /* not written either */
	tl_shutdown();
}

static void test_a_missing_dump_directory_is_made_private(void **state)
{
	(void)state;
	const char *dir = new_path("looper-made");
	struct seen s;
	mode_t old = umask(0);
	tl_looper *l = loop_dumping_into(dir, &s);
	umask(old);
	assert_non_null(l);
	tl_looper_destroy(l);
	assert_int_equal(mode_of(dir), 0700);
}

static void test_a_dump_directory_others_may_write_is_refused(void **state)
{
	(void)state;
	const char *dir = new_path("looper-public");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 01777), 0); /* as /tmp is */
	struct seen s;
	errno = 0;
	assert_null(loop_dumping_into(dir, &s));
	assert_int_equal(errno, EPERM);
}

static void test_a_link_as_dump_directory_is_refused(void **state)
{
	(void)state;
	char target[4096], link[4200];
	snprintf(target, sizeof target, "%s", new_path("looper-target"));
	assert_int_equal(mkdir(target, 0700), 0);
	snprintf(link, sizeof link, "%s.link", target);
	assert_int_equal(symlink(target, link), 0);
	struct seen s;
	errno = 0;
	assert_null(loop_dumping_into(link, &s));
	assert_int_equal(errno, ELOOP);
}

static void test_anr_dump_and_report_are_private(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const char *dir = new_path("looper-private");
	struct seen s;
	tl_looper *l = loop_dumping_into(dir, &s);
	assert_non_null(l);
	stall(l);
	tl_looper_destroy(l);
	assert_int_equal(s.anr, 1);
	assert_int_equal(s.dump_error, 0);
	assert_int_equal(mode_of(s.dump_path), 0600);
	assert_int_equal(mode_of(s.report_path), 0600);
	tl_shutdown();
}

static void test_a_dump_directory_opened_to_others_later_gets_no_dump(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	const char *dir = new_path("looper-opened");
	struct seen s;
	tl_looper *l = loop_dumping_into(dir, &s);
	assert_non_null(l);
	assert_int_equal(chmod(dir, 0777), 0);
	stall(l);
	tl_looper_destroy(l);
	assert_int_equal(s.anr, 1);
	assert_int_equal(s.dump_error, -EPERM);
	assert_string_equal(tl_test_dir_entries(dir), "");
	tl_shutdown();
}

static void test_the_dump_signal_refuses_a_directory_others_may_write(void **state)
{
	(void)state;
	const char *dir = new_path("signal-public");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(tl_set_dump_directory(dir), -EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(tl_set_dump_directory(dir), 0);
	assert_int_equal(chmod(dir, 0777), 0); /* opened after it was set */
	assert_int_equal(tl_install_dump_signal(SIGUSR2), -EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(tl_install_dump_signal(SIGUSR2), 0);
	assert_int_equal(tl_uninstall_dump_signal(), 0);
}

/* The snapshot path forms, with each kind of name another user could
 * plant (as nobody, in a directory of nobody's, when this is root):
 * nothing written through it, nothing blocked, the planted name left. */
static void test_snapshots_by_path_write_through_nothing_planted(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 1 << 20);
	char root_dir[4096], user_dir[4096], victim[4200];
	snprintf(root_dir, sizeof root_dir, "%s", new_path("snap-root"));
	assert_int_equal(mkdir(root_dir, 0700), 0);
	snprintf(user_dir, sizeof user_dir, "%s", new_path("snap-user"));
	assert_int_equal(mkdir(user_dir, 0755), 0);
	snprintf(victim, sizeof victim, "%s/victim", root_dir);
	int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "root's data\n", 12), 12);
	close(fd);
	const char *as = "";
	if (geteuid() == 0 && tl_test_run("command -v setpriv >/dev/null") == 0) {
		assert_int_equal(chown(user_dir, 65534, 65534), 0);
		as = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";
	}
	int (*const writers[])(const char *) = {tl_snapshot_json, tl_snapshot_ftrace,
	                                         tl_snapshot_perfetto, tl_snapshot_binary};
	const char *plants[] = {"ln -s '%s' '%s'", "ln -s '%s.nowhere' '%s'", "mkfifo '%2$s'",
	                        "mkdir '%2$s'"};
	const int expected[] = {-ELOOP, -ELOOP, -ENXIO, -EISDIR};
	for (size_t w = 0; w < sizeof writers / sizeof writers[0]; w++) {
		for (size_t k = 0; k < sizeof plants / sizeof plants[0]; k++) {
			char path[4300], planted[9000];
			snprintf(path, sizeof path, "%s/%zu-%zu.trace", user_dir, w, k);
			snprintf(planted, sizeof planted, plants[k], victim, path);
			assert_int_equal(tl_test_run("%s%s", as, planted), 0);
			alarm(10); /* a writer that opened the FIFO would block */
			int rc = writers[w](path);
			alarm(0);
			assert_int_equal(rc, expected[k]);
			struct stat st;
			assert_int_equal(lstat(path, &st), 0);
			assert_false(S_ISREG(st.st_mode));
		}
	}
	char *data = tl_test_read_file(victim, NULL);
	assert_string_equal(data, "root's data\n");
	free(data);
	char nowhere[4300];
	snprintf(nowhere, sizeof nowhere, "%s.nowhere", victim);
	struct stat st;
	assert_int_equal(lstat(nowhere, &st), -1);
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
	    /* first: its FIFOs take the names of this process's first dumps */
	    cmocka_unit_test_teardown(test_a_fifo_at_the_dump_names_is_neither_written_nor_blocking,
	                              stop_session),
	    cmocka_unit_test(test_a_missing_dump_directory_is_made_private),
	    cmocka_unit_test(test_a_dump_directory_others_may_write_is_refused),
	    cmocka_unit_test(test_a_link_as_dump_directory_is_refused),
	    cmocka_unit_test_teardown(test_anr_dump_and_report_are_private, stop_session),
	    cmocka_unit_test_teardown(test_a_dump_directory_opened_to_others_later_gets_no_dump,
	                              stop_session),
	    cmocka_unit_test(test_the_dump_signal_refuses_a_directory_others_may_write),
	    cmocka_unit_test_teardown(test_snapshots_by_path_write_through_nothing_planted,
	                              stop_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
