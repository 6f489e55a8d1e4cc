# Sourced by the bench scripts: the CPU a process has used.
# cpu_ns PID: CPU time of every thread of PID, ns, into CPU_NS (schedstat:
# exact, unlike the tick-sampled utime/stime). Builtins only: a measuring
# loop that forks and execs would itself be work for the profiler.
cpu_ns() {
	local f a b s=0
	for f in /proc/"$1"/task/*/schedstat; do
		read -r a b < "$f" 2>/dev/null || continue
		s=$((s + a))
	done
	CPU_NS=$s
}
