/*
 * How a process that reads large traces asks the C library's allocator to
 * give memory back. Offline code (the CLI, the reader benchmark).
 */
#ifndef TIMELINE_READING_MEMORY_H
#define TIMELINE_READING_MEMORY_H

/*
 * Call once, before reading. With glibc, blocks of 128 KiB and more are
 * always mapped on their own, so that the importer's large arrays go back
 * to the system when they are freed or shrunk: glibc otherwise raises that
 * threshold each time such a block is freed, after which the arrays grow
 * in its heap, which keeps the holes they leave (100 MiB of JSON whose
 * events must be sorted: a peak of 204 MiB, against 140 MiB with the fixed
 * threshold). Does nothing with another C library.
 */
void tl_reading_memory_setup(void);

#endif /* TIMELINE_READING_MEMORY_H */
