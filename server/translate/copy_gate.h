/* copy_gate: which sentences the copy guard may decode again (issue 53).
 *
 * The copy guard (engine/mt.h penalties.copy_guard) decodes once more, the
 * copy banned, a sentence whose output is its source given back.  On
 * interface strings such a copy is almost always wrong ("Alarm" -> "Alarm");
 * for names, codes and numbers ("Linux", "UTF-8", "12345") it is right, and
 * the ungated guard broke 54 of 86 of them (models/recipe/right-copies.txt).
 * The gate is a list of words the training corpus translates (a model file,
 * copy_gate.txt, built by models/recipe/copy_gate.py from the corpus: a word
 * in at least 2 training sources, in the targets of at most 30% of those
 * pairs).  The guard is armed for a sentence only when one of its words is in
 * the list: "Linux" (kept in the targets) and words the corpus never saw arm
 * nothing.  Measured in models/recipe/corpus-notes.md ("The copy guard's gate").
 *
 * Words (recipe/copy_gate.py words(), which the fixture tests/fixtures/copy_gate
 * checks this against): the text split at whitespace (mt_utf8_is_space) and
 * , ; /; each piece's edge punctuation . , ; : ! ? ( ) [ ] { } " ' « » “ ” ‘ ’ …
 * taken off; a piece that is letter runs joined by single inner hyphens or
 * apostrophes (- ' U+2019) gives its runs, each case-folded (srv_glossary_fold:
 * simple folding); any other piece ("--help", "Ctrl+C", "README.md") gives
 * none, and a run over SRV_COPY_GATE_MAX_WORD bytes folded is none either.
 * A letter: ASCII's and Latin-1's letters, and from U+0100 on every code
 * point but U+2000-2BFF, U+3000-303F and U+E000 up (punctuation, symbols,
 * private use, emoji).
 *
 * The file: UTF-8 text, '#' comment lines first, then one word a line, each
 * 1..SRV_COPY_GATE_MAX_WORD bytes of letters already folded, sorted by bytes
 * with no repeat, every line ended by '\n'.  Anything else is refused with
 * the line at fault.  The gate is read-only once built: share it across threads. */
#ifndef SRV_COPY_GATE_H
#define SRV_COPY_GATE_H

#include <stddef.h>

#include "util/status.h"

#define SRV_COPY_GATE_MAX_WORD 64            /* bytes of a folded word */
#define SRV_COPY_GATE_MAX_FILE (16L << 20)   /* bytes of a gate file */

typedef struct srv_copy_gate srv_copy_gate;

/* The gate of buf[0..n) (copied: buf may go).  MT_ERR_FORMAT names the line. */
mt_status srv_copy_gate_parse(const char *buf, size_t n, srv_copy_gate **out, mt_err *err);
/* The gate file at path (MT_ERR_IO when it cannot be read). */
mt_status srv_copy_gate_load(const char *path, srv_copy_gate **out, mt_err *err);
void      srv_copy_gate_free(srv_copy_gate *g);
long      srv_copy_gate_size(const srv_copy_gate *g);   /* its words */

/* 1 when text[0..n) holds a word of the gate (invalid UTF-8 bytes are no letters). */
int srv_copy_gate_arms(const srv_copy_gate *g, const char *text, size_t n);

/* Each word of text[0..n) by the rule above, folded, to cb in order; the
 * count.  For tests and tools: what the gate looks up. */
typedef void (*srv_copy_gate_word_cb)(void *ctx, const char *w, size_t n);
int srv_copy_gate_words(const char *text, size_t n, srv_copy_gate_word_cb cb, void *ctx);

#endif
