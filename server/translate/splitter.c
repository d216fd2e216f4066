/* splitter: rule-based sentence splitter.  The rules are documented in splitter.h;
 * the comments here explain how they are carried out.
 *
 * The text is cut into lines first (rule 1), then each line is scanned left to right
 * one UTF-8 character at a time.  Every candidate end (a run of terminators) is
 * judged by looking a few characters ahead (rule 2) and, for a single ".", a few
 * bytes back at the word it closes (rule 3).  Looking back is bounded, so the whole
 * split is linear in the text length. */
#include "splitter.h"

#include "util/utf8.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- UTF-8 ---- */

#define CP_INVALID 0xFFFFFFFFu

typedef struct {
    uint32_t cp;   /* the code point, or CP_INVALID for a byte that is not valid UTF-8 */
    size_t n;      /* bytes it takes, 1..4; always 1 for an invalid byte */
} utf8_char;


/* Decodes the character at s (avail > 0 bytes readable).  Strict: overlong forms,
 * surrogates, code points above U+10FFFF and truncated sequences give one opaque
 * invalid byte, so the scan resynchronises on the next byte. */
/* The project's one UTF-8 decoder (engine/util/utf8.h); an invalid byte is
 * stepped over as one unknown character. */
static utf8_char utf8_decode(const unsigned char *s, size_t avail)
{
    uint32_t cp;
    size_t n = mt_utf8_decode(s, avail, &cp);
    return n ? (utf8_char){ cp, n } : (utf8_char){ CP_INVALID, 1 };
}

/* ---- character classes ---- */

static bool is_line_break(uint32_t c)
{
    return c == '\n' || c == '\r' || c == '\v' || c == '\f'
        || c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Whitespace that is trimmed from spans (line breaks included). */
static bool is_space(uint32_t c)
{
    return c == ' ' || c == '\t' || is_line_break(c) || c == 0xA0 || c == 0x1680
        || (c >= 0x2000 && c <= 0x200B) || c == 0x202F || c == 0x205F
        || c == 0x3000 || c == 0xFEFF;
}

/* . ! ? … ‼ ⁇ ⁈ ⁉ and the ideographic / fullwidth 。！？ */
static bool is_terminator(uint32_t c)
{
    return c == '.' || c == '!' || c == '?' || c == 0x2026
        || c == 0x203C || (c >= 0x2047 && c <= 0x2049)
        || c == 0x3002 || c == 0xFF01 || c == 0xFF1F;
}

/* Quotes and brackets that close a sentence when they touch its terminator:
 * " ' ) ] } » ” ’ › and “ ‘ (German closing quotes). */
static bool is_closer(uint32_t c)
{
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0xBB
        || c == 0x201D || c == 0x2019 || c == 0x203A || c == 0x201C || c == 0x2018;
}

/* Quotes and brackets that can open a sentence: " ' ( [ { « “ ‘ „ ‚ ‹ ¿ ¡ */
static bool is_opener(uint32_t c)
{
    return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{' || c == 0xAB
        || c == 0x201C || c == 0x2018 || c == 0x201E || c == 0x201A || c == 0x2039
        || c == 0xBF || c == 0xA1;
}

/* Uppercase letters of the Latin, Greek and Cyrillic blocks that European text uses.
 * Latin Extended-A alternates upper/lower, with the parity flipping twice. */
static bool is_upper(uint32_t c)
{
    if (c < 0x80) return c >= 'A' && c <= 'Z';
    if (c >= 0xC0 && c <= 0xDE) return c != 0xD7;                 /* À..Þ, not × */
    if (c >= 0x100 && c <= 0x137) return (c & 1) == 0;            /* Ā..ķ */
    if (c >= 0x139 && c <= 0x148) return (c & 1) == 1;            /* Ĺ..ň */
    if (c >= 0x14A && c <= 0x177) return (c & 1) == 0;            /* Ŋ..ŷ (Œ Š) */
    if (c == 0x178) return true;                                  /* Ÿ */
    if (c >= 0x179 && c <= 0x17E) return (c & 1) == 1;            /* Ź Ż Ž */
    if (c >= 0x1E00 && c <= 0x1EFF) return (c & 1) == 0;          /* Vietnamese etc. */
    if (c == 0x386 || (c >= 0x388 && c <= 0x38F)) return true;    /* Greek tonos */
    if (c >= 0x391 && c <= 0x3AB) return c != 0x3A2;              /* Α..Ϋ */
    return c >= 0x400 && c <= 0x42F;                              /* Ѐ..Я */
}

/* Letters of scripts without case: a sentence may start with any of them. */
static bool is_caseless_letter(uint32_t c)
{
    return (c >= 0x0590 && c <= 0x11FF)      /* Hebrew, Arabic, Indic, Thai, Georgian, Jamo */
        || (c >= 0x3040 && c <= 0x30FF)      /* kana */
        || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF)   /* CJK */
        || (c >= 0xAC00 && c <= 0xD7A3);     /* Hangul */
}

static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }

