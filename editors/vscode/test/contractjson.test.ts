// The extension's copy of the contract (src/contract.ts) checked against
// editors/contract.json, which the server's declarations generate
// (go test ./lsp -run TestContractJSON -update). A command, argument or
// request renamed on either side fails here.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  RunArgs,
  RunResult,
  ServerCommand,
  ServerNotification,
  ServerRequest,
  experimentalCapabilities,
  TaskIdArgs,
  buildRunArgs,
  executePlanArgs,
  taskArgs,
  Inspected,
  passThroughSettings,
  refusedSettings,
  serverSettings,
  setValue,
  userOnlySettings,
} from '../src/contract';

interface Field { name: string; required: boolean }
interface Shape { type: string; fields?: Field[] }
interface Contract {
  commands: { name: string; arguments: Shape; reply: Shape }[];
  clientRequests: { method: string }[];
  clientNotifications: { method: string; capability: string }[];
}

/** What the extension sends: per command the argument keys, the reply keys it reads, the requests it answers. */
interface Use {
  commands: Record<string, { args: string[]; reply?: string[] }>;
  requests: string[];
  /** The notifications it takes, and the capabilities it declares (dotted paths). */
  notifications: string[];
  capabilities: string[];
}

const contract: Contract = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'contract.json'), 'utf8'));

// Record<keyof T, true> makes tsc list every key of T here, and no other:
// a field renamed in contract.ts no longer compiles until this follows.
const runArgKeys: Record<keyof RunArgs, true> = { prompt: true, mode: true, uri: true, range: true, followUp: true };
const taskIdArgKeys: Record<keyof TaskIdArgs, true> = { taskId: true };
const runResultKeys: Record<keyof RunResult, true> = {
  taskId: true, status: true, summary: true, answer: true, changedFiles: true, stopReason: true,
  llmCalls: true, usage: true, report: true, mode: true, plan: true, plannedFiles: true,
};
const argKeysOf: Record<keyof typeof ServerCommand, string[]> = {
  run: Object.keys(runArgKeys),
  cancel: Object.keys(taskIdArgKeys),
  tasks: [],
  showReport: Object.keys(taskIdArgKeys),
  result: Object.keys(taskIdArgKeys),
  resume: Object.keys(taskIdArgKeys),
  undo: Object.keys(taskIdArgKeys),
  prompts: [],
  tools: [],
};

/** extensionUse is what contract.ts declares and builds. */
function extensionUse(): Use {
  const commands: Use['commands'] = {};
  for (const [k, name] of Object.entries(ServerCommand) as [keyof typeof ServerCommand, string][]) {
    commands[name] = { args: [...argKeysOf[k]] };
  }
  // What the builders actually produce, not only what the types say.
  const built = buildRunArgs({ prompt: 'p', mode: 'edit', uri: 'file:///a.go', range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, followUp: 't1' });
  commands[ServerCommand.run].args.push(...Object.keys(built), ...Object.keys(executePlanArgs('t1')));
  for (const k of ['cancel', 'showReport', 'result', 'resume', 'undo'] as const) {
    commands[ServerCommand[k]].args.push(...Object.keys(taskArgs('t1')));
  }
  for (const k of ['run', 'resume', 'result'] as const) {
    commands[ServerCommand[k]].reply = Object.keys(runResultKeys).filter((f) => k !== 'result' || ['taskId', 'status', 'summary', 'answer', 'changedFiles', 'report'].includes(f));
  }
  const capabilities: string[] = [];
  const walk = (o: object, at: string): void => {
    for (const [k, v] of Object.entries(o)) {
      if (v && typeof v === 'object') walk(v, `${at}.${k}`);
      else if (v === true) capabilities.push(`${at}.${k}`);
    }
  };
  walk(experimentalCapabilities, 'experimental');
  return { commands, requests: Object.values(ServerRequest), notifications: Object.values(ServerNotification), capabilities };
}

/**
 * contractProblems compares a use with the contract: commands, argument
 * keys, reply keys and requests the contract does not have, required
 * arguments not sent, requests not answered.
 */
