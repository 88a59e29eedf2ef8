// bench/web.sh's measurement: the web UI drawing large.cpu's flame graph in
// headless chromium.  For each of RUNS page loads: the page opened on the
// merged profile (navigation start to the flame graph on screen), the
// icicle request (sent to answered, parca_icicle in the server included),
// and the drawing (answer received to the flame graph on screen: the data
// frame, Grafana's layout and the canvas).  Best and median of RUNS.
//
// usage: node web.js URL RUNS   (URL: the page of the view to draw)
'use strict';
const { chromium } = require('playwright-core');

const [url, runs] = [process.argv[2], Number(process.argv[3] || 5)];

async function main() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const rows = [];
  for (let i = 0; i < runs; i++) {
    const page = await context.newPage();
    await page.goto(url);
    const deadline = Date.now() + 120000;
    while (!(await page.evaluate(() => window.parcaDrawn > 0)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    rows.push(await page.evaluate(() => {
      const ic = performance.getEntriesByType('resource').filter((e) => /\/api\/(icicle|diff)\?/.test(e.name)).pop();
      return {
        page: window.parcaDrawnAt,
        request: ic.responseEnd - ic.requestStart,
        draw: window.parcaDrawnAt - ic.responseEnd,
        clickToDrawn: window.parcaDrawnAt - ic.startTime,
        nodes: window.parcaIcicle.label.length,
        bytes: ic.encodedBodySize,
      };
    }));
    await page.close();
  }
  await browser.close();
  const stat = (k) => {
    const v = rows.map((r) => r[k]).sort((a, b) => a - b);
    return `${v[0].toFixed(0)} ms best, ${v[Math.floor(v.length / 2)].toFixed(0)} ms median`;
  };
  console.log(`nodes drawn: ${rows[0].nodes} (${(rows[0].bytes / 1024).toFixed(0)} kB of JSON)`);
  console.log(`page opened to flame graph on screen: ${stat('page')}`);
  console.log(`icicle request (parca_icicle in the server included): ${stat('request')}`);
  console.log(`answer received to flame graph on screen: ${stat('draw')}`);
  console.log(`request sent to flame graph on screen: ${stat('clickToDrawn')}`);
}
main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
