/*
 * Per-thread state: the slot table, registration on a thread's first event,
 * the reserve slow path (new session, full block), thread
 * names, thread exit.
 */
#include <errno.h>
#include <stdbool.h>
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

struct tl_slot tl_slots[TL_NEST_LEVELS * TL_MAX_THREADS];
/* cur == limit: never has room, so a thread without a block takes the slow path */
struct tl_block tl_block_none = {.cur = tl_block_none.data, .limit = tl_block_none.data};

/* A new calibration pair at most this often, when a thread changes block. */
#define TL_CALIBRATION_INTERVAL_NS 1000000000

/* Created when the library is loaded: registration calls no pthread_once. */
static pthread_key_t exit_key;
static int exit_key_ok;
static _Atomic uint64_t exit_counter;
/* Threads refused a slot because the table was full (logged at shutdown). */
static _Atomic uint64_t refused_threads;
/* Slots given back by exited threads (or by fork, in the child): moves
 * after the slot is free to claim. */
static _Atomic uint64_t slots_freed;
/* Set once this thread has exited: events of later TLS destructors are
 * not kept. */
static __thread int thread_gone;
/* Set when the table was full at this thread's last attempt, which saw
 * slots_freed at refused_at: it tries again only once a slot was given
 * back since, so that its events cost one load while the table stays
 * full. */
static __thread int slot_refused;
static __thread uint64_t refused_at;
/* Set while this thread registers, with signals blocked: an event from a
 * handler that runs anyway (a fault's) is dropped and counted. */
static __thread volatile sig_atomic_t slot_registering;

/* One more than the highest index of a row-0 slot ever claimed: the
 * slots above it have never been used (tl_threads_slots_used). */
static _Atomic uint32_t slots_used;
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

/* Empties a slot of any level for a new thread: no block, no session, its
 * counters moved to the recycled totals. */
static void slot_reset(struct tl_slot *slot)
{
	add(&recycled_dropped, atomic_exchange(&slot->dropped, 0));
	add(&recycled_truncated, atomic_exchange(&slot->truncated, 0));
	add(&recycled_args_dropped, atomic_exchange(&slot->args_dropped, 0));
	atomic_store(&slot->pos, 0); /* not busy */
	tl_slot_use_block(slot, &tl_block_none);
	slot->epoch = 0;
}

static void thread_exit(void *arg)
{
	struct tl_slot *slot = arg;
	/* Every level busy, as in an emit, while the blocks are let go: a
	 * signal handler that runs meanwhile finds no level free and counts
	 * its event as dropped. */
	for (unsigned level = 0; level < TL_NEST_LEVELS; level++) {
		struct tl_slot *s = tl_slot_nested(slot, level);
		atomic_store_explicit(&s->pos,
				      atomic_load_explicit(&s->pos, memory_order_relaxed) | TL_SLOT_BUSY,
				      memory_order_relaxed);
	}
	atomic_thread_fence(memory_order_seq_cst);
	/* the session's FULL bit (a startup recorder that stopped) does not
	 * make its blocks any less the session's */
	uint32_t session = atomic_load(&tl_state) & ~TL_STATE_FULL;
	for (unsigned level = 0; level < TL_NEST_LEVELS; level++) {
		struct tl_slot *s = tl_slot_nested(slot, level);
		struct tl_block *block = s->block;
		if (s->epoch == session && block != &tl_block_none) {
			tl_slot_publish(s);
			tl_active.ops->retire_block(&tl_active, block);
		}
		tl_slot_use_block(s, &tl_block_none);
	}
	for (unsigned level = TL_NEST_LEVELS; level-- > 0;)
		tl_slot_leave(tl_slot_nested(slot, level));

	atomic_store(&slot->exit_order, atomic_fetch_add(&exit_counter, 1) + 1);
	atomic_store_explicit(&slot->alive, 0, memory_order_release);
	atomic_fetch_add_explicit(&slots_freed, 1, memory_order_release);
	tl_self = &tl_slot_none;
	thread_gone = 1; /* events from later TLS destructors are not kept */
}

__attribute__((constructor)) static void make_exit_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

/*
 * Whether setting the exit key on a thread may allocate: glibc keeps the
 * values of keys 0 to 31 in the thread itself, and those of later keys in
 * blocks it allocates (calloc) on a thread's first use. The key is created
 * when the library is loaded, so it is one of the first 32 unless the
 * process had created 32 keys before (the library loaded late, with
 * dlopen). Then a thread's first event calls calloc, which a signal
 * handler must not (docs/architecture.md, "What a signal handler may do").
 */