function contractProblems(c: Contract, use: Use): string[] {
  const out: string[] = [];
  for (const [name, u] of Object.entries(use.commands)) {
    const cmd = c.commands.find((x) => x.name === name);
    if (!cmd) {
      out.push(`command ${name} is not in the contract`);
      continue;
    }
    const fields = cmd.arguments.fields ?? [];
    for (const k of new Set(u.args)) {
      if (!fields.some((f) => f.name === k)) out.push(`${name}: argument "${k}" is not in the contract`);
    }
    for (const f of fields) {
      if (f.required && !u.args.includes(f.name)) out.push(`${name}: the required argument "${f.name}" is never sent`);
    }
    for (const k of u.reply ?? []) {
      if (!(cmd.reply.fields ?? []).some((f) => f.name === k)) out.push(`${name}: reply field "${k}" is not in the contract`);
    }
  }
  for (const m of use.requests) {
    if (!c.clientRequests.some((r) => r.method === m)) out.push(`request ${m} is not in the contract`);
  }
  for (const r of c.clientRequests) {
    if (!use.requests.includes(r.method)) out.push(`request ${r.method} is not answered`);
  }
  for (const m of use.notifications) {
    if (!c.clientNotifications.some((n) => n.method === m)) out.push(`notification ${m} is not in the contract`);
  }
  for (const n of c.clientNotifications) {
    if (!use.notifications.includes(n.method)) out.push(`notification ${n.method} is not taken`);
    if (!use.capabilities.includes(n.capability)) out.push(`notification ${n.method}: capability ${n.capability} is not declared`);
  }
  return out;
}

test('contract.ts matches contract.json', (t) => {
  const use = extensionUse();
  assert.deepEqual(contractProblems(contract, use), []);
  const unused = contract.commands.map((c) => c.name).filter((n) => !(n in use.commands));
  if (unused.length > 0) t.diagnostic(`not used by the extension (allowed): ${unused.join(', ')}`);
});

test('the contract check fails on a wrong copy', () => {
  const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
  const renamedPrompt = clone(contract);
  for (const f of renamedPrompt.commands.find((c) => c.name === 'agentls.run')?.arguments.fields ?? []) {
    if (f.name === 'prompt') f.name = 'text';
  }
  const cases: [string, (u: Use) => Use, Contract, string][] = [
    ['a renamed command', (u) => ({ ...u, commands: { ...u.commands, 'agentls.showReports': { args: ['taskId'] } } }), contract, 'command agentls.showReports is not in the contract'],
    ['a renamed argument', (u) => { u.commands['agentls.undo'].args = ['taskID']; return u; }, contract, 'agentls.undo: argument "taskID" is not in the contract'],
    ['a missing required argument', (u) => { u.commands['agentls.cancel'].args = []; return u; }, contract, 'agentls.cancel: the required argument "taskId" is never sent'],
    ['a renamed reply field', (u) => { u.commands['agentls.run'].reply = ['taskID']; return u; }, contract, 'agentls.run: reply field "taskID" is not in the contract'],
    ['a renamed request', (u) => ({ ...u, requests: ['agentls/saveDocument', 'agentls/diagnostics'] }), contract, 'request agentls/saveDocument is not in the contract'],
    ['a request not answered', (u) => ({ ...u, requests: ['agentls/saveDocuments'] }), contract, 'request agentls/diagnostics is not answered'],
    ['a renamed notification', (u) => ({ ...u, notifications: ['agentls/answers'] }), contract, 'notification agentls/answers is not in the contract'],
    ['a capability not declared', (u) => ({ ...u, capabilities: [] }), contract, 'notification agentls/answer: capability experimental.agentls.answerStream is not declared'],
    ['an argument renamed in the contract', (u) => u, renamedPrompt, 'agentls.run: argument "prompt" is not in the contract'],
  ];
  for (const [what, change, c, want] of cases) {
    const problems = contractProblems(c, change(extensionUse()));
    assert.ok(problems.includes(want), `${what}: problems ${JSON.stringify(problems)}; want ${want}`);
  }
});

// Every setting of the server's schema (editors/contract.json "settings")
// is declared in package.json with the schema's JSON type, and forwarded:
// user-only settings from the user's own value, the others as set. A
// setting added to the server and not to the extension fails here.
interface ContractSetting { name: string; type: string }
interface Declared { type?: string | string[]; scope?: string }

/** The settings the extension reads and forwards otherwise than by the two lists (model: as set; review: the strictest). */
const forwardedApart = ['model', 'review'];
/** The extension's own settings, never sent to the server. */
const extensionOnly = ['path', 'openAnswer'];

