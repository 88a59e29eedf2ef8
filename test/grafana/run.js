// test/grafana's checks, driven from node: the dashboard's SQL as Grafana
// interpolates it (interpolate.js in headless Chromium), run against the
// cluster of run.sh, then the flame graph panel drawn by @grafana/flamegraph
// (flamegraph.jsx) from what two of those queries return.
//
// usage: node run.js BUNDLE_DIR WORK_DIR DASHBOARD.json FIXTURES_DIR
// (FIXTURES_DIR: copies of testdata/pprof the server may read).  Prints one
// line per check: "name<TAB>expected<TAB>actual" (run.sh counts them).
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { run, sleep } = require('../lib/chromium.js');

const [bundles, work, dashboardFile, fixtures] = process.argv.slice(2).map((p) => path.resolve(p));
const dashboard = JSON.parse(fs.readFileSync(dashboardFile, 'utf8'));
let cases;

function check(name, expected, actual) {
  const flat = (v) => String(typeof v === 'string' ? v : JSON.stringify(v)).replace(/[\t\n]/g, ' ');
  console.log(`${name}\t${flat(expected)}\t${flat(actual)}`);
}

// psql, as the tests run it; rows as JSON, or {error}
function sql(query) {
  try {
    const out = execFileSync('psql', ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-c',
      `SELECT coalesce(json_agg(t), '[]') FROM (${query}) AS t`], { encoding: 'utf8', stdio: 'pipe', maxBuffer: 1 << 28 });
    return { rows: JSON.parse(out) };
  } catch (e) {
    return { error: String(e.stderr || e.message).split('\n')[0] };
  }
}

// The backend's macros, as Grafana's PostgreSQL datasource expands them
// (pkg/tsdb/grafana-postgresql-datasource/macros.go): $__timeFrom() and
// $__timeTo() become RFC 3339 UTC literals.
function expandMacros(text, range) {
  const literal = (ms) => `'${new Date(ms).toISOString().replace('.000Z', 'Z')}'`;
  return text.replace(/\$([_a-zA-Z0-9]+)\(([^)]*)\)/g, (match, name) => {
    if (name === '__timeFrom') return literal(range.from);
    if (name === '__timeTo') return literal(range.to);
    throw new Error('unexpected macro ' + match);
  });
}

function page(file, script, bundle) {
  const html = path.join(work, file);
  fs.writeFileSync(html, '<!doctype html><html><head><meta charset="utf-8"></head><body>'
    + '<div id="root"></div><script>' + script + '</script><script>'
    + fs.readFileSync(path.join(bundles, bundle), 'utf8') + '</script></body></html>');
  return 'file://' + html;
}

