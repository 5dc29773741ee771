// Unit tests of the pure half of the extension (node --test, no VS Code).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  ProgressTracker,
  buildRunArgs,
  compactMessage,
  guessMode,
  parsePlan,
  parseTasks,
  redact,
  reportTarget,
  resultView,
  serverEnv,
  serverSettings,
  taskTitle,
} from '../src/contract';

test('guessMode: questions ask, changes edit', () => {
  const cases: [string, 'ask' | 'edit'][] = [
    ['What does ParseConfig do?', 'ask'],
    ['why is this slow', 'ask'],
    ['Explain the retry loop', 'ask'],
    ['How do I fix this error?', 'ask'],
    ['Fix the failing test', 'edit'],
    ['Rename Foo to Bar', 'edit'],
    ['add a doc comment to Run', 'edit'],
    ['Can you fix the nil check?', 'edit'],
    ['Explain and then rewrite the loop', 'edit'],
  ];
  for (const [prompt, want] of cases) {
    assert.equal(guessMode(prompt), want, `guessMode(${JSON.stringify(prompt)})`);
  }
});

test('buildRunArgs: contract shape', () => {
  const range = { start: { line: 3, character: 4 }, end: { line: 3, character: 9 } };
  const cases = [
    { name: 'prompt only', in: { prompt: '  fix it  ' }, want: { prompt: 'fix it', mode: 'edit' } },
    { name: 'explicit mode kept', in: { prompt: 'fix it', mode: 'ask' as const }, want: { prompt: 'fix it', mode: 'ask' } },
    { name: 'uri and range', in: { prompt: 'what is x?', uri: 'file:///w/a.go', range }, want: { prompt: 'what is x?', mode: 'ask', uri: 'file:///w/a.go', range } },
    { name: 'range without uri dropped', in: { prompt: 'what is x?', range }, want: { prompt: 'what is x?', mode: 'ask' } },
    { name: 'followUp', in: { prompt: 'use wc -l', followUp: 't7' }, want: { prompt: 'use wc -l', mode: 'edit', followUp: 't7' } },
  ];
  for (const c of cases) {
    const got = buildRunArgs(c.in);
    assert.deepEqual(got, c.want, c.name);
    assert.ok(!Object.values(got).includes(undefined), `${c.name}: no undefined fields (they would be sent as null by some encoders)`);
  }
  // The range is copied, not shared with the editor's selection object.
  const got = buildRunArgs({ prompt: 'x?', uri: 'file:///a', range });
  assert.notEqual(got.range, range);
});

test('buildRunArgs: rejects what the server would reject', () => {
  assert.throws(() => buildRunArgs({ prompt: '   ' }), /prompt is required/);
  assert.throws(() => buildRunArgs({ prompt: 'x', uri: 'file:///a', range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } } }), /non-negative/);
  assert.throws(() => buildRunArgs({ prompt: 'x', uri: 'file:///a', range: { start: { line: 0.5, character: 0 }, end: { line: 0, character: 0 } } }), /integers/);
});

test('serverSettings: empty values omitted, approval safe, no key', () => {
  const cases = [
    { in: {}, want: { apiKeyEnv: 'OPENAI_API_KEY', approval: 'ask' } },
    { in: { model: ' gpt-4o ', baseURL: 'http://127.0.0.1:8080/v1', approval: 'auto', allowCommands: ['go test', ' ', 3, 'go build'], checkCommand: 'go vet ./...' },
      want: { apiKeyEnv: 'OPENAI_API_KEY', model: 'gpt-4o', baseURL: 'http://127.0.0.1:8080/v1', approval: 'auto', allowCommands: ['go test', 'go build'], checkCommand: 'go vet ./...' } },
    { in: { approval: 'yolo', model: '' }, want: { apiKeyEnv: 'OPENAI_API_KEY', approval: 'ask' } },
    { in: { approval: 'deny', allowCommands: 'go test' }, want: { apiKeyEnv: 'OPENAI_API_KEY', approval: 'deny' } },
  ];
  for (const c of cases) {
    assert.deepEqual(serverSettings(c.in), c.want, JSON.stringify(c.in));
  }
});

test('serverEnv: key in the child environment only', () => {
  const base = { PATH: '/usr/bin', EMPTY: undefined };
  const env = serverEnv(base, 'sk-secret');
  assert.equal(env.OPENAI_API_KEY, 'sk-secret');
  assert.equal(env.PATH, '/usr/bin');
  assert.ok(!('EMPTY' in env));
  assert.ok(!('OPENAI_API_KEY' in base), 'base environment not modified');
  assert.ok(!('OPENAI_API_KEY' in serverEnv(base, undefined)));
  assert.equal(serverEnv({ OPENAI_API_KEY: 'from-shell' }, undefined).OPENAI_API_KEY, 'from-shell', 'no stored key: the inherited one stays');
});

test('redact', () => {
  assert.equal(redact('key=sk-abcdef and sk-abcdef', 'sk-abcdef'), 'key=*** and ***');
  assert.equal(redact('nothing', undefined), 'nothing');
});

