/*
 * Statistics over frames: nearest-rank percentiles, and the statistics of
 * presented frames used by `timeline fps` (formulas in docs/frame.md).
 */
#include "tracers/frame_stats.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int64_t tl_frame_percentile(const int64_t *sorted, size_t n, unsigned pct)
{
	if (n == 0)
		return 0;
	size_t rank = ((size_t)pct * n + 99) / 100;
	return sorted[rank ? rank - 1 : 0];
}

static int compare_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Moves the k-th smallest of v[0..n) to v[k], smaller ones before it and
 * larger ones after (Hoare's selection; expected linear time). */
static void select_kth(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				int64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

/* Moves the values of v[0..n) below pivot (or_equal: at or below) to the
 * front, the others after them, through tmp[n] without a data-dependent
 * branch; returns how many went to the front. */
static inline size_t partition_below(int64_t *v, int64_t *tmp, size_t n, int64_t pivot,
                                     bool or_equal)
{
	size_t front = 0, back = n;
	for (size_t i = 0; i < n; i++) {
		int64_t x = v[i];
		size_t below = or_equal ? x <= pivot : x < pivot;
		tmp[front] = x;
		tmp[back - 1] = x;
		front += below;
		back -= 1 - below;
	}
	memcpy(v, tmp, n * sizeof *v);
	return front;
}

static int64_t median3(int64_t a, int64_t b, int64_t c)
{
	if (a > b) {
		int64_t t = a;
		a = b;
		b = t;
	}
	return c <= a ? a : c >= b ? b : c;
}

/* select_kth with branch-free partitions (random data mispredicts half of
 * Hoare's comparisons); tmp holds n values. */
static void select_kth_buffered(int64_t *v, int64_t *tmp, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		int64_t *a = v + lo;
		size_t m = hi - lo;
		int64_t pivot = median3(a[0], a[m / 2], a[m - 1]);
		size_t below = partition_below(a, tmp, m, pivot, false);
		if (k - lo < below) {
			hi = lo + below;
			continue;
		}
		/* the pivot's equals, then the larger values */
		size_t upto = below + partition_below(a + below, tmp, m - below, pivot, true);
		if (k - lo < upto)
			return; /* v[k] == pivot */
		lo += upto;
	}
}

/* Values within this many of the window's low end are counted, not moved;
 * the window starts this far under the sample median. */
#define COUNT_WINDOW 256
#define COUNT_UNDER 64
/* Counts spread over this many arrays (in turn), so that equal values in a
 * row do not wait on each other's increments. */
#define COUNT_WAYS 4
/* Past this share of n outside the window, counting gives up. */
#define COUNT_OUTSIDE_SHIFT 3

static int64_t median3(int64_t a, int64_t b, int64_t c);

/*
 * tl_frame_percentiles for values packed close together (frame times of a
 * steady source): a count per value of a window around a sample median,
 * the few values outside it sorted apart. The same nearest-rank values, in
 * one pass over values (left as they are). False when too many values fall
 * outside the window (or out of memory): nothing is written then.
 */
static bool percentiles_counted(const int64_t *values, size_t n, const unsigned *pcts, size_t npcts,
                                int64_t *out, int64_t *tmp)
{
	uint32_t ways[COUNT_WAYS][COUNT_WINDOW];
	memset(ways, 0, sizeof ways);
	int64_t mid = median3(values[0], values[n / 2], values[n - 1]);
	if (mid < INT64_MIN + COUNT_UNDER)
		return false;
	int64_t lo = mid - COUNT_UNDER;
	size_t outside = 0, max_outside = n >> COUNT_OUTSIDE_SHIFT;
	for (size_t i = 0; i < n; i++) {
		int64_t v = values[i];
		uint64_t at = (uint64_t)v - (uint64_t)lo;
		if (__builtin_expect(at < COUNT_WINDOW, 1)) {
			ways[i % COUNT_WAYS][at]++;
			continue;
		}
		if (outside == max_outside)
			return false;
		tmp[outside++] = v;
	}
	uint32_t counts[COUNT_WINDOW];
	for (size_t at = 0; at < COUNT_WINDOW; at++) {
		uint32_t c = 0;
		for (size_t w = 0; w < COUNT_WAYS; w++)
			c += ways[w][at];
		counts[at] = c;
	}
	tl_frame_sort_i64(tmp, outside);
	size_t below = 0; /* outside values under the window: tmp[0..below) */
	while (below < outside && tmp[below] < lo)
		below++;
	size_t inside = n - outside;
	/* a cursor over the counts: seen values before counts[at] */
	size_t at = 0, seen = 0;
	for (size_t i = 0; i < npcts; i++) {
		size_t rank = ((size_t)pcts[i] * n + 99) / 100;
		size_t k = rank ? rank - 1 : 0;
		if (k < below) {
			out[i] = tmp[k];
			continue;
		}
		size_t kin = k - below;
		if (kin >= inside) {
			out[i] = tmp[below + (kin - inside)];
			continue;
		}
		if (kin < seen) { /* a lower rank than the last (pcts not ascending) */
			at = 0;
			seen = 0;
		}
		while (seen + counts[at] <= kin)
			seen += counts[at++];
		out[i] = lo + (int64_t)at;
	}
	return true;
}

void tl_frame_percentiles(int64_t *values, size_t n, const unsigned *pcts, size_t npcts,
                          int64_t *out)
{
	int64_t *tmp = n ? malloc(n * sizeof *tmp) : NULL;
	if (tmp && n >= 64 && percentiles_counted(values, n, pcts, npcts, out, tmp)) {
		free(tmp);
		return;
	}
	/* from the lowest rank up, each selection within the part above the
	 * previous one: the median halves what the higher ranks look at */
	size_t base = 0;
	for (size_t i = 0; i < npcts; i++) {
		if (n == 0) {
			out[i] = 0;
			continue;
		}
		size_t rank = ((size_t)pcts[i] * n + 99) / 100;
		size_t k = rank ? rank - 1 : 0;
		if (k >= base) {
			if (tmp)
				select_kth_buffered(values + base, tmp, n - base, k - base);
			else
				select_kth(values + base, n - base, k - base);
			base = k;
		}
		out[i] = values[k];
	}
	free(tmp);
}

void tl_frame_sort_i64(int64_t *values, size_t n)
{
	if (n > 1)
		qsort(values, n, sizeof *values, compare_i64);
}

int64_t tl_frame_round(double v)
{
	if (!(v == v))
		return 0;
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	/* half away from zero, without libm */
	return v >= 0 ? (int64_t)(v + 0.5) : -(int64_t)(-v + 0.5);
}

static int compare_present(const void *a, const void *b)
{
	const tl_present_frame *x = a, *y = b;
	return (x->present_ns > y->present_ns) - (x->present_ns < y->present_ns);
}

/* The period most frames have (the smallest of equally frequent ones). */
static int64_t most_frequent_period(const tl_present_frame *frames, size_t n, size_t *distinct)
{
	int64_t *periods = malloc(n * sizeof *periods);
	if (!periods)
		return -1;
	for (size_t i = 0; i < n; i++)
		periods[i] = frames[i].period_ns;
	tl_frame_sort_i64(periods, n);
	int64_t best = periods[0];
	size_t best_run = 0, kinds = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && periods[j] == periods[i])
			j++;
		kinds++;
		if (j - i > best_run) {
			best_run = j - i;
			best = periods[i];
		}
		i = j;
	}
	free(periods);
	*distinct = kinds;
	return best;
}

