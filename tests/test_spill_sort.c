/*
 * The external sort (tools/readers/spill_sort.h): records back in key
 * order with their bytes, from memory or merged from runs on disk, equal
 * keys in the order of adding or a tie function's, records of any size,
 * merge passes beyond the fan-in, a full disk (a 256 KiB tmpfs mounted here, as root) and no
 * file left behind.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/readers/spill_sort.h"

#define KIB 1024
#define MIB (1024 * 1024)
#define SMALL_BUDGET TL_SPILL_SORT_MIN_BUDGET

/* ---- records and their reference order ------------------------------------ */

static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* A record as added: its bytes are made again from seq when compared. */
struct ref_record {
	uint64_t key;
	size_t seq;
	size_t len;
};

static void fill_payload(unsigned char *buf, size_t seq, size_t len)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(next_random(&x) >> 56);
}

/* n records of min_len to max_len bytes, keys below key_range. */
static struct ref_record *make_records(size_t n, uint64_t seed, size_t min_len, size_t max_len,
                                       uint64_t key_range)
{
	struct ref_record *refs = malloc(n * sizeof *refs);
	assert_non_null(refs);
	uint64_t state = seed;
	for (size_t i = 0; i < n; i++) {
		refs[i].key = next_random(&state) % key_range;
		refs[i].seq = i;
		refs[i].len = min_len + next_random(&state) % (max_len - min_len + 1);
	}
	return refs;
}

/* Adds the records in their order; returns the sum of their lengths. */
static uint64_t add_records(tl_spill_sort *s, const struct ref_record *refs, size_t n)
{
	size_t cap = 4096;
	unsigned char *buf = malloc(cap);
	assert_non_null(buf);
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (refs[i].len > cap) {
			cap = refs[i].len;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		fill_payload(buf, refs[i].seq, refs[i].len);
		assert_int_equal(tl_spill_sort_add(s, refs[i].key, buf, refs[i].len), 0);
		bytes += refs[i].len;
	}
	free(buf);
	return bytes;
}

static int compare_refs(const void *a, const void *b)
{
	const struct ref_record *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads everything back and compares it, record by record, with a qsort of
 * the records by (key, order of adding). Sorts refs. */
static void expect_reference_order(tl_spill_sort *s, struct ref_record *refs, size_t n)
{
	qsort(refs, n, sizeof *refs, compare_refs);
	size_t cap = 4096;
	unsigned char *want = malloc(cap);
	assert_non_null(want);
	for (size_t i = 0; i < n; i++) {
		uint64_t key;
		const void *rec;
		size_t len;
		int rc = tl_spill_sort_next(s, &key, &rec, &len);
		if (rc != 1)
			fail_msg("record %zu of %zu: next returned %d", i, n, rc);
		if (key != refs[i].key || len != refs[i].len)
			fail_msg(
			    "record %zu: key %llu len %zu, expected key %llu len %zu (added %zu)",
			    i, (unsigned long long)key, len, (unsigned long long)refs[i].key,
			    refs[i].len, refs[i].seq);
		assert_non_null(rec);
		if (len > cap) {
			cap = len;
			want = realloc(want, cap);
			assert_non_null(want);
		}
		fill_payload(want, refs[i].seq, len);
		if (memcmp(rec, want, len) != 0)
			fail_msg("record %zu (added %zu): bytes differ", i, refs[i].seq);
	}
	free(want);
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 0);
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 0);
}

static char *fresh_dir(void)
{
	static char dirs[4][512];
	static unsigned next;
	char *dir = dirs[next++ % 4];
	snprintf(dir, sizeof dirs[0], "%s", tl_test_path("spill-sort", ""));
	assert_int_equal(mkdir(dir, 0755), 0);
	return dir;
}

/* Removes a fresh directory, which must be empty by then. */
static void remove_dir(const char *dir)
{
	assert_string_equal(tl_test_dir_entries(dir), "");
	assert_int_equal(rmdir(dir), 0);
}

/* ---- order and bytes ------------------------------------------------------- */

static void test_records_that_fit_come_back_in_key_order_from_memory(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	tl_spill_sort *s = tl_spill_sort_new(4 * MIB, dir);
	assert_non_null(s);
	struct ref_record *refs = make_records(5000, 1, 0, 300, 1000);
	add_records(s, refs, 5000);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	expect_reference_order(s, refs, 5000);
	assert_int_equal(tl_spill_sort_runs(s), 0);
	assert_int_equal(tl_spill_sort_spilled_bytes(s), 0);
	tl_spill_sort_free(s);
	free(refs);
	remove_dir(dir);
}

