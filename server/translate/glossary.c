/* glossary: terminology entries and their matches in a text (glossary.h).
 *
 * Entries live in an array (their index is their public number).  Their
 * sources also sit in two tries whose edges are characters, a space standing
 * for any run of whitespace: the case-insensitive entries under root 0 by their
 * folded characters, the exact ones under root 1 by their own.  A node holds
 * the entry whose key ends there, if any, so the tries are also the key index
 * that finds the entry a new one replaces.  All edges of both tries are one
 * open-addressing hash table keyed by (node, character): a step is one probe
 * whatever the fan-out.
 *
 * srv_glossary_match walks both tries at once from every position where a word
 * may start (the previous character is not a word character): each text
 * character steps the folded cursor by its folding and the exact cursor by
 * itself, until both fall off.  The deepest node where an entry ends at a word
 * boundary wins, an exact entry over a case-insensitive one at the same depth:
 * leftmost-longest.  Text bytes that are not valid UTF-8 are one-byte
 * characters with no edge, so they stop a walk. */
#include "glossary.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/check.h"
#include "util/hash.h"
#include "util/utf8.h"

#define CP_INVALID 0xFFFFFFFFu
#define QUOTE_BYTES 48          /* of a term quoted in a message */

/* ---- character classes ---- */

/* Simple case folding as runs: first, count, stride (1, or 2 for the
 * alternating upper/lower pairs), upper (the run's characters are uppercase or
 * titlecase letters), delta to add.  Generated from Python 3.11's unicodedata
 * (Unicode 14): fold(c) = c.casefold() when one character, else c.lower() when
 * one character (CaseFolding.txt's C + S statuses); Cherokee left out (it folds
 * lowercase to uppercase); upper = c.isupper() or category Lt. */
typedef struct {
    uint32_t first;
    uint16_t count;
    uint8_t  stride, upper;
    int32_t  delta;
} fold_run;

