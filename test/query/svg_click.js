// Opens a flame graph SVG in headless Chromium, clicks a frame and checks
// that the view zoomed to it; then searches and checks the match line.
//
// usage: node svg_click.js FILE.svg [SEARCH]    prints one JSON line of findings
'use strict';
const path = require('path');
const { run, sleep } = require('../lib/chromium.js');

const svg = path.resolve(process.argv[2]);

run(async (browser) => {
  const page = await browser.open('file://' + svg);

  // A frame near the top (so that it is in the window) that is neither
  // full width nor too narrow to hit.
  const target = await page.evaluate(`(function () {
    var gs = document.querySelectorAll('#frames g.f');
    for (var i = 0; i < gs.length; i++) {
      var r = gs[i].querySelector('rect'), w = +r.getAttribute('width'), y = +r.getAttribute('y');
      if (y > 60 && y < 400 && w > 20 && w < 900) {
        gs[i].setAttribute('id', 'clicked');
        var b = r.getBoundingClientRect();
        return { name: gs[i].getAttribute('data-n'), width: w, x: b.x + b.width / 2, y: b.y + b.height / 2,
                 tooltip: gs[i].querySelector('title').textContent, frames: gs.length };
      }
    }
    return null;
  })()`);
  if (!target) throw new Error('no frame to click');
  await page.click(target.x, target.y);
  await sleep(200);

  const after = await page.evaluate(`(function () {
    var g = document.getElementById('clicked'), gs = document.querySelectorAll('#frames g.f'), hidden = 0;
    for (var i = 0; i < gs.length; i++) if (gs[i].style.display === 'none') hidden++;
    return { width: +g.querySelector('rect').getAttribute('width'),
             x: +g.querySelector('rect').getAttribute('x'),
             label: g.querySelector('text').textContent,
             status: document.getElementById('status').textContent,
             reset_visible: document.getElementById('reset').style.display !== 'none',
             hidden: hidden };
  })()`);

  // Search: click "Search", answer the prompt, read the match line.
  const dialog = browser.waitEvent('Page.javascriptDialogOpening');
  const sb = await page.evaluate(`(function () { var b = document.getElementById('search').getBoundingClientRect();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2 }; })()`);
  page.click(sb.x, sb.y);
  await dialog;
  await browser.send('Page.handleJavaScriptDialog', { accept: true, promptText: process.argv[3] || 'runtime' },
    page.sessionId);
  await sleep(200);
  const matched = await page.evaluate("document.getElementById('matched').textContent");

  console.log(JSON.stringify({ target, after, matched }));
});