static void test_records_over_the_budget_are_merged_from_runs_in_key_order(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, NULL);
	assert_non_null(s);
	size_t n = 50000;
	struct ref_record *refs = make_records(n, 2, 20, 200, UINT64_MAX);
	add_records(s, refs, n);
	uint64_t before_finish = tl_spill_sort_spilled_bytes(s);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	size_t runs = tl_spill_sort_runs(s);
	print_message("%zu records: %zu runs, %llu bytes written\n", n, runs,
	              (unsigned long long)tl_spill_sort_spilled_bytes(s));
	assert_true(runs > 1);
	assert_true(runs <= TL_SPILL_SORT_FAN_IN);
	/* finish wrote the last run and no merge pass: less than a budget */
	assert_true(tl_spill_sort_spilled_bytes(s) - before_finish <= SMALL_BUDGET);
	expect_reference_order(s, refs, n);
	tl_spill_sort_free(s);
	free(refs);
}

static void test_more_runs_than_the_fan_in_are_merged_in_passes(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, NULL);
	assert_non_null(s);
	/* 22 MB of records: some 430 runs of 64 KiB; keys repeat */
	size_t n = 200000;
	struct ref_record *refs = make_records(n, 3, 20, 200, 100000);
	add_records(s, refs, n);
	uint64_t before_finish = tl_spill_sort_spilled_bytes(s);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	size_t runs = tl_spill_sort_runs(s);
	uint64_t after_finish = tl_spill_sort_spilled_bytes(s);
	print_message("%zu records: %zu runs, %llu bytes written before finish, %llu after\n", n,
	              runs, (unsigned long long)before_finish, (unsigned long long)after_finish);
	assert_true(runs > TL_SPILL_SORT_FAN_IN);
	/* more than the last run: runs were written again, merged */
	assert_true(after_finish - before_finish > 2 * SMALL_BUDGET);
	expect_reference_order(s, refs, n);
	tl_spill_sort_free(s);
	free(refs);
}

/* ---- stability ------------------------------------------------------------- */

/* Adds n records of 4 keys, each holding its order of adding, and checks
 * that each key's come back in that order. */
static void check_equal_keys_in_the_order_of_adding(size_t budget, size_t n, size_t pad,
                                                    int spilled)
{
	tl_spill_sort *s = tl_spill_sort_new(budget, NULL);
	assert_non_null(s);
	unsigned char rec[256] = {0};
	assert_true(sizeof(size_t) + pad <= sizeof rec);
	uint64_t state = 4;
	for (size_t i = 0; i < n; i++) {
		memcpy(rec, &i, sizeof i);
		assert_int_equal(tl_spill_sort_add(s, next_random(&state) % 4, rec, sizeof i + pad),
		                 0);
	}
	assert_int_equal(tl_spill_sort_finish(s), 0);
	assert_int_equal(tl_spill_sort_runs(s) > 1, spilled);
	uint64_t key, last_key = 0;
	const void *got;
	size_t len, count = 0, last_seq = 0;
	while (tl_spill_sort_next(s, &key, &got, &len) == 1) {
		size_t seq;
		memcpy(&seq, got, sizeof seq);
		assert_true(key >= last_key);
		if (count > 0 && key == last_key && seq <= last_seq)
			fail_msg("key %llu: record added %zu came after %zu",
			         (unsigned long long)key, seq, last_seq);
		last_key = key;
		last_seq = seq;
		count++;
	}
	assert_int_equal(count, n);
	tl_spill_sort_free(s);
}

static void test_equal_keys_within_a_run_come_back_in_the_order_of_adding(void **state)
{
	(void)state;
	check_equal_keys_in_the_order_of_adding(16 * MIB, 20000, 8, 0);
}

static void test_equal_keys_across_runs_come_back_in_the_order_of_adding(void **state)
{
	(void)state;
	check_equal_keys_in_the_order_of_adding(SMALL_BUDGET, 20000, 100, 1);
}

/* ---- a tie function -------------------------------------------------------- */

/* A record for the tie function: a class, its order of adding, then bytes
 * made from that order. */
struct tied_record {
	uint64_t key;
	uint32_t class;
	uint32_t id;
	size_t len; /* at least TIED_HEAD */
};

#define TIED_HEAD (2 * sizeof(uint32_t))

