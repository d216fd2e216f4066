#!/usr/bin/python3
"""An independent re-implementation of transformers' NllbTokenizer and
M2M100Tokenizer (the slow, SentencePiece-based classes), written from the
published code (src/transformers/models/nllb/tokenization_nllb.py and
models/m2m_100/tokenization_m2m_100.py, read at commits 0467791c and 024483cb
of huggingface/transformers), for tests/test_spm_bpe.c through gen_ref.py.

Only what a translation request uses: tokenize (sp_model.encode(text,
out_type=str): special-token strings typed in a text are NOT split out, as
mtserve does deliberately), _convert_token_to_id, the non-legacy source
[lang] + ids + [eos] (legacy_behaviour: ids + [eos, lang], the prefix [] and
suffix [eos, cur_lang_code] of set_src_lang_special_tokens), and decode(skip_special_tokens=True) without the
clean-up (clean_up_tokenization_spaces false)."""
import sentencepiece as spm

# tokenization_nllb.py's FAIRSEQ_LANGUAGE_CODES (202 codes, in order).
NLLB_CODES = """ace_Arab ace_Latn acm_Arab acq_Arab aeb_Arab afr_Latn ajp_Arab aka_Latn amh_Ethi apc_Arab arb_Arab
ars_Arab ary_Arab arz_Arab asm_Beng ast_Latn awa_Deva ayr_Latn azb_Arab azj_Latn bak_Cyrl bam_Latn ban_Latn bel_Cyrl
bem_Latn ben_Beng bho_Deva bjn_Arab bjn_Latn bod_Tibt bos_Latn bug_Latn bul_Cyrl cat_Latn ceb_Latn ces_Latn cjk_Latn
ckb_Arab crh_Latn cym_Latn dan_Latn deu_Latn dik_Latn dyu_Latn dzo_Tibt ell_Grek eng_Latn epo_Latn est_Latn eus_Latn
ewe_Latn fao_Latn pes_Arab fij_Latn fin_Latn fon_Latn fra_Latn fur_Latn fuv_Latn gla_Latn gle_Latn glg_Latn grn_Latn
guj_Gujr hat_Latn hau_Latn heb_Hebr hin_Deva hne_Deva hrv_Latn hun_Latn hye_Armn ibo_Latn ilo_Latn ind_Latn isl_Latn
ita_Latn jav_Latn jpn_Jpan kab_Latn kac_Latn kam_Latn kan_Knda kas_Arab kas_Deva kat_Geor knc_Arab knc_Latn kaz_Cyrl
kbp_Latn kea_Latn khm_Khmr kik_Latn kin_Latn kir_Cyrl kmb_Latn kon_Latn kor_Hang kmr_Latn lao_Laoo lvs_Latn lij_Latn
lim_Latn lin_Latn lit_Latn lmo_Latn ltg_Latn ltz_Latn lua_Latn lug_Latn luo_Latn lus_Latn mag_Deva mai_Deva mal_Mlym
mar_Deva min_Latn mkd_Cyrl plt_Latn mlt_Latn mni_Beng khk_Cyrl mos_Latn mri_Latn zsm_Latn mya_Mymr nld_Latn nno_Latn
nob_Latn npi_Deva nso_Latn nus_Latn nya_Latn oci_Latn gaz_Latn ory_Orya pag_Latn pan_Guru pap_Latn pol_Latn por_Latn
prs_Arab pbt_Arab quy_Latn ron_Latn run_Latn rus_Cyrl sag_Latn san_Deva sat_Beng scn_Latn shn_Mymr sin_Sinh slk_Latn
slv_Latn smo_Latn sna_Latn snd_Arab som_Latn sot_Latn spa_Latn als_Latn srd_Latn srp_Cyrl ssw_Latn sun_Latn swe_Latn
swh_Latn szl_Latn tam_Taml tat_Cyrl tel_Telu tgk_Cyrl tgl_Latn tha_Thai tir_Ethi taq_Latn taq_Tfng tpi_Latn tsn_Latn
tso_Latn tuk_Latn tum_Latn tur_Latn twi_Latn tzm_Tfng uig_Arab ukr_Cyrl umb_Latn urd_Arab uzn_Latn vec_Latn vie_Latn
war_Latn wol_Latn xho_Latn ydd_Hebr yor_Latn yue_Hant zho_Hans zho_Hant zul_Latn""".split()

# tokenization_m2m_100.py's FAIRSEQ_LANGUAGE_CODES["m2m100"] (100 codes, in order).
M2M_CODES = """af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi
hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl ps pt
ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu""".split()


class Nllb:
    fairseq_offset = 1

    def __init__(self, model_file, legacy=False):
        self.sp = spm.SentencePieceProcessor(model_file=model_file)
        self.legacy = legacy            # legacy_behaviour: prefix [], suffix [eos, lang]
        self.sp_model_size = len(self.sp)
        self.fairseq_tokens_to_ids = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        self.lang_code_to_id = {c: self.sp_model_size + i + self.fairseq_offset for i, c in enumerate(NLLB_CODES)}
        self.fairseq_tokens_to_ids["<mask>"] = self.sp_model_size + len(self.lang_code_to_id) + self.fairseq_offset
        self.special = set(self.fairseq_tokens_to_ids.values()) | set(self.lang_code_to_id.values())
        self.unk_token_id, self.eos_token_id = 3, 2

    def _convert_token_to_id(self, token):
        spm_id = self.sp.PieceToId(token)
        return spm_id + self.fairseq_offset if spm_id else self.unk_token_id

    def encode(self, text, src_lang):
        ids = [self._convert_token_to_id(t) for t in self.sp.encode(text, out_type=str)]
        if self.legacy:
            return ids + [self.eos_token_id, self.lang_code_to_id[src_lang]]
        return [self.lang_code_to_id[src_lang]] + ids + [self.eos_token_id]

    def decode(self, ids):
        tokens = [self.sp.IdToPiece(i - self.fairseq_offset) for i in ids if i not in self.special]
        return "".join(tokens).replace("\u2581", " ").strip()


class M2M100:
    def __init__(self, model_file, encoder):
        self.sp = spm.SentencePieceProcessor(model_file=model_file)
        self.encoder = encoder
        self.decoder = {v: k for k, v in encoder.items()}
        n = len(encoder)
        self.lang_token_to_id = {f"__{c}__": n + i for i, c in enumerate(M2M_CODES)}
        self.id_to_lang_token = {v: k for k, v in self.lang_token_to_id.items()}
        self.special = {encoder[t] for t in ("<s>", "</s>", "<unk>", "<pad>")} | set(self.id_to_lang_token)

    def _convert_token_to_id(self, token):
        if token in self.lang_token_to_id:
            return self.lang_token_to_id[token]
        return self.encoder.get(token, self.encoder["<unk>"])

    def encode(self, text, src_lang):
        ids = [self._convert_token_to_id(t) for t in self.sp.encode(text, out_type=str)]
        return [self.lang_token_to_id[f"__{src_lang}__"]] + ids + [self.encoder["</s>"]]

    def decode(self, ids):
        tokens = [self.id_to_lang_token.get(i, self.decoder.get(i, "<unk>")) for i in ids if i not in self.special]
        return self.sp.decode(tokens)
