# kvsim — build, run, test and benchmark.
#
#   make          build build/kvsim (and CUDA kernels when nvcc exists)
#   make run      install missing packages, build, replay the bundled trace
#   make test     install missing packages, build with ASan+UBSan, run every test
#   make test-san the same, every kvsim command line the tests start under ASan+UBSan too (CI)
#   make bench    benchmarks (timings live here, never in tests)
#   make probe    build/kvsim-probe alone (libc + CUDA runtime; no packages needed)
#   make lab      check then time every data-path method (the probe in lab mode)
#   make check-layout  the layer rule and no circles (mk/check-layout.sh; in make test)
#   make format-check  every source file as clang-format leaves it (.clang-format)
#   make check-clang   every C file through clang's front end with the build's warnings (in make test)
#   make format        reformat every source file in place
#   make install PREFIX=DIR  binaries to DIR/bin, presets, measured tables (configs/optables) and the bundled traces to DIR/share/kvsim
#   make fuzz          libFuzzer binaries for the trace reader, config, --set, trace import, validate and model import (clang)
#
# Sources are picked up by directory: a new .c file anywhere under sim/,
# sched/, reports/ or datapath/ joins the build with no edit here;
# tests/test_*.c each become one binary. Header dependencies are generated
# by the compiler (-MMD): an edit rebuilds only what includes it.
#
# Every target builds in parallel on all the machine's cores (-j$(nproc))
# unless the command line gives its own -j (`make -j1` builds one file at a
# time; sub-makes share the top-level jobserver). Each public target checks
# packages (deps) before a sub-make builds,
# so no compile starts before mk/deps.sh has installed what it needs.
NPROC := $(shell nproc 2>/dev/null || echo 1)
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
  MAKEFLAGS += -j$(NPROC)
endif

CC      ?= cc
FUZZ_CC ?= clang
BUILD   := build
SAN     := build/san
PKGS    := jansson gsl sqlite3 libxxhash zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BASE    := -std=c11 -D_GNU_SOURCE -g -I. $(WARN) $(PKG_CFLAGS) -DKVSIM_GIT='"$(GIT_REV)"'
CFLAGS  := $(BASE) -O2
SANFLAGS:= -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
# How the sanitizer binaries link: UBSan's runtime static (libgcc-12-dev's
# libubsan.a, beside the shared ASan runtime) and the executable not
# position-independent, so that a start neither loads libubsan.so nor
# relocates a PIE's instrumented data: one start of build/san/kvsim takes
# about 2,600 page faults instead of about 4,800 (make bench's
# section_faults rows, 2026-11-30). The whole make test hardly moves: most
# of its time is the replays themselves. The same checks, the same reports.
SANLD   := -static-libubsan -no-pie
LDLIBS  := $(PKG_LIBS) -lm -lpthread

# build/kvsim links the packages' static archives when every one is
# installed (Debian's -dev packages ship them), else the shared libraries.
# A start then loads and relocates no third-party library: `perf stat -r 30
# build/kvsim --help` took 2.7 ms instead of 6.2 ms, a sixth of a one-point
# `kvsim hitrate` on the Mooncake trace. Test binaries keep the shared ones.
archive   = $(shell $(CC) -print-file-name=lib$(1).a)
PKG_ARCHIVES := $(foreach l,$(patsubst -l%,%,$(filter-out -lm,$(filter -l%,$(PKG_LIBS)))),$(call archive,$(l)))
ifneq ($(and $(PKG_ARCHIVES),$(if $(filter-out /%,$(PKG_ARCHIVES)),,all)),)
  MAIN_LIBS := $(filter-out -l%,$(PKG_LIBS)) $(PKG_ARCHIVES) -lm -lpthread
else
  MAIN_LIBS := $(LDLIBS)
endif

