# mtserve: a plain Makefile, in three parts.
#   Makefile         the build: `make` builds build/mtserve (engine -> libmt.a, server ->
#                    libmtserver.a), `make deps` installs what is missing, `make run` serves.
#   tests/tests.mk   the tests and their generated fixtures: `make unit` (C unit tests, no
#                    generated model), `make test`, `make check` (everything CI runs),
#                    asan, tsan, valgrind, e2e, html-check, doc-check.
#   bench/bench.mk   the benchmarks (`make bench` and its kin): never part of a test.
#   tests/fuzz/fuzz.mk  the libFuzzer targets (`make fuzz`).
#   make debug      -O0 -g build in build-debug/ (MT_ASSERT aborts with file:line)
CC       ?= cc
PKGS     := libmicrohttpd jansson openblas gumbo libzip expat yaml-0.1 libcurl libcrypto hiredis libcmark-gfm
ARCH     ?= -march=native
OPT      ?= -O2 $(ARCH)
# Debug, sanitizer, valgrind and fuzz builds add this: a broken MT_ASSERT aborts there
# (engine/util/check.h); a release build answers that one request with HTTP 500.
ASSERT_ABORT := -DMT_ASSERT_ABORT
CFLAGS   ?= $(OPT)
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter -pthread -Iengine -Iserver \
            $(shell pkg-config --cflags $(PKGS))
# Every object records the headers it included (build/**/*.d): touching one header
# rebuilds only the objects that include it.
DEPFLAGS := -MMD -MP
# BLAS_LIBS: how OpenBLAS is linked.  docker/Dockerfile links Debian's static libopenblas.a:
# the binary then holds sgemm and its per-CPU kernels only, not the whole 43 MB package.
BLAS_LIBS ?= $(shell pkg-config --libs openblas)
# CLD2 (language detection) is C++ and ships no .pc file: -lcld2 and the C++ runtime.
# libcmark-gfm's .pc links its extensions too (GFM tables, strikethrough: server/document/doc_markdown.c).
LDLIBS   += $(shell pkg-config --libs libmicrohttpd jansson gumbo libzip expat yaml-0.1 libcurl libcrypto hiredis libcmark-gfm) -lcld2 $(BLAS_LIBS) -lstdc++ -lm -pthread
CXX      ?= c++
CXXFLAGS  = $(OPT) -std=c++17 -Wall -Wextra -Wno-unused-parameter -fno-exceptions -pthread -Iengine -Iserver
B        ?= build

ENGINE_SRC := $(sort $(shell find engine -name '*.c'))
SERVER_SRC := $(sort $(filter-out server/cmd/main.c,$(shell find server -name '*.c' -o -name '*.cc')))
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(B)/%.o)
SERVER_OBJ := $(patsubst %.cc,$(B)/%.o,$(SERVER_SRC:%.c=$(B)/%.o))

.PHONY: all deps run debug clean docker-test
all: $(B)/mtserve

# Debian 12 packages: to build, to test.  `make deps` installs only what is missing.
DEB_BUILD := gcc g++ make pkg-config libc6-dev libmicrohttpd-dev libjansson-dev libopenblas-dev libgumbo-dev libcld2-dev \
             libzip-dev libexpat1-dev libyaml-dev libcurl4-openssl-dev libssl-dev libhiredis-dev libcmark-gfm-dev \
             libcmark-gfm-extensions-dev
DEB_TEST  := libcmocka-dev libxml2-dev zlib1g-dev git clang libclang-rt-14-dev wrk valgrind nginx-light redis-server python3-yaml python3-lxml python3-html5lib \
             python3-numpy python3-docx python3-polib python3-odf python3-openpyxl python3-ebooklib python3-markdown-it \
             python3-translate \
             chromium fonts-dejavu-core
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# A build on a machine without the packages stops here with what to do, not at a
# missing header halfway through (the goals that install them first are exempt).
NO_PKG_CHECK := deps run check clean check-deps docker-test
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NO_PKG_CHECK),$(MAKECMDGOALS)),all),)
ifneq ($(shell pkg-config --exists $(PKGS) 2>/dev/null && [ -f /usr/include/cld2/public/compact_lang_det.h ] && echo ok),ok)
$(error the build packages are missing (pkg-config: $(PKGS); CLD2's header). Run `make deps` first: it installs them with apt-get)
endif
endif

# Node and npm (for the e2e test's playwright-core) come from Debian's nodejs and npm
# packages unless an npm is already on PATH (NodeSource's nodejs carries its own and
# conflicts with Debian's npm package).
deps:
	@missing=$$(for p in $(DEB_BUILD) $(DEB_TEST); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	else echo "all packages present"; fi
	@$(MAKE) --no-print-directory $(E2E_MODULES) $(HF_TOK_MODULES) $(HUBJS_MODULES) $(OPENAI_MODULES)

# The README's first command: install, build, serve the default model on 127.0.0.1:8080
# (en-fr; and fr-en beside it once models/fr-en exists: /languages lists both directions).
RUN_MODELS := $(if $(wildcard models/fr-en/model.safetensors),--model en-fr=models/en-fr --model fr-en=models/fr-en)
run: deps all
	$(B)/mtserve serve $(RUN_MODELS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# KERNEL_OPT, when set, replaces OPT for the arithmetic kernels (not the thread pool, not
# the allocator): `make tsan` builds them uninstrumented, as it already runs OpenBLAS,
# because they only read shared weights and write the rows their caller hands them, and
# instrumented they were most of a TSan test's time (tests/tests.mk says what it costs).
KERNEL_OBJ := $(patsubst %,$(B)/engine/kernels/%.o,linear linear_q8 attn_kernels norm)
$(KERNEL_OBJ): $(B)/engine/kernels/%.o: engine/kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(if $(KERNEL_OPT),$(subst $(OPT),$(KERNEL_OPT),$(CFLAGS)),$(CFLAGS)) $(DEPFLAGS) -c $< -o $@

$(B)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(DEPFLAGS) -c $< -o $@

# server/api/openapi.c, server/service/languages.c, server/hub/hub_pairs.c and engine/tokenizer/multi.c
# embed these files (.incbin)
$(B)/server/api/openapi.o: server/api/openapi.json server/api/libretranslate_spec.json
$(B)/server/service/languages.o: server/service/languages.tsv server/service/scripts.tsv
$(B)/server/hub/hub_pairs.o: server/hub/opus_pairs.tsv
$(B)/engine/tokenizer/multi.o: engine/tokenizer/nllb_langs.txt engine/tokenizer/m2m100_langs.txt

# rebuilt whole: `ar r` alone keeps the members of files that were removed or renamed
$(B)/libmt.a: $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/libmtserver.a: $(SERVER_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/mtserve: $(B)/server/cmd/main.o $(B)/libmtserver.a $(B)/libmt.a
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

debug:
	$(MAKE) B=build-debug OPT="-O0 -g $(ASSERT_ABORT)" all

clean:
	rm -rf build build-debug build-asan build-vg build-tsan build-fuzz

docker-test:
	bash docker/test.sh

include tests/tests.mk
include bench/bench.mk
include tests/fuzz/fuzz.mk

# What each object included, as its last compile recorded it (none before the first build).
-include $(ENGINE_OBJ:.o=.d) $(SERVER_OBJ:.o=.d) $(B)/server/cmd/main.d $(TEST_OBJ:.o=.d)
