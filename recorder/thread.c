/*
 * Per-thread state: the slot table, registration on a thread's first event,
 * the reserve slow path (new session, full block), thread
 * names, thread exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/atrace_format.h"
#include "recorder/clock.h"
#include "recorder/compiler.h"
#include "recorder/log.h"
#include "recorder/record.h"
#include "recorder/recorder.h"
#include "recorder/session.h"
#include "recorder/slot.h"
#include "recorder/threads.h"

struct tl_slot tl_slots[TL_MAX_THREADS];
/* cur == limit: never has room, so a thread without a block takes the slow path */
struct tl_block tl_block_none = {.cur = tl_block_none.data, .limit = tl_block_none.data};

/* A new calibration pair at most this often, when a thread changes block. */
#define TL_CALIBRATION_INTERVAL_NS 1000000000

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static uint64_t exit_counter; /* under slots_lock */
/* Set when this thread cannot have a slot (table full, or exiting). */
static __thread int slot_refused;
/* Set while this thread registers: an event from a signal handler that
 * interrupts the registration is dropped and counted instead of waiting
 * for the lock its own thread holds. */
static __thread volatile sig_atomic_t slot_registering;

/* Counters of slots that were recycled for another thread. */
static _Atomic uint64_t recycled_dropped, recycled_truncated, recycled_args_dropped;
_Atomic uint64_t tl_unregistered_dropped;

static uint32_t current_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* An atomic add: a signal handler that counts on the same thread, or
 * another thread on a shared counter, cannot lose it. */
static void add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* ---- names ---------------------------------------------------------------- */