# ---- CUDA: detected, never required ----------------------------------------
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_SRCS   := $(wildcard kernels/*.cu)
# KVSIM_HAVE_CUDA reaches datapath/backend_cuda.c only; cudart is linked only
# when there are kernels to link.
ifneq ($(and $(NVCC),$(CU_SRCS)),)
  $(if $(filter 0,$(MAKELEVEL)),$(info ✓ nvcc found ($(NVCC)): CUDA backend and kernels are built for sm_90))
  NVFLAGS  := -O3 -std=c++17 -arch=sm_90 -I. -Xcompiler -Wall,-Wextra,-Werror
  CU_OBJS  := $(CU_SRCS:%.cu=$(BUILD)/%.o)
  CUDA_DEF := -DKVSIM_HAVE_CUDA -isystem $(CUDA_HOME)/include
  # The CUDA runtime is linked statically, as nvcc does by default, and so is
  # the C++ runtime it needs when its archive is installed: no shared cudart
  # or libstdc++ to load at every start (and nothing to find on a GPU host).
  STDCXX   := $(if $(filter /%,$(call archive,stdc++)),$(call archive,stdc++) -static-libgcc,-lstdc++)
  CUDA_LIB := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread $(STDCXX)
else
  $(if $(filter 0,$(MAKELEVEL)),$(info ✗ nvcc not found: CPU backend only (CUDA backend reports "not built")))
endif

# The simulator (build/kvsim) is sim/, sched/ and reports/; the host data
# path (datapath/) links into the probe and the tests, never into kvsim.
MAIN_SRC  := sim/cli/main.c
SIM_SRCS  := $(sort $(shell find sim sched reports -name '*.c'))
DP_SRCS   := $(wildcard datapath/*.c)
LIB_SRCS  := $(filter-out $(MAIN_SRC),$(SIM_SRCS))
OBJS      := $(LIB_SRCS:%.c=$(BUILD)/%.o)
DP_OBJS   := $(DP_SRCS:%.c=$(BUILD)/%.o)
SAN_OBJS  := $(LIB_SRCS:%.c=$(SAN)/%.o) $(DP_SRCS:%.c=$(SAN)/%.o)
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(SAN)/tests/%) $(SAN)/tests/test_docs_b
DEPFLAGS   = -MMD -MP
# The probe links only files that need nothing beyond libc (and cudart).
PROBE_LIB := sim/util.c sim/outfile.c datapath/layout.c datapath/backend.c datapath/backend_cpu.c \
             datapath/backend_cuda.c datapath/fileio.c
PROBE_OBJS:= $(patsubst %.c,$(BUILD)/%.o,$(wildcard datapath/probe/*.c) $(PROBE_LIB))
# Non-sanitized test binaries that drive the GPU (skip with a reason without one).
GPU_TESTS := $(if $(CU_OBJS),$(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/gpu_*.c)))

.PHONY: all deps run test test-san bench clean build-main build-test probe lab check-layout format-check check-clang format
# The public targets check packages first, then build in a sub-make so that
# pkg-config is asked again after an install.
all: deps
	@$(MAKE) --no-print-directory build-main
build-main: $(BUILD)/kvsim $(BUILD)/kvsim-probe

deps:
	@mk/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/datapath/backend_cuda.o: CFLAGS += $(CUDA_DEF)
# Rebuild the backend when CUDA comes or goes (e.g. `make NVCC=` after `make`):
# the stamp changes only when the mode does.
$(BUILD)/datapath/backend_cuda.o: $(BUILD)/cuda-mode
$(BUILD)/cuda-mode: FORCE
	@mkdir -p $(BUILD); echo $(if $(CU_OBJS),on,off) | cmp -s - $@ || echo $(if $(CU_OBJS),on,off) > $@
FORCE:

$(BUILD)/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/kvsim: $(BUILD)/sim/cli/main.o $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(MAIN_LIBS)

$(BUILD)/kvsim-probe: $(PROBE_OBJS) $(CU_OBJS)
	$(CC) $(CFLAGS) -o $@ $^ -lm -lpthread $(CUDA_LIB)

probe: $(BUILD)/kvsim-probe
lab: $(BUILD)/kvsim-probe
	$(BUILD)/kvsim-probe --lab --out /dev/null

$(BUILD)/tests/gpu_%: tests/gpu_%.c $(OBJS) $(DP_OBJS) $(CU_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(CUDA_DEF) -o $@ $< $(OBJS) $(DP_OBJS) $(CU_OBJS) $(LDLIBS) -lcmocka $(CUDA_LIB)

# Sanitizer build: CPU backend only (ASan and the CUDA runtime do not mix).
# At -O2, as the optimized build: the sanitizers' checks are inserted before
# the optimizer runs, and the in-process tests take about an eighth less CPU
# than at -O1 (user + system over two interleaved runs of each, 2026-11-30
# on the 2-core machine: test_holders 14.5 -> 12.6 s, test_validate 15.6 ->
# 13.7 s, test_conductor 14.2 -> 12.8 s).
$(SAN)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O2 $(SANFLAGS) -DKVSIM_TEST_FAULTS $(DEPFLAGS) -c $< -o $@

$(SAN)/kvsim: $(SAN)/sim/cli/main.o $(filter-out $(SAN)/datapath/%,$(SAN_OBJS))
	$(CC) $(BASE) $(SANFLAGS) $(SANLD) -o $@ $^ $(LDLIBS)

# The test binaries link the sanitizer objects as one archive, so that each
# takes only the objects it calls: links about 6x faster and binaries about
# a tenth the size of linking every object into each of the ~70 tests.
$(SAN)/libkvsim.a: $(SAN_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(SAN)/tests/%: tests/%.c $(SAN)/libkvsim.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O2 $(SANFLAGS) $(SANLD) -DKVSIM_TEST_FAULTS $(DEPFLAGS) -o $@ $< $(SAN)/libkvsim.a $(LDLIBS) -lcmocka

# The doc transcripts' second shard (tests/test_docs.c, shard_of): make test
# runs both at once.
$(SAN)/tests/test_docs_b: tests/test_docs.c $(SAN)/libkvsim.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O2 $(SANFLAGS) $(SANLD) -DKVSIM_TEST_FAULTS -DKVSIM_DOC_SECOND $(DEPFLAGS) -o $@ $< $(SAN)/libkvsim.a $(LDLIBS) \
	  -lcmocka

run: all
	$(BUILD)/kvsim run

# The longest test binaries start first (longest-first list scheduling), so
# that the nproc at a time that tests/run.sh runs end together and no long
# one starts last: the two doc shards, then the others by the CPU seconds
# each took alone (2026-12-01, /usr/bin/time, the tests starting the
# optimized kvsim; KVSIM_TEST_SLOWEST=100 prints every binary's wall time);
# the rest follow in name order. Re-order when a test's time moves much.
# tests/slurm.sh comes first, beside the nproc (KVSIM_TEST_WAITING): it
# mostly waits on Slurm's scheduler (20-25 s wall, 1.5 s of CPU). nproc at a
# time, not nproc + 1: on the 2-core machine three at a time took 535 s of
# CPU where two took 455 (make test 4 min 29-41 s against 4 min 11 s).
SLOW_TESTS = tests/slurm.sh $(addprefix $(SAN)/tests/,test_docs test_docs_b test_fuzz test_parallel test_report \
  test_plan_slo test_holders test_validate test_conductor test_faults test_plan_confirm test_stream test_report_render \
  test_run test_layout test_cost_presets test_sweep test_report_groups test_tiers test_ladder test_measured \
  test_summaries test_trace_import test_profile test_silent)
SLOW_FIRST = $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(TEST_BINS))
# Which kvsim the tests start (TEST_CLI, their $$KVSIM_BIN). The test
# binaries themselves are the sanitizer build, and the fuzz corpus's command
# lines always start the sanitizer kvsim ($$KVSIM_SAN_BIN): a signal or a
# sanitizer report is what they look for. The other 2,500-odd command lines
# the tests start (replays, sweeps, plans, error messages) start the
# optimized build, the one users run, as the doc transcripts do: under
# ASan+UBSan they took about 400 s of the suite's 800 s of CPU, against
# about 90 s optimized (2026-11-30, each start timed under /usr/bin/time).
# `make test-san` starts the sanitizer build for all of them: what CI runs
# (.ci/run), so no change lands without every command line under ASan+UBSan.
TEST_CLI ?= $(BUILD)/kvsim
test: deps
	@$(MAKE) --no-print-directory build-test check-layout format-check check-clang
	@KVSIM_TEST_JOBS=$${KVSIM_TEST_JOBS:-$$(nproc)} KVSIM_TEST_WAITING=slurm.sh KVSIM_BIN=$(TEST_CLI) \
	  KVSIM_SAN_BIN=$(SAN)/kvsim KVSIM_PROBE=$(BUILD)/kvsim-probe KVSIM_DOC_SHARD=0/2 tests/run.sh $(SLOW_FIRST) $(GPU_TESTS)
test-san:
	@$(MAKE) --no-print-directory test TEST_CLI=$(SAN)/kvsim
build-test: $(SAN)/kvsim $(BUILD)/kvsim $(TEST_BINS) $(BUILD)/kvsim-probe $(GPU_TESTS)

# Layers and circles, read from the objects of the optimized build.
check-layout: $(BUILD)/kvsim $(BUILD)/kvsim-probe $(DP_OBJS) $(CU_OBJS)
	@mk/check-layout.sh $(BUILD)

FMT_SRCS = $(sort $(shell find sim sched reports datapath kernels tests -name '*.[ch]' -o -name '*.cu'))
format-check:
	@if command -v clang-format >/dev/null; then \
	  printf '%s\n' $(FMT_SRCS) | xargs -P $$(nproc) -n 32 clang-format --dry-run --Werror && \
	  echo "format: $(words $(FMT_SRCS)) files as .clang-format leaves them"; \
	else echo "format-check: clang-format not installed (apt-get install clang-format): skipped"; fi
format:
	clang-format -i $(FMT_SRCS)

# The build is gcc's; `make fuzz` compiles the same files with clang, whose
# warnings differ (-Wunneeded-internal-declaration once broke it unseen, and
# clang found a fail_msg short of an argument in a test), so every C file
# goes through clang's front end with the build's flags (the tests' too).
# -Wno-string-concatenation: the tests join literals with macros on purpose.
# Each file leaves a stamp ($(BUILD)/clang/FILE.ok) and clang's list of the
# headers it read, so a file is checked again only when it, a header it
# includes or this Makefile changed: on a built tree the check costs nothing
# (all 262 files: about 50 s of CPU on the 2-core machine).
CLANG_SRCS = $(filter %.c,$(FMT_SRCS))
CLANG_OKS  = $(CLANG_SRCS:%.c=$(BUILD)/clang/%.ok)
HAVE_CLANG := $(shell command -v $(FUZZ_CC) 2>/dev/null)
ifneq ($(HAVE_CLANG),)
check-clang: $(CLANG_OKS)
	@echo "clang: $(words $(CLANG_SRCS)) C files without a warning"
else
check-clang:
	@echo "check-clang: clang not installed (apt-get install clang): skipped"
endif
$(BUILD)/clang/%.ok: %.c Makefile
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(BASE) -DKVSIM_TEST_FAULTS -Wno-string-concatenation -fsyntax-only -MMD -MP -MF $(@:.ok=.d) -MT $@ $< && touch $@

bench: all
	@tests/bench.sh

clean:
	rm -rf $(BUILD)

# make install PREFIX=/usr/local [DESTDIR=...]: the two binaries into
# PREFIX/bin; the presets and the bundled traces (traces/: the default and
# the public ones, with their licences) into PREFIX/share/kvsim,
# where an installed kvsim finds them from its own path (sim/config/model.c).
PREFIX ?= /usr/local
.PHONY: install doc-test doc-update doc-build man
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/kvsim $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/kvsim $(BUILD)/kvsim-probe $(DESTDIR)$(PREFIX)/bin/
	install -m 644 docs/kvsim.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvsim.1
	cp -R configs traces $(DESTDIR)$(PREFIX)/share/kvsim/
	@test -f $(DESTDIR)$(PREFIX)/share/kvsim/configs/optables/h100_sxm/meta.json || { echo "install: configs/optables missing"; exit 1; }
	@echo "installed: $(PREFIX)/bin/kvsim, presets, measured per-operation tables (configs/optables) and the bundled traces in $(PREFIX)/share/kvsim, kvsim(1) in $(PREFIX)/share/man/man1"

# Documentation tests (docs/doc-test.md): every transcript in README.md and
# docs/ re-run and compared; doc-update rewrites the stale ones in place;
# man regenerates docs/kvsim.1 from the --help texts.
doc-test: deps
	@$(MAKE) --no-print-directory doc-build
	@KVSIM_BIN=$(SAN)/kvsim $(SAN)/tests/test_docs
doc-update: deps
	@$(MAKE) --no-print-directory doc-build
	@KVSIM_DOC_UPDATE=1 KVSIM_BIN=$(SAN)/kvsim $(SAN)/tests/test_docs
doc-build: $(BUILD)/kvsim $(BUILD)/kvsim-probe $(SAN)/kvsim $(SAN)/tests/test_docs
man: $(BUILD)/kvsim
	@mk/man.sh -o docs/kvsim.1 && echo "docs/kvsim.1 regenerated"

# ---- fuzzing (issue 13): libFuzzer entry points, built with clang ----------
# tests/fuzz/fuzz_{trace,config,set,ragpulse,csv,validate,model}.c each define LLVMFuzzerTestOneInput
# over the real trace reader, config loader, --set parsing, RAGPulse and CSV import (make test runs the
# same checks on fixed mutations of tests/fuzz/corpus/: tests/test_fuzz.c).
# `make fuzz` builds $(BUILD)/fuzz/fuzz_NAME with -fsanitize=fuzzer,address,
# undefined, the library compiled by clang with coverage into $(BUILD)/fuzz/;
# without clang or its libFuzzer runtime (Debian: libclang-rt-14-dev, pulled in
# by clang) it says which and succeeds.
FUZZ_NAMES := trace config set ragpulse csv validate model
FUZZ_BINS  := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/fuzz/%.o)
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_PROBE := int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }

.PHONY: fuzz fuzz-build
fuzz:
	@if ! command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  echo "make fuzz: clang not installed (apt-get install clang): skipped"; \
	elif ! { mkdir -p $(BUILD)/fuzz && echo '$(FUZZ_PROBE)' | \
	         $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz/probe 2>/dev/null; }; then \
	  echo "make fuzz: $(FUZZ_CC) cannot link -fsanitize=fuzzer (no libFuzzer runtime: apt-get install libclang-rt-14-dev): skipped"; \
	else \
	  $(MAKE) --no-print-directory fuzz-build && \
	  echo "make fuzz: built $(FUZZ_BINS); run each for a minute, new inputs into $(BUILD)/fuzz/corpus/NAME:" && \
	  for n in $(FUZZ_NAMES); do mkdir -p $(BUILD)/fuzz/corpus/$$n; \
	    echo "  $(BUILD)/fuzz/fuzz_$$n -max_total_time=60 -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/corpus/$$n tests/fuzz/corpus/$$n"; done; \
	fi
# The objects are named here so that make keeps them (not intermediate files).
fuzz-build: $(FUZZ_BINS) $(FUZZ_OBJS)

$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE) -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(FUZZ_CC) $(BASE) -O1 $(FUZZ_SAN) -fsanitize=fuzzer $(DEPFLAGS) -o $@ $< $(FUZZ_OBJS) $(LDLIBS)

# Generated header dependencies (absent on a first build, which builds all).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
