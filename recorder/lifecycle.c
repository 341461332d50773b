/*
 * Session lifetime: tl_init (options, environment, recorder start),
 * tl_shutdown (bounded wait for writers in flight), fork handling, the
 * process name and the stats.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/atrace_format.h"
#include "recorder/categories.h"
#include "recorder/clock.h"
#include "recorder/log.h"
#include "recorder/pool.h"
#include "recorder/recorder.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/snapshot_writer.h"
#include "recorder/stats.h"
#include "recorder/threads.h"

#define SHUTDOWN_WAIT_NS (100 * 1000 * 1000)
#define BUFFER_MAX_KIB 67108864 /* 64 GiB */
#define BUFFER_MAX_BYTES ((size_t)BUFFER_MAX_KIB * 1024)

_Atomic uint32_t tl_state;
_Atomic uint32_t tl_tsc_state = TL_STATE_OTHER_CLOCK;
_Atomic uint32_t tl_vdso_state = TL_STATE_OTHER_CLOCK;
struct tl_recorder tl_active;
pid_t tl_pid;
char tl_process_name[TL_NAME_MAX];
_Atomic uint64_t tl_blocks_torn;

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static uint32_t last_epoch; /* odd once a session has run; never has TL_STATE_FULL */

void tl_state_set(uint32_t state)
{
	atomic_store(&tl_state, state);
	bool tsc = tl_clock_tsc_chosen();
	atomic_store(&tl_tsc_state, tsc ? state : TL_STATE_OTHER_CLOCK);
	atomic_store(&tl_vdso_state, tsc ? TL_STATE_OTHER_CLOCK : state);
}

/* The next session's tl_state value: odd, never 0, never with the FULL bit. */
static uint32_t next_epoch(void)
{
	last_epoch = ((last_epoch + 2) | 1) & ~TL_STATE_FULL;
	return last_epoch;
}
static int membarrier_ok;
static _Atomic uint64_t last_unmatched_begin, last_unmatched_end;

static const struct tl_recorder_ops *const recorders[] = {
	&tl_ring_ops,
	&tl_endless_ops,
	&tl_startup_ops,
	&tl_systrace_ops,
	&tl_file_ops,
	&tl_callback_ops,
};

static const struct tl_recorder_ops *recorder_by_kind(tl_recorder_kind kind)
{
	for (size_t i = 0; i < sizeof recorders / sizeof recorders[0]; i++)
		if (recorders[i]->kind == kind)
			return recorders[i];
	return NULL;
}

static int recorder_kind_from_name(const char *name, tl_recorder_kind *out)
{
	static const struct {
		const char *name;
		tl_recorder_kind kind;
	} names[] = {
		{"ring", TL_RECORDER_RING},
		{"endless", TL_RECORDER_ENDLESS},
		{"startup", TL_RECORDER_STARTUP},
		{"systrace", TL_RECORDER_SYSTRACE},
		{"file", TL_RECORDER_FILE},
		{"callback", TL_RECORDER_CALLBACK},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].kind;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- process name ---------------------------------------------------------- */

static void process_name_store(const char *name)
{
	size_t len = strlen(name);
	if (len >= TL_NAME_MAX) {
		len = TL_NAME_MAX - 1;
		while (len > 0 && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--;
	}
	for (size_t i = 0; i < len; i++)
		__atomic_store_n(&tl_process_name[i], name[i], __ATOMIC_RELAXED);
	__atomic_store_n(&tl_process_name[len], '\0', __ATOMIC_RELEASE);
}

static void process_name_from_comm(void)
{
	char comm[64] = "";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, comm, sizeof comm - 1);
		close(fd);
		if (n > 0) {
			comm[n] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
		}
	}
	process_name_store(comm);
}

/* The main thread's comm, from any thread (the kernel lets a thread write
 * the comm of any thread of its process); left alone when it cannot. */
static void main_thread_comm(const char *name)
{
	char comm[TL_COMM_MAX + 1];
	size_t len = tl_atrace_comm(comm, name);
	if (len == 0)
		return;
	if ((pid_t)syscall(SYS_gettid) == getpid()) {
		prctl(PR_SET_NAME, comm, 0, 0, 0);
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)getpid());
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n;
	do
		n = write(fd, comm, len);
	while (n < 0 && errno == EINTR);
	close(fd);
}

int tl_process_set_name(const char *name)
{
	if (!name)
		return -EINVAL;
	process_name_store(name);
	main_thread_comm(name);
	return 0;
}

