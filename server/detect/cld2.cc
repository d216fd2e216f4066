// cld2.cc: the C face of CLD2 (cld2.h).  The only C++ of server/detect.
#include <cstdio>           // compact_lang_det.h uses FILE without including it
#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>

#include "cld2.h"

using CLD2::Language;

static_assert(sizeof(int) >= sizeof(Language), "a Language fits an int");

extern "C" void detect_cld2(const char *text, int len, const char *hints, int best_effort,
                            detect_cld2_result *r)
{
    CLD2::CLDHints h = {hints, nullptr, CLD2::UNKNOWN_ENCODING, CLD2::UNKNOWN_LANGUAGE};
    Language lang3[3] = {CLD2::UNKNOWN_LANGUAGE, CLD2::UNKNOWN_LANGUAGE, CLD2::UNKNOWN_LANGUAGE};
    int percent3[3] = {0, 0, 0}, text_bytes = 0, valid = 0;
    double score3[3] = {0, 0, 0};
    bool reliable = false;
    // The CheckUTF8 variant: CLD2 itself refuses what is not interchange-valid
    // instead of reading past a broken sequence.  It then returns at once and
    // leaves the arrays as they were (Debian 12's libcld2-0 0.0.0-git20150806),
    // hence the initial values and the reset below.
    CLD2::ExtDetectLanguageSummaryCheckUTF8(text, len, true, &h, best_effort ? CLD2::kCLDFlagBestEffort : 0,
                                            lang3, percent3, score3, nullptr, &text_bytes, &reliable, &valid);
    for (int i = 0; i < 3; i++) {
        if (valid < len) {
            lang3[i] = CLD2::UNKNOWN_LANGUAGE;
            percent3[i] = 0;
            score3[i] = 0;
        }
        r->lang[i] = lang3[i];
        r->percent[i] = percent3[i];
        r->score[i] = score3[i];
    }
    r->reliable = reliable && valid >= len;
    r->valid_bytes = valid;
}

extern "C" int detect_cld2_unknown(void)
{
    return CLD2::UNKNOWN_LANGUAGE;
}

extern "C" int detect_cld2_is_language(int lang)
{
    // Past NDEBELE (506) the enum holds only pseudo-languages: X_BORK_BORK_BORK ..
    // X_ELMER_FUDD, then one "xx-Xxxx" per Unicode script.
    return lang >= 0 && lang < CLD2::X_BORK_BORK_BORK && lang != CLD2::UNKNOWN_LANGUAGE &&
           lang != CLD2::TG_UNKNOWN_LANGUAGE;
}

extern "C" const char *detect_cld2_code(int lang)
{
    if (lang < 0 || lang >= CLD2::NUM_LANGUAGES)
        lang = CLD2::UNKNOWN_LANGUAGE;
    return CLD2::LanguageCode(static_cast<Language>(lang));
}

extern "C" int detect_cld2_lang(const char *code)
{
    return code ? CLD2::GetLanguageFromName(code) : CLD2::UNKNOWN_LANGUAGE;
}
