# Java workloads (test/unit/test_hotspot_jvm.c, the HotSpot tests, make
# bench), included by Makefile.inc. Compiled for 17 so every JDK tested
# runs them.
JAVAC ?= $(shell command -v javac 2>/dev/null || echo /usr/lib/jvm/java-17-openjdk-amd64/bin/javac)
JAVA_OUT := $(OUT)/java/FibHash.class $(OUT)/java/Deep.class $(OUT)/java/Inline.class \
	$(OUT)/java/CtxJava.class
EXTRA_WORKLOADS += $(JAVA_OUT)

$(OUT)/java/%.class: $(W)/java/%.java $(W)/java.mk
	@mkdir -p $(dir $@)
	$(JAVAC) --release 17 -g -d $(dir $@) $<

# The Elastic APM Java agent (its universal profiling integration, since
# 1.50) and its public API, from Maven Central through Maven: the round
# trip test (TestJavaElasticAPM) runs the real agent.
MVN ?= mvn
APM_VERSION := 1.52.0
APM_DIR := $(OUT)/java/apm
APM_JARS := $(APM_DIR)/elastic-apm-agent-$(APM_VERSION).jar $(APM_DIR)/apm-agent-api-$(APM_VERSION).jar
EXTRA_WORKLOADS += $(APM_JARS) $(OUT)/java/ApmFibHash.class

$(APM_DIR)/%-$(APM_VERSION).jar: $(W)/java.mk
	@mkdir -p $(dir $@)
	$(MVN) -q -B dependency:copy -Dartifact=co.elastic.apm:$*:$(APM_VERSION) -DoutputDirectory=$(abspath $(dir $@))
	@test -s $@ && touch $@

$(OUT)/java/ApmFibHash.class: $(W)/java/ApmFibHash.java $(APM_DIR)/apm-agent-api-$(APM_VERSION).jar $(W)/java.mk
	@mkdir -p $(dir $@)
	$(JAVAC) --release 17 -g -cp $(APM_DIR)/apm-agent-api-$(APM_VERSION).jar -d $(dir $@) $<
