# Native code as people ship it (test/integration/native_test.go),
# included by Makefile.inc (OUT, W, WCC, NOFP come from there):
# callgraph.c linked by lld and mold (the text segment starts inside the
# read-only segment's last page), a default Cargo release build of the
# same call graph in Rust (rust-lld, no frame pointers, mangled names; also
# with v0 mangling) and C++ with templates and lambdas (mangled names).
CARGO ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
N := $(OUT)/native
RUST_CG := $(W)/rust_callgraph

NATIVE_OUT := $(N)/callgraph_lld $(N)/callgraph_mold $(N)/rust_callgraph $(N)/rust_callgraph_v0 \
  $(N)/cxx_templates $(N)/go_callgraph $(N)/go_callgraph_syms \
  $(N)/go_callgraph_go122 $(N)/go_callgraph_go122_syms \
  $(N)/go_cgo $(N)/go_cgo_syms \
  $(N)/callgraph_minidebug $(N)/debuglink/callgraph_debuglink $(N)/inlined \
  $(N)/debuginfod/callgraph_dbgd
EXTRA_WORKLOADS += $(NATIVE_OUT)

$(N):
	mkdir -p $@
$(N)/callgraph_lld: $(W)/callgraph.c $(W)/native.mk | $(N)
	$(WCC) $(NOFP) -fuse-ld=lld -o $@ $<
$(N)/callgraph_mold: $(W)/callgraph.c $(W)/native.mk | $(N)
	$(WCC) $(NOFP) -fuse-ld=mold -o $@ $<
# Offline: the crate has no dependencies.
$(N)/rust_callgraph: $(RUST_CG)/Cargo.toml $(RUST_CG)/src/main.rs $(W)/native.mk | $(N)
	@test -x "$(CARGO)" || { echo "error: cargo not found (Rust workloads need a Rust toolchain)" >&2; exit 1; }
	$(CARGO) build --quiet --release --offline --manifest-path $(RUST_CG)/Cargo.toml \
	  --target-dir $(abspath $(N))/rust-target
	cp $(N)/rust-target/release/rust_callgraph $@
# The same with Rust's v0 symbol mangling (stable since 1.59).
$(N)/rust_callgraph_v0: $(RUST_CG)/Cargo.toml $(RUST_CG)/src/main.rs $(W)/native.mk | $(N)
	@test -x "$(CARGO)" || { echo "error: cargo not found (Rust workloads need a Rust toolchain)" >&2; exit 1; }
	RUSTFLAGS="-C symbol-mangling-version=v0" $(CARGO) build --quiet --release --offline \
	  --manifest-path $(RUST_CG)/Cargo.toml --target-dir $(abspath $(N))/rust-target-v0
	cp $(N)/rust-target-v0/release/rust_callgraph $@
# C++ -O2 without frame pointers: templates, lambdas, std::sort.
$(N)/cxx_templates: $(W)/cxx_templates.cc $(W)/native.mk | $(N)
	clang++ -std=c++17 $(NOFP) -o $@ $<
# Go as shipped: stripped (-s -w: no .symtab, no DWARF; .gopclntab stays),
# and the same build unstripped as the truth for names (same layout).
GO ?= go
GO_CG := $(W)/go_callgraph
GO_ENV := GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
$(N)/go_callgraph: $(GO_CG)/main.go $(GO_CG)/go.mod $(W)/native.mk | $(N)
	$(GO_ENV) $(GO) build -C $(GO_CG) -ldflags="-s -w" -o $(abspath $@) .
$(N)/go_callgraph_syms: $(GO_CG)/main.go $(GO_CG)/go.mod $(W)/native.mk | $(N)
	$(GO_ENV) $(GO) build -C $(GO_CG) -o $(abspath $@) .
# Go calling C through cgo, externally linked (gcc), stripped, and the
# same build unstripped as the truth for names.
GO_CGO := $(W)/go_cgo
GO_CGO_ENV := GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=1
$(N)/go_cgo: $(GO_CGO)/main.go $(GO_CGO)/go.mod $(W)/native.mk | $(N)
	$(GO_CGO_ENV) $(GO) build -C $(GO_CGO) -ldflags="-s -w" -o $(abspath $@) .
$(N)/go_cgo_syms: $(GO_CGO)/main.go $(GO_CGO)/go.mod $(W)/native.mk | $(N)
	$(GO_CGO_ENV) $(GO) build -C $(GO_CGO) -o $(abspath $@) .
# The same with Go 1.22 (the 1.20-1.26 table format, an older linker): the
# go command fetches that toolchain from the Go module proxy once.
GO122_ENV := GOTOOLCHAIN=go1.22.12 GOFLAGS=-mod=mod CGO_ENABLED=0
$(N)/go_callgraph_go122: $(GO_CG)/main.go $(GO_CG)/go.mod $(W)/native.mk | $(N)
	$(GO122_ENV) $(GO) build -C $(GO_CG) -ldflags="-s -w" -o $(abspath $@) .
$(N)/go_callgraph_go122_syms: $(GO_CG)/main.go $(GO_CG)/go.mod $(W)/native.mk | $(N)
	$(GO122_ENV) $(GO) build -C $(GO_CG) -o $(abspath $@) .
# MiniDebugInfo the way Fedora builds it (find-debuginfo): the function
# symbols .dynsym lacks, in a .symtab-only ELF, xz-compressed into
# .gnu_debugdata of the fully stripped binary.
$(N)/callgraph_minidebug: $(W)/callgraph.c $(W)/native.mk | $(N)
	$(WCC) $(NOFP) -o $@.full $<
	nm -D $@.full --format=posix --defined-only | awk '{ print $$1 }' | sort > $@.dynsyms
	nm $@.full --format=posix --defined-only | awk '{ if ($$2 == "T" || $$2 == "t" || $$2 == "D") print $$1 }' | sort > $@.funcsyms
	comm -13 $@.dynsyms $@.funcsyms > $@.keep
	objcopy --only-keep-debug $@.full $@.debug
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=$@.keep $@.debug $@.mini
	rm -f $@.mini.xz && xz $@.mini
	strip --strip-all -R .comment -o $@.tmp $@.full
	objcopy --add-section .gnu_debugdata=$@.mini.xz $@.tmp
	mv $@.tmp $@
	rm -f $@.full $@.dynsyms $@.funcsyms $@.keep $@.debug $@.mini.xz
# A stripped binary whose symbols are in a separate file beside it, found
# through .gnu_debuglink.
$(N)/debuglink/callgraph_debuglink: $(W)/callgraph.c $(W)/native.mk | $(N)
	mkdir -p $(dir $@)
	$(WCC) $(NOFP) -o $@.full $<
	objcopy --only-keep-debug $@.full $@.debug
	strip --strip-all -o $@ $@.full
	cd $(dir $@) && objcopy --add-gnu-debuglink=$(notdir $@).debug $(notdir $@)
	rm -f $@.full
# A stripped binary without a debuglink whose debug file only a debuginfod
# server has: store/ is the tree the test serves (debuginfod -F); .full,
# the same link unstripped, is the truth for names.
$(N)/debuginfod/callgraph_dbgd: $(W)/callgraph.c $(W)/native.mk | $(N)
	mkdir -p $(dir $@)store
	$(WCC) $(NOFP) -o $@.full $<
	objcopy --only-keep-debug $@.full $(dir $@)store/callgraph_dbgd.debug
	strip --strip-all -o $@ $@.full
# -O2 -g without frame pointers: DWARF lines and inlined frames.
$(N)/inlined: $(W)/inlined.c $(W)/native.mk | $(N)
	$(WCC) $(NOFP) -g -o $@ $<
