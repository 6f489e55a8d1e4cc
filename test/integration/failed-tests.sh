#!/bin/sh
# The end of each failed test's own output in a `go test -v` log,
# printed after the run: a CI log that keeps only its tail still shows
# why each test failed, not only which. Usage: failed-tests.sh LOG [LINES]
# (LINES of each, 15 by default).
log=${1:?usage: failed-tests.sh LOG [LINES]}
awk -v n="${2:-15}" '
{ line[NR] = $0 }
/^=== RUN / { start[$3] = NR }
/^ *--- FAIL: / { failed[++nf] = $3 }
END {
	for (k = 1; k <= nf; k++) {
		from = start[failed[k]]
		if (!from) continue
		# its own lines: up to its first subtest or its result
		to = from
		while (to < NR && line[to + 1] !~ /^=== RUN |^ *--- (PASS|FAIL|SKIP): /)
			to++
		if (to == from) continue
		print "==== " failed[k] " failed; the end of its output:"
		for (i = (to - n > from ? to - n : from + 1); i <= to; i++)
			print substr(line[i], 1, 400)
	}
}' "$log"
