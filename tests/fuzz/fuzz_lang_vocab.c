/* fuzz_lang_vocab: the target-language vocabulary map's reader
 * (engine/formats/langvocab_fmt.c) on untrusted bytes.  Every code and piece
 * a callback gets lies inside the input, is non-empty and holds no blank
 * (a code no space, TAB or LF; a piece no space, TAB or LF); pieces come only
 * after their line's code, lines in order; a refusal is MT_ERR_FORMAT naming
 * a line (or the NUL byte), or a callback's own failure.  An accepted file
 * starts with the magic line, and its language lines are counted again here
 * by a plain split on LF: as many as the parser reported.  The first input
 * byte: bit 0 has the piece callback fail on a piece "!" (the parse stops
 * with that status). */
#include "fuzz_common.h"

#include "formats/langvocab_fmt.h"

#include <string.h>

static const char *lo, *hi;
static long langs, last_line, lang_line;
static int stop_on_bang;

static int inside(const char *p, size_t n) { return p >= lo && p + n <= hi; }

static mt_status on_lang(void *ctx, const char *code, size_t n, long line, size_t at, mt_err *err)
{
    FUZZ_CHECK(inside(code, n) && n > 0 && line >= 2 && line > last_line && lo + at <= code);
    FUZZ_CHECK(!memchr(code, ' ', n) && !memchr(code, '\t', n) && !memchr(code, '\n', n));
    langs++;
    last_line = lang_line = line;
    return MT_OK;
}

static mt_status on_piece(void *ctx, const char *p, size_t n, long line, size_t at, mt_err *err)
{
    FUZZ_CHECK(inside(p, n) && n > 0 && line == lang_line && lo + at < p);
    FUZZ_CHECK(!memchr(p, ' ', n) && !memchr(p, '\t', n) && !memchr(p, '\n', n));
    if (stop_on_bang && n == 1 && p[0] == '!')
        return mt_err_set(err, MT_ERR_INPUT, "stop");
    return MT_OK;
}

/* Language lines by a plain split: after line 1, neither blank (spaces and
 * TABs, a CR before the LF) nor starting with '#'. */
static long count_lines(const char *b, size_t n)
{
    long k = 0, line = 0;
    for (size_t at = 0; at < n;) {
        const char *p = b + at, *nl = memchr(p, '\n', n - at), *end = nl ? nl : b + n;
        size_t len = (size_t)(end - p);
        if (len && p[len - 1] == '\r')
            len--;
        int blank = 1;
        for (size_t i = 0; i < len; i++)
            blank &= p[i] == ' ' || p[i] == '\t';
        k += ++line > 1 && !blank && p[0] != '#';
        at = (size_t)(end - b) + 1;
    }
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    stop_on_bang = data[0] & 1;
    const char *buf = (const char *)data + 1;
    size_t n = size - 1;
    lo = buf, hi = buf + n;
    langs = last_line = lang_line = 0;
    mt_err err = {0};
    mt_langvocab_cb cb = {.lang = on_lang, .piece = on_piece, .ctx = NULL};
    mt_status st = mt_langvocab_parse(buf, n, &cb, &err);
    if (st != MT_OK) {
        FUZZ_CHECK((st == MT_ERR_FORMAT && (strstr(err.msg, "line ") || strstr(err.msg, "NUL"))) ||
                   (st == MT_ERR_INPUT && stop_on_bang));
        return 0;
    }
    size_t ml = strlen(MT_LANGVOCAB_MAGIC);
    FUZZ_CHECK(n >= ml && !memcmp(buf, MT_LANGVOCAB_MAGIC, ml) && !memchr(buf, 0, n));
    FUZZ_CHECK(langs == count_lines(buf, n));
    return 0;
}
