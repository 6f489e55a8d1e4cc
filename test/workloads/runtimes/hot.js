// Two hot JavaScript functions in a 70:30 split of work. Measures its own
// CPU time in each (its main thread's, or the process's before Node 22) and prints, once a second,
// {"a": seconds in hot_a, "b": seconds in hot_b} as JSON lines.
'use strict';
function hot_a(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.1);
	// Never runs (n >= 0): bytecode enough (about 1 KiB) that V8 does
	// not inline this function into its caller (TurboFan's limit is 460
	// bytes), so its samples keep a frame of their own on every Node.
	if (n < 0)
		s += n * 1 + n * 2 + n * 3 + n * 4 + n * 5 + n * 6 + n * 7 + n * 8 + n * 9 + n * 10 + n * 11 + n * 12 +
		     n * 13 + n * 14 + n * 15 + n * 16 + n * 17 + n * 18 + n * 19 + n * 20 + n * 21 + n * 22 + n * 23 + n * 24 +
		     n * 25 + n * 26 + n * 27 + n * 28 + n * 29 + n * 30 + n * 31 + n * 32 + n * 33 + n * 34 + n * 35 + n * 36 +
		     n * 37 + n * 38 + n * 39 + n * 40 + n * 41 + n * 42 + n * 43 + n * 44 + n * 45 + n * 46 + n * 47 + n * 48 +
		     n * 49 + n * 50 + n * 51 + n * 52 + n * 53 + n * 54 + n * 55 + n * 56 + n * 57 + n * 58 + n * 59 + n * 60 +
		     n * 61 + n * 62 + n * 63 + n * 64 + n * 65 + n * 66 + n * 67 + n * 68 + n * 69 + n * 70 + n * 71 + n * 72 +
		     n * 73 + n * 74 + n * 75 + n * 76 + n * 77 + n * 78 + n * 79 + n * 80 + n * 81 + n * 82 + n * 83 + n * 84 +
		     n * 85 + n * 86 + n * 87 + n * 88 + n * 89 + n * 90 + n * 91 + n * 92 + n * 93 + n * 94 + n * 95 + n * 96 +
		     n * 97 + n * 98 + n * 99 + n * 100 + n * 101 + n * 102 + n * 103 + n * 104 + n * 105 + n * 106 + n * 107 + n * 108 +
		     n * 109 + n * 110 + n * 111 + n * 112 + n * 113 + n * 114 + n * 115 + n * 116 + n * 117 + n * 118 + n * 119 + n * 120;
	return s;
}
function hot_b(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s += Math.sqrt(i * 1.3);
	// Never runs (n >= 0): bytecode enough (about 1 KiB) that V8 does
	// not inline this function into its caller (TurboFan's limit is 460
	// bytes), so its samples keep a frame of their own on every Node.
	if (n < 0)
		s += n * 201 + n * 202 + n * 203 + n * 204 + n * 205 + n * 206 + n * 207 + n * 208 + n * 209 + n * 210 + n * 211 + n * 212 +
		     n * 213 + n * 214 + n * 215 + n * 216 + n * 217 + n * 218 + n * 219 + n * 220 + n * 221 + n * 222 + n * 223 + n * 224 +
		     n * 225 + n * 226 + n * 227 + n * 228 + n * 229 + n * 230 + n * 231 + n * 232 + n * 233 + n * 234 + n * 235 + n * 236 +
		     n * 237 + n * 238 + n * 239 + n * 240 + n * 241 + n * 242 + n * 243 + n * 244 + n * 245 + n * 246 + n * 247 + n * 248 +
		     n * 249 + n * 250 + n * 251 + n * 252 + n * 253 + n * 254 + n * 255 + n * 256 + n * 257 + n * 258 + n * 259 + n * 260 +
		     n * 261 + n * 262 + n * 263 + n * 264 + n * 265 + n * 266 + n * 267 + n * 268 + n * 269 + n * 270 + n * 271 + n * 272 +
		     n * 273 + n * 274 + n * 275 + n * 276 + n * 277 + n * 278 + n * 279 + n * 280 + n * 281 + n * 282 + n * 283 + n * 284 +
		     n * 285 + n * 286 + n * 287 + n * 288 + n * 289 + n * 290 + n * 291 + n * 292 + n * 293 + n * 294 + n * 295 + n * 296 +
		     n * 297 + n * 298 + n * 299 + n * 300 + n * 301 + n * 302 + n * 303 + n * 304 + n * 305 + n * 306 + n * 307 + n * 308 +
		     n * 309 + n * 310 + n * 311 + n * 312 + n * 313 + n * 314 + n * 315 + n * 316 + n * 317 + n * 318 + n * 319 + n * 320;
	return s;
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
