# The benchmarks: never part of a test (BENCHMARKS.md says how each figure was measured).
# Included by the top Makefile.
#   make bench            engine vs PyTorch, server load, memory, machine limits -> BENCHMARKS.md
#   make bench-kernels    the batched products against the measured peak
#   make bench-llm        decoder-only LMs at their published shapes, C engine vs PyTorch
#   make bench-ct2        mtserve vs CTranslate2 4.8.1
#   make bench-server-rate, file-bench, cache-bench, html-bench, detect-load   the server's own figures
.PHONY: bench bench-models bench-kernels bench-llm bench-ct2 bench-server-rate file-bench epub-bench cache-bench redis-cache-bench html-bench

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

# Issue 49 item 4: batch-1 greedy at the NLLB-200-distilled-600M shape (random weights at full
# depth, F16 safetensors, by tests/m2m/gen_m2m.py's bench mode into $(M2M_BENCH_DIR), 1.2 GB,
# about a minute; kept), the whole vocabulary against a target-language map of M2M_BENCH_IDS ids
# (bench/m2m_vocab.sh: F32 and INT8, 1 and 2 threads, alternating in each process; ~30 min here).
M2M_BENCH_DIR ?= $(CURDIR)/build/m2m-bench
M2M_BENCH_IDS ?= 20000
M2M_BENCH_N ?= 2
M2M_BENCH_ROUNDS ?= 2
M2M_BENCH_600M := $(M2M_BENCH_DIR)/nllb-600m/deep/model.safetensors
$(M2M_BENCH_600M): | $(SPM_BPE_REF)
	/usr/bin/python3 tests/m2m/gen_m2m.py $(M2M_BENCH_DIR) $(B)/spm-bpe bench nllb-600m
.PHONY: bench-m2m-vocab bench-ct2-nllb
bench-m2m-vocab: $(B)/bench/bench_engine $(M2M_BENCH_600M)
	bench/m2m_vocab.sh $(M2M_BENCH_DIR) $(B)/bench/bench_engine $(M2M_BENCH_DIR)/nllb-600m/deep $(M2M_BENCH_IDS) \
	    $(M2M_BENCH_N) $(M2M_BENCH_ROUNDS)

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
# python3-torch) on full-depth checkpoints of the published shapes, batch 1 and 8, one table
# (bench/llm_bench.py):  make bench-llm [BENCH_LLM_ARGS="--models qwen3 --torch ''"]
# The checkpoints: `gen_llm.py OUT full published` (TinyLlama-1.1B, Qwen3-0.6B, Qwen2.5-0.5B
# in BF16 with their float64 first-step logits; 4.4 GB, minutes) in LLM_FULL_DIR, never
# committed; the tests use narrower ones (tests/tests.mk, llm-models).
BENCH_LLM_ARGS ?=
LLM_FULL_DIR   ?= $(CURDIR)/build/llm-full
.PHONY: bench-llm llm-models-full
llm-models-full: $(LLM_FULL_DIR)/.done
$(LLM_FULL_DIR)/.done: tests/llm/gen_llm.py
	rm -rf $(LLM_FULL_DIR) && mkdir -p $(LLM_FULL_DIR)
	/usr/bin/python3 tests/llm/gen_llm.py $(LLM_FULL_DIR) full published
	touch $@

bench-llm: $(B)/bench/bench_llm llm-models-full
	/usr/bin/python3 bench/llm_bench.py --llm-dir $(LLM_FULL_DIR) --bench $(B)/bench/bench_llm $(BENCH_LLM_ARGS)

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
# Issue 49: the same comparison at the NLLB-200-distilled-600M shape (the model of bench-m2m-vocab below;
# CTranslate2's M2M100Loader converts it), eng_Latn -> fra_Latn, F32 and INT8.
bench-ct2-nllb: $(B)/bench/bench_engine $(M2M_BENCH_600M)
	@[ -x $(CT2_DIR)/ct2/bin/ct2_bench ] || { echo "bench-ct2-nllb: no CTranslate2 build in CT2_DIR=$(CT2_DIR): see make bench-ct2"; exit 1; }
	B=$(B) /usr/bin/python3 bench/ct2/compare.py --ct2-dir $(CT2_DIR) --shapes nllb-600m \
	    --m2m-models $(M2M_BENCH_DIR) --pairs f32,int8 $(BENCH_CT2_ARGS)

