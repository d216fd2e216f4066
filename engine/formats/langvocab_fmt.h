/* langvocab_fmt.h: the target-language vocabulary map, mtserve's own text
 * format, read from memory and checked; every error names its line (and the
 * byte where the line starts).  This comment is the format's definition
 * (README "Multilingual models" and docs/M2M100.md point here).
 *
 *   The first line is exactly "mtserve-lang-vocab 1" (a CR before its LF is
 *   allowed, on every line).  Then one line per language:
 *
 *     CODE TAB PIECE SPACE PIECE ...
 *
 *   CODE is one of the model's language codes as its tokenizer names them
 *   (NLLB-200: "fra_Latn"; M2M-100: "fr"); the PIECEs are vocabulary entries
 *   (SentencePiece pieces, "</s>", "<unk>" included), separated by one or more
 *   spaces: the target ids that language's text is made of.  A piece holding a
 *   space, a TAB, a CR or a LF cannot be listed (SentencePiece writes a space
 *   as U+2581: its pieces hold none).  Blank lines and lines whose first byte
 *   is '#' are skipped.  A language appears on one line at most; a piece may
 *   repeat (counted once).  No NUL byte anywhere.
 *
 * Here the bytes are checked (header, TAB, a code, at least one piece); that
 * the codes are the model's, each once, and the pieces in its vocabulary is
 * the model's side (model/langvocab.c), which names the line in its errors
 * too.  models/recipe/lang_vocab.py writes such a file from text per language. */
#ifndef MT_LANGVOCAB_FMT_H
#define MT_LANGVOCAB_FMT_H

#include <stddef.h>

#include "util/status.h"

#define MT_LANGVOCAB_MAGIC "mtserve-lang-vocab 1"

/* One call per language line (code, not NUL-terminated), then one per piece
 * of it; line is 1-based, at the byte offset of the line's start.  A
 * callback's failure (its own message set) stops the parse and is returned. */
typedef struct {
    mt_status (*lang)(void *ctx, const char *code, size_t code_n, long line, size_t at, mt_err *err);
    mt_status (*piece)(void *ctx, const char *piece, size_t piece_n, long line, size_t at, mt_err *err);
    void *ctx;
} mt_langvocab_cb;

mt_status mt_langvocab_parse(const char *buf, size_t n, const mt_langvocab_cb *cb, mt_err *err);

#endif
