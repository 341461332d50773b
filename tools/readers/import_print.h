/*
 * `timeline slices`' printer over a file read with a sink: the items the
 * import hands on are kept in external sorters (tools/readers/spill_sort.h)
 * and printed, once the file is read, in the order and bytes
 * tl_import_print gives for the whole import. Memory is the sorters'
 * budgets (4 MiB each) and the import's; the rest goes to temporary files.
 * Not thread-safe.
 */
#ifndef TIMELINE_IMPORT_PRINT_H
#define TIMELINE_IMPORT_PRINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/readers/trace_import.h"

typedef struct tl_import_printer tl_import_printer;

/* A printer of the kinds asked (TL_PRINT_* bits). NULL when out of memory. */
tl_import_printer *tl_import_printer_new(unsigned kinds);

/* The sink to read the file with (tl_import_read_file_to). */
const tl_import_sink *tl_import_printer_sink(tl_import_printer *p);

/*
 * What passes, for a printer that filters: a slice (with its track, as it
 * was), a counter, a thread record, a process record. A flow passes when
 * both its slices do, an arg with its slice.
 */
typedef struct tl_import_print_filter {
	void *ctx;
	bool (*slice)(void *ctx, const tl_import *imp, const tl_import_slice *s,
	              const tl_import_track *t);
	bool (*counter)(void *ctx, const tl_import *imp, const tl_import_counter *c);
	bool (*thread)(void *ctx, const tl_import *imp, const tl_import_thread *t);
	bool (*process)(void *ctx, const tl_import *imp, const tl_import_process *p);
} tl_import_print_filter;

/* The printer is to filter: called before the read, it keeps every item
 * (what passes a window is known at the end), and one bit per slice while
 * it prints (the slices that passed, for their flows and args). */
void tl_import_printer_filter(tl_import_printer *p);

/* The first time of the slices and counters handed on (INT64_MAX: none):
 * where a filter's relative window starts. */
int64_t tl_import_printer_first_ts(const tl_import_printer *p);

/*
 * Prints what the sink was given, then imp's processes, threads and stats,
 * as tl_import_print prints a whole import (filtered by filter when not
 * NULL, which needs tl_import_printer_filter before the read). imp must be
 * the import the sink was given to, not yet freed (its threads name the
 * slices' threads). Returns 0 or -errno (a temporary file that could not
 * be read back; -EINVAL: a filter the printer was not told of).
 */
int tl_import_printer_write(tl_import_printer *p, const tl_import *imp,
                            const tl_import_print_filter *filter, FILE *out);

/* The slices, counters and flows that passed the last write's filter. */
uint64_t tl_import_printer_passing(const tl_import_printer *p);

/* The bytes the printer wrote to temporary files so far (0: all held). */
uint64_t tl_import_printer_spilled(const tl_import_printer *p);

void tl_import_printer_free(tl_import_printer *p);

#endif /* TIMELINE_IMPORT_PRINT_H */