/* Higher classes first; ctx counts the calls. */
static int tie_by_class_descending(const void *a, size_t alen, const void *b, size_t blen,
                                   void *ctx)
{
	assert_true(alen >= TIED_HEAD && blen >= TIED_HEAD);
	uint32_t x, y;
	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	++*(size_t *)ctx;
	return x > y ? -1 : x < y;
}

/* The same rule, then the order of adding: a stable sort's order. */
static int compare_tied(const void *a, const void *b)
{
	const struct tied_record *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->class != y->class)
		return x->class > y->class ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void fill_tied(unsigned char *buf, const struct tied_record *r)
{
	memcpy(buf, &r->class, sizeof r->class);
	memcpy(buf + sizeof r->class, &r->id, sizeof r->id);
	fill_payload(buf + TIED_HEAD, r->id, r->len - TIED_HEAD);
}

/*
 * Adds n records of few keys and 4 classes, of TIED_HEAD to 120 bytes and,
 * every big_every (0: none), one larger than the budget, with the tie
 * function; then reads them back and compares them, record by record, with
 * a sort of the records by (key, class descending, order of adding).
 * Returns the runs written.
 */
static size_t check_tie_order(size_t budget, size_t n, size_t big_every)
{
	tl_spill_sort *s = tl_spill_sort_new(budget, NULL);
	assert_non_null(s);
	size_t calls = 0;
	assert_int_equal(tl_spill_sort_set_tie(s, tie_by_class_descending, &calls), 0);
	struct tied_record *refs = malloc(n * sizeof *refs);
	assert_non_null(refs);
	uint64_t state = 7;
	size_t max_len = 120;
	for (size_t i = 0; i < n; i++) {
		refs[i].key = next_random(&state) % 50;
		refs[i].class = (uint32_t)(next_random(&state) % 4);
		refs[i].id = (uint32_t)i;
		refs[i].len = TIED_HEAD + next_random(&state) % (120 - TIED_HEAD + 1);
		if (big_every && i % big_every == big_every / 2)
			refs[i].len = budget + KIB;
		if (refs[i].len > max_len)
			max_len = refs[i].len;
	}
	unsigned char *buf = malloc(max_len);
	unsigned char *want = malloc(max_len);
	assert_non_null(buf);
	assert_non_null(want);
	for (size_t i = 0; i < n; i++) {
		fill_tied(buf, &refs[i]);
		assert_int_equal(tl_spill_sort_add(s, refs[i].key, buf, refs[i].len), 0);
	}
	assert_int_equal(tl_spill_sort_finish(s), 0);
	qsort(refs, n, sizeof *refs, compare_tied);
	for (size_t i = 0; i < n; i++) {
		uint64_t key;
		const void *rec;
		size_t len;
		int rc = tl_spill_sort_next(s, &key, &rec, &len);
		if (rc != 1)
			fail_msg("record %zu of %zu: next returned %d", i, n, rc);
		uint32_t class = UINT32_MAX, id = UINT32_MAX;
		if (len >= TIED_HEAD) {
			memcpy(&class, rec, sizeof class);
			memcpy(&id, (const unsigned char *)rec + sizeof class, sizeof id);
		}
		if (key != refs[i].key || id != refs[i].id || len != refs[i].len)
			fail_msg("record %zu: key %llu class %u added %u, expected key %llu class "
			         "%u added %u",
			         i, (unsigned long long)key, class, id,
			         (unsigned long long)refs[i].key, refs[i].class, refs[i].id);
		fill_tied(want, &refs[i]);
		if (memcmp(rec, want, len) != 0)
			fail_msg("record %zu (added %u): bytes differ", i, id);
	}
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 0);
	assert_true(calls > 0);
	size_t runs = tl_spill_sort_runs(s);
	tl_spill_sort_free(s);
	free(want);
	free(buf);
	free(refs);
	return runs;
}

static void test_a_tie_function_orders_equal_keys_in_memory(void **state)
{
	(void)state;
	assert_int_equal(check_tie_order(16 * MIB, 20000, 0), 0);
}

static void test_a_tie_function_orders_equal_keys_across_runs(void **state)
{
	(void)state;
	/* some records larger than the budget: runs of their own */
	size_t runs = check_tie_order(SMALL_BUDGET, 50000, 10000);
	assert_true(runs > 1);
	assert_true(runs <= TL_SPILL_SORT_FAN_IN);
}

static void test_a_tie_function_orders_equal_keys_through_merge_passes(void **state)
{
	(void)state;
	/* some 100 bytes each with its place in the sort: over 300 runs */
	size_t runs = check_tie_order(SMALL_BUDGET, 200000, 0);
	assert_true(runs > TL_SPILL_SORT_FAN_IN);
}

