/*
 * Function names from the ELF symbol tables: a code address of a traced
 * process, with the executable mappings it had (path, address range, file
 * offset, build-id), turned into the name of the function that holds it,
 * demangled. Built on elfutils' libelf (TL_HAVE_LIBELF); without it every
 * name is `module+0xoffset`. Internal; not signal-safe (allocates, opens
 * files).
 *
 * A module is looked up by the mapping's path; its build-id must match the
 * mapping's (when the mapping has one), else, and when the file has no
 * .symtab, the separate debug file DIR/.build-id/xx/rest.debug (xx/rest:
 * the build-id in hexadecimal; DIR each debug directory in turn,
 * /usr/lib/debug by default) is read. Each module is opened once per
 * symbolizer and kept open until tl_symbolizer_free.
 *
 * The paths come from a trace, which may be another's: only a regular file
 * of at most TL_SYMBOL_FILE_MAX bytes is read. A FIFO, a device, a socket
 * or a directory is never opened (its type is looked up first, then
 * checked again on the descriptor, opened O_NONBLOCK | O_NOCTTY), and the
 * mapped path's last component must not be a symbolic link (the kernel's
 * mapping paths never are). A debug file may be one: distributions link
 * .build-id/xx/rest.debug to the debug file; its path holds no byte of the
 * trace but the build-id's hexadecimal.
 */
#ifndef TIMELINE_SYMBOLIZE_H
#define TIMELINE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* One executable mapping of the traced process. Strings and bytes are the
 * caller's, read during the call only. */
typedef struct tl_mapping {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t offset;     /* the file offset mapped at start */
	const char *path;    /* not NUL-terminated; may be empty (anonymous) */
	size_t path_len;
	const uint8_t *build_id; /* NULL when unknown: the file is not checked */
	size_t build_id_len;
} tl_mapping;

typedef struct tl_symbolizer tl_symbolizer;

/* A larger file (mapped or debug) is not read: its functions keep
 * module+0xoffset. */
#define TL_SYMBOL_FILE_MAX ((uint64_t)4 << 30)
#define TL_SYMBOL_DEBUG_DIRS_MAX 8
#define TL_SYMBOL_DEFAULT_DEBUG_DIR "/usr/lib/debug"

/* Which files a symbolizer may open; all zero: the defaults. */
typedef struct tl_symbol_options {
	/* Open no file: every name is module+0xoffset (a trace from
	 * elsewhere, whose paths name files it should not make a reader
	 * open). */
	bool no_files;
	/* Where debug files are looked for by build-id, in this order,
	 * instead of TL_SYMBOL_DEFAULT_DEBUG_DIR (none: that one alone). The
	 * strings are the caller's: they must outlive the symbolizer. */
	const char *debug_dirs[TL_SYMBOL_DEBUG_DIRS_MAX];
	size_t ndebug_dirs;
} tl_symbol_options;

/* Whether this build reads symbol tables (built with elfutils). */
bool tl_symbolizer_available(void);

/* A symbolizer with an empty module cache, opening what options allow
 * (copied; NULL: the defaults); NULL without memory or without elfutils
 * (tl_function_name then names by module and offset, and no file is
 * opened). Free with tl_symbolizer_free. One thread at a time. */
tl_symbolizer *tl_symbolizer_new(const tl_symbol_options *options);
void tl_symbolizer_free(tl_symbolizer *s);

/*
 * Writes the name of the function at `address` into buf (size bytes,
 * NUL-terminated, cut to fit) and returns its length: the symbol's name,
 * demangled, followed by `+0x` and the distance when the address is not
 * the symbol's start; else `module+0xoffset` (the mapped file's last path
 * component, the offset in the file) when a mapping covers the address;
 * else `0x` and the address. s may be NULL: no symbols.
 */
size_t tl_function_name(tl_symbolizer *s, const tl_mapping *mappings, size_t nmappings,
                        uint64_t address, char *buf, size_t size);

/* A function symbol of a mapped file: its name, demangled (cut at
 * TL_SYMBOL_NAME_MAX - 1 bytes), and the addresses [start, end) it
 * covers in the process. */
#define TL_SYMBOL_NAME_MAX 512
typedef void tl_symbol_fn(const char *name, uint64_t start, uint64_t end, void *ctx);

/*
 * Calls fn for each function symbol of the mapping's file that lies in the
 * mapping, named as tl_function_name names it (one name per address: the
 * one it picks among aliases); returns how many. 0 when s is NULL, the
 * file cannot be read, or without elfutils.
 */
size_t tl_symbolizer_each_function(tl_symbolizer *s, const tl_mapping *mp, tl_symbol_fn *fn,
                                   void *ctx);

#pragma GCC visibility pop

#endif /* TIMELINE_SYMBOLIZE_H */
