/*
 * TRACE_EVENT-style macros over <timeline/timeline.h>.
 *
 * Cost when a category is off: one relaxed load of the call site's cached
 * category handle, one relaxed load of its enabled flag, one not-taken
 * branch. Arguments are evaluated only when the category is on.
 *
 * `cat` is a category name (a string); the handle is looked up once per call
 * site and cached. `name` and string argument values are kept by pointer:
 * use literals, or the _COPY forms and TL_STR_COPY() for strings that do not
 * outlive the trace. Argument keys are always kept by pointer.
 *
 * Define TIMELINE_DISABLED to compile every macro to nothing (arguments are
 * still type-checked, never evaluated). Define TL_NO_SHORT_MACROS to drop the
 * unprefixed TRACE_EVENT0... aliases.
 *
 * Internal names (TL_I_*, tl_i_*) may change between versions.
 */
#ifndef TIMELINE_TRACE_EVENT_H
#define TIMELINE_TRACE_EVENT_H

#include <timeline/timeline.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Instant scopes for TL_TRACE_EVENT_INSTANT*. */
#define TL_SCOPE_THREAD TL_EVENT_SCOPE_THREAD
#define TL_SCOPE_PROCESS TL_EVENT_SCOPE_PROCESS
#define TL_SCOPE_GLOBAL TL_EVENT_SCOPE_GLOBAL

/* ---- internals ---------------------------------------------------------- */

#define TL_I_CONCAT2(a, b) a##b
#define TL_I_CONCAT(a, b) TL_I_CONCAT2(a, b)
#define TL_I_UID(prefix) TL_I_CONCAT(prefix, __LINE__)
#define TL_I_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Slow path of the per-call-site cache: registers and stores the handle. */
TL_API tl_category *tl_i_category_resolve(tl_category **cache, const char *name);

/* The cache is published with release by the thread that resolved it, and
 * read with acquire (a plain load on x86), so the handle's fields are seen
 * whole by a thread that did not register it. */
static inline TL_NO_INSTRUMENT tl_category *tl_i_category(tl_category **cache, const char *name)
{
	tl_category *cat = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (TL_I_UNLIKELY(cat == NULL))
		cat = tl_i_category_resolve(cache, name);
	return cat;
}

typedef struct tl_i_copied_string {
	const char *s;
} tl_i_copied_string;