static void test_setting_the_tie_after_an_add_is_einval(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(0, NULL);
	assert_non_null(s);
	size_t calls = 0;
	assert_int_equal(tl_spill_sort_set_tie(s, tie_by_class_descending, &calls), 0);
	assert_int_equal(tl_spill_sort_set_tie(s, NULL, NULL), 0);
	assert_int_equal(tl_spill_sort_add(s, 1, "a", 1), 0);
	assert_int_equal(tl_spill_sort_set_tie(s, tie_by_class_descending, &calls), -EINVAL);
	/* the order stayed the default: no call of the function */
	assert_int_equal(tl_spill_sort_add(s, 1, "b", 1), 0);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 1);
	assert_memory_equal(rec, "a", 1);
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 1);
	assert_memory_equal(rec, "b", 1);
	assert_int_equal(calls, 0);
	tl_spill_sort_free(s);
}

/* ---- sizes ----------------------------------------------------------------- */

static void test_a_record_larger_than_the_budget_comes_back_whole(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, NULL);
	assert_non_null(s);
	/* small records around records of a budget and of 1 MiB, whose keys
	 * fall among theirs */
	struct ref_record refs[3000];
	uint64_t state_ = 5;
	for (size_t i = 0; i < 3000; i++) {
		refs[i].key = next_random(&state_) % 1000;
		refs[i].seq = i;
		refs[i].len = 1 + next_random(&state_) % 64;
	}
	refs[1000].len = SMALL_BUDGET;
	refs[1000].key = 500;
	refs[2000].len = 1 * MIB;
	refs[2000].key = 500;
	add_records(s, refs, 3000);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	assert_true(tl_spill_sort_runs(s) >= 3);
	expect_reference_order(s, refs, 3000);
	tl_spill_sort_free(s);
}

static void test_a_record_larger_than_the_budget_alone_comes_back_whole(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, NULL);
	assert_non_null(s);
	struct ref_record ref = {.key = 7, .seq = 0, .len = 300 * KIB};
	add_records(s, &ref, 1);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	assert_int_equal(tl_spill_sort_runs(s), 1);
	expect_reference_order(s, &ref, 1);
	tl_spill_sort_free(s);
}

static void test_no_records_read_back_as_none(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	tl_spill_sort *s = tl_spill_sort_new(0, dir);
	assert_non_null(s);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 0);
	assert_int_equal(tl_spill_sort_runs(s), 0);
	assert_int_equal(tl_spill_sort_spilled_bytes(s), 0);
	tl_spill_sort_free(s);
	remove_dir(dir);
}

static void test_zero_length_records_come_back_with_their_keys(void **state)
{
	(void)state;
	for (int spilled = 0; spilled <= 1; spilled++) {
		tl_spill_sort *s = tl_spill_sort_new(spilled ? SMALL_BUDGET : 16 * MIB, NULL);
		assert_non_null(s);
		/* each counts its place in the sort: 100000 of them spill */
		size_t n = 100000;
		struct ref_record *refs = make_records(n, 6, 0, 0, 5000);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(tl_spill_sort_add(s, refs[i].key, NULL, 0), 0);
		assert_int_equal(tl_spill_sort_finish(s), 0);
		assert_int_equal(tl_spill_sort_runs(s) > 1, spilled);
		expect_reference_order(s, refs, n);
		tl_spill_sort_free(s);
		free(refs);
	}
}

/* ---- the calls' order ------------------------------------------------------ */

static void test_adding_after_finish_and_reading_before_are_einval(void **state)
{
	(void)state;
	tl_spill_sort *s = tl_spill_sort_new(0, NULL);
	assert_non_null(s);
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_add(s, 1, "a", 1), 0);
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), -EINVAL);
	assert_int_equal(tl_spill_sort_finish(s), 0);
	assert_int_equal(tl_spill_sort_finish(s), -EINVAL);
	assert_int_equal(tl_spill_sort_add(s, 2, "b", 1), -EINVAL);
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 1);
	assert_int_equal(key, 1);
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), 0);
	tl_spill_sort_free(s);
	tl_spill_sort_free(NULL);
}

/* ---- the temporary file ---------------------------------------------------- */

/* Adds records of 1 KiB until an add fails or max_bytes were added: the
 * first error, or 0. */
