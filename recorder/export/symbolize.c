/*
 * Function names from the ELF symbol tables (symbolize.h), through
 * elfutils' libelf.
 *
 * A module is one ELF file (and its debug file): its loadable segments,
 * to turn a file offset into the address its symbols use, and its
 * function symbols sorted by address. The names stay in the file's string
 * tables (the Elf handles stay open, mapped; their descriptors are closed
 * once the file is mapped) and are demangled when asked for.
 */
#include "recorder/export/symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TL_HAVE_LIBELF
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* The Itanium C++ ABI's demangler (libstdc++), declared here so that this
 * file stays C. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define BUILD_ID_MAX 64

struct segment {
	uint64_t offset, size, vaddr; /* PT_LOAD: p_offset, p_filesz, p_vaddr */
};

struct symbol {
	uint64_t address, size;
	Elf *elf;      /* whose string table holds the name */
	size_t strtab; /* its section index */
	size_t name;   /* offset in it */
	unsigned rank; /* among symbols at one address, the lowest is named */
};

struct module {
	char *path;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	bool usable;   /* symbols and segments were read */
	Elf *elves[2]; /* the file, its debug file */
	struct segment *segments;
	size_t nsegments;
	struct symbol *symbols;
	size_t nsymbols, symbols_cap;
	struct module *next;
};

struct tl_symbolizer {
	struct module *modules;
	tl_symbol_options options;
};

bool tl_symbolizer_available(void)
{
	return true;
}

tl_symbolizer *tl_symbolizer_new(const tl_symbol_options *options)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	tl_symbolizer *s = calloc(1, sizeof(tl_symbolizer));
	if (s && options) {
		s->options = *options;
		if (s->options.ndebug_dirs > TL_SYMBOL_DEBUG_DIRS_MAX)
			s->options.ndebug_dirs = TL_SYMBOL_DEBUG_DIRS_MAX;
	}
	return s;
}

static void module_free(struct module *m)
{
	for (int i = 0; i < 2; i++)
		if (m->elves[i])
			elf_end(m->elves[i]);
	free(m->segments);
	free(m->symbols);
	free(m->path);
	free(m);
}

void tl_symbolizer_free(tl_symbolizer *s)
{
	if (!s)
		return;
	for (struct module *m = s->modules, *next; m; m = next) {
		next = m->next;
		module_free(m);
	}
	free(s);
}

/* Whether st is a file to read symbols from: a regular one, not too big. */
static bool readable_file(const struct stat *st)
{
	return S_ISREG(st->st_mode) && (uint64_t)st->st_size <= TL_SYMBOL_FILE_MAX;
}

/*
 * Opens an ELF file for reading into slot i of m, all of it mapped (or
 * read) so that its descriptor is closed at once. Anything but a regular
 * file of at most TL_SYMBOL_FILE_MAX bytes is not opened: its type is
 * looked up first (opening a FIFO or a device may block, or act), then
 * checked on the descriptor, which is closed unread should the path have
 * changed in between. follow: the last component may be a symbolic link.
 */
static Elf *module_open(struct module *m, int i, const char *path, bool follow)
{
	struct stat st;
	if ((follow ? stat(path, &st) : lstat(path, &st)) != 0 || !readable_file(&st))
		return NULL;
	int fd =
	    open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !readable_file(&st)) {
		close(fd);
		return NULL;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool ok = elf && elf_kind(elf) == ELF_K_ELF && elf_cntl(elf, ELF_C_FDREAD) == 0;
	if (ok)
		elf_cntl(elf, ELF_C_FDDONE); /* (its result says nothing: 0.188 returns -1) */
	close(fd);
	if (!ok) {
		if (elf)
			elf_end(elf);
		return NULL;
	}
	m->elves[i] = elf;
	return elf;
}

