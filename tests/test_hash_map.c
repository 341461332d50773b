/* The hash maps of the offline code (recorder/hash_map.h). */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/hash_map.h"

#define MANY 20000u

static void test_id_map_finds_every_key_across_growth(void **state)
{
	(void)state;
	tl_id_map m = {0};
	for (uint64_t k = 0; k < MANY; k++)
		assert_int_equal(tl_id_map_put(&m, k * 7919, k), 0);
	assert_int_equal(m.used, MANY);
	for (uint64_t k = 0; k < MANY; k++) {
		uint64_t *v = tl_id_map_get(&m, k * 7919);
		assert_non_null(v);
		assert_int_equal(*v, k);
		assert_null(tl_id_map_get(&m, k * 7919 + 1));
	}
	assert_true(m.used * 2 <= m.cap);
	tl_id_map_free(&m);
	assert_null(tl_id_map_get(&m, 0));
}

static void test_id_map_add_keeps_the_first_value(void **state)
{
	(void)state;
	tl_id_map m = {0};
	int added = -1;
	uint64_t *v = tl_id_map_add(&m, 42, 1, &added);
	assert_non_null(v);
	assert_int_equal(added, 1);
	v = tl_id_map_add(&m, 42, 2, &added);
	assert_int_equal(added, 0);
	assert_int_equal(*v, 1);
	assert_int_equal(tl_id_map_put(&m, 42, 3), 0);
	assert_int_equal(*tl_id_map_get(&m, 42), 3);
	assert_int_equal(m.used, 1);
	tl_id_map_free(&m);
}

/* The key a free slot holds is a key like another. */
static void test_id_map_holds_the_key_that_marks_free_slots(void **state)
{
	(void)state;
	tl_id_map m = {0};
	assert_null(tl_id_map_get(&m, TL_ID_MAP_FREE));
	assert_int_equal(tl_id_map_put(&m, TL_ID_MAP_FREE, 5), 0);
	assert_int_equal(tl_id_map_put(&m, 0, 6), 0);
	assert_int_equal(*tl_id_map_get(&m, TL_ID_MAP_FREE), 5);
	assert_int_equal(*tl_id_map_get(&m, 0), 6);
	assert_null(tl_id_map_get(&m, 1));
	int added = -1;
	assert_int_equal(*tl_id_map_add(&m, TL_ID_MAP_FREE, 9, &added), 5);
	assert_int_equal(added, 0);
	assert_int_equal(m.used, 2);
	tl_id_map_free(&m);
}

/* Adds key (its own malloc'd copy) with value; asserts success. */
static void str_add(tl_str_map *m, const char *key, uint64_t hash, uint64_t value)
{
	size_t len = strlen(key);
	tl_str_slot *s = tl_str_map_place(m, key, len, hash);
	assert_non_null(s);
	assert_null(s->key);
	char *copy = strdup(key);
	assert_non_null(copy);
	tl_str_map_fill(m, s, copy, len, hash, value);
}

static void str_free(tl_str_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free((char *)m->slots[i].key);
	tl_str_map_free(m);
}

static void test_str_map_finds_a_key_by_its_bytes(void **state)
{
	(void)state;
	tl_str_map m = {0};
	char key[32];
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(key, sizeof key, "%u/%u", i, i);
		str_add(&m, key, tl_hash_bytes(key, strlen(key)), i);
	}
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(key, sizeof key, "%u/%u", i, i);
		tl_str_slot *s =
		    tl_str_map_find(&m, key, strlen(key), tl_hash_bytes(key, strlen(key)));
		assert_non_null(s);
		assert_int_equal(s->value, i);
		assert_ptr_not_equal(s->key, key);
		/* the same place for a key already there: its slot */
		assert_ptr_equal(tl_str_map_place(&m, key, strlen(key), s->hash), s);
	}
	assert_null(tl_str_map_find(&m, "1/2", 3, tl_hash_bytes("1/2", 3)));
	/* a prefix is another key */
	assert_null(tl_str_map_find(&m, "1/", 2, tl_hash_bytes("1/", 2)));
	assert_non_null(tl_str_map_find(&m, "1/1", 3, tl_hash_bytes("1/1", 3)));
	assert_int_equal(m.used, MANY);
	str_free(&m);
}

