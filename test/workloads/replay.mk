# Workloads for the stack replay test (test/integration/
# unwind_replay_test.go), included by Makefile.inc (OUT, W, WCC, NOFP come
# from there): a call to a noreturn function as its caller's last
# instruction, whose return address is past the end of the caller; a
# signal handler that never returns (every stack crosses a signal frame).
EXTRA_WORKLOADS += $(OUT)/noreturn_call $(OUT)/signal_spin

$(OUT)/noreturn_call: $(W)/noreturn_call.c $(W)/replay.mk
	$(WCC) $(NOFP) -o $@ $<
$(OUT)/signal_spin: $(W)/signal_spin.c $(W)/replay.mk
	$(WCC) $(NOFP) -o $@ $<
