/*
 * The function table: code addresses interned to small ids, so that a
 * record of a function's entry holds an id in its header instead of a
 * pointer word (record.h, TL_REC_F_FUNCTION). Internal.
 *
 * One table for the process, in static storage: open addressing with
 * linear probing, an entry claimed by one compare-and-swap and never
 * removed, so an address keeps its id for the life of the process (across
 * sessions and in a fork child). Lock-free and async-signal-safe: a signal
 * handler that interrupts an insertion on its own thread at worst claims
 * the next entry. When the table is full, or an address finds no free
 * entry within TL_FUNCTION_PROBES of its own, it gets no id and the miss
 * is counted (tl_function_table_overflow).
 *
 * An id is the entry's index. Entries are written before the record that
 * names them is committed (release), so a snapshot that read the record
 * finds the entry when it reads the table afterwards.
 */
#ifndef TIMELINE_FUNCTION_TABLE_H
#define TIMELINE_FUNCTION_TABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include <timeline/timeline_export.h>

#pragma GCC visibility push(hidden)

#define TL_FUNCTION_TABLE_BITS 16
#define TL_FUNCTION_TABLE_CAPACITY (1u << TL_FUNCTION_TABLE_BITS)
#define TL_FUNCTION_PROBES 64
#define TL_FUNCTION_NONE UINT32_MAX /* no id: NULL address or table full */

/* The addresses by id; 0: a free entry. Read by snapshots. */
extern _Atomic uintptr_t tl_function_addresses[TL_FUNCTION_TABLE_CAPACITY];
/* Addresses that got no id (table full). */
extern _Atomic uint64_t tl_function_table_overflow;
/* Entries claimed so far: a reader that saw the same count before has
 * seen every entry. */
extern _Atomic uint32_t tl_function_count;

/* Where an address starts probing. */
static inline TL_NO_INSTRUMENT uint32_t tl_function_home(uintptr_t address)
{
	return (uint32_t)(((uint64_t)address * 0x9e3779b97f4a7c15u) >> (64 - TL_FUNCTION_TABLE_BITS));
}

uint32_t tl_function_intern_slow(uintptr_t address, uint32_t home);

/* The id of an address already interned at its home entry (every address
 * interned without a collision); TL_FUNCTION_NONE otherwise: then
 * tl_function_intern finds or makes it. address must not be NULL. One
 * multiply, one load, one compare. */
static inline TL_NO_INSTRUMENT uint32_t tl_function_find(uintptr_t address)
{
	uint32_t home = tl_function_home(address);
	if (__builtin_expect(
	        atomic_load_explicit(&tl_function_addresses[home], memory_order_relaxed) == address,
	        1))
		return home;
	return TL_FUNCTION_NONE;
}

/* The id of a code address, interning it on first use; TL_FUNCTION_NONE
 * for NULL or when the table has no room (counted). Any thread,
 * async-signal-safe, lock-free; on a hit one multiply, one load, two
 * compares. */
static inline TL_NO_INSTRUMENT uint32_t tl_function_intern(uintptr_t address)
{
	if (!address)
		return TL_FUNCTION_NONE;
	uint32_t id = tl_function_find(address);
	if (__builtin_expect(id != TL_FUNCTION_NONE, 1))
		return id;
	return tl_function_intern_slow(address, tl_function_home(address));
}

/* The address of an id; 0 when the id names no entry. */
static inline TL_NO_INSTRUMENT uintptr_t tl_function_address(uint32_t id)
{
	if (id >= TL_FUNCTION_TABLE_CAPACITY)
		return 0;
	return atomic_load_explicit(&tl_function_addresses[id], memory_order_relaxed);
}

#pragma GCC visibility pop

#endif /* TIMELINE_FUNCTION_TABLE_H */
