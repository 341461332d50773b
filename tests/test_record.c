/* tl_record_decode: every phase, every argument type, malformed records. */
#include "support/test_support.h"

#include <stdlib.h>
#include <string.h>

#include "recorder/record.h"

#define ARGTYPES(a, b, c, d)                                                                       \
	((unsigned)(a) | (unsigned)(b) << 4 | (unsigned)(c) << 8 | (unsigned)(d) << 12)

/* Builds records word by word; rec_end() writes the length into the header. */
struct rec {
	uint64_t w[256];
	size_t n;
	size_t start;
};

static void rec_start(struct rec *r, uint64_t ts, char phase, unsigned flags, unsigned cat,
                      unsigned argtypes)
{
	r->start = r->n;
	r->w[r->n++] = ts;
	r->w[r->n++] = TL_REC_HEADER(phase, 0, flags, cat, argtypes);
}

static void rec_word(struct rec *r, uint64_t v)
{
	r->w[r->n++] = v;
}

static void rec_ptr(struct rec *r, const void *p)
{
	rec_word(r, (uint64_t)(uintptr_t)p);
}

static void rec_string(struct rec *r, const char *s)
{
	size_t len = strlen(s);
	rec_word(r, len);
	for (size_t off = 0; off < len; off += 8) {
		uint64_t word = 0;
		memcpy(&word, s + off, len - off < 8 ? len - off : 8);
		rec_word(r, word);
	}
}

static size_t rec_end(struct rec *r)
{
	size_t len = r->n - r->start;
	r->w[r->start + 1] |= (uint64_t)len << TL_REC_WORDS_SHIFT;
	return len;
}

static double bits_to_double(uint64_t bits)
{
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

static uint64_t double_to_bits(double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	return bits;
}

static void assert_string_view(const char *str, size_t len, const char *expected)
{
	assert_non_null(str);
	assert_int_equal(len, strlen(expected));
	assert_memory_equal(str, expected, len);
}

/* ---- phases --------------------------------------------------------------- */

static void test_record_decodes_begin_with_kept_name(void **state)
{
	(void)state;
	static const char name[] = "draw";
	struct rec r = {0};
	rec_start(&r, 1234, TL_PHASE_BEGIN, 0, 7, 0);
	rec_ptr(&r, name);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_int_equal(len, 3);
	assert_int_equal(v.ts, 1234);
	assert_int_equal(v.phase, TL_PHASE_BEGIN);
	assert_int_equal(v.category, 7);
	assert_int_equal(v.flags, 0);
	assert_ptr_equal(v.name, name);
	assert_int_equal(v.name_len, 4);
	assert_int_equal(v.nargs, 0);
}

static void test_record_decodes_a_numbered_name(void **state)
{
	(void)state;
	static const char name[] = "frame";
	struct rec r = {0};
	rec_start(&r, 99, TL_PHASE_BEGIN, TL_REC_F_NAME_NUMBER, 2, 0);
	rec_ptr(&r, name);
	rec_word(&r, 18446744073709551615u);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_int_equal(len, 4);
	assert_ptr_equal(v.name, name);
	assert_int_equal(v.name_number, 18446744073709551615u);
	char buf[TL_RECORD_NAME_MAX];
	size_t n;
	const char *full = tl_record_name(&v, buf, &n);
	assert_string_view(full, n, "frame 18446744073709551615");
	/* the number's word is part of the record: without it, malformed */
	assert_int_equal(tl_record_decode(r.w, 3, &v), 0);
	r.w[1] = TL_REC_HEADER(TL_PHASE_BEGIN, 3, TL_REC_F_NAME_NUMBER, 2, 0);
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
}

static void test_record_decodes_end_without_name(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 99, TL_PHASE_END, 0, 3, 0);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 2);
	assert_int_equal(len, 2);
	assert_int_equal(v.phase, TL_PHASE_END);
	assert_null(v.name);
	assert_int_equal(v.category, 3);
}

static void test_record_decodes_inline_name(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 5, TL_PHASE_INSTANT, TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(&r, "a copied name, longer than a word");
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_string_view(v.name, v.name_len, "a copied name, longer than a word");
}

