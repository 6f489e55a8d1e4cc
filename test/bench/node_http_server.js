// An HTTP API server for the throughput benchmark (node_http.sh): node's
// own http module on 127.0.0.1:PORT, each GET answered with a small JSON
// document built per request (the work of a typical handler).
'use strict';
const http = require('http');

function buildReply(url, n) {
	const items = [];
	for (let i = 0; i < 50; i++) items.push({ id: n * 50 + i, name: 'item-' + i, price: (i * 1.07).toFixed(2) });
	return JSON.stringify({ url, count: items.length, items });
}

let served = 0;
http.createServer((req, res) => {
	const body = buildReply(req.url, served++);
	res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
	res.end(body);
}).listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
