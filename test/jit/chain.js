// A known chain of JavaScript functions burning CPU for the given CPU
// seconds: main -> handleRequest -> parse -> hotLoop.  Run with
// --perf-basic-prof (V8 writes /tmp/perf-PID.map) and --no-turbo-inlining
// (TurboFan would otherwise compile the small callers into one function:
// the chain is the program's, the test checks the agent names it).
'use strict';

function hotLoop(n) {
	let total = 0;
	for (let i = 0; i < n; i++)
		total = (total + i * i) % 1000003;
	return total;
}

function parse(n) {
	return hotLoop(n) + 1;
}

function handleRequest(n) {
	return parse(n) * 2;
}

function main(seconds) {
	let sum = 0;
	while (process.cpuUsage().user < seconds * 1e6)
		sum += handleRequest(2000000);
	console.log(process.pid, sum);
}

main(Number(process.argv[2] || 5));