static const fold_run fold_runs[] = {
    {0x0041,26,1,1,32}, {0x00B5,1,1,0,775}, {0x00C0,23,1,1,32}, {0x00D8,7,1,1,32},
    {0x0100,24,2,1,1}, {0x0132,3,2,1,1}, {0x0139,8,2,1,1}, {0x014A,23,2,1,1}, {0x0178,1,1,1,-121},
    {0x0179,3,2,1,1}, {0x017F,1,1,0,-268}, {0x0181,1,1,1,210}, {0x0182,2,2,1,1}, {0x0186,1,1,1,206},
    {0x0187,1,1,1,1}, {0x0189,2,1,1,205}, {0x018B,1,1,1,1}, {0x018E,1,1,1,79}, {0x018F,1,1,1,202},
    {0x0190,1,1,1,203}, {0x0191,1,1,1,1}, {0x0193,1,1,1,205}, {0x0194,1,1,1,207},
    {0x0196,1,1,1,211}, {0x0197,1,1,1,209}, {0x0198,1,1,1,1}, {0x019C,1,1,1,211},
    {0x019D,1,1,1,213}, {0x019F,1,1,1,214}, {0x01A0,3,2,1,1}, {0x01A6,1,1,1,218}, {0x01A7,1,1,1,1},
    {0x01A9,1,1,1,218}, {0x01AC,1,1,1,1}, {0x01AE,1,1,1,218}, {0x01AF,1,1,1,1}, {0x01B1,2,1,1,217},
    {0x01B3,2,2,1,1}, {0x01B7,1,1,1,219}, {0x01B8,1,1,1,1}, {0x01BC,1,1,1,1}, {0x01C4,1,1,1,2},
    {0x01C5,1,1,1,1}, {0x01C7,1,1,1,2}, {0x01C8,1,1,1,1}, {0x01CA,1,1,1,2}, {0x01CB,9,2,1,1},
    {0x01DE,9,2,1,1}, {0x01F1,1,1,1,2}, {0x01F2,2,2,1,1}, {0x01F6,1,1,1,-97}, {0x01F7,1,1,1,-56},
    {0x01F8,20,2,1,1}, {0x0220,1,1,1,-130}, {0x0222,9,2,1,1}, {0x023A,1,1,1,10795},
    {0x023B,1,1,1,1}, {0x023D,1,1,1,-163}, {0x023E,1,1,1,10792}, {0x0241,1,1,1,1},
    {0x0243,1,1,1,-195}, {0x0244,1,1,1,69}, {0x0245,1,1,1,71}, {0x0246,5,2,1,1}, {0x0345,1,1,0,116},
    {0x0370,2,2,1,1}, {0x0376,1,1,1,1}, {0x037F,1,1,1,116}, {0x0386,1,1,1,38}, {0x0388,3,1,1,37},
    {0x038C,1,1,1,64}, {0x038E,2,1,1,63}, {0x0391,17,1,1,32}, {0x03A3,9,1,1,32}, {0x03C2,1,1,0,1},
    {0x03CF,1,1,1,8}, {0x03D0,1,1,0,-30}, {0x03D1,1,1,0,-25}, {0x03D5,1,1,0,-15},
    {0x03D6,1,1,0,-22}, {0x03D8,12,2,1,1}, {0x03F0,1,1,0,-54}, {0x03F1,1,1,0,-48},
    {0x03F4,1,1,1,-60}, {0x03F5,1,1,0,-64}, {0x03F7,1,1,1,1}, {0x03F9,1,1,1,-7}, {0x03FA,1,1,1,1},
    {0x03FD,3,1,1,-130}, {0x0400,16,1,1,80}, {0x0410,32,1,1,32}, {0x0460,17,2,1,1},
    {0x048A,27,2,1,1}, {0x04C0,1,1,1,15}, {0x04C1,7,2,1,1}, {0x04D0,48,2,1,1}, {0x0531,38,1,1,48},
    {0x10A0,38,1,1,7264}, {0x10C7,1,1,1,7264}, {0x10CD,1,1,1,7264}, {0x1C80,1,1,0,-6222},
    {0x1C81,1,1,0,-6221}, {0x1C82,1,1,0,-6212}, {0x1C83,2,1,0,-6210}, {0x1C85,1,1,0,-6211},
    {0x1C86,1,1,0,-6204}, {0x1C87,1,1,0,-6180}, {0x1C88,1,1,0,35267}, {0x1C90,43,1,1,-3008},
    {0x1CBD,3,1,1,-3008}, {0x1E00,75,2,1,1}, {0x1E9B,1,1,0,-58}, {0x1E9E,1,1,1,-7615},
    {0x1EA0,48,2,1,1}, {0x1F08,8,1,1,-8}, {0x1F18,6,1,1,-8}, {0x1F28,8,1,1,-8}, {0x1F38,8,1,1,-8},
    {0x1F48,6,1,1,-8}, {0x1F59,4,2,1,-8}, {0x1F68,8,1,1,-8}, {0x1F88,8,1,1,-8}, {0x1F98,8,1,1,-8},
    {0x1FA8,8,1,1,-8}, {0x1FB8,2,1,1,-8}, {0x1FBA,2,1,1,-74}, {0x1FBC,1,1,1,-9},
    {0x1FBE,1,1,0,-7173}, {0x1FC8,4,1,1,-86}, {0x1FCC,1,1,1,-9}, {0x1FD8,2,1,1,-8},
    {0x1FDA,2,1,1,-100}, {0x1FE8,2,1,1,-8}, {0x1FEA,2,1,1,-112}, {0x1FEC,1,1,1,-7},
    {0x1FF8,2,1,1,-128}, {0x1FFA,2,1,1,-126}, {0x1FFC,1,1,1,-9}, {0x2126,1,1,1,-7517},
    {0x212A,1,1,1,-8383}, {0x212B,1,1,1,-8262}, {0x2132,1,1,1,28}, {0x2160,16,1,1,16},
    {0x2183,1,1,1,1}, {0x24B6,26,1,1,26}, {0x2C00,48,1,1,48}, {0x2C60,1,1,1,1},
    {0x2C62,1,1,1,-10743}, {0x2C63,1,1,1,-3814}, {0x2C64,1,1,1,-10727}, {0x2C67,3,2,1,1},
    {0x2C6D,1,1,1,-10780}, {0x2C6E,1,1,1,-10749}, {0x2C6F,1,1,1,-10783}, {0x2C70,1,1,1,-10782},
    {0x2C72,1,1,1,1}, {0x2C75,1,1,1,1}, {0x2C7E,2,1,1,-10815}, {0x2C80,50,2,1,1}, {0x2CEB,2,2,1,1},
    {0x2CF2,1,1,1,1}, {0xA640,23,2,1,1}, {0xA680,14,2,1,1}, {0xA722,7,2,1,1}, {0xA732,31,2,1,1},
    {0xA779,2,2,1,1}, {0xA77D,1,1,1,-35332}, {0xA77E,5,2,1,1}, {0xA78B,1,1,1,1},
    {0xA78D,1,1,1,-42280}, {0xA790,2,2,1,1}, {0xA796,10,2,1,1}, {0xA7AA,1,1,1,-42308},
    {0xA7AB,1,1,1,-42319}, {0xA7AC,1,1,1,-42315}, {0xA7AD,1,1,1,-42305}, {0xA7AE,1,1,1,-42308},
    {0xA7B0,1,1,1,-42258}, {0xA7B1,1,1,1,-42282}, {0xA7B2,1,1,1,-42261}, {0xA7B3,1,1,1,928},
    {0xA7B4,8,2,1,1}, {0xA7C4,1,1,1,-48}, {0xA7C5,1,1,1,-42307}, {0xA7C6,1,1,1,-35384},
    {0xA7C7,2,2,1,1}, {0xA7D0,1,1,1,1}, {0xA7D6,2,2,1,1}, {0xA7F5,1,1,1,1}, {0xFF21,26,1,1,32},
    {0x10400,40,1,1,40}, {0x104B0,36,1,1,40}, {0x10570,11,1,1,39}, {0x1057C,15,1,1,39},
    {0x1058C,7,1,1,39}, {0x10594,2,1,1,39}, {0x10C80,51,1,1,64}, {0x118A0,32,1,1,32},
    {0x16E40,32,1,1,32}, {0x1E900,34,1,1,34},
};

/* Code points >= 0x80 that are not word characters, as inclusive ranges:
 * categories P*, S*, Z*, Cc and the bidi controls (U+061C, U+200E-200F,
 * U+202A-202E, U+2066-2069) and U+FEFF; ZWNJ and ZWJ are word characters.
 * Unassigned code points between two such ranges are merged into them.
 * Generated from Python 3.11's unicodedata (Unicode 14). */
