/*
 * Categories (category.c), as the core sees them: the table's size, names
 * by index, the running flag and the lock taken around fork. Internal.
 */
#ifndef TIMELINE_CATEGORIES_H
#define TIMELINE_CATEGORIES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define TL_MAX_CATEGORIES 1024

void tl_categories_set_running(bool running);
uint32_t tl_category_count(void);
/* Name of category index i (signal-safe: names are never freed). */
const char *tl_category_name(uint32_t index);
/* Events of call sites that met a category they could not register (a
 * signal handler that interrupted its thread holding the lock). */
uint64_t tl_categories_dropped(void);
void tl_categories_lock(void);
void tl_categories_unlock(void);

#pragma GCC visibility pop

#endif /* TIMELINE_CATEGORIES_H */
