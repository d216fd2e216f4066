/* charlm: a character n-gram language model of one language, read from a .charlm
 * file; the second stage of detection (detect.h) for the languages that have one.
 *
 * Usage:
 *     srv_charlm *en;
 *     mt_err err;
 *     if (srv_charlm_load("models/en-fr/en.charlm", &en, &err) != MT_OK)
 *         ... err.msg says what is wrong with the file
 *     size_t n;
 *     double lp = srv_charlm_log_prob(en, text, len, &n);   // ln p(text), n characters predicted
 *     srv_charlm_free(en);
 *
 * Loaded once, then read-only: any number of threads may score at once.
 *
 * THE MODEL.  Interpolated Kneser-Ney over characters, of order N (1..6), in
 * back-off form: p(w | h) for the longest suffix of the context h (its last
 * N-1 characters) such that the n-gram h'w is in the model, times the back-off
 * weights of the longer contexts passed over on the way down:
 *     log p(w | h) = bow(h_k) + ... + bow(h_{j+1}) + lp(h_j w)
 * where h_k is h's last k characters, bow(x) is 0 for a context not in the
 * model, and below the unigrams lies a floor, log p of an unseen character
 * (the file's `unk`); a sum above 0 (only a file whose weights do not fit its
 * probabilities gives one) counts as 0.  Trained by models/recipe/charlm.py (its docstring: the
 * discounts, the pruning, the back-off weights recomputed after it), from the
 * training side of the en-fr corpus.
 *
 * THE TEXT.  Its code points, with every separator (C0 and C1 controls, the
 * Unicode spaces of mt_utf8_is_space, malformed UTF-8) collapsed to one space
 * and none at either end; ASCII, Latin-1 and Latin Extended-A letters lowercased
 * (U+0130 kept); the digits 0-9 all '0'.  Then N-1 spaces before it (the start)
 * and one after (the end): every character after the leading spaces is
 * predicted, so *n_chars is the normalized text's length plus one.  A text with
 * nothing left scores 0 over 0 characters.
 *
 * THE FILE (.charlm, version 1, little-endian):
 *     0   char magic[8]    "MTCHARLM"
 *     8   u32  version     1
 *     12  u32  order       N, 1..6
 *     16  u32  seed        of the n-gram keys
 *     20  u32  unk         -ln p of an unseen character, in 1/2048 nat
 *     24  char lang[16]    the language, a BCP 47 tag ("en"), NUL-padded
 *     40  u32  count[6]    entries of order 1..6 (0 past N; >= 1 up to N)
 *     64  per order k = 1..N: u32 key[count[k]], strictly increasing;
 *         u16 nlp[count[k]], -ln p(w | h) in 1/2048 nat (0xffff: a context only,
 *         no probability, as the padding's spaces); below N, i16 bow[count[k]],
 *         ln of the back-off weight, in 1/2048 nat
 *     end u32 FNV-1a (32-bit) of every byte before it
 * An n-gram's key: h = 0x9E3779B97F4A7C15 ^ seed; h = mix64(h ^ c) for each
 * code point c; key = h >> 32 (mix64: engine/util/hash.h).  Two n-grams of an
 * order never share a key (the trainer picks a seed for it); an n-gram not in
 * the model matches a key with a chance of about count/2^32 per look-up.
 * The loader refuses, with a message naming the problem: a short or long file, a
 * bad magic, version, order, count, language tag or checksum, keys out of order.
 */
#ifndef SRV_CHARLM_H
#define SRV_CHARLM_H

#include <stddef.h>

#include "util/status.h"

#define SRV_CHARLM_MAX_ORDER 6
/* The cld2_weight (detect.h) that goes with these models: CLD2's answer is worth
 * 0.05 nat per character at confidence 100 against them.  Chosen on the dev
 * split (bench/detect_eval.sh, BENCHMARKS.md "Issue 48"): with the shipped models
 * 0.05 and 0.1 were best (99.7% of 1169 lines), 0.5 gave 99.0%; the models are
 * right where CLD2 is not far more often than the other way round. */
#define SRV_CHARLM_CLD2_WEIGHT 0.05f
/* At most this many entries in one order: the file stays far below it (a
 * file of 2^22 entries would be 25 MB), and the sizes never overflow. */
#define SRV_CHARLM_MAX_COUNT (1u << 22)

typedef struct srv_charlm srv_charlm;

/* A model from the bytes of a .charlm file (copied: data may go after).  MT_OK,
 * or MT_ERR_FORMAT (MT_ERR_NOMEM) with err saying what is wrong. */
mt_status srv_charlm_parse(const void *data, size_t len, srv_charlm **out, mt_err *err);
/* srv_charlm_parse of the file at path (the message names it); MT_ERR_IO when
 * it cannot be read. */
mt_status srv_charlm_load(const char *path, srv_charlm **out, mt_err *err);
void srv_charlm_free(srv_charlm *m);

/* Its language, as the file says ("en"). */
const char *srv_charlm_lang(const srv_charlm *m);
int srv_charlm_order(const srv_charlm *m);
/* Its size in memory, bytes. */
size_t srv_charlm_bytes(const srv_charlm *m);

/* ln p(text[0..len)) under the model (the text as above: any bytes), <= 0; the
 * characters predicted into *n_chars (NULL: not wanted). */
double srv_charlm_log_prob(const srv_charlm *m, const char *text, size_t len, size_t *n_chars);

#endif
