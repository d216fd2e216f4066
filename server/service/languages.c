/* languages: the tables of server/service/languages.tsv and scripts.tsv
 * (languages.h).  The files are embedded with the assembler's .incbin (as
 * openapi.c does) and parsed once, on first use: a few hundred rows, looked up
 * linearly. */
#include "languages.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

__asm__(".section .rodata\n"
        ".global srv_languages_tsv\n"
        ".type srv_languages_tsv, @object\n"
        "srv_languages_tsv:\n"
        ".incbin \"server/service/languages.tsv\"\n"
        ".byte 0\n"
        ".size srv_languages_tsv, . - srv_languages_tsv\n"
        ".global srv_scripts_tsv\n"
        ".type srv_scripts_tsv, @object\n"
        "srv_scripts_tsv:\n"
        ".incbin \"server/service/scripts.tsv\"\n"
        ".byte 0\n"
        ".size srv_scripts_tsv, . - srv_scripts_tsv\n"
        ".previous\n");
extern const char srv_languages_tsv[], srv_scripts_tsv[];

#define MAX_ROWS 512
#define MAX_SCRIPTS 64

/* also: the other codes of the language, space-separated (NLLB's "arb", M2M-100's "ns") */
typedef struct { char c1[4], c3[4], name[48], also[32]; } lang_row;

/* An ISO 15924 script ("Latn") and its English name (scripts.tsv) */
typedef struct { char code[5], name[32]; } script_row;

static lang_row rows[MAX_ROWS];
static int n_rows;
static script_row scripts[MAX_SCRIPTS];
static int n_scripts;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Copy field [p, end) into dst (truncated to cap - 1). */
static void field(char *dst, size_t cap, const char *p, const char *end)
{
    size_t n = (size_t)(end - p) < cap - 1 ? (size_t)(end - p) : cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

static void parse_languages(void)
{
    for (const char *p = srv_languages_tsv; *p && n_rows < MAX_ROWS;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        const char *t1 = memchr(p, '\t', (size_t)(eol - p));
        const char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(eol - t1 - 1)) : NULL;
        if (*p != '#' && t2) {
            lang_row *r = &rows[n_rows++];
            const char *t3 = memchr(t2 + 1, '\t', (size_t)(eol - t2 - 1));
            field(r->c1, sizeof r->c1, p, t1);
            field(r->c3, sizeof r->c3, t1 + 1, t2);
            field(r->name, sizeof r->name, t2 + 1, t3 ? t3 : eol);
            if (t3)
                field(r->also, sizeof r->also, t3 + 1, eol);
        }
        p = *eol ? eol + 1 : eol;
    }
}

static void parse_scripts(void)
{
    for (const char *p = srv_scripts_tsv; *p && n_scripts < MAX_SCRIPTS;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        const char *t1 = memchr(p, '\t', (size_t)(eol - p));
        if (*p != '#' && t1) {
            script_row *r = &scripts[n_scripts++];
            field(r->code, sizeof r->code, p, t1);
            field(r->name, sizeof r->name, t1 + 1, eol);
        }
        p = *eol ? eol + 1 : eol;
    }
}

static void parse(void)
{
    parse_languages();
    parse_scripts();
}

/* 1 when code is one of the space-separated codes of list. */
static int in_list(const char *list, const char *code)
{
    size_t n = strlen(code);
    for (const char *p = list; n && *p;) {
        const char *e = strchr(p, ' ');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !memcmp(p, code, n))
            return 1;
        p += k + (e != NULL);
    }
    return 0;
}

static const lang_row *find(const char *code)
{
    pthread_once(&once, parse);
    for (int i = 0; code[0] && i < n_rows; i++)
        if (!strcmp(rows[i].c1, code) || !strcmp(rows[i].c3, code) || in_list(rows[i].also, code))
            return &rows[i];
    return NULL;
}

const char *srv_lang_short(const char *code)
{
    const lang_row *r = find(code);
    return !r ? code : r->c1[0] ? r->c1 : r->c3;
}

const char *srv_lang_name(const char *code)
{
    const lang_row *r = find(code);
    return r ? r->name : code;
}

int srv_lang_same(const char *a, const char *b)
{
    if (!strcmp(a, b))
        return 1;
    const lang_row *r = find(a);
    return r && r == find(b);
}

const char *srv_script_name(const char *script)
{
    pthread_once(&once, parse);
    for (int i = 0; i < n_scripts; i++)
        if (!strcmp(scripts[i].code, script))
            return scripts[i].name;
    return NULL;
}

const char *srv_lang_script_name(const char *code, char *buf, size_t cap)
{
    const char *us = strchr(code, '_'), *script = us ? srv_script_name(us + 1) : NULL;
    char base[16];
    if (script && (size_t)(us - code) < sizeof base) {
        snprintf(base, sizeof base, "%.*s", (int)(us - code), code);
        const lang_row *r = find(base);
        if (r && (size_t)snprintf(buf, cap, "%s (%s)", r->name, script) < cap)
            return buf;
    }
    snprintf(buf, cap, "%s", code);
    return buf;
}
