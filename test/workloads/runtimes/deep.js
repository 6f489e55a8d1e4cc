// A JavaScript stack DEPTH frames deep, busy at its leaf, for SECONDS
// (benchmark of the V8 walk).   deep.js SECONDS DEPTH
'use strict';
function down(n, end) {
	if (n > 1) return down(n - 1, end) + 1;
	let s = 0;
	while (Date.now() < end)
		for (let i = 0; i < 100000; i++) s += Math.sqrt(i);
	return s > 0 ? 1 : 0;
}
console.log(down(Number(process.argv[3] || 50), Date.now() + Number(process.argv[2] || 10) * 1000));