static void test_record_decodes_complete_end_timestamp(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1000, TL_PHASE_COMPLETE, 0, 1, 0);
	rec_ptr(&r, "work");
	rec_word(&r, 2500);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_int_equal(v.phase, TL_PHASE_COMPLETE);
	assert_int_equal(v.ts, 1000);
	assert_int_equal(v.value, 2500);
	assert_string_view(v.name, v.name_len, "work");
}

static void test_record_decodes_value_of_every_id_phase(void **state)
{
	(void)state;
	const char phases[] = {TL_PHASE_ASYNC_BEGIN, TL_PHASE_ASYNC_END, TL_PHASE_ASYNC_INSTANT,
	                       TL_PHASE_FLOW_BEGIN,  TL_PHASE_FLOW_STEP, TL_PHASE_FLOW_END,
	                       TL_PHASE_COUNTER};
	for (size_t i = 0; i < sizeof phases; i++) {
		struct rec r = {0};
		rec_start(&r, 10 + i, phases[i], 0, 2, 0);
		rec_ptr(&r, "id");
		rec_word(&r, 0xabcdef0000000000ull + i);
		size_t len = rec_end(&r);

		tl_record_view v;
		assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
		assert_int_equal(len, 4);
		assert_int_equal(v.phase, phases[i]);
		assert_int_equal(v.value, 0xabcdef0000000000ull + i);
		assert_string_view(v.name, v.name_len, "id");
	}
}

static void test_record_decodes_instant_scope_flags(void **state)
{
	(void)state;
	const unsigned scopes[] = {TL_EVENT_SCOPE_THREAD, TL_EVENT_SCOPE_PROCESS,
	                           TL_EVENT_SCOPE_GLOBAL};
	for (size_t i = 0; i < 3; i++) {
		struct rec r = {0};
		unsigned flags = (scopes[i] >> 1) << TL_REC_F_SCOPE_SHIFT;
		rec_start(&r, 1, TL_PHASE_INSTANT, flags, 0, 0);
		rec_ptr(&r, "mark");
		rec_end(&r);

		tl_record_view v;
		assert_int_equal(tl_record_decode(r.w, r.n, &v), 3);
		assert_int_equal((v.flags >> TL_REC_F_SCOPE_SHIFT) & 3, scopes[i] >> 1);
	}
}

static void test_record_decodes_counter_double_flag(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_COUNTER, TL_REC_F_COUNTER_DOUBLE, 0, 0);
	rec_ptr(&r, "fps");
	rec_word(&r, double_to_bits(59.94));
	rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 4);
	assert_true(v.flags & TL_REC_F_COUNTER_DOUBLE);
	assert_true(bits_to_double(v.value) == 59.94);
}

/* ---- arguments ------------------------------------------------------------ */

static void test_record_decodes_args_of_every_type(void **state)
{
	(void)state;
	static const char kept[] = "kept value";
	/* Two records: the four number-like types, then bool, pointer and the
	 * two string types. */
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0,
	          ARGTYPES(TL_ARG_INT, TL_ARG_UINT, TL_ARG_DOUBLE, TL_ARG_BOOL));
	rec_ptr(&r, "numbers");
	rec_ptr(&r, "i");
	rec_word(&r, (uint64_t)-42);
	rec_ptr(&r, "u");
	rec_word(&r, UINT64_MAX);
	rec_ptr(&r, "d");
	rec_word(&r, double_to_bits(-0.5));
	rec_ptr(&r, "b");
	rec_word(&r, 1);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_int_equal(v.nargs, 4);
	assert_string_view(v.args[0].key, v.args[0].key_len, "i");
	assert_int_equal(v.args[0].type, TL_ARG_INT);
	assert_int_equal((int64_t)v.args[0].bits, -42);
	assert_int_equal(v.args[1].type, TL_ARG_UINT);
	assert_true(v.args[1].bits == UINT64_MAX);
	assert_int_equal(v.args[2].type, TL_ARG_DOUBLE);
	assert_true(bits_to_double(v.args[2].bits) == -0.5);
	assert_int_equal(v.args[3].type, TL_ARG_BOOL);
	assert_int_equal(v.args[3].bits, 1);

	struct rec s = {0};
	rec_start(&s, 2, TL_PHASE_BEGIN, 0, 0,
	          ARGTYPES(TL_ARG_POINTER, TL_ARG_STRING, TL_ARG_STRING_COPY, 0));
	rec_ptr(&s, "strings");
	rec_ptr(&s, "p");
	rec_word(&s, 0xdeadbeef);
	rec_ptr(&s, "s");
	rec_ptr(&s, kept);
	rec_ptr(&s, "c");
	rec_string(&s, "copied value");
	len = rec_end(&s);

	assert_int_equal(tl_record_decode(s.w, s.n, &v), len);
	assert_int_equal(v.nargs, 3);
	assert_int_equal(v.args[0].type, TL_ARG_POINTER);
	assert_int_equal(v.args[0].bits, 0xdeadbeef);
	assert_int_equal(v.args[1].type, TL_ARG_STRING);
	assert_ptr_equal(v.args[1].str, kept);
	assert_int_equal(v.args[1].str_len, strlen(kept));
	assert_int_equal(v.args[2].type, TL_ARG_STRING_COPY);
	assert_string_view(v.args[2].key, v.args[2].key_len, "c");
	assert_string_view(v.args[2].str, v.args[2].str_len, "copied value");
}

