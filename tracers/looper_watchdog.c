/*
 * The watchdog: one thread for every loop. It reads each loop's atomics
 * (sequence number, start time, name), sleeps until the earliest deadline
 * and reports a dispatch that outlives the lag threshold or the ANR
 * timeout, once each per dispatch.
 *
 * The lock here guards the list of loops and is taken by create, destroy,
 * fork and the watchdog; a loop's thread never takes it while dispatching.
 * A loop idle when the watchdog looks cannot reach a deadline before
 * now + threshold, so the watchdog never needs waking by a dispatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracers/looper_internal.h"

/* How long the watchdog sleeps with nothing to watch. */
#define IDLE_SLEEP_NS (3600LL * 1000000000)

/* control serialises starting and stopping the thread (never taken by it) */
static pthread_mutex_t control = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct tl_looper *loops; /* under lock */
static pthread_t thread;
static bool running, stopping; /* under lock */
static _Atomic uint64_t anr_counter;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Time the machine spent suspended since boot, as the two clocks see it. */
static int64_t suspend_offset_ns(void)
{
	int64_t mono1 = clock_ns(CLOCK_MONOTONIC);
	int64_t boot = clock_ns(CLOCK_BOOTTIME);
	int64_t mono2 = clock_ns(CLOCK_MONOTONIC);
	return boot - (mono1 + (mono2 - mono1) / 2);
}

/* State and CPU time (utime + stime) of a thread from procfs. */
static int64_t thread_stat(uint32_t tid, char *state)
{
	char path[64], text[1024];
	*state = '?';
	snprintf(path, sizeof path, "/proc/self/task/%u/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	/* the name may hold anything: fields resume after the last ')' */
	char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	unsigned long long utime, stime;
	/* fields 3 (state) .. 15 (stime): skip 10 between */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
	           &stime) != 2)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	return (int64_t)((utime + stime) * (1000000000ULL / (unsigned long long)hz));
}

/* ---- reports ----------------------------------------------------------------- */

struct stall {
	struct tl_looper *loop;
	tl_looper_report_kind kind;
	uint64_t seq;
	int64_t begin_ns, now_ns, deadline_ns;
	char message[LOOPER_NAME_MAX];
};

static const char *dump_extension(tl_looper_dump_format f)
{
	switch (f) {
	case TL_LOOPER_DUMP_JSON:
		return "json";
	case TL_LOOPER_DUMP_FTRACE:
		return "txt";
	default:
		return "tlsnap";
	}
}

/* Each is written whole or not at all (recorder/atomic_file.h). */
static int write_dump(tl_looper_dump_format format, const char *path)
{
	switch (format) {
	case TL_LOOPER_DUMP_JSON:
		return tl_snapshot_json(path);
	case TL_LOOPER_DUMP_FTRACE:
		return tl_snapshot_ftrace(path);
	default:
		return tl_snapshot_binary(path);
	}
}

static int write_text(int fd, void *text)
{
	return tl_write_full(fd, text, strlen(text));
}

static int write_text_file(const char *path, const char *text)
{
	return tl_atomic_file_write(path, write_text, (void *)text);
}

