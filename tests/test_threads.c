/* Thread exit, many short-lived threads, fork. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/trace_event.h>

#include "recorder/export/trace_model.h"
#include "recorder/snapshot_writer.h"

static int teardown(void **state)
{
	(void)state;
	tl_shutdown();
	return 0;
}

static void *short_lived(void *arg)
{
	char name[32];
	snprintf(name, sizeof name, "short %d", (int)(intptr_t)arg);
	tl_thread_set_name(name);
	TL_TRACE_EVENT0("thr", "short work");
	return NULL;
}

static void test_exited_thread_keeps_its_events_and_name(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, short_lived, (void *)(intptr_t)1), 0);
	pthread_join(t, NULL);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(tl_test_count_events(&m, 'B', "short work"), 1);
	int found = 0;
	for (size_t i = 0; i < m.nthreads; i++)
		found += strcmp(m.threads[i].name, "short 1") == 0;
	assert_int_equal(found, 1);
	tl_model_free(&m);
}

static void test_exited_threads_blocks_are_reused(void **state)
{
	(void)state;
	/* 16 blocks, 200 threads: each exit hands its block back */
	tl_test_init(TL_RECORDER_RING, 64 * 1024);
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, short_lived, (void *)(intptr_t)i), 0);
		pthread_join(t, NULL);
	}
	tl_stats st = {.struct_size = sizeof st};
	tl_stats_get(&st);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.events_written, 400);
	tl_model m;
	tl_test_snapshot_model(&m);
	/* the newest threads' events are all there */
	assert_true(tl_test_count_events(&m, 'B', "short work") >= 10);
	tl_model_free(&m);
}

static void test_fork_child_has_fresh_state_and_its_own_pid(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_RING, 0);
	TL_TRACE_EVENT_INSTANT0("thr", "parent before fork", TL_SCOPE_THREAD);
	pid_t parent = getpid();
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		TL_TRACE_EVENT_INSTANT0("thr", "in child", TL_SCOPE_THREAD);
		tl_model m;
		unsigned char *data;
		size_t len;
		int ok = tl_snapshot_to_memory(&data, &len) == 0 &&
			 tl_model_read_binary(data, len, &m, NULL, 0) == 0;
		ok = ok && m.pid == (uint32_t)getpid() && m.pid != (uint32_t)parent;
		ok = ok && tl_test_count_events(&m, 'i', "in child") == 1;
		ok = ok && tl_test_count_events(&m, 'i', "parent before fork") == 0;
		ok = ok && m.nevents == 1 && m.events[0].tid == (uint32_t)gettid();
		_exit(ok ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the parent is unaffected */
	TL_TRACE_EVENT_INSTANT0("thr", "parent after fork", TL_SCOPE_THREAD);
	tl_model m;
	tl_test_snapshot_model(&m);
	assert_int_equal(m.pid, (uint32_t)parent);
	assert_int_equal(tl_test_count_events(&m, 'i', "parent before fork"), 1);
	assert_int_equal(tl_test_count_events(&m, 'i', "parent after fork"), 1);
	assert_int_equal(tl_test_count_events(&m, 'i', "in child"), 0);
	tl_model_free(&m);
}

static void *forking_thread(void *arg)
{
	(void)arg;
	TL_TRACE_EVENT_INSTANT0("thr", "other thread", TL_SCOPE_THREAD);
	return NULL;
}

static void test_fork_while_other_threads_recorded(void **state)
{
	(void)state;
	tl_test_init(TL_RECORDER_ENDLESS, 1 << 20);
	pthread_t t;
	pthread_create(&t, NULL, forking_thread, NULL);
	pthread_join(t, NULL);
	pid_t child = fork();
	if (child == 0) {
		/* only this thread exists here; recording still works */
		for (int i = 0; i < 5000; i++)
			TL_TRACE_EVENT_INSTANT0("thr", "child work", TL_SCOPE_THREAD);
		tl_stats st = {.struct_size = sizeof st};
		tl_stats_get(&st);
		_exit(st.events_written == 5000 && st.events_dropped == 0 ? 0 : 1);
	}
	int status = 0;
	waitpid(child, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	tl_test_clear_environment();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exited_thread_keeps_its_events_and_name, teardown),
		cmocka_unit_test_teardown(test_exited_threads_blocks_are_reused, teardown),
		cmocka_unit_test_teardown(test_fork_child_has_fresh_state_and_its_own_pid, teardown),
		cmocka_unit_test_teardown(test_fork_while_other_threads_recorded, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