static void test_record_decodes_every_string_inline(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 77, TL_PHASE_ASYNC_BEGIN, TL_REC_F_STRINGS_INLINE | TL_REC_F_TS_NS, 4,
	          ARGTYPES(TL_ARG_STRING, TL_ARG_INT, TL_ARG_STRING_COPY, 0));
	rec_string(&r, "load");
	rec_word(&r, 0x55);
	rec_string(&r, "file");
	rec_string(&r, "/data/level1.pak");
	rec_string(&r, "size");
	rec_word(&r, 4096);
	rec_string(&r, "origin");
	rec_string(&r, "network");
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_int_equal(v.flags, TL_REC_F_STRINGS_INLINE | TL_REC_F_TS_NS);
	assert_string_view(v.name, v.name_len, "load");
	assert_int_equal(v.value, 0x55);
	assert_int_equal(v.nargs, 3);
	assert_string_view(v.args[0].key, v.args[0].key_len, "file");
	assert_string_view(v.args[0].str, v.args[0].str_len, "/data/level1.pak");
	assert_string_view(v.args[1].key, v.args[1].key_len, "size");
	assert_int_equal(v.args[1].bits, 4096);
	assert_string_view(v.args[2].key, v.args[2].key_len, "origin");
	assert_string_view(v.args[2].str, v.args[2].str_len, "network");
}

static void test_record_decodes_empty_inline_string(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_INSTANT, TL_REC_F_STRINGS_INLINE, 0,
	          ARGTYPES(TL_ARG_STRING_COPY, 0, 0, 0));
	rec_string(&r, "");
	rec_string(&r, "k");
	rec_string(&r, "");
	size_t len = rec_end(&r);
	assert_int_equal(len, 2 + 1 + 2 + 1);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_string_view(v.name, v.name_len, "");
	assert_string_view(v.args[0].str, v.args[0].str_len, "");
}

static void test_record_decodes_string_of_whole_words(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_INSTANT, TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(&r, "0123456789abcdef");
	size_t len = rec_end(&r);
	assert_int_equal(len, 2 + 1 + 2);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_string_view(v.name, v.name_len, "0123456789abcdef");
}

static void test_record_reads_null_kept_pointers_as_empty(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0, ARGTYPES(TL_ARG_STRING, 0, 0, 0));
	rec_ptr(&r, NULL);
	rec_ptr(&r, NULL);
	rec_ptr(&r, NULL);
	size_t len = rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
	assert_string_view(v.name, v.name_len, "");
	assert_string_view(v.args[0].key, v.args[0].key_len, "");
	assert_string_view(v.args[0].str, v.args[0].str_len, "");
}

static void test_record_walks_consecutive_records(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 10, TL_PHASE_BEGIN, 0, 0, 0);
	rec_ptr(&r, "outer");
	rec_end(&r);
	rec_start(&r, 20, TL_PHASE_COUNTER, TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(&r, "queue depth");
	rec_word(&r, 3);
	rec_end(&r);
	rec_start(&r, 30, TL_PHASE_END, 0, 0, 0);
	rec_end(&r);

	const char expected[] = {TL_PHASE_BEGIN, TL_PHASE_COUNTER, TL_PHASE_END};
	size_t pos = 0, count = 0;
	while (pos < r.n) {
		tl_record_view v;
		size_t n = tl_record_decode(r.w + pos, r.n - pos, &v);
		assert_true(n > 0);
		assert_int_equal(v.phase, expected[count]);
		assert_int_equal(v.ts, 10 * (count + 1));
		pos += n;
		count++;
	}
	assert_int_equal(count, 3);
	assert_int_equal(pos, r.n);
}