/* Rule 2c: what the next sentence may start with. */
static bool is_sentence_opener(uint32_t c)
{
    return is_upper(c) || is_digit(c) || is_opener(c) || is_caseless_letter(c);
}

/* ---- scanning helpers ---- */

typedef struct {
    const unsigned char *s;
    mt_span *out;
    size_t max;      /* capacity of out */
    size_t count;    /* sentences found so far, may exceed max */
} splitter;

static utf8_char char_at(const splitter *sp, size_t pos, size_t end)
{
    return utf8_decode(sp->s + pos, end - pos);
}

static size_t skip_space(const splitter *sp, size_t pos, size_t end)
{
    while (pos < end) {
        utf8_char c = char_at(sp, pos, end);
        if (!is_space(c.cp)) break;
        pos += c.n;
    }
    return pos;
}

/* Length of a whitespace character ending exactly at byte p (0 if none), never
 * looking before lo.  Lead bytes are never continuation bytes, so at most one
 * valid character can end at p and this agrees with the forward decoding. */
static size_t space_ending_at(const splitter *sp, size_t lo, size_t p)
{
    for (size_t k = 1; k <= 4 && k <= p - lo; k++) {
        utf8_char c = utf8_decode(sp->s + p - k, k);
        if (c.n == k && c.cp != CP_INVALID && is_space(c.cp)) return k;
    }
    return 0;
}

static void emit(splitter *sp, size_t start, size_t end)
{
    if (end <= start) return;
    if (sp->count < sp->max)
        sp->out[sp->count] = (mt_span){ .start = start, .len = end - start };
    sp->count++;
}

/* ---- rule 3: exceptions after a single "." ---- */

enum { ABBR_ALWAYS = 0, ABBR_BEFORE_DIGIT = 1 };

/* Abbreviations including their final ".".  ABBR_BEFORE_DIGIT ones are words of
 * their own too ("No." is an answer, "Dec." hardly anything else but still ends
 * sentences), so they only hold the sentence together before a number. */
static const struct abbrev {
    const char *text;
    int when;
} abbrevs[] = {
    /* English titles and Latin */
    { "Mr.", ABBR_ALWAYS }, { "Mrs.", ABBR_ALWAYS }, { "Ms.", ABBR_ALWAYS },
    { "Dr.", ABBR_ALWAYS }, { "Prof.", ABBR_ALWAYS }, { "St.", ABBR_ALWAYS },
    { "Mt.", ABBR_ALWAYS }, { "Jr.", ABBR_ALWAYS }, { "Sr.", ABBR_ALWAYS },
    { "vs.", ABBR_ALWAYS }, { "cf.", ABBR_ALWAYS }, { "e.g.", ABBR_ALWAYS },
    { "i.e.", ABBR_ALWAYS }, { "approx.", ABBR_ALWAYS }, { "al.", ABBR_ALWAYS },
    /* French */
    { "Mme.", ABBR_ALWAYS }, { "Mmes.", ABBR_ALWAYS }, { "Mlle.", ABBR_ALWAYS },
    { "Mlles.", ABBR_ALWAYS }, { "MM.", ABBR_ALWAYS }, { "p.ex.", ABBR_ALWAYS },
    { "c.-\xc3\xa0-d.", ABBR_ALWAYS }, { "env.", ABBR_ALWAYS },
    /* before numbers */
    { "No.", ABBR_BEFORE_DIGIT }, { "Nos.", ABBR_BEFORE_DIGIT }, { "no.", ABBR_BEFORE_DIGIT },
    { "Fig.", ABBR_BEFORE_DIGIT }, { "Figs.", ABBR_BEFORE_DIGIT }, { "p.", ABBR_BEFORE_DIGIT },
    { "pp.", ABBR_BEFORE_DIGIT }, { "vol.", ABBR_BEFORE_DIGIT }, { "Vol.", ABBR_BEFORE_DIGIT },
    { "Jan.", ABBR_BEFORE_DIGIT }, { "Feb.", ABBR_BEFORE_DIGIT }, { "Mar.", ABBR_BEFORE_DIGIT },
    { "Apr.", ABBR_BEFORE_DIGIT }, { "Jun.", ABBR_BEFORE_DIGIT }, { "Jul.", ABBR_BEFORE_DIGIT },
    { "Aug.", ABBR_BEFORE_DIGIT }, { "Sep.", ABBR_BEFORE_DIGIT }, { "Sept.", ABBR_BEFORE_DIGIT },
    { "Oct.", ABBR_BEFORE_DIGIT }, { "Nov.", ABBR_BEFORE_DIGIT }, { "Dec.", ABBR_BEFORE_DIGIT },
};