/* ---- fork ----------------------------------------------------------------------- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&life_lock);
	tl_categories_lock();
	if (atomic_load(&tl_state) && tl_active.ops->fork_prepare)
		tl_active.ops->fork_prepare(&tl_active);
}

static void fork_parent(void)
{
	if (atomic_load(&tl_state) && tl_active.ops->fork_parent)
		tl_active.ops->fork_parent(&tl_active);
	tl_categories_unlock();
	pthread_mutex_unlock(&life_lock);
}

/* The child starts a fresh session of the same recorder: its own pid, no
 * events of the parent, the forking thread its only thread. */
static void fork_child(void)
{
	tl_pid = getpid();
	tl_threads_after_fork_child();
	tl_clock_after_fork_child();
	tl_snapshot_after_fork_child();
	uint32_t state = atomic_load(&tl_state);
	if (state && tl_active.ops->after_fork_child)
		tl_active.ops->after_fork_child(&tl_active);
	atomic_store(&tl_blocks_torn, 0);
	if (state) {
		tl_state_set(next_epoch());
	}
	tl_categories_unlock();
	pthread_mutex_unlock(&life_lock);
}

static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- options and environment ---------------------------------------------------
 * Every TIMELINE_* value is taken exactly as written: a blank before or after
 * it, or a sign before a number, makes it invalid, whatever the variable. A
 * refusal logs the value, quoted, and what was expected; tl_init then
 * returns -EINVAL. Unset and empty mean "not set".
 */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* secure_getenv: a set-uid or set-gid program (AT_SECURE) reads no
 * setting from the environment of whoever runs it. */
static const char *env_value(const char *name)
{
	const char *v = secure_getenv(name);
	return v && *v ? v : NULL;
}

/* Says once, in a set-uid or set-gid program, that the TIMELINE_* variables
 * of its environment are ignored. */
static void env_note_ignored(void)
{
	if (!getauxval(AT_SECURE))
		return;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "TIMELINE_", 9) == 0) {
			tl_log(TL_LOG_WARNING,
			       "set-uid or set-gid program: the TIMELINE_* environment "
			       "is ignored");
			return;
		}
	}
}

static bool has_blanks_around(const char *v)
{
	return is_blank(v[0]) || is_blank(v[strlen(v) - 1]);
}

/* The value as the log shows it: control characters escaped (\n, \t,
 * \xHH), so that the refusal stays one line; cut at size - 1 bytes. */
static void env_shown(const char *value, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)value; *p && n + 5 < size; p++) {
		if (*p >= 0x20 && *p != 0x7f) {
			out[n++] = (char)*p;
		} else if (*p == '\n' || *p == '\t' || *p == '\r') {
			out[n++] = '\\';
			out[n++] = *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r';
		} else {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
}

static int env_refuse(const char *name, const char *value, const char *expected)
{
	char shown[256];
	env_shown(value, shown, sizeof shown);
	tl_log(TL_LOG_ERROR, "%s='%s': %sexpected %s", name, shown,
	       has_blanks_around(value) ? "blanks around the value are not accepted; " : "",
	       expected);
	return -EINVAL;
}

/* Decimal digits only, at most max. */
static bool parse_decimal(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;
	if (!*v)
		return false;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (n > (max - (uint64_t)(*p - '0')) / 10)
			return false;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*out = n;
	return true;
}

/* A buffer size in KiB: decimal digits only, within the bounds. */
static bool parse_buffer_kib(const char *v, size_t *bytes)
{
	uint64_t kib = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		kib = kib * 10 + (uint64_t)(*p - '0');
		if (kib > BUFFER_MAX_KIB)
			return false;
	}
	if (kib < TL_BUFFER_MIN_BYTES / 1024)
		return false;
	*bytes = (size_t)kib * 1024;
	return true;
}

