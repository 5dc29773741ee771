#!/usr/bin/env node
// standin-server.js: a small stdio language server that speaks the public
// contract of agentls (issue 7: agentls.run/cancel/tasks/showReport, the
// "Ask agent about" code action, $/progress with the plan checklist,
// workspace/applyEdit, showMessage fallback) with scripted, model-free
// behaviour. It exists so the editor integrations in editors/ can be tested
// end to end in real editors before (and independently of) the real server.
// It is a test double, never shipped: the real-server variants of the same
// tests are in editors/*/test/ and scripts/e2e.d/*.pending.
//
// Behaviour, chosen by the prompt text:
//   - every task: progress "agentls: <first words>", a 3-item plan checklist
//     ([>] / [x] / [ ]), STANDIN_STEP_MS (default 150) between steps;
//   - mode "edit" with a uri: one workspace/applyEdit inserting the line
//     "// agentls: <prompt>" at the top of that document;
//   - a prompt containing "slow": 3 s per step (for cancel tests);
//   - the end: window/showMessage with the summary, then the reply.
// Environment: STANDIN_LOG=FILE appends one JSON line per event (what the
// client sent, never the API key: only whether one was present).
'use strict';

const fs = require('fs');

const logFile = process.env.STANDIN_LOG || '';
const stepMs = Number(process.env.STANDIN_STEP_MS || 150);

function record(ev) {
  if (!logFile) return;
  fs.appendFileSync(logFile, JSON.stringify(ev) + '\n');
}

record({ event: 'start', apiKeyPresent: Boolean(process.env.OPENAI_API_KEY), argv: process.argv.slice(2) });

// ---- JSON-RPC framing ----
let buf = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const sep = buf.indexOf('\r\n\r\n');
    if (sep < 0) return;
    const header = buf.slice(0, sep).toString('ascii');
    const m = /Content-Length:\s*(\d+)/i.exec(header);
    if (!m) { buf = buf.slice(sep + 4); continue; }
    const len = Number(m[1]);
    if (buf.length < sep + 4 + len) return;
    const body = buf.slice(sep + 4, sep + 4 + len).toString('utf8');
    buf = buf.slice(sep + 4 + len);
    let msg;
    try { msg = JSON.parse(body); } catch (e) { continue; }
    dispatch(msg);
  }
});
process.stdin.on('end', () => process.exit(0));

function send(msg) {
  msg.jsonrpc = '2.0';
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}
const reply = (id, result) => send({ id, result: result === undefined ? null : result });
const replyError = (id, code, message) => send({ id, error: { code, message } });
const notify = (method, params) => send({ method, params });

let nextId = 1;
const pending = new Map();
function request(method, params, timeoutMs) {
  const id = `s${nextId++}`;
  send({ id, method, params });
  return new Promise((resolve) => {
    const timer = timeoutMs ? setTimeout(() => { pending.delete(id); resolve({ timeout: true }); }, timeoutMs) : null;
    pending.set(id, (m) => { if (timer) clearTimeout(timer); resolve(m); });
  });
}

// ---- state ----
let clientCaps = {};
const docs = new Map(); // uri -> {text, version}
const tasks = new Map(); // taskId -> task
let taskSeq = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const COMMANDS = ['agentls.run', 'agentls.cancel', 'agentls.tasks', 'agentls.showReport'];