test('resultView: one notification per status', () => {
  const cases = [
    { in: { taskId: 't1', status: 'completed' as const, summary: 'renamed Foo', changedFiles: ['a.go'] }, sev: 'info', msg: 'agentls: renamed Foo (changed: a.go)' },
    { in: { taskId: 't1', status: 'completed' as const, answer: 'It parses.' }, sev: 'info', msg: 'agentls: It parses.' },
    { in: { taskId: 't2', status: 'cancelled' as const }, sev: 'warning', msg: 'agentls: task cancelled' },
    { in: { taskId: 't3', status: 'failed' as const, stopReason: 'max_calls' }, sev: 'error', msg: 'agentls: task failed: max_calls' },
    // The real server's summaries start with the status: not said twice.
    { in: { taskId: 't4', status: 'cancelled' as const, summary: 'cancelled after 600ms [1 model calls, 0 tokens]' }, sev: 'warning', msg: 'agentls: task cancelled after 600ms [1 model calls, 0 tokens]' },
    { in: { taskId: 't5', status: 'failed' as const, summary: 'failed after 3s: the API key was rejected (401)' }, sev: 'error', msg: 'agentls: task failed after 3s: the API key was rejected (401)' },
  ];
  for (const c of cases) {
    const v = resultView(c.in);
    assert.equal(v.severity, c.sev);
    assert.equal(v.message, c.msg);
  }
});

test('parsePlan and compactMessage read the [x]/[ ]/[-]/[>] checklist', () => {
  const msg = 'reading lsp/server.go\n[x] Find the handler\n[-] Ask the user\n[>] Edit server.go\n[ ] Run go test';
  const { doing, plan } = parsePlan(msg);
  assert.equal(doing, 'reading lsp/server.go');
  assert.deepEqual(plan.map((p) => p.state), ['done', 'skipped', 'active', 'todo']);
  assert.equal(plan[2].text, 'Edit server.go');
  assert.equal(compactMessage(msg), 'reading lsp/server.go · [x] Find the handler  [-] Ask the user  [>] Edit server.go  [ ] Run go test');
});

test('ProgressTracker: absolute percentages become increments, never backwards', () => {
  const t = new ProgressTracker();
  const steps = [
    t.update({ kind: 'begin', title: 'agentls: fix it', percentage: 0, message: '[>] A\n[ ] B' }),
    t.update({ kind: 'report', percentage: 50, message: 'editing a.go\n[x] A\n[>] B' }),
    t.update({ kind: 'report', percentage: 40 }),
    t.update({ kind: 'end', message: 'done' }),
  ];
  assert.deepEqual(steps.map((s) => s.increment), [undefined, 50, undefined, 50]);
  assert.equal(t.title, 'agentls: fix it');
  assert.equal(t.percentage, 100);
  assert.ok(t.done);
  const t2 = new ProgressTracker();
  t2.update({ kind: 'report', message: 'running go test ./...\n[x] Edit\n[>] Check' });
  assert.equal(t2.statusText(), 'agentls 1/2: running go test ./...');
});

test('parseTasks: list or {tasks}, tolerant field shapes', () => {
  const one = { id: 't1', prompt: 'fix', state: 'running', progress: { done: 1, total: 3 }, started: '2026-01-01T00:00:00Z', duration: 2500 };
  for (const reply of [[one], { tasks: [one] }]) {
    const got = parseTasks(reply);
    assert.equal(got.length, 1);
    assert.deepEqual(got[0], { id: 't1', prompt: 'fix', state: 'running', progress: '1/3', started: '2026-01-01T00:00:00Z', duration: '2.5 s' });
  }
  assert.deepEqual(parseTasks(null), []);
  assert.deepEqual(parseTasks([{ prompt: 'no id' }]), []);
  assert.equal(parseTasks([{ taskId: 't2', status: 'completed', duration: 90000 }])[0].duration, '1 min 30 s');
});

test('parseTasks reads the agentls.tasks reply of the real server (plan, duration in ms)', () => {
  const reply = [
    { id: 'ab12-1', prompt: 'Add a header comment', mode: 'edit', state: 'completed', plan: { done: 2, total: 2, items: ['[x] A', '[-] B'] }, started: '2026-11-22T03:58:50Z', duration: 66 },
    { id: 'ab12-2', prompt: 'What does Greet do?', mode: 'ask', state: 'running', plan: { done: 0, total: 0, items: null }, started: '2026-11-22T03:58:51Z', duration: 1500 },
  ];
  const got = parseTasks(reply);
  assert.deepEqual(got.map((t) => [t.id, t.state, t.progress, t.duration]), [
    ['ab12-1', 'completed', '2/2', '0.1 s'],
    ['ab12-2', 'running', '', '1.5 s'],
  ]);
});

test('reportTarget', () => {
  assert.deepEqual(reportTarget('file:///w/.agentls/tasks/t1.md'), { uri: 'file:///w/.agentls/tasks/t1.md' });
  assert.deepEqual(reportTarget({ report: 'file:///r.md' }), { uri: 'file:///r.md' });
  assert.deepEqual(reportTarget({ markdown: '# t1' }), { markdown: '# t1' });
  assert.deepEqual(reportTarget('# t1\nbody'), { markdown: '# t1\nbody' });
  assert.deepEqual(reportTarget(null), {});
});

test('taskTitle follows the server title', () => {
  assert.equal(taskTitle('rename Foo to Bar'), 'agentls: rename Foo to Bar');
  assert.equal(taskTitle('a b c d e f g h'), 'agentls: a b c d e f …');
});
