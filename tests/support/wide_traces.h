/*
 * Traces as wide as asked, for the readers' bench and the tests of what a
 * read costs per thread: n threads, each in a process of its own (text and
 * JSON; a snapshot has one process), each with names, categories, async
 * ids, counter tracks and flows of its own, a few events each. A reader
 * whose lookups grow with the threads, processes, names, tracks or flows
 * costs more per thread as n grows; one in linear time costs the same.
 */
#ifndef TIMELINE_WIDE_TRACES_H
#define TIMELINE_WIDE_TRACES_H

#include <stdio.h>

/* A binary snapshot (snapshot_format.h): a THREAD chunk, a BLOCK chunk and
 * a THREAD_DROPS entry per thread. 0, or -EIO when f failed. */
int tl_wide_snapshot(FILE *f, unsigned threads);

/* ftrace text of atrace markers, each thread's lines after the one
 * before's. 0, or -EIO when f failed. */
int tl_wide_ftrace(FILE *f, unsigned threads);

/* Chrome JSON, each thread's events together, in time order; its v1 flow
 * ends wait for a next slice of their thread that never comes. Its
 * metadata name the boot clock and the clocks read at one instant, as an
 * in-process trace's do (`timeline merge` aligns its processes). 0, or
 * -EIO when f failed. */
int tl_wide_json(FILE *f, unsigned threads);

#endif /* TIMELINE_WIDE_TRACES_H */
