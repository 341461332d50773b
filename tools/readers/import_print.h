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

#include <stdint.h>
#include <stdio.h>

#include "tools/readers/trace_import.h"

typedef struct tl_import_printer tl_import_printer;

/* A printer of the kinds asked (TL_PRINT_* bits). NULL when out of memory. */
tl_import_printer *tl_import_printer_new(unsigned kinds);

/* The sink to read the file with (tl_import_read_file_to). */
const tl_import_sink *tl_import_printer_sink(tl_import_printer *p);

/*
 * Prints what the sink was given, then imp's processes, threads and stats,
 * as tl_import_print prints a whole import. imp must be the import the
 * sink was given to, not yet freed (its threads name the slices' threads).
 * Returns 0 or -errno (a temporary file that could not be read back).
 */
int tl_import_printer_write(tl_import_printer *p, const tl_import *imp, FILE *out);

/* The bytes the printer wrote to temporary files so far (0: all held). */
uint64_t tl_import_printer_spilled(const tl_import_printer *p);

void tl_import_printer_free(tl_import_printer *p);

#endif /* TIMELINE_IMPORT_PRINT_H */