/*
 * Keys that all start their probe in one slot (one hash), and a few homed
 * just after it, in one run of the table: a removal in the middle of the
 * run moves back those that probed past it and leaves the others, so that
 * every key left is still found, and the removed ones are not.
 */
static void test_str_map_removal_keeps_the_keys_that_probed_past_it(void **state)
{
	(void)state;
	tl_str_map m = {0};
	char key[16];
	/* 16 keys, the table of 64 slots: the hashes below choose the slots */
	for (unsigned i = 0; i < 16; i++) {
		snprintf(key, sizeof key, "k%u", i);
		uint64_t hash = i < 10 ? 60 : 61 + (i - 10) % 3; /* a run that wraps past 63 */
		str_add(&m, key, hash, i);
	}
	assert_int_equal(m.cap, 64);
	unsigned removed[] = {3, 0, 11, 9};
	for (size_t r = 0; r < sizeof removed / sizeof removed[0]; r++) {
		snprintf(key, sizeof key, "k%u", removed[r]);
		uint64_t hash = removed[r] < 10 ? 60 : 61 + (removed[r] - 10) % 3;
		tl_str_slot *s = tl_str_map_find(&m, key, strlen(key), hash);
		assert_non_null(s);
		free((char *)s->key);
		tl_str_map_remove(&m, s);
	}
	assert_int_equal(m.used, 12);
	for (unsigned i = 0; i < 16; i++) {
		snprintf(key, sizeof key, "k%u", i);
		uint64_t hash = i < 10 ? 60 : 61 + (i - 10) % 3;
		tl_str_slot *s = tl_str_map_find(&m, key, strlen(key), hash);
		int gone = i == 3 || i == 0 || i == 11 || i == 9;
		if (gone) {
			assert_null(s);
		} else {
			assert_non_null(s);
			assert_int_equal(s->value, i);
		}
	}
	str_free(&m);

	/* the hole at the table's last slot, a key homed at slot 0 after it:
	 * it stays where its probe starts */
	static const struct {
		const char *key;
		uint64_t hash;
	} wrap[] = {{"a", 62}, {"b", 62}, {"e", 0}};
	for (size_t i = 0; i < 3; i++)
		str_add(&m, wrap[i].key, wrap[i].hash, i);
	tl_str_slot *b = tl_str_map_find(&m, "b", 1, 62);
	assert_ptr_equal(b, &m.slots[63]);
	free((char *)b->key);
	tl_str_map_remove(&m, b);
	assert_non_null(tl_str_map_find(&m, "a", 1, 62));
	assert_non_null(tl_str_map_find(&m, "e", 1, 0));
	assert_ptr_equal(tl_str_map_find(&m, "e", 1, 0), &m.slots[0]);
	assert_null(tl_str_map_find(&m, "b", 1, 62));
	str_free(&m);
}

static void test_hash_bytes_is_fnv_1a(void **state)
{
	(void)state;
	/* the published FNV-1a 64-bit values */
	assert_true(tl_hash_bytes("", 0) == 0xcbf29ce484222325ull);
	assert_true(tl_hash_bytes("a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(tl_hash_bytes("foobar", 6) == 0x85944171f73967e8ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_id_map_finds_every_key_across_growth),
	    cmocka_unit_test(test_id_map_add_keeps_the_first_value),
	    cmocka_unit_test(test_id_map_holds_the_key_that_marks_free_slots),
	    cmocka_unit_test(test_str_map_finds_a_key_by_its_bytes),
	    cmocka_unit_test(test_str_map_removal_keeps_the_keys_that_probed_past_it),
	    cmocka_unit_test(test_hash_bytes_is_fnv_1a),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
