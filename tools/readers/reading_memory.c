#include "tools/readers/reading_memory.h"

#include <stdlib.h> /* and with it, __GLIBC__ where it is glibc */
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* glibc's own default before it adapts the threshold */
#define MAP_ON_ITS_OWN_BYTES (128 * 1024)

void tl_reading_memory_setup(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, MAP_ON_ITS_OWN_BYTES);
#endif
}