static void report(struct stall *st, int64_t suspended_ns, int64_t cpu_now_ns, char state)
{
	struct tl_looper *l = st->loop;
	tl_looper_report r;
	memset(&r, 0, sizeof r);
	r.struct_size = sizeof r;
	r.kind = st->kind;
	r.loop = l->name;
	r.message = st->message;
	r.dispatch_seq = (st->seq + 1) / 2;
	r.tid = atomic_load_explicit(&l->tid, memory_order_relaxed);
	r.elapsed_ns = st->now_ns - st->begin_ns;
	r.thread_cpu_ns =
	    cpu_now_ns >= 0 && l->watched_cpu_ns >= 0 ? cpu_now_ns - l->watched_cpu_ns : -1;
	r.thread_state = state;
	r.suspended_ns = suspended_ns > 0 ? suspended_ns : 0;
	int64_t late = st->now_ns - st->deadline_ns - r.suspended_ns;
	r.watchdog_late_ns = late > 0 ? late : 0;
	r.doubtful = r.suspended_ns > l->doubtful_ns || r.watchdog_late_ns > l->doubtful_ns;
	char *names;
	tl_looper_history_entry *history;
	r.history_count = looper_history_read(l, &history, &names);
	r.history = history;

	bool anr = r.kind == TL_LOOPER_REPORT_ANR;
	char dump_path[LOOPER_PATH_MAX], report_path[LOOPER_PATH_MAX];
	char details[TL_COPY_MAX];
	snprintf(details, sizeof details,
	         "seq=%llu state=%c cpu_ns=%lld late_ns=%lld suspended_ns=%lld doubtful=%d",
	         (unsigned long long)r.dispatch_seq, state, (long long)r.thread_cpu_ns,
	         (long long)r.watchdog_late_ns, (long long)r.suspended_ns, (int)r.doubtful);
	const char *event = !anr ? "looper.lag" : r.doubtful ? "looper.anr_doubtful" : "looper.anr";
	if (tl_category_enabled(l->cat)) {
		tl_arg args[4] = {
		    {.key = "loop", .type = TL_ARG_STRING_COPY, .value.s = l->name},
		    {.key = "message", .type = TL_ARG_STRING_COPY, .value.s = st->message},
		    {.key = "elapsed_ns", .type = TL_ARG_INT, .value.i = r.elapsed_ns},
		    {.key = "details", .type = TL_ARG_STRING_COPY, .value.s = details},
		};
		tl_emit(l->cat, TL_PHASE_INSTANT, TL_EVENT_SCOPE_PROCESS, event, 0, 0, args, 4);
	}
	int dir_rc =
	    anr && !r.doubtful && l->dump_directory ? tl_private_directory(l->dump_directory) : 0;
	if (dir_rc)
		r.dump_error = dir_rc; /* changed since tl_looper_create: nothing written */
	else if (anr && !r.doubtful && l->dump_directory) {
		uint64_t n = atomic_fetch_add(&anr_counter, 1) + 1;
		snprintf(dump_path, sizeof dump_path, "%s/anr-%d-%llu.%s", l->dump_directory,
		         (int)getpid(), (unsigned long long)n, dump_extension(l->dump_format));
		snprintf(report_path, sizeof report_path, "%s/anr-%d-%llu.report.json",
		         l->dump_directory, (int)getpid(), (unsigned long long)n);
		r.dump_error = write_dump(l->dump_format, dump_path);
		if (r.dump_error == 0)
			r.dump_path = dump_path;
		r.report_path = report_path;
	}
	struct looper_buf json = {0};
	looper_report_json(&r, &json);
	r.json = json.data ? json.data : "{}";
	if (r.report_path && write_text_file(r.report_path, r.json) != 0)
		r.report_path = NULL;

	if (anr)
		atomic_fetch_add_explicit(&l->stat_anr, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&l->stat_lag, 1, memory_order_relaxed);
	if (r.doubtful)
		atomic_fetch_add_explicit(&l->stat_doubtful, 1, memory_order_relaxed);
	if (l->on_report)
		l->on_report(&r, l->user);
	looper_buf_free(&json);
	free(history);
	free(names);
}

/* Copies the current dispatch's name; false when the dispatch changed. */
static bool read_message(const struct tl_looper *l, uint64_t seq, char *out)
{
	const char *what = atomic_load_explicit(&l->what, memory_order_relaxed);
	if (what != l->name_copy) {
		snprintf(out, LOOPER_NAME_MAX, "%s", what);
	} else {
		uint32_t s1 = atomic_load_explicit(&l->name_seq, memory_order_acquire);
		if (s1 & 1)
			return false;
		size_t i = 0;
		char c;
		while (i + 1 < LOOPER_NAME_MAX &&
		       (c = __atomic_load_n(&l->name_copy[i], __ATOMIC_RELAXED)) != '\0')
			out[i++] = c;
		out[i] = '\0';
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&l->name_seq, memory_order_relaxed) != s1)
			return false;
	}
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&l->seq, memory_order_relaxed) == seq;
}

/* Looks at one loop: reports what is due, returns when to look again
 * (trace-clock ns). */
