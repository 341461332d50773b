/*
 * The trace model's memory: one arena per model holding its strings
 * (interned: each distinct string is stored once), its growable event,
 * thread and process arrays and their indexes (a thread by pid and tid, a
 * process by pid). tl_model_free() releases everything at once.
 */
#include "recorder/export/trace_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/hash_map.h"

/* Strings are carved from chunks of this size; longer ones get their own. */
#define TL_ARENA_CHUNK_BYTES (64 * 1024)
#define TL_ARENA_EVENTS_MIN 256
#define TL_ARENA_THREADS_MIN 16

/* A model holds one event per event of the trace: keep it to a cache line
 * (its args are out of line, docs/reading.md). */
_Static_assert(sizeof(tl_model_event) <= 64, "a model event in 64 bytes");

struct tl_arena_chunk {
	struct tl_arena_chunk *next;
	size_t used;
	size_t size;
	char bytes[];
};

struct tl_model_arena {
	struct tl_arena_chunk *chunks; /* newest first; strings go to the head */
	tl_str_map strings;            /* every string interned, to itself */
	/* The arrays the arena allocated; the model's pointers refer to them. */
	tl_model_event *events;
	size_t events_cap;
	tl_model_thread *threads;
	size_t threads_cap;
	tl_model_process *processes;
	size_t processes_cap;
	/* Indexes into threads[0..threads_indexed) and
	 * processes[0..processes_indexed): a thread by thread_key, the first
	 * thread of each tid, a process by pid. A model whose arrays were set
	 * by other hands is searched instead (threads_indexed). */
	tl_id_map thread_by_key;
	tl_id_map thread_by_tid;
	tl_id_map process_by_pid;
	size_t threads_indexed;
	size_t processes_indexed;
};


static struct tl_model_arena *arena_of(tl_model *model)
{
	if (!model->arena)
		model->arena = calloc(1, sizeof *model->arena);
	return model->arena;
}

/*
 * Returns array grown to hold at least need elements (*cap updated), or
 * NULL when out of memory (array untouched).
 */
static void *grow_array(void *array, size_t *cap, size_t need, size_t elem_size, size_t min_cap)
{
	if (need <= *cap)
		return array;
	size_t new_cap = *cap ? *cap : min_cap;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2)
			return NULL;
		new_cap *= 2;
	}
	if (new_cap > SIZE_MAX / elem_size)
		return NULL;
	void *grown = realloc(array, new_cap * elem_size);
	if (grown)
		*cap = new_cap;
	return grown;
}

/*
 * size bytes from the arena's chunks, at a multiple of align (a power of
 * two, at most 16); NULL on allocation failure. Strings (align 1) and
 * args arrays share the chunks.
 */
static char *arena_alloc(struct tl_model_arena *arena, size_t size, size_t align)
{
	if (size >= SIZE_MAX - sizeof(struct tl_arena_chunk) - align)
		return NULL;
	struct tl_arena_chunk *chunk = arena->chunks;
	size_t start = chunk ? (chunk->used + align - 1) & ~(align - 1) : 0;
	if (!chunk || start > chunk->size || chunk->size - start < size) {
		size_t bytes = size > TL_ARENA_CHUNK_BYTES / 4 ? size : TL_ARENA_CHUNK_BYTES;
		chunk = malloc(sizeof *chunk + bytes);
		if (!chunk)
			return NULL;
		chunk->used = 0;
		chunk->size = bytes;
		/* A dedicated chunk goes behind the head so the head keeps its room. */
		if (bytes != TL_ARENA_CHUNK_BYTES && arena->chunks) {
			chunk->next = arena->chunks->next;
			arena->chunks->next = chunk;
		} else {
			chunk->next = arena->chunks;
			arena->chunks = chunk;
		}
		start = 0;
	}
	chunk->used = start + size;
	return chunk->bytes + start;
}

/* Copies len bytes plus a terminator into the arena's chunks. */
static char *arena_store(struct tl_model_arena *arena, const char *s, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	char *dst = arena_alloc(arena, len + 1, 1);
	if (!dst)
		return NULL;
	if (len)
		memcpy(dst, s, len);
	dst[len] = '\0';
	return dst;
}

