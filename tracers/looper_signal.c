/*
 * A signal that dumps the recorder: the handler writes a binary snapshot to
 * <dir>/dump-<pid>-<n>.tlsnap with tl_snapshot_binary (async-signal-safe: a
 * temporary file written, fsync'd and renamed, so a full disk leaves no
 * partial dump), then chains to the previous handler. The file name is
 * built by hand: snprintf is not async-signal-safe.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <timeline/looper.h>
#include <timeline/timeline.h>

#include "recorder/tracer.h"
#include "tracers/decimal.h"

#define DIR_MAX 200
#define ALT_STACK_BYTES (64 * 1024)

/* Two directory buffers: the handler reads the one `dir_current` names,
 * tl_set_dump_directory fills the other and then flips the index. */
static char dirs[2][DIR_MAX + 1] = {".", "."};
static _Atomic int dir_current;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static int installed_signo; /* under install_lock; 0 when none */
static struct sigaction previous;
static void *alt_stack;
static _Atomic uint64_t dumps, failures, counter;

int tl_set_dump_directory(const char *dir)
{
	if (!dir || !*dir || strlen(dir) > DIR_MAX)
		return -EINVAL;
	int rc = tl_private_directory(dir);
	if (rc)
		return rc;
	pthread_mutex_lock(&install_lock);
	int next = !atomic_load(&dir_current);
	memcpy(dirs[next], dir, strlen(dir) + 1);
	atomic_store(&dir_current, next);
	pthread_mutex_unlock(&install_lock);
	return 0;
}

static size_t put_str(char *out, const char *s)
{
	size_t n = strlen(s);
	memcpy(out, s, n);
	return n;
}

static void dump(void)
{
	char path[DIR_MAX + 64];
	size_t n = put_str(path, dirs[atomic_load(&dir_current)]);
	n += put_str(path + n, "/dump-");
	n += tracer_decimal_u64(path + n, (uint64_t)getpid());
	path[n++] = '-';
	n += tracer_decimal_u64(path + n, atomic_fetch_add(&counter, 1) + 1);
	n += put_str(path + n, ".tlsnap");
	path[n] = '\0';
	/* the directory still ours alone (lstat, async-signal-safe) */
	if (tl_private_directory(dirs[atomic_load(&dir_current)]) != 0) {
		atomic_fetch_add(&failures, 1);
		return;
	}
	/* whole or not at all: a temporary file, synced and renamed */
	if (tl_snapshot_binary(path) != 0) {
		atomic_fetch_add(&failures, 1);
		return;
	}
	atomic_fetch_add(&dumps, 1);
}

static void handler(int signo, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	dump();
	errno = saved_errno;
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction)
			previous.sa_sigaction(signo, info, context);
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(signo);
	}
}

int tl_install_dump_signal(int signo)
{
	if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
		return -EINVAL;
	pthread_mutex_lock(&install_lock);
	int rc = 0;
	if (installed_signo) {
		rc = -EBUSY;
		goto out;
	}
	if ((rc = tl_private_directory(dirs[atomic_load(&dir_current)])) != 0)
		goto out;
	if (!alt_stack && !(alt_stack = malloc(ALT_STACK_BYTES))) {
		rc = -ENOMEM;
		goto out;
	}
	stack_t ss = {.ss_sp = alt_stack, .ss_size = ALT_STACK_BYTES};
	if (sigaltstack(&ss, NULL) != 0) {
		rc = -errno;
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, &previous) != 0) {
		rc = -errno;
		goto out;
	}
	installed_signo = signo;
out:
	pthread_mutex_unlock(&install_lock);
	return rc;
}

int tl_uninstall_dump_signal(void)
{
	pthread_mutex_lock(&install_lock);
	int rc = -ENOENT;
	if (installed_signo) {
		rc = sigaction(installed_signo, &previous, NULL) == 0 ? 0 : -errno;
		installed_signo = 0;
	}
	pthread_mutex_unlock(&install_lock);
	return rc;
}

int tl_dump_signal_stats_get(tl_dump_signal_stats *out)
{
	if (!out || out->struct_size < offsetof(tl_dump_signal_stats, failures) + sizeof out->failures)
		return -EINVAL;
	out->dumps = atomic_load(&dumps);
	out->failures = atomic_load(&failures);
	return 0;
}