/* ---- malformed records ---------------------------------------------------- */

static void test_record_rejects_fewer_than_two_words(void **state)
{
	(void)state;
	uint64_t w[2] = {1, TL_REC_HEADER(TL_PHASE_END, 2, 0, 0, 0)};
	tl_record_view v;
	assert_int_equal(tl_record_decode(w, 1, &v), 0);
	assert_int_equal(tl_record_decode(w, 0, &v), 0);
	assert_int_equal(tl_record_decode(w, 2, &v), 2);
}

static void test_record_rejects_zero_length(void **state)
{
	(void)state;
	uint64_t w[4] = {1, TL_REC_HEADER(TL_PHASE_END, 0, 0, 0, 0), 0, 0};
	tl_record_view v;
	assert_int_equal(tl_record_decode(w, 4, &v), 0);
	w[1] = TL_REC_HEADER(TL_PHASE_END, 1, 0, 0, 0);
	assert_int_equal(tl_record_decode(w, 4, &v), 0);
}

static void test_record_rejects_length_past_avail(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0, 0);
	rec_ptr(&r, "x");
	size_t len = rec_end(&r);
	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, len - 1, &v), 0);
	assert_int_equal(tl_record_decode(r.w, len, &v), len);
}

static void test_record_rejects_unknown_phase(void **state)
{
	(void)state;
	uint64_t w[2] = {1, TL_REC_HEADER('Z', 2, 0, 0, 0)};
	tl_record_view v;
	assert_int_equal(tl_record_decode(w, 2, &v), 0);
	w[1] = TL_REC_HEADER(0, 2, 0, 0, 0);
	assert_int_equal(tl_record_decode(w, 2, &v), 0);
}

static void test_record_rejects_unknown_flag_bits(void **state)
{
	(void)state;
	uint64_t w[2] = {1, TL_REC_HEADER(TL_PHASE_END, 2, 0x80, 0, 0)};
	tl_record_view v;
	assert_int_equal(tl_record_decode(w, 2, &v), 0);
}

static void test_record_rejects_bad_arg_type_nibble(void **state)
{
	(void)state;
	for (unsigned type = TL_ARG_STRING_COPY + 1; type < 16; type++) {
		struct rec r = {0};
		rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0, ARGTYPES(type, 0, 0, 0));
		rec_ptr(&r, "x");
		rec_ptr(&r, "k");
		rec_word(&r, 1);
		rec_end(&r);
		tl_record_view v;
		assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
	}
}

static void test_record_rejects_arg_after_empty_nibble(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0, ARGTYPES(0, TL_ARG_INT, 0, 0));
	rec_ptr(&r, "x");
	rec_ptr(&r, "k");
	rec_word(&r, 1);
	rec_end(&r);
	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
}

static void test_record_rejects_string_length_past_record_end(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_INSTANT, TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(&r, "twelve bytes");
	size_t len = rec_end(&r);
	r.w[2] = 17; /* three words of bytes, only two in the record */
	/* Followed by another record: the string must not run into it. */
	rec_start(&r, 2, TL_PHASE_END, 0, 0, 0);
	rec_end(&r);

	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
	r.w[2] = 16;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), len);
}

static void test_record_rejects_huge_string_length(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_INSTANT, TL_REC_F_NAME_INLINE, 0, 0);
	rec_string(&r, "abc");
	rec_end(&r);
	const uint64_t lengths[] = {UINT64_MAX, UINT64_MAX - 6, (uint64_t)1 << 61, 1ull << 32};
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		r.w[2] = lengths[i];
		tl_record_view v;
		assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
	}
}

static void test_record_rejects_length_longer_than_contents(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_BEGIN, 0, 0, 0);
	rec_ptr(&r, "x");
	rec_word(&r, 0);
	rec_end(&r);
	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
}

