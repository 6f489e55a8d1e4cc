# Sourced by the bench scripts: the CPU (and BPF maps) a process has used.
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

# fd_stats PID: "bpf_run_time_ns map_memlock_bytes" of the BPF programs
# and maps on PID's own fds (run time needs kernel.bpf_stats_enabled=1);
# each counted once, however many fds refer to it.
fd_stats() {
	{ cat /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk '
		/^pos:/ { prog = ""; map = "" }
		/^prog_id:/ { prog = $2; if (seenp[prog]++) prog = "" }
		/^map_id:/ { map = $2; if (seenm[map]++) map = "" }
		/^run_time_ns:/ && prog != "" { t += $2 }
		/^memlock:/ { last = $2 }
		/^map_id:/ && map != "" { m += last }
		END { print t + 0, m + 0 }'
}
