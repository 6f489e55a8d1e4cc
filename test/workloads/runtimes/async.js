// Work run from Node's event loop: timer callbacks (setTimeout, through
// libuv's uv__run_timers) and async functions resumed by promises (the
// microtask queue, drained after each callback). Measures its own CPU
// time in each (process.cpuUsage) and prints, once a second,
// {"a": seconds in onTimer, "b": seconds in promiseStep} as JSON lines.
// The two bodies are long on purpose: V8 inlines a function of fewer
// than ~460 bytes of bytecode into an optimized caller (node's own timer
// list, the async loop), and its frame would then carry the caller's name.
'use strict';
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let a = 0, b = 0, x = 0, next = Date.now() + 1000;

function report(last) {
	if (last || Date.now() >= next) {
		console.log(JSON.stringify({a, b}));
		next += 1000;
	}
}

function onTimer() {
	const t = cpu();
	let s = 0;
	for (let i = 0; i < 120000; i++) {
		s += Math.sqrt(i * 1.1) + Math.sqrt(i * 1.2) + Math.sqrt(i * 1.3);
		s -= Math.sqrt(i * 1.4) - Math.sqrt(i * 1.5) + Math.sqrt(i * 1.6);
		s += (i & 7) === 3 ? Math.sqrt(i * 1.7) : Math.sqrt(i * 1.8);
		s -= (i & 15) === 5 ? Math.sqrt(i * 1.9) : Math.sqrt(i * 2.1);
		s += (i & 31) === 9 ? Math.sqrt(i * 2.2) : Math.sqrt(i * 2.3);
		s -= (i & 63) === 17 ? Math.sqrt(i * 2.4) : Math.sqrt(i * 2.5);
	}
	x += s;
	a += cpu() - t;
	report(false);
	if (Date.now() < end) setTimeout(onTimer, 0);
}

async function promiseStep(k) {
	await null; // resumed from the microtask queue
	const t = cpu();
	let s = 0;
	for (let i = 0; i < 50000 + (k & 1); i++) {
		s += Math.sqrt(i * 3.1) + Math.sqrt(i * 3.2) + Math.sqrt(i * 3.3);
		s -= Math.sqrt(i * 3.4) - Math.sqrt(i * 3.5) + Math.sqrt(i * 3.6);
		s += (i & 7) === 3 ? Math.sqrt(i * 3.7) : Math.sqrt(i * 3.8);
		s -= (i & 15) === 5 ? Math.sqrt(i * 3.9) : Math.sqrt(i * 4.1);
		s += (i & 31) === 9 ? Math.sqrt(i * 4.2) : Math.sqrt(i * 4.3);
		s -= (i & 63) === 17 ? Math.sqrt(i * 4.4) : Math.sqrt(i * 4.5);
	}
	x += s;
	b += cpu() - t;
	return s;
}

// A chain of promises: each step's continuation schedules the next from
// a timer, so the microtasks run inside libuv's loop.
function promiseLoop(k) {
	promiseStep(k).then(() => {
		if (Date.now() < end) setImmediate(promiseLoop, k + 1);
		else report(true);
	});
}

setTimeout(onTimer, 0);
promiseLoop(0);