function settingProblems(schema: ContractSetting[], props: Record<string, Declared>): string[] {
  const problems: string[] = [];
  const forwarded = new Set<string>([...userOnlySettings, ...passThroughSettings, ...forwardedApart]);
  for (const s of schema) {
    const p = props[`agentls.${s.name}`];
    if (!p) {
      problems.push(`agentls.${s.name} is not declared in package.json`);
      continue;
    }
    const declared = Array.isArray(p.type) ? p.type.join('|') : p.type;
    if (declared !== s.type) problems.push(`agentls.${s.name} is declared ${declared}; the schema says ${s.type}`);
    if (!forwarded.has(s.name)) problems.push(`agentls.${s.name} is declared but never sent to the server`);
  }
  const known = new Set(schema.map((s) => s.name));
  for (const key of Object.keys(props)) {
    const name = key.replace(/^agentls\./, '');
    if (!known.has(name) && !extensionOnly.includes(name)) problems.push(`${key} is not a setting of the server`);
  }
  for (const key of userOnlySettings) {
    // "machine" is refused in a remote window (code-server, Remote-SSH,
    // WSL, dev containers) when set in the user settings; "application"
    // is read from the user settings wherever VS Code runs, and never
    // from a workspace's.
    const p = props[`agentls.${key}`];
    if (p && p.scope !== 'application') problems.push(`agentls.${key} is scoped ${p.scope}; want application`);
  }
  for (const key of passThroughSettings) {
    const p = props[`agentls.${key}`];
    if (p && 'default' in p) problems.push(`agentls.${key} declares a default, which would hide the user settings file's value`);
  }
  return problems;
}

const schema = (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'contract.json'), 'utf8')) as { settings: ContractSetting[] }).settings;
const props = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { contributes: { configuration: { properties: Record<string, Declared> } } }).contributes.configuration.properties;

test('package.json declares and the extension forwards every setting of the schema', () => {
  assert.ok(schema.length >= 28, `the schema has ${schema.length} settings`);
  assert.deepEqual(settingProblems(schema, props), []);
});

test('the settings check fails on a drift', () => {
  const without = { ...props };
  delete without['agentls.mcpServers'];
  const cases: [string, ContractSetting[], Record<string, Declared>, string][] = [
    ['a setting added to the server', [...schema, { name: 'newSetting', type: 'string' }], props, 'agentls.newSetting is not declared in package.json'],
    ['a setting not declared', schema, without, 'agentls.mcpServers is not declared in package.json'],
    ['a wrong type', schema, { ...props, 'agentls.maxTurns': { type: 'string' } }, 'agentls.maxTurns is declared string; the schema says number'],
    ['a machine scope', schema, { ...props, 'agentls.mcpServers': { type: 'object', scope: 'machine' } }, 'agentls.mcpServers is scoped machine; want application'],
    ['a declared setting the server lacks', schema, { ...props, 'agentls.maxTurn': { type: 'number' } }, 'agentls.maxTurn is not a setting of the server'],
  ];
  for (const [what, sch, pr, want] of cases) {
    const problems = settingProblems(sch, pr);
    assert.ok(problems.includes(want), `${what}: problems ${JSON.stringify(problems)}; want ${want}`);
  }
});

test('serverSettings forwards every pass-through setting the user set, and none unset', () => {
  const set = Object.fromEntries(passThroughSettings.map((k) => [k, k === 'showReport' || k === 'recordings' ? false : 1]));
  const out = serverSettings({ passThrough: set });
  for (const k of passThroughSettings) assert.equal(out[k], set[k], k);
  assert.deepEqual(serverSettings({ passThrough: { maxTurns: undefined, maxTime: '' } }), { apiKeyEnv: 'OPENAI_API_KEY' });
});

test('setValue: the folder\'s, the workspace\'s, then the user\'s; never the default', () => {
  assert.equal(setValue({ defaultValue: 30 }), undefined);
  assert.equal(setValue({ defaultValue: 30, globalValue: 7 }), 7);
  assert.equal(setValue({ globalValue: 7, workspaceValue: 9 }), 9);
  assert.equal(setValue({ globalValue: 7, workspaceValue: 9, workspaceFolderValue: 11 }), 11);
});

test('refusedSettings names the user-only settings a workspace sets', () => {
  const inspected: Record<string, Inspected<unknown>> = {
    mcpServers: { globalValue: {}, workspaceValue: { x: { command: 'x' } } },
    hooks: { workspaceFolderValue: {} },
    approval: { globalValue: 'auto' },
  };
  assert.deepEqual(refusedSettings((k) => inspected[k]), ['agentls.mcpServers', 'agentls.hooks']);
  assert.deepEqual(refusedSettings(() => undefined), []);
});
