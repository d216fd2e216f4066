/* marian.h: an original Marian / OPUS-MT release directory, read directly
 * (no Python, no conversion) as the Hugging Face model the loader knows.
 *
 * A release holds: the model (.npz, Marian's parameter names, matrices
 * stored [in][out], its YAML config in the member "special:model.yml"),
 * decoder.yml (models: [the .npz], vocabs: [source, target], beam-size,
 * normalize), the vocabulary .yml file(s) ("piece: id" lines, one file named
 * twice for a joint vocabulary), source.spm and target.spm.  Without
 * decoder.yml the directory must hold exactly one .npz and either one
 * "*vocab.yml" (joint) or one "*src.vocab.yml" and one "*trg.vocab.yml".
 *
 * What mt_marian_open gives is what Hugging Face's converter
 * (convert_marian_to_pytorch.py) would have written, except that nothing is
 * copied:
 *
 *   - The converter appends a "<pad>" token to each vocabulary (id n, where
 *     n is the vocabulary's size) and a zero row to each embedding table (and
 *     a zero to final_logits_bias).  Here the config says vocab_size = n + 1
 *     (pad_token_id = decoder_start_token_id = n), and each vocabulary object
 *     has "<pad>": n, but the tensors keep their n stored rows: pad_rows = 1
 *     means "the last row (id n) of model.shared.weight / embed_tokens /
 *     lm_head.weight and the last entry of final_logits_bias are zeros that
 *     are not stored".  The loader supplies them.
 *   - Marian's matrices are [in][out]; Hugging Face's Linear weights are
 *     [out][in].  Each is listed with its Hugging Face shape [out][in] and
 *     transposed = 1 (tensors.h): its data is [shape[1]][shape[0]].
 *     Embeddings are [n][d] in both and are not transposed.
 *   - Marian's [1][n] biases and LayerNorm parameters are given rank 1, [n].
 */
#ifndef MT_MARIAN_H
#define MT_MARIAN_H

#include <jansson.h>

#include "tensors.h"

#define MT_MARIAN_PATH 4096

typedef struct {
    /* A Hugging Face config.json equivalent (MarianConfig keys): model_type,
     * d_model, encoder_layers, decoder_layers, encoder_attention_heads,
     * decoder_attention_heads, encoder_ffn_dim, decoder_ffn_dim,
     * activation_function ("swish" or "relu"), vocab_size (source n + 1),
     * decoder_vocab_size (target n + 1), share_encoder_decoder_embeddings,
     * tie_word_embeddings, normalize_embedding, scale_embedding (true),
     * static_position_embeddings (true), max_position_embeddings (dim-emb as
     * the converter sets it, at least 512: positions are sinusoidal, Marian
     * has no table), pad_token_id = decoder_start_token_id (target n),
     * eos_token_id = forced_eos_token_id (the target vocabulary's "</s>"),
     * bos_token_id (0), bad_words_ids ([[pad]]), max_length (512), num_beams
     * (decoder.yml beam-size, when given). */
    json_t   *config;
    /* {piece: id} of the source (or joint) vocabulary and of the target
     * vocabulary, "<pad>": n added as the converter does (vocab.json's
     * content).  When joint, the same object twice (one reference each). */
    json_t   *src_vocab, *tgt_vocab;
    /* The tensors under Hugging Face names: model.shared.weight (joint
     * embeddings) or model.encoder.embed_tokens.weight and
     * model.decoder.embed_tokens.weight; model.{encoder,decoder}.layers.N.*;
     * lm_head.weight only when the output layer is not tied;
     * final_logits_bias unless Marian omitted it;
     * model.{encoder,decoder}.layernorm_embedding.{weight,bias} when
     * normalize_embedding.  Format "marian-npz"; data in the mapping. */
    mt_wfile *weights;
    /* 1: the vocabulary-sized tensors lack their last (pad) row, which is
     * zero (see above).  Always 1 for a Marian release. */
    int       pad_rows;
    int       joint_vocab;      /* 1 when one vocabulary file serves both sides */
    int       beam_size;        /* decoder.yml beam-size, or 0 */
    double    normalize;        /* decoder.yml normalize (Marian's length normalization exponent), or 0 */
    char      model_path[MT_MARIAN_PATH];                    /* the .npz read */
    char      src_vocab_path[MT_MARIAN_PATH], tgt_vocab_path[MT_MARIAN_PATH];   /* the .yml files */
    char      src_spm[MT_MARIAN_PATH], tgt_spm[MT_MARIAN_PATH];                /* source.spm, target.spm */
} mt_marian_dir;

/* 1 when dir looks like a Marian release: it holds decoder.yml, or exactly
 * one .npz with a "special:model.yml" member; else 0.  Never fails. */
int       mt_marian_detect(const char *dir);

/* Read the release in dir into *out (zeroed first).  Everything is checked
 * before MT_OK: the files, the .npz (npz.h), model.yml (every setting must
 * be one the engine implements; others are refused naming the key and
 * value), the vocabularies (ids dense from 0, no duplicate, "</s>" and
 * "<unk>" present, sizes equal to dim-vocabs), and every tensor's presence
 * and shape (a tensor with no Hugging Face counterpart is refused by name).
 * MT_ERR_IO for a missing file, MT_ERR_FORMAT for a malformed one,
 * MT_ERR_UNSUPPORTED for a valid model we do not run, MT_ERR_NOMEM.  On
 * failure *out holds nothing to free.  The caller frees with
 * mt_marian_close. */
mt_status mt_marian_open(const char *dir, mt_marian_dir *out, mt_err *err);

/* Release everything (config, vocabularies, weights); d may be NULL or
 * already closed. */
void      mt_marian_close(mt_marian_dir *d);

#endif
