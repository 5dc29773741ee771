// driver.js: drives code-server (VS Code in the browser) with Debian's
// chromium through playwright-core and checks the agentls extension end to
// end. Run by editors/testing/run-vscode-e2e, which installs everything and
// starts code-server; see docs/editors.md.
//
//   node driver.js
// Environment:
//   CS_URL            code-server base URL (http://127.0.0.1:PORT)
//   E2E_WORKSPACE     folder to open (holds main.go)
//   E2E_ARTIFACTS     where screenshots and findings.txt go
//   PLAYWRIGHT_CORE   path of the playwright-core package
//   E2E_SCENARIOS     comma list: palette,run,quickfix,ask,cancel (default: all)
//   E2E_AGENTLS_LOG   the server's log file, read for its "initialize" line
//   E2E_CLIENT_LOGS   code-server's log folder, where the extension's output
//                     channel ("agentls") is written: what it sent
//   E2E_EDIT_PROMPT / E2E_SLOW_PROMPT, E2E_EXPECT_EDIT (a text the edited
//                     file shows) / E2E_EXPECT_ANSWER (a text of the Quick Fix
//                     answer); defaults: editors/testing/models/editors.json
'use strict';

const fs = require('fs');
const path = require('path');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const url = process.env.CS_URL;
const ws = process.env.E2E_WORKSPACE;
const art = process.env.E2E_ARTIFACTS || '/tmp/agentls-e2e-vscode';
const want = new Set((process.env.E2E_SCENARIOS || 'palette,run,quickfix,ask,cancel').split(','));
fs.mkdirSync(art, { recursive: true });

const findings = [];
let failed = 0;
function note(ok, what) {
  findings.push(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  if (!ok) failed++;
  process.stderr.write(`${ok ? 'PASS' : 'FAIL'} ${what}\n`);
  return ok;
}
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);

async function poll(fn, ms, step = 200) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, step));
  }
}

// clientLog: the extension's output channel ("agentls"), as VS Code writes
// it under the logs folder.
function clientLog() {
  const root = process.env.E2E_CLIENT_LOGS;
  if (!root) return '';
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/agentls\.log$/.test(e.name)) found.push(p);
    }
  };
  try {
    walk(root);
  } catch {
    return '';
  }
  return found.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

function agentlsLog() {
  const f = process.env.E2E_AGENTLS_LOG;
  try {
    return f ? fs.readFileSync(f, 'utf8') : '';
  } catch {
    return '';
  }
}

