/*
 * Hash maps for the offline code: the trace model, the snapshot reader,
 * the readers of foreign formats and the importer, the exporters. Each
 * lookup by a thread, process, track, name or flow id costs the same
 * however many there are, so that reading a trace takes time linear in its
 * size.
 *
 * Open addressing with linear probing in a power-of-two table kept at most
 * half full. A removal moves back the entries that probed past the hole
 * (no tombstones), so lookups cost the same after any number of removals.
 * A map starts zeroed ({0}) and holds nothing until its first insertion.
 *
 * Internal; allocates, not signal-safe; a map is not shared between
 * threads without a lock.
 */
#ifndef TIMELINE_HASH_MAP_H
#define TIMELINE_HASH_MAP_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* splitmix64's finaliser: a bijection of 64-bit words that mixes every bit. */
uint64_t tl_mix64(uint64_t x);

/* FNV-1a (64 bits) of data[0..len). */
uint64_t tl_hash_bytes(const void *data, size_t len);

/* ---- by integer: a 64-bit key to a 64-bit value ------------------------- */

typedef struct tl_id_slot {
	uint64_t key; /* TL_ID_MAP_FREE: a free slot */
	uint64_t value;
} tl_id_slot;

/* The key that marks a free slot; a map holds that key apart. */
#define TL_ID_MAP_FREE UINT64_MAX

typedef struct tl_id_map {
	tl_id_slot *slots;
	size_t cap;  /* slots: 0 or a power of two */
	size_t used; /* keys held, the free-slot key included */
	int has_free_key;
	uint64_t free_key_value;
} tl_id_map;

/* The value of key, or NULL when the map does not hold it. The pointer is
 * valid until the map next changes. */
uint64_t *tl_id_map_get(const tl_id_map *m, uint64_t key);

/* The value of key, added as value when the map does not hold it (then
 * *added is 1, else 0; added may be NULL). NULL when memory ran out (the
 * map unchanged). The pointer is valid until the map next changes. */
uint64_t *tl_id_map_add(tl_id_map *m, uint64_t key, uint64_t value, int *added);

/* Sets key to value, added or replaced. 0 or -ENOMEM (the map unchanged). */
int tl_id_map_put(tl_id_map *m, uint64_t key, uint64_t value);

/* Empties m and frees its table; m is then as zeroed. */
void tl_id_map_free(tl_id_map *m);

/* ---- by string: bytes to a 64-bit value ---------------------------------- */

/* The map keeps pointers to its keys' bytes, not copies: whoever adds a
 * key keeps the bytes (an arena's, a malloc'd copy) while the map holds it. */
typedef struct tl_str_slot {
	const char *key; /* NULL: a free slot */
	size_t len;
	uint64_t hash; /* tl_hash_bytes(key, len) */
	uint64_t value;
} tl_str_slot;

typedef struct tl_str_map {
	tl_str_slot *slots;
	size_t cap; /* 0 or a power of two */
	size_t used;
} tl_str_map;

/* The slot holding key[0..len) (hash: tl_hash_bytes of it), or NULL. */
tl_str_slot *tl_str_map_find(const tl_str_map *m, const char *key, size_t len, uint64_t hash);

/*
 * Makes room for one more key, then returns the slot holding key[0..len),
 * or the free slot where it goes (its key NULL), which the caller fills
 * with tl_str_map_fill before the map changes again, or leaves free. NULL
 * when memory ran out (the map unchanged). Slot pointers are valid until
 * the map next changes.
 */
tl_str_slot *tl_str_map_place(tl_str_map *m, const char *key, size_t len, uint64_t hash);

/* Fills the free slot s that tl_str_map_place gave for key: key is the
 * bytes the map keeps (equal to the ones looked up). */
void tl_str_map_fill(tl_str_map *m, tl_str_slot *s, const char *key, size_t len, uint64_t hash,
                     uint64_t value);

/* Removes the entry in slot s (the caller frees its key's bytes, if it
 * owns them, before or after). Other slot pointers are then invalid. */
void tl_str_map_remove(tl_str_map *m, tl_str_slot *s);

/* Frees the table (not the keys' bytes); m is then as zeroed. */
void tl_str_map_free(tl_str_map *m);

#pragma GCC visibility pop

#endif /* TIMELINE_HASH_MAP_H */