/* The file's GNU build-id note, copied into out; its length, 0 if none. */
static size_t elf_build_id(Elf *elf, uint8_t *out)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		GElf_Nhdr note;
		size_t at = 0, name_at, desc_at;
		while ((at = gelf_getnote(data, at, &note, &name_at, &desc_at)) > 0) {
			if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
			    memcmp((const char *)data->d_buf + name_at, "GNU", 4) == 0 &&
			    note.n_descsz <= BUILD_ID_MAX) {
				memcpy(out, (const char *)data->d_buf + desc_at, note.n_descsz);
				return note.n_descsz;
			}
		}
	}
	return 0;
}

static bool has_symtab(Elf *elf)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			return true;
	}
	return false;
}

static bool read_segments(struct module *m, Elf *elf)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) != 0 || n == 0)
		return false;
	m->segments = calloc(n, sizeof *m->segments);
	if (!m->segments)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->segments[m->nsegments++] =
			    (struct segment){ph.p_offset, ph.p_filesz, ph.p_vaddr};
	}
	return m->nsegments > 0;
}

/* Functions defined in the file: STT_FUNC and GNU_IFUNC with an address. */
static bool read_symbols(struct module *m, Elf *elf, Elf64_Word type)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type || !shdr.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t count = shdr.sh_size / shdr.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value || !sym.st_name)
				continue;
			int kind = GELF_ST_TYPE(sym.st_info);
			if (kind != STT_FUNC && kind != STT_GNU_IFUNC)
				continue;
			if (m->nsymbols == m->symbols_cap) {
				size_t cap = m->symbols_cap ? 2 * m->symbols_cap : 256;
				struct symbol *grown = realloc(m->symbols, cap * sizeof *grown);
				if (!grown)
					return false;
				m->symbols = grown;
				m->symbols_cap = cap;
			}
			int bind = GELF_ST_BIND(sym.st_info);
			/* a global name before a weak one before a local one;
			 * .symtab before .dynsym */
			unsigned rank = (bind == STB_GLOBAL ? 0
			                 : bind == STB_WEAK ? 1
			                                    : 2) *
			                    2 +
			                (type == SHT_DYNSYM);
			m->symbols[m->nsymbols++] = (struct symbol){
			    sym.st_value, sym.st_size, elf, shdr.sh_link, sym.st_name, rank};
		}
	}
	return true;
}

static int by_address(const void *pa, const void *pb)
{
	const struct symbol *a = pa, *b = pb;
	if (a->address != b->address)
		return a->address < b->address ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The debug file of a build-id, DIR/.build-id/xx/rest.debug in the first
 * debug directory that has it with that build-id, opened into slot 1;
 * NULL when none. */
static Elf *open_debug_file(const tl_symbolizer *s, struct module *m, const uint8_t *id, size_t len)
{
	if (len < 2)
		return NULL;
	char name[sizeof "/.build-id/" + 2 * BUILD_ID_MAX + 8];
	char *p = name + sprintf(name, "/.build-id/");
	for (size_t i = 0; i < len; i++) {
		p += sprintf(p, "%02x", id[i]);
		if (i == 0)
			*p++ = '/';
	}
	strcpy(p, ".debug");
	size_t ndirs = s->options.ndebug_dirs;
	for (size_t d = 0; d < (ndirs ? ndirs : 1); d++) {
		const char *dir = ndirs ? s->options.debug_dirs[d] : TL_SYMBOL_DEFAULT_DEBUG_DIR;
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof path, "%s%s", dir, name) >= sizeof path)
			continue;
		Elf *elf = module_open(m, 1, path, true);
		uint8_t found[BUILD_ID_MAX];
		if (elf && elf_build_id(elf, found) == len && memcmp(found, id, len) == 0)
			return elf;
		if (elf) {
			elf_end(elf);
			m->elves[1] = NULL;
		}
	}
	return NULL;
}

/* Reads the module's segments and symbols: from the file when its
 * build-id matches, from the debug file when the file has no .symtab or
 * does not match. */