const char *tl_model_intern(tl_model *model, const char *s, size_t len)
{
	if (!s && len)
		return NULL;
	if (!s)
		s = "";
	struct tl_model_arena *arena = arena_of(model);
	if (!arena)
		return NULL;
	uint64_t hash = tl_hash_bytes(s, len);
	tl_str_slot *slot = tl_str_map_place(&arena->strings, s, len, hash);
	if (!slot)
		return NULL;
	if (slot->key)
		return slot->key;
	char *copy = arena_store(arena, s, len);
	if (!copy)
		return NULL;
	tl_str_map_fill(&arena->strings, slot, copy, len, hash, 0);
	return copy;
}

static const char *adopt(tl_model *model, const char *s, int *nomem)
{
	if (!s)
		return NULL;
	const char *copy = tl_model_intern(model, s, strlen(s));
	if (!copy)
		*nomem = 1;
	return copy;
}

int tl_model_event_args_alloc(tl_model *model, tl_model_event *e, unsigned n)
{
	struct tl_model_arena *arena = arena_of(model);
	if (!arena || n > TL_MAX_ARGS || e->nargs > n)
		return -ENOMEM;
	if (n == 0) {
		e->args = NULL;
		return 0;
	}
	tl_model_arg *args =
	    (tl_model_arg *)(void *)arena_alloc(arena, n * sizeof *args, _Alignof(tl_model_arg));
	if (!args)
		return -ENOMEM;
	if (e->nargs)
		memcpy(args, e->args, e->nargs * sizeof *args);
	memset(args + e->nargs, 0, (n - e->nargs) * sizeof *args);
	e->args = args;
	return 0;
}

int tl_model_event_adopt_strings(tl_model *model, tl_model_event *e)
{
	int nomem = 0;
	e->name = adopt(model, e->name, &nomem);
	e->cat = adopt(model, e->cat, &nomem);
	if (e->nargs > TL_MAX_ARGS)
		e->nargs = TL_MAX_ARGS;
	if (!e->nargs) {
		e->args = NULL;
		return nomem ? -ENOMEM : 0;
	}
	if (tl_model_event_args_alloc(model, e, e->nargs))
		return -ENOMEM;
	for (unsigned a = 0; a < e->nargs; a++) {
		e->args[a].key = adopt(model, e->args[a].key, &nomem);
		if (e->args[a].type == TL_ARG_STRING || e->args[a].type == TL_ARG_STRING_COPY)
			e->args[a].v.s = adopt(model, e->args[a].v.s, &nomem);
	}
	return nomem ? -ENOMEM : 0;
}

tl_model_event *tl_model_event_append(tl_model *model)
{
	struct tl_model_arena *arena = arena_of(model);
	if (!arena || model->nevents >= UINT32_MAX)
		return NULL;
	tl_model_event *events = grow_array(arena->events, &arena->events_cap, model->nevents + 1,
	                                    sizeof *events, TL_ARENA_EVENTS_MIN);
	if (!events)
		return NULL;
	arena->events = events;
	model->events = events;
	tl_model_event *event = &model->events[model->nevents++];
	memset(event, 0, sizeof *event);
	return event;
}

int tl_model_thread_set(tl_model *model, uint32_t tid, const char *name, size_t len)
{
	return tl_model_thread_set_in(model, 0, tid, name, len);
}

/* A thread's key in thread_by_key: its pid as the model stores it (0 for
 * model->pid) and its tid. */
static uint64_t thread_key(uint32_t stored_pid, uint32_t tid)
{
	return (uint64_t)stored_pid << 32 | tid;
}

/* Whether the arena's indexes cover the model's threads: tl_model_thread_set_in
 * made the array, and no insertion into an index failed. */
static int threads_indexed(const tl_model *model)
{
	const struct tl_model_arena *arena = model->arena;
	return arena && model->threads == arena->threads &&
	       model->nthreads == arena->threads_indexed;
}

/* The same for the processes (tl_model_process_set). */
static int processes_indexed(const tl_model *model)
{
	const struct tl_model_arena *arena = model->arena;
	return arena && model->processes == arena->processes &&
	       model->nprocesses == arena->processes_indexed;
}

/* The entry of thread tid whose stored pid is stored_pid, or NULL. */
static tl_model_thread *find_thread(const tl_model *model, uint32_t stored_pid, uint32_t tid)
{
	if (threads_indexed(model)) {
		const uint64_t *i =
		    tl_id_map_get(&model->arena->thread_by_key, thread_key(stored_pid, tid));
		return i ? &model->threads[*i] : NULL;
	}
	for (size_t i = 0; i < model->nthreads; i++) {
		if (model->threads[i].tid == tid && model->threads[i].pid == stored_pid)
			return &model->threads[i];
	}
	return NULL;
}

