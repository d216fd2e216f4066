/* doc_res: what the resource-file formats share (private to server/document):
 * i18next JSON and ARB (doc_json.c), Java .properties (doc_properties.c),
 * Apple .strings (doc_strings.c), Android strings.xml (doc_android.c), Rails
 * YAML (doc_yaml.c).
 *
 * A resource file is keys and values; only values are translated, and the
 * file is written back as its own bytes with each translated value spliced
 * in, so keys, comments, order, whitespace and every value not translated
 * stay byte for byte (nothing is re-serialized).  A format's reader decodes
 * each value (its escapes, its line continuations) into the value's text and
 * a map from each decoded byte back to the source byte it came from; the
 * value's leading and trailing whitespace is set aside (it stays as written)
 * and what is left is a unit, spanning the source bytes map[a]..map[b),
 * unless it has no letter outside its placeholders and strftime's
 * conversions ("%Y-%m-%d", "{0}:{1}", "%s%%": formats a program reads, kept
 * as they are).  A
 * translation is written over that span escaped the format's way (srv_res_esc).
 *
 * The units are plain texts: their placeholders (printf %s %1$s %@, {name},
 * i18next's {{x}}, ICU arguments, URLs...) are kept by the plain-text path of
 * the pipeline (translate/protect.c), on in every format's file job.
 */
#ifndef SRV_DOC_RES_H
#define SRV_DOC_RES_H

#include <stddef.h>

#include "doc_types.h"
#include "util/status.h"
#include "util/strbuf.h"

/* How a translation is written into the file. */
typedef enum {
    SRV_RES_JSON,       /* a JSON string's content: \" \\ controls; \uXXXX for non-ASCII in an ASCII file */
    SRV_RES_PROPS,      /* .properties: \\ \n \t \r \f, a leading space = : as "\ " \= \:, \uXXXX in an ASCII file */
    SRV_RES_STRINGS,    /* Apple .strings' quoted string: \" \\ \n \t \r */
    SRV_RES_ANDROID,    /* Android XML text: \\ \' \" \n \t, a leading @ ? as \@ \?, & < > as references */
    SRV_RES_CDATA,      /* Android text in a CDATA section: the Android escapes, "]]>" split */
    SRV_RES_YAML        /* a YAML double-quoted scalar: \" \\ \n \t \r \xXX, the token replaced whole */
} srv_res_esc;

enum {
    SRV_RES_QUOTE = 1,  /* the span is an unquoted token: the translation is written quoted (.strings) */
    SRV_RES_LEAD = 2,   /* the span starts the value: a leading space, = or : must be escaped (.properties) */
    SRV_RES_SPACE = 4   /* a space goes before the translation (YAML: after an anchor the scalar touched) */
};

typedef struct {
    size_t start, end;  /* the source bytes a translation replaces */
    char  *text;        /* the unit */
    char  *tr;          /* its translation (NULL: none set) */
    size_t tr_len;
    int    esc;         /* srv_res_esc */
    int    flags;       /* SRV_RES_* */
    char  *lead, *trail;/* SRV_RES_YAML: the whitespace set aside, decoded, written inside the quotes */
} srv_res_span;

typedef struct {
    const char   *data;
    size_t        len;
    int           ascii;        /* no byte over 0x7f in the file: non-ASCII written as \uXXXX (json, properties) */
    srv_res_span *s;
    int           n;
    size_t        cap;
    size_t        max_unit;     /* the limits' max_unit_bytes */
    /* a value replaced by the target language's code, not translated (ARB's "@@locale") */
    int           has_locale;
    size_t        loc_start, loc_end;
    char          locale[32];   /* "" until srv_res_target */
    int           locale_dash;  /* written "pt-BR" (Rails), not ARB's "pt_BR" */
    srv_res_span *x;            /* raw spans: not units; their bytes (tr) written as they are */
    int           nx;
    size_t        xcap;
    void         *own;          /* the format's own state (the XML tree), freed by own_free */
    void        (*own_free)(void *own);
} srv_res;

/* A new resource file over data[0..len), which must be UTF-8 without NUL
 * (MT_ERR_INPUT naming the first bad byte's line otherwise). */
mt_status srv_res_new(const char *data, size_t len, const srv_doc_limits *lim, srv_res **out, mt_err *err);

/* A value: its decoded text v->b.p[0..v->b.n) (UTF-8, no NUL) with v->map,
 * map[k] the source offset of decoded byte k; end is where the value ends in
 * the source.  Its trimmed text becomes a unit unless it is blank.  A limit's
 * message names the line of the source offset at.  MT_OK, MT_ERR_TOO_LONG, MT_ERR_NOMEM. */
typedef struct srv_res_buf srv_res_buf;
mt_status srv_res_value(srv_res *r, const srv_res_buf *v, size_t end, int esc, int flags, size_t at, mt_err *err);

/* A YAML scalar replaced whole: its token's source bytes [start, end) (with
 * its quotes) and its value dec[0..n) (libyaml's, decoded); the trimmed value
 * is a unit, and a translation is written as one double-quoted scalar with
 * the whitespace set aside inside it (flags: SRV_RES_SPACE or 0).  Messages
 * name the line of at.  MT_OK,
 * MT_ERR_TOO_LONG, MT_ERR_NOMEM. */
mt_status srv_res_token(srv_res *r, size_t start, size_t end, const char *dec, size_t n, size_t at, int flags,
                        mt_err *err);

/* A raw span over source bytes [start, end) (after every raw span added so
 * far), not a unit: a format that builds its bytes itself (Android markup)
 * sets them with srv_res_raw_set.  Its index, or -1 out of memory. */
int srv_res_raw(srv_res *r, size_t start, size_t end);
/* Raw span i written as s[0..n) (copied): 0, or -1 out of memory. */
int srv_res_raw_set(srv_res *r, int i, const char *s, size_t n);

/* The format table's calls (doc_format.h) for a srv_res state. */
int         srv_res_units(const void *state);
const char *srv_res_unit(const void *state, int i);
mt_status   srv_res_set(void *state, int i, const char *text, size_t len, const long *links, int n_links,
                        mt_err *err);
mt_status   srv_res_render(const void *state, char **out, size_t *len, mt_err *err);
void        srv_res_target(void *state, const char *lang);
void        srv_res_free(void *state);

/* A growing decoded value with its map (the readers' scratch). */
struct srv_res_buf {
    mt_sbuf b;
    size_t *map;
    size_t  cap;
};

/* Appends s[0..n), each byte from source offset at: 0, or -1 out of memory. */
int  srv_res_put(srv_res_buf *v, const char *s, size_t n, size_t at);
/* Appends code point c (UTF-8) from source offset at: 0, -1 out of memory. */
int  srv_res_put_cp(srv_res_buf *v, unsigned long c, size_t at);
void srv_res_buf_free(srv_res_buf *v);
/* Code point c as UTF-8 into u (U+FFFD for a surrogate or past U+10FFFF): its length. */
size_t srv_res_utf8(unsigned long c, char u[4]);

/* The 1-based line of byte at of data (for messages). */
int  srv_res_line(const char *data, size_t at);

#endif
