# Bash completion for otelprof: `source cli/completion/otelprof.bash`, or
# copy it to /usr/share/bash-completion/completions/otelprof.
# Subcommands, each one's options (as `otelprof CMD -h` lists them),
# --format values, pids for -p, files otherwise.
_otelprof() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[1]} opts=""

	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "record report top convert version help" -- "$cur"))
		return
	fi
	case "$cmd" in
	record) opts="-o --output -d --duration -F --frequency -p --pid -a --all-cpus --report --btf --ringbuf-kb --symbol-budget-mb --file-budget-mb --debuginfod --probabilistic-threshold --probabilistic-interval --env-vars --off-cpu-threshold --apm-agents --quiet -h --help" ;;
	report) opts="-o --output --diff -p --pid -t --title --watts-per-core --pue --co2-kg-per-kwh --cost-per-core-hour --max-nodes --max-groups --quiet -h --help" ;;
	top) opts="-n --limit -p --pid -h --help" ;;
	convert) opts="-f --format -o --output -p --pid -h --help" ;;
	help)
		COMPREPLY=($(compgen -W "record report top convert version" -- "$cur"))
		return
		;;
	esac
	case "$prev" in
	-f | --format)
		COMPREPLY=($(compgen -W "pprof folded otlp-json" -- "$cur"))
		return
		;;
	-p | --pid)
		COMPREPLY=($(compgen -W "$(cd /proc && ls -d [0-9]* 2>/dev/null)" -- "$cur"))
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _otelprof otelprof
