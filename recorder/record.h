/*
 * The in-memory event record: what the emitters write into a thread's block
 * and what the snapshot writer reads back. Internal.
 *
 * A record is a run of 64-bit words:
 *
 *   word 0   timestamp (tl_timestamp: TSC ticks or clock nanoseconds)
 *   word 1   header, see TL_REC_* below (its flags, TL_REC_F_*, are in
 *            record_view.h)
 *   [name]   unless the phase carries no name (END): a kept pointer, or
 *            with TL_REC_F_NAME_INLINE a string (see "strings"); with
 *            TL_REC_F_NAME_NUMBER a kept pointer and the number's word
 *            (tl_emit_begin_numbered)
 *   [value]  when tl_record_has_value(phase): async/flow id, COMPLETE end
 *            timestamp, counter value bits
 *   [args]   for each argument: a key (kept pointer, or inline string when
 *            TL_REC_F_STRINGS_INLINE), then its value word, or for
 *            TL_ARG_STRING_COPY (and every string when
 *            TL_REC_F_STRINGS_INLINE) an inline string
 *
 * A function record (TL_REC_F_FUNCTION) is a BEGIN of two words whose
 * name is a function id (function_table.h: a code address interned), held
 * in the header's category and argument-type bits (TL_REC_FUNCTION_ID):
 * it has no category and no argument. What ends it is a plain END.
 *
 * Strings inline: one word holding the byte length, then the bytes padded
 * with zeros to a whole number of words (no terminator counted).
 *
 * Header word:
 *   bits  0..15  category index
 *   bits 16..23  phase (tl_phase character)
 *   bits 24..39  record length in words, header and timestamp included
 *   bits 40..47  flags (TL_REC_F_*)
 *   bits 48..63  argument types, 4 bits each, argument 0 in the low nibble;
 *                the count is the number of non-zero nibbles
 * (The category is in the low bits so that the hot path builds a header
 * from the category index and one immediate.)
 */
#ifndef TIMELINE_RECORD_H
#define TIMELINE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

#include "recorder/record_view.h"

/* The flags (TL_REC_F_*) are in record_view.h: a decoded record carries them. */

#define TL_REC_CATEGORY_SHIFT 0
#define TL_REC_PHASE_SHIFT 16
#define TL_REC_WORDS_SHIFT 24
#define TL_REC_FLAGS_SHIFT 40
#define TL_REC_ARGTYPES_SHIFT 48

#define TL_REC_HEADER(phase, words, flags, cat, argtypes)                                     \
	(((uint64_t)(uint16_t)(cat) << TL_REC_CATEGORY_SHIFT) |                               \
	 ((uint64_t)(uint8_t)(phase) << TL_REC_PHASE_SHIFT) |                                 \
	 ((uint64_t)(words) << TL_REC_WORDS_SHIFT) | ((uint64_t)(flags) << TL_REC_FLAGS_SHIFT) | \
	 ((uint64_t)(argtypes) << TL_REC_ARGTYPES_SHIFT))

#define TL_REC_PHASE(h) ((char)(((h) >> TL_REC_PHASE_SHIFT) & 0xff))
#define TL_REC_WORDS(h) ((unsigned)(((h) >> TL_REC_WORDS_SHIFT) & 0xffff))
#define TL_REC_FLAGS(h) ((unsigned)(((h) >> TL_REC_FLAGS_SHIFT) & 0xff))
#define TL_REC_CATEGORY(h) ((unsigned)(((h) >> TL_REC_CATEGORY_SHIFT) & 0xffff))
#define TL_REC_ARGTYPE(h, i) ((tl_arg_type)(((h) >> (TL_REC_ARGTYPES_SHIFT + 4 * (i))) & 0xf))

/* A function record's header (TL_REC_F_FUNCTION): the id's low 16 bits
 * in the category field, its high 16 bits in the argument types. */
#define TL_REC_FUNCTION_HEADER(id)                                                            \
	TL_REC_HEADER(TL_PHASE_BEGIN, 2, TL_REC_F_FUNCTION, (uint32_t)(id) & 0xffff,           \
	              (uint32_t)(id) >> 16)
#define TL_REC_FUNCTION_ID(h)                                                                 \
	((uint32_t)TL_REC_CATEGORY(h) | (uint32_t)(((h) >> TL_REC_ARGTYPES_SHIFT) << 16))

/* Largest record: inline name and TL_MAX_ARGS copied strings, all capped. */
#define TL_REC_STRING_WORDS(len) (1 + ((len) + 7) / 8)
#define TL_REC_MAX_WORDS                                                                      \
	(3 + TL_REC_STRING_WORDS(TL_COPY_MAX) * (1 + 2 * TL_MAX_ARGS))

static inline int tl_record_has_name(char phase)
{
	return phase != TL_PHASE_END;
}

static inline int tl_record_has_value(char phase)
{
	switch (phase) {
	case TL_PHASE_COMPLETE:
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
	case TL_PHASE_COUNTER:
		return 1;
	default:
		return 0;
	}
}

/* One of the tl_phase values a record may hold. */
static inline int tl_record_phase_known(char phase)
{
	return phase == TL_PHASE_BEGIN || phase == TL_PHASE_END || phase == TL_PHASE_INSTANT ||
	       phase == TL_PHASE_COUNTER || tl_record_has_value(phase);
}

#endif /* TIMELINE_RECORD_H */
