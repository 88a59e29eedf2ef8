// test/web's browser checks: the UI served by parca-server, in Debian's
// headless chromium driven by playwright-core.  The oracle is SQL (psql):
// what the page shows must equal what the query functions return.
//
// usage: node run.js URL ARTIFACTS_DIR URL_OF_AUTH_SERVER
// env: PARCA_WEB_STOP_DB, a command that stops the database (run last).
// Prints one line per check: "name<TAB>expected<TAB>actual" (run.sh counts
// them); screenshots of every step go to ARTIFACTS_DIR.
'use strict';
const { execFileSync, execSync } = require('child_process');
const path = require('path');
const { chromium } = require('playwright-core');

const [base, artifacts, authBase] = process.argv.slice(2);

function check(name, expected, actual) {
  const flat = (v) => String(typeof v === 'string' ? v : JSON.stringify(v)).replace(/[\t\n]/g, ' ');
  console.log(`${name}\t${flat(expected)}\t${flat(actual)}`);
}

function sql(query) {
  return execFileSync('psql', ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', query],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 }).trim();
}
const literal = (v) => "'" + String(v).replace(/'/g, "''") + "'";

// the icicle rows as one string, the same way for SQL and for the page
const rowsSql = (fn) => sql(`SELECT md5(string_agg(concat_ws(':', level, value, self, ${fn.includes('diff') ? '"valueRight", "selfRight", ' : ''}label), '|' ORDER BY n))
  FROM (SELECT i.*, row_number() OVER () n FROM ${fn} i) x`);
const rowsPage = (page) => page.evaluate(async () => {
  const ic = window.parcaIcicle;
  const cols = ic.valueRight ? ['level', 'value', 'self', 'valueRight', 'selfRight', 'label'] : ['level', 'value', 'self', 'label'];
  const text = ic.label.map((_, i) => cols.map((c) => ic[c][i]).join(':')).join('|');
  return { text, maxNodes: ic.max_nodes, total: ic.total, rows: ic.label.length };
});
const md5 = (s) => require('crypto').createHash('md5').update(s).digest('hex');

let shot = 0;
async function screenshot(page, name) {
  shot++;
  await page.screenshot({ path: path.join(artifacts, `${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
}

// polls fn(arg) in the page until it is true (page.waitForFunction would
// eval its predicate in the page, which the UI's CSP forbids, as it should)
async function until(page, fn, arg, timeout = 60000) {
  const deadline = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + String(fn).slice(0, 200));
    await new Promise((r) => setTimeout(r, 100));
  }
}

// waits until the flame graph drew a new icicle (after `before` draws)
async function flameDrawn(page, before = 0) {
  await until(page, (n) => (window.parcaDrawn || 0) > n, before);
}
const drawCount = (page) => page.evaluate(() => window.parcaDrawn || 0);

let openPages = [];
// the page's API requests, when sent and answered: printed when a check
// times out, to tell a click that was lost from a request that hung
const apiLog = [];
function logApi(page) {
  const t0 = Date.now();
  const at = () => ((Date.now() - t0) / 1000).toFixed(1) + ' s';
  page.on('request', (r) => { if (r.url().includes('/api/')) apiLog.push(`${at()} sent ${r.url().slice(base.length)}`); });
  page.on('response', (r) => { if (r.url().includes('/api/')) apiLog.push(`${at()} ${r.status()} ${r.url().slice(base.length)}`); });
  page.on('requestfailed', (r) => { if (r.url().includes('/api/')) apiLog.push(`${at()} failed ${r.url().slice(base.length)}`); });
}
async function main() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  openPages.push(page);
  logApi(page);
  const errors = [];
  const outside = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => { if (!r.url().startsWith(base)) outside.push(r.url()); });

  // ---- the newcomer's path: an empty page, a profile type, the flame graph
  await page.goto(base + '/');
  const typeSelect = page.getByLabel('profile type');
  await until(page, () => document.querySelectorAll('select[aria-label="profile type"] option').length > 1);
  await screenshot(page, 'empty-page');
  check('the profile type picker lists parca_profile_types()',
    sql('SELECT string_agg(t, \',\' ORDER BY t) FROM parca_profile_types() t'),
    (await typeSelect.locator('option').allTextContents()).slice(1).join(','));
  const large = 'large:samples:count:cpu:nanoseconds:delta';
  await typeSelect.selectOption(large);
  // the default range, the last hour, holds nothing of 2022's large.cpu
  await page.getByText('No profiles of').waitFor();
  await page.getByText('Nothing to draw').waitFor();
  await screenshot(page, 'empty-range');
  check('an empty range says so (metric graph and flame graph)', 'true true',
    `${await page.getByText('No profiles of').isVisible()} ${await page.getByText('Nothing to draw').isVisible()}`);
  let before = await drawCount(page);
  await page.getByRole('button', { name: 'Search all time' }).click();
  await flameDrawn(page, before);
  await page.locator('circle.point').first().waitFor();
  const hottest = sql(`SELECT function FROM parca_top(parca_query('${large}{}', '-infinity', 'infinity')) ORDER BY flat DESC LIMIT 1`);
  await page.getByPlaceholder('Search...').fill(hottest);
  await page.waitForTimeout(500);
  await screenshot(page, 'flame-graph-of-large-cpu');
  const flameText = await page.locator('.flame').innerText();
  const afterHeader = flameText.split('\n').map((l) => l.trim()).filter(Boolean);
  const firstSymbol = afterHeader[afterHeader.indexOf('Total') + 1];
  check('the top table\'s first function is parca_top\'s hottest', hottest, firstSymbol);
  let got = await rowsPage(page);
  check('the merged flame graph is parca_icicle(parca_query(...), max_nodes)',
    rowsSql(`parca_icicle(parca_query('${large}{}', to_timestamp(0), now()), ${got.maxNodes})`), md5(got.text));
  check('its total is the profile\'s', sql(`SELECT parca_profile_total(parca_query('${large}{}', '-infinity', 'infinity'))`),
    String(await page.locator('[data-total]').getAttribute('data-total')));
  check('large.cpu is trimmed to what the page draws, and says so', 'true true',
    `${got.rows <= got.maxNodes && got.maxNodes <= 100000} ${await page.getByText('heaviest nodes').isVisible()}`);

  // ---- selector completion: names, then values
  const input = page.locator('#selector-compared');
  await input.fill('');
  await input.pressSequentially('{');
  await page.getByRole('listbox', { name: 'label names' }).waitFor();
  check('completion offers the label names of the type (parca_labels)',
    sql(`SELECT string_agg(l, ',' ORDER BY l) FROM parca_labels('${large}{}') l`),
    (await page.getByRole('listbox').getByRole('option').allTextContents()).join(','));
  await input.press('Enter');
  await page.getByRole('listbox', { name: 'label values' }).waitFor();
  await screenshot(page, 'completion-of-values');
  check('completion offers the values of job (parca_label_values)',
    sql(`SELECT string_agg(v, ',' ORDER BY v) FROM parca_label_values('job', '${large}{}') v`),
    (await page.getByRole('listbox').getByRole('option').allTextContents()).join(','));
  await input.pressSequentially('lar');
  await input.press('Enter');
  check('a chosen value completes the selector', '{job="large"}', await input.inputValue());
  await page.getByRole('listbox').waitFor({ state: 'hidden' });
  before = await drawCount(page);
  await input.press('Enter');
  await until(page, () => location.search.includes('selector='));
  await page.locator('.legend li').first().waitFor();
  check('the selector finds its series', '{job="large"}', (await page.locator('.legend li').allTextContents()).join(','));

  // ---- a point of the metric graph opens exactly its profile
  const many = 'many:alloc_space:bytes:space:bytes';
  const [first, last] = sql(`SELECT (extract(epoch FROM min(time)) * 1000)::bigint || ' ' || (extract(epoch FROM max(time)) * 1000)::bigint
    FROM parca_profiles('${many}{}', '-infinity', 'infinity')`).split(' ').map(Number);
  before = await drawCount(page);
  await page.goto(`${base}/?type=${encodeURIComponent(many)}&from=${first - 1000}&to=${last + 1000}`);
  await flameDrawn(page, 0);
  const points = page.locator('circle.point');
  await points.nth(3).waitFor();
  const t = Number(await points.nth(3).getAttribute('data-time'));
  before = await drawCount(page);
  await points.nth(3).click();
  await page.locator('[data-profile-id]').waitFor();
  await flameDrawn(page, before);
  await screenshot(page, 'a-clicked-point');
  const id = await page.locator('[data-profile-id]').getAttribute('data-profile-id');
  check('the clicked point opens the profile stored at its time',
    sql(`SELECT profile_id FROM parca_profiles('${many}{}', to_timestamp(${t} / 1000.0), to_timestamp(${t + 999} / 1000.0))`), id);
  got = await rowsPage(page);
  check('its flame graph is parca_icicle(parca_profile(id))', rowsSql(`parca_icicle(parca_profile('${id}'), ${got.maxNodes})`), md5(got.text));

  // ---- compare mode: two points, their diff
  await page.getByLabel('compare').check();
  await page.locator('section[data-side="base"] circle.point').nth(9).waitFor();
  // each click changes its side's profile; then the diff of both is drawn
  const idOn = (side) => page.evaluate((sd) => {
    const e = document.querySelector(`section[data-side="${sd}"] [data-profile-id]`);
    return e ? e.getAttribute('data-profile-id') : '';
  }, side);
  const clickPoint = async (side, n) => {
    const old = await idOn(side);
    await page.locator(`section[data-side="${side}"] circle.point`).nth(n).click();
    await until(page, ([sd, o]) => {
      const e = document.querySelector(`section[data-side="${sd}"] [data-profile-id]`);
      return e && e.getAttribute('data-profile-id') !== o;
    }, [side, old]);
  };
  await clickPoint('base', 0);
  await clickPoint('compared', 9);
  const baseId = await idOn('base');
  const comparedId = await idOn('compared');
  await until(page, ([b, c]) => window.parcaIcicleParams && window.parcaIcicleParams.base_profile === b
    && window.parcaIcicleParams.profile === c, [baseId, comparedId]);
  await page.waitForTimeout(500);
  await screenshot(page, 'compare-mode');
  check('compare mode: the two clicked points\' profiles',
    sql(`SELECT string_agg(profile_id, ' ' ORDER BY time) FROM (SELECT * FROM parca_profiles('${many}{}', '-infinity', 'infinity') ORDER BY time LIMIT 1) a`)
    + ' ' + sql(`SELECT profile_id FROM parca_profiles('${many}{}', '-infinity', 'infinity') ORDER BY time DESC LIMIT 1`),
    `${baseId} ${comparedId}`);
  got = await rowsPage(page);
  check('compare mode draws parca_icicle_diff(parca_diff(base, compared))',
    rowsSql(`parca_icicle_diff(parca_diff(parca_profile('${baseId}'), parca_profile('${comparedId}')), ${got.maxNodes})`), md5(got.text));

  // ---- the URL reopens the same view
  const url = page.url();
  const again = await context.newPage();
  await again.goto(url);
  await flameDrawn(again, 0);
  await screenshot(again, 'the-url-reopened');
  const gotAgain = await rowsPage(again);
  check('the URL reopens the same view: the same two profiles', `${baseId} ${comparedId}`,
    (await again.locator('[data-profile-id]').evaluateAll((es) => es.map((e) => e.getAttribute('data-profile-id')))).join(' '));
  check('the URL reopens the same view: the same diff', md5(got.text), md5(gotAgain.text));
  await again.close();

  // ---- a label value with quotes, dots and slashes, chosen by completion; the light theme
  const fib = 'fib:samples:count:cpu:nanoseconds:delta';
  await page.goto(`${base}/?type=${encodeURIComponent(fib)}&from=0&theme=light`);
  await flameDrawn(page, 0);
  const fibInput = page.locator('#selector-compared');
  await fibInput.fill('');
  await fibInput.pressSequentially('{job="v1.2');
  await page.getByRole('listbox', { name: 'label values' }).waitFor();
  await fibInput.press('Enter');
  const quoted = await fibInput.inputValue();
  await page.getByRole('listbox').waitFor({ state: 'hidden' });
  await fibInput.press('Enter');
  await until(page, (sel) => window.parcaIcicleParams && window.parcaIcicleParams.selector === sel, fib + quoted);
  await page.waitForTimeout(500);
  await screenshot(page, 'quoted-label-value-light-theme');
  check('a value with quotes, dots and slashes is quoted as a selector string', '{job="v1.2/it\'s \\"quoted\\""}', quoted);
  check('and selects exactly its series',
    sql(`SELECT parca_profile_total(parca_query(${literal(fib + quoted)}, '-infinity', 'infinity'))`),
    String(await page.locator('[data-total]').getAttribute('data-total')));

  // ---- a user sees what its role may read (row-level security: alice, job "team" only)
  if (authBase) {
    const alice = await browser.newContext({ viewport: { width: 1400, height: 1000 }, httpCredentials: { username: 'alice', password: 's3cret' } });
    const ap = await alice.newPage();
    await ap.goto(`${authBase}/?type=${encodeURIComponent(fib)}&from=0`);
    await flameDrawn(ap, 0).catch(async (e) => { await screenshot(ap, 'alice-failed'); throw e; });
    await screenshot(ap, 'alice-sees-her-series-only');
    check('alice\'s metric graph shows her series only', '{job="team"}', (await ap.locator('.legend li').allTextContents()).join(','));
    check('alice\'s profile types are those of her series', sql('SELECT string_agg(DISTINCT profile_type, \',\' ORDER BY profile_type) FROM parca.series WHERE labels->>\'job\' = \'team\''),
      (await ap.locator('select[aria-label="profile type"] option').allTextContents()).slice(1).join(','));
    await alice.close();
    const nobody = await browser.newContext();
    const resp = await nobody.request.get(`${authBase}/api/profile-types`);
    check('without credentials the API answers 401', 401, resp.status());
    await nobody.close();
  }

  check('no request left the server (no CDN)', '', outside.join(' '));
  check('no page error', '', errors.join(' | '));

  // ---- the database down: a clear message, not a blank page
  if (process.env.PARCA_WEB_STOP_DB) {
    execSync(process.env.PARCA_WEB_STOP_DB);
    await page.goto(`${base}/?type=${encodeURIComponent(fib)}&from=0`);
    await page.getByRole('alert').first().waitFor();
    await screenshot(page, 'database-down');
    const alert = await page.getByRole('alert').first().innerText();
    check('the database down: the page says so', true, /cannot answer/.test(alert) && /not reachable/.test(alert));
  }
  await browser.close();
}

main().catch(async (e) => {
  console.error(e.stack || String(e));
  console.error('the last API requests:\n' + apiLog.slice(-12).map((l) => '  ' + l.slice(0, 300)).join('\n'));
  for (const p of openPages) await screenshot(p, 'failure').catch(() => {});
  process.exit(1);
});
