#include "recorder/clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <timeline/timeline.h>

#include "recorder/tracer.h"

_Atomic int tl_clock_use_tsc;
_Atomic clockid_t tl_clock_id = CLOCK_BOOTTIME;

/*
 * Calibration pairs. Slot 0 holds the pair taken at init and is never
 * replaced; the others form a ring. Each slot has a sequence number, odd
 * while it is being written, so a signal-safe reader can skip a torn pair.
 */
static struct {
	_Atomic uint32_t seq;
	_Atomic uint64_t ticks;
	_Atomic int64_t ns;
} pairs[TL_CLOCK_PAIRS];
static _Atomic uint32_t pairs_next = 1; /* next ring slot, in [1, TL_CLOCK_PAIRS) */
static _Atomic uint32_t pairs_used;     /* slots ever written */
static _Atomic int64_t pairs_last_ns;
static atomic_flag pairs_writing = ATOMIC_FLAG_INIT;

static int64_t read_ns(void)
{
	struct timespec ts;
	clock_gettime(tl_clock_id_get(), &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if TL_HAVE_TSC
/* Reads a small file into buf (NUL-terminated); returns the length or -1. */
static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t got;
	while (n + 1 < size && (got = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

static int has_word(const char *text, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = text; (p = strstr(p, word)) != NULL; p += len) {
		int starts = p == text || p[-1] == ' ' || p[-1] == '\t';
		int ends = p[len] == ' ' || p[len] == '\n' || p[len] == '\0';
		if (starts && ends)
			return 1;
	}
	return 0;
}
#endif

/*
 * The TSC rule: timestamps are TSC ticks only where the kernel itself
 * trusts the TSC, that is where its current clocksource is "tsc" (the
 * kernel checked it against other clocks at boot and keeps watching it) and
 * the CPU says the TSC is invariant (constant_tsc: one rate whatever the
 * frequency; nonstop_tsc: it runs in deep idle states). Everywhere else, a
 * VM booted with tsc=unstable running kvm-clock among them, the clock is
 * read through the vDSO. TIMELINE_NO_TSC=1 or tl_options.no_tsc force the
 * vDSO path where the TSC would be usable; TIMELINE_FORCE_TSC=1 forces the
 * TSC path where the kernel does not trust an invariant TSC, so that both
 * paths are tested on every machine that has a TSC.
 */
int tl_clock_tsc_invariant(void)
{
#if TL_HAVE_TSC
	/* The flags line of the first CPU is enough: they are identical. */
	static char cpuinfo[16384];
	if (read_small_file("/proc/cpuinfo", cpuinfo, sizeof cpuinfo) <= 0)
		return 0;
	char *flags = strstr(cpuinfo, "\nflags");
	if (!flags)
		return 0;
	char *eol = strchr(flags + 1, '\n');
	if (eol)
		*eol = '\0';
	return has_word(flags, "constant_tsc") && has_word(flags, "nonstop_tsc");
#else
	return 0;
#endif
}

int tl_clock_tsc_usable(void)
{
#if TL_HAVE_TSC
	char source[64];
	if (read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			    source, sizeof source) <= 0 ||
	    strncmp(source, "tsc", 3) != 0 || (source[3] != '\n' && source[3] != '\0'))
		return 0;
	return tl_clock_tsc_invariant();
#else
	return 0;
#endif
}

tl_clock_pair tl_clock_calibrate(int store, int64_t min_interval_ns)
{
	tl_clock_pair best = {0, 0};
	if (store && atomic_load(&pairs_used)) {
		/* one read decides whether the last stored pair is recent enough */
		int64_t now = read_ns();
		if (now - atomic_load_explicit(&pairs_last_ns, memory_order_relaxed) <
		    min_interval_ns) {
			best.ns = now;
			best.ticks = tl_clock_tsc_chosen() ? tl_clock_read() : (uint64_t)now;
			return best;
		}
	}
	if (!tl_clock_tsc_chosen()) {
		best.ns = read_ns();
		best.ticks = (uint64_t)best.ns;
		return best;
	}
#if TL_HAVE_TSC
	uint64_t best_span = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t before = __rdtsc();
		int64_t ns = read_ns();
		uint64_t after = __rdtsc();
		if (after - before < best_span) {
			best_span = after - before;
			best.ticks = before + (after - before) / 2;
			best.ns = ns;
		}
	}
#endif
	if (!store)
		return best;
	if (atomic_flag_test_and_set_explicit(&pairs_writing, memory_order_acquire))
		return best; /* another thread is storing one right now */
	uint32_t slot = 0;
	if (atomic_load(&pairs_used)) {
		slot = atomic_load_explicit(&pairs_next, memory_order_relaxed);
		atomic_store_explicit(&pairs_next, slot + 1 < TL_CLOCK_PAIRS ? slot + 1 : 1,
				      memory_order_relaxed);
	}
	uint32_t seq = atomic_load_explicit(&pairs[slot].seq, memory_order_relaxed);
	atomic_store_explicit(&pairs[slot].seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&pairs[slot].ticks, best.ticks, memory_order_relaxed);
	atomic_store_explicit(&pairs[slot].ns, best.ns, memory_order_relaxed);
	atomic_store_explicit(&pairs[slot].seq, seq + 2, memory_order_release);
	uint32_t used = atomic_load(&pairs_used);
	if (used < TL_CLOCK_PAIRS)
		atomic_store(&pairs_used, used + 1);
	atomic_store_explicit(&pairs_last_ns, best.ns, memory_order_relaxed);
	atomic_flag_clear_explicit(&pairs_writing, memory_order_release);
	return best;
}

/* Chooses the clock for the session, once: the emitters read the choice
 * (tl_clock_use_tsc) to pick their path's form, and tl_state_set publishes
 * it in the forms' state words (session.h). */
void tl_clock_init(clockid_t id, tl_clock_tsc_mode tsc)
{
	atomic_store_explicit(&tl_clock_id, id, memory_order_relaxed);
	tl_clock_use_tsc = tsc == TL_CLOCK_TSC_FORCED ? tl_clock_tsc_invariant()
	                   : tsc == TL_CLOCK_TSC_AUTO ? tl_clock_tsc_usable()
	                                              : 0;
	atomic_fetch_add_explicit(&tl_clock_generation, 1, memory_order_relaxed);
	for (int i = 0; i < TL_CLOCK_PAIRS; i++)
		atomic_store(&pairs[i].seq, 0);
	atomic_store(&pairs_used, 0);
	atomic_store(&pairs_next, 1);
	tl_clock_calibrate(1, 0);
}

void tl_clock_after_fork_child(void)
{
	atomic_flag_clear(&pairs_writing);
}

int tl_clock_is_tsc(void)
{
	return tl_clock_tsc_chosen();
}

int64_t tl_clock_now_ns(void)
{
	return read_ns();
}

size_t tl_clock_pairs(tl_clock_pair *out, size_t max)
{
	size_t n = 0;
	uint32_t used = atomic_load_explicit(&pairs_used, memory_order_acquire);
	for (uint32_t i = 0; i < used && i < TL_CLOCK_PAIRS && n < max; i++) {
		uint32_t s1 = atomic_load_explicit(&pairs[i].seq, memory_order_acquire);
		tl_clock_pair p;
		p.ticks = atomic_load_explicit(&pairs[i].ticks, memory_order_relaxed);
		p.ns = atomic_load_explicit(&pairs[i].ns, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		uint32_t s2 = atomic_load_explicit(&pairs[i].seq, memory_order_relaxed);
		if ((s1 & 1) || s1 != s2 || s1 == 0)
			continue;
		/* insertion sort by ticks: at most TL_CLOCK_PAIRS entries */
		size_t j = n++;
		while (j > 0 && out[j - 1].ticks > p.ticks) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = p;
	}
	return n;
}

static int64_t clamp_u64_to_i64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* dns / span, the estimate scale() starts from. */
static double rate_of(uint64_t dns, uint64_t span)
{
	return (double)dns / (double)span;
}

/* round(dt * dns / span), saturated to UINT64_MAX; rate: rate_of(dns, span). */
static uint64_t scale(uint64_t dt, uint64_t dns, uint64_t span, double rate)
{
#ifdef __SIZEOF_INT128__
	unsigned __int128 x = (unsigned __int128)dt * dns + span / 2;
	/*
	 * Below 2^50 a double's quotient is within 1 of the exact one: made
	 * exact with two products, it costs a fraction of the 128-bit division
	 * (the exporters convert every timestamp of a trace, several times).
	 */
	double estimate = (double)dt * rate + 0.5;
	if (estimate < 0x1p50) {
		uint64_t q = (uint64_t)estimate;
		while (q && (unsigned __int128)q * span > x)
			q--;
		while ((unsigned __int128)(q + 1) * span <= x)
			q++;
		return q;
	}
	unsigned __int128 step = x / span;
	return step > UINT64_MAX ? UINT64_MAX : (uint64_t)step;
#else
	(void)rate;
	long double step = (long double)dt * (long double)dns / (long double)span + 0.5L;
	return step >= 0x1p64L ? UINT64_MAX : (uint64_t)step;
#endif
}

/* base + step (or - step), saturated to the int64 range. */
static int64_t offset_saturated(int64_t base, uint64_t step, int negative)
{
	if (negative) {
		uint64_t room = (uint64_t)base - (uint64_t)INT64_MIN;
		return step > room ? INT64_MIN : (int64_t)((uint64_t)base - step);
	}
	uint64_t room = (uint64_t)INT64_MAX - (uint64_t)base;
	return step > room ? INT64_MAX : (int64_t)((uint64_t)base + step);
}

/* |b.ns - a.ns|, and whether b.ns >= a.ns. */
static uint64_t ns_distance(const tl_clock_pair *a, const tl_clock_pair *b, int *rising)
{
	*rising = b->ns >= a->ns;
	return *rising ? (uint64_t)b->ns - (uint64_t)a->ns : (uint64_t)a->ns - (uint64_t)b->ns;
}

/*
 * The ns value of tick t on the line through a and b (a.ticks <= b.ticks),
 * rounded to the nearest ns and clamped to the int64 range; exact at a and
 * b. When a and b share a tick value, one tick counts as one ns from a.
 * rate: rate_of the pairs' distances (unused when they share a tick value).
 */
static int64_t interpolate(uint64_t t, const tl_clock_pair *a, const tl_clock_pair *b, double rate)
{
	int forward = t >= a->ticks;
	uint64_t dt = forward ? t - a->ticks : a->ticks - t;
	if (a->ticks == b->ticks)
		return offset_saturated(a->ns, dt, !forward);
	int rising;
	uint64_t dns = ns_distance(a, b, &rising);
	return offset_saturated(a->ns, scale(dt, dns, b->ticks - a->ticks, rate),
	                        forward != rising);
}

static double segment_rate(const tl_clock_pair *a, const tl_clock_pair *b)
{
	int rising;
	return a->ticks == b->ticks ? 0 : rate_of(ns_distance(a, b, &rising), b->ticks - a->ticks);
}

/* The last pair at or before ticks, kept below the last pair (n >= 2). */
static size_t segment_of(const tl_clock_pair *p, size_t n, uint64_t ticks)
{
	size_t lo = 0, hi = n - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int64_t tl_clock_ticks_to_ns(const tl_clock_pair *p, size_t n, uint64_t ticks)
{
	if (n == 0)
		return clamp_u64_to_i64(ticks);
	if (n == 1)
		return interpolate(ticks, &p[0], &p[0], 0);
	size_t lo = segment_of(p, n, ticks);
	return interpolate(ticks, &p[lo], &p[lo + 1], segment_rate(&p[lo], &p[lo + 1]));
}

void tl_clock_converter_init(tl_clock_converter *c, const tl_clock_pair *p, size_t n)
{
	c->pairs = p;
	c->n = n;
	c->segment = SIZE_MAX;
	c->rate = 0;
}

int64_t tl_clock_converter_ns(tl_clock_converter *c, uint64_t ticks)
{
	const tl_clock_pair *p = c->pairs;
	size_t n = c->n, lo = c->segment;
	if (n < 2)
		return tl_clock_ticks_to_ns(p, n, ticks);
	/* the segment segment_of would find: at most one satisfies this */
	if (lo == SIZE_MAX || (lo > 0 && p[lo].ticks > ticks) ||
	    (lo + 2 < n && ticks >= p[lo + 1].ticks)) {
		lo = segment_of(p, n, ticks);
		c->segment = lo;
		c->rate = segment_rate(&p[lo], &p[lo + 1]);
	}
	return interpolate(ticks, &p[lo], &p[lo + 1], c->rate);
}

tl_timestamp tl_now(void)
{
	return tl_clock_read();
}

int64_t tl_now_ns(void)
{
	return read_ns();
}

/* The exact conversion: the stored pairs and one taken now, newest (it
 * keeps "now" exact), gathered once for the n timestamps. */
void tl_timestamps_to_ns(const tl_timestamp *raw, int64_t *ns, size_t n)
{
	if (n == 0)
		return;
	if (!tl_clock_tsc_chosen()) {
		for (size_t i = 0; i < n; i++)
			ns[i] = (int64_t)raw[i];
		return;
	}
	tl_clock_pair now = tl_clock_calibrate(0, 0);
	tl_clock_pair p[TL_CLOCK_PAIRS + 1];
	size_t np = tl_clock_pairs(p, TL_CLOCK_PAIRS);
	p[np++] = now;
	for (size_t i = 0; i < n; i++)
		ns[i] = tl_clock_ticks_to_ns(p, np, raw[i]);
}

int64_t tl_timestamp_to_ns(tl_timestamp ts)
{
	int64_t ns;
	tl_timestamps_to_ns(&ts, &ns, 1);
	return ns;
}