/* Longest abbreviation in bytes; looking back further than this is pointless. */
#define ABBR_MAX_BYTES 16

/* Exact match, or the abbreviation is lowercase and the word has it capitalised. */
static bool abbrev_matches(const char *a, const unsigned char *w, size_t wlen)
{
    size_t alen = strlen(a);
    if (alen != wlen) return false;
    if (memcmp(a, w, wlen) == 0) return true;
    return a[0] >= 'a' && a[0] <= 'z' && w[0] == (unsigned char)(a[0] - 'a' + 'A')
        && memcmp(a + 1, w + 1, wlen - 1) == 0;
}

static bool is_abbreviation(const unsigned char *w, size_t wlen, bool digit_next)
{
    for (size_t i = 0; i < sizeof abbrevs / sizeof abbrevs[0]; i++)
        if ((abbrevs[i].when == ABBR_ALWAYS || digit_next)
            && abbrev_matches(abbrevs[i].text, w, wlen))
            return true;
    return false;
}

/* "J." "É." : one uppercase letter, then the dot. */
static bool is_initial(const unsigned char *w, size_t wlen)
{
    utf8_char c = utf8_decode(w, wlen);
    return c.n + 1 == wlen && is_upper(c.cp);
}

static bool all_in(const unsigned char *w, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] == '\0' || !strchr(set, w[i])) return false;
    return true;
}

/* "1." "2.3." "a." "iv." "XII." -- the word without its final dot is a number
 * (digits and dots), one ASCII letter, or a roman numeral made of i v x. */
static bool is_list_marker(const unsigned char *w, size_t wlen)
{
    size_t n = wlen - 1;
    if (n == 0) return false;
    if (w[0] >= '0' && w[0] <= '9' && all_in(w, n, "0123456789.")) return true;
    if (n == 1) return (w[0] | 0x20) >= 'a' && (w[0] | 0x20) <= 'z';
    return n <= 6 && (all_in(w, n, "ivx") || all_in(w, n, "IVX"));
}

/* Start of the word that ends with the dot at run (the word includes the dot):
 * the byte after the previous whitespace, or the sentence start.  Returns run + 1
 * (an empty word) if no whitespace is found within ABBR_MAX_BYTES. */
static size_t word_start(const splitter *sp, size_t start, size_t run)
{
    size_t lo = run > start + ABBR_MAX_BYTES ? run - ABBR_MAX_BYTES : start;
    for (size_t p = run; p > lo; p--)
        if (space_ending_at(sp, start, p)) return p;
    return lo == start ? start : run + 1;
}

/* Rules 3a-3c for the single "." at run. */
static bool dot_keeps_sentence(const splitter *sp, size_t start, size_t run, uint32_t next)
{
    size_t w = word_start(sp, start, run), end = run + 1;
    bool whole_sentence = (w == start);
    while (w < run) {                       /* ignore opening quotes and brackets */
        utf8_char c = char_at(sp, w, run);
        if (!is_opener(c.cp)) break;
        w += c.n;
        whole_sentence = false;
    }
    if (w >= run) return false;
    const unsigned char *word = sp->s + w;
    size_t wlen = end - w;
    return is_abbreviation(word, wlen, is_digit(next)) || is_initial(word, wlen)
        || (whole_sentence && is_list_marker(word, wlen));
}

