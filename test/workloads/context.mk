# Thread/process context publishers and their workloads (sources in
# context/, tests in test/integration/context_test.go, user docs in
# docs/context-publishing.md). One publisher source, one build per TLS
# access model; the relocation each build must carry is checked here after
# linking (x86_64) and again by the Go test, so that a toolchain that
# silently changes the model fails loudly.
#
# Included before Makefile.inc's first rule: keep `all` the default goal.
.DEFAULT_GOAL := all

CTXD := $(W)/context
CTX_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror
CTX_SO := -fPIC -shared -fvisibility=hidden
CTX_DEPS := $(CTXD)/otel_ctx.h $(W)/context.mk
CTX_WL_SRCS := $(CTXD)/workload.c $(CTXD)/proc_ctx.c
# Debian 12's clang 14 has no -mtls-dialect (clang 19 has): the TLSDESC and
# legacy general-dynamic builds need gcc, or CTX_TLSCC=clang-19.
CTX_TLSCC ?= gcc
CTX_ARCH := $(shell uname -m)
ifeq ($(CTX_ARCH),x86_64)
CTX_DESC := -mtls-dialect=gnu2
CTX_TRAD := -mtls-dialect=gnu
else
CTX_DESC := -mtls-dialect=desc
CTX_TRAD := -mtls-dialect=trad
endif

# ctx_check_reloc FILE, SYMBOL, relocations it must have, it must not have.
ifeq ($(CTX_ARCH),x86_64)
define ctx_check_reloc
	@r=$$(readelf -rW $(1) | grep -w '$(2)'); \
	for t in $(3); do echo "$$r" | grep -qw "$$t" || { rm -f $(1); \
	  echo "error: $(1): no $$t for $(2) (TLS model changed?):"; echo "$$r"; exit 1; }; done; \
	for t in $(4); do if echo "$$r" | grep -qw "$$t"; then rm -f $(1); \
	  echo "error: $(1): unexpected $$t for $(2):"; echo "$$r"; exit 1; fi; done
	@readelf -W --dyn-syms $(1) | grep -w '$(2)' | grep -qw TLS || { rm -f $(1); \
	  echo "error: $(1): $(2) is not a TLS symbol in .dynsym"; exit 1; }
endef
else
ctx_check_reloc = @true
endif
CTX_TLS_RELOCS := R_X86_64_TLSDESC R_X86_64_DTPMOD64 R_X86_64_DTPOFF64 R_X86_64_TPOFF64

EXTRA_WORKLOADS += $(OUT)/libotelctx_tlsdesc.so $(OUT)/libotelctx_gd.so \
	$(OUT)/libotelctx_ie.so $(OUT)/elastic-jvmti-linux-x64.so \
	$(OUT)/ctx_dlopen $(OUT)/ctx_linked_tlsdesc $(OUT)/ctx_linked_ie \
	$(OUT)/ctx_exe_le

# TLSDESC (the OTEP's recommended model): R_X86_64_TLSDESC.
$(OUT)/libotelctx_tlsdesc.so: $(CTXD)/publisher.c $(CTX_DEPS)
	$(CTX_TLSCC) $(CTX_CFLAGS) $(CTX_SO) -ftls-model=global-dynamic $(CTX_DESC) \
	  -DOTELCTX_VARIANT='"tlsdesc"' -Wl,-soname,libotelctx_tlsdesc.so -o $@ $<
	$(call ctx_check_reloc,$@,otel_thread_ctx_v1,R_X86_64_TLSDESC,R_X86_64_DTPMOD64 R_X86_64_DTPOFF64 R_X86_64_TPOFF64)

# Legacy general-dynamic (__tls_get_addr): R_X86_64_DTPMOD64 + DTPOFF64.
$(OUT)/libotelctx_gd.so: $(CTXD)/publisher.c $(CTX_DEPS)
	$(CTX_TLSCC) $(CTX_CFLAGS) $(CTX_SO) -ftls-model=global-dynamic $(CTX_TRAD) \
	  -DOTELCTX_VARIANT='"gd"' -Wl,-soname,libotelctx_gd.so -o $@ $<
	$(call ctx_check_reloc,$@,otel_thread_ctx_v1,R_X86_64_DTPMOD64 R_X86_64_DTPOFF64,R_X86_64_TLSDESC R_X86_64_TPOFF64)