async function main() {
  const profile = fs.mkdtempSync('/tmp/agentls-chromium-');
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  const shot = async (name) => {
    const file = path.join(art, `${name}.png`);
    await page.screenshot({ path: file });
    findings.push(`     screenshot ${file}`);
  };
  const palette = async (text) => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: 10000 });
    await page.keyboard.type(text, { delay: 10 });
    await page.waitForTimeout(400);
  };
  const toastWith = (text) => poll(async () => {
    const toasts = await page.$$eval('.notification-toast', (els) => els.map((e) => e.innerText));
    return toasts.find((t) => t.includes(text));
  }, 30000);
  const clearToasts = async () => {
    await palette('Notifications: Clear All Notifications');
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
  };
  const statusText = () => page.$eval('.statusbar', (e) => e.innerText);

  try {
    await page.goto(`${url}/?folder=${encodeURIComponent(ws)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    note(true, `workbench ready after ${secs()} s`);

    // Open main.go so the extension activates and the server gets didOpen.
    await page.waitForTimeout(1500);
    const row = await poll(async () => {
      for (const r of await page.$$('.explorer-folders-view .monaco-list-row')) {
        if ((await r.innerText()).trim() === 'main.go') return r;
      }
      return undefined;
    }, 20000);
    if (row) {
      await row.click();
    } else { // quick open: F1 then Backspace drops the ">" command prefix
      await page.keyboard.press('F1');
      await page.keyboard.press('Backspace');
      await page.keyboard.type('main.go', { delay: 20 });
      await page.waitForTimeout(800);
      await page.keyboard.press('Enter');
    }
    const opened = await poll(() => page.$eval('.monaco-editor .view-lines', (e) => e.innerText.replace(/\u00a0/g, ' ').includes('func Greet')), 20000);
    note(Boolean(opened), 'main.go open in the editor');

    // The server logs "msg=initialize ... config.model=..." to its log file:
    // proof that the extension started it and it initialized with the
    // settings the extension sent.
    const init = await poll(async () => agentlsLog().split('\n').find((l) => l.includes('msg=initialize')), 40000);
    note(Boolean(init), `extension started bin/agentls and it initialized (${secs()} s): ${init ? init.replace(/^time=\S+ /, '').slice(0, 160) : 'no initialize in ' + process.env.E2E_AGENTLS_LOG}`);
    note(Boolean(init && init.includes('config.model=e2e-model') && init.includes('config.approval=auto')), 'settings (model, approval) reached the server as initializationOptions');
    note(!agentlsLog().includes('e2e-not-a-key'), 'the API key is not in the server log');
    await page.waitForTimeout(1000);
    const errToasts = await page.$$eval('.notification-toast', (els) => els.map((e) => e.innerText)).catch(() => []);
    const bad = errToasts.find((t) => /could not start|Couldn't start|Connection to server got closed|flag provided/i.test(t));
    await shot('00-started');
    note(!bad, `no error notification (${bad ? bad.replace(/\s+/g, ' ') : 'none'})`);

    if (want.has('palette')) {
      await palette('agentls: ');
      await page.waitForTimeout(600);
      const items = await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ')));
      await shot('01-palette');
      for (const title of ['Run task', 'Ask about selection', 'Cancel task', 'Show tasks', 'Show last report', 'Set API key']) {
        note(items.some((i) => i.includes(`agentls: ${title}`)), `palette lists "agentls: ${title}"`);
      }
      await page.keyboard.press('Escape');
    }

    if (want.has('run')) {
      const prompt = process.env.E2E_EDIT_PROMPT || 'Add a header comment to main.go';
      await palette('agentls: Run task');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
      await page.waitForTimeout(300);
      await page.keyboard.type(prompt, { delay: 5 });
      await page.keyboard.press('Enter');
      const st = await poll(async () => {
        const s = (await statusText()).replace(/\s+/g, ' ');
        return /agentls \d+\/\d+/.test(s) ? s : undefined;
      }, 15000, 50);
      if (st) await shot('02-run-progress');
      note(Boolean(st), `status bar shows the task's progress: ${(st || '').replace(/\s+/g, ' ').slice(0, 120)}`);
      const toast = await toastWith('Show report');
      await shot('03-run-result');
      note(Boolean(toast) && !/failed/.test(toast), `result notification: ${(toast || 'none').replace(/\s+/g, ' ')}`);
      note(Boolean(toast) && toast.includes('Show report'), 'result notification has a "Show report" button');
      const expect = process.env.E2E_EXPECT_EDIT || '// Package main greets the world.';
      const edited = await poll(() => page.$eval('.monaco-editor .view-lines', (e, x) => e.innerText.replace(/\u00a0/g, ' ').includes(x), expect), 5000);
      note(Boolean(edited), `edit applied in the editor (shows "${expect}")`);
      const firstRun = clientLog().split('\n').find((l) => l.includes('agentls.run {')) || '';
      note(firstRun.includes('"mode":"edit"') && !firstRun.includes('"range"'), `Run task sent mode "edit" and no range for a bare cursor: ${firstRun.slice(firstRun.indexOf('agentls.run')).slice(0, 160)}`);
      await page.keyboard.press('Escape');
    }

    if (want.has('quickfix')) {
      await clearToasts();
      // Put the cursor on Greet: find "Greet(name", then Left collapses the
      // selection to its start. Then wait (an early Ctrl+. is cancelled).
      await page.click('.monaco-editor .view-lines');
      await page.keyboard.press('Control+F');
      await page.waitForTimeout(300);
      await page.keyboard.type('Greet(name');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Escape');
      await page.keyboard.press('ArrowLeft');
      await page.waitForTimeout(1200);
      await page.keyboard.press('Control+.');
      const item = await poll(async () => {
        const rows = await page.$$('.action-widget .monaco-list-row, .context-view .monaco-list-row');
        for (const r of rows) {
          const t = await r.innerText();
          if (t.includes('Ask agent about')) return r;
        }
        return undefined;
      }, 10000);
      await shot('04-quickfix-menu');
      note(Boolean(item), 'Quick Fix menu offers "Ask agent about `Greet`"');
      if (item) {
        // Keyboard, not a click: the menu's pointer block intercepts clicks.
        for (let i = 0; i < 10; i++) {
          const focused = await page.$eval('.action-widget .monaco-list-row.focused', (e) => e.innerText).catch(() => '');
          if (focused.includes('Ask agent about')) break;
          await page.keyboard.press('ArrowDown');
        }
        await page.keyboard.press('Enter');
        const toast = await toastWith(process.env.E2E_EXPECT_ANSWER || 'returns the greeting');
        await shot('05-quickfix-answer');
        note(Boolean(toast), `answer shown: ${(toast || 'none').replace(/\s+/g, ' ')}`);
      }
      await page.keyboard.press('Escape');
    }

    if (want.has('ask')) {
      // Find "Greet(name"; Alt+Enter selects the (single) match and focuses
      // the editor; then "agentls: Ask about selection".
      await clearToasts();
      await page.click('.monaco-editor .view-lines');
      await page.keyboard.press('Control+F');
      await page.waitForTimeout(300);
      await page.keyboard.press('Control+A');
      await page.keyboard.type('Greet(name');
      await page.waitForTimeout(300);
      await page.keyboard.press('Alt+Enter');
      await page.waitForTimeout(300);
      await palette('agentls: Ask about selection');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
      await page.waitForTimeout(300);
      await page.keyboard.press('Enter'); // the default question
      const toast = await toastWith('Show report');
      await shot('05b-ask-selection');
      note(Boolean(toast) && !/failed/.test(toast), `Ask about selection answered: ${(toast || 'none').replace(/\s+/g, ' ')}`);
      // What the extension sent: its output channel logs each agentls.run.
      const sent = clientLog().split('\n').filter((l) => l.includes('agentls.run {')).map((l) => {
        try {
          return JSON.parse(l.slice(l.indexOf('agentls.run {') + 'agentls.run '.length));
        } catch {
          return undefined;
        }
      }).filter((a) => a).pop();
      const r = sent && sent.range;
      note(Boolean(sent && sent.mode === 'ask' && r && r.start.line === r.end.line && r.end.character - r.start.character === 'Greet(name'.length),
        `it sent mode "ask" with the selection's range: ${sent ? JSON.stringify({ mode: sent.mode, range: sent.range }) : 'no agentls.run in the output channel'}`);
    }

    if (want.has('cancel')) {
      await clearToasts();
      await palette('agentls: Run task');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
      await page.waitForTimeout(300);
      await page.keyboard.type(process.env.E2E_SLOW_PROMPT || 'slow: explain every function', { delay: 5 });
      await page.keyboard.press('Enter');
      const button = await poll(async () => {
        for (const t of await page.$$('.notification-toast')) {
          const text = await t.innerText();
          if (!text.includes('slow')) continue;
          for (const b of await t.$$('.monaco-button, a.monaco-button')) {
            if ((await b.innerText()).trim() === 'Cancel') return b;
          }
        }
        return undefined;
      }, 15000);
      await shot('06-cancel-progress');
      note(Boolean(button), 'progress notification has a Cancel button');
      if (button) {
        const c0 = Date.now();
        await button.click();
        const toast = await toastWith('cancelled');
        await shot('07-cancelled');
        note(Boolean(toast), `Cancel ends the task "cancelled" (${Date.now() - c0} ms): ${(toast || 'none').replace(/\s+/g, ' ')}`);
      }
    }
  } catch (err) {
    note(false, `driver error: ${err && err.stack ? err.stack : err}`);
    await shot('99-error').catch(() => undefined);
  } finally {
    await ctx.close().catch(() => undefined);
    fs.rmSync(profile, { recursive: true, force: true });
  }
  findings.push(`total ${secs()} s; ${failed} failed`);
  fs.writeFileSync(path.join(art, 'findings.txt'), findings.join('\n') + '\n');
  process.exit(failed > 0 ? 1 : 0);
}

main();