static void slot_write_name(struct tl_slot *slot, const char *name, size_t len)
{
	if (len >= TL_NAME_MAX) {
		len = TL_NAME_MAX - 1;
		while (len > 0 && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--;
	}
	uint32_t seq = atomic_load_explicit(&slot->name_seq, memory_order_relaxed);
	atomic_store_explicit(&slot->name_seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (size_t i = 0; i < len; i++)
		__atomic_store_n(&slot->name[i], name[i], __ATOMIC_RELAXED);
	__atomic_store_n(&slot->name[len], '\0', __ATOMIC_RELAXED);
	atomic_store_explicit(&slot->name_seq, seq + 2, memory_order_release);
}

size_t tl_slot_read_name(struct tl_slot *slot, char *out, size_t size)
{
	if (size == 0)
		return 0;
	for (int attempt = 0; attempt < 8; attempt++) {
		uint32_t s1 = atomic_load_explicit(&slot->name_seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		size_t n = 0;
		char c;
		while (n + 1 < size && n < TL_NAME_MAX &&
		       (c = __atomic_load_n(&slot->name[n], __ATOMIC_RELAXED)) != '\0')
			out[n++] = c;
		out[n] = '\0';
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&slot->name_seq, memory_order_relaxed) == s1)
			return n;
	}
	out[0] = '\0';
	return 0;
}

int tl_thread_set_name(const char *name)
{
	if (!name)
		return -EINVAL;
	/* the kernel's comm too, so that every capture shows the name */
	char comm[TL_COMM_MAX + 1];
	if (tl_atrace_comm(comm, name) > 0)
		prctl(PR_SET_NAME, comm, 0, 0, 0);
	struct tl_slot *slot = tl_thread_slot();
	if (!slot)
		return -ENOSPC;
	slot_write_name(slot, name, strlen(name));
	atomic_store_explicit(&slot->named, 1, memory_order_release);
	return 0;
}

/* ---- registration and exit ------------------------------------------------ */

static void thread_exit(void *arg)
{
	struct tl_slot *slot = arg;
	/* busy, as an emit, while the block is let go */
	atomic_store_explicit(&slot->pos,
			      atomic_load_explicit(&slot->pos, memory_order_relaxed) | TL_SLOT_BUSY,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	struct tl_block *block = slot->block;
	/* the session's FULL bit (a startup recorder that stopped) does not
	 * make its blocks any less the session's */
	if (slot->epoch == (atomic_load(&tl_state) & ~TL_STATE_FULL) &&
	    block != &tl_block_none) {
		tl_slot_publish(slot);
		tl_active.ops->retire_block(&tl_active, block);
	}
	tl_slot_use_block(slot, &tl_block_none);
	tl_slot_leave(slot);

	pthread_mutex_lock(&slots_lock);
	atomic_store(&slot->exit_order, ++exit_counter);
	atomic_store(&slot->alive, 0);
	pthread_mutex_unlock(&slots_lock);
	tl_self = &tl_slot_none;
	slot_refused = 1; /* events from later TLS destructors are not kept */
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

/* Picks a never-used slot, else the one whose thread exited first. */
static struct tl_slot *slot_pick(void)
{
	struct tl_slot *oldest = NULL;
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		struct tl_slot *s = &tl_slots[i];
		if (atomic_load_explicit(&s->tid, memory_order_relaxed) == 0)
			return s;
		if (!atomic_load_explicit(&s->alive, memory_order_relaxed) &&
		    (!oldest || atomic_load(&s->exit_order) < atomic_load(&oldest->exit_order)))
			oldest = s;
	}
	if (oldest) {
		add(&recycled_dropped, atomic_load(&oldest->dropped));
		add(&recycled_truncated, atomic_load(&oldest->truncated));
		add(&recycled_args_dropped, atomic_load(&oldest->args_dropped));
	}
	return oldest;
}

struct tl_slot *tl_thread_slot(void)
{
	struct tl_slot *slot = tl_self;
	if (TL_LIKELY(slot != &tl_slot_none))
		return slot;
	if (slot_refused || slot_registering) {
		add(&tl_unregistered_dropped, 1);
		return NULL;
	}
	slot_registering = 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_once(&key_once, make_exit_key);
	pthread_mutex_lock(&slots_lock);
	slot = slot_pick();
	if (slot) {
		atomic_store(&slot->pos, 0); /* not busy */
		tl_slot_use_block(slot, &tl_block_none);
		slot->epoch = 0;
		atomic_store(&slot->dropped, 0);
		atomic_store(&slot->truncated, 0);
		atomic_store(&slot->args_dropped, 0);
		atomic_store(&slot->named, 0);
		atomic_store(&slot->exit_order, 0);
		char comm[17] = {0};
		prctl(PR_GET_NAME, comm, 0, 0, 0);
		slot_write_name(slot, comm, strlen(comm));
		atomic_store(&slot->alive, 1);
		atomic_store_explicit(&slot->tid, current_tid(), memory_order_release);
	}
	pthread_mutex_unlock(&slots_lock);
	if (!slot) {
		slot_registering = 0;
		slot_refused = 1;
		add(&tl_unregistered_dropped, 1);
		tl_log(TL_LOG_WARNING, "thread table full (%d threads): events of thread %u dropped",
		       TL_MAX_THREADS, current_tid());
		return NULL;
	}
	pthread_setspecific(exit_key, slot);
	tl_self = slot;
	atomic_signal_fence(memory_order_seq_cst);
	slot_registering = 0;
	return slot;
}

uint32_t tl_threads_registered(void)
{
	uint32_t n = 0;
	for (size_t i = 0; i < TL_MAX_THREADS; i++)
		n += atomic_load_explicit(&tl_slots[i].tid, memory_order_relaxed) != 0;
	return n;
}

/* ---- the slow path ------------------------------------------------------------ */

static _Atomic uint64_t *refuse(struct tl_slot *slot, int counted)
{
	if (counted)
		add(&slot->dropped, 1);
	tl_slot_leave(slot);
	return NULL;
}

bool tl_thread_session_enter(struct tl_slot *slot)
{
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_acquire);
	if (state == 0)
		return false; /* not running: ignored */
	if (state & TL_STATE_FULL) {
		add(&slot->dropped, 1);
		return false;
	}
	if (slot->epoch != state) {
		/* first event of this session: the old block belongs to a pool
		 * that is gone */
		tl_slot_use_block(slot, &tl_block_none);
		slot->epoch = state;
	}
	return true;
}

_Atomic uint64_t *tl_thread_reserve_slow(struct tl_slot *slot, size_t words)
{
	if (words > TL_REC_MAX_WORDS)
		return refuse(slot, 1);
	struct tl_block *block = slot->block;
	_Atomic uint64_t *p = tl_slot_cur(slot);
	if (block != &tl_block_none && (size_t)(slot->limit - p) >= words)
		return p;
	block = tl_active.ops->next_block(&tl_active, slot);
	if (!block) {
		tl_slot_use_block(slot, &tl_block_none);
		return refuse(slot, 1);
	}
	tl_slot_use_block(slot, block);
	/* keeps the tick-to-ns conversion piecewise over long runs */
	tl_clock_calibrate(1, TL_CALIBRATION_INTERVAL_NS);
	p = atomic_load_explicit(&block->cur, memory_order_relaxed);
	if ((size_t)(block->limit - p) < words)
		return refuse(slot, 1);
	return p;
}

/* ---- sessions and fork --------------------------------------------------------- */

void tl_threads_session_start(void)
{
	atomic_store(&recycled_dropped, 0);
	atomic_store(&recycled_truncated, 0);
	atomic_store(&recycled_args_dropped, 0);
	atomic_store(&tl_unregistered_dropped, 0);
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		atomic_store_explicit(&tl_slots[i].dropped, 0, memory_order_relaxed);
		atomic_store_explicit(&tl_slots[i].truncated, 0, memory_order_relaxed);
		atomic_store_explicit(&tl_slots[i].args_dropped, 0, memory_order_relaxed);
	}
}

