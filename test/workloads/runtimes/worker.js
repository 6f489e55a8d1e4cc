// worker_threads: the main thread runs mainHot and a worker thread
// workerHot, each for ever (the test ends the process). Each spins
// inside its own function (its loop there: nothing to inline it into),
// so each thread's samples must name its own function and never the
// other's.
'use strict';
const { Worker, isMainThread } = require('worker_threads');

function mainHot() {
	let s = 0;
	for (let i = 0; ; i++) {
		s += Math.sqrt(i * 1.1);
		if (s < 0) return s;
	}
}

function workerHot() {
	let s = 0;
	for (let i = 0; ; i++) {
		s += Math.sqrt(i * 1.3);
		if (s < 0) return s;
	}
}

if (isMainThread) {
	new Worker(__filename);
	mainHot();
} else {
	workerHot();
}
