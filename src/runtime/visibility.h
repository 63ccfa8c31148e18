/*
 * visibility.h - how the runtime declares its own objects for the other files of the runtime.
 *
 * The library is built with hidden visibility, but that applies to definitions only: an object
 * declared extern in a header is assumed to possibly live in another shared object, so every
 * file but its own reaches it through the GOT, one more load. MPROF__HIDDEN on the declaration
 * tells the compiler it is the library's own, so it is addressed directly, as it was when its
 * readers and writer shared a file (the zone slow path reads the buffers' and counters' objects).
 */
#ifndef MPROF_VISIBILITY_H
#define MPROF_VISIBILITY_H

#if defined(__GNUC__)
#define MPROF__HIDDEN __attribute__((visibility("hidden")))
#else
#define MPROF__HIDDEN
#endif

#endif
