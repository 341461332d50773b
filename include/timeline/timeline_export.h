/* The one export macro: the library is built with -fvisibility=hidden and
 * only TL_API symbols (listed in the linker version script) are public. */
#ifndef TIMELINE_TIMELINE_EXPORT_H
#define TIMELINE_TIMELINE_EXPORT_H

#if defined(TIMELINE_BUILDING_LIBRARY)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

#endif /* TIMELINE_TIMELINE_EXPORT_H */