static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_int(const char *key, int64_t v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_INT;
	a.value.i = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_uint(const char *key, uint64_t v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_UINT;
	a.value.u = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_double(const char *key, double v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_DOUBLE;
	a.value.d = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_bool(const char *key, bool v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_BOOL;
	a.value.b = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_pointer(const char *key, const void *v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_POINTER;
	a.value.p = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_string(const char *key, const char *v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_STRING;
	a.value.s = v;
	return a;
}
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg_copy(const char *key, tl_i_copied_string v)
{
	tl_arg a;
	a.key = key;
	a.type = TL_ARG_STRING_COPY;
	a.value.s = v.s;
	return a;
}

static inline TL_NO_INSTRUMENT void tl_i_emit1(const tl_category *cat, tl_phase phase,
                                               unsigned flags, const char *name, uint64_t id,
                                               tl_arg a)
{
	tl_emit(cat, phase, flags, name, id, 0, &a, 1);
}
static inline TL_NO_INSTRUMENT void tl_i_emit2(const tl_category *cat, tl_phase phase,
                                               unsigned flags, const char *name, uint64_t id,
                                               tl_arg a, tl_arg b)
{
	tl_arg args[2] = {a, b};
	tl_emit(cat, phase, flags, name, id, 0, args, 2);
}
static inline TL_NO_INSTRUMENT void tl_i_emit3(const tl_category *cat, tl_phase phase,
                                               unsigned flags, const char *name, uint64_t id,
                                               tl_arg a, tl_arg b, tl_arg c)
{
	tl_arg args[3] = {a, b, c};
	tl_emit(cat, phase, flags, name, id, 0, args, 3);
}
static inline TL_NO_INSTRUMENT void tl_i_emit4(const tl_category *cat, tl_phase phase,
                                               unsigned flags, const char *name, uint64_t id,
                                               tl_arg a, tl_arg b, tl_arg c, tl_arg d)
{
	tl_arg args[4] = {a, b, c, d};
	tl_emit(cat, phase, flags, name, id, 0, args, 4);
}

/* The type an event name must have, for names that are checked, not used. */
static inline TL_NO_INSTRUMENT const char *tl_i_name(const char *name)
{
	return name;
}

/* Scoped slices end through __attribute__((cleanup)). */
typedef struct tl_i_scope {
	const tl_category *cat; /* NULL: nothing was begun */
} tl_i_scope;

static inline TL_NO_INSTRUMENT void tl_i_scope_end(tl_i_scope *scope)
{
	if (scope->cat)
		tl_emit_end(scope->cat);
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_none(void)
{
	tl_i_scope s;
	s.cat = NULL;
	return s;
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begun(const tl_category *cat)
{
	tl_i_scope s;
	s.cat = cat;
	return s;
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begin0(const tl_category *cat, unsigned flags,
                                                            const char *name)
{
	if (flags)
		tl_emit(cat, TL_PHASE_BEGIN, flags, name, 0, 0, NULL, 0);
	else
		tl_emit_begin(cat, name);
	return tl_i_scope_begun(cat);
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begin1(const tl_category *cat, unsigned flags,
                                                            const char *name, tl_arg a)
{
	tl_i_emit1(cat, TL_PHASE_BEGIN, flags, name, 0, a);
	return tl_i_scope_begun(cat);
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begin2(const tl_category *cat, unsigned flags,
                                                            const char *name, tl_arg a, tl_arg b)
{
	tl_i_emit2(cat, TL_PHASE_BEGIN, flags, name, 0, a, b);
	return tl_i_scope_begun(cat);
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begin3(const tl_category *cat, unsigned flags,
                                                            const char *name, tl_arg a, tl_arg b,
                                                            tl_arg c)
{
	tl_i_emit3(cat, TL_PHASE_BEGIN, flags, name, 0, a, b, c);
	return tl_i_scope_begun(cat);
}
static inline TL_NO_INSTRUMENT tl_i_scope tl_i_scope_begin4(const tl_category *cat, unsigned flags,
                                                            const char *name, tl_arg a, tl_arg b,
                                                            tl_arg c, tl_arg d)
{
	tl_i_emit4(cat, TL_PHASE_BEGIN, flags, name, 0, a, b, c, d);
	return tl_i_scope_begun(cat);
}

static inline TL_NO_INSTRUMENT uint64_t tl_i_double_bits(double v)
{
	uint64_t bits;
	__builtin_memcpy(&bits, &v, sizeof bits);
	return bits;
}

static inline TL_NO_INSTRUMENT void tl_i_async_complete(const tl_category *cat, unsigned flags,
                                                        const char *name, uint64_t id,
                                                        tl_timestamp start, tl_timestamp end)
{
	if (end < start) {
		tl_timestamp t = start;
		start = end;
		end = t;
	}
	tl_emit(cat, TL_PHASE_ASYNC_BEGIN, flags, name, id, start, NULL, 0);
	tl_emit(cat, TL_PHASE_ASYNC_END, flags, name, id, end, NULL, 0);
}

#ifdef __cplusplus
} /* extern "C" */

/* clang-format off */
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, bool v) { return tl_i_arg_bool(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, char v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, signed char v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, short v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, int v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, long v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, long long v) { return tl_i_arg_int(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, unsigned char v) { return tl_i_arg_uint(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, unsigned short v) { return tl_i_arg_uint(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, unsigned v) { return tl_i_arg_uint(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, unsigned long v) { return tl_i_arg_uint(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, unsigned long long v) { return tl_i_arg_uint(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, float v) { return tl_i_arg_double(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, double v) { return tl_i_arg_double(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, const char *v) { return tl_i_arg_string(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, tl_i_copied_string v) { return tl_i_arg_copy(k, v); }
static inline TL_NO_INSTRUMENT tl_arg tl_i_arg(const char *k, const void *v) { return tl_i_arg_pointer(k, v); }
/* clang-format on */
#define TL_I_ARG(k, v) tl_i_arg((k), (v))
#define TL_STR_COPY(str) (tl_i_copied_string{(str)})
/* Counter values convert with static_cast, so a pointer or a string is
 * refused; in the return type, so that a call the compiler only checks
 * (inside sizeof, with TIMELINE_DISABLED) refuses it too. */
template <typename T>
static inline TL_NO_INSTRUMENT auto tl_i_counter_bits(T v)
    -> decltype(static_cast<uint64_t>(static_cast<int64_t>(v)))
{
	return static_cast<uint64_t>(static_cast<int64_t>(v));
}
static inline TL_NO_INSTRUMENT uint64_t tl_i_counter_bits(float v)
{
	return tl_i_double_bits(v);
}
static inline TL_NO_INSTRUMENT uint64_t tl_i_counter_bits(double v)
{
	return tl_i_double_bits(v);
}
template <typename T> static inline TL_NO_INSTRUMENT unsigned tl_i_counter_flags(T)
{
	return 0;
}
static inline TL_NO_INSTRUMENT unsigned tl_i_counter_flags(float)
{
	return TL_EVENT_COUNTER_DOUBLE;
}
static inline TL_NO_INSTRUMENT unsigned tl_i_counter_flags(double)
{
	return TL_EVENT_COUNTER_DOUBLE;
}
#define TL_I_COUNTER_BITS(v) tl_i_counter_bits(v)
#define TL_I_COUNTER_FLAGS(v) tl_i_counter_flags(v)
template <typename T>
static inline TL_NO_INSTRUMENT auto tl_i_counter(const tl_category *c, const char *n, T v)
    -> decltype((void)static_cast<int64_t>(v))
{
	tl_emit_counter(c, n, static_cast<int64_t>(v));
}
static inline TL_NO_INSTRUMENT void tl_i_counter(const tl_category *c, const char *n, float v)
{
	tl_emit_counter_double(c, n, v);
}
static inline TL_NO_INSTRUMENT void tl_i_counter(const tl_category *c, const char *n, double v)
{
	tl_emit_counter_double(c, n, v);
}
#define TL_I_COUNTER(c, n, v) tl_i_counter((c), (n), (v))

#else /* C */

#define TL_I_ARG(k, v)                                                                        \
	_Generic((v),                                                                         \
		_Bool: tl_i_arg_bool,                                                         \
		char: tl_i_arg_int,                                                           \
		signed char: tl_i_arg_int,                                                    \
		short: tl_i_arg_int,                                                          \
		int: tl_i_arg_int,                                                            \
		long: tl_i_arg_int,                                                           \
		long long: tl_i_arg_int,                                                      \
		unsigned char: tl_i_arg_uint,                                                 \
		unsigned short: tl_i_arg_uint,                                                \
		unsigned: tl_i_arg_uint,                                                      \
		unsigned long: tl_i_arg_uint,                                                 \
		unsigned long long: tl_i_arg_uint,                                            \
		float: tl_i_arg_double,                                                       \
		double: tl_i_arg_double,                                                      \
		char *: tl_i_arg_string,                                                      \
		const char *: tl_i_arg_string,                                                \
		tl_i_copied_string: tl_i_arg_copy,                                            \
		default: tl_i_arg_pointer)((k), (v))
#define TL_STR_COPY(str) ((tl_i_copied_string){(str)})
#define TL_I_COUNTER_BITS(v)                                                                  \
	_Generic((v), float: tl_i_double_bits((double)(v)), double: tl_i_double_bits((double)(v)), \
		default: (uint64_t)(int64_t)(v))
#define TL_I_COUNTER_FLAGS(v)                                                                 \
	_Generic((v), float: TL_EVENT_COUNTER_DOUBLE, double: TL_EVENT_COUNTER_DOUBLE, default: 0u)
#define TL_I_COUNTER(c, n, v)                                                                 \
	_Generic((v), float: tl_emit_counter_double, double: tl_emit_counter_double,          \
		default: tl_emit_counter)((c), (n), (v))

#endif /* __cplusplus */

#ifndef TIMELINE_DISABLED

/* Runs `body` (a statement using TL_I_CAT) when category `cat` is on.
 * No branch hint: with "unlikely", GCC moves every enabled event's call out
 * of line and jumps there and back; without one, a run of enabled events
 * goes from each call straight to the next check, and a disabled event
 * still costs a load, a test and a branch not taken (timeline-bench). */
#define TL_I_WHEN_ENABLED(cat, body)                                                           \
	do {                                                                                  \
		static tl_category *tl_i_cache_;                                              \
		tl_category *tl_i_cat_ = tl_i_category(&tl_i_cache_, (cat));                  \
		if (tl_category_enabled(tl_i_cat_)) {                                         \
			body;                                                                 \
		}                                                                             \
	} while (0)
#define TL_I_CAT tl_i_cat_

/* A scoped slice: a declaration that ends the slice at scope exit. */
#define TL_I_SCOPED(cat, begin_call)                                                           \
	static tl_category *TL_I_UID(tl_i_cache_);                                            \
	tl_i_scope TL_I_UID(tl_i_scope_) __attribute__((cleanup(tl_i_scope_end), unused)) =   \
		tl_category_enabled(tl_i_category(&TL_I_UID(tl_i_cache_), (cat)))             \
			? begin_call                                                          \
			: tl_i_scope_none()

/* The handle the declaration above resolved, read again: atomically,
 * because another thread may resolve the same call site meanwhile (it
 * stores the same handle; a plain load on x86-64 and aarch64). */
#define TL_I_SC __atomic_load_n(&TL_I_UID(tl_i_cache_), __ATOMIC_RELAXED)

#define TL_TRACE_ENABLED(cat)                                                                  \
	__extension__({                                                                       \
		static tl_category *tl_i_cache_;                                              \
		tl_category_enabled(tl_i_category(&tl_i_cache_, (cat)));                      \
	})

#else /* TIMELINE_DISABLED */

/* Nothing is emitted and nothing is evaluated: the category and the very
 * call the enabled build makes are operands of sizeof, so every argument is
 * type-checked as the enabled build checks it, and no code, static or
 * reference to the library is left in the object. */
#define TL_I_CHECK_CATEGORY(cat) ((void)sizeof(tl_i_category((tl_category **)0, (cat))))
#define TL_I_WHEN_ENABLED(cat, body)                                                           \
	do {                                                                                  \
		TL_I_CHECK_CATEGORY(cat);                                                     \
		(void)sizeof((body), 0);                                                      \
	} while (0)
#define TL_I_CAT ((tl_category *)0)
#define TL_I_SCOPED(cat, begin_call)                                                           \
	do {                                                                                  \
		TL_I_CHECK_CATEGORY(cat);                                                     \
		(void)sizeof(begin_call);                                                     \
	} while (0)
#define TL_I_SC ((tl_category *)0)
#define TL_TRACE_ENABLED(cat) (TL_I_CHECK_CATEGORY(cat), 0)

#endif /* TIMELINE_DISABLED */

/* An END records no name: the argument is type-checked, never evaluated. */
#define TL_I_END_NAME(name) ((void)sizeof(tl_i_name(name)), (const char *)0)

#define TL_I_EVENT0(cat, ph, flags, name, id)                                                  \
	TL_I_WHEN_ENABLED(cat, tl_emit(TL_I_CAT, (ph), (flags), (name), (id), 0, NULL, 0))
#define TL_I_EVENT1(cat, ph, flags, name, id, k1, v1)                                          \
	TL_I_WHEN_ENABLED(cat, tl_i_emit1(TL_I_CAT, (ph), (flags), (name), (id), TL_I_ARG(k1, v1)))
#define TL_I_EVENT2(cat, ph, flags, name, id, k1, v1, k2, v2)                                  \
	TL_I_WHEN_ENABLED(cat, tl_i_emit2(TL_I_CAT, (ph), (flags), (name), (id),              \
					  TL_I_ARG(k1, v1), TL_I_ARG(k2, v2)))
#define TL_I_EVENT3(cat, ph, flags, name, id, k1, v1, k2, v2, k3, v3)                          \
	TL_I_WHEN_ENABLED(cat, tl_i_emit3(TL_I_CAT, (ph), (flags), (name), (id),              \
					  TL_I_ARG(k1, v1), TL_I_ARG(k2, v2), TL_I_ARG(k3, v3)))
#define TL_I_EVENT4(cat, ph, flags, name, id, k1, v1, k2, v2, k3, v3, k4, v4)                  \
	TL_I_WHEN_ENABLED(cat, tl_i_emit4(TL_I_CAT, (ph), (flags), (name), (id),              \
					  TL_I_ARG(k1, v1), TL_I_ARG(k2, v2), TL_I_ARG(k3, v3), \
					  TL_I_ARG(k4, v4)))

#define TL_I_SCOPED0(cat, flags, name) TL_I_SCOPED(cat, tl_i_scope_begin0(TL_I_SC, (flags), (name)))
#define TL_I_SCOPED1(cat, flags, name, k1, v1)                                                 \
	TL_I_SCOPED(cat, tl_i_scope_begin1(TL_I_SC, (flags), (name), TL_I_ARG(k1, v1)))
#define TL_I_SCOPED2(cat, flags, name, k1, v1, k2, v2)                                         \
	TL_I_SCOPED(cat, tl_i_scope_begin2(TL_I_SC, (flags), (name), TL_I_ARG(k1, v1),        \
					   TL_I_ARG(k2, v2)))
#define TL_I_SCOPED3(cat, flags, name, k1, v1, k2, v2, k3, v3)                                 \
	TL_I_SCOPED(cat, tl_i_scope_begin3(TL_I_SC, (flags), (name), TL_I_ARG(k1, v1),        \
					   TL_I_ARG(k2, v2), TL_I_ARG(k3, v3)))
#define TL_I_SCOPED4(cat, flags, name, k1, v1, k2, v2, k3, v3, k4, v4)                         \
	TL_I_SCOPED(cat, tl_i_scope_begin4(TL_I_SC, (flags), (name), TL_I_ARG(k1, v1),        \
					   TL_I_ARG(k2, v2), TL_I_ARG(k3, v3), TL_I_ARG(k4, v4)))

#define TL_TRACE_EVENT_BEGIN0(cat, name) TL_I_WHEN_ENABLED(cat, tl_emit_begin(TL_I_CAT, (name)))
#define TL_TRACE_EVENT_END0(cat, name) TL_I_WHEN_ENABLED(cat, ((void)(name), tl_emit_end(TL_I_CAT)))
#define TL_TRACE_EVENT_BEGIN_NUMBERED(cat, name, number)                                       \
	TL_I_WHEN_ENABLED(cat, tl_emit_begin_numbered(TL_I_CAT, (name), (uint64_t)(number)))

#define TL_TRACE_EVENT_COUNTER(cat, name, value)                                               \
	TL_I_WHEN_ENABLED(cat, TL_I_COUNTER(TL_I_CAT, (name), (value)))
#define TL_TRACE_EVENT_COPY_COUNTER(cat, name, value)                                          \
	TL_I_WHEN_ENABLED(cat, tl_emit(TL_I_CAT, TL_PHASE_COUNTER,                            \
				       TL_I_COUNTER_FLAGS(value) | TL_EVENT_COPY_NAME, (name), \
				       TL_I_COUNTER_BITS(value), 0, NULL, 0))

#define TL_TRACE_EVENT_COMPLETE(cat, name, start, end)                                         \
	TL_I_WHEN_ENABLED(cat, tl_emit_complete(TL_I_CAT, (name), (start), (end)))
#define TL_TRACE_EVENT_ASYNC_COMPLETE(cat, name, id, start, end)                               \
	TL_I_WHEN_ENABLED(cat, tl_i_async_complete(TL_I_CAT, 0, (name), (id), (start), (end)))

/* ---- scoped slices: end at the end of the enclosing block --------------- */
#define TL_TRACE_EVENT0(cat, name) TL_I_SCOPED0(cat, 0, name)
#define TL_TRACE_EVENT1(cat, name, k1, v1) TL_I_SCOPED1(cat, 0, name, k1, v1)
#define TL_TRACE_EVENT2(cat, name, k1, v1, k2, v2) TL_I_SCOPED2(cat, 0, name, k1, v1, k2, v2)
#define TL_TRACE_EVENT3(cat, name, k1, v1, k2, v2, k3, v3)                                     \
	TL_I_SCOPED3(cat, 0, name, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT4(cat, name, k1, v1, k2, v2, k3, v3, k4, v4)                             \
	TL_I_SCOPED4(cat, 0, name, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_COPY0(cat, name) TL_I_SCOPED0(cat, TL_EVENT_COPY_NAME, name)
#define TL_TRACE_EVENT_COPY1(cat, name, k1, v1) TL_I_SCOPED1(cat, TL_EVENT_COPY_NAME, name, k1, v1)
#define TL_TRACE_EVENT_COPY2(cat, name, k1, v1, k2, v2)                                        \
	TL_I_SCOPED2(cat, TL_EVENT_COPY_NAME, name, k1, v1, k2, v2)
#define TL_TRACE_EVENT_COPY3(cat, name, k1, v1, k2, v2, k3, v3)                                \
	TL_I_SCOPED3(cat, TL_EVENT_COPY_NAME, name, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_COPY4(cat, name, k1, v1, k2, v2, k3, v3, k4, v4)                        \
	TL_I_SCOPED4(cat, TL_EVENT_COPY_NAME, name, k1, v1, k2, v2, k3, v3, k4, v4)

/* ---- explicit begin / end ------------------------------------------------ */
#define TL_TRACE_EVENT_BEGIN1(cat, name, k1, v1) TL_I_EVENT1(cat, TL_PHASE_BEGIN, 0, name, 0, k1, v1)
#define TL_TRACE_EVENT_BEGIN2(cat, name, k1, v1, k2, v2)                                       \
	TL_I_EVENT2(cat, TL_PHASE_BEGIN, 0, name, 0, k1, v1, k2, v2)
#define TL_TRACE_EVENT_BEGIN3(cat, name, k1, v1, k2, v2, k3, v3)                               \
	TL_I_EVENT3(cat, TL_PHASE_BEGIN, 0, name, 0, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_BEGIN4(cat, name, k1, v1, k2, v2, k3, v3, k4, v4)                       \
	TL_I_EVENT4(cat, TL_PHASE_BEGIN, 0, name, 0, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_COPY_BEGIN0(cat, name) TL_I_EVENT0(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0)
#define TL_TRACE_EVENT_COPY_BEGIN1(cat, name, k1, v1)                                          \
	TL_I_EVENT1(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, k1, v1)
#define TL_TRACE_EVENT_COPY_BEGIN2(cat, name, k1, v1, k2, v2)                                  \
	TL_I_EVENT2(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2)
#define TL_TRACE_EVENT_COPY_BEGIN3(cat, name, k1, v1, k2, v2, k3, v3)                          \
	TL_I_EVENT3(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_COPY_BEGIN4(cat, name, k1, v1, k2, v2, k3, v3, k4, v4)                  \
	TL_I_EVENT4(cat, TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2, k3, v3, k4,  \
		    v4)
/* The name of an END is not recorded: exporters repeat the BEGIN's. */
#define TL_TRACE_EVENT_END1(cat, name, k1, v1)                                                 \
	TL_I_EVENT1(cat, TL_PHASE_END, 0, TL_I_END_NAME(name), 0, k1, v1)
#define TL_TRACE_EVENT_END2(cat, name, k1, v1, k2, v2)                                         \
	TL_I_EVENT2(cat, TL_PHASE_END, 0, TL_I_END_NAME(name), 0, k1, v1, k2, v2)
#define TL_TRACE_EVENT_END3(cat, name, k1, v1, k2, v2, k3, v3)                                 \
	TL_I_EVENT3(cat, TL_PHASE_END, 0, TL_I_END_NAME(name), 0, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_END4(cat, name, k1, v1, k2, v2, k3, v3, k4, v4)                         \
	TL_I_EVENT4(cat, TL_PHASE_END, 0, TL_I_END_NAME(name), 0, k1, v1, k2, v2, k3, v3, k4, v4)

/* ---- instants: scope is TL_SCOPE_THREAD, _PROCESS or _GLOBAL -------------- */
#define TL_TRACE_EVENT_INSTANT0(cat, name, scope) TL_I_EVENT0(cat, TL_PHASE_INSTANT, scope, name, 0)
#define TL_TRACE_EVENT_INSTANT1(cat, name, scope, k1, v1)                                      \
	TL_I_EVENT1(cat, TL_PHASE_INSTANT, scope, name, 0, k1, v1)
#define TL_TRACE_EVENT_INSTANT2(cat, name, scope, k1, v1, k2, v2)                              \
	TL_I_EVENT2(cat, TL_PHASE_INSTANT, scope, name, 0, k1, v1, k2, v2)
#define TL_TRACE_EVENT_INSTANT3(cat, name, scope, k1, v1, k2, v2, k3, v3)                      \
	TL_I_EVENT3(cat, TL_PHASE_INSTANT, scope, name, 0, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_INSTANT4(cat, name, scope, k1, v1, k2, v2, k3, v3, k4, v4)              \
	TL_I_EVENT4(cat, TL_PHASE_INSTANT, scope, name, 0, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_COPY_INSTANT0(cat, name, scope)                                         \
	TL_I_EVENT0(cat, TL_PHASE_INSTANT, (scope) | TL_EVENT_COPY_NAME, name, 0)
#define TL_TRACE_EVENT_COPY_INSTANT1(cat, name, scope, k1, v1)                                 \
	TL_I_EVENT1(cat, TL_PHASE_INSTANT, (scope) | TL_EVENT_COPY_NAME, name, 0, k1, v1)
#define TL_TRACE_EVENT_COPY_INSTANT2(cat, name, scope, k1, v1, k2, v2)                         \
	TL_I_EVENT2(cat, TL_PHASE_INSTANT, (scope) | TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2)
#define TL_TRACE_EVENT_COPY_INSTANT3(cat, name, scope, k1, v1, k2, v2, k3, v3)                 \
	TL_I_EVENT3(cat, TL_PHASE_INSTANT, (scope) | TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2, \
		    k3, v3)
#define TL_TRACE_EVENT_COPY_INSTANT4(cat, name, scope, k1, v1, k2, v2, k3, v3, k4, v4)         \
	TL_I_EVENT4(cat, TL_PHASE_INSTANT, (scope) | TL_EVENT_COPY_NAME, name, 0, k1, v1, k2, v2, \
		    k3, v3, k4, v4)

/* ---- async slices: begin and end may be on different threads ------------- */
#define TL_TRACE_EVENT_ASYNC_BEGIN0(cat, name, id) TL_I_EVENT0(cat, TL_PHASE_ASYNC_BEGIN, 0, name, id)
#define TL_TRACE_EVENT_ASYNC_BEGIN1(cat, name, id, k1, v1)                                     \
	TL_I_EVENT1(cat, TL_PHASE_ASYNC_BEGIN, 0, name, id, k1, v1)
#define TL_TRACE_EVENT_ASYNC_BEGIN2(cat, name, id, k1, v1, k2, v2)                             \
	TL_I_EVENT2(cat, TL_PHASE_ASYNC_BEGIN, 0, name, id, k1, v1, k2, v2)
#define TL_TRACE_EVENT_ASYNC_BEGIN3(cat, name, id, k1, v1, k2, v2, k3, v3)                     \
	TL_I_EVENT3(cat, TL_PHASE_ASYNC_BEGIN, 0, name, id, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_ASYNC_BEGIN4(cat, name, id, k1, v1, k2, v2, k3, v3, k4, v4)             \
	TL_I_EVENT4(cat, TL_PHASE_ASYNC_BEGIN, 0, name, id, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_ASYNC_END0(cat, name, id) TL_I_EVENT0(cat, TL_PHASE_ASYNC_END, 0, name, id)
#define TL_TRACE_EVENT_ASYNC_END1(cat, name, id, k1, v1)                                       \
	TL_I_EVENT1(cat, TL_PHASE_ASYNC_END, 0, name, id, k1, v1)
#define TL_TRACE_EVENT_ASYNC_END2(cat, name, id, k1, v1, k2, v2)                               \
	TL_I_EVENT2(cat, TL_PHASE_ASYNC_END, 0, name, id, k1, v1, k2, v2)
#define TL_TRACE_EVENT_ASYNC_END3(cat, name, id, k1, v1, k2, v2, k3, v3)                       \
	TL_I_EVENT3(cat, TL_PHASE_ASYNC_END, 0, name, id, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_ASYNC_END4(cat, name, id, k1, v1, k2, v2, k3, v3, k4, v4)               \
	TL_I_EVENT4(cat, TL_PHASE_ASYNC_END, 0, name, id, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_ASYNC_INSTANT0(cat, name, id)                                           \
	TL_I_EVENT0(cat, TL_PHASE_ASYNC_INSTANT, 0, name, id)
#define TL_TRACE_EVENT_ASYNC_INSTANT1(cat, name, id, k1, v1)                                   \
	TL_I_EVENT1(cat, TL_PHASE_ASYNC_INSTANT, 0, name, id, k1, v1)
#define TL_TRACE_EVENT_ASYNC_INSTANT2(cat, name, id, k1, v1, k2, v2)                           \
	TL_I_EVENT2(cat, TL_PHASE_ASYNC_INSTANT, 0, name, id, k1, v1, k2, v2)
#define TL_TRACE_EVENT_ASYNC_INSTANT3(cat, name, id, k1, v1, k2, v2, k3, v3)                   \
	TL_I_EVENT3(cat, TL_PHASE_ASYNC_INSTANT, 0, name, id, k1, v1, k2, v2, k3, v3)
#define TL_TRACE_EVENT_ASYNC_INSTANT4(cat, name, id, k1, v1, k2, v2, k3, v3, k4, v4)           \
	TL_I_EVENT4(cat, TL_PHASE_ASYNC_INSTANT, 0, name, id, k1, v1, k2, v2, k3, v3, k4, v4)
#define TL_TRACE_EVENT_COPY_ASYNC_BEGIN0(cat, name, id)                                        \
	TL_I_EVENT0(cat, TL_PHASE_ASYNC_BEGIN, TL_EVENT_COPY_NAME, name, id)
#define TL_TRACE_EVENT_COPY_ASYNC_END0(cat, name, id)                                          \
	TL_I_EVENT0(cat, TL_PHASE_ASYNC_END, TL_EVENT_COPY_NAME, name, id)

/* ---- flows: arrows between the slices enclosing these events -------------- */
#define TL_TRACE_EVENT_FLOW_BEGIN0(cat, name, id) TL_I_EVENT0(cat, TL_PHASE_FLOW_BEGIN, 0, name, id)
#define TL_TRACE_EVENT_FLOW_BEGIN1(cat, name, id, k1, v1)                                      \
	TL_I_EVENT1(cat, TL_PHASE_FLOW_BEGIN, 0, name, id, k1, v1)
#define TL_TRACE_EVENT_FLOW_STEP0(cat, name, id) TL_I_EVENT0(cat, TL_PHASE_FLOW_STEP, 0, name, id)
#define TL_TRACE_EVENT_FLOW_END0(cat, name, id) TL_I_EVENT0(cat, TL_PHASE_FLOW_END, 0, name, id)
/* Global ids: the same id links flows across processes. */
#define TL_TRACE_EVENT_FLOW_BEGIN_GLOBAL0(cat, name, id)                                       \
	TL_I_EVENT0(cat, TL_PHASE_FLOW_BEGIN, TL_EVENT_SCOPE_GLOBAL, name, id)
#define TL_TRACE_EVENT_FLOW_STEP_GLOBAL0(cat, name, id)                                        \
	TL_I_EVENT0(cat, TL_PHASE_FLOW_STEP, TL_EVENT_SCOPE_GLOBAL, name, id)
#define TL_TRACE_EVENT_FLOW_END_GLOBAL0(cat, name, id)                                         \
	TL_I_EVENT0(cat, TL_PHASE_FLOW_END, TL_EVENT_SCOPE_GLOBAL, name, id)

/* Chrome's spelling of a counter with one series. */
#define TL_TRACE_COUNTER1(cat, name, value) TL_TRACE_EVENT_COUNTER(cat, name, value)

#ifndef TL_NO_SHORT_MACROS
#define TRACE_EVENT0 TL_TRACE_EVENT0
#define TRACE_EVENT1 TL_TRACE_EVENT1
#define TRACE_EVENT2 TL_TRACE_EVENT2
#define TRACE_EVENT3 TL_TRACE_EVENT3
#define TRACE_EVENT4 TL_TRACE_EVENT4
#define TRACE_EVENT_COPY0 TL_TRACE_EVENT_COPY0
#define TRACE_EVENT_COPY1 TL_TRACE_EVENT_COPY1
#define TRACE_EVENT_COPY2 TL_TRACE_EVENT_COPY2
#define TRACE_EVENT_COPY3 TL_TRACE_EVENT_COPY3
#define TRACE_EVENT_COPY4 TL_TRACE_EVENT_COPY4
#define TRACE_EVENT_BEGIN0 TL_TRACE_EVENT_BEGIN0
#define TRACE_EVENT_BEGIN_NUMBERED TL_TRACE_EVENT_BEGIN_NUMBERED
#define TRACE_EVENT_BEGIN1 TL_TRACE_EVENT_BEGIN1
#define TRACE_EVENT_BEGIN2 TL_TRACE_EVENT_BEGIN2
#define TRACE_EVENT_BEGIN3 TL_TRACE_EVENT_BEGIN3
#define TRACE_EVENT_BEGIN4 TL_TRACE_EVENT_BEGIN4
#define TRACE_EVENT_COPY_BEGIN0 TL_TRACE_EVENT_COPY_BEGIN0
#define TRACE_EVENT_COPY_BEGIN1 TL_TRACE_EVENT_COPY_BEGIN1
#define TRACE_EVENT_COPY_BEGIN2 TL_TRACE_EVENT_COPY_BEGIN2
#define TRACE_EVENT_COPY_BEGIN3 TL_TRACE_EVENT_COPY_BEGIN3
#define TRACE_EVENT_COPY_BEGIN4 TL_TRACE_EVENT_COPY_BEGIN4
#define TRACE_EVENT_END0 TL_TRACE_EVENT_END0
#define TRACE_EVENT_END1 TL_TRACE_EVENT_END1
#define TRACE_EVENT_END2 TL_TRACE_EVENT_END2
#define TRACE_EVENT_END3 TL_TRACE_EVENT_END3
#define TRACE_EVENT_END4 TL_TRACE_EVENT_END4
#define TRACE_EVENT_INSTANT0 TL_TRACE_EVENT_INSTANT0
#define TRACE_EVENT_INSTANT1 TL_TRACE_EVENT_INSTANT1
#define TRACE_EVENT_INSTANT2 TL_TRACE_EVENT_INSTANT2
#define TRACE_EVENT_INSTANT3 TL_TRACE_EVENT_INSTANT3
#define TRACE_EVENT_INSTANT4 TL_TRACE_EVENT_INSTANT4
#define TRACE_EVENT_COPY_INSTANT0 TL_TRACE_EVENT_COPY_INSTANT0
#define TRACE_EVENT_COPY_INSTANT1 TL_TRACE_EVENT_COPY_INSTANT1
#define TRACE_EVENT_COPY_INSTANT2 TL_TRACE_EVENT_COPY_INSTANT2
#define TRACE_EVENT_COPY_INSTANT3 TL_TRACE_EVENT_COPY_INSTANT3
#define TRACE_EVENT_COPY_INSTANT4 TL_TRACE_EVENT_COPY_INSTANT4
#define TRACE_EVENT_ASYNC_BEGIN0 TL_TRACE_EVENT_ASYNC_BEGIN0
#define TRACE_EVENT_ASYNC_BEGIN1 TL_TRACE_EVENT_ASYNC_BEGIN1
#define TRACE_EVENT_ASYNC_BEGIN2 TL_TRACE_EVENT_ASYNC_BEGIN2
#define TRACE_EVENT_ASYNC_BEGIN3 TL_TRACE_EVENT_ASYNC_BEGIN3
#define TRACE_EVENT_ASYNC_BEGIN4 TL_TRACE_EVENT_ASYNC_BEGIN4
#define TRACE_EVENT_ASYNC_END0 TL_TRACE_EVENT_ASYNC_END0
#define TRACE_EVENT_ASYNC_END1 TL_TRACE_EVENT_ASYNC_END1
#define TRACE_EVENT_ASYNC_END2 TL_TRACE_EVENT_ASYNC_END2
#define TRACE_EVENT_ASYNC_END3 TL_TRACE_EVENT_ASYNC_END3
#define TRACE_EVENT_ASYNC_END4 TL_TRACE_EVENT_ASYNC_END4
#define TRACE_EVENT_ASYNC_INSTANT0 TL_TRACE_EVENT_ASYNC_INSTANT0
#define TRACE_EVENT_ASYNC_INSTANT1 TL_TRACE_EVENT_ASYNC_INSTANT1
#define TRACE_EVENT_ASYNC_INSTANT2 TL_TRACE_EVENT_ASYNC_INSTANT2
#define TRACE_EVENT_ASYNC_INSTANT3 TL_TRACE_EVENT_ASYNC_INSTANT3
#define TRACE_EVENT_ASYNC_INSTANT4 TL_TRACE_EVENT_ASYNC_INSTANT4
#define TRACE_EVENT_COPY_ASYNC_BEGIN0 TL_TRACE_EVENT_COPY_ASYNC_BEGIN0
#define TRACE_EVENT_COPY_ASYNC_END0 TL_TRACE_EVENT_COPY_ASYNC_END0
#define TRACE_EVENT_FLOW_BEGIN0 TL_TRACE_EVENT_FLOW_BEGIN0
#define TRACE_EVENT_FLOW_BEGIN1 TL_TRACE_EVENT_FLOW_BEGIN1
#define TRACE_EVENT_FLOW_STEP0 TL_TRACE_EVENT_FLOW_STEP0
#define TRACE_EVENT_FLOW_END0 TL_TRACE_EVENT_FLOW_END0
#define TRACE_EVENT_FLOW_BEGIN_GLOBAL0 TL_TRACE_EVENT_FLOW_BEGIN_GLOBAL0
#define TRACE_EVENT_FLOW_STEP_GLOBAL0 TL_TRACE_EVENT_FLOW_STEP_GLOBAL0
#define TRACE_EVENT_FLOW_END_GLOBAL0 TL_TRACE_EVENT_FLOW_END_GLOBAL0
#define TRACE_EVENT_COUNTER TL_TRACE_EVENT_COUNTER
#define TRACE_EVENT_COPY_COUNTER TL_TRACE_EVENT_COPY_COUNTER
#define TRACE_COUNTER1 TL_TRACE_COUNTER1
#define TRACE_EVENT_COMPLETE TL_TRACE_EVENT_COMPLETE
#define TRACE_EVENT_ASYNC_COMPLETE TL_TRACE_EVENT_ASYNC_COMPLETE
#define TRACE_ENABLED TL_TRACE_ENABLED
#endif /* TL_NO_SHORT_MACROS */

#endif /* TIMELINE_TRACE_EVENT_H */
