// Headless Chromium driven over the DevTools protocol, for the suites that
// check what a browser shows (test/query, test/grafana).  The protocol
// runs over --remote-debugging-pipe (fds 3 and 4, NUL-separated JSON), so
// only node's standard library is needed.  Every run has a fresh profile
// directory, removed when the browser has exited.
'use strict';
const { spawn } = require('child_process');
const path = require('path');
const os = require('os');
const fs = require('fs');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// launch(): starts Chromium; resolves to { open(url), send, waitEvent, close() }.
function launch({ width = 1400, height = 1000 } = {}) {
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parca-chromium-'));
  const browser = spawn(process.env.CHROMIUM || '/usr/bin/chromium', [
    '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--window-size=${width},${height}`, '--remote-debugging-pipe', '--user-data-dir=' + profileDir,
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

  // A page at url: evaluate(expression) returns its value; the mouse is
  // moved and clicked at page coordinates.
  async function open(url) {
    const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
    const evaluate = async (expression) => {
      const r = await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId);
      if (r.exceptionDetails) throw new Error('page error: ' + JSON.stringify(r.exceptionDetails));
      return r.result.value;
    };
    const mouse = (type, x, y) => send('Input.dispatchMouseEvent',
      { type, x, y, button: 'left', clickCount: 1 }, sessionId);
    await send('Page.enable', {}, sessionId);
    await send('Page.navigate', { url }, sessionId);
    for (let i = 0; i < 100; i++) {
      if (await evaluate("document.readyState === 'complete'")) break;
      await sleep(100);
    }
    return {
      sessionId,
      evaluate,
      move: (x, y) => mouse('mouseMoved', x, y),
      click: async (x, y) => {
        await mouse('mouseMoved', x, y);
        await mouse('mousePressed', x, y);
        await mouse('mouseReleased', x, y);
      },
      // waits until expression is truthy; returns its value
      waitFor: async (expression, ms = 30000) => {
        for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) {
          const v = await evaluate(expression);
          if (v) return v;
        }
        throw new Error('timed out waiting for ' + expression);
      },
    };
  }

  // Stops the browser and removes its profile directory once it has exited.
  function close() {
    return new Promise((resolve) => {
      browser.once('exit', () => {
        try {
          fs.rmSync(profileDir, { recursive: true, force: true, maxRetries: 5 });
        } catch (e) {
          // a helper process may still be writing; the directory is under TMPDIR
        }
        resolve();
      });
      browser.kill('SIGKILL');
    });
  }

  return { open, send, waitEvent, close, sleep };
}

// run(main, timeoutMs): runs main(browser), then closes the browser and
// exits 0, or 1 (with the error) or 2 (timeout).
function run(main, timeoutMs = 60000) {
  const browser = launch();
  const stop = (status) => browser.close().then(() => process.exit(status));
  const timer = setTimeout(() => { console.error('timeout'); stop(2); }, timeoutMs);
  main(browser).then(() => { clearTimeout(timer); stop(0); },
    (err) => { clearTimeout(timer); console.error(err.stack || err.message); stop(1); });
}

module.exports = { launch, run, sleep };