/* Indexes thread entry i, just appended; an index that cannot grow is
 * given up (lookups then search the array). */
static void index_thread(tl_model *model, size_t i)
{
	struct tl_model_arena *arena = model->arena;
	const tl_model_thread *t = &model->threads[i];
	if (arena->threads_indexed != i)
		return;
	if (tl_id_map_put(&arena->thread_by_key, thread_key(t->pid, t->tid), i) ||
	    !tl_id_map_add(&arena->thread_by_tid, t->tid, i, NULL)) {
		arena->threads_indexed = SIZE_MAX;
		return;
	}
	arena->threads_indexed = i + 1;
}

int tl_model_thread_set_in(tl_model *model, uint32_t pid, uint32_t tid, const char *name,
                           size_t len)
{
	const char *copy = tl_model_intern(model, name, len);
	if (!copy)
		return -ENOMEM;
	if (pid == model->pid)
		pid = 0;
	tl_model_thread *known = find_thread(model, pid, tid);
	if (known) {
		known->name = copy;
		return 0;
	}
	struct tl_model_arena *arena = model->arena;
	tl_model_thread *threads =
	    grow_array(arena->threads, &arena->threads_cap, model->nthreads + 1, sizeof *threads,
	               TL_ARENA_THREADS_MIN);
	if (!threads)
		return -ENOMEM;
	arena->threads = threads;
	model->threads = threads;
	model->threads[model->nthreads] = (tl_model_thread){tid, copy, pid};
	index_thread(model, model->nthreads++);
	return 0;
}

const tl_model_thread *tl_model_thread_find(const tl_model *model, uint32_t pid, uint32_t tid)
{
	return find_thread(model, pid == model->pid ? 0 : pid, tid);
}

/* The entry of process pid, or NULL. */
static tl_model_process *find_process(const tl_model *model, uint32_t pid)
{
	if (processes_indexed(model)) {
		const uint64_t *i = tl_id_map_get(&model->arena->process_by_pid, pid);
		return i ? &model->processes[*i] : NULL;
	}
	for (size_t i = 0; i < model->nprocesses; i++) {
		if (model->processes[i].pid == pid)
			return &model->processes[i];
	}
	return NULL;
}

int tl_model_process_set(tl_model *model, uint32_t pid, const char *name, size_t len)
{
	const char *copy = tl_model_intern(model, name, len);
	if (!copy)
		return -ENOMEM;
	tl_model_process *known = find_process(model, pid);
	if (known) {
		known->name = copy;
		return 0;
	}
	struct tl_model_arena *arena = model->arena;
	tl_model_process *processes =
	    grow_array(arena->processes, &arena->processes_cap, model->nprocesses + 1,
	               sizeof *processes, TL_ARENA_THREADS_MIN);
	if (!processes)
		return -ENOMEM;
	arena->processes = processes;
	model->processes = processes;
	size_t i = model->nprocesses++;
	model->processes[i] = (tl_model_process){pid, copy};
	if (arena->processes_indexed == i)
		arena->processes_indexed =
		    tl_id_map_put(&arena->process_by_pid, pid, i) ? SIZE_MAX : i + 1;
	return 0;
}

const char *tl_model_process_name(const tl_model *model, uint32_t pid)
{
	const tl_model_process *p = find_process(model, pid);
	if (p)
		return p->name;
	if (pid == model->pid && model->process_name)
		return model->process_name;
	return NULL;
}

const char *tl_model_thread_name(const tl_model *model, uint32_t tid)
{
	if (threads_indexed(model)) {
		const uint64_t *i = tl_id_map_get(&model->arena->thread_by_tid, tid);
		return i ? model->threads[*i].name : NULL;
	}
	for (size_t i = 0; i < model->nthreads; i++) {
		if (model->threads[i].tid == tid)
			return model->threads[i].name;
	}
	return NULL;
}

void tl_model_free(tl_model *model)
{
	if (!model)
		return;
	struct tl_model_arena *arena = model->arena;
	if (arena) {
		struct tl_arena_chunk *chunk = arena->chunks;
		while (chunk) {
			struct tl_arena_chunk *next = chunk->next;
			free(chunk);
			chunk = next;
		}
		tl_str_map_free(&arena->strings);
		free(arena->events);
		free(arena->threads);
		free(arena->processes);
		tl_id_map_free(&arena->thread_by_key);
		tl_id_map_free(&arena->thread_by_tid);
		tl_id_map_free(&arena->process_by_pid);
		free(arena);
	}
	memset(model, 0, sizeof *model);
}