$(B)/bench/loadgen: bench/loadgen.c bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(shell pkg-config --cflags --libs libcurl) -pthread

# /detect idle vs every decoder row busy (BENCHMARKS.md, issue 48): bench/detect_load.sh.
.PHONY: detect-load
detect-load:
	B=$(B) bash bench/detect_load.sh

$(B)/bench/detect_load: bench/detect_load.c bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(shell pkg-config --cflags --libs libcurl) -pthread

# format html measured (BENCHMARKS.md): gumbo vs libxml2 against html5lib, tag placement
# against a reference aligner (html mode vs the naive per-text-node way), html vs text latency.
html-bench: $(B)/mtserve $(B)/bench/html_parsers
	/usr/bin/python3 tests/html/gen_snippets.py $(B)/html/snippets.jsonl
	/usr/bin/python3 bench/html_parsers.py --bin $(B)/bench/html_parsers
	B=$(B) MTSERVE_ARGS="--max-tokens 20000" tests/html/with_server.sh \
	    /usr/bin/python3 bench/html_accuracy.py {url} $(B)/html/snippets.jsonl
	B=$(B) MTSERVE_ARGS="--max-tokens 20000" tests/html/with_server.sh \
	    /usr/bin/python3 bench/html_latency.py {url}

# A 1 MB text file through POST /translate_file while 8 clients send single sentences
# (BENCHMARKS.md, issue 28).  FILE_LOAD_ARGS: e.g. "--serve-args '--file-batch 4'".
# The translation cache under load (bench/cache_bench.sh): 32 clients repeating 100
# sentences with the cache on and off, replies compared, then 10 minutes of RSS.
cache-bench: $(B)/mtserve $(B)/bench/loadgen
	MTSERVE_BIN=$(B)/mtserve LOADGEN=$(B)/bench/loadgen bench/cache_bench.sh $(CACHE_BENCH_ARGS)

# The shared translation cache (bench/redis_cache_bench.sh, issue 51): one replica, then
# three behind nginx without and with --redis-cache-mb, repeated sentences.
# REDIS_CACHE_BENCH_ARGS: SECONDS SENTENCES CLIENTS.
redis-cache-bench: $(B)/mtserve $(B)/bench/loadgen
	MTSERVE_BIN=$(B)/mtserve LOADGEN=$(B)/bench/loadgen bench/redis_cache_bench.sh $(REDIS_CACHE_BENCH_ARGS)

# The server at 32 clients against the engine's batch 32, same sentences, interleaved
# (BENCHMARKS.md, issue 32).  SERVER_RATE_ARGS: e.g. "--reps 9 --weights int8".
bench-server-rate: $(B)/mtserve $(B)/bench/bench_engine $(B)/bench/loadgen
	/usr/bin/python3 bench/server_vs_engine.py $(SERVER_RATE_ARGS)

file-bench: $(B)/mtserve $(B)/bench/loadgen
	/usr/bin/python3 bench/file_load.py --bin $(B)/mtserve --loadgen $(B)/bench/loadgen $(FILE_LOAD_ARGS)

# An EPUB over 2 MiB (its text about 1.2 MB of XHTML, 1.6 MB of pictures) translated in the
# background beside 8 interactive clients (BENCHMARKS.md, issue 52).  The translation cache
# off: the clients repeat 200 sentences, which the cache would answer without decoding.
EPUB_LOAD_ARGS ?= --serve-args "--cache-mb 0"
epub-bench: $(B)/mtserve $(B)/bench/loadgen
	/usr/bin/python3 bench/file_load.py --bin $(B)/mtserve --loadgen $(B)/bench/loadgen --format epub $(EPUB_LOAD_ARGS)

$(B)/bench/html_parsers: bench/html_parsers.c
	@mkdir -p $(dir $@)
	$(CC) -O2 $< -o $@ $(shell pkg-config --cflags --libs gumbo libxml-2.0) -pthread