static bool exit_key_may_allocate(void)
{
#ifdef __GLIBC__
	return exit_key_ok && (unsigned long)exit_key >= 32;
#else
	return false; /* musl and bionic keep every key's value in the thread */
#endif
}

/*
 * Claims a slot with one compare-and-swap on its `alive` word: a
 * never-used slot first, else the one whose thread exited first (its name
 * stays in snapshots the longest). No lock: a signal handler's first event
 * registers its thread the same way.
 */
/* Raises slots_used to cover s (lock-free: a signal handler registers
 * its thread the same way). */
static struct tl_slot *slot_note_used(struct tl_slot *s)
{
	uint32_t used = (uint32_t)(s - tl_slots) + 1;
	uint32_t seen = atomic_load_explicit(&slots_used, memory_order_relaxed);
	while (seen < used &&
	       !atomic_compare_exchange_weak_explicit(&slots_used, &seen, used,
	                                              memory_order_release, memory_order_relaxed))
		;
	return s;
}

static struct tl_slot *slot_claim(void)
{
	for (int attempt = 0; attempt < 64; attempt++) {
		struct tl_slot *oldest = NULL;
		uint64_t oldest_order = UINT64_MAX;
		for (size_t i = 0; i < TL_MAX_THREADS; i++) {
			struct tl_slot *s = &tl_slots[i];
			if (atomic_load_explicit(&s->alive, memory_order_acquire))
				continue;
			if (atomic_load_explicit(&s->tid, memory_order_relaxed) == 0) {
				uint32_t dead = 0;
				if (atomic_compare_exchange_strong(&s->alive, &dead, 1))
					return slot_note_used(s);
				continue;
			}
			uint64_t order = atomic_load(&s->exit_order);
			if (order != 0 && order < oldest_order) {
				oldest = s;
				oldest_order = order;
			}
		}
		if (!oldest)
			return NULL;
		uint32_t dead = 0;
		if (atomic_compare_exchange_strong(&oldest->alive, &dead, 1))
			return slot_note_used(oldest);
	}
	return NULL;
}

struct tl_slot *tl_thread_slot(void)
{
	struct tl_slot *slot = tl_self;
	if (TL_LIKELY(slot != &tl_slot_none))
		return slot;
	if (thread_gone || slot_registering || !exit_key_ok ||
	    (slot_refused &&
	     atomic_load_explicit(&slots_freed, memory_order_acquire) == refused_at)) {
		add(&tl_unregistered_dropped, 1);
		return NULL;
	}
	/* Signals wait until the thread is registered: a handler that would
	 * have interrupted the registration then records its events. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (tl_self != &tl_slot_none) {
		/* a handler that ran before the mask registered the thread */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return tl_self;
	}
	slot_registering = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* read before the walk: a slot given back during it makes the next
	 * event try again */
	uint64_t freed = atomic_load_explicit(&slots_freed, memory_order_acquire);
	slot = slot_claim();
	if (!slot) {
		if (!slot_refused)
			add(&refused_threads, 1);
		refused_at = freed;
		slot_refused = 1;
		slot_registering = 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		add(&tl_unregistered_dropped, 1);
		return NULL;
	}
	slot_refused = 0;
	uint32_t tid = current_tid();
	for (unsigned level = 0; level < TL_NEST_LEVELS; level++) {
		struct tl_slot *s = tl_slot_nested(slot, level);
		slot_reset(s);
		atomic_store_explicit(&s->tid, tid, memory_order_release);
	}
	atomic_store(&slot->named, 0);
	atomic_store(&slot->exit_order, 0);
	char comm[17] = {0};
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	slot_write_name(slot, comm, strlen(comm));
	/* no lock, no allocation while exit_key_may_allocate() is false */
	pthread_setspecific(exit_key, slot);
	tl_self = slot;
	atomic_signal_fence(memory_order_seq_cst);
	slot_registering = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return slot;
}

void tl_threads_log_refusals(void)
{
	uint64_t n = atomic_exchange(&refused_threads, 0);
	if (n)
		tl_log(TL_LOG_WARNING,
		       "thread table full (%d threads): the events of %llu more threads were "
		       "dropped",
		       TL_MAX_THREADS, (unsigned long long)n);
}

