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
//   E2E_SCENARIOS     comma list: nokey,palette,run,undo,quickfix,ask,answer,stream,approval,diagnostics,latency,plan,cancel,ghost,review
//                     or the journeys: rename,mcp,hook,command,renamego (run-vscode-e2e journeys)
//   E2E_HOOK_LOG      the logging hook's file (~/.claude/bash-command-log.txt of code-server's HOME)
//   E2E_GO_LOG        where the Go stand-in extension logs its answers
//                     (default: all). nokey needs code-server started without
//                     OPENAI_API_KEY (it checks the prompt at start). review
//                     turns agentls.review on (in the workspace's
//                     .vscode/settings.json) for the rest of the run: last.
//   E2E_AGENTLS_LOG   the server's log file, read for its "initialize" line
//   E2E_CLIENT_LOGS   code-server's log folder, where the extension's output
//                     channel ("agentls") is written: what it sent
//   E2E_EDIT_PROMPT / E2E_SLOW_PROMPT, E2E_EXPECT_EDIT (a text the edited
//                     file shows) / E2E_EXPECT_ANSWER (a text of the Quick Fix
//                     answer); defaults: editors/testing/models/editors.json
'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const url = process.env.CS_URL;
const ws = process.env.E2E_WORKSPACE;
const art = process.env.E2E_ARTIFACTS || '/tmp/agentls-e2e-vscode';
const want = new Set((process.env.E2E_SCENARIOS || 'nokey,palette,run,undo,quickfix,ask,answer,stream,approval,plan,diagnostics,latency,cancel,ghost,review').split(','));
fs.mkdirSync(art, { recursive: true });

