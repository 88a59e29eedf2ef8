// A Node.js program with known hot functions, profiled by @pyroscope/nodejs
// and pushed to parca-server (test/push/run.sh): hotMultiply takes about
// two thirds of the time, hotHash one third, keepBuffers allocates what the
// heap profile shows.  Usage: node nodeapp.js URL TOKEN SECONDS
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const [url, token, seconds] = process.argv.slice(2);
Pyroscope.init({
	serverAddress: url,
	appName: 'nodeapp',
	authToken: token,
	tags: { env: 'test' },
	flushIntervalMs: 3000,
	heap: { samplingIntervalBytes: 16 * 1024 },
});
Pyroscope.start();

let acc = 1;
function hotMultiply(ms) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		for (let i = 0; i < 10000; i++) acc = (acc * 1103515245 + 12345) % 2147483648;
	}
}

function hotHash(ms) {
	const end = Date.now() + ms;
	let h = 0;
	while (Date.now() < end) {
		for (let i = 0; i < 10000; i++) h = (h * 31 + i) | 0;
	}
	acc ^= h;
}

const kept = [];
function keepBuffers() {
	for (let i = 0; i < 20; i++) kept.push(new Array(512).fill(acc));
	if (kept.length > 20000) kept.splice(0, 10000);
}

async function main() {
	const end = Date.now() + Number(seconds) * 1000;
	while (Date.now() < end) {
		hotMultiply(40);
		hotHash(20);
		keepBuffers();
		// the profiler's timers run between slices
		await new Promise((resolve) => setImmediate(resolve));
	}
	await Pyroscope.stop();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