// a statement, for its effect
function exec(statement) {
  execFileSync('psql', ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', statement], { encoding: 'utf8', stdio: 'pipe' });
}

const literal = (v) => "'" + String(v).replace(/'/g, "''") + "'";
const one = (query) => {
  const r = sql(query);
  if (r.error) throw new Error(r.error + ': ' + query);
  return r.rows[0] && Object.values(r.rows[0])[0];
};

// ---- the data, and what each dashboard state must show
// Label values that regexes, selectors, SQL and JSON quote: the values of
// one CPU profile stored six times; large.cpu for the flame graph; two heap
// profiles an hour apart for the diff.
function setup() {
  const cpu = 'dash:samples:count:cpu:nanoseconds:delta';
  const heap = 'dash:alloc_space:bytes:space:bytes';
  const files = ['fib.pb.gz', 'fibXpbXgz', '/usr/lib/libc.so.6', "it's", 'say "hi"', 'C:\\temp\\x'];
  const ingest = (file, label) => one(`SELECT parca_ingest_pprof(pg_read_binary_file(${literal(path.join(fixtures, file))}),
    'dash', jsonb_build_object('job', 'dash', 'file', ${literal(label)}))`);
  for (const f of files) ingest('parca/fib.pb.gz', f);
  ingest('google-pprof/large.cpu', 'large.cpu');
  const many = fs.readdirSync(path.join(fixtures, 'parca/many')).sort();
  ingest('parca/many/' + many[0], 'many-early');
  ingest('parca/many/' + many[many.length - 1], 'many-late');
  // the late heap profile again, an hour after the early one, labelled as it
  exec(`INSERT INTO parca.series (profile_type, labels)
        SELECT profile_type, labels || '{"file": "many"}' FROM parca.series WHERE labels->>'file' = 'many-early'`);
  exec(`WITH early AS (SELECT min(x.time) AS t FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
                       WHERE s.labels->>'file' = 'many-early')
        INSERT INTO parca.samples
        SELECT early.t + interval '1 hour', n.id, x.stack, x.value, x.period, x.duration, x.num_labels
        FROM early, parca.samples x JOIN parca.series s ON s.id = x.series_id
        JOIN parca.series n ON n.profile_type = s.profile_type AND n.labels->>'file' = 'many'
        WHERE s.labels->>'file' = 'many-late'`);
  exec(`WITH early AS (SELECT min(x.time) AS t FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
                      WHERE s.labels->>'file' = 'many-early')
       INSERT INTO parca.samples
       SELECT x.time, n.id, x.stack, x.value, x.period, x.duration, x.num_labels
       FROM early, parca.samples x JOIN parca.series s ON s.id = x.series_id
       JOIN parca.series n ON n.profile_type = s.profile_type AND n.labels->>'file' = 'many'
       WHERE s.labels->>'file' = 'many-early'`);

  // PostgreSQL backends' profiles as parca-agent labels them (docs/postgres.md),
  // under a profile type of their own: two statements, one stored twice
  const pgIngest = (label, queryId) => one(`SELECT parca_ingest_pprof(pg_read_binary_file(${literal(path.join(fixtures, 'parca/fib.pb.gz'))}),
    'pgdash', jsonb_build_object('job', 'pgdash', 'file', ${literal(label)}, 'pg_query_id', ${literal(queryId)},
                                 'pg_database', 'shop', 'pg_user', 'o''brien'))`);
  pgIngest('pg-a', '-4242');
  pgIngest('pg-b', '-4242');
  pgIngest('pg-c', '77');

  // the fixtures' old times put their rows in the default partition: moved
  // now, not by the maintenance worker while the panels' functions read them
  // (a function's statement whose snapshot predates the move misses them,
  // docs/columnar.md)
  exec('SELECT * FROM parca_maintain_partitions()');

  const rangeOf = (label, shift = '0') => {
    const r = sql(`SELECT (extract(epoch FROM min(x.time) + interval '${shift}') * 1000)::bigint - 5000 AS from,
                          (extract(epoch FROM max(x.time) + interval '${shift}') * 1000)::bigint + 5000 AS to
                   FROM parca.samples x JOIN parca.series s ON s.id = x.series_id WHERE s.labels->>'file' = ${literal(label)}`);
    return { from: Number(r.rows[0].from), to: Number(r.rows[0].to) };
  };
  const fibRange = rangeOf('fib.pb.gz');
  // straight from the samples table: samples:count in the period unit when
  // known; per second of profiled time for :delta types, as the time series
  // panel shows them
  const selected = (type, labels, range) => `FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
    WHERE s.profile_type = ${literal(type)} AND s.labels->>'file' = ANY (ARRAY[${labels.map(literal).join(',')}]::text[])
      AND x.time BETWEEN to_timestamp(${range.from / 1000}) AND to_timestamp(${range.to / 1000})`;
  const scaled = (type) => (type.includes(':samples:count:') ? 'x.value * CASE WHEN x.period > 0 THEN x.period ELSE 1 END' : 'x.value');
  const total = (type, labels, range) => Number(one(`SELECT coalesce(sum(${scaled(type)}), 0) ${selected(type, labels, range)}`));
  const rate = (type, labels, range) => (type.endsWith(':delta') ? Number(one(`
    SELECT sum(v / (d / 1e9)) FROM (
      SELECT sum(v) AS v, sum(d) AS d FROM (
        SELECT x.series_id, x.time, sum(${scaled(type)}) AS v, max(x.duration) AS d ${selected(type, labels, range)}
        GROUP BY 1, 2) per_profile GROUP BY series_id) per_series`)) : total(type, labels, range));
  const offered = (type, range) => sql(`SELECT DISTINCT s.labels->>'file' AS v FROM parca.samples x
    JOIN parca.series s ON s.id = x.series_id WHERE s.profile_type = ${literal(type)}
      AND x.time BETWEEN to_timestamp(${range.from / 1000}) AND to_timestamp(${range.to / 1000}) ORDER BY 1`)
    .rows.map((r) => r.v).sort();
  const base = { profile_type: cpu, label: 'file', matchers: '', compare_offset: '1h', max_nodes: '2000',
    function: '', profile: '', filters: '[]', node_trim_threshold: '0', pg_query_id: '' };
  // the profiles in the selection: (series, time) pairs
  const profiles = (type, labels, range) => Number(one(`SELECT count(DISTINCT (x.series_id, x.time)) ${selected(type, labels, range)}`));
  const state = (name, values, range, expect) => ({ name, values: { ...base, ...values }, range,
    options: { value: files }, expect });
  const selection = (labels) => ({ total: total(cpu, labels, fibRange), rate: rate(cpu, labels, fibRange),
    profiles: profiles(cpu, labels, fibRange),
    unit: 'ns', values: offered(cpu, fibRange), functions: 'all' });
  const states = files.filter((f) => f !== 'fibXpbXgz').map((f, i) =>
    state(['dot', 'slash', 'quote', 'double quote', 'backslash'][i], { value: [f] }, fibRange, selection([f])));
  const several = files.filter((f) => f !== 'fibXpbXgz');
  states.push(state('multi-value, a quote in the matchers', { value: several, matchers: 'file!="it\'s not", job="dash"' },
    fibRange, selection(several)));
  states.push(state('All', { value: ['$__all'] }, fibRange, selection(files)));
  // a range without samples: the variables' queries find nothing (scenes
  // then sets "" and All), or keep what was chosen before
  const nothing = { from: Date.UTC(2001, 0, 1), to: Date.UTC(2001, 0, 2) };
  states.push(state('empty range', { profile_type: '', label: '', value: ['$__all'] }, nothing, { empty: true }));
  states.push(state('empty range, values kept', { value: ['fib.pb.gz'] }, nothing, { empty: true }));
  // the PostgreSQL statements ranked, and the flame graph of one chosen
  const pgType = 'pgdash:samples:count:cpu:nanoseconds:delta';
  const pgFiles = ['pg-a', 'pg-b', 'pg-c'];
  const pgStatements = sql(`SELECT (s.labels->>'pg_query_id')::bigint AS query_id, sum(x.value)::bigint AS samples
    ${selected(pgType, pgFiles, fibRange)}
    GROUP BY 1 ORDER BY 2 DESC, 1`).rows;
  states.push({ name: 'postgres statements',
    values: { ...base, profile_type: pgType, value: pgFiles, pg_query_id: '-4242' }, range: fibRange,
    options: { value: pgFiles },
    expect: { total: total(pgType, pgFiles, fibRange), rate: rate(pgType, pgFiles, fibRange),
      profiles: profiles(pgType, pgFiles, fibRange), unit: 'ns', values: offered(pgType, fibRange), functions: 'all',
      statements: pgStatements, statement: total(pgType, ['pg-a', 'pg-b'], fibRange) } });
  // a query id that is not a number draws nothing (it goes into a selector)
  states.push({ name: 'postgres statement not a number',
    values: { ...base, profile_type: pgType, value: pgFiles, pg_query_id: '1"} or {x="' }, range: fibRange,
    options: { value: pgFiles },
    expect: { total: total(pgType, pgFiles, fibRange), rate: rate(pgType, pgFiles, fibRange),
      profiles: profiles(pgType, pgFiles, fibRange), unit: 'ns', values: offered(pgType, fibRange), functions: 'all',
      statements: pgStatements, statement: null } });
  const largeRange = rangeOf('large.cpu');
  // one profile of large.cpu opened alone, and the sandwich and time series of main.next
  const largeProfile = one(`SELECT profile_id FROM parca_profiles(parca_selector(${literal(cpu)}, 'file', ARRAY['large.cpu']),
                                                                   '-infinity', 'infinity')`);
  states.push(state('large.cpu', { value: ['large.cpu'], function: 'main.next', profile: largeProfile }, largeRange,
    { total: total(cpu, ['large.cpu'], largeRange), rate: rate(cpu, ['large.cpu'], largeRange), unit: 'ns',
      profiles: profiles(cpu, ['large.cpu'], largeRange), single: total(cpu, ['large.cpu'], largeRange),
      values: offered(cpu, largeRange), functions: 'the first 200' }));
  // stack filters (a quote in a value) and a node trim threshold: the flame
  // graph holds what the filters keep, the filters' table says how much that is
  const largeFilters = '[{"field": "function", "match": "not_equal", "value": "time.Now"}, '
    + '{"field": "file", "match": "not_contains", "value": "it\'s"}]';
  const filtered = Number(one(`SELECT kept FROM parca_filter_totals(
    parca_query(parca_selector(${literal(cpu)}, 'file', ARRAY['large.cpu']), to_timestamp(${largeRange.from / 1000}),
                to_timestamp(${largeRange.to / 1000})), ${literal(largeFilters)})`));
  states.push(state('large.cpu filtered', { value: ['large.cpu'], filters: largeFilters, node_trim_threshold: '1' },
    largeRange, { total: total(cpu, ['large.cpu'], largeRange), rate: rate(cpu, ['large.cpu'], largeRange), unit: 'ns',
      profiles: profiles(cpu, ['large.cpu'], largeRange), root: filtered, values: offered(cpu, largeRange),
      functions: 'the first 200' }));
  const manyRange = rangeOf('many-early', '1 hour');
  const manySel = `parca_selector(${literal(heap)}, 'file', ARRAY['many'])`;
  const at = (r) => `to_timestamp(${r.from / 1000}), to_timestamp(${r.to / 1000})`;
  const earlier = { from: manyRange.from - 3600000, to: manyRange.to - 3600000 };
  // the diff untrimmed (max_nodes 0), so that every function's total is whole:
  // trimming keeps self values exact, and the diff table compares totals
  states.push(state('heap diff', { profile_type: heap, value: ['many'], max_nodes: '0' }, manyRange,
    { total: total(heap, ['many'], manyRange), rate: total(heap, ['many'], manyRange), unit: 'bytes',
      profiles: profiles(heap, ['many'], manyRange),
      values: offered(heap, manyRange), compared: total(heap, ['many'], manyRange), functions: 'the first 200' }));
  // large.cpu's and the heap diff's options differ from the others'
  states[states.length - 2].options = { value: files.concat('large.cpu') };
  states[states.length - 3].options = { value: files.concat('large.cpu') };
  states[states.length - 1].options = { value: ['many', 'many-early', 'many-late'] };

  const top = (profile) => {
    const r = sql(`SELECT function, flat, cum FROM parca_top(${profile})`);
    if (r.error) throw new Error(r.error);
    return r.rows;
  };
  const largeQuery = `parca_query(parca_selector(${literal(cpu)}, 'file', ARRAY['large.cpu']), ${at(largeRange)})`;
  return {
    states,
    plain: { state: 'large.cpu', total: Number(one(`SELECT parca_profile_total(${largeQuery})`)), top: top(largeQuery) },
    sandwich: { state: 'large.cpu', function: 'main.next',
      top: top(largeQuery).find((t) => t.function === 'main.next') },
    diff: {
      state: 'heap diff',
      base_top: top(`parca_query(${manySel}, ${at(earlier)})`),
      base_total_unscaled: Number(one(`SELECT parca_profile_total(parca_query(${manySel}, ${at(earlier)}))`)),
      base_total: Number(one(`SELECT parca_profile_total(parca_diff(parca_query(${manySel}, ${at(earlier)}),
                                                                  parca_query(${manySel}, ${at(manyRange)})))`)),
      compared_top: top(`parca_query(${manySel}, ${at(manyRange)})`),
      compared_total: Number(one(`SELECT parca_profile_total(parca_query(${manySel}, ${at(manyRange)}))`)),
    },
  };
}

// ---- the dashboard's queries after Grafana's interpolation
async function dashboardQueries(browser) {
  const states = cases.states.map((s) => ({ name: s.name, values: s.values, options: s.options || {} }));
  const p = await browser.open(page('interpolate.html',
    `window.PARCA_DASHBOARD = ${JSON.stringify(dashboard)}; window.PARCA_STATES = ${JSON.stringify(states)};`,
    'interpolate.js'));
  await p.waitFor('window.PARCA_SQL || window.PARCA_ERROR');
  const error = await p.evaluate('window.PARCA_ERROR || ""');
  if (error) throw new Error('interpolation: ' + error);
  const interpolated = await p.evaluate('window.PARCA_SQL');
  const results = {};
  for (const q of interpolated) {
    const state = cases.states.find((s) => s.name === q.state);
    const r = sql(expandMacros(q.sql, state.range));
    results[`${q.state} ${q.target}`] = r;
    check(`${q.state}: ${q.target} runs`, 'no error', r.error || 'no error');
  }
  for (const state of cases.states) {
    const rows = (target) => results[`${state.name} ${target}`].rows || [];
    const e = state.expect;
    if (e.empty) {
      for (const target of ['panel 1 A', 'panel 2 A', 'panel 3 A', 'panel 4 A', 'panel 5 A', 'panel 6 A',
        'panel 7 A', 'panel 8 A', 'panel 9 A', 'panel 10 A', 'panel 11 A', 'panel 12 A', 'panel 12 B',
        'panel 13 A', 'panel 14 A']) {
        check(`${state.name}: ${target} is empty`, 0, rows(target).length);
      }
      continue;
    }
    // what the selection holds, summed straight from the samples table
    // the rate is a double: compare to a millionth
    const series = rows('panel 1 A').reduce((s, r) => s + r.value, 0);
    check(`${state.name}: time series (per second for :delta)`, true, Math.abs(series - e.rate) <= 1e-6 * e.rate);
    check(`${state.name}: flame graph root`, e.root ?? e.total, rows('panel 2 A')[0]?.value);
    const f = rows('panel 11 A')[0] || {};
    check(`${state.name}: the filters' table`, `${e.total} ${e.root ?? e.total} ${e.total - (e.root ?? e.total)}`,
      `${f.total} ${f.kept} ${f.filtered_out}`);
    const flat = rows('panel 3 A').reduce((s, r) => s + r.flat, 0);
    check(`${state.name}: top functions' flat adds up (${e.functions})`, true,
      e.functions === 'all' ? flat === e.total : flat > 0 && flat <= e.total);
    check(`${state.name}: unit`, e.unit, rows('panel 2 unit')[0]?.unit);
    check(`${state.name}: the label values offered`, e.values,
      rows('variable value').map((r) => r.parca_label_values).sort());
    // the call graph: nodes, and edges between them only; no cum above the total
    const ids = new Set(rows('panel 12 A').map((n) => n.id));
    check(`${state.name}: call graph has nodes`, true, ids.size > 0);
    check(`${state.name}: call graph edges join its nodes`, true,
      rows('panel 12 B').every((e) => ids.has(e.source) && ids.has(e.target)));
    check(`${state.name}: call graph cum within the total`, true,
      rows('panel 12 A').every((n) => n.secondarystat <= (e.root ?? e.total) && n.mainstat <= n.secondarystat));
    // the profiles table: each profile once, their totals add up to the merge
    check(`${state.name}: profiles listed`, e.profiles, rows('panel 6 A').length);
    check(`${state.name}: profiles' totals add up`, e.total, rows('panel 6 A').reduce((s, r) => s + r.total, 0));
    // the PostgreSQL statements: ranked by samples, the chosen one's flame graph
    check(`${state.name}: PostgreSQL statements ranked`,
      (e.statements || []).map((t) => `${t.query_id}:${t.samples}`).join(' '),
      rows('panel 13 A').map((t) => `${t.query_id}:${t.samples}`).join(' '));
    if (e.statements) {
      check(`${state.name}: statements' database and user`, 'shop o\'brien',
        `${rows('panel 13 A')[0]?.database} ${rows('panel 13 A')[0]?.user_name}`);
    }
    check(`${state.name}: the chosen statement's flame graph root`, e.statement ?? null,
      rows('panel 14 A')[0]?.value ?? null);
    if (e.single !== undefined) {
      check(`${state.name}: one profile opened alone`, e.single, rows('panel 7 A')[0]?.value);
    } else {
      check(`${state.name}: no profile chosen, nothing drawn`, 0, rows('panel 7 A').length);
    }
    if (state.values.function) {
      const fn = cases.sandwich.top;
      const series = (kind) => rows('panel 8 A').filter((r) => r.metric === `${fn.function} ${kind}`)
        .reduce((s, r) => s + r.value, 0);
      check(`${state.name}: ${fn.function} over time, flat`, fn.flat, series('flat'));
      check(`${state.name}: ${fn.function} over time, cum`, fn.cum, series('cum'));
      check(`${state.name}: sandwich callers root`, `${fn.function} ${fn.cum}`,
        `${rows('panel 9 A')[0]?.label} ${rows('panel 9 A')[0]?.value}`);
      check(`${state.name}: sandwich callees root`, `${fn.function} ${fn.cum}`,
        `${rows('panel 10 A')[0]?.label} ${rows('panel 10 A')[0]?.value}`);
    } else {
      for (const target of ['panel 8 A', 'panel 9 A', 'panel 10 A']) {
        check(`${state.name}: no function chosen, ${target} is empty`, 0, rows(target).length);
      }
    }
    if (e.compared !== undefined) {
      check(`${state.name}: diff root, compared side`, e.compared, rows('panel 4 A')[0]?.valueRight);
    }
  }
  return results;
}

// ---- the flame graph panel, drawn from what a dashboard panel's queries
// returned in a state: its frame (refId A) and its unit (refId unit)
async function drawPanel(browser, name, results, state, panel) {
  const rows = results[`${state} panel ${panel} A`].rows;
  const unit = results[`${state} panel ${panel} unit`].rows[0].unit;
  const p = await browser.open(page(`panel-${name}.html`,
    `window.PARCA_FRAME = ${JSON.stringify({ rows, unit })};`, 'flamegraph.js'));
  await p.waitFor('window.PARCA_READY || window.PARCA_ERROR');
  const error = await p.evaluate('window.PARCA_ERROR || ""');
  if (error) throw new Error(`${name} panel: ${error}`);
  await sleep(300);
  return { p, transform: await p.evaluate('window.PARCA_TRANSFORM') };
}

// the top table's rows as the panel shows them: header, then the visible rows
const readTable = `(function () {
  var t = document.querySelector('[data-testid="topTable"]');
  return Array.prototype.map.call(t.querySelectorAll('[role="row"]'), function (r) {
    return Array.prototype.map.call(r.querySelectorAll('[role="cell"],[role="columnheader"]'),
      function (c) { return c.innerText.trim(); }).slice(1);
  });
})()`;

// hovers the root frame (top left of the canvas); returns the tooltip's text
async function rootTooltip(p) {
  const c = await p.evaluate(`(function () { var r = document.querySelector('canvas')
    .getBoundingClientRect(); return { x: r.x, y: r.y }; })()`);
  await p.move(c.x + 20, c.y + 8);
  return p.waitFor(`(function () { var t = document.body.innerText; var i = t.lastIndexOf('\\ntotal\\n');
    return i >= 0 && /Total:|% of total/.test(t.slice(i)) ? t.slice(i + 1) : ''; })()`, 10000);
}

async function plainPanel(browser, results) {
  const c = cases.plain;
  const { p, transform } = await drawPanel(browser, 'plain', results, c.state, 2);
  check('plain: the frame has no diff columns', 'level,value,self,label', transform.fields.join(','));
  check('plain: the data transform does not make it a diff', false, transform.isDiff);
  check('plain: its root is the total', c.total, transform.rootValue);
  check('plain: the unit is time', 'Time', transform.unitTitle);
  const table = await p.evaluate(readTable);
  check('plain: the top table has no diff columns', 'Symbol,Self,Total', table[0].join(','));
  // rows by Self, as parca_top ranks them by flat; the hottest first
  const shown = table.slice(1).filter((r) => r[0] !== '[trimmed]');
  check('plain: the top table starts with parca_top\'s hottest function', c.top[0].function, shown[0]?.[0]);
  for (const [symbol, self] of shown) {
    const t = c.top.find((x) => x.function === symbol);
    const expected = t ? await p.evaluate(`window.parcaDisplay(${t.flat})`) : '(not in parca_top)';
    check(`plain: top table self of ${symbol}`, expected, self);
  }
  const tooltip = await rootTooltip(p);
  check('plain: the root tooltip gives the total', `Total: ${await p.evaluate(`window.parcaDisplay(${c.total})`)} (100%)`,
    (tooltip.match(/Total: [^\n]*/) || [''])[0]);
  check('plain: the root tooltip counts the samples', `Samples: ${c.total.toLocaleString('en-US')}`,
    (tooltip.match(/Samples: [^\n]*/) || [''])[0]);
  check('plain: no NaN anywhere', false, /NaN/.test(await p.evaluate('document.body.innerText')));
}

async function diffPanel(browser, results) {
  const c = cases.diff;
  const { p, transform } = await drawPanel(browser, 'diff', results, c.state, 4);
  check('diff: the data transform makes it a diff', true, transform.isDiff);
  // the panel adds valueRight to value: value must be the base side alone
  check('diff: the panel\'s root is base + compared', c.base_total + c.compared_total, transform.rootValue);
  check('diff: the panel\'s root right side is the compared total', c.compared_total, transform.rootValueRight);
  const table = await p.evaluate(readTable);
  check('diff: the top table compares', 'Symbol,Baseline,Comparison,Diff', table[0].join(','));
  // each side's share of a function is its cum over that side's total,
  // from parca_top of each side alone; the panel rounds to 0.01 %, and the
  // relative diff rounds each scaled base stack to an integer (far below
  // that), so they agree to the panel's last digit, give or take one step
  // (a function one side does not have has 0 there)
  const share = (list, fn, total) => {
    const t = list.find((x) => x.function === fn);
    return t ? Math.round(10000 * t.cum / total) / 100 : 0;
  };
  for (const [symbol, baseline, comparison, diff] of table.slice(1)) {
    if (symbol === 'total' || symbol === '[trimmed]') continue;
    const b = share(c.base_top, symbol, c.base_total_unscaled);
    const k = share(c.compared_top, symbol, c.compared_total);
    // the panel shows three significant digits or so: within half its last one
    const near = (shown, share) => {
      const decimals = (shown.split('.')[1] || '').replace(/[^0-9]/g, '').length;
      return Math.abs(parseFloat(shown) - share) <= 0.5 * 10 ** -decimals + 0.011 ? shown : `${share}%`;
    };
    check(`diff: baseline share of ${symbol}`, baseline, near(baseline, b));
    check(`diff: comparison share of ${symbol}`, comparison, near(comparison, k));
    check(`diff: diff of ${symbol} is a number`, false, /NaN/.test(diff));
  }
  // the tooltip's table: a line per row, its label then baseline, comparison and diff
  const tooltip = (await rootTooltip(p)).split('\n');
  const row = (label) => (tooltip.find((l) => l.startsWith(label)) || tooltip.join(' / '))
    .split('\t').map((c) => c.trim()).join(' | ');
  check('diff: the root tooltip shares', '% of total | 100% | 100% | 0%', row('% of total'));
  const shown = (v) => p.evaluate(`window.parcaDisplay(${v})`);
  check('diff: the root tooltip values', `Value | ${await shown(c.base_total)} | ${await shown(c.compared_total)} | `
    + `${await shown(c.compared_total - c.base_total)}`, row('Value'));
  check('diff: no NaN anywhere', false, /NaN/.test(await p.evaluate('document.body.innerText')));
}

// the sandwich panels: plain flame graphs rooted at the function, which
// weighs its cum on both sides
async function sandwichPanels(browser, results) {
  const c = cases.sandwich;
  for (const [side, panel] of [['callers', 9], ['callees', 10]]) {
    const { p, transform } = await drawPanel(browser, side, results, c.state, panel);
    check(`sandwich ${side}: the frame has no diff columns`, 'level,value,self,label', transform.fields.join(','));
    check(`sandwich ${side}: not a diff`, false, transform.isDiff);
    check(`sandwich ${side}: the root is ${c.function} with its cum`, c.top.cum, transform.rootValue);
    check(`sandwich ${side}: no NaN anywhere`, false, /NaN/.test(await p.evaluate('document.body.innerText')));
  }
}

run(async (browser) => {
  cases = setup();
  const results = await dashboardQueries(browser);
  await plainPanel(browser, results);
  await diffPanel(browser, results);
  await sandwichPanels(browser, results);
}, 240000);
