// Opens a flame graph SVG in headless Chromium, clicks a frame and checks
// that the view zoomed to it; then searches and checks the match line.
// Talks the DevTools protocol over --remote-debugging-pipe (fds 3 and 4,
// NUL-separated JSON), so only node's standard library is needed.
//
// usage: node svg_click.js FILE.svg     prints one JSON line of findings
'use strict';
const { spawn } = require('child_process');
const path = require('path');
const os = require('os');
const fs = require('fs');

const svg = path.resolve(process.argv[2]);
const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parca-chromium-'));
const browser = spawn(process.env.CHROMIUM || '/usr/bin/chromium', [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--window-size=1400,1000', '--remote-debugging-pipe', '--user-data-dir=' + profileDir,
], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
const toBrowser = browser.stdio[3];
const fromBrowser = browser.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffered = '';

fromBrowser.on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  let end;
  while ((end = buffered.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(JSON.stringify(msg.error)));
      else resolve(msg.result);
    } else if (msg.method) {
      for (const l of listeners.slice()) l(msg);
    }
  }
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  toBrowser.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function waitEvent(method) {
  return new Promise((resolve) => {
    const l = (msg) => {
      if (msg.method === method) {
        listeners.splice(listeners.indexOf(l), 1);
        resolve(msg);
      }
    };
    listeners.push(l);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const evaluate = async (expr) => {
    const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, sessionId);
    if (r.exceptionDetails) throw new Error('page error: ' + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  await send('Page.enable', {}, sessionId);
  await send('Page.navigate', { url: 'file://' + svg }, sessionId);
  for (let i = 0; i < 100; i++) {
    if (await evaluate("document.readyState === 'complete'")) break;
    await sleep(100);
  }

  // A frame near the top (so that it is in the window) that is neither
  // full width nor too narrow to hit.
  const target = await evaluate(`(function () {
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

  const mouse = (type) => send('Input.dispatchMouseEvent',
    { type, x: target.x, y: target.y, button: 'left', clickCount: 1 }, sessionId);
  await mouse('mouseMoved');
  await mouse('mousePressed');
  await mouse('mouseReleased');
  await sleep(200);

  const after = await evaluate(`(function () {
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
  const dialog = waitEvent('Page.javascriptDialogOpening');
  const sb = await evaluate(`(function () { var b = document.getElementById('search').getBoundingClientRect();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2 }; })()`);
  for (const type of ['mousePressed', 'mouseReleased']) {
    send('Input.dispatchMouseEvent', { type, x: sb.x, y: sb.y, button: 'left', clickCount: 1 }, sessionId);
  }
  await dialog;
  await send('Page.handleJavaScriptDialog', { accept: true, promptText: process.argv[3] || 'runtime' }, sessionId);
  await sleep(200);
  const matched = await evaluate("document.getElementById('matched').textContent");

  console.log(JSON.stringify({ target, after, matched }));
  await send('Browser.close').catch(() => {});
}

// Stops the browser, removes its profile directory once it has exited.
function finish(status) {
  browser.once('exit', () => {
    try {
      fs.rmSync(profileDir, { recursive: true, force: true, maxRetries: 5 });
    } catch (e) {
      // a helper process may still be writing; the directory is under TMPDIR
    }
    process.exit(status);
  });
  browser.kill('SIGKILL');
}

const timer = setTimeout(() => { console.error('timeout'); finish(2); }, 60000);
main().then(() => { clearTimeout(timer); finish(0); },
  (err) => { clearTimeout(timer); console.error(err.message); finish(1); });
