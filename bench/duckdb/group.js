// bench/merge.sh's peer: DuckDB grouping the rows of a CSV file
// (stack_id bigint, value bigint, period bigint) by the precomputed stack
// id, summing value x period as parca_query does.  It loads the rows and
// prints how many groups they make; then it answers each line "THREADS
// RUNS" on its input with the times in ms of RUNS runs, after one to warm
// up, with SET threads = THREADS: so its runs take turns with
// parca_query's, and both meet the machine in the same state.
//
// usage: node group.js ROWS.csv
const { DuckDBInstance } = require('@duckdb/node-api');
const readline = require('readline');

const query = 'SELECT count(*), sum(s) FROM (SELECT stack_id, sum(value * period) AS s FROM samples GROUP BY stack_id)';

async function main() {
	const [csv] = process.argv.slice(2);
	const instance = await DuckDBInstance.create(':memory:');
	const con = await instance.connect();
	await con.run(`CREATE TABLE samples AS SELECT * FROM read_csv('${csv.replace(/'/g, "''")}',
		header = false, columns = {'stack_id': 'BIGINT', 'value': 'BIGINT', 'period': 'BIGINT'})`);
	const groups = (await con.runAndReadAll(query)).getRows()[0][0];
	console.log(`${groups}`);
	for await (const line of readline.createInterface({ input: process.stdin })) {
		const [threads, runs] = line.trim().split(/\s+/).map(Number);
		if (!(threads >= 1 && runs >= 1))
			throw new Error(`expected "THREADS RUNS", got "${line}"`);
		await con.run(`SET threads = ${threads}`);
		const times = [];
		for (let i = 0; i <= runs; i++) {
			const t0 = process.hrtime.bigint();
			await con.runAndReadAll(query);
			const t1 = process.hrtime.bigint();
			if (i > 0)
				times.push((Number(t1 - t0) / 1e6).toFixed(3));
		}
		console.log(times.join(' '));
	}
}

main().catch((e) => { console.error(e); process.exit(1); });