# mtserve's server vs llama.cpp's llama-server on random-weight checkpoints at the TinyLlama-1.1B,
# Qwen3-0.6B and gemma-3-1b shapes (issue 54; bench/llamacpp_bench.py, bench/llamacpp/README.md):
#   make llamacpp-bench [LLAMACPP_DIR=/work/llamacpp] [BENCH_LLAMACPP_ARGS="--models qwen3 --rounds 3"]
# LLAMACPP_DIR holds llama.cpp's source (src/, for gguf-py) and its CPU build (build/bin/llama-server,
# llama-quantize), made outside the repository (bench/llamacpp/README.md: commit and flags).
# The checkpoints (HF BF16, then GGUF F32 by bench/llamacpp/to_gguf.py, F16 and Q8_0 by
# llama-quantize; ~20 GB, never committed) go to LLAMACPP_OUT.
LLAMACPP_DIR ?= /work/llamacpp
LLAMACPP_OUT ?= $(CURDIR)/build/llamacpp
BENCH_LLAMACPP_ARGS ?=
LLAMACPP_MODELS := tinyllama qwen3 gemma3
.PHONY: llamacpp-bench llamacpp-models
.PRECIOUS: $(LLAMACPP_OUT)/gguf/%.gguf $(LLAMACPP_OUT)/hf/%/config.json
$(B)/bench/llamacpp_bounds: bench/llamacpp/bounds.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ -pthread
$(LLAMACPP_OUT)/hf/%/config.json: bench/llamacpp/gen_models.py $(HF_FIX)/llama2/tokenizer.json \
                                  $(HF_FIX)/qwen3/tokenizer.json $(HF_FIX)/gemma3/tokenizer.json
	/usr/bin/python3 bench/llamacpp/gen_models.py $(LLAMACPP_OUT)/hf $(HF_FIX) $*
$(LLAMACPP_OUT)/gguf/%-f32.gguf: $(LLAMACPP_OUT)/hf/%/config.json bench/llamacpp/to_gguf.py
	@mkdir -p $(@D)
	/usr/bin/python3 bench/llamacpp/to_gguf.py $(LLAMACPP_DIR)/src/gguf-py $(<D) $@.tmp && mv $@.tmp $@
$(LLAMACPP_OUT)/gguf/%-f16.gguf: $(LLAMACPP_OUT)/gguf/%-f32.gguf
	$(LLAMACPP_DIR)/build/bin/llama-quantize $< $@ F16 2
$(LLAMACPP_OUT)/gguf/%-q8_0.gguf: $(LLAMACPP_OUT)/gguf/%-f32.gguf
	$(LLAMACPP_DIR)/build/bin/llama-quantize $< $@ Q8_0 2
llamacpp-models: $(foreach m,$(LLAMACPP_MODELS),$(foreach t,f32 f16 q8_0,$(LLAMACPP_OUT)/gguf/$(m)-$(t).gguf))
llamacpp-bench: $(B)/mtserve $(B)/bench/llamacpp_bounds
	@if [ ! -x $(LLAMACPP_DIR)/build/bin/llama-server ] || [ ! -d $(LLAMACPP_DIR)/src/gguf-py ]; then \
	    echo "llamacpp-bench: no llama.cpp build in LLAMACPP_DIR=$(LLAMACPP_DIR) (build/bin/llama-server, src/gguf-py);"; \
	    echo "build it outside the repository as bench/llamacpp/README.md records, then"; \
	    echo "  make llamacpp-bench LLAMACPP_DIR=<its folder>"; exit 1; fi
	$(MAKE) llamacpp-models
	/usr/bin/python3 bench/llamacpp_bench.py --hf $(LLAMACPP_OUT)/hf --gguf $(LLAMACPP_OUT)/gguf \
	    --gguf-py $(LLAMACPP_DIR)/src/gguf-py --llama-server $(LLAMACPP_DIR)/build/bin/llama-server \
	    --mtserve $(B)/mtserve --bounds $(B)/bench/llamacpp_bounds --logs $(LLAMACPP_OUT)/logs \
	    --jsonl $(LLAMACPP_OUT)/results.jsonl --out $(LLAMACPP_OUT)/table.md $(BENCH_LLAMACPP_ARGS)