static void test_record_rejects_length_shorter_than_contents(void **state)
{
	(void)state;
	struct rec r = {0};
	rec_start(&r, 1, TL_PHASE_COMPLETE, 0, 0, 0);
	rec_ptr(&r, "x");
	rec_word(&r, 5);
	rec_end(&r);
	r.w[1] = TL_REC_HEADER(TL_PHASE_COMPLETE, 3, 0, 0, 0);
	tl_record_view v;
	assert_int_equal(tl_record_decode(r.w, r.n, &v), 0);
}

/* Under AddressSanitizer: random inline-string records in a buffer of
 * exactly avail words, tried with every header length, never make the
 * decoder read past the buffer. */
static void test_record_decode_stays_inside_avail(void **state)
{
	(void)state;
	const char phases[] = "BEXibentsfC";
	unsigned seed = 12345;
	int decoded = 0;
	for (int iter = 0; iter < 5000; iter++) {
		size_t avail = 2 + (size_t)(rand_r(&seed) % 12);
		uint64_t *w = malloc(avail * sizeof *w);
		assert_non_null(w);
		for (size_t i = 0; i < avail; i++)
			w[i] = (uint64_t)(rand_r(&seed) % 20); /* lengths that often fit */
		unsigned types = 0;
		int nargs = rand_r(&seed) % (TL_MAX_ARGS + 1);
		for (int i = 0; i < nargs; i++)
			types |= (unsigned)(1 + rand_r(&seed) % TL_ARG_STRING_COPY) << (4 * i);
		if (rand_r(&seed) % 8 == 0)
			types = (unsigned)rand_r(&seed) & 0xffff;
		unsigned flags = TL_REC_F_STRINGS_INLINE | ((unsigned)rand_r(&seed) & 0x2f);
		char phase = phases[rand_r(&seed) % 11];

		for (size_t words = 0; words <= avail + 1; words++) {
			w[1] = TL_REC_HEADER(phase, words, flags, 0, types);
			tl_record_view v;
			size_t n = tl_record_decode(w, avail, &v);
			assert_true(n <= avail);
			if (n) {
				assert_int_equal(n, words);
				decoded++;
			}
		}
		free(w);
	}
	/* The inputs reach the argument and string paths, not only the header
	 * checks. */
	assert_true(decoded > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_decodes_begin_with_kept_name),
	    cmocka_unit_test(test_record_decodes_a_numbered_name),
	    cmocka_unit_test(test_record_decodes_end_without_name),
	    cmocka_unit_test(test_record_decodes_inline_name),
	    cmocka_unit_test(test_record_decodes_complete_end_timestamp),
	    cmocka_unit_test(test_record_decodes_value_of_every_id_phase),
	    cmocka_unit_test(test_record_decodes_instant_scope_flags),
	    cmocka_unit_test(test_record_decodes_counter_double_flag),
	    cmocka_unit_test(test_record_decodes_args_of_every_type),
	    cmocka_unit_test(test_record_decodes_every_string_inline),
	    cmocka_unit_test(test_record_decodes_empty_inline_string),
	    cmocka_unit_test(test_record_decodes_string_of_whole_words),
	    cmocka_unit_test(test_record_reads_null_kept_pointers_as_empty),
	    cmocka_unit_test(test_record_walks_consecutive_records),
	    cmocka_unit_test(test_record_rejects_fewer_than_two_words),
	    cmocka_unit_test(test_record_rejects_zero_length),
	    cmocka_unit_test(test_record_rejects_length_past_avail),
	    cmocka_unit_test(test_record_rejects_unknown_phase),
	    cmocka_unit_test(test_record_rejects_unknown_flag_bits),
	    cmocka_unit_test(test_record_rejects_bad_arg_type_nibble),
	    cmocka_unit_test(test_record_rejects_arg_after_empty_nibble),
	    cmocka_unit_test(test_record_rejects_string_length_past_record_end),
	    cmocka_unit_test(test_record_rejects_huge_string_length),
	    cmocka_unit_test(test_record_rejects_length_longer_than_contents),
	    cmocka_unit_test(test_record_rejects_length_shorter_than_contents),
	    cmocka_unit_test(test_record_decode_stays_inside_avail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
