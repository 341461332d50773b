/*
 * Open-addressing hash maps (hash_map.h): one probe sequence, one growth
 * rule and one removal for the integer and the string keyed maps.
 */
#include "recorder/hash_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The table's size when the first key goes in. */
#define TL_HASH_MAP_MIN 64

uint64_t tl_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t tl_hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The size a table of cap slots grows to for one more of used keys: cap
 * itself while it stays at most half full; 0 when it cannot grow. */
static size_t grown_cap(size_t cap, size_t used, size_t slot_size)
{
	if ((used + 1) * 2 <= cap)
		return cap;
	size_t n = cap ? cap * 2 : TL_HASH_MAP_MIN;
	return n > cap && n <= SIZE_MAX / slot_size ? n : 0;
}

/*
 * Whether the entry at slot i, whose probe starts at home, stays where it
 * is when slot hole (before it in its probe sequence) empties: when home
 * lies cyclically in (hole, i].
 */
static int stays_after_hole(size_t hole, size_t i, size_t home)
{
	return hole < i ? hole < home && home <= i : hole < home || home <= i;
}

/* ---- by integer ---------------------------------------------------------- */

static size_t id_home(uint64_t key, size_t mask)
{
	return (size_t)tl_mix64(key) & mask;
}

/* The slot of key (not TL_ID_MAP_FREE) or the free one where it goes; the
 * table has at least one free slot. */
static tl_id_slot *id_slot(const tl_id_map *m, uint64_t key)
{
	size_t mask = m->cap - 1;
	for (size_t i = id_home(key, mask);; i = (i + 1) & mask) {
		tl_id_slot *s = &m->slots[i];
		if (s->key == key || s->key == TL_ID_MAP_FREE)
			return s;
	}
}

static int id_grow(tl_id_map *m)
{
	size_t cap = grown_cap(m->cap, m->used, sizeof *m->slots);
	if (cap == m->cap)
		return 0;
	if (!cap)
		return -ENOMEM;
	tl_id_slot *slots = malloc(cap * sizeof *slots);
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		slots[i].key = TL_ID_MAP_FREE;
	tl_id_map grown = *m;
	grown.slots = slots;
	grown.cap = cap;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].key != TL_ID_MAP_FREE)
			*id_slot(&grown, m->slots[i].key) = m->slots[i];
	}
	free(m->slots);
	*m = grown;
	return 0;
}

uint64_t *tl_id_map_get(const tl_id_map *m, uint64_t key)
{
	if (key == TL_ID_MAP_FREE)
		return m->has_free_key ? (uint64_t *)&m->free_key_value : NULL;
	if (!m->cap)
		return NULL;
	tl_id_slot *s = id_slot(m, key);
	return s->key == key ? &s->value : NULL;
}

uint64_t *tl_id_map_add(tl_id_map *m, uint64_t key, uint64_t value, int *added)
{
	if (added)
		*added = 0;
	uint64_t *found = tl_id_map_get(m, key);
	if (found)
		return found;
	if (key == TL_ID_MAP_FREE) {
		m->has_free_key = 1;
		m->free_key_value = value;
		m->used++;
		if (added)
			*added = 1;
		return &m->free_key_value;
	}
	if (id_grow(m))
		return NULL;
	tl_id_slot *s = id_slot(m, key);
	*s = (tl_id_slot){key, value};
	m->used++;
	if (added)
		*added = 1;
	return &s->value;
}

int tl_id_map_put(tl_id_map *m, uint64_t key, uint64_t value)
{
	uint64_t *v = tl_id_map_add(m, key, value, NULL);
	if (!v)
		return -ENOMEM;
	*v = value;
	return 0;
}

void tl_id_map_free(tl_id_map *m)
{
	free(m->slots);
	*m = (tl_id_map){0};
}

/* ---- by string ----------------------------------------------------------- */

static tl_str_slot *str_slot(const tl_str_map *m, const char *key, size_t len, uint64_t hash)
{
	size_t mask = m->cap - 1;
	for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
		tl_str_slot *s = &m->slots[i];
		if (!s->key || (s->hash == hash && s->len == len &&
		                (len == 0 || memcmp(s->key, key, len) == 0)))
			return s;
	}
}

tl_str_slot *tl_str_map_find(const tl_str_map *m, const char *key, size_t len, uint64_t hash)
{
	if (!m->cap)
		return NULL;
	tl_str_slot *s = str_slot(m, key, len, hash);
	return s->key ? s : NULL;
}

tl_str_slot *tl_str_map_place(tl_str_map *m, const char *key, size_t len, uint64_t hash)
{
	size_t cap = grown_cap(m->cap, m->used, sizeof *m->slots);
	if (!cap)
		return NULL;
	if (cap != m->cap) {
		tl_str_slot *slots = calloc(cap, sizeof *slots);
		if (!slots)
			return NULL;
		tl_str_map grown = {slots, cap, m->used};
		for (size_t i = 0; i < m->cap; i++) {
			const tl_str_slot *s = &m->slots[i];
			if (s->key)
				*str_slot(&grown, s->key, s->len, s->hash) = *s;
		}
		free(m->slots);
		*m = grown;
	}
	return str_slot(m, key, len, hash);
}

void tl_str_map_fill(tl_str_map *m, tl_str_slot *s, const char *key, size_t len, uint64_t hash,
                     uint64_t value)
{
	*s = (tl_str_slot){key, len, hash, value};
	m->used++;
}

void tl_str_map_remove(tl_str_map *m, tl_str_slot *s)
{
	size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
	for (size_t i = (hole + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
		if (stays_after_hole(hole, i, (size_t)m->slots[i].hash & mask))
			continue;
		m->slots[hole] = m->slots[i];
		hole = i;
	}
	m->slots[hole].key = NULL;
	m->used--;
}

void tl_str_map_free(tl_str_map *m)
{
	free(m->slots);
	*m = (tl_str_map){0};
}