static int parse_environment(tl_options *o, tl_clock_tsc_mode *tsc)
{
	const char *v = env_value("TIMELINE_RECORDER");
	if (v && recorder_kind_from_name(v, &o->recorder) != 0)
		return env_refuse("TIMELINE_RECORDER", v,
				  "ring, endless, startup, systrace, file or callback");
	v = env_value("TIMELINE_BUFFER_KB");
	if (v && !parse_buffer_kib(v, &o->buffer_bytes)) {
		char expected[64];
		snprintf(expected, sizeof expected, "a decimal number of KiB from %d to %d",
			 TL_BUFFER_MIN_BYTES / 1024, BUFFER_MAX_KIB);
		return env_refuse("TIMELINE_BUFFER_KB", v, expected);
	}
	v = env_value("TIMELINE_CATEGORIES");
	if (v && has_blanks_around(v))
		return env_refuse("TIMELINE_CATEGORIES", v, "comma-separated category globs");
	if (v)
		o->categories = v;
	v = env_value("TIMELINE_TRACEFS_INSTANCE");
	if (v && has_blanks_around(v))
		return env_refuse("TIMELINE_TRACEFS_INSTANCE", v, "a tracefs instance name");
	if (v)
		o->tracefs_instance = v;
	v = env_value("TIMELINE_FILE");
	if (v && has_blanks_around(v))
		return env_refuse("TIMELINE_FILE", v, "a path without blanks around it");
	if (v)
		o->file_path = v;
	v = env_value("TIMELINE_FILE_MAX_KB");
	if (v) {
		uint64_t kib;
		if (!parse_decimal(v, UINT64_MAX / 1024, &kib) || kib == 0)
			return env_refuse("TIMELINE_FILE_MAX_KB", v, "a decimal number of KiB, 1 or more");
		o->file_max_bytes = kib * 1024;
	}
	v = env_value("TIMELINE_FILE_KEEP");
	if (v) {
		uint64_t keep;
		if (!parse_decimal(v, 1000, &keep) || keep == 0)
			return env_refuse("TIMELINE_FILE_KEEP", v, "a number of files from 1 to 1000");
		o->file_keep = (unsigned)keep;
	}
	v = env_value("TIMELINE_FILE_MODE");
	if (v) {
		unsigned mode = 0;
		const char *p = v;
		for (; *p >= '0' && *p <= '7' && mode <= 0777; p++)
			mode = mode * 8 + (unsigned)(*p - '0');
		if (*p || mode > 0777)
			return env_refuse("TIMELINE_FILE_MODE", v,
			                  "octal permission bits, 0 to 0777");
		o->file_mode = mode ? mode : TL_FILE_MODE_DEFAULT;
	}
	/* 1 forces the vDSO clock over no_tsc = false; 0 leaves no_tsc as the
	 * caller set it: the environment can take the TSC away, never impose it. */
	v = env_value("TIMELINE_NO_TSC");
	if (v && strcmp(v, "1") != 0 && strcmp(v, "0") != 0)
		return env_refuse("TIMELINE_NO_TSC", v, "1 or 0");
	if (v && v[0] == '1')
		o->no_tsc = true;
	/* 1 takes the TSC path wherever the CPU's TSC is invariant, even where
	 * the kernel's clocksource is another (a VM on kvm-clock): to test that
	 * path on any such machine. TIMELINE_NO_TSC=1 wins over it. */
	v = env_value("TIMELINE_FORCE_TSC");
	if (v && strcmp(v, "1") != 0 && strcmp(v, "0") != 0)
		return env_refuse("TIMELINE_FORCE_TSC", v, "1 or 0");
	*tsc = o->no_tsc ? TL_CLOCK_TSC_NEVER
	       : v && v[0] == '1' ? TL_CLOCK_TSC_FORCED
	                          : TL_CLOCK_TSC_AUTO;
	return 0;
}

static void membarrier_setup(void)
{
	membarrier_ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) ==
			0;
}

