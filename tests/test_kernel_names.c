/*
 * Thread and process names reach the kernel's comm (15 bytes, cleaned as a
 * marker name), so that every capture of the systrace recorder shows them:
 * read back from /proc/self/task/<tid>/comm.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support/test_support.h"

#include <timeline/timeline.h>

static char saved_comm[16];

static int setup(void **state)
{
	(void)state;
	prctl(PR_GET_NAME, saved_comm, 0, 0, 0);
	return 0;
}

/* The main thread's comm as it was: the later tests start from it. */
static int teardown(void **state)
{
	(void)state;
	prctl(PR_SET_NAME, saved_comm, 0, 0, 0);
	return 0;
}

static pid_t thread_id(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* /proc/self/task/<tid>/comm without its newline. */
static const char *comm_of(pid_t tid)
{
	static char comm[64];
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	if (!fgets(comm, sizeof comm, f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	return comm;
}

struct naming {
	const char *name;
	int rc;
	char comm[64];
};

static void *name_myself(void *arg)
{
	struct naming *n = arg;
	n->rc = tl_thread_set_name(n->name);
	snprintf(n->comm, sizeof n->comm, "%s", comm_of(thread_id()));
	return NULL;
}

/* Names a new thread with `name`; returns its comm after the call. */
static const char *comm_after_naming(const char *name)
{
	static struct naming n;
	memset(&n, 0, sizeof n);
	n.name = name;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, name_myself, &n), 0);
	pthread_join(t, NULL);
	assert_int_equal(n.rc, 0);
	return n.comm;
}

static void test_thread_name_becomes_the_comm(void **state)
{
	(void)state;
	assert_string_equal(comm_after_naming("render"), "render");
}

static void test_long_thread_name_gives_its_first_15_bytes(void **state)
{
	(void)state;
	assert_string_equal(comm_after_naming("a rather long thread name"), "a rather long t");
}

static void test_thread_comm_is_cut_on_a_character_boundary(void **state)
{
	(void)state;
	/* 14 bytes, then a 3-byte euro sign that does not fit */
	assert_string_equal(comm_after_naming("abcdefghijklmn\xe2\x82\xac"), "abcdefghijklmn");
}

static void test_thread_comm_is_cleaned_as_a_marker_name(void **state)
{
	(void)state;
	assert_string_equal(comm_after_naming("io|net\tq\n"), "io net q");
}

static void test_blank_thread_name_leaves_the_comm(void **state)
{
	(void)state;
	static struct naming n = {.name = " \t"};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, name_myself, &n), 0);
	pthread_join(t, NULL);
	assert_int_equal(n.rc, 0);
	assert_string_equal(n.comm, saved_comm); /* inherited from the main thread */
}

static void test_thread_name_leaves_other_threads_comm(void **state)
{
	(void)state;
	comm_after_naming("worker");
	assert_string_equal(comm_of(thread_id()), saved_comm);
}

static void test_process_name_from_the_main_thread_becomes_its_comm(void **state)
{
	(void)state;
	assert_int_equal(thread_id(), getpid());
	assert_int_equal(tl_process_set_name("my server process"), 0);
	assert_string_equal(comm_of(getpid()), "my server proce");
}

static void *name_process(void *arg)
{
	*(int *)arg = tl_process_set_name("from a worker");
	return NULL;
}

static void test_process_name_from_another_thread_names_the_main_thread(void **state)
{
	(void)state;
	int rc = -1;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, name_process, &rc), 0);
	pthread_join(t, NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(comm_of(getpid()), "from a worker");
}

/* tl_options.process_name names the main thread as tl_process_set_name does. */
static void test_process_name_option_becomes_the_main_thread_comm(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_RING,
	                .process_name = "option|named server"};
	assert_int_equal(tl_init(&o), 0);
	tl_shutdown();
	assert_string_equal(comm_of(getpid()), "option named se");
}

static void *init_with_process_name(void *arg)
{
	tl_options o = {.struct_size = sizeof o,
	                .recorder = TL_RECORDER_RING,
	                .process_name = "init on a worker"};
	*(int *)arg = tl_init(&o);
	tl_shutdown();
	return NULL;
}

static void test_process_name_option_from_another_thread_names_the_main_thread(void **state)
{
	(void)state;
	int rc = -1;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, init_with_process_name, &rc), 0);
	pthread_join(t, NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(comm_of(getpid()), "init on a worke");
}

/* Without the option, tl_init leaves the comm alone. */
static void test_no_process_name_option_leaves_the_comm(void **state)
{
	(void)state;
	tl_options o = {.struct_size = sizeof o, .recorder = TL_RECORDER_RING};
	assert_int_equal(tl_init(&o), 0);
	tl_shutdown();
	assert_string_equal(comm_of(getpid()), saved_comm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_thread_name_becomes_the_comm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_thread_name_gives_its_first_15_bytes, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_thread_comm_is_cut_on_a_character_boundary, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_thread_comm_is_cleaned_as_a_marker_name, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_blank_thread_name_leaves_the_comm, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_thread_name_leaves_other_threads_comm, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_process_name_from_the_main_thread_becomes_its_comm,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_process_name_from_another_thread_names_the_main_thread, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_process_name_option_becomes_the_main_thread_comm,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_process_name_option_from_another_thread_names_the_main_thread, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(test_no_process_name_option_leaves_the_comm, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