static const uint32_t nonword_ranges[][2] = {
    {0x0080,0x00A9}, {0x00AB,0x00AC}, {0x00AE,0x00B1}, {0x00B4,0x00B4}, {0x00B6,0x00B8},
    {0x00BB,0x00BB}, {0x00BF,0x00BF}, {0x00D7,0x00D7}, {0x00F7,0x00F7}, {0x02C2,0x02C5},
    {0x02D2,0x02DF}, {0x02E5,0x02EB}, {0x02ED,0x02ED}, {0x02EF,0x02FF}, {0x0375,0x0375},
    {0x037E,0x037E}, {0x0384,0x0385}, {0x0387,0x0387}, {0x03F6,0x03F6}, {0x0482,0x0482},
    {0x055A,0x055F}, {0x0589,0x058F}, {0x05BE,0x05BE}, {0x05C0,0x05C0}, {0x05C3,0x05C3},
    {0x05C6,0x05C6}, {0x05F3,0x05F4}, {0x0606,0x060F}, {0x061B,0x061F}, {0x066A,0x066D},
    {0x06D4,0x06D4}, {0x06DE,0x06DE}, {0x06E9,0x06E9}, {0x06FD,0x06FE}, {0x0700,0x070D},
    {0x07F6,0x07F9}, {0x07FE,0x07FF}, {0x0830,0x083E}, {0x085E,0x085E}, {0x0888,0x0888},
    {0x0964,0x0965}, {0x0970,0x0970}, {0x09F2,0x09F3}, {0x09FA,0x09FB}, {0x09FD,0x09FD},
    {0x0A76,0x0A76}, {0x0AF0,0x0AF1}, {0x0B70,0x0B70}, {0x0BF3,0x0BFA}, {0x0C77,0x0C77},
    {0x0C7F,0x0C7F}, {0x0C84,0x0C84}, {0x0D4F,0x0D4F}, {0x0D79,0x0D79}, {0x0DF4,0x0DF4},
    {0x0E3F,0x0E3F}, {0x0E4F,0x0E4F}, {0x0E5A,0x0E5B}, {0x0F01,0x0F17}, {0x0F1A,0x0F1F},
    {0x0F34,0x0F34}, {0x0F36,0x0F36}, {0x0F38,0x0F38}, {0x0F3A,0x0F3D}, {0x0F85,0x0F85},
    {0x0FBE,0x0FC5}, {0x0FC7,0x0FDA}, {0x104A,0x104F}, {0x109E,0x109F}, {0x10FB,0x10FB},
    {0x1360,0x1368}, {0x1390,0x1399}, {0x1400,0x1400}, {0x166D,0x166E}, {0x1680,0x1680},
    {0x169B,0x169C}, {0x16EB,0x16ED}, {0x1735,0x1736}, {0x17D4,0x17D6}, {0x17D8,0x17DB},
    {0x1800,0x180A}, {0x1940,0x1945}, {0x19DE,0x19FF}, {0x1A1E,0x1A1F}, {0x1AA0,0x1AA6},
    {0x1AA8,0x1AAD}, {0x1B5A,0x1B6A}, {0x1B74,0x1B7E}, {0x1BFC,0x1BFF}, {0x1C3B,0x1C3F},
    {0x1C7E,0x1C7F}, {0x1CC0,0x1CC7}, {0x1CD3,0x1CD3}, {0x1FBD,0x1FBD}, {0x1FBF,0x1FC1},
    {0x1FCD,0x1FCF}, {0x1FDD,0x1FDF}, {0x1FED,0x1FEF}, {0x1FFD,0x200A}, {0x200E,0x205F},
    {0x2066,0x2069}, {0x207A,0x207E}, {0x208A,0x208E}, {0x20A0,0x20C0}, {0x2100,0x2101},
    {0x2103,0x2106}, {0x2108,0x2109}, {0x2114,0x2114}, {0x2116,0x2118}, {0x211E,0x2123},
    {0x2125,0x2125}, {0x2127,0x2127}, {0x2129,0x2129}, {0x212E,0x212E}, {0x213A,0x213B},
    {0x2140,0x2144}, {0x214A,0x214D}, {0x214F,0x214F}, {0x218A,0x244A}, {0x249C,0x24E9},
    {0x2500,0x2775}, {0x2794,0x2BFF}, {0x2CE5,0x2CEA}, {0x2CF9,0x2CFC}, {0x2CFE,0x2CFF},
    {0x2D70,0x2D70}, {0x2E00,0x2E2E}, {0x2E30,0x3004}, {0x3008,0x3020}, {0x3030,0x3030},
    {0x3036,0x3037}, {0x303D,0x303F}, {0x309B,0x309C}, {0x30A0,0x30A0}, {0x30FB,0x30FB},
    {0x3190,0x3191}, {0x3196,0x319F}, {0x31C0,0x31E3}, {0x3200,0x321E}, {0x322A,0x3247},
    {0x3250,0x3250}, {0x3260,0x327F}, {0x328A,0x32B0}, {0x32C0,0x33FF}, {0x4DC0,0x4DFF},
    {0xA490,0xA4C6}, {0xA4FE,0xA4FF}, {0xA60D,0xA60F}, {0xA673,0xA673}, {0xA67E,0xA67E},
    {0xA6F2,0xA716}, {0xA720,0xA721}, {0xA789,0xA78A}, {0xA828,0xA82B}, {0xA836,0xA839},
    {0xA874,0xA877}, {0xA8CE,0xA8CF}, {0xA8F8,0xA8FA}, {0xA8FC,0xA8FC}, {0xA92E,0xA92F},
    {0xA95F,0xA95F}, {0xA9C1,0xA9CD}, {0xA9DE,0xA9DF}, {0xAA5C,0xAA5F}, {0xAA77,0xAA79},
    {0xAADE,0xAADF}, {0xAAF0,0xAAF1}, {0xAB5B,0xAB5B}, {0xAB6A,0xAB6B}, {0xABEB,0xABEB},
    {0xD800,0xDFFF}, {0xFB29,0xFB29}, {0xFBB2,0xFBC2}, {0xFD3E,0xFD4F}, {0xFDCF,0xFDCF},
    {0xFDFC,0xFDFF}, {0xFE10,0xFE19}, {0xFE30,0xFE6B}, {0xFEFF,0xFF0F}, {0xFF1A,0xFF20},
    {0xFF3B,0xFF40}, {0xFF5B,0xFF65}, {0xFFE0,0xFFEE}, {0xFFFC,0xFFFD}, {0x10100,0x10102},
    {0x10137,0x1013F}, {0x10179,0x10189}, {0x1018C,0x101FC}, {0x1039F,0x1039F}, {0x103D0,0x103D0},
    {0x1056F,0x1056F}, {0x10857,0x10857}, {0x10877,0x10878}, {0x1091F,0x1091F}, {0x1093F,0x1093F},
    {0x10A50,0x10A58}, {0x10A7F,0x10A7F}, {0x10AC8,0x10AC8}, {0x10AF0,0x10AF6}, {0x10B39,0x10B3F},
    {0x10B99,0x10B9C}, {0x10EAD,0x10EAD}, {0x10F55,0x10F59}, {0x10F86,0x10F89}, {0x11047,0x1104D},
    {0x110BB,0x110BC}, {0x110BE,0x110C1}, {0x11140,0x11143}, {0x11174,0x11175}, {0x111C5,0x111C8},
    {0x111CD,0x111CD}, {0x111DB,0x111DB}, {0x111DD,0x111DF}, {0x11238,0x1123D}, {0x112A9,0x112A9},
    {0x1144B,0x1144F}, {0x1145A,0x1145D}, {0x114C6,0x114C6}, {0x115C1,0x115D7}, {0x11641,0x11643},
    {0x11660,0x1166C}, {0x116B9,0x116B9}, {0x1173C,0x1173F}, {0x1183B,0x1183B}, {0x11944,0x11946},
    {0x119E2,0x119E2}, {0x11A3F,0x11A46}, {0x11A9A,0x11A9C}, {0x11A9E,0x11AA2}, {0x11C41,0x11C45},
    {0x11C70,0x11C71}, {0x11EF7,0x11EF8}, {0x11FD5,0x11FFF}, {0x12470,0x12474}, {0x12FF1,0x12FF2},
    {0x16A6E,0x16A6F}, {0x16AF5,0x16AF5}, {0x16B37,0x16B3F}, {0x16B44,0x16B45}, {0x16E97,0x16E9A},
    {0x16FE2,0x16FE2}, {0x1BC9C,0x1BC9C}, {0x1BC9F,0x1BC9F}, {0x1CF50,0x1D164}, {0x1D16A,0x1D16C},
    {0x1D183,0x1D184}, {0x1D18C,0x1D1A9}, {0x1D1AE,0x1D241}, {0x1D245,0x1D245}, {0x1D300,0x1D356},
    {0x1D6C1,0x1D6C1}, {0x1D6DB,0x1D6DB}, {0x1D6FB,0x1D6FB}, {0x1D715,0x1D715}, {0x1D735,0x1D735},
    {0x1D74F,0x1D74F}, {0x1D76F,0x1D76F}, {0x1D789,0x1D789}, {0x1D7A9,0x1D7A9}, {0x1D7C3,0x1D7C3},
    {0x1D800,0x1D9FF}, {0x1DA37,0x1DA3A}, {0x1DA6D,0x1DA74}, {0x1DA76,0x1DA83}, {0x1DA85,0x1DA8B},
    {0x1E14F,0x1E14F}, {0x1E2FF,0x1E2FF}, {0x1E95E,0x1E95F}, {0x1ECAC,0x1ECAC}, {0x1ECB0,0x1ECB0},
    {0x1ED2E,0x1ED2E}, {0x1EEF0,0x1F0F5}, {0x1F10D,0x1FBCA},
};

