// Two hot JavaScript functions in a 70:30 split of work. Measures its own
// CPU time in each (process.cpuUsage) and prints, once a second,
// {"a": seconds in hot_a, "b": seconds in hot_b} as JSON lines.
'use strict';
function hot_a(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.1);
	return s;
}
function hot_b(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.3);
	return s;
}
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let a = 0, b = 0, x = 0, next = Date.now() + 1000;
while (Date.now() < end) {
	let t = cpu();
	x += hot_a(700000);
	const m = cpu();
	a += m - t;
	x += hot_b(300000);
	b += cpu() - m;
	if (Date.now() >= next) {
		console.log(JSON.stringify({a, b}));
		next += 1000;
	}
}
console.log(JSON.stringify({a, b, x: x > 0}));
