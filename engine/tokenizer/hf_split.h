/* hf_split: the Split pre-tokenizer of Qwen2/Qwen3 (and Llama 3) tokenizer.json
 * files, its regex matched by hand.  Internal to engine/tokenizer (hf_bpe.c).
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * with behavior "Isolated": every match is a piece.  Llama 3's pattern is the
 * same with \p{N}{1,3}.  Classes as Oniguruma (the HF tokenizers regex engine)
 * reads them: \s is White_Space (NEL yes, U+FEFF no), (?i) folds U+017F to s.
 */
#ifndef MT_HF_SPLIT_H
#define MT_HF_SPLIT_H

#include <stddef.h>
#include <stdint.h>

/* The patterns we implement (the exact strings of the files). */
#define HF_SPLIT_QWEN2 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define HF_SPLIT_LLAMA3 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* The length (in code points, >= 1) of the match starting at cp[i], i < n;
 * cls[k] = hfu_class(cp[k]).  max_digits: 1 (Qwen2), 3 (Llama 3). */
size_t hf_split_match(const uint32_t *cp, const uint8_t *cls, size_t n, size_t i, int max_digits);

#endif