/* Makes every running thread of the process pass a full barrier. */
static void membarrier_all(void)
{
	if (membarrier_ok &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	/* No membarrier: writers finish their few stores within microseconds;
	 * a grace period stands in for the missing fence. */
	atomic_thread_fence(memory_order_seq_cst);
	struct timespec grace = {0, 2 * 1000 * 1000};
	nanosleep(&grace, NULL);
}

/* A table either keeps blocks (all three block ops) or writes through,
 * never both. */
static bool recorder_ops_valid(const struct tl_recorder_ops *ops)
{
	bool blocks = ops->next_block && ops->retire_block && ops->blocks;
	bool partial = ops->next_block || ops->retire_block || ops->blocks;
	return ops->start && ops->stop && (!ops->write_slice || ops->write_event) &&
	       (tl_recorder_ops_write_through(ops) ? !partial : blocks);
}

int tl_init(const tl_options *user)
{
	tl_options o;
	memset(&o, 0, sizeof o);
	if (user) {
		if (user->struct_size < offsetof(tl_options, recorder) + sizeof(user->recorder))
			return -EINVAL;
		memcpy(&o, user, user->struct_size < sizeof o ? user->struct_size : sizeof o);
	}
	o.struct_size = sizeof o;

	pthread_mutex_lock(&life_lock);
	int rc = 0;
	if (atomic_load(&tl_state) != 0) {
		rc = -EALREADY;
		goto out;
	}
	tl_log_set(o.log, o.log_user);
	tl_clock_tsc_mode tsc = TL_CLOCK_TSC_AUTO;
	env_note_ignored();
	rc = parse_environment(&o, &tsc);
	if (rc)
		goto out;
	if (o.file_mode & ~0777u) {
		tl_log(TL_LOG_ERROR, "file_mode %#o: not permission bits (0 to 0777)", o.file_mode);
		rc = -EINVAL;
		goto out;
	}
	tl_file_mode_set(o.file_mode ? o.file_mode : TL_FILE_MODE_DEFAULT);
	if (o.recorder == TL_RECORDER_DEFAULT)
		o.recorder = TL_RECORDER_RING;
	const struct tl_recorder_ops *ops = recorder_by_kind(o.recorder);
	if (!ops) {
		tl_log(TL_LOG_ERROR, "recorder %d: unknown recorder", (int)o.recorder);
		rc = -EINVAL;
		goto out;
	}
	if (!recorder_ops_valid(ops)) {
		tl_log(TL_LOG_ERROR, "%s recorder: its ops table neither keeps blocks nor writes "
		       "through", ops->name);
		rc = -EINVAL;
		goto out;
	}
	if (o.clock != TL_CLOCK_BOOTTIME && o.clock != TL_CLOCK_MONOTONIC) {
		tl_log(TL_LOG_ERROR, "clock %d: expected TL_CLOCK_BOOTTIME or TL_CLOCK_MONOTONIC",
		       (int)o.clock);
		rc = -EINVAL;
		goto out;
	}
	/* A recorder that writes through keeps no buffer: the sizes are not
	 * read. */
	bool buffered = !tl_recorder_ops_write_through(ops);
	size_t bytes = !buffered ? 0 : o.buffer_bytes ? o.buffer_bytes : ops->default_bytes;
	if (buffered && bytes < TL_BUFFER_MIN_BYTES) {
		tl_log(TL_LOG_ERROR, "buffer of %zu bytes: too small; the minimum is %d bytes (%d KiB)",
		       bytes, TL_BUFFER_MIN_BYTES, TL_BUFFER_MIN_BYTES / 1024);
		rc = -EINVAL;
		goto out;
	}
	if (buffered && bytes > BUFFER_MAX_BYTES) {
		tl_log(TL_LOG_ERROR, "buffer of %zu bytes: too large; the maximum is %zu bytes (%d KiB)",
		       bytes, BUFFER_MAX_BYTES, BUFFER_MAX_KIB);
		rc = -EINVAL;
		goto out;
	}
	if (buffered && o.block_bytes &&
	    (o.block_bytes < TL_BLOCK_MIN_BYTES || o.block_bytes > TL_BLOCK_MAX_BYTES)) {
		tl_log(TL_LOG_ERROR, "block of %zu bytes: expected between %d and %d", o.block_bytes,
		       TL_BLOCK_MIN_BYTES, TL_BLOCK_MAX_BYTES);
		rc = -EINVAL;
		goto out;
	}
	size_t block = buffered ? tl_pool_block_size(bytes, o.block_bytes) : 0;
	if (buffered && bytes / block < 2) {
		tl_log(TL_LOG_ERROR, "buffer of %zu bytes: too small for blocks of %zu bytes; the "
		       "minimum is two blocks, %zu bytes", bytes, block, 2 * block);
		rc = -EINVAL;
		goto out;
	}
	if (o.categories && (rc = tl_category_set_filter(o.categories)) != 0) {
		tl_log(TL_LOG_ERROR, "category filter '%s' is too long", o.categories);
		goto out;
	}

	pthread_once(&atfork_once, register_atfork);
	tl_clock_init(o.clock == TL_CLOCK_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_BOOTTIME, tsc);
	membarrier_setup();
	tl_pid = getpid();
	if (o.process_name) {
		/* as tl_process_set_name: the trace's name and the main thread's comm */
		process_name_store(o.process_name);
		main_thread_comm(o.process_name);
	} else if (tl_process_name[0] == '\0')
		process_name_from_comm();

	memset(&tl_active, 0, sizeof tl_active);
	tl_active.ops = ops;
	tl_active.buffer_bytes = bytes;
	rc = ops->start(&tl_active, &o);
	if (rc) {
		tl_log(TL_LOG_ERROR, "%s recorder: cannot start: %s", ops->name, strerror(-rc));
		goto out;
	}
	tl_threads_session_start();
	atomic_store(&tl_blocks_torn, 0);
	atomic_store(&last_unmatched_begin, 0);
	atomic_store(&last_unmatched_end, 0);
	tl_state_set(next_epoch());
	tl_categories_set_running(true);
out:
	pthread_mutex_unlock(&life_lock);
	return rc;
}

void tl_shutdown(void)
{
	pthread_mutex_lock(&life_lock);
	if (atomic_load(&tl_state) == 0) {
		pthread_mutex_unlock(&life_lock);
		return;
	}
	tl_categories_set_running(false);
	tl_state_set(0);
	membarrier_all();
	tl_threads_log_refusals();
	if (tl_threads_wait_idle(SHUTDOWN_WAIT_NS) == 0) {
		tl_active.ops->stop(&tl_active);
	} else {
		/* A writer is stuck inside an emit (stopped by a debugger, or a
		 * signal handler that never returned): keep its memory mapped. */
		tl_log(TL_LOG_WARNING, "shutdown: a thread is still writing after %d ms; the "
				       "buffer is left mapped",
		       SHUTDOWN_WAIT_NS / 1000000);
	}
	pthread_mutex_unlock(&life_lock);
}

int tl_flush(void)
{
	pthread_mutex_lock(&life_lock);
	int rc = -ENODEV;
	if (atomic_load(&tl_state) != 0)
		rc = tl_active.ops->flush ? tl_active.ops->flush(&tl_active) : 0;
	pthread_mutex_unlock(&life_lock);
	return rc;
}

bool tl_is_running(void)
{
	return atomic_load_explicit(&tl_state, memory_order_relaxed) != 0;
}

const char *tl_recorder_name(void)
{
	return tl_is_running() ? tl_active.ops->name : NULL;
}

void tl_recorder_mark_full(void)
{
	uint32_t state = atomic_load(&tl_state);
	while (state && !(state & TL_STATE_FULL) &&
	       !atomic_compare_exchange_weak(&tl_state, &state, state | TL_STATE_FULL))
		;
	/* No epoch has the FULL bit: whatever the forms' state words hold,
	 * or-ing it in sends every fast form to the slow path (also when a
	 * shutdown has just stored 0). */
	atomic_fetch_or(&tl_tsc_state, TL_STATE_FULL);
	atomic_fetch_or(&tl_vdso_state, TL_STATE_FULL);
}

/* ---- stats --------------------------------------------------------------------------- */

void tl_stats_note_export(uint64_t unmatched_begin, uint64_t unmatched_end)
{
	atomic_store(&last_unmatched_begin, unmatched_begin);
	atomic_store(&last_unmatched_end, unmatched_end);
}

/* Async-signal-safe: atomics and a walk of the pool. */
void tl_stats_collect(tl_stats *out)
{
	size_t size = out->struct_size;
	tl_stats st;
	memset(&st, 0, sizeof st);
	st.struct_size = size;
	uint32_t state = atomic_load(&tl_state);
	tl_threads_counters(&st.events_dropped, &st.strings_truncated, &st.args_dropped);
	st.events_dropped += tl_categories_dropped();
	st.blocks_torn = atomic_load(&tl_blocks_torn);
	st.unmatched_begin = atomic_load(&last_unmatched_begin);
	st.unmatched_end = atomic_load(&last_unmatched_end);
	st.threads = tl_threads_registered();
	st.categories = tl_category_count();
	if (state) {
		st.recorder = tl_active.ops->name;
		st.buffer_bytes = tl_active.buffer_bytes;
		const struct tl_pool *pool = tl_recorder_blocks();
		if (pool) {
			uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_acquire);
			uint64_t present = 0, used = (uint64_t)handed * pool->block_bytes;
			for (uint32_t i = 0; i < tl_pool_visible(pool, handed); i++) {
				const struct tl_block *b = tl_pool_visible_block(pool, handed, i);
				if (i >= handed) { /* a thread's reserve block (ring) */
					if (atomic_load_explicit(&b->state, memory_order_acquire) ==
					    TL_BLOCK_FREE)
						continue;
					used += TL_POOL_RESERVE_BYTES;
				}
				_Atomic uint64_t *end;
				uint64_t records;
				tl_block_extent(b, &end, &records);
				present += records;
			}
			st.events_overwritten = atomic_load(&pool->overwritten);
			st.events_written = present + st.events_overwritten;
			st.events_dropped += atomic_load(&pool->dropped);
			st.buffer_bytes_used = used;
		}
		/* after the pool's counts, which a recorder may refine */
		if (tl_active.ops->stats)
			tl_active.ops->stats(&tl_active, &st);
	}
	memcpy(out, &st, size < sizeof st ? size : sizeof st);
}

int tl_stats_get(tl_stats *out)
{
	if (!out || out->struct_size < offsetof(tl_stats, recorder) + sizeof(out->recorder))
		return -EINVAL;
	tl_stats_collect(out);
	return 0;
}