/* The fold run holding c, or NULL. */
static const fold_run *fold_find(uint32_t c)
{
    size_t lo = 0, hi = sizeof fold_runs / sizeof fold_runs[0];
    while (lo < hi) {                   /* the first run starting after c */
        size_t mid = (lo + hi) / 2;
        if (fold_runs[mid].first <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const fold_run *r = &fold_runs[lo - 1];
    uint32_t off = c - r->first;
    return off % r->stride == 0 && off / r->stride < r->count ? r : NULL;
}

uint32_t srv_glossary_fold(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z' ? c + 32 : c;
    const fold_run *r = fold_find(c);
    return r ? (uint32_t)((int32_t)c + r->delta) : c;
}

uint32_t srv_glossary_upper(uint32_t c)
{
    if (c < 0x80)
        return c >= 'a' && c <= 'z' ? c - 32 : c;
    for (size_t i = 0; i < sizeof fold_runs / sizeof fold_runs[0]; i++) {     /* rare: once a sentence */
        const fold_run *r = &fold_runs[i];
        uint32_t u = (uint32_t)((int32_t)c - r->delta);
        if (r->upper && u != c && fold_find(u) == r && srv_glossary_fold(u) == c)
            return u;
    }
    return c;
}

int srv_glossary_is_upper(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z';
    const fold_run *r = fold_find(c);
    return r && r->upper;
}

int srv_glossary_is_word(uint32_t c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (c > 0x10FFFF)
        return 0;
    size_t lo = 0, hi = sizeof nonword_ranges / sizeof nonword_ranges[0];
    while (lo < hi) {                   /* the first range ending at or after c */
        size_t mid = (lo + hi) / 2;
        if (nonword_ranges[mid][1] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return !(lo < sizeof nonword_ranges / sizeof nonword_ranges[0] && nonword_ranges[lo][0] <= c);
}

/* The character at s[0..avail) (avail >= 1): its length, *cp its code point,
 * or CP_INVALID and length 1 for a byte that does not start a valid one. */
static size_t next_char(const uint8_t *s, size_t avail, uint32_t *cp)
{
    size_t n = mt_utf8_decode(s, avail, cp);
    if (n)
        return n;
    *cp = CP_INVALID;
    return 1;
}

/* The end of the run of whitespace characters starting at i. */
static size_t skip_spaces(const uint8_t *s, size_t len, size_t i)
{
    while (i < len) {
        uint32_t cp;
        size_t n = next_char(s + i, len - i, &cp);
        if (!mt_utf8_is_space(cp))
            break;
        i += n;
    }
    return i;
}

/* ---- the glossary ---- */

typedef struct {
    char    *src;       /* trimmed, inner whitespace runs as one ' ' */
    char    *tgt;       /* trimmed */
    char    *key;       /* src folded (case-insensitive) or src itself (exact) */
    uint32_t src_len, tgt_len, key_len;
    bool     exact;     /* the source has an uppercase letter */
} entry;

enum { ROOT_FOLD = 0, ROOT_EXACT = 1 };

typedef struct {
    int entry;          /* the entry whose key ends here, or -1 */
} trie_node;

typedef struct {
    uint64_t key;       /* (node + 1) << 32 | character; 0: a free slot */
    int32_t  child;
} trie_edge;

struct srv_glossary {
    srv_glossary_limits lim;
    entry     *e;
    int        n;
    size_t     cap;
    trie_node *node;        /* nodes 0 and 1 are the roots (ROOT_FOLD, ROOT_EXACT) */
    int        n_nodes;
    size_t     node_cap;
    trie_edge *edge;
    size_t     edge_mask;   /* table size - 1 (a power of two) */
    size_t     n_edges;
};

/* Every key bit reaches the low bits the table mask keeps. */
static size_t edge_hash(uint64_t key)
{
    return (size_t)mt_hash_mix64(key);
}

static uint64_t edge_key(uint32_t node, uint32_t c)
{
    return ((uint64_t)node + 1) << 32 | c;
}

/* The child of node along character c (folded under ROOT_FOLD), or -1. */
static int32_t edge_get(const srv_glossary *g, uint32_t node, uint32_t c)
{
    uint64_t key = edge_key(node, c);
    for (size_t i = edge_hash(key) & g->edge_mask;; i = (i + 1) & g->edge_mask) {
        if (g->edge[i].key == key)
            return g->edge[i].child;
        if (g->edge[i].key == 0)
            return -1;
    }
}

static void edge_put(trie_edge *tab, size_t mask, uint64_t key, int32_t child)
{
    size_t i = edge_hash(key) & mask;
    while (tab[i].key)
        i = (i + 1) & mask;
    tab[i] = (trie_edge){ key, child };
}

/* Room for one more edge (the table stays at most half full): 0, or -1. */
static int edge_reserve(srv_glossary *g)
{
    size_t size = g->edge_mask + 1;
    if ((g->n_edges + 1) * 2 <= size)
        return 0;
    if (size > SIZE_MAX / 2 / sizeof(trie_edge))
        return -1;
    trie_edge *tab = calloc(size * 2, sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < size; i++)
        if (g->edge[i].key)
            edge_put(tab, size * 2 - 1, g->edge[i].key, g->edge[i].child);
    free(g->edge);
    g->edge = tab;
    g->edge_mask = size * 2 - 1;
    return 0;
}

/* The child of node along c, created if missing: its index, or -1 out of memory. */
static int32_t edge_add(srv_glossary *g, uint32_t node, uint32_t c)
{
    int32_t child = edge_get(g, node, c);
    if (child >= 0)
        return child;
    if (edge_reserve(g) < 0)
        return -1;
    if (g->n_nodes == INT_MAX || MT_GROW(g->node, g->node_cap, (size_t)g->n_nodes + 1))
        return -1;
    child = g->n_nodes++;
    g->node[child] = (trie_node){ -1 };
    edge_put(g->edge, g->edge_mask, edge_key(node, c), child);
    g->n_edges++;
    return child;
}

srv_glossary *srv_glossary_new(const srv_glossary_limits *lim)
{
    if (!lim || lim->max_entries <= 0 || lim->max_term_bytes <= 0)
        return NULL;
    srv_glossary *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->lim = *lim;
    g->node_cap = 64;
    g->node = malloc(sizeof *g->node * (size_t)g->node_cap);
    g->edge = calloc(64, sizeof *g->edge);
    if (!g->node || !g->edge) {
        srv_glossary_free(g);
        return NULL;
    }
    g->edge_mask = 63;
    g->n_nodes = 2;
    g->node[ROOT_FOLD] = g->node[ROOT_EXACT] = (trie_node){ -1 };
    return g;
}

static void entry_free(entry *e)
{
    if (e->key != e->src)
        free(e->key);
    free(e->src);
    free(e->tgt);
}

void srv_glossary_free(srv_glossary *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++)
        entry_free(&g->e[i]);
    free(g->e);
    free(g->node);
    free(g->edge);
    free(g);
}

/* ---- checking and normalizing a term ---- */

/* s[0..n) for a message, in buf: at most QUOTE_BYTES of its valid prefix,
 * control characters as '?', "..." when cut. */
static const char *quote(char *buf, size_t cap, const char *s, size_t n)
{
    size_t valid = n ? mt_utf8_valid_prefix(s, n) : 0;
    size_t k = (size_t)mt_utf8_clip(s, valid, QUOTE_BYTES < cap - 4 ? QUOTE_BYTES : cap - 4);
    for (size_t i = 0; i < k; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7F ? '?' : s[i];
    if (k < n)
        memcpy(buf + k, "...", 3), k += 3;
    buf[k] = '\0';
    return buf;
}

static bool is_control(uint32_t c)
{
    return c < 0x20 || (c >= 0x7F && c <= 0x9F);
}

/* Checks one term (which: "source" / "target"; other: the other term, for the
 * message about an empty one) and trims it to s[*a..*b). */
static mt_status check_term(const srv_glossary *g, const char *which, const char *s, size_t n,
                            const char *other, size_t other_n, size_t *a, size_t *b, mt_err *err)
{
    char q[QUOTE_BYTES + 8];
    size_t valid = n ? mt_utf8_valid_prefix(s, n) : 0;
    if (valid < n)
        return mt_err_set(err, MT_ERR_INPUT, "%s term \"%s\" is not valid UTF-8 (at byte %zu)", which,
                          quote(q, sizeof q, s, valid), valid);
    const uint8_t *u = (const uint8_t *)s;
    size_t lo = 0, hi = n;
    uint32_t cp;
    while (lo < hi) {
        size_t k = next_char(u + lo, hi - lo, &cp);
        if (!mt_utf8_is_space(cp))
            break;
        lo += k;
    }
    while (hi > lo) {                   /* step back over one (valid) character */
        size_t k = 1;
        while (k < hi - lo && (u[hi - k] & 0xC0) == 0x80)
            k++;
        next_char(u + hi - k, k, &cp);
        if (!mt_utf8_is_space(cp))
            break;
        hi -= k;
    }
    if (lo == hi) {
        if (!strcmp(which, "source"))
            return mt_err_set(err, MT_ERR_INPUT, "empty source term (target \"%s\")",
                              quote(q, sizeof q, other, other_n));
        return mt_err_set(err, MT_ERR_INPUT, "empty target term for \"%s\"", quote(q, sizeof q, other, other_n));
    }
    if (hi - lo > (size_t)g->lim.max_term_bytes)
        return mt_err_set(err, MT_ERR_INPUT, "%s term \"%s\" is %zu bytes, over the limit of %d", which,
                          quote(q, sizeof q, s + lo, hi - lo), hi - lo, g->lim.max_term_bytes);
    for (size_t i = lo; i < hi;) {
        i += next_char(u + i, hi - i, &cp);
        if (is_control(cp))
            return mt_err_set(err, MT_ERR_INPUT, "%s term \"%s\" contains a control character (U+%04X)", which,
                              quote(q, sizeof q, s + lo, hi - lo), (unsigned)cp);
    }
    *a = lo;
    *b = hi;
    return MT_OK;
}

/* The trimmed source s[0..n) with inner whitespace runs as one ' ', into *src,
 * and its folding into *key; *exact when it has an uppercase letter.  0, or -1
 * out of memory. */
static int normalize_source(const char *s, size_t n, char **src, size_t *src_len, char **key, size_t *key_len,
                            bool *exact)
{
    const uint8_t *u = (const uint8_t *)s;
    *src = malloc(n + 1);
    *key = malloc(2 * n + 1);           /* folding grows a character by 1 byte at most (2 -> 3) */
    if (!*src || !*key) {
        free(*src);
        free(*key);
        return -1;
    }
    size_t ns = 0, nk = 0;
    *exact = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = next_char(u + i, n - i, &cp);
        if (mt_utf8_is_space(cp)) {
            i = skip_spaces(u, n, i);
            (*src)[ns++] = ' ';
            (*key)[nk++] = ' ';
            continue;
        }
        memcpy(*src + ns, s + i, k);
        ns += k;
        nk += mt_utf8_encode(srv_glossary_fold(cp), *key + nk);
        *exact |= srv_glossary_is_upper(cp);
        i += k;
    }
    (*src)[ns] = (*key)[nk] = '\0';
    *src_len = ns;
    *key_len = nk;
    return 0;
}

/* ---- adding entries ---- */

/* The node of key[0..n) (an entry's key) under root, created when create is
 * set: its index, or -1 (missing, or out of memory). */
static int32_t key_node(srv_glossary *g, int32_t root, const char *key, size_t n, bool create)
{
    const uint8_t *u = (const uint8_t *)key;
    int32_t node = root;
    for (size_t i = 0; i < n && node >= 0;) {
        uint32_t cp;
        i += next_char(u + i, n - i, &cp);
        node = create ? edge_add(g, (uint32_t)node, cp) : edge_get(g, (uint32_t)node, cp);
    }
    return node;
}

mt_status srv_glossary_add(srv_glossary *g, const char *src, size_t src_len, const char *tgt, size_t tgt_len,
                           mt_err *err)
{
    if (!g || (!src && src_len) || (!tgt && tgt_len))
        return mt_err_set(err, MT_ERR_INPUT, "glossary: invalid arguments");
    size_t sa, sb, ta, tb;
    mt_status st = check_term(g, "source", src, src_len, tgt, tgt_len, &sa, &sb, err);
    if (st == MT_OK)
        st = check_term(g, "target", tgt, tgt_len, src, src_len, &ta, &tb, err);
    if (st != MT_OK)
        return st;

    /* the key: the folded source (case-insensitive) or the source (exact) */
    entry ne = { 0 };
    char *folded;
    size_t ns, nf;
    if (normalize_source(src + sa, sb - sa, &ne.src, &ns, &folded, &nf, &ne.exact) < 0)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    ne.key = ne.exact ? ne.src : folded;
    if (ne.exact)
        free(folded);
    ne.src_len = (uint32_t)ns;
    ne.key_len = (uint32_t)(ne.exact ? ns : nf);
    int32_t root = ne.exact ? ROOT_EXACT : ROOT_FOLD;
    ne.tgt_len = (uint32_t)(tb - ta);
    if (!(ne.tgt = malloc(tb - ta + 1))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(ne.tgt, tgt + ta, tb - ta);
    ne.tgt[tb - ta] = '\0';

    int32_t node = key_node(g, root, ne.key, ne.key_len, false);
    int x = node >= 0 ? g->node[node].entry : -1;
    if (x >= 0 && g->lim.unique) {
        char q[QUOTE_BYTES + 8];
        st = mt_err_set(err, MT_ERR_INPUT, "duplicate source term \"%s\"", quote(q, sizeof q, ne.src, ns));
        goto fail;
    }
    if (x >= 0) {                       /* the same key: replace, keeping the index */
        entry_free(&g->e[x]);
        g->e[x] = ne;
        return MT_OK;
    }
    if (g->n >= g->lim.max_entries) {
        char q[QUOTE_BYTES + 8];
        st = mt_err_set(err, MT_ERR_INPUT, "too many glossary entries: the limit is %d (at source term \"%s\")",
                        g->lim.max_entries, quote(q, sizeof q, ne.src, ns));
        goto fail;
    }
    if (MT_GROW(g->e, g->cap, (size_t)g->n + 1)) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    node = key_node(g, root, ne.key, ne.key_len, true);
    if (node < 0) {                     /* out of memory; the nodes made so far lead nowhere, harmlessly */
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x = g->n++;
    g->node[node].entry = x;
    g->e[x] = ne;
    return MT_OK;

fail:
    entry_free(&ne);
    return st;
}

/* 1 when s[0..n) is only whitespace. */
static bool blank(const char *s, size_t n)
{
    return skip_spaces((const uint8_t *)s, n, 0) == n;
}

mt_status srv_glossary_add_tsv(srv_glossary *g, const char *data, size_t len, mt_err *err)
{
    if (!g || (!data && len))
        return mt_err_set(err, MT_ERR_INPUT, "glossary: invalid arguments");
    size_t at = len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
    for (long line = 1; at < len; line++) {
        const char *s = data + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        if (n && s[n - 1] == '\r')
            n--;
        size_t j = 0;
        while (j < n && (s[j] == ' ' || s[j] == '\t'))
            j++;
        if (j == n || s[j] == '#' || blank(s, n))
            continue;
        const char *tab = memchr(s, '\t', n);
        if (!tab)
            return mt_err_set(err, MT_ERR_INPUT, "line %ld: no tab between the source and the target term", line);
        size_t src_n = (size_t)(tab - s);
        if (memchr(tab + 1, '\t', n - src_n - 1))
            return mt_err_set(err, MT_ERR_INPUT, "line %ld: more than two tab-separated columns", line);
        mt_err e1;
        mt_status st = srv_glossary_add(g, s, src_n, tab + 1, n - src_n - 1, &e1);
        if (st != MT_OK)
            return mt_err_set(err, st, "line %ld: %s", line, e1.msg);
    }
    return MT_OK;
}

/* ---- CSV (DeepL's glossary entries) ------------------------------------------------------ */

enum { CSV_FIELDS = 4 };

typedef struct {
    char  *f[CSV_FIELDS];       /* the fields, unquoted, NUL-terminated (into buf) */
    size_t len[CSV_FIELDS];
    int    n;
} csv_row;

/* Splits line s[0..n) into row, unquoting into buf (room for n + CSV_FIELDS
 * bytes).  0, or -1 with why: an unclosed quote, text after a closing quote,
 * more than CSV_FIELDS fields. */
static int csv_split(const char *s, size_t n, char *buf, csv_row *row, const char **why)
{
    size_t i = 0, o = 0;
    row->n = 0;
    for (;;) {
        if (row->n == CSV_FIELDS)
            return *why = "more than 4 comma-separated columns", -1;
        row->f[row->n] = buf + o;
        if (i < n && s[i] == '"') {
            for (i++;; i++) {
                if (i >= n)
                    return *why = "a quoted field is not closed", -1;
                if (s[i] == '"' && i + 1 < n && s[i + 1] == '"')
                    buf[o++] = s[i++];
                else if (s[i] == '"')
                    break;
                else
                    buf[o++] = s[i];
            }
            if (++i < n && s[i] != ',')
                return *why = "text after a closing quote", -1;
        } else {
            while (i < n && s[i] != ',')
                buf[o++] = s[i++];
        }
        row->len[row->n] = (size_t)(buf + o - row->f[row->n]);
        buf[o++] = 0;
        row->n++;
        if (i >= n)
            return 0;
        i++;                            /* the comma */
    }
}

static bool same_code(const char *field, size_t n, const char *code)
{
    return code && strlen(code) == n && !strncasecmp(field, code, n);
}

mt_status srv_glossary_add_csv(srv_glossary *g, const char *data, size_t len, const char *source_lang,
                               const char *target_lang, mt_err *err)
{
    if (!g || (!data && len))
        return mt_err_set(err, MT_ERR_INPUT, "glossary: invalid arguments");
    size_t at = len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
    mt_status st = MT_OK;
    char *buf = NULL;
    for (long line = 1; at < len && st == MT_OK; line++) {
        const char *s = data + at, *nl = memchr(s, '\n', len - at), *why = NULL;
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        if (n && s[n - 1] == '\r')
            n--;
        if (blank(s, n))
            continue;
        char *nb = realloc(buf, n + CSV_FIELDS);
        if (!nb) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            break;
        }
        buf = nb;
        csv_row r;
        if (csv_split(s, n, buf, &r, &why) == 0 && r.n != 2 && r.n != 4)
            why = "not source,target or source,target,source_lang,target_lang";
        else if (!why && r.n == 4 && !(same_code(r.f[2], r.len[2], source_lang) &&
                                       same_code(r.f[3], r.len[3], target_lang)))
            why = "its languages are not the glossary's";
        mt_err e1;
        if (why)
            st = mt_err_set(err, MT_ERR_INPUT, "line %ld: %s", line, why);
        else if ((st = srv_glossary_add(g, r.f[0], r.len[0], r.f[1], r.len[1], &e1)) != MT_OK)
            st = mt_err_set(err, st, "line %ld: %s", line, e1.msg);
    }
    free(buf);
    return st;
}

/* Adds every entry of from to g. */
static mt_status add_all(srv_glossary *g, const srv_glossary *from, mt_err *err)
{
    for (int i = 0; from && i < from->n; i++) {
        const entry *e = &from->e[i];
        mt_status st = srv_glossary_add(g, e->src, e->src_len, e->tgt, e->tgt_len, err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

mt_status srv_glossary_merge(const srv_glossary *base, const srv_glossary *over, const srv_glossary_limits *lim,
                             srv_glossary **out, mt_err *err)
{
    if (!out)
        return mt_err_set(err, MT_ERR_INPUT, "glossary: invalid arguments");
    *out = NULL;
    srv_glossary_limits l = { .max_entries = 1, .max_term_bytes = 1 };
    if (lim) {
        l = *lim;
    } else {
        long n = (long)srv_glossary_size(base) + srv_glossary_size(over);
        l.max_entries = n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
        if (base && base->lim.max_term_bytes > l.max_term_bytes)
            l.max_term_bytes = base->lim.max_term_bytes;
        if (over && over->lim.max_term_bytes > l.max_term_bytes)
            l.max_term_bytes = over->lim.max_term_bytes;
    }
    srv_glossary *g = srv_glossary_new(&l);
    if (!g)
        return mt_err_set(err, lim ? MT_ERR_INPUT : MT_ERR_NOMEM, lim ? "glossary: invalid limits" : "out of memory");
    mt_status st = add_all(g, base, err);
    if (st == MT_OK)
        st = add_all(g, over, err);
    if (st != MT_OK) {
        srv_glossary_free(g);
        return st;
    }
    *out = g;
    return MT_OK;
}

/* ---- reading ---- */

int srv_glossary_size(const srv_glossary *g)
{
    return g ? g->n : 0;
}

const char *srv_glossary_source(const srv_glossary *g, int i)
{
    return g && i >= 0 && i < g->n ? g->e[i].src : NULL;
}

const char *srv_glossary_target(const srv_glossary *g, int i)
{
    return g && i >= 0 && i < g->n ? g->e[i].tgt : NULL;
}

int srv_glossary_case_sensitive(const srv_glossary *g, int i)
{
    return g && i >= 0 && i < g->n ? g->e[i].exact : -1;
}

static int by_key(const void *pa, const void *pb, void *ctx)
{
    const entry *e = ctx, *a = &e[*(const int *)pa], *b = &e[*(const int *)pb];
    int c = strcmp(a->key, b->key);
    return c ? c : (int)a->exact - (int)b->exact;
}

char *srv_glossary_canonical(const srv_glossary *g, size_t *len)
{
    if (!g)
        return NULL;
    size_t total = 1;
    for (int i = 0; i < g->n; i++)
        total += (size_t)g->e[i].key_len + g->e[i].tgt_len + 3;
    int *order = malloc(sizeof *order * (size_t)(g->n ? g->n : 1));
    char *out = malloc(total);
    if (!order || !out) {
        free(order);
        free(out);
        return NULL;
    }
    for (int i = 0; i < g->n; i++)
        order[i] = i;
    qsort_r(order, (size_t)g->n, sizeof *order, by_key, g->e);
    size_t n = 0;
    for (int i = 0; i < g->n; i++) {
        const entry *e = &g->e[order[i]];
        out[n++] = e->exact ? '=' : '~';
        memcpy(out + n, e->key, e->key_len);
        n += e->key_len;
        out[n++] = '\t';
        memcpy(out + n, e->tgt, e->tgt_len);
        n += e->tgt_len;
        out[n++] = '\n';
    }
    out[n] = '\0';
    free(order);
    if (len)
        *len = n;
    return out;
}

/* ---- matching ---- */

/* 1 when position i of t[0..len) ends a word: the end, or a non-word character. */
static bool word_end(const uint8_t *t, size_t len, size_t i)
{
    uint32_t cp;
    return i == len || (next_char(t + i, len - i, &cp), !srv_glossary_is_word(cp));
}

/* The longest match starting at p: true and *end, *which (the entry), *last_word
 * (whether its last character is a word character), or false. */
static bool match_at(const srv_glossary *g, const uint8_t *t, size_t len, size_t p, size_t *end, int *which,
                     bool *last_word)
{
    bool found = false;
    int32_t fold = ROOT_FOLD, exact = ROOT_EXACT;       /* the two cursors; -1: fallen off */
    for (size_t i = p; i < len;) {
        uint32_t cp;
        size_t next = i + next_char(t + i, len - i, &cp);
        if (cp == CP_INVALID)
            break;
        bool word = false, space = mt_utf8_is_space(cp);
        if (space) {
            next = skip_spaces(t, len, i);
            cp = ' ';
        } else {
            word = srv_glossary_is_word(cp);
        }
        if (exact >= 0)
            exact = edge_get(g, (uint32_t)exact, cp);
        if (fold >= 0)
            fold = edge_get(g, (uint32_t)fold, space ? cp : srv_glossary_fold(cp));
        if (exact < 0 && fold < 0)
            break;
        i = next;
        int x = exact >= 0 ? g->node[exact].entry : -1;
        if (x < 0 && fold >= 0)
            x = g->node[fold].entry;
        if (x >= 0 && !space && word_end(t, len, i)) {
            found = true;
            *end = i;
            *which = x;
            *last_word = word;
        }
    }
    return found;
}

int srv_glossary_match(const srv_glossary *g, const char *text, size_t len, srv_term_match *out, int max)
{
    if (!g || (!text && len) || max < 0 || (!out && max > 0))
        return -1;
    if (g->n == 0)
        return 0;
    const uint8_t *t = (const uint8_t *)text;
    int count = 0;
    bool prev_word = false;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = next_char(t + i, len - i, &cp);
        if (!prev_word && !mt_utf8_is_space(cp)) {
            size_t end = 0;
            int x = -1;
            bool last_word = false;
            if (match_at(g, t, len, i, &end, &x, &last_word)) {
                if (count < max)
                    out[count] = (srv_term_match){ i, end, x };
                if (count < INT_MAX)
                    count++;
                i = end;
                prev_word = last_word;
                continue;
            }
        }
        prev_word = srv_glossary_is_word(cp);
        i += k;
    }
    return count;
}