# Initial-exec in a shared library: R_X86_64_TPOFF64 (static TLS).
$(OUT)/libotelctx_ie.so: $(CTXD)/publisher.c $(CTX_DEPS)
	$(WCC) $(CTX_CFLAGS) $(CTX_SO) -ftls-model=initial-exec \
	  -DOTELCTX_VARIANT='"ie"' -Wl,-soname,libotelctx_ie.so -o $@ $<
	$(call ctx_check_reloc,$@,otel_thread_ctx_v1,R_X86_64_TPOFF64,R_X86_64_TLSDESC R_X86_64_DTPMOD64 R_X86_64_DTPOFF64)

# Elastic v1: the file name is what the profiler matches; TLSDESC as the
# Elastic spec requires.
$(OUT)/elastic-jvmti-linux-x64.so: $(CTXD)/elastic_publisher.c $(CTX_DEPS)
	$(CTX_TLSCC) $(CTX_CFLAGS) $(CTX_SO) -ftls-model=global-dynamic $(CTX_DESC) \
	  -Wl,-soname,elastic-jvmti-linux-x64.so -o $@ $<
	$(call ctx_check_reloc,$@,elastic_apm_profiling_correlation_tls_v1,R_X86_64_TLSDESC,R_X86_64_DTPMOD64 R_X86_64_DTPOFF64 R_X86_64_TPOFF64)

# CtxJava's natives (System.load: a dlopen, so TLSDESC as the OTEP
# recommends) with both publishers.
EXTRA_WORKLOADS += $(OUT)/libotelctx_jni.so
$(OUT)/libotelctx_jni.so: $(CTXD)/jni_publisher.c $(CTXD)/publisher.c $(CTXD)/proc_ctx.c $(CTX_DEPS)
	$(CTX_TLSCC) $(CTX_CFLAGS) $(CTX_SO) -ftls-model=global-dynamic $(CTX_DESC) \
	  -DOTELCTX_VARIANT='"jni"' -Wl,-soname,libotelctx_jni.so -o $@ \
	  $(CTXD)/jni_publisher.c $(CTXD)/publisher.c $(CTXD)/proc_ctx.c
	$(call ctx_check_reloc,$@,otel_thread_ctx_v1,R_X86_64_TLSDESC,R_X86_64_DTPMOD64 R_X86_64_DTPOFF64 R_X86_64_TPOFF64)

# dlopen()s the library named on its command line (--lib / --elastic).
$(OUT)/ctx_dlopen: $(CTX_WL_SRCS) $(CTX_DEPS)
	$(WCC) $(CTX_CFLAGS) -pthread -o $@ $(CTX_WL_SRCS) -ldl

# Linked at start-up (DT_NEEDED, static TLS).
$(OUT)/ctx_linked_%: $(CTX_WL_SRCS) $(OUT)/libotelctx_%.so $(CTX_DEPS)
	$(WCC) $(CTX_CFLAGS) -DCTX_DIRECT -pthread -o $@ $(CTX_WL_SRCS) \
	  -L$(OUT) -l:libotelctx_$*.so -Wl,-rpath,'$$ORIGIN'

# The executable defines and exports otel_thread_ctx_v1 (local-exec): the
# symbol is in .dynsym, and no dynamic relocation refers to it.
$(OUT)/ctx_exe_le: $(CTX_WL_SRCS) $(CTXD)/publisher.c $(CTX_DEPS)
	$(WCC) $(CTX_CFLAGS) -DCTX_DIRECT -DOTELCTX_VARIANT='"le"' -fPIE -pie \
	  -ftls-model=local-exec -pthread -o $@ $(CTX_WL_SRCS) $(CTXD)/publisher.c \
	  -Wl,--export-dynamic-symbol=otel_thread_ctx_v1
	$(call ctx_check_reloc,$@,otel_thread_ctx_v1,,$(CTX_TLS_RELOCS) otel_thread_ctx_v1)