static void module_load(const tl_symbolizer *s, struct module *m)
{
	if (s->options.no_files)
		return;
	Elf *file = module_open(m, 0, m->path, false);
	bool file_matches = false;
	uint8_t id[BUILD_ID_MAX];
	size_t id_len = 0;
	if (file) {
		id_len = elf_build_id(file, id);
		file_matches = !m->build_id_len ||
		               (id_len == m->build_id_len && memcmp(id, m->build_id, id_len) == 0);
	}
	Elf *debug = NULL;
	if (!file_matches)
		debug = open_debug_file(s, m, m->build_id, m->build_id_len);
	else if (!has_symtab(file))
		debug = open_debug_file(s, m, id, id_len);
	if (!file_matches && !debug)
		return;
	if (!read_segments(m, file_matches ? file : debug))
		return;
	if (file_matches &&
	    (!read_symbols(m, file, SHT_SYMTAB) || !read_symbols(m, file, SHT_DYNSYM)))
		return;
	if (debug && !read_symbols(m, debug, SHT_SYMTAB))
		return;
	if (m->nsymbols)
		qsort(m->symbols, m->nsymbols, sizeof *m->symbols, by_address);
	m->usable = true;
}

/* Whether the mapping names a file to look up: an absolute path ("[vdso]"
 * and anonymous memory do not), with no NUL byte in it. */
static bool names_a_file(const tl_mapping *mp)
{
	return mp->path_len && mp->path[0] == '/' && !memchr(mp->path, '\0', mp->path_len);
}

/* The module of a mapping, loaded on first use; NULL without memory. */
static struct module *module_get(tl_symbolizer *s, const tl_mapping *mp)
{
	size_t id_len = mp->build_id && mp->build_id_len <= BUILD_ID_MAX ? mp->build_id_len : 0;
	for (struct module *m = s->modules; m; m = m->next)
		if (strlen(m->path) == mp->path_len &&
		    memcmp(m->path, mp->path, mp->path_len) == 0 && m->build_id_len == id_len &&
		    (!id_len || memcmp(m->build_id, mp->build_id, id_len) == 0))
			return m;
	struct module *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->path = strndup(mp->path, mp->path_len);
	if (!m->path) {
		free(m);
		return NULL;
	}
	if (id_len)
		memcpy(m->build_id, mp->build_id, id_len);
	m->build_id_len = id_len;
	m->next = s->modules;
	s->modules = m;
	module_load(s, m);
	return m;
}

/* The symbol holding address vaddr, or NULL. */
static const struct symbol *symbol_at(const struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->nsymbols; /* first symbol above vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->symbols[mid].address <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct symbol *sym = &m->symbols[lo - 1];
	while (sym > m->symbols && sym[-1].address == sym->address)
		sym--; /* the best ranked at that address */
	if (sym->size && vaddr - sym->address >= sym->size) {
		/* past its end: another symbol at that address may be longer */
		const struct symbol *longest = NULL;
		for (const struct symbol *o = sym;
		     o < m->symbols + m->nsymbols && o->address == sym->address; o++)
			if (!o->size || vaddr - o->address < o->size) {
				longest = o;
				break;
			}
		return longest;
	}
	return sym;
}

/* The symbol's name, demangled, followed by +0x and distance when that is
 * not 0, into buf; 0 if none. */