/* Rule 3d: "[...]" "(…)": only dots/ellipses between an opening and a closing bracket. */
static bool is_bracketed_ellipsis(const splitter *sp, size_t run, size_t run_end,
                                  size_t line_start, size_t line_end)
{
    if (run == line_start || run_end >= line_end) return false;
    unsigned char before = sp->s[run - 1], after = sp->s[run_end];
    if (!((before == '(' && after == ')') || (before == '[' && after == ']'))) return false;
    for (size_t p = run; p < run_end;) {
        utf8_char c = char_at(sp, p, run_end);
        if (c.cp != '.' && c.cp != 0x2026) return false;
        p += c.n;
    }
    return true;
}

/* ---- rule 2: judging a run of terminators ---- */

/* Skips the terminator run starting at pos. */
static size_t skip_terminators(const splitter *sp, size_t pos, size_t end)
{
    while (pos < end) {
        utf8_char c = char_at(sp, pos, end);
        if (!is_terminator(c.cp)) break;
        pos += c.n;
    }
    return pos;
}

/* Rule 2a: closing quotes/brackets touching the run, and French " »". */
static size_t skip_closers(const splitter *sp, size_t pos, size_t end)
{
    while (pos < end) {
        utf8_char c = char_at(sp, pos, end);
        if (is_closer(c.cp)) {
            pos += c.n;
            continue;
        }
        if (is_space(c.cp) && pos + c.n < end) {
            utf8_char d = char_at(sp, pos + c.n, end);
            if (d.cp == 0xBB) {
                pos += c.n + d.n;
                continue;
            }
        }
        break;
    }
    return pos;
}

typedef struct {
    size_t line_start, line_end;
    size_t start;     /* the sentence's first byte */
    size_t run;       /* first byte of the terminator run */
    size_t run_end;   /* byte after the run */
    size_t after;     /* byte after the run and its closers */
} candidate;

/* Does the sentence end after this terminator run (rules 2 and 3)? */
static bool ends_sentence(const splitter *sp, const candidate *k)
{
    if (k->after >= k->line_end) return true;
    if (k->run == k->start) return false;                 /* "... and then" */
    if (!is_space(char_at(sp, k->after, k->line_end).cp)) return false;
    size_t q = skip_space(sp, k->after, k->line_end);
    if (q >= k->line_end) return true;
    uint32_t next = char_at(sp, q, k->line_end).cp;
    if (!is_sentence_opener(next)) return false;
    if (is_bracketed_ellipsis(sp, k->run, k->run_end, k->line_start, k->line_end))
        return false;
    bool single_dot = k->run_end == k->run + 1 && sp->s[k->run] == '.';
    if (single_dot && k->after == k->run_end && dot_keeps_sentence(sp, k->start, k->run, next))
        return false;
    return true;
}

/* ---- lines and sentences ---- */

/* Splits one line (no line breaks inside) into sentences. */
static void split_line(splitter *sp, size_t line_start, size_t line_end)
{
    candidate k = { .line_start = line_start, .line_end = line_end };
    size_t pos = skip_space(sp, line_start, line_end);
    while (pos < line_end) {
        size_t last = pos;            /* byte after the last non-space character */
        k.start = pos;
        while (pos < line_end) {
            utf8_char c = char_at(sp, pos, line_end);
            if (is_terminator(c.cp)) {
                k.run = pos;
                k.run_end = skip_terminators(sp, pos, line_end);
                k.after = skip_closers(sp, k.run_end, line_end);
                pos = last = k.after;
                if (ends_sentence(sp, &k)) break;
                continue;
            }
            pos += c.n;
            if (!is_space(c.cp)) last = pos;
        }
        emit(sp, k.start, last);
        pos = skip_space(sp, pos, line_end);
    }
}

int mt_split_sentences(const char *text, size_t len, mt_span *spans, int max)
{
    if (!text || len == 0) return 0;
    splitter sp = {
        .s = (const unsigned char *)text,
        .out = spans,
        .max = (spans && max > 0) ? (size_t)max : 0,
        .count = 0,
    };
    size_t pos = 0;
    while (pos < len) {
        size_t eol = pos;
        utf8_char c = { 0, 0 };
        while (eol < len) {
            c = char_at(&sp, eol, len);
            if (is_line_break(c.cp)) break;
            eol += c.n;
        }
        split_line(&sp, pos, eol);
        pos = eol < len ? eol + c.n : len;
    }
    return sp.count > INT_MAX ? INT_MAX : (int)sp.count;
}
