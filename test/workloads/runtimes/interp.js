// A JavaScript function that runs in V8's interpreter (Ignition) for its
// whole activation, without flags: interpreted() is called once and has
// no loop. V8 moves a function to Sparkplug, Maglev or TurboFan code only
// from its interrupt budget, spent and checked at a loop's back edge and
// at a return, and moves a running frame only by on-stack replacement at
// a loop's back edge: neither happens in interpreted() before it returns,
// so its one frame stays in Ignition. It calls spin() (which loops, and
// is replaced on its stack by optimized code) at one line, the frame's
// line while spin() runs; statements before and after it are calls too,
// on other lines. Prints, once a second, {"a": seconds in spin, "b": 0}
// (its main thread's CPU, or the process's before Node 22) as JSON lines.
'use strict';
// Its main thread's CPU time (the process's before Node 22). The
// process's is read first: getrusage(RUSAGE_THREAD) reports the runtime
// the scheduler last accounted, at its tick (4 ms at HZ=250), which would
// make each short round's reading 0 or a whole tick; RUSAGE_SELF brings
// the calling thread's runtime up to date.
const cpu = () => { const p = process.cpuUsage(); const u = process.threadCpuUsage ? process.threadCpuUsage() : p; return (u.user + u.system) / 1e6; };
function spin(seconds) {
	const t0 = cpu();
	let s = 0, next = Date.now() + 1000;
	for (let now = t0; now - t0 < seconds; now = cpu()) {
		for (let i = 0; i < 100000; i++) s += Math.sqrt(i * 1.1);
		if (Date.now() >= next) {
			console.log(JSON.stringify({a: now - t0, b: 0}));
			next += 1000;
		}
	}
	return s;
}
function interpreted(seconds) {
	const before = cpu();
	const s = spin(seconds); // the hot line
	const after = cpu();
	console.log(JSON.stringify({a: after - before, b: 0, s: s > 0}));
}
interpreted(Number(process.argv[2] || 10));
