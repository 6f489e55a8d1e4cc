# Hostile-input and churn workloads (test/integration/hostile_test.go),
# included by Makefile.inc (OUT, W, WCC, NOFP come from there).
#
# libhot.so runs a hot call chain without frame pointers; elfcorrupt turns
# copies of it into libraries whose section headers, CFI, symbol tables and
# notes are corrupt but which still load (libhot-MODE.so); dlrun dlopens
# one and runs it. storm/storm_* are the exec storm; pidreuse/reuse_* make
# the kernel give one pid to several processes in a row.
.DEFAULT_GOAL := all
H := $(OUT)/hostile
HW := $(W)/hostile

# One corrupted copy per mode (see elfcorrupt.c); "all" stacks them.
HOSTILE_MODES := healthy shdr-garbage shdr-zero shdr-offset shdr-xnum truncate \
  ehframe-garbage ehframe-hostile ehframehdr-garbage symtab-garbage symtab-wild \
  dynsym-shdr notes-garbage notes-wild all
HMODES_healthy := copy
HMODES_all := symtab-wild,ehframe-hostile,ehframehdr-garbage,notes-wild,dynsym-shdr,shdr-garbage

HOSTILE_OUT := $(H)/libhot.so $(H)/dlrun $(H)/elfcorrupt \
  $(patsubst %,$(H)/libhot-%.so,$(HOSTILE_MODES)) \
  $(H)/storm $(H)/storm_a $(H)/storm_b $(H)/storm_s $(H)/libstorm.so \
  $(H)/pidreuse $(H)/reuse_a $(H)/reuse_b $(H)/elfbomb $(H)/mapspin $(H)/evictspin \
  $(H)/rowhog $(H)/node_forged
EXTRA_WORKLOADS += $(HOSTILE_OUT)

$(H):
	mkdir -p $@
$(H)/libhot.so: $(HW)/libhot.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -shared -fPIC -fvisibility=hidden -o $@ $<
$(H)/dlrun: $(HW)/dlrun.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -o $@ $< -ldl
$(H)/elfcorrupt: $(HW)/elfcorrupt.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -Wall -Wextra -Werror -o $@ $<
$(H)/libhot-%.so: $(H)/libhot.so $(H)/elfcorrupt
	$(H)/elfcorrupt $(or $(HMODES_$*),$*) $< $@

$(H)/storm: $(HW)/storm.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -o $@ $<
$(H)/storm_a: $(HW)/storm_child.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -DSTORM_NAME=a -o $@ $<
$(H)/storm_b: $(HW)/storm_child.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -DSTORM_NAME=b -DSTORM_DLOPEN -o $@ $< -ldl
$(H)/storm_s: $(HW)/storm_child.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -DSTORM_NAME=s -static -o $@ $<
$(H)/libstorm.so: $(HW)/libstorm.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -shared -fPIC -o $@ $<

$(H)/pidreuse: $(HW)/pidreuse.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -o $@ $<
$(H)/reuse_%: $(HW)/reuse_child.c $(W)/hostile.mk | $(H)
	$(WCC) $(NOFP) -DREUSE_NAME=$* -o $@ $<

# Memory bombs (elfbomb: written by the test into a temporary directory,
# they are sparse) and a process that maps them executable (mapspin).
$(H)/elfbomb: $(HW)/elfbomb.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -Wall -Wextra -Werror -o $@ $< -llzma
$(H)/mapspin: $(HW)/mapspin.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -Wall -Wextra -Werror -o $@ $<
$(H)/evictspin: $(HW)/evictspin.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -Wall -Wextra -Werror -o $@ $<

# One process asking for more kernel unwind rows than the host has
# (TestUnwindRowsFairShare).
$(H)/rowhog: $(HW)/rowhog.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -Wall -Wextra -Werror -o $@ $<

# A process that passes for V8 and lies (TestNodeForgedV8): named node*,
# v8dbg_* constants in .dynsym (-rdynamic), frame pointers kept.
$(H)/node_forged: $(HW)/v8forged.c $(W)/hostile.mk | $(H)
	$(WCC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -rdynamic -pthread -o $@ $<