function dispatch(msg) {
  if (msg.method === undefined) { // a response to one of our requests
    const cb = pending.get(msg.id);
    if (cb) { pending.delete(msg.id); cb(msg); }
    return;
  }
  const p = msg.params || {};
  switch (msg.method) {
    case 'initialize':
      clientCaps = p.capabilities || {};
      record({
        event: 'initialize',
        clientName: (p.clientInfo && p.clientInfo.name) || '',
        workDoneProgress: Boolean(clientCaps.window && clientCaps.window.workDoneProgress),
        applyEdit: Boolean(clientCaps.workspace && clientCaps.workspace.applyEdit),
        initializationOptions: p.initializationOptions === undefined ? null : p.initializationOptions,
      });
      return reply(msg.id, {
        capabilities: {
          textDocumentSync: { openClose: true, change: 1 },
          codeActionProvider: true,
          executeCommandProvider: { commands: COMMANDS },
        },
        serverInfo: { name: 'agentls-standin', version: '0' },
      });
    case 'initialized':
      return record({ event: 'initialized' });
    case 'shutdown':
      record({ event: 'shutdown' });
      return reply(msg.id, null);
    case 'exit':
      record({ event: 'exit' });
      return process.exit(0);
    case 'workspace/didChangeConfiguration':
      return record({ event: 'didChangeConfiguration', settings: p.settings === undefined ? null : p.settings });
    case 'textDocument/didOpen':
      docs.set(p.textDocument.uri, { text: p.textDocument.text, version: p.textDocument.version });
      return record({ event: 'didOpen', uri: p.textDocument.uri });
    case 'textDocument/didChange': {
      const d = docs.get(p.textDocument.uri) || { text: '', version: 0 };
      for (const c of p.contentChanges) {
        if (!c.range) d.text = c.text; // full sync is what we advertise
      }
      d.version = p.textDocument.version;
      docs.set(p.textDocument.uri, d);
      return;
    }
    case 'textDocument/didClose':
      docs.delete(p.textDocument.uri);
      return;
    case 'textDocument/codeAction':
      return reply(msg.id, codeActions(p));
    case 'workspace/executeCommand':
      return executeCommand(msg.id, p);
    case '$/cancelRequest':
      for (const t of tasks.values()) if (t.requestId === p.id) cancelTask(t, '$/cancelRequest');
      return;
    case 'window/workDoneProgress/cancel':
      for (const t of tasks.values()) if (t.token === p.token) cancelTask(t, 'window/workDoneProgress/cancel');
      return;
    default:
      if (msg.id !== undefined) replyError(msg.id, -32601, `method not found: ${msg.method}`);
  }
}

// ---- code actions ----
function lineAt(text, n) { return (text.split('\n')[n] || ''); }
function symbolAt(text, pos) {
  const line = lineAt(text, pos.line);
  const re = /[A-Za-z_][A-Za-z0-9_]*/g;
  let m;
  while ((m = re.exec(line)) !== null) {
    if (m.index <= pos.character && pos.character <= m.index + m[0].length) return m[0];
  }
  return '';
}
function codeActions(p) {
  const d = docs.get(p.textDocument.uri);
  if (!d) return [];
  const out = [];
  const sym = symbolAt(d.text, p.range.start);
  const empty = p.range.start.line === p.range.end.line && p.range.start.character === p.range.end.character;
  if (sym) {
    const title = `Ask agent about \`${sym}\``;
    out.push({ title, kind: 'quickfix', command: { title, command: 'agentls.run', arguments: [{ prompt: `What does \`${sym}\` do?`, mode: 'ask', uri: p.textDocument.uri, range: p.range }] } });
  }
  if (!empty) {
    const title = 'Explain selection with agent';
    out.push({ title, kind: 'quickfix', command: { title, command: 'agentls.run', arguments: [{ prompt: 'Explain the selected code.', mode: 'ask', uri: p.textDocument.uri, range: p.range }] } });
  }
  return out;
}

// ---- commands ----
function executeCommand(id, p) {
  const args = Array.isArray(p.arguments) ? p.arguments : [];
  const a = args[0];
  switch (p.command) {
    case 'agentls.run':
      if (!a || typeof a !== 'object' || typeof a.prompt !== 'string' || a.prompt.trim() === '') {
        return replyError(id, -32602, 'agentls.run expects one argument {"prompt": string, "mode"?: "ask"|"edit", "uri"?, "range"?}');
      }
      record({ event: 'run', args: a, workDoneToken: p.workDoneToken === undefined ? null : p.workDoneToken });
      runTask(id, a, p.workDoneToken);
      return;
    case 'agentls.cancel': {
      const t = a && tasks.get(a.taskId);
      if (!t) return replyError(id, -32602, 'agentls.cancel expects {"taskId"} of a known task');
      cancelTask(t, 'agentls.cancel');
      return reply(id, { taskId: t.id, state: t.state });
    }
    case 'agentls.tasks':
      return reply(id, { tasks: [...tasks.values()].map((t) => ({ id: t.id, prompt: t.prompt, state: t.state, progress: `${t.done}/${t.plan.length}`, started: t.started, duration: (Date.now() - Date.parse(t.started)) / 1000 })) });
    case 'agentls.showReport': {
      const t = a && tasks.get(a.taskId);
      if (!t) return replyError(id, -32602, 'agentls.showReport expects {"taskId"} of a known task');
      return reply(id, { taskId: t.id, report: null, markdown: t.report });
    }
    default:
      return replyError(id, -32602, `unknown command ${p.command}; expected one of ${COMMANDS.join(', ')}`);
  }
}

