/*
 * The function table (function_table.h): code addresses to ids.
 */
#include "recorder/function_table.h"

_Atomic uintptr_t tl_function_addresses[TL_FUNCTION_TABLE_CAPACITY];
_Atomic uint64_t tl_function_table_overflow;
_Atomic uint32_t tl_function_count;

uint32_t tl_function_intern_slow(uintptr_t address, uint32_t home)
{
	if (!address)
		return TL_FUNCTION_NONE;
	for (uint32_t probe = 0; probe < TL_FUNCTION_PROBES; probe++) {
		uint32_t at = (home + probe) & (TL_FUNCTION_TABLE_CAPACITY - 1);
		uintptr_t seen = atomic_load_explicit(&tl_function_addresses[at], memory_order_relaxed);
		if (seen == address)
			return at;
		if (seen != 0)
			continue;
		/* a free entry: claim it, unless another thread (or a signal
		 * handler) just did, maybe for the same address */
		if (atomic_compare_exchange_strong_explicit(&tl_function_addresses[at], &seen,
		                                            address, memory_order_relaxed,
		                                            memory_order_relaxed)) {
			atomic_fetch_add_explicit(&tl_function_count, 1, memory_order_release);
			return at;
		}
		if (seen == address)
			return at;
	}
	atomic_fetch_add_explicit(&tl_function_table_overflow, 1, memory_order_relaxed);
	return TL_FUNCTION_NONE;
}