static int add_until_error(tl_spill_sort *s, size_t max_bytes)
{
	static unsigned char rec[KIB];
	for (size_t i = 0; i < max_bytes / sizeof rec; i++) {
		memset(rec, (int)i, sizeof rec);
		int rc = tl_spill_sort_add(s, (uint64_t)(max_bytes - i), rec, sizeof rec);
		if (rc)
			return rc;
	}
	return 0;
}

static void test_no_file_is_left_in_the_directory(void **state)
{
	(void)state;
	const char *dir = fresh_dir();
	assert_string_equal(tl_test_dir_entries(dir), "");
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, dir);
	assert_non_null(s);
	assert_int_equal(add_until_error(s, 1 * MIB), 0);
	assert_true(tl_spill_sort_runs(s) > 1);
	/* the file has no name while it is used */
	assert_string_equal(tl_test_dir_entries(dir), "");
	assert_int_equal(tl_spill_sort_finish(s), 0);
	tl_spill_sort_free(s);
	remove_dir(dir);
}

static void test_a_missing_directory_is_enoent_from_the_first_spill(void **state)
{
	(void)state;
	const char *dir = tl_test_path("spill-sort-missing", "");
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, dir);
	assert_non_null(s);
	assert_int_equal(add_until_error(s, 1 * MIB), -ENOENT);
	/* and from then on */
	assert_int_equal(tl_spill_sort_add(s, 1, "a", 1), -ENOENT);
	assert_int_equal(tl_spill_sort_finish(s), -ENOENT);
	tl_spill_sort_free(s);
}

static void test_without_a_directory_the_file_goes_to_tmpdir(void **state)
{
	(void)state;
	const char *missing = tl_test_path("spill-sort-tmpdir", "");
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	assert_int_equal(setenv("TMPDIR", missing, 1), 0);
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, NULL);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	assert_non_null(s);
	assert_int_equal(add_until_error(s, 1 * MIB), -ENOENT);
	tl_spill_sort_free(s);
}

static int unmount_disk(void **state)
{
	(void)state;
	tl_test_unmount_disk();
	return 0;
}

static void test_a_full_disk_is_enospc_from_add_or_finish(void **state)
{
	(void)state;
	const char *disk = tl_test_mount_disk("spill-sort-disk", 256 * 1024);
	tl_spill_sort *s = tl_spill_sort_new(SMALL_BUDGET, disk);
	assert_non_null(s);
	int rc = add_until_error(s, 4 * MIB);
	if (rc == 0)
		rc = tl_spill_sort_finish(s);
	assert_int_equal(rc, -ENOSPC);
	/* not forgotten: every later call says it again */
	assert_int_equal(tl_spill_sort_add(s, 1, "a", 1), -ENOSPC);
	assert_int_equal(tl_spill_sort_finish(s), -ENOSPC);
	uint64_t key;
	const void *rec;
	size_t len;
	assert_int_equal(tl_spill_sort_next(s, &key, &rec, &len), -ENOSPC);
	tl_spill_sort_free(s);
	assert_string_equal(tl_test_dir_entries(disk), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_records_that_fit_come_back_in_key_order_from_memory),
	    cmocka_unit_test(test_records_over_the_budget_are_merged_from_runs_in_key_order),
	    cmocka_unit_test(test_more_runs_than_the_fan_in_are_merged_in_passes),
	    cmocka_unit_test(test_equal_keys_within_a_run_come_back_in_the_order_of_adding),
	    cmocka_unit_test(test_equal_keys_across_runs_come_back_in_the_order_of_adding),
	    cmocka_unit_test(test_a_tie_function_orders_equal_keys_in_memory),
	    cmocka_unit_test(test_a_tie_function_orders_equal_keys_across_runs),
	    cmocka_unit_test(test_a_tie_function_orders_equal_keys_through_merge_passes),
	    cmocka_unit_test(test_setting_the_tie_after_an_add_is_einval),
	    cmocka_unit_test(test_a_record_larger_than_the_budget_comes_back_whole),
	    cmocka_unit_test(test_a_record_larger_than_the_budget_alone_comes_back_whole),
	    cmocka_unit_test(test_no_records_read_back_as_none),
	    cmocka_unit_test(test_zero_length_records_come_back_with_their_keys),
	    cmocka_unit_test(test_adding_after_finish_and_reading_before_are_einval),
	    cmocka_unit_test(test_no_file_is_left_in_the_directory),
	    cmocka_unit_test(test_a_missing_directory_is_enoent_from_the_first_spill),
	    cmocka_unit_test(test_without_a_directory_the_file_goes_to_tmpdir),
	    cmocka_unit_test_teardown(test_a_full_disk_is_enospc_from_add_or_finish, unmount_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