int tl_threads_wait_idle(int64_t timeout_ns)
{
	struct timespec start, now, pause = {0, 50 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int busy = 0;
		for (size_t i = 0; i < TL_MAX_THREADS; i++) {
			struct tl_slot *s = &tl_slots[i];
			if (s != tl_self && tl_slot_busy(s))
				busy = 1;
		}
		if (!busy)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t waited = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000 +
				 (now.tv_nsec - start.tv_nsec);
		if (waited > timeout_ns)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

void tl_threads_after_fork_child(void)
{
	pthread_mutex_init(&slots_lock, NULL);
	struct tl_slot *self = tl_self != &tl_slot_none ? tl_self : NULL;
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		struct tl_slot *s = &tl_slots[i];
		if (s == self)
			continue;
		/* the threads are gone in the child */
		atomic_store(&s->tid, 0);
		atomic_store(&s->alive, 0);
		atomic_store(&s->pos, atomic_load(&s->pos) & ~TL_SLOT_BUSY);
	}
	if (self) {
		atomic_store(&self->pos, 0); /* not busy */
		tl_slot_use_block(self, &tl_block_none);
		self->epoch = 0;
		atomic_store(&self->tid, current_tid());
	}
	tl_threads_session_start();
}

void tl_threads_counters(uint64_t *dropped, uint64_t *truncated, uint64_t *args_dropped)
{
	uint64_t d = atomic_load(&recycled_dropped) + atomic_load(&tl_unregistered_dropped);
	uint64_t t = atomic_load(&recycled_truncated);
	uint64_t a = atomic_load(&recycled_args_dropped);
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		d += atomic_load_explicit(&tl_slots[i].dropped, memory_order_relaxed);
		t += atomic_load_explicit(&tl_slots[i].truncated, memory_order_relaxed);
		a += atomic_load_explicit(&tl_slots[i].args_dropped, memory_order_relaxed);
	}
	*dropped = d;
	*truncated = t;
	*args_dropped = a;
}
