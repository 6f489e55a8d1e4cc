# Java workloads (test/unit/test_hotspot_jvm.c, the HotSpot tests),
# included by Makefile.inc. Compiled for 17 so every JDK tested runs them.
JAVAC ?= $(shell command -v javac 2>/dev/null || echo /usr/lib/jvm/java-17-openjdk-amd64/bin/javac)
JAVA_OUT := $(OUT)/java/FibHash.class
EXTRA_WORKLOADS += $(JAVA_OUT)

$(OUT)/java/FibHash.class: $(W)/java/FibHash.java $(W)/java.mk
	@mkdir -p $(dir $@)
	$(JAVAC) --release 17 -g -d $(dir $@) $<
