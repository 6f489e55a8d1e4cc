// Functions V8 names in other ways than by a declaration: a function
// expression assigned to a const, to a property, an arrow function, a
// class method, and one with no name at all. Each spins in its own loop;
// V8's own CPU profiler (node --cpu-prof) names them as the profiler must.
'use strict';
const assigned = function (n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.1);
	return s;
};
const obj = {};
obj.method = function (n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.2);
	return s;
};
const arrow = (n) => {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.3);
	return s;
};
class Klass {
	work(n) {
		let s = 0;
		for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.4);
		return s;
	}
}
const k = new Klass();
const nameless = [0].map(() => function (n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.5);
	return s;
})[0];
const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let x = 0;
while (Date.now() < end) {
	const n = 20000 * (0.75 + Math.random() / 2);
	x += assigned(n) + obj.method(n) + arrow(n) + k.work(n) + nameless(n);
}
console.log(JSON.stringify({x: x > 0}));