int tl_present_stats_compute(tl_present_frame *frames, size_t n, tl_present_stats *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++)
		if (frames[i].period_ns <= 0)
			return -EINVAL;
	if (n == 0)
		return 0;

	qsort(frames, n, sizeof *frames, compare_present);
	size_t kept = 1;
	for (size_t i = 1; i < n; i++) {
		if (frames[i].present_ns == frames[kept - 1].present_ns) {
			out->duplicates++;
			continue;
		}
		frames[kept++] = frames[i];
	}
	n = kept;
	out->frames = n;
	out->first_ns = frames[0].present_ns;
	out->last_ns = frames[n - 1].present_ns;
	out->period_ns = most_frequent_period(frames, n, &out->periods_distinct);
	if (out->period_ns < 0)
		return -ENOMEM;
	if (n < 2)
		return 0;
	out->fps = (double)(n - 1) * 1e9 / (double)(out->last_ns - out->first_ns);

	/* Intervals in ns and in periods of the later frame; short ones go. */
	int64_t *intervals = malloc((n - 1) * sizeof *intervals);
	double *periods = malloc((n - 1) * sizeof *periods); /* interval / period */
	int64_t *interval_period = malloc((n - 1) * sizeof *interval_period);
	if (!intervals || !periods || !interval_period) {
		free(intervals);
		free(periods);
		free(interval_period);
		return -ENOMEM;
	}
	size_t m = 0;
	for (size_t i = 1; i < n; i++) {
		int64_t d = frames[i].present_ns - frames[i - 1].present_ns;
		double normalized = (double)d / (double)frames[i].period_ns;
		if (normalized < 0.5) {
			out->intervals_short++;
			continue;
		}
		intervals[m] = d;
		periods[m] = normalized;
		interval_period[m] = frames[i].period_ns;
		m++;
	}
	out->intervals = m;

	double longest = 0;
	for (size_t j = 0; j < m; j++) {
		if (periods[j] > longest)
			longest = periods[j];
		int64_t k = tl_frame_round(periods[j]);
		out->histogram[k < TL_PRESENT_HIST - 1 ? k : TL_PRESENT_HIST - 1]++;
		if (j == 0)
			continue;
		/* the change from the previous interval, in the later period */
		double change =
		    (double)(intervals[j] - intervals[j - 1]) / (double)interval_period[j];
		int64_t rounded = tl_frame_round(change);
		if (rounded >= 1 && rounded < TL_PRESENT_PAUSE_PERIODS)
			out->jank_count++;
		else if (rounded >= TL_PRESENT_PAUSE_PERIODS)
			out->pauses++;
	}
	out->max_frame_delay = tl_frame_round(longest);

	tl_frame_sort_i64(intervals, m);
	out->p50_ns = tl_frame_percentile(intervals, m, 50);
	out->p90_ns = tl_frame_percentile(intervals, m, 90);
	out->p99_ns = tl_frame_percentile(intervals, m, 99);
	out->max_ns = m ? intervals[m - 1] : 0;
	free(intervals);
	free(periods);
	free(interval_period);
	return 0;
}
