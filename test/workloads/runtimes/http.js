// An HTTP server (node's own http module) on 127.0.0.1:PORT for SECONDS:
// GET /a runs handleA, GET /b handleB (about 70:30 of the work per
// request pair). Measures its own CPU time in each (process.cpuUsage)
// and prints, once a second, {"a": seconds in handleA, "b": seconds in
// handleB} as JSON lines. The load comes from the test. The handlers'
// bodies are long so that V8 does not inline them into node's own
// request path (it inlines functions under ~460 bytes of bytecode).
'use strict';
const http = require('http');
const port = Number(process.argv[2]);
const seconds = Number(process.argv[3] || 10);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
let a = 0, b = 0, x = 0;

function handleA(req, res) {
	const t = cpu();
	let s = 0;
	for (let i = 0; i < 70000; i++) {
		s += Math.sqrt(i * 1.1) + Math.sqrt(i * 1.2) + Math.sqrt(i * 1.3);
		s -= Math.sqrt(i * 1.4) - Math.sqrt(i * 1.5) + Math.sqrt(i * 1.6);
		s += (i & 7) === 3 ? Math.sqrt(i * 1.7) : Math.sqrt(i * 1.8);
		s -= (i & 15) === 5 ? Math.sqrt(i * 1.9) : Math.sqrt(i * 2.1);
		s += (i & 31) === 9 ? Math.sqrt(i * 2.2) : Math.sqrt(i * 2.3);
		s -= (i & 63) === 17 ? Math.sqrt(i * 2.4) : Math.sqrt(i * 2.5);
	}
	x += s;
	res.end(s > 0 ? 'a' : 'A');
	a += cpu() - t;
}

function handleB(req, res) {
	const t = cpu();
	let s = 0;
	for (let i = 0; i < 30000; i++) {
		s += Math.sqrt(i * 3.1) + Math.sqrt(i * 3.2) + Math.sqrt(i * 3.3);
		s -= Math.sqrt(i * 3.4) - Math.sqrt(i * 3.5) + Math.sqrt(i * 3.6);
		s += (i & 7) === 3 ? Math.sqrt(i * 3.7) : Math.sqrt(i * 3.8);
		s -= (i & 15) === 5 ? Math.sqrt(i * 3.9) : Math.sqrt(i * 4.1);
		s += (i & 31) === 9 ? Math.sqrt(i * 4.2) : Math.sqrt(i * 4.3);
		s -= (i & 63) === 17 ? Math.sqrt(i * 4.4) : Math.sqrt(i * 4.5);
	}
	x += s;
	res.end(s > 0 ? 'b' : 'B');
	b += cpu() - t;
}

const server = http.createServer((req, res) => {
	if (req.url === '/a') handleA(req, res);
	else if (req.url === '/b') handleB(req, res);
	else res.end('?');
});
server.keepAliveTimeout = 60000;
server.listen(port, '127.0.0.1');
setInterval(() => console.log(JSON.stringify({a, b})), 1000);
setTimeout(() => process.exit(0), seconds * 1000);
