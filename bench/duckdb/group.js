// bench/merge.sh's peer: DuckDB grouping the rows of a CSV file
// (stack_id bigint, value bigint, period bigint) by the precomputed stack
// id, summing value x period as parca_query does, with 1 and then 2
// threads.  Prints "threads median_ms best_ms groups" per thread count.
//
// usage: node group.js ROWS.csv RUNS
const { DuckDBInstance } = require('@duckdb/node-api');

async function main() {
	const [csv, runsArg] = process.argv.slice(2);
	const runs = Number(runsArg || 7);
	const instance = await DuckDBInstance.create(':memory:');
	const con = await instance.connect();
	await con.run(`CREATE TABLE samples AS SELECT * FROM read_csv('${csv.replace(/'/g, "''")}',
		header = false, columns = {'stack_id': 'BIGINT', 'value': 'BIGINT', 'period': 'BIGINT'})`);
	const query = 'SELECT count(*), sum(s) FROM (SELECT stack_id, sum(value * period) AS s FROM samples GROUP BY stack_id)';
	for (const threads of [1, 2]) {
		await con.run(`SET threads = ${threads}`);
		let groups = 0;
		const times = [];
		// the first run warms up, as parca_query's first does
		for (let i = 0; i <= runs; i++) {
			const t0 = process.hrtime.bigint();
			const reader = await con.runAndReadAll(query);
			const t1 = process.hrtime.bigint();
			groups = reader.getRows()[0][0];
			if (i > 0)
				times.push(Number(t1 - t0) / 1e6);
		}
		times.sort((a, b) => a - b);
		console.log(`${threads} ${times[Math.floor(times.length / 2)].toFixed(1)} ${times[0].toFixed(1)} ${groups}`);
	}
}

main().catch((e) => { console.error(e); process.exit(1); });
