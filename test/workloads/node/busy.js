// SPDX-License-Identifier: Apache-2.0
// A CPU-bound Node program: JIT-compiled JavaScript calling through V8
// builtins (Array.prototype.sort, String, Math, JSON) for SECONDS.
'use strict';
const seconds = Number(process.argv[2] || 5);

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function sortWork() {
  const a = [];
  for (let i = 0; i < 2000; i++) a.push((i * 7919) % 1009);
  a.sort((x, y) => x - y);
  return a[17];
}

function stringWork() {
  let s = '';
  for (let i = 0; i < 200; i++) s += String.fromCharCode(65 + (i % 26));
  return JSON.parse(JSON.stringify({ s })).s.length + Math.floor(Math.sqrt(s.length));
}

const end = Date.now() + seconds * 1000;
let sink = 0, rounds = 0;
while (Date.now() < end) {
  sink += fib(20) + sortWork() + stringWork();
  rounds++;
}
console.log(`rounds ${rounds} sink ${sink}`);
