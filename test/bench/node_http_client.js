// The fixed client of the throughput benchmark (node_http.sh): GET / on
// CONNS keep-alive connections to 127.0.0.1:PORT, each sending its next
// request when the last is answered, for SECONDS; prints the count of
// requests answered.
'use strict';
const http = require('http');
const [port, seconds, conns] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: conns });
const end = Date.now() + seconds * 1000;
let done = 0, live = conns;

function one() {
	http.get({ host: '127.0.0.1', port, path: '/api', agent }, (res) => {
		res.resume();
		res.on('end', () => {
			done++;
			if (Date.now() < end) one();
			else if (--live === 0) { console.log(done); agent.destroy(); }
		});
	}).on('error', (e) => { console.error(e.message); process.exit(1); });
}
for (let c = 0; c < conns; c++) one();
