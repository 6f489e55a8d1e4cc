// Small JavaScript functions TurboFan inlines into their caller: the
// script's top level (optimized on stack replacement) inlines mid_a and
// mid_b, and they leaf_a and leaf_b (each well under TurboFan's 460-byte
// inlining limit; `node --trace-turbo-inlining` says so on Node 18-26).
// The leaves' time is 70:30. Measures its own CPU time in each (its main
// thread's, or the process's before Node 22) and prints, once a second,
// {"a": seconds in mid_a, "b": seconds in mid_b} as JSON lines.
'use strict';
function leaf_a(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.1);
	return s;
}
function leaf_b(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.3);
	return s;
}
function mid_a(n) {
	return leaf_a(n) + 1;
}
function mid_b(n) {
	return leaf_b(n) + 1;
}
// Its main thread's CPU time (the process's before Node 22). The
// process's is read first: getrusage(RUSAGE_THREAD) reports the runtime
// the scheduler last accounted, at its tick (4 ms at HZ=250), which would
// make each short round's reading 0 or a whole tick; RUSAGE_SELF brings
// the calling thread's runtime up to date.
const cpu = () => { const p = process.cpuUsage(); const u = process.threadCpuUsage ? process.threadCpuUsage() : p; return (u.user + u.system) / 1e6; };
const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let a = 0, b = 0, x = 0, next = Date.now() + 1000;
while (Date.now() < end) {
	// rounds of varying length (0.75-1.25x, still 70:30): rounds of one
	// length alias with a fixed sampling rate
	const k = 0.75 + Math.random() / 2;
	let t = cpu();
	x += mid_a(70000 * k);
	const m = cpu();
	a += m - t;
	x += mid_b(30000 * k);
	b += cpu() - m;
	if (Date.now() >= next) {
		console.log(JSON.stringify({a, b}));
		next += 1000;
	}
}
console.log(JSON.stringify({a, b, x: x > 0}));