static size_t symbol_name(const struct symbol *sym, uint64_t distance, char *buf, size_t size)
{
	const char *name = elf_strptr(sym->elf, sym->strtab, sym->name);
	if (!name || !*name)
		return 0;
	char *demangled = NULL;
	if (name[0] == '_' && name[1] == 'Z') {
		int status = 0;
		demangled = __cxa_demangle(name, NULL, NULL, &status);
		if (demangled && status == 0)
			name = demangled;
	}
	int n = distance == 0
	            ? snprintf(buf, size, "%s", name)
	            : snprintf(buf, size, "%s+0x%llx", name, (unsigned long long)distance);
	free(demangled);
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

/* The symbol's name at vaddr in m, demangled, into buf; 0 if none. */
static size_t module_name(const struct module *m, uint64_t file_offset, char *buf, size_t size)
{
	if (!m->usable)
		return 0;
	uint64_t vaddr = 0;
	bool found = false;
	for (size_t i = 0; i < m->nsegments && !found; i++) {
		const struct segment *sg = &m->segments[i];
		if (file_offset >= sg->offset && file_offset - sg->offset < sg->size) {
			vaddr = file_offset - sg->offset + sg->vaddr;
			found = true;
		}
	}
	const struct symbol *sym = found ? symbol_at(m, vaddr) : NULL;
	if (!sym)
		return 0;
	return symbol_name(sym, vaddr - sym->address, buf, size);
}

size_t tl_symbolizer_each_function(tl_symbolizer *s, const tl_mapping *mp, tl_symbol_fn *fn,
                                   void *ctx)
{
	if (!s || !names_a_file(mp))
		return 0;
	struct module *m = module_get(s, mp);
	if (!m || !m->usable)
		return 0;
	size_t count = 0;
	char name[TL_SYMBOL_NAME_MAX];
	for (size_t i = 0; i < m->nsymbols; i++) {
		const struct symbol *sym = &m->symbols[i];
		if (i > 0 && sym[-1].address == sym->address)
			continue; /* named by the best ranked at its address */
		uint64_t file_offset = 0;
		bool found = false;
		for (size_t k = 0; k < m->nsegments && !found; k++) {
			const struct segment *sg = &m->segments[k];
			if (sym->address >= sg->vaddr && sym->address - sg->vaddr < sg->size) {
				file_offset = sym->address - sg->vaddr + sg->offset;
				found = true;
			}
		}
		if (!found || file_offset < mp->offset ||
		    file_offset - mp->offset >= mp->end - mp->start)
			continue; /* not in this mapping */
		uint64_t start = mp->start + (file_offset - mp->offset);
		uint64_t end = start + (sym->size ? sym->size : 1);
		if (symbol_name(sym, 0, name, sizeof name)) {
			fn(name, start, end < mp->end ? end : mp->end, ctx);
			count++;
		}
	}
	return count;
}

#else /* !TL_HAVE_LIBELF */

bool tl_symbolizer_available(void)
{
	return false;
}

tl_symbolizer *tl_symbolizer_new(const tl_symbol_options *options)
{
	(void)options;
	return NULL;
}

void tl_symbolizer_free(tl_symbolizer *s)
{
	(void)s;
}

size_t tl_symbolizer_each_function(tl_symbolizer *s, const tl_mapping *mp, tl_symbol_fn *fn,
                                   void *ctx)
{
	(void)s;
	(void)mp;
	(void)fn;
	(void)ctx;
	return 0;
}

#endif

size_t tl_function_name(tl_symbolizer *s, const tl_mapping *mappings, size_t nmappings,
                        uint64_t address, char *buf, size_t size)
{
	if (!size)
		return 0;
	const tl_mapping *mp = NULL;
	for (size_t i = 0; i < nmappings && !mp; i++)
		if (address >= mappings[i].start && address < mappings[i].end &&
		    mappings[i].path_len)
			mp = &mappings[i];
	int n;
	if (!mp) {
		n = snprintf(buf, size, "0x%llx", (unsigned long long)address);
	} else {
		uint64_t file_offset = address - mp->start + mp->offset;
#ifdef TL_HAVE_LIBELF
		if (s && names_a_file(mp)) {
			struct module *m = module_get(s, mp);
			size_t len = m ? module_name(m, file_offset, buf, size) : 0;
			if (len)
				return len;
		}
#else
		(void)s;
#endif
		const char *end = mp->path + mp->path_len, *base = end;
		while (base > mp->path && base[-1] != '/')
			base--;
		n = snprintf(buf, size, "%.*s+0x%llx", (int)(end - base), base,
		             (unsigned long long)file_offset);
	}
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}