/*
 * The slot a signal handler writes through when its thread's own slot is
 * busy (the handler interrupted an emit): the first free nesting level,
 * entered; NULL, the drop counted, when every level is busy.
 */
struct tl_slot *tl_thread_enter_nested(struct tl_slot *slot, uint64_t *pos)
{
	for (unsigned level = 1; level < TL_NEST_LEVELS; level++) {
		struct tl_slot *s = tl_slot_nested(slot, level);
		if (tl_slot_enter_pos(s, pos))
			return s;
	}
	add(&slot->dropped, 1);
	return NULL;
}

uint32_t tl_threads_slots_used(void)
{
	return atomic_load_explicit(&slots_used, memory_order_acquire);
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
	static bool warned;
	if (!warned && exit_key_may_allocate()) {
		warned = true;
		tl_log(TL_LOG_WARNING,
		       "thread-exit key %lu is past the 32 glibc keeps in each thread: a thread's "
		       "first event allocates, so a signal handler must not make it (emit once on "
		       "each thread before its handlers emit)",
		       (unsigned long)exit_key);
	}
	atomic_store(&recycled_dropped, 0);
	atomic_store(&recycled_truncated, 0);
	atomic_store(&recycled_args_dropped, 0);
	atomic_store(&tl_unregistered_dropped, 0);
	for (size_t i = 0; i < TL_NEST_LEVELS * TL_MAX_THREADS; i++) {
		atomic_store_explicit(&tl_slots[i].dropped, 0, memory_order_relaxed);
		atomic_store_explicit(&tl_slots[i].truncated, 0, memory_order_relaxed);
		atomic_store_explicit(&tl_slots[i].args_dropped, 0, memory_order_relaxed);
	}
}

int tl_threads_wait_idle(int64_t timeout_ns)
{
	struct timespec start, now, pause = {0, 50 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	/* the calling thread's own levels are not waited for */
	size_t self = tl_self != &tl_slot_none ? (size_t)(tl_self - tl_slots) : SIZE_MAX;
	for (;;) {
		int busy = 0;
		for (size_t i = 0; i < TL_NEST_LEVELS * TL_MAX_THREADS; i++)
			if (i % TL_MAX_THREADS != self && tl_slot_busy(&tl_slots[i]))
				busy = 1;
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
	struct tl_slot *self = tl_self != &tl_slot_none ? tl_self : NULL;
	for (size_t i = 0; i < TL_MAX_THREADS; i++) {
		struct tl_slot *s = &tl_slots[i];
		if (s == self)
			continue;
		/* the threads are gone in the child */
		for (unsigned level = 0; level < TL_NEST_LEVELS; level++) {
			struct tl_slot *n = tl_slot_nested(s, level);
			atomic_store(&n->tid, 0);
			atomic_store(&n->pos, atomic_load(&n->pos) & ~TL_SLOT_BUSY);
		}
		atomic_store(&s->alive, 0);
		atomic_store(&s->exit_order, 0);
	}
	atomic_store(&exit_counter, 0);
	atomic_fetch_add(&slots_freed, 1); /* the other threads' slots are free */
	if (self) {
		uint32_t tid = current_tid();
		for (unsigned level = 0; level < TL_NEST_LEVELS; level++) {
			struct tl_slot *n = tl_slot_nested(self, level);
			atomic_store(&n->pos, 0); /* not busy */
			tl_slot_use_block(n, &tl_block_none);
			n->epoch = 0;
			atomic_store(&n->tid, tid);
		}
	}
	tl_threads_session_start();
}

void tl_threads_counters(uint64_t *dropped, uint64_t *truncated, uint64_t *args_dropped)
{
	uint64_t d = atomic_load(&recycled_dropped) + atomic_load(&tl_unregistered_dropped);
	uint64_t t = atomic_load(&recycled_truncated);
	uint64_t a = atomic_load(&recycled_args_dropped);
	for (size_t i = 0; i < TL_NEST_LEVELS * TL_MAX_THREADS; i++) {
		d += atomic_load_explicit(&tl_slots[i].dropped, memory_order_relaxed);
		t += atomic_load_explicit(&tl_slots[i].truncated, memory_order_relaxed);
		a += atomic_load_explicit(&tl_slots[i].args_dropped, memory_order_relaxed);
	}
	*dropped = d;
	*truncated = t;
	*args_dropped = a;
}