const findings = [];
let failed = 0;
function note(ok, what) {
  findings.push(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  if (!ok) failed++;
  process.stderr.write(`${ok ? 'PASS' : 'FAIL'} [${secs()} s] ${what}\n`);
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
  const toastTexts = () => page.$$eval('.notification-toast', (els) => els.map((e) => e.innerText)).catch(() => []);
  // toastButton: the button titled label of the notification that includes
  // text: in its toast, or, once the toast has gone (VS Code hides an
  // informational toast after a while, which a loaded machine reaches while
  // the test looks at something else), in the notification center.
  const buttonIn = async (selector, text, label) => {
    for (const t of await page.$$(selector)) {
      if (!(await t.innerText()).includes(text)) continue;
      for (const b of await t.$$('.monaco-button, .action-label')) {
        if ((await b.innerText()).trim() === label) return b;
      }
    }
    return undefined;
  };
  const toastButton = async (text, label, ms = 15000) => {
    const b = await poll(() => buttonIn('.notification-toast', text, label), ms);
    if (b) return b;
    await palette('Notifications: Show Notifications');
    await page.keyboard.press('Enter');
    return poll(() => buttonIn('.notifications-center .notification-list-item', text, label), 5000);
  };
  // frameWith: the webview frame (approval panel, markdown preview) whose
  // document contains text.
  const frameWith = async (text) => {
    for (const f of page.frames()) {
      const has = await f.evaluate((x) => !!document.body && document.body.innerText.includes(x), text).catch(() => false);
      if (has) return f;
    }
    return undefined;
  };
  const tabTitles = () => page.$$eval('.tabs-container .tab', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim())).catch(() => []);
  const runPalette = async (command, input) => {
    await palette(command);
    await page.keyboard.press('Enter');
    await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
    await page.waitForTimeout(300);
    await page.keyboard.type(input, { delay: 5 });
    await page.keyboard.press('Enter');
  };
  const openMain = async () => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    await page.waitForTimeout(300);
    await page.keyboard.type('main.go', { delay: 10 });
    await page.waitForTimeout(600);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(500);
  };

  try {
    await page.goto(`${url}/?folder=${encodeURIComponent(ws)}`, { waitUntil: 'domcontentloaded', timeout: 90000 });
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

    // The server logs "msg=initialize" to its log file: proof that the
    // extension started it and it initialized.
    const init = await poll(async () => agentlsLog().split('\n').find((l) => l.includes('msg=initialize')), 40000);
    note(Boolean(init), `extension started bin/agentls and it initialized (${secs()} s): ${init ? init.replace(/^time=\S+ /, '').slice(0, 160) : 'no initialize in ' + process.env.E2E_AGENTLS_LOG}`);
    // The face applies the settings and logs "settings at initialize
    // config.model=...": the server only forwards initializationOptions.
    const applied = await poll(async () => agentlsLog().split('\n').find((l) => l.includes('msg="settings at initialize"')), 10000);
    note(Boolean(applied && applied.includes('config.model=e2e-model') && applied.includes('config.approval=ask')), 'settings (model, approval) reached the server as initializationOptions');
    note(!agentlsLog().includes('e2e-not-a-key'), 'the API key is not in the server log');
    // A normal start logs nothing at error level in the output channel: the
    // server's stderr note "agentls: logging to FILE" is information. VS
    // Code writes the channel to its file when it likes: wait for the line.
    const startLog = (await poll(async () => { const l = clientLog(); return l.includes('agentls: logging to') ? l : undefined; }, 20000)) || clientLog();
    const errLines = startLog.split('\n').filter((l) => /\[error\]/.test(l));
    const loggingTo = startLog.split('\n').find((l) => l.includes('agentls: logging to')) || '';
    note(errLines.length === 0 && /\[info\]/.test(loggingTo), `no error-level line in the "agentls" output at start-up (${errLines.length ? errLines[0].slice(0, 120) : `"logging to" at ${(/\[(\w+)\]/.exec(loggingTo) || [])[1] || 'no such line'}`})`);
    const errToasts = await page.$$eval('.notification-toast', (els) => els.map((e) => e.innerText)).catch(() => []);
    const bad = errToasts.find((t) => /could not start|Couldn't start|Connection to server got closed|flag provided/i.test(t));
    await shot('00-started');
    note(!bad, `no error notification (${bad ? bad.replace(/\s+/g, ' ') : 'none'})`);

    if (want.has('nokey')) {
      // Started without a key (the runner unsets OPENAI_API_KEY): one prompt
      // at start offering "Set API key".
      const prompt = await toastButton('no API key is set', 'Set API key', 20000);
      await shot('vscode-nokey-prompt');
      note(Boolean(prompt), 'no key at start: a notification offers "Set API key"');
      await clearToasts();
      // A task the model service refuses (401): one notification, with the button.
      await runPalette('agentls: Run task', 'nokey: say hello');
      const button = await toastButton('401', 'Set API key', 30000);
      await page.waitForTimeout(2000); // a second, duplicate notification would be up by now
      const with401 = (await toastTexts()).filter((t) => t.includes('401'));
      await shot('vscode-nokey-401');
      note(with401.length === 1, `the 401 shows exactly one notification (${with401.length}): ${(with401[0] || 'none').replace(/\s+/g, ' ').slice(0, 200)}`);
      note(Boolean(button), 'the 401 notification has a "Set API key" button');
      const hint = with401.join(' ');
      const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
      note(!hint.includes('agentls.apiKeyEnv') || Boolean(pkg.contributes.configuration.properties['agentls.apiKeyEnv']), 'a hint that names agentls.apiKeyEnv names a real VS Code setting');
      if (button) {
        await button.click();
        const box = await page.waitForSelector('.quick-input-widget input[type="password"]', { timeout: 10000 }).catch(() => undefined);
        note(Boolean(box), '"Set API key" asks for the key in a password box');
        if (box) {
          await page.keyboard.type('e2e-not-a-key', { delay: 5 });
          await page.keyboard.press('Enter');
          const saved = await toastWith('API key saved');
          note(Boolean(saved), `the key is saved and the server restarted: ${(saved || 'none').replace(/\s+/g, ' ')}`);
          const restarted = await poll(async () => agentlsLog().split('\n').filter((l) => l.includes('msg=initialize')).length >= 2, 20000);
          note(Boolean(restarted), 'the server was started again (a second initialize in its log)');
        }
      }
      await clearToasts();
      await openMain();
    }

    if (want.has('palette')) {
      await palette('agentls: ');
      await page.waitForTimeout(600);
      const items = await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ')));
      await shot('01-palette');
      for (const title of ['Run task', 'Plan task', 'Ask about selection', 'Cancel task', 'Undo task', 'Resume task', 'Show tasks', 'Show answer', 'Show last report', 'Set API key']) {
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
      const firstRun = clientLog().split('\n').find((l) => l.includes('agentls.run {') && l.includes(prompt)) || '';
      note(firstRun.includes('"mode":"edit"') && !firstRun.includes('"range"'), `Run task sent mode "edit" and no range for a bare cursor: ${firstRun.slice(firstRun.indexOf('agentls.run')).slice(0, 160)}`);
      // The tasks view in the explorer: the task and its plan, one item a row
      // ("agentls: Show tasks" opens it).
      await palette('agentls: Show tasks');
      await page.keyboard.press('Enter');
      const rows = await poll(async () => {
        const r = await page.$$eval('.pane', (panes) => {
          const p = panes.find((x) => /agentls tasks/i.test((x.querySelector('.pane-header') || {}).innerText || ''));
          return p ? [...p.querySelectorAll('.monaco-list-row')].map((e) => e.innerText.replace(/\s+/g, ' ').trim()) : [];
        });
        return r.some((x) => x.includes('Add a package comment to main.go')) && r.some((x) => x.includes('Check that it builds')) ? r : undefined;
      }, 10000);
      await shot('vscode-tasks-view');
      note(Boolean(rows), `the "agentls tasks" view lists the task with its plan as a checklist: ${(rows || []).join(' | ').slice(0, 220)}`);
      await page.keyboard.press('Escape');
    }

    if (want.has('undo')) {
      // "agentls: Undo task": a QuickPick over agentls.tasks; picking the
      // edit task reverts its edit in the editor.
      await clearToasts();
      await openMain();
      await palette('agentls: Undo task');
      await page.keyboard.press('Enter');
      const item = await poll(async () => {
        const rows = await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ')));
        return rows.find((r) => r.includes('Add a header comment')) ? rows : undefined;
      }, 10000);
      await shot('08-undo-pick');
      note(Boolean(item), `Undo task offers the tasks to pick from: ${(item || []).join(' | ').slice(0, 200)}`);
      if (item) {
        await page.keyboard.type('Add a header comment', { delay: 5 });
        await page.waitForTimeout(300);
        await page.keyboard.press('Enter');
        const undone = await toastWith('undid task');
        const reverted = await poll(() => page.$eval('.monaco-editor .view-lines', (e) => !e.innerText.replace(/\u00a0/g, ' ').includes('// Package main greets the world.')), 10000);
        note(Boolean(undone) && Boolean(reverted), `the edit is reverted in the editor: ${(undone || 'no message').replace(/\s+/g, ' ').slice(0, 160)}`);
      }
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

    if (want.has('answer')) {
      await clearToasts();
      await openMain();
      await runPalette('agentls: Run task', 'Explain the whole program');
      const lastLine = 'Last line of the answer: the program exits with status 0 after printing its greeting.';
      const frame = await poll(() => frameWith(lastLine), 30000);
      note(Boolean(frame), 'a long answer (over 400 characters, several lines) opens whole in a markdown preview');
      if (frame) {
        const vis = await frame.evaluate((x) => {
          const el = [...document.querySelectorAll('p, li')].find((e) => e.innerText.includes(x));
          if (!el) return 'not found';
          el.scrollIntoView({ block: 'nearest' });
          const r = el.getBoundingClientRect();
          const full = document.body.innerText;
          return `${r.top >= 0 && r.bottom <= window.innerHeight && r.width > 0 ? 'visible' : 'hidden'} ${full.length}`;
        }, lastLine);
        await page.waitForTimeout(300);
        await shot('vscode-answer');
        note(/^visible/.test(vis), `its last line is visible in the preview (${vis} characters of text)`);
        const iframeBox = await poll(async () => {
          for (const el of await page.$$('iframe')) {
            const cf = await el.contentFrame();
            const inner = cf ? cf.childFrames().concat([cf]) : [];
            if (inner.includes(frame)) return el.boundingBox();
          }
          return undefined;
        }, 3000);
        note(Boolean(iframeBox && iframeBox.width > 200 && iframeBox.height > 200), `the preview is on screen (${iframeBox ? `${Math.round(iframeBox.width)}x${Math.round(iframeBox.height)}` : 'no frame box'})`);
      }
      const report = await toastButton('completed', 'Show report', 10000);
      note(Boolean(report), 'the result notification offers "Show report"');
      if (report) {
        await report.click();
        // The report (.agentls/tasks/ID.md) in a preview tab of its own, not
        // the answer's (answer-ID.md); rendered: its "Timing" heading is text.
        const tab = await poll(async () => (await tabTitles()).find((t) => /^Preview (?!answer-).*\.md/.test(t)), 10000);
        const rendered = await poll(() => frameWith('Timing'), 10000);
        await shot('vscode-report');
        const sourceTab = (await tabTitles()).find((t) => /^[^ ]+\.md$/.test(t) && !/^Preview/.test(t));
        note(Boolean(tab) && Boolean(rendered) && !sourceTab, `"Show report" opens the report rendered (${tab || 'no preview tab'}), not its markdown source${sourceTab ? ` (source tab ${sourceTab})` : ''}`);
      }
      await page.keyboard.press('Escape');
    }

    if (want.has('stream')) {
      // The model sends parts 1-3 and holds the rest at the gate "stream"
      // (models/vscode.json) until the panel shows the first parts.
      await clearToasts();
      await openMain();
      await runPalette('agentls: Run task', 'Explain the stream test');
      const frame = await poll(() => frameWith('STREAM-PART-2'), 30000);
      note(Boolean(frame), 'the answer panel shows the first parts of the answer while the model still writes it');
      if (frame) {
        const text = await frame.evaluate(() => document.body.innerText).catch(() => '');
        note(/writing the answer/.test(text) && !text.includes('STREAM-PART-4'), `the panel says the answer is being written and holds only what came: ${text.replace(/\s+/g, ' ').slice(0, 200)}`);
        note(/writing the answer/.test(await statusText()), 'the status bar says the task is writing the answer');
        await shot('vscode-stream');
      }
      const res = await fetch(`${process.env.OPENAI_BASE_URL}/gates/stream`, { method: 'POST' });
      note(res.status === 204, `the test lets the model send the rest (${res.status})`);
      const whole = await poll(async () => {
        const f = await frameWith('STREAM-PART-6');
        const t = f ? await f.evaluate(() => document.body.innerText).catch(() => '') : '';
        return /completed/.test(t) && !/writing the answer/.test(t) ? t : undefined;
      }, 30000);
      note(Boolean(whole), 'the reply replaces the streamed parts with the whole result in the same panel');
      const previews = (await tabTitles()).filter((t) => /^Preview answer\.md/.test(t));
      note(previews.length === 1, `one answer panel, reused (an open one shows the stream): ${(await tabTitles()).join(', ')}`);
      await shot('vscode-stream-done');
      await page.keyboard.press('Escape');
    }

    if (want.has('approval')) {
      await clearToasts();
      await openMain();
      await runPalette('agentls: Run task', 'approval: run the tests of Greet');
      const frame = await poll(() => frameWith('agentls asks for approval'), 30000);
      note(Boolean(frame), 'the approval question opens in a panel');
      if (frame) {
        const m = await frame.evaluate(() => {
          const cut = (e) => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1 || getComputedStyle(e).textOverflow === 'ellipsis';
          const buttons = [...document.querySelectorAll('button')].map((b) => ({ text: b.innerText.trim(), cut: cut(b), w: b.clientWidth }));
          const texts = [...document.querySelectorAll('p, pre')].map((e) => ({ text: e.innerText, cut: cut(e) }));
          return { buttons, texts };
        });
        await shot('vscode-approval');
        const titles = m.buttons.map((b) => b.text);
        note(JSON.stringify(titles) === JSON.stringify(['Allow once', 'Allow for this task', 'Always allow `go test`', 'Deny']), `the approval offers every action, titles whole: ${titles.join(' | ')}`);
        const cutB = m.buttons.filter((b) => b.cut);
        note(cutB.length === 0, `no approval button is truncated (scrollWidth <= clientWidth, no ellipsis): ${m.buttons.map((b) => `${b.text} ${b.w}px`).join(', ')}`);
        const cmd = "go test -count=1 -run 'TestGreetReturnsTheGreetingForEveryNameInTheTable|TestMainPrintsExactlyOneLineOfOutput' -timeout 120s ./...";
        const cmdShown = m.texts.find((t) => t.text.includes(cmd));
        note(Boolean(cmdShown) && m.texts.every((t) => !t.cut), `the whole command is shown and no text is cut (${m.texts.length} blocks)`);
        // Cancel the task while the question is open: the question goes away.
        const cancel = await toastButton('approval', 'Cancel', 10000);
        note(Boolean(cancel), 'the task shows a Cancel button while the approval is open');
        if (cancel) {
          const c0 = Date.now();
          await cancel.click();
          const gone = await poll(async () => !(await frameWith('agentls asks for approval')) && !(await tabTitles()).some((t) => t.includes('approve')), 10000);
          await shot('vscode-approval-withdrawn');
          note(Boolean(gone), `cancelling the task withdraws its approval panel (${Date.now() - c0} ms)`);
          const ended = await toastWith('cancelled');
          note(Boolean(ended), `the task ends "cancelled": ${(ended || 'none').replace(/\s+/g, ' ').slice(0, 160)}`);
          const withdrawn = clientLog().split('\n').find((l) => l.includes('approval withdrawn')) || '';
          note(withdrawn !== '', `the extension logged why: ${withdrawn.replace(/^.*\] /, '')}`);
        }
      }
    }

    if (want.has('plan')) {
      // Plan mode (needs a server with mode "plan"): the plan opens in the
      // preview, the notification offers "Execute plan", which runs the
      // follow-up {prompt: "go ahead", mode: "edit", followUp: ID}.
      await clearToasts();
      await openMain();
      await runPalette('agentls: Plan task', 'plan: rename Greet to Hello');
      const exec = await toastButton('plan ready', 'Execute plan', 30000);
      const planFrame = await poll(() => frameWith('Rename Greet to Hello in main.go'), 10000);
      await shot('vscode-plan');
      // When it fails, say why: an error toast without buttons hides itself
      // after a while, the output channel keeps it.
      const why = (clientLog().split('\n').find((l) => l.includes('agentls.run failed')) || 'no failure logged').replace(/^.*\] /, '').slice(0, 200);
      note(Boolean(exec), `a finished plan offers "Execute plan"${exec ? '' : ` (${why})`}`);
      note(Boolean(planFrame), 'the plan opens in the preview as a checklist');
      const sentPlan = clientLog().split('\n').find((l) => l.includes('agentls.run {') && l.includes('plan: rename')) || '';
      note(sentPlan.includes('"mode":"plan"'), `Plan task sent mode "plan": ${sentPlan.slice(sentPlan.indexOf('agentls.run')).slice(0, 120)}`);
      if (exec) {
        await exec.click();
        const done = await toastWith('Carried out the plan');
        const followUp = clientLog().split('\n').find((l) => l.includes('agentls.run {"prompt":"go ahead"')) || '';
        note(Boolean(done) && /"mode":"edit","followUp":"[^"]+"/.test(followUp), `"Execute plan" runs the follow-up edit: ${followUp.slice(followUp.indexOf('agentls.run')).slice(0, 140)}`);
      }
    }

    if (want.has('diagnostics')) {
      // The editor's diagnostics in the loop: a test extension
      // (test/e2e/diagnostics-ext) stands in for a language server and
      // reports "undefined: E2E_BROKEN" 300 ms after a Go file gains the
      // marker; the scripted model's edit adds it. The model's next request
      // (the task's flight recording) carries the error in the edit's tool
      // result, and the report lists it as introduced.
      await clearToasts();
      await openMain();
      const d0 = Date.now();
      await runPalette('agentls: Run task', 'Insert the diagnostics marker into main.go');
      const done = await toastWith('Inserted the marker');
      note(Boolean(done) && done.includes('undefined: E2E_BROKEN'),
        `the model was answered from a tool result carrying the editor's error (${Date.now() - d0} ms): ${(done || 'none').replace(/\s+/g, ' ').slice(0, 160)}`);
      const dir = path.join(ws, '.agentls');
      const read = (sub) => {
        try {
          return fs.readdirSync(path.join(dir, sub)).map((f) => fs.readFileSync(path.join(dir, sub, f), 'utf8'));
        } catch {
          return [];
        }
      };
      let toolResult = '';
      for (const file of read('recordings')) {
        for (const line of file.split('\n')) {
          if (!line.includes('E2E_BROKEN')) continue;
          let req;
          try {
            req = JSON.parse(line).request;
            if (typeof req === 'string') req = JSON.parse(req);
          } catch {
            continue;
          }
          for (const m of (req && req.messages) || []) {
            if (m.role === 'tool' && typeof m.content === 'string' && m.content.includes('new error')) toolResult = m.content;
          }
        }
      }
      note(/The editor reports 1 new error\(s\) after this edit[^]*main\.go:\d+: undefined: E2E_BROKEN \(e2e-compiler\)/.test(toolResult),
        `the model's next request carries the edit's tool result with the editor's error: ${toolResult.replace(/\n/g, ' | ').slice(-200)}`);
      const report = read('tasks').find((r) => r.includes('Insert the diagnostics marker')) || '';
      note(/## Editor diagnostics[^]*Errors introduced:\n- main\.go:\d+: undefined: E2E_BROKEN/.test(report),
        'the task\'s report lists the error under "Errors introduced"');
    }

    if (want.has('latency')) {
      // Finding: a 2-edit task took 9.4 s in VS Code against 3.2 s from the
      // command line, a 3 s diagnostics wait after each edit although nothing
      // checked the file. The same task (editors/testing/models/latency.json:
      // two edits of notes.txt, which no extension checks here) five times in
      // VS Code (forth and back), each timed from sending agentls.run to its
      // reply (the extension logs "agentls.run replied in N ms"), and five
      // times with `agentls run` (the whole process, in a workspace of its
      // own), taken in turns so both see the same load: the medians must be
      // within 20% (on a loaded machine the single best run of either is
      // luck: a CPU-hog run failed on the best runs, 839 against 574 ms,
      // with medians of 1003 and 970 ms). Every run is in the finding and
      // in latency.txt.
      await clearToasts();
      fs.writeFileSync(path.join(ws, 'notes.txt'), 'first: todo\nsecond: todo\n');
      // Open, as a user looks at the file the task edits (with approval
      // "ask", an edit of a file no editor shows asks first).
      // Quick Open lists a file only once VS Code's file search has seen
      // it, which a loaded machine delays: Enter is pressed only when the
      // row is there, and Quick Open is opened again (its list is read
      // afresh) until it is.
      for (let attempt = 1; attempt <= 4; attempt++) {
        await page.keyboard.press('Escape');
        await page.keyboard.press('Control+P');
        await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: 10000 });
        await page.keyboard.type('notes.txt', { delay: 10 });
        const listed = await poll(() => page.$$eval('.quick-input-list .monaco-list-row', (els) => els.some((e) => e.innerText.includes('notes.txt'))), 15000, 50);
        if (listed) {
          await page.keyboard.press('Enter');
          break;
        }
      }
      // (Other scenarios leave editor groups open: an active tab of any.)
      const shown = await poll(() => page.$$eval('.tab.active', (els) => els.some((e) => e.innerText.includes('notes.txt'))), 10000, 50);
      note(Boolean(shown), `notes.txt open in the editor (active tabs: ${(await page.$$eval('.tab.active', (els) => els.map((e) => e.innerText.trim())).catch(() => [])).join(', ')})`);
      const replied = () => clientLog().split('\n').filter((l) => /agentls\.run replied in \d+ ms/.test(l));
      const cliWs = process.env.E2E_CLI_WS;
      const cliRun = () => {
        fs.writeFileSync(path.join(cliWs, 'notes.txt'), 'first: todo\nsecond: todo\n');
        const c0 = Date.now();
        const r = spawnSync(process.env.E2E_AGENTLS_BIN, ['run', '--workspace', cliWs, '--edit', '--yes', 'Latency: two edits to notes.txt'], { encoding: 'utf8', timeout: 60000 });
        const ms = Date.now() - c0;
        return r.status === 0 && `${r.stdout}${r.stderr}`.includes('LATENCY-DONE') ? ms : undefined;
      };
      const times = [];
      const cli = [];
      for (let i = 0; i < 5; i++) {
        const c = cliRun();
        if (c !== undefined) cli.push(c);
        const [prompt, done] = i % 2 === 0 ? ['Latency: two edits to notes.txt', 'LATENCY-DONE'] : ['Latency back: two edits to notes.txt', 'LATENCY-BACK-DONE'];
        const n0 = replied().length;
        await runPalette('agentls: Run task', prompt);
        const line = await poll(async () => replied()[n0], 30000, 50);
        const toast = await toastWith(done);
        note(Boolean(line) && Boolean(toast) && toast.includes('changed notes.txt'), `"${prompt}" completed and changed notes.txt: ${(toast || 'no result notification').replace(/\s+/g, ' ').slice(0, 120)}`);
        if (line) times.push(Number(/replied in (\d+) ms/.exec(line)[1]));
        await clearToasts();
      }
      note(cli.length === 5, `agentls run completed the same task ${cli.length} of 5 times`);
      const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const cm = cli.length === 5 ? median(cli) : 0;
      const ed = times.length === 5 ? median(times) : Infinity;
      const line = `latency: VS Code ${times.join(', ')} ms (median ${ed}, best ${Math.min(...times)}); agentls run ${cli.join(', ')} ms (median ${cm}, best ${Math.min(...cli)}; limit ${Math.round(cm * 1.2)} ms)`;
      try {
        fs.writeFileSync(path.join(art, 'latency.txt'), line + '\n');
      } catch { /* the finding below says it */ }
      note(cm > 0 && ed <= cm * 1.2, `with no diagnostics source, a 2-edit task in VS Code is within 20% of the command line: ${line}`);
      const report = fs.readdirSync(path.join(ws, '.agentls', 'tasks')).map((f) => fs.readFileSync(path.join(ws, '.agentls', 'tasks', f), 'utf8'))
        .find((r) => r.includes('Latency: two edits')) || '';
      note(/Not checked: no language server reports diagnostics for notes\.txt/.test(report) && !report.includes('No error introduced'),
        `the report says notes.txt was not checked: ${(/## Editor diagnostics\n\n([^\n]*)/.exec(report) || [])[1] || 'no diagnostics section'}`);
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
    if (want.has('ghost')) {
      // Ghost text: vscode-languageclient's own inline completion provider
      // asks the server (textDocument/inlineCompletion, on by the user's
      // agentls.completion), the server the fake model's /v1/completions
      // (editors/testing/models/ghost.json: each marker answered once).
      await clearToasts();
      await openMain();
      const docText = () => page.$eval('.monaco-editor .view-lines', (e) => {
        const c = e.cloneNode(true);
        c.querySelectorAll('[class*="ghost-text"]').forEach((g) => g.remove());
        return c.innerText.replace(/\u00a0/g, ' ');
      });
      const ghostText = () => page.$$eval('.monaco-editor [class*="ghost-text"]', (els) => els.map((e) => e.innerText.replace(/\u00a0/g, ' ')).join(' ')).catch(() => '');
      await page.keyboard.press('Control+G');
      await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
      await page.keyboard.type('11', { delay: 10 });
      await page.keyboard.press('Enter');
      await page.keyboard.press('End');
      await page.keyboard.press('Enter');
      await page.keyboard.type('// ghost one:', { delay: 20 });
      const shown = await poll(async () => (await ghostText()).includes('GHOST-ACCEPTED'), 30000);
      const before = await docText();
      await shot('vscode-ghost');
      note(Boolean(shown) && !before.includes('GHOST-ACCEPTED'), 'ghost text shows the model\'s completion after the cursor once the user pauses, and the document does not hold it');
      await page.keyboard.press('Tab');
      const accepted = await poll(async () => (await docText()).includes('// ghost one: GHOST-ACCEPTED'), 10000);
      note(Boolean(accepted), 'Tab accepts it: the document holds "// ghost one: GHOST-ACCEPTED"');
      await page.keyboard.type(' // ghost two:', { delay: 20 });
      const second = await poll(async () => (await ghostText()).includes('GHOST-TWO'), 30000);
      note(Boolean(second) && !(await docText()).includes('GHOST-TWO'), 'typing on shows the next ghost text, not in the document');
      await page.keyboard.type('x');
      const gone = await poll(async () => {
        const d = await docText();
        return d.includes('// ghost two:x') && !d.includes('GHOST-TWO') && !(await ghostText()).includes('GHOST-TWO');
      }, 10000);
      note(Boolean(gone), 'the next keystroke removes it: the key typed is in the document, the ghost text neither shown nor in the document');
      await page.keyboard.type(' // ghost three:', { delay: 20 });
      const third = await poll(async () => (await ghostText()).includes('GHOST-THREE'), 30000);
      note(Boolean(third), 'the third ghost text shows');
      await page.keyboard.press('Escape');
      const dismissed = await poll(async () => !(await ghostText()).includes('GHOST-THREE') && (await docText()).includes('// ghost three:'), 10000);
      note(Boolean(dismissed) && !(await docText()).includes('GHOST-THREE'), 'Escape dismisses it and leaves the document as typed');
      // main.go as it was (undone to its saved text), for the scenarios
      // after this one.
      const undone = await poll(async () => {
        if (!(await docText()).includes('ghost')) return true;
        await page.keyboard.press('Control+Z');
        return false;
      }, 30000);
      note(Boolean(undone), 'main.go undone to its saved text');
    }
    if (want.has('review')) {
      // Review before apply: with agentls.review "always", the scripted
      // model's edit of main.go in two hunks opens VS Code's refactor
      // preview (change annotations with needsConfirmation), a checkbox a
      // change. The test keeps the first change, leaves the second
      // unchecked and applies: the file has only the first, and the
      // model's next request carries the rejected hunk in the edit's tool
      // result.
      await clearToasts();
      await openMain();
      // The workspace's .vscode/settings.json turns review on (a repository
      // may turn it on, never off: the strictest value applies).
      fs.mkdirSync(path.join(ws, '.vscode'), { recursive: true });
      fs.writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'agentls.review': 'always' }, null, 2));
      const applied = await poll(async () => agentlsLog().split('\n').find((l) => l.includes('configuration changed') && l.includes('config.review=always')), 20000);
      note(Boolean(applied), 'agentls.review "always" in the workspace settings reaches the server (didChangeConfiguration)');
      const r0 = Date.now();
      await runPalette('agentls: Run task', 'review: change both greetings');
      const panel = await poll(async () => {
        const rows = await page.$$eval('.bulk-edit-panel[data-state="data"] .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim()));
        return rows.some((r) => r.includes('reviewer')) && rows.some((r) => r.includes('Hi, ')) ? rows : undefined;
      }, 30000);
      await page.waitForTimeout(300);
      await shot('vscode-review');
      note(Boolean(panel), `the edit opens the refactor preview, one row a change (${Date.now() - r0} ms): ${(panel || []).join(' | ').slice(0, 240)}`);
      if (panel) {
        // VS Code starts every change that needs confirmation unchecked:
        // the user checks the ones to keep. Keep the first (its row shows
        // "Hi, "), leave the second unchecked.
        const box = await poll(async () => {
          for (const r of await page.$$('.bulk-edit-panel .monaco-list-row')) {
            if ((await r.innerText()).includes('"Hi, "')) return r.$('.edit-checkbox');
          }
          return undefined;
        }, 5000);
        note(Boolean(box), 'each change has its own checkbox');
        if (box) await box.click();
        await page.waitForTimeout(300);
        await shot('vscode-review-checked');
        const apply = await poll(async () => {
          for (const b of await page.$$('.bulk-edit-panel .buttons .monaco-button')) {
            if ((await b.innerText()).trim() === 'Apply') return b;
          }
          return undefined;
        }, 5000);
        note(Boolean(apply), 'the preview offers "Apply"');
        if (apply) await apply.click();
        const done = await toastWith('Kept the change you accepted');
        note(Boolean(done), `the model was answered from a tool result that names the rejected change: ${(done || (await toastTexts()).join(' / ') || 'none').replace(/\s+/g, ' ').slice(0, 200)}`);
        const text = await poll(async () => {
          const t = await page.$eval('.monaco-editor .view-lines', (e) => e.innerText.replace(/\u00a0/g, ' '));
          return t.includes('"Hi, "') ? t : undefined;
        }, 5000);
        note(Boolean(text) && !text.includes('reviewer') && text.includes('Greet("world")'), 'main.go has the kept change and not the rejected one');
        let toolResult = '';
        const dir = path.join(ws, '.agentls', 'recordings');
        for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
          for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
            if (!line.includes('rejected 1')) continue;
            let req;
            try {
              req = JSON.parse(line).request;
              if (typeof req === 'string') req = JSON.parse(req);
            } catch {
              continue;
            }
            for (const m of (req && req.messages) || []) {
              if (m.role === 'tool' && typeof m.content === 'string' && m.content.includes('rejected 1')) toolResult = m.content;
            }
          }
        }
        note(toolResult.includes('kept 1 of 2 changes') && toolResult.includes('+\tfmt.Println(Greet("reviewer"))') && toolResult.includes('Do not make a rejected change again'),
          `the model's next request carries the rejected hunk: ${toolResult.replace(/\n/g, ' | ').slice(0, 260)}`);
      }
    }
    // The first-day journeys (run-vscode-e2e journeys): the user's VS Code
    // settings hold an MCP server and Claude Code's logging hook as the docs
    // write them. untilResult waits for the task's result notification that
    // holds marker, answering each approval asked meanwhile with "Allow
    // once" (or the settings question's yes); asked lists what was asked.
    const untilResult = async (marker, ms = 90000) => {
      const asked = [];
      const toast = await poll(async () => {
        const t = (await toastTexts()).find((x) => x.includes(marker));
        if (t) return t;
        const f = await frameWith('agentls asks');
        if (f) {
          const q = await f.evaluate(() => document.body.innerText).catch(() => '');
          for (const b of await f.$$('button')) {
            const label = (await b.innerText()).trim();
            if (/^(Allow once|Allow|Yes|Apply these settings)$/.test(label)) {
              asked.push(`${q.replace(/\s+/g, ' ').slice(0, 160)} -> ${label}`);
              await b.click();
              break;
            }
          }
        }
        return undefined;
      }, ms, 300);
      return { toast: toast || '', asked };
    };
    if (want.has('rename')) {
      // Last: it renames Greet, which the other scenarios use. No Go
      // extension is installed, so VS Code answers the forwarded rename
      // with an empty edit; agentls's own gopls renames. Only main.go is
      // open: the rename is one applyEdit for main.go and the closed
      // main_test.go, which VS Code loads and the extension saves.
      await clearToasts();
      await openMain();
      const testFile = path.join(ws, 'main_test.go');
      const testBefore = fs.readFileSync(testFile, 'utf8');
      note(!(await tabTitles()).some((t) => t.includes('main_test.go')), 'main_test.go (the caller) is not open in the editor');
      await runPalette('agentls: Run task', 'Rename Greet to Welcome everywhere');
      // Asked first: the settings the editor sent, then the rename itself
      // (its closed file); each is allowed once.
      const { toast, asked } = await untilResult('RENAME-', 180000);
      note(asked.length > 0, `a question before the rename, the user allows it once: ${asked.join('; ') || 'none asked'}`);
      await shot('20-rename-result');
      note(Boolean(toast) && toast.includes('RENAME-DONE') && !/failed|no file changed/i.test(toast), `the result says the rename was applied: ${(toast || (await toastTexts()).join(' / ') || 'none').replace(/\s+/g, ' ').slice(0, 200)}`);
      const shown = await poll(() => page.$eval('.monaco-editor .view-lines', (e) => {
        const t = e.innerText.replace(/\u00a0/g, ' ');
        return t.includes('func Welcome(') && t.includes('Welcome("world")');
      }), 10000);
      note(Boolean(shown), 'main.go in the editor holds the rename');
      const wantTest = testBefore.replace('got := Greet(', 'got := Welcome(');
      const onDisk = await poll(async () => (fs.readFileSync(testFile, 'utf8') === wantTest ? true : undefined), 15000);
      note(Boolean(onDisk), `main_test.go on disk holds the rename and nothing else (loaded by VS Code for the edit, saved by the extension): ${fs.readFileSync(testFile, 'utf8').replace(/\n/g, ' | ').slice(0, 200)}`);
      const via = agentlsLog().split('\n').some((l) => l.includes('rename_symbol') && /not applied|one file at a time/.test(l));
      note(!via, 'the server log has no refused rename');
    }
    if (want.has('mcp')) {
      await clearToasts();
      const sent = agentlsLog().split('\n').find((l) => l.includes('msg="settings at initialize"')) || '';
      note(/mcpServers=client/.test(sent), `agentls.mcpServers in the VS Code user settings reached the server: ${(/sources="[^"]*"/.exec(sent) || [sent.slice(0, 200)])[0]}`);
      await runPalette('agentls: Run task', 'journey mcp: echo through the test MCP server');
      const { toast, asked } = await untilResult('MCP-');
      await shot('30-journey-mcp');
      note(toast.includes('MCP-DONE') && toast.includes('echo: from VS Code'), `the MCP tool was called and its result is shown: ${toast.replace(/\s+/g, ' ').slice(0, 200)}${asked.length ? ` (asked: ${asked.join('; ')})` : ''}`);
    }
    if (want.has('hook')) {
      await clearToasts();
      const logFile = process.env.E2E_HOOK_LOG;
      await runPalette('agentls: Run task', 'journey hook: run echo vscode-journey-logged');
      const { toast, asked } = await untilResult('HOOK-');
      await shot('31-journey-hook');
      note(toast.includes('HOOK-DONE'), `the command ran (the hook blocked nothing): ${toast.replace(/\s+/g, ' ').slice(0, 200)}${asked.length ? ` (asked: ${asked.join('; ')})` : ''}`);
      let logged = '';
      try {
        logged = fs.readFileSync(logFile, 'utf8');
      } catch (err) {
        logged = String(err);
      }
      note(logged.split('\n').includes('echo vscode-journey-logged'), `Claude Code's logging hook wrote the command to ${logFile}: ${JSON.stringify(logged.slice(0, 200))}`);
    }
    if (want.has('command')) {
      await clearToasts();
      await palette('agentls: Run custom command');
      await page.keyboard.press('Enter');
      const picked = await poll(async () => {
        const rows = await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\s+/g, ' ')));
        return rows.find((r) => r.includes('/review')) ? rows : undefined;
      }, 20000);
      note(Boolean(picked), `the picker lists .agentls/commands/review.md as /review: ${(picked || []).join(' | ').slice(0, 200)}`);
      await page.keyboard.type('/review', { delay: 10 });
      await poll(async () => (await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText))).some((t) => t.includes('/review')), 5000);
      await page.keyboard.press('Enter');
      const box = await poll(async () => {
        const t = await page.$eval('.quick-input-widget', (e) => (e.style.display === 'none' ? '' : e.innerText)).catch(() => '');
        return t.includes('<files>') ? t : undefined;
      }, 10000);
      note(Boolean(box), `the command's argument hint is asked for: ${(box || '').replace(/\s+/g, ' ').slice(0, 120)}`);
      await page.keyboard.type('main.go', { delay: 10 });
      await page.keyboard.press('Enter');
      const { toast } = await untilResult('COMMAND-');
      await shot('32-journey-command');
      note(toast.includes('COMMAND-DONE'), `/review main.go reached the model as the file's text with its argument: ${toast.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
    if (want.has('renamego')) {
      // After rename: with a Go rename provider in the editor (a stand-in
      // for the Go extension, test/e2e/go-standin-ext), the forwarded
      // rename is answered by the editor, and applies to both files with
      // main_test.go closed.
      await clearToasts();
      await palette('agentls e2e: Enable the Go stand-in');
      await page.keyboard.press('Enter');
      const goLog = process.env.E2E_GO_LOG;
      const on = await poll(async () => (fs.existsSync(goLog) && fs.readFileSync(goLog, 'utf8').includes('enabled')) || undefined, 10000);
      note(Boolean(on), 'the Go stand-in extension registered its rename provider');
      await openMain();
      const testFile = path.join(ws, 'main_test.go');
      const testBefore = fs.readFileSync(testFile, 'utf8');
      note(!(await tabTitles()).some((t) => t.includes('main_test.go')), 'main_test.go (the caller) is not open in the editor');
      await runPalette('agentls: Run task', 'Rename Welcome back to Greet everywhere');
      const { toast, asked } = await untilResult('RENAMEGO-');
      await shot('33-journey-rename-go-extension');
      note(toast.includes('RENAMEGO-DONE'), `the result says the rename was applied: ${toast.replace(/\s+/g, ' ').slice(0, 200)}${asked.length ? ` (asked: ${asked.join('; ')})` : ''}`);
      const answered = fs.existsSync(goLog) ? fs.readFileSync(goLog, 'utf8') : '';
      note(/rename Welcome -> Greet: \d+ places in 2 files/.test(answered), `the editor's Go rename provider answered the forwarded rename: ${JSON.stringify(answered.trim())}`);
      const shown = await poll(() => page.$eval('.monaco-editor .view-lines', (e) => {
        const t = e.innerText.replace(/\u00a0/g, ' ');
        // The stand-in renames code, not comments: gopls's first rename
        // changed the doc comment, which stays "// Welcome returns ...".
        return t.includes('func Greet(') && t.includes('Greet("world")') && !t.includes('func Welcome(') && !t.includes('Welcome("world")');
      }), 10000);
      note(Boolean(shown), 'main.go in the editor holds the rename');
      const wantTest = testBefore.replace('got := Welcome(', 'got := Greet(');
      const onDisk = await poll(async () => (fs.readFileSync(testFile, 'utf8') === wantTest ? true : undefined), 15000);
      note(Boolean(onDisk) && wantTest !== testBefore, `main_test.go on disk holds the rename: ${fs.readFileSync(testFile, 'utf8').replace(/\n/g, ' | ').slice(0, 200)}`);
    }
  } catch (err) {
    note(false, `driver error: ${err && err.stack ? err.stack : err}`);
    await shot('99-error').catch(() => undefined);
  } finally {
    await ctx.close().catch(() => undefined);
    fs.rmSync(profile, { recursive: true, force: true });
  }
  // The screenshots named vscode-* are the ones docs/ and README show.
  findings.push(`total ${secs()} s; ${failed} failed`);
  fs.writeFileSync(path.join(art, 'findings.txt'), findings.join('\n') + '\n');
  process.exit(failed > 0 ? 1 : 0);
}

main();