static int64_t check(struct tl_looper *l, int64_t now_ns, int64_t previous_offset_ns)
{
	int64_t first = 0; /* the smallest enabled threshold */
	if (l->lag_ns && (!first || l->lag_ns < first))
		first = l->lag_ns;
	if (l->anr_ns && (!first || l->anr_ns < first))
		first = l->anr_ns;
	if (!first || l->orphaned)
		return INT64_MAX;
	uint64_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
	if (!(seq & 1))
		return now_ns + first; /* idle: no dispatch can be due sooner */
	uint64_t begin_ts = atomic_load_explicit(&l->begin_ts, memory_order_relaxed);
	const char *what = atomic_load_explicit(&l->what, memory_order_relaxed);
	(void)what;
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&l->seq, memory_order_relaxed) != seq)
		return now_ns; /* it changed under us: look again at once */
	int64_t begin_ns = tl_timestamp_to_ns(begin_ts);
	if (seq != l->watched_seq) {
		l->watched_seq = seq;
		l->lag_done = l->anr_done = false;
		l->watched_offset_ns = previous_offset_ns;
		char state;
		l->watched_cpu_ns = thread_stat(atomic_load(&l->tid), &state);
	}
	struct stall st = {.loop = l, .seq = seq, .begin_ns = begin_ns, .now_ns = now_ns};
	bool lag_due = l->lag_ns && !l->lag_done && (!l->anr_ns || l->lag_ns < l->anr_ns) &&
	               now_ns - begin_ns >= l->lag_ns;
	bool anr_due = l->anr_ns && !l->anr_done && now_ns - begin_ns >= l->anr_ns;
	if (lag_due || anr_due) {
		if (!read_message(l, seq, st.message))
			return now_ns; /* ended meanwhile */
		char state;
		int64_t cpu = thread_stat(atomic_load(&l->tid), &state);
		int64_t suspended = suspend_offset_ns() - l->watched_offset_ns;
		if (lag_due) {
			l->lag_done = true;
			st.kind = TL_LOOPER_REPORT_LAG;
			st.deadline_ns = begin_ns + l->lag_ns;
			report(&st, suspended, cpu, state);
		}
		if (anr_due) {
			l->anr_done = true;
			l->lag_done = true;
			st.kind = TL_LOOPER_REPORT_ANR;
			st.deadline_ns = begin_ns + l->anr_ns;
			report(&st, suspended, cpu, state);
		}
	}
	int64_t next = now_ns + first;
	if (l->lag_ns && !l->lag_done && begin_ns + l->lag_ns < next)
		next = begin_ns + l->lag_ns;
	if (l->anr_ns && !l->anr_done && begin_ns + l->anr_ns < next)
		next = begin_ns + l->anr_ns;
	return next;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	tl_thread_set_name("tl-watchdog");
	pthread_mutex_lock(&lock);
	int64_t previous_offset = suspend_offset_ns();
	while (!stopping) {
		int64_t now = tl_now_ns();
		int64_t next = INT64_MAX;
		for (struct tl_looper *l = loops; l; l = l->next) {
			int64_t t = check(l, now, previous_offset);
			if (t < next)
				next = t;
		}
		previous_offset = suspend_offset_ns();
		int64_t sleep_ns = next == INT64_MAX ? IDLE_SLEEP_NS : next - tl_now_ns();
		if (sleep_ns <= 0)
			continue;
		int64_t until = clock_ns(CLOCK_MONOTONIC) + sleep_ns;
		struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
		pthread_cond_timedwait(&wake, &lock, &ts);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* ---- registration and fork ------------------------------------------------- */

static void init_cond(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &attr);
	pthread_condattr_destroy(&attr);
}

static int start_locked(void)
{
	stopping = false;
	int err = pthread_create(&thread, NULL, watchdog_main, NULL);
	if (err)
		return -err;
	running = true;
	return 0;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&control);
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&control);
}

/* The child has only the forking thread: loops run by other threads are
 * orphans, and the watchdog starts again. */
static void fork_child(void)
{
	pthread_mutex_init(&control, NULL);
	pthread_mutex_init(&lock, NULL);
	init_cond();
	running = false;
	pthread_t self = pthread_self();
	bool any = false;
	for (struct tl_looper *l = loops; l; l = l->next) {
		if (atomic_load(&l->tid) == 0 || pthread_equal(l->owner, self)) {
			if (atomic_load(&l->tid) != 0)
				atomic_store(&l->tid, (uint32_t)syscall(SYS_gettid));
		} else {
			l->orphaned = true;
		}
		any = true;
	}
	if (any)
		start_locked();
}

static void setup(void)
{
	init_cond();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int looper_watchdog_add(struct tl_looper *l)
{
	pthread_once(&once, setup);
	pthread_mutex_lock(&control);
	pthread_mutex_lock(&lock);
	int rc = 0;
	if (!running)
		rc = start_locked();
	if (rc == 0) {
		l->next = loops;
		loops = l;
		pthread_cond_signal(&wake);
	}
	pthread_mutex_unlock(&lock);
	pthread_mutex_unlock(&control);
	return rc;
}

void looper_watchdog_remove(struct tl_looper *l)
{
	pthread_mutex_lock(&control);
	pthread_mutex_lock(&lock);
	for (struct tl_looper **p = &loops; *p; p = &(*p)->next) {
		if (*p == l) {
			*p = l->next;
			break;
		}
	}
	bool stop = running && !loops;
	if (stop) {
		stopping = true;
		running = false;
		pthread_cond_signal(&wake);
	}
	pthread_mutex_unlock(&lock);
	if (stop)
		pthread_join(thread, NULL);
	pthread_mutex_unlock(&control);
}