function cancelTask(t, route) {
  if (t.state !== 'running') return;
  record({ event: 'cancel', taskId: t.id, route });
  t.cancelled = true;
  if (t.wake) t.wake();
}

function checklist(plan, done, current) {
  return plan.map((item, i) => `${i < done ? '[x]' : i === current ? '[>]' : '[ ]'} ${item}`).join('\n');
}

async function runTask(requestId, args, clientToken) {
  const id = `t${++taskSeq}`;
  const words = args.prompt.trim().split(/\s+/).slice(0, 5).join(' ');
  const file = args.uri ? decodeURIComponent(args.uri.replace(/^file:\/\//, '')).split('/').pop() : 'workspace';
  const plan = [`Read ${file}`, args.mode === 'edit' ? `Edit ${file}` : 'Think', 'Check the result'];
  const t = { id, requestId, prompt: args.prompt, state: 'running', plan, done: 0, started: new Date().toISOString(), cancelled: false, token: clientToken, report: '' };
  tasks.set(id, t);
  const useProgress = Boolean(clientCaps.window && clientCaps.window.workDoneProgress);
  const stepDelay = /slow/i.test(args.prompt) ? 3000 : stepMs;
  const wait = (ms) => new Promise((r) => { t.wake = r; setTimeout(r, ms); });

  if (useProgress && t.token === undefined) {
    t.token = `agentls-${id}`;
    const res = await request('window/workDoneProgress/create', { token: t.token }, 1000);
    if (res.timeout || res.error) t.token = undefined;
  }
  const progress = (value) => { if (t.token !== undefined) notify('$/progress', { token: t.token, value }); };
  const title = `agentls: ${words}`;
  if (t.token !== undefined) {
    progress({ kind: 'begin', title, cancellable: true, message: checklist(plan, 0, 0), percentage: 0 });
  } else {
    notify('window/showMessage', { type: 3, message: `${title}: started` });
  }

  const edits = [];
  for (let i = 0; i < plan.length && !t.cancelled; i++) {
    progress({ kind: 'report', message: `${plan[i].toLowerCase()}\n${checklist(plan, i, i)}`, percentage: Math.round((100 * i) / plan.length) });
    await wait(stepDelay);
    if (t.cancelled) break;
    if (i === 1 && args.mode === 'edit' && args.uri && clientCaps.workspace && clientCaps.workspace.applyEdit) {
      const d = docs.get(args.uri);
      const change = { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: `// agentls: ${args.prompt}\n` };
      const edit = d ? { documentChanges: [{ textDocument: { uri: args.uri, version: d.version }, edits: [change] }] } : { changes: { [args.uri]: [change] } };
      const res = await request('workspace/applyEdit', { label: `agentls: ${words}`, edit });
      const applied = Boolean(res.result && res.result.applied);
      record({ event: 'applyEdit', applied });
      if (applied) edits.push(file);
    }
    t.done = i + 1;
  }

  t.state = t.cancelled ? 'cancelled' : 'completed';
  const answer = args.mode === 'edit' ? '' : `stand-in answer to: ${args.prompt}`;
  const summary = t.cancelled ? `cancelled after ${t.done} of ${plan.length} steps` : (args.mode === 'edit' ? `edited ${edits.length} file(s)` : answer);
  t.report = `# ${title}\n\n${summary}\n\n${checklist(plan, t.done, -1)}\n`;
  progress({ kind: 'end', message: `${summary}\n${checklist(plan, t.done, -1)}` });
  notify('window/showMessage', { type: t.cancelled ? 2 : 3, message: `${title}: ${t.state}: ${summary}` });
  record({ event: 'end', taskId: id, status: t.state });
  reply(requestId, {
    taskId: id, status: t.state, summary, answer, changedFiles: edits, stopReason: t.cancelled ? 'cancelled' : 'done',
    llmCalls: 0, usage: { inputTokens: 0, outputTokens: 0, cachedTokens: 0 },
  });
}
