/* placeholders: the placeholders and inline codes of a text, which its
 * translation must keep byte for byte.  One scanner for every path that keeps
 * them: a .po file's msgids (document/doc_po.c) and the sentences of the
 * plain-text APIs (translate/protect.c, "placeholders": true).
 *
 * What is taken (each form whole, as one placeholder):
 *   printf      %s %d %5.2f %-5.2f %05d %1$s %lld %'d %%, Python's %(name)s,
 *               Ruby's %{name} and %<name>d, Qt's %1 (digits after '%' not
 *               followed by a letter: "%1 of", "%1.")
 *   braces      {name} {0} {} {0:.2f} {user.name} (no space nor brace inside,
 *               at most 64 bytes); {{count}} and {{ count }} (Handlebars,
 *               i18next, Jinja, Angular), else a lone {{ or }} (Python's
 *               escapes); an ICU argument, {count, plural, one {# file}
 *               other {# files}} or {n, number} (a name, a comma, one of
 *               ICU's types), whole with its nested braces (balanced, at
 *               most 1024 bytes)
 *   ${name}     shell and JavaScript templates (no newline inside, at most 64 bytes)
 *   $t(key)     i18next's nesting, with its options ($t(key, {"count": 2})):
 *               to its balanced ')' on the line, at most 128 bytes
 *   :name       Laravel's: a colon at the start or after a character that
 *               is not a letter, digit, ':' or '/', then at least two
 *               letters, digits or '_' (the first not a digit)
 *   URLs        scheme://... and www.host.tld..., from a word's start up to a
 *               space, a quote, '<', '>' or a non-ASCII character; trailing
 *               . , ; : ! ? ' and an unbalanced ) or ] left out
 *   e-mail      local@host.tld from a word's start (local part at most 64
 *               bytes of letters, digits and . _ % + -)
 *   with SRV_PH_MARKUP only: HTML tags <b> </a> <br/> <a href="x"> (up to
 *               256 bytes, no '<' inside) and character references &amp;
 *               &#39; (what a .po msgid holds as markup)
 *
 * What is not: "100%" and "50% off" (a '%' not starting a conversion; the
 * space flag is not read, so "% of" stays text), "a:b" and "10:30" (a colon
 * after a letter or before a digit), ":)" and ":D" (one character), "{a b}",
 * "{a, b}" and "{" (a space inside and no ICU type, or no closing brace),
 * "user@localhost" (no dot in the host).
 *
 * Bounded work: every form is looked for over at most a few hundred bytes
 * from where it starts, and a URL (unbounded) is consumed whole, so a scan
 * is linear in the text.
 */
#ifndef SRV_PLACEHOLDERS_H
#define SRV_PLACEHOLDERS_H

#include <stddef.h>

enum { SRV_PH_MARKUP = 1 };     /* flags: also HTML tags and character references */

/* What a placeholder is, for the order a translation must keep. */
enum {
    SRV_PH_ORDERED = 'p',       /* printf's unnumbered conversions: a swap crashes the program */
    SRV_PH_TAG = 't',           /* an HTML tag (SRV_PH_MARKUP): tags must still nest */
    SRV_PH_OTHER = 'o'          /* the rest: named or numbered, any order */
};

typedef struct {
    const char *s;              /* where it is in the text scanned */
    size_t      n;              /* its length, bytes */
    char        kind;           /* SRV_PH_* */
} srv_ph;

/* A placeholder starting at s[i] of s[0..n) (s[i - 1] is read for the forms
 * that must start a word): its length in bytes, 0 when none; *kind its SRV_PH_*. */
size_t srv_ph_at(const char *s, size_t i, size_t n, int flags, char *kind);

/* The placeholders of s[0..n), left to right, into out[0..cap): how many
 * (more than cap: cap + 1, out holding the first cap). */
int srv_ph_scan(const char *s, size_t n, int flags, srv_ph *out, int cap);

/* 1 when t[0..tn) keeps src[0..sn)'s placeholders: each as many times,
 * printf's unnumbered ones and the tags in the same order; 0 otherwise (and
 * when src has over 64: refused rather than half checked). */
int srv_ph_kept(const char *src, size_t sn, const char *t, size_t tn, int flags);

#endif
