// contract.ts: the pure half of the extension. Everything here is plain data
// in, plain data out (no `vscode` import), so it is unit tested with
// `node --test`. The names are the public contract of the agentls server
// (docs/editors.md); the extension never spells them elsewhere, and
// test/contractjson.test.ts checks them against ../contract.json, which the
// server's declarations generate.

/** Server commands (workspace/executeCommand) of the agentls contract. */
export const ServerCommand = {
  run: 'agentls.run',
  cancel: 'agentls.cancel',
  tasks: 'agentls.tasks',
  showReport: 'agentls.showReport',
  result: 'agentls.result',
  resume: 'agentls.resume',
  undo: 'agentls.undo',
  prompts: 'agentls.prompts',
  tools: 'agentls.tools',
} as const;

/** Requests the server sends to the editor beyond LSP's own. */
export const ServerRequest = {
  saveDocuments: 'agentls/saveDocuments',
  diagnostics: 'agentls/diagnostics',
  lsp: 'agentls/lsp',
} as const;

/** Notifications the server sends beyond LSP's own, to clients that declare their capability. */
export const ServerNotification = {
  answer: 'agentls/answer',
} as const;

/** The client capabilities that ask for ServerNotification (capabilities.experimental). */
export const experimentalCapabilities = { agentls: { answerStream: true, requests: Object.values(ServerRequest) } };

/** agentls/answer params: the next part of a task's answer as the model writes it. */
export interface AnswerPart {
  taskId: string;
  /** To append to the parts before it (markdown, inert, redacted). */
  text: string;
  /** The task ended: no more parts; its reply follows. */
  done?: boolean;
}

/** Settings section sent in workspace/didChangeConfiguration. */
export const settingsSection = 'agentls';

/** The environment variable the server reads the API key from by default. */
export const apiKeyEnv = 'OPENAI_API_KEY';

/** validEnvName: what may name the API key's variable (agentls.apiKeyEnv). */
export function validEnvName(name: unknown): name is string {
  return typeof name === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}

export type Mode = 'ask' | 'edit' | 'plan';

/** LSP position and range: zero-based lines, UTF-16 code units. */
export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

/** The one argument of agentls.run. */
export interface RunArgs {
  prompt: string;
  mode?: Mode;
  uri?: string;
  range?: Range;
  followUp?: string;
}

/** The argument of the commands that name one task (cancel, showReport, result, resume, undo). */
export interface TaskIdArgs {
  taskId: string;
}

/** taskArgs is the argument of a command that names task id. */
export function taskArgs(id: string): TaskIdArgs {
  return { taskId: id };
}

/** The reply of agentls.run. */
export interface RunResult {
  taskId: string;
  status: 'completed' | 'failed' | 'cancelled';
  summary?: string;
  answer?: string;
  changedFiles?: string[];
  stopReason?: string;
  llmCalls?: number;
  usage?: { inputTokens?: number; outputTokens?: number; cachedTokens?: number };
  report?: string;
  /** Plan mode: the mode the task ran in, its plan and the files it would change. */
  mode?: string;
  plan?: { items?: PlanReplyItem[] } | PlanReplyItem[];
  plannedFiles?: string[];
}

export type PlanReplyItem = { text: string; status: string };

/**
 * planItems is the plan of a reply: the contract's {items: [...]}, or the
 * bare list the server sends today (both are read, so neither side has to
 * change first).
 */
export function planItems(r: { plan?: RunResult['plan'] }): PlanReplyItem[] {
  const p = r.plan;
  if (Array.isArray(p)) return p;
  return p?.items ?? [];
}

const editVerbs = /\b(fix|add|change|rename|refactor|implement|write|remove|delete|update|replace|make|create|convert|move|extract|insert|edit|rewrite)\b/i;
const questionStart = /^(what|why|how|where|which|who|when|explain|describe|is|are|does|do|can|could|should|would|tell me|show me|list|summari[sz]e)\b/i;

/**
 * guessMode decides between "ask" and "edit" the way the contract describes:
 * "ask" when the prompt is a question and no edit is asked for.
 */
export function guessMode(prompt: string): Mode {
  const p = prompt.trim();
  const question = p.endsWith('?') || questionStart.test(p);
  if (question && !editVerbs.test(p.replace(questionStart, ''))) {
    return 'ask';
  }
  if (question && /^(how|why|what|where|which|who|when|is|are|does|do)\b/i.test(p) && p.endsWith('?')) {
    return 'ask'; // "how do I fix X?" asks for an explanation
  }
  return 'edit';
}

/** RunRequest is what a palette command or code action wants to run. */
export interface RunRequest {
  prompt: string;
  mode?: Mode;
  uri?: string;
  range?: Range;
  followUp?: string;
}

function validPosition(p: Position | undefined): boolean {
  return !!p && Number.isInteger(p.line) && Number.isInteger(p.character) && p.line >= 0 && p.character >= 0;
}

/**
 * buildRunArgs turns a request into the agentls.run argument: the prompt is
 * trimmed and required, the mode guessed when absent, a range is kept only
 * with a uri, and absent fields are omitted (never sent as null).
 */
export function buildRunArgs(req: RunRequest): RunArgs {
  const prompt = (req.prompt ?? '').trim();
  if (prompt === '') {
    throw new Error('a prompt is required');
  }
  const args: RunArgs = { prompt, mode: req.mode ?? guessMode(prompt) };
  if (req.uri) {
    args.uri = req.uri;
    if (req.range) {
      if (!validPosition(req.range.start) || !validPosition(req.range.end)) {
        throw new Error('range positions must be non-negative integers');
      }
      args.range = { start: { ...req.range.start }, end: { ...req.range.end } };
    }
  }
  if (req.followUp) {
    args.followUp = req.followUp;
  }
  return args;
}

/** Settings the extension contributes, as read from the configuration. */
export interface Settings {
  model?: string;
  baseURL?: string;
  approval?: string;
  allowCommands?: unknown;
  safeCommands?: unknown;
  allowSecretReads?: unknown;
  checkCommand?: string;
  apiKeyEnv?: string;
  sandbox?: string;
  commandNetwork?: unknown;
  mcpServers?: unknown;
  hooks?: unknown;
  languageServers?: unknown;
  review?: unknown;
  /** The passThroughSettings the user set, by name. */
  passThrough?: Record<string, unknown>;
}

/** The server-facing settings object (initializationOptions and the agentls section). */
export interface ServerSettings {
  model?: string;
  baseURL?: string;
  approval?: 'ask' | 'auto' | 'deny';
  allowCommands?: string[];
  safeCommands?: string[];
  allowSecretReads?: string[];
  checkCommand?: string;
  apiKeyEnv: string;
  sandbox?: 'workspace-write' | 'off';
  /** true, or the domains commands may reach through the allowlist proxy. */
  commandNetwork?: boolean | string[];
  /** Claude Code's .mcp.json shape: {"name": {"command", "args", "env"} | {"type": "http", "url", "headers"}}. */
  mcpServers?: Record<string, unknown>;
  /** Claude Code's hooks format, passed through for the server to check. */
  hooks?: Record<string, unknown>;
  /** Which edits wait for the user's review (docs/lsp.md, "Review before apply"). */
  review?: Review;
  languageServers?: Record<string, unknown>;
  /** passThroughSettings, as set. */
  [setting: string]: unknown;
}

/** The values of agentls.review, from the least review to the most. */
export const reviewValues = ['off', 'outside-open', 'always'] as const;
export type Review = (typeof reviewValues)[number];

/**
 * strictestReview is the value of agentls.review: the strictest of the
 * user's, the workspace's and the folder's values. Review narrows what
 * the agent may do, so a repository's .vscode/settings.json may turn it
 * on but never off (the server applies the same rule to later changes).
 */
export function strictestReview(i: Inspected<unknown> | undefined): Review | undefined {
  if (!i) return undefined;
  let best = -1;
  for (const v of [i.defaultValue, i.globalValue, i.workspaceValue, i.workspaceFolderValue]) {
    const r = reviewValues.indexOf(v as Review);
    if (r > best) best = r;
  }
  return best < 0 ? undefined : reviewValues[best];
}

/**
 * userOnlySettings are the settings that widen what the agent may do, say
 * where the API key goes, or start a program. A repository can ship
 * .vscode/settings.json (and the agent can write it), so these are declared
 * "scope": "machine" in package.json and read from the user's own settings
 * only (userValue); workspace and folder values are ignored.
 */
export const userOnlySettings = [
  'path',
  'baseURL',
  'apiKeyEnv',
  'approval',
  'allowCommands',
  'safeCommands',
  'allowSecretReads',
  'checkCommand',
  'sandbox',
  'commandNetwork',
  'mcpServers',
  'hooks',
  'languageServers',
] as const;

/**
 * passThroughSettings are the server's other settings (editors/contract.json):
 * they widen nothing, so a workspace may set them too. They are forwarded as
 * the user set them, only when set (VS Code's type default, 0 or "", would
 * hide the user settings file's value); the server checks each and names
 * what it refuses.
 */
export const passThroughSettings = [
  'logLevel',
  'validate',
  'maxTurns',
  'maxTokens',
  'maxTime',
  'contextWindow',
  'showReport',
  'maxCompletionTokens',
  'temperature',
  'extraBody',
  'azure',
  'recordings',
  'prices',
  'models',
  'completion',
] as const;

/** setValue is the value the user set for a setting anyone may set: the folder's, the workspace's or the user's; undefined when none is set. */
export function setValue<T>(i: Inspected<T> | undefined): T | undefined {
  if (!i) return undefined;
  for (const v of [i.workspaceFolderValue, i.workspaceValue, i.globalValue]) {
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

/**
 * refusedSettings names the user-only settings a workspace or folder sets:
 * the extension never applies them (a repository controls those files), and
 * says so rather than drop them silently.
 */
export function refusedSettings(inspect: (key: string) => Inspected<unknown> | undefined): string[] {
  const out: string[] = [];
  for (const key of userOnlySettings) {
    const i = inspect(key);
    if (i && (i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined)) out.push(`agentls.${key}`);
  }
  return out;
}

/** What WorkspaceConfiguration.inspect returns for one setting (the fields read here). */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * userValue is the value of a user-only setting: the user's own (global)
 * value, else the default. Workspace and workspace-folder values never
 * count, whatever VS Code's own scope rules do with them.
 */
export function userValue<T>(i: Inspected<T> | undefined): T | undefined {
  if (!i) return undefined;
  return i.globalValue !== undefined ? i.globalValue : i.defaultValue;
}

/**
 * serverSettings maps the user's settings to what the server reads. Empty
 * strings are omitted so the server keeps its own settings (the user
 * settings file, then its defaults); an approval value outside
 * ask|auto|deny falls back to "ask" (the safe choice). The API
 * key is never part of it: only the name of the variable that holds it.
 */
export function serverSettings(s: Settings): ServerSettings {
  const out: ServerSettings = { apiKeyEnv: validEnvName(s.apiKeyEnv) ? s.apiKeyEnv : apiKeyEnv };
  const str = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  if (str(s.model)) out.model = str(s.model);
  if (str(s.baseURL)) out.baseURL = str(s.baseURL);
  // Unset, the server's own (the user settings file, else "ask") stands.
  const approval = str(s.approval);
  if (approval !== '') out.approval = approval === 'auto' || approval === 'deny' ? approval : 'ask';
  if (Array.isArray(s.allowCommands)) {
    const cmds = s.allowCommands.filter((c): c is string => typeof c === 'string').map((c) => c.trim()).filter((c) => c !== '');
    if (cmds.length > 0) out.allowCommands = cmds;
  }
  if (Array.isArray(s.safeCommands)) {
    const cmds = s.safeCommands.filter((c): c is string => typeof c === 'string').map((c) => c.trim()).filter((c) => c !== '');
    if (cmds.length > 0) out.safeCommands = cmds;
  }
  if (Array.isArray(s.allowSecretReads)) {
    const globs = s.allowSecretReads.filter((c): c is string => typeof c === 'string').map((c) => c.trim()).filter((c) => c !== '');
    if (globs.length > 0) out.allowSecretReads = globs;
  }
  if (str(s.checkCommand)) out.checkCommand = str(s.checkCommand);
  // Only an explicit "off" turns the sandbox off; anything else keeps it.
  if (str(s.sandbox) === 'off') out.sandbox = 'off';
  if (s.commandNetwork === true) out.commandNetwork = true;
  else if (Array.isArray(s.commandNetwork)) {
    const domains = s.commandNetwork.filter((d): d is string => typeof d === 'string').map((d) => d.trim()).filter((d) => d !== '');
    if (domains.length > 0) out.commandNetwork = domains;
  }
  if (reviewValues.includes(s.review as Review)) out.review = s.review as Review;
  // The server checks each server's shape and names what it refuses.
  if (s.mcpServers && typeof s.mcpServers === 'object' && !Array.isArray(s.mcpServers) && Object.keys(s.mcpServers).length > 0) {
    out.mcpServers = s.mcpServers as Record<string, unknown>;
  }
  // Hooks start programs: passed on only as an object with events (the
  // server checks each entry and reports what it refuses).
  if (s.hooks && typeof s.hooks === 'object' && !Array.isArray(s.hooks) && Object.keys(s.hooks).length > 0) {
    out.hooks = s.hooks as Record<string, unknown>;
  }
  if (s.languageServers && typeof s.languageServers === 'object' && !Array.isArray(s.languageServers) && Object.keys(s.languageServers).length > 0) {
    out.languageServers = s.languageServers as Record<string, unknown>;
  }
  for (const key of passThroughSettings) {
    const v = s.passThrough?.[key];
    if (v !== undefined && v !== null && v !== '') out[key] = v;
  }
  return out;
}

/**
 * serverEnv returns the environment of the server process: a copy of base
 * with the API key set when there is one. base is not modified.
 */
export function serverEnv(base: Record<string, string | undefined>, apiKey: string | undefined, keyEnv: string = apiKeyEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined) env[k] = v;
  }
  if (apiKey) env[validEnvName(keyEnv) ? keyEnv : apiKeyEnv] = apiKey;
  return env;
}

/** redact replaces every occurrence of secret in text (for anything logged). */
export function redact(text: string, secret: string | undefined): string {
  if (!secret || secret.length < 4) return text;
  return text.split(secret).join('***');
}

/** How a finished task is shown to the user. */
export interface ResultView {
  severity: 'info' | 'warning' | 'error';
  message: string;
}

/** resultView turns the agentls.run reply into one notification. */
export function resultView(r: RunResult): ResultView {
  const text = (r.summary || r.answer || '').trim();
  // The server's summary already names the files it changed ("changed main.go").
  const named = (r.changedFiles ?? []).every((f) => text.includes(f));
  const files = r.changedFiles && r.changedFiles.length > 0 && !named ? ` (changed: ${r.changedFiles.join(', ')})` : '';
  switch (r.status) {
    case 'completed':
      return { severity: 'info', message: `agentls: ${text || 'done'}${files}` };
    case 'cancelled':
      // agentls's summary already starts with the status: "cancelled after 2s ...".
      if (/^cancelled\b/i.test(text)) return { severity: 'warning', message: `agentls: task ${text}${files}` };
      return { severity: 'warning', message: `agentls: task cancelled${text ? `: ${text}` : ''}${files}` };
    default:
      if (/^failed\b/i.test(text)) return { severity: 'error', message: `agentls: task ${text}${files}` };
      return { severity: 'error', message: `agentls: task failed${text ? `: ${text}` : r.stopReason ? `: ${r.stopReason}` : ''}${files}` };
  }
}

/** The $/progress value of the work-done progress protocol. */
export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

/** One update for a `vscode.Progress`: a message and an increment in percent. */
export interface ProgressStep {
  message?: string;
  increment?: number;
}

/** A checklist line of the plan: [x] done, [ ] todo, [-] skipped, [>] in progress. */
export interface PlanItem {
  state: 'done' | 'todo' | 'skipped' | 'active';
  text: string;
}

const marks: Record<string, PlanItem['state']> = { x: 'done', X: 'done', ' ': 'todo', '-': 'skipped', '>': 'active' };

/** parsePlan reads the checklist lines of a progress message. */
export function parsePlan(message: string | undefined): { doing: string; plan: PlanItem[] } {
  const plan: PlanItem[] = [];
  const other: string[] = [];
  for (const line of (message ?? '').split('\n')) {
    const m = /^\s*(?:[-*]\s+)?\[([xX >-])\]\s+(.*)$/.exec(line);
    if (m) {
      plan.push({ state: marks[m[1]], text: m[2].trim() });
    } else if (line.trim() !== '') {
      other.push(line.trim());
    }
  }
  // Line 1 of the contract's message is the activity; other free text
  // (a skipped item's reason on its own line) stays out of it.
  return { doing: other.length > 0 ? other[0] : '', plan };
}

/**
 * ProgressTracker converts the absolute percentages of $/progress into the
 * increments `vscode.Progress.report` wants, and keeps a one-line status.
 */
export class ProgressTracker {
  private last = 0;
  title = '';
  message = '';
  done = false;

  /** update applies one $/progress value and returns the step to report. */
  update(v: ProgressValue): ProgressStep {
    const step: ProgressStep = {};
    if (v.kind === 'begin' && v.title) this.title = v.title;
    if (v.kind === 'end') this.done = true;
    if (v.message !== undefined) {
      this.message = v.message;
      step.message = compactMessage(v.message);
    }
    let pct = v.percentage;
    if (v.kind === 'end') pct = 100;
    if (typeof pct === 'number' && Number.isFinite(pct)) {
      const clamped = Math.max(this.last, Math.min(100, pct));
      if (clamped > this.last) {
        step.increment = clamped - this.last;
        this.last = clamped;
      }
    }
    return step;
  }

  /** percentage is the last absolute percentage seen. */
  get percentage(): number { return this.last; }

  /** statusText is a short line for the status bar. */
  statusText(): string {
    const { doing, plan } = parsePlan(this.message);
    const done = plan.filter((p) => p.state === 'done' || p.state === 'skipped').length;
    const counts = plan.length > 0 ? ` ${done}/${plan.length}` : '';
    const active = plan.find((p) => p.state === 'active');
    const what = doing || (active ? active.text : '');
    return `agentls${counts}${what ? `: ${what}` : ''}`;
  }
}

/**
 * compactMessage renders a progress message on the one line a notification
 * has: what the agent does now (the message's first line), then how far the
 * plan is and its current item ("reading a.go · plan 1/3: Edit server.go").
 * The whole checklist is in the tasks view, not squeezed onto this line.
 */
export function compactMessage(message: string): string {
  const { doing, plan } = parsePlan(message);
  if (plan.length === 0) return doing;
  const closed = plan.filter((p) => p.state === 'done' || p.state === 'skipped').length;
  const active = plan.find((p) => p.state === 'active') ?? plan.find((p) => p.state === 'todo');
  const where = `plan ${closed}/${plan.length}${active ? `: ${active.text}` : ''}`;
  return [doing, where].filter((s) => s !== '').join(' · ');
}

/** A task as listed by agentls.tasks, normalized. */
export interface TaskInfo {
  id: string;
  prompt: string;
  state: string;
  progress: string;
  started: string;
  duration: string;
  mode: string;
  /** The plan's checklist (agentls.tasks gives it as "[x] text" lines). */
  plan: PlanItem[];
}

const finalStates = new Set(['completed', 'failed', 'cancelled', 'done', 'error', 'interrupted', 'undone']);

/** isRunning says whether a task state is not final. */
export function isRunning(state: string): boolean {
  return !finalStates.has(state.toLowerCase());
}

function fmtProgress(p: unknown): string {
  if (typeof p === 'string') return p;
  if (typeof p === 'number') return `${Math.round(p)}%`;
  if (p && typeof p === 'object') {
    const o = p as Record<string, unknown>;
    if (typeof o.done === 'number' && typeof o.total === 'number') return o.total > 0 ? `${o.done}/${o.total}` : '';
    if (typeof o.percentage === 'number') return `${Math.round(o.percentage)}%`;
  }
  return '';
}

function fmtDuration(d: unknown): string {
  if (typeof d === 'string') return d;
  if (typeof d === 'number' && Number.isFinite(d)) {
    // agentls.tasks gives milliseconds (so far, for a running task).
    const s = d / 1000;
    return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  }
  return '';
}

function planOf(p: unknown): PlanItem[] {
  if (!p || typeof p !== 'object') return [];
  const items = (p as { items?: unknown }).items;
  if (!Array.isArray(items)) return [];
  const lines = items.map((i) => {
    if (typeof i === 'string') return i;
    if (i && typeof i === 'object' && typeof (i as { text?: unknown }).text === 'string') {
      const it = i as { text: string; status?: string };
      return `${statusMark(it.status)} ${it.text}`;
    }
    return '';
  });
  return parsePlan(lines.join('\n')).plan;
}

/** statusMark maps an update_plan status to its checklist mark. */
export function statusMark(status: string | undefined): string {
  switch (status) {
    case 'done': case 'completed': return '[x]';
    case 'in_progress': case 'active': return '[>]';
    case 'skipped': return '[-]';
    default: return '[ ]';
  }
}

/** parseTasks accepts the agentls.tasks reply as a list or as {tasks: list}. */
export function parseTasks(reply: unknown): TaskInfo[] {
  const list = Array.isArray(reply) ? reply : reply && typeof reply === 'object' && Array.isArray((reply as { tasks?: unknown }).tasks) ? (reply as { tasks: unknown[] }).tasks : [];
  const out: TaskInfo[] = [];
  for (const t of list) {
    if (!t || typeof t !== 'object') continue;
    const o = t as Record<string, unknown>;
    const id = typeof o.id === 'string' ? o.id : typeof o.taskId === 'string' ? o.taskId : '';
    if (!id) continue;
    out.push({
      id,
      prompt: typeof o.prompt === 'string' ? o.prompt : '',
      // A task an earlier server left in a live state is flagged
      // "interrupted" (today's servers) or has that state (the contract's);
      // a task whose edits were undone is flagged "undone".
      state: o.interrupted === true ? 'interrupted' : o.undone === true ? 'undone' : typeof o.state === 'string' ? o.state : typeof o.status === 'string' ? o.status : '',
      progress: fmtProgress(o.progress ?? o.plan),
      started: typeof o.started === 'string' ? o.started : '',
      duration: fmtDuration(o.duration),
      mode: typeof o.mode === 'string' ? o.mode : '',
      plan: planOf(o.plan),
    });
  }
  return out;
}

/** reportTarget finds what agentls.showReport replied: a URI to open or markdown text. */
export function reportTarget(reply: unknown): { uri?: string; markdown?: string } {
  if (typeof reply === 'string') {
    return /^[a-z][a-z0-9+.-]*:/i.test(reply) ? { uri: reply } : { markdown: reply };
  }
  if (reply && typeof reply === 'object') {
    const o = reply as Record<string, unknown>;
    for (const k of ['report', 'uri']) {
      if (typeof o[k] === 'string' && o[k] !== '') return { uri: o[k] as string };
    }
    for (const k of ['markdown', 'content', 'text']) {
      if (typeof o[k] === 'string' && o[k] !== '') return { markdown: o[k] as string };
    }
  }
  return {};
}

/** taskTitle is the progress title the server uses: "agentls: " + first words. */
export function taskTitle(prompt: string, words = 6): string {
  const w = prompt.trim().split(/\s+/);
  return `agentls: ${w.slice(0, words).join(' ')}${w.length > words ? ' …' : ''}`;
}


/** isApproval says whether a window/showMessageRequest is an agentls approval question. */
export function isApproval(p: { message?: unknown; actions?: { title: string }[] | null }): boolean {
  const titles = (p.actions ?? []).map((a) => a.title);
  // A review question (the review setting) keeps or rejects a change.
  const review = titles.includes('Keep') && titles.includes('Reject');
  return typeof p.message === 'string' && p.message.startsWith('agentls') && ((titles.includes('Deny') && titles.includes('Allow once')) || review);
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/**
 * approvalHtml is the page of the approval panel: the whole question, the
 * command in a wrapped code block, and one button per action. Nothing is cut:
 * text wraps (pre-wrap, overflow-wrap anywhere) and buttons wrap onto new
 * lines instead of shrinking. The script posts the chosen title back; the
 * panel never answers by itself (closing it is Deny, decided by the caller).
 */
export function approvalHtml(message: string, actions: string[], nonce: string, cspSource: string): string {
  // The command is what the user approves: shown apart, in full, when the
  // message quotes one in backticks ("wants to run `go test ./...`.").
  const m = /^([\s\S]*?)`([\s\S]+)`([\s\S]*)$/.exec(message);
  const lead = m ? m[1] : message;
  const command = m ? m[2] : '';
  const tail = m ? m[3] : '';
  const buttons = actions.map((a, i) => `<button type="button" class="${a === 'Deny' ? 'deny' : i === 0 ? 'primary' : 'secondary'}" data-action="${escapeHtml(a)}">${escapeHtml(a)}</button>`).join('\n');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 12px 16px; }
h1 { font-size: 1.2em; margin: 0 0 8px; }
p, pre { white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
pre { font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background); padding: 8px; border-radius: 3px; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 12px; }
button { flex: 0 0 auto; white-space: normal; overflow: visible; text-overflow: clip; max-width: 100%; padding: 6px 14px; border: 1px solid var(--vscode-button-border, transparent); border-radius: 2px; cursor: pointer; font: inherit; }
button.primary { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
button.secondary, button.deny { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
.hint { opacity: 0.8; margin-top: 12px; }
</style></head>
<body>
<h1>agentls asks for approval</h1>
<p class="question">${escapeHtml(lead.trim())}</p>
${command ? `<pre class="command">${escapeHtml(command)}</pre>` : ''}
${tail.trim() && tail.trim() !== '.' ? `<p class="tail">${escapeHtml(tail.trim())}</p>` : ''}
<div class="actions">
${buttons}
</div>
<p class="hint">Closing this panel denies.</p>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
for (const b of document.querySelectorAll('button[data-action]')) {
  b.addEventListener('click', () => { for (const x of document.querySelectorAll('button')) x.disabled = true; vscode.postMessage({ action: b.dataset.action }); });
}
</script>
</body></html>`;
}

/** A failure the user fixes by setting the API key: none, or one rejected. */
export function isAuthFailure(text: string | undefined): boolean {
  if (!text) return false;
  return /\bno API key\b|\(401\)|\b401\b.*(key|unauthori[sz]ed)|API key was rejected|invalid[_ ]api[_ ]key|incorrect API key/i.test(text);
}

/**
 * keyPromptNeeded: at activation, ask for an API key when none is stored,
 * the server's environment has none, and the user has not said one is not
 * needed (a local model server).
 */
export function keyPromptNeeded(o: { stored?: string; env: Record<string, string | undefined>; keyEnv: string; dismissed?: boolean }): boolean {
  if (o.dismissed) return false;
  if (o.stored) return false;
  const name = validEnvName(o.keyEnv) ? o.keyEnv : apiKeyEnv;
  return !o.env[name];
}

function norm(s: string): string {
  // "agentls: X", "agentls.undo: X" (a command's error) and "task X" say X.
  return s.replace(/^agentls(?:\.\w+)?:\s*/i, '').replace(/^task\s+/i, '').replace(/\s+/g, ' ').trim();
}

/**
 * covered says whether a server window/showMessage repeats what the
 * extension shows itself for one of its requests (the task's summary, or
 * the error it failed with), so each thing is said once.
 */
export function covered(message: string, shown: string[]): boolean {
  const m = norm(message);
  if (m === '') return false;
  return shown.some((t) => {
    const n = norm(t);
    return n !== '' && (n === m || n.includes(m) || m.includes(n));
  });
}

/**
 * MessageGate holds the server's "agentls: ..." messages that arrive while
 * one of the extension's own requests is in flight: the server sends a
 * task's summary (or its error) as a message right before the reply, and
 * the extension shows the reply with buttons. settle(texts) drops the held
 * messages the reply covers and releases the rest; a message is held at
 * most holdMs (the caller's timer calls expire), so nothing is lost.
 */
export class MessageGate<M extends { message: string }> {
  private held: { msg: M; at: number }[] = [];
  private inflight = 0;
  constructor(readonly holdMs = 1500) {}

  /** begin marks one of our requests in flight; end undoes it. */
  begin(): void { this.inflight++; }
  end(): void { this.inflight = Math.max(0, this.inflight - 1); }
  get busy(): boolean { return this.inflight > 0; }

  /** offer returns true when msg is held (shown later or never), false to show it now. */
  offer(msg: M, now: number): boolean {
    if (this.inflight === 0 || !/^agentls\b/i.test(msg.message)) return false;
    this.held.push({ msg, at: now });
    return true;
  }

  /** settle returns the held messages the texts do not cover, and forgets all held. */
  settle(texts: string[]): M[] {
    const out = this.held.filter((h) => !covered(h.msg.message, texts)).map((h) => h.msg);
    this.held = [];
    return out;
  }

  /** expire returns (and forgets) the messages held longer than holdMs. */
  expire(now: number): M[] {
    const old = this.held.filter((h) => now - h.at >= this.holdMs).map((h) => h.msg);
    this.held = this.held.filter((h) => now - h.at < this.holdMs);
    return old;
  }
}

/**
 * stderrLevel decides at which level a line of the server's stderr is
 * logged: the slog level it carries ("level=WARN"), else info. Plain lines
 * ("agentls: logging to ...") are information, not errors.
 */
export function stderrLevel(line: string): 'error' | 'warn' | 'info' | 'debug' {
  const m = /(?:^|\s)level=(ERROR|WARN|INFO|DEBUG)\b/i.exec(line);
  if (m) {
    const l = m[1].toUpperCase();
    return l === 'ERROR' ? 'error' : l === 'WARN' ? 'warn' : l === 'DEBUG' ? 'debug' : 'info';
  }
  if (/^(panic:|fatal error:|goroutine \d+ \[)/.test(line)) return 'error';
  return 'info';
}

/** An editor diagnostic, as VS Code holds it (severity 0=Error .. 3=Hint). */
export interface EditorDiagnostic {
  range: Range;
  severity: number;
  message: string;
  source?: string;
  code?: string | number | { value: string | number };
}

/** An LSP Diagnostic (severity 1=Error .. 4=Hint). */
export interface LspDiagnostic {
  range: Range;
  severity: 1 | 2 | 3 | 4;
  message: string;
  source?: string;
  code?: string | number;
}

/** toLspDiagnostic converts one editor diagnostic to the LSP shape; absent fields are omitted. */
export function toLspDiagnostic(d: EditorDiagnostic): LspDiagnostic {
  const sev = Math.min(4, Math.max(1, Math.round(d.severity) + 1)) as 1 | 2 | 3 | 4;
  const out: LspDiagnostic = {
    range: { start: { line: d.range.start.line, character: d.range.start.character }, end: { line: d.range.end.line, character: d.range.end.character } },
    severity: sev,
    message: d.message,
  };
  if (d.source) out.source = d.source;
  const code = d.code !== undefined && typeof d.code === 'object' ? d.code.value : d.code;
  if (code !== undefined && code !== '') out.code = code;
  return out;
}

/** ownDiagnostic: diagnostics agentls publishes itself are not reported back to it. */
export function ownDiagnostic(d: { source?: string }): boolean {
  return !!d.source && /^agentls\b/i.test(d.source);
}

/** uriList reads the {uris: [...]} parameter of the agentls/* requests. */
export function uriList(params: unknown): string[] {
  if (!params || typeof params !== 'object') return [];
  const uris = (params as { uris?: unknown }).uris;
  return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === 'string' && u !== '') : [];
}

/** answerFits: an answer shown whole in a notification (one short line). */
export function answerFits(answer: string | undefined): boolean {
  const a = (answer ?? '').trim();
  return !a.includes('\n') && a.length <= 140;
}

/** answerMarkdown is the document the answer preview shows: the whole answer, never cut. */
export function answerMarkdown(r: RunResult & { prompt?: string }): string {
  const out: string[] = [];
  out.push(`# ${r.prompt ? taskTitle(r.prompt, 12).replace(/^agentls: /, '') : `Task ${r.taskId}`}`, '');
  out.push(`*Task ${r.taskId} · ${r.status}${r.mode ? ` · ${r.mode}` : ''}*`, '');
  const answer = (r.answer ?? '').trim();
  out.push(answer !== '' ? answer : (r.summary ?? '(no answer)'), '');
  const items = planItems(r);
  if (items.length > 0) {
    out.push('## Plan', '');
    for (const it of items) out.push(`- ${statusMark(it.status)} ${it.text}`);
    out.push('');
  }
  if (r.plannedFiles && r.plannedFiles.length > 0) out.push(`Files it would change: ${r.plannedFiles.map((f) => `\`${f}\``).join(', ')}`, '');
  if (r.changedFiles && r.changedFiles.length > 0) out.push(`Changed: ${r.changedFiles.map((f) => `\`${f}\``).join(', ')}`, '');
  return out.join('\n');
}

/** streamMarkdown is the answer panel's document while the answer streams: the parts so far. */
export function streamMarkdown(taskId: string, prompt: string | undefined, text: string, done: boolean): string {
  const title = prompt ? taskTitle(prompt, 12).replace(/^agentls: /, '') : `Task ${taskId}`;
  return [`# ${title}`, '', `*Task ${taskId} · ${done ? 'answer written' : 'writing the answer…'}*`, '', text.trim(), ''].join('\n');
}

/** parseResult reads an agentls.run / agentls.result / agentls.resume reply. */
export function parseResult(reply: unknown): RunResult | undefined {
  if (!reply || typeof reply !== 'object') return undefined;
  const o = reply as Record<string, unknown>;
  if (typeof o.taskId !== 'string' || o.taskId === '') return undefined;
  return reply as RunResult;
}

/** isPlanResult: a completed plan-mode task, which the user may execute. */
export function isPlanResult(r: RunResult): boolean {
  return r.status === 'completed' && r.mode === 'plan';
}

/** executePlanArgs is the agentls.run argument that carries out plan task id. */
export function executePlanArgs(id: string): RunArgs {
  return { prompt: 'go ahead', mode: 'edit', followUp: id };
}

/**
 * MdToken is the part of a markdown-it token the answer preview's guard
 * reads and changes.
 */
export interface MdToken {
  type: string;
  content: string;
  attrs: [string, string][] | null;
  children: MdToken[] | null;
}

/** isAgentlsDocument: a document the guard applies to (an answer, a task report). */
export function isAgentlsDocument(doc: { scheme?: string; path?: string } | undefined): boolean {
  if (!doc) return false;
  return doc.scheme === 'agentls-answer' || /\/\.agentls\/tasks\/[^/]+\.md$/.test(doc.path ?? '');
}

function cleanUrl(u: string): string {
  // eslint-disable-next-line no-control-regex
  return u.replace(/[\t\n\r]/g, '').replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '').replace(/\\/g, '/');
}

/** localUrl: a relative path (not //host) or a file: URL without a host. */
export function localUrl(raw: string): boolean {
  const u = cleanUrl(raw);
  const m = /^([^:/?#]*):(.*)$/.exec(u);
  if (!m) return !u.startsWith('//');
  if (m[1].toLowerCase() !== 'file') return false;
  const rest = m[2];
  if (!rest.startsWith('//')) return true;
  const host = rest.slice(2).split('/')[0];
  return host === '' || host.toLowerCase() === 'localhost';
}

/** linkAllowed: local, or plain http(s)/mailto without user information, query or fragment. */
export function linkAllowed(raw: string): boolean {
  if (localUrl(raw)) return true;
  const u = cleanUrl(raw);
  if (/[?#]/.test(u)) return false;
  const m = /^([a-z][a-z0-9+.-]*):(.*)$/i.exec(u);
  if (!m) return false;
  const scheme = m[1].toLowerCase();
  if (scheme === 'mailto') return true;
  return (scheme === 'http' || scheme === 'https') && /^\/\/[^/@]+(\/|$)/.test(m[2]);
}

const safeTag = /^<\/?(b|i|em|strong|code|kbd|sub|sup|br|p|details|summary|s|del|ins|mark|small|u|hr|ul|ol|li|blockquote|pre|table|thead|tbody|tr|th|td)\s*\/?>$/i;

function attr(t: MdToken, name: string): string {
  return t.attrs?.find(([k]) => k === name)?.[1] ?? '';
}

/**
 * inertTokens makes what the preview would load or follow in an agentls
 * answer or report inert, after markdown-it has parsed it: a remote image
 * becomes text naming its URL, a link that carries data (query, fragment,
 * user information) or has another scheme loses its link, raw HTML outside
 * a small set of attribute-less tags is shown as text. The server does the
 * same before it sends anything (agent/render); this is the preview's own
 * guard, for text from an older server or a parser that reads it otherwise.
 */
export function inertTokens(tokens: MdToken[]): void {
  for (const t of tokens) {
    if (t.type === 'html_block' && !t.content.split(/(?=<)/).every((p) => !p.startsWith('<') || safeTag.test(p.replace(/>[\s\S]*$/, '>').trim()))) {
      t.type = 'code_block';
    }
    if (t.children) inertInline(t.children);
  }
}

function inertInline(children: MdToken[]): void {
  const open: (string | null)[] = []; // per open link: its URL when it is removed
  for (const t of children) {
    switch (t.type) {
      case 'image': {
        const src = attr(t, 'src');
        if (localUrl(src)) break;
        const alt = (t.children ?? []).map((c) => c.content).join('');
        t.type = 'text';
        t.content = `${alt ? `${alt}: ` : ''}${src} [remote image not loaded]`;
        t.children = null;
        t.attrs = null;
        break;
      }
      case 'link_open': {
        const href = attr(t, 'href');
        if (linkAllowed(href)) {
          open.push(null);
          break;
        }
        open.push(href);
        t.type = 'text';
        t.content = '';
        t.attrs = null;
        break;
      }
      case 'link_close': {
        const href = open.pop();
        if (href !== null && href !== undefined) {
          t.type = 'text';
          t.content = ` (${href}) [link not rendered]`;
        }
        break;
      }
      case 'html_inline':
        if (!safeTag.test(t.content.trim())) t.type = 'text';
        break;
    }
  }
}

/** A custom command (a prompt file) as agentls.prompts lists it. */
export interface PromptInfo {
  name: string;
  description: string;
  argumentHint?: string;
  mode?: Mode;
  scope: string;
  selection: boolean;
}

/** parsePrompts keeps the well-formed entries of the agentls.prompts reply. */
export function parsePrompts(v: unknown): PromptInfo[] {
  if (!Array.isArray(v)) return [];
  const out: PromptInfo[] = [];
  for (const e of v) {
    if (!e || typeof e !== 'object') continue;
    const o = e as Record<string, unknown>;
    if (typeof o.name !== 'string' || o.name === '') continue;
    const p: PromptInfo = {
      name: o.name,
      description: typeof o.description === 'string' ? o.description : '',
      scope: typeof o.scope === 'string' ? o.scope : '',
      selection: o.selection === true,
    };
    if (typeof o.argumentHint === 'string' && o.argumentHint !== '') p.argumentHint = o.argumentHint;
    if (o.mode === 'ask' || o.mode === 'edit' || o.mode === 'plan') p.mode = o.mode;
    out.push(p);
  }
  return out;
}

/**
 * promptRunRequest is the agentls.run request of a custom command: the
 * prompt "/name args" (the server substitutes the file's $ARGUMENTS), the
 * command's mode, and the selection when there is one ($SELECTION).
 */
export function promptRunRequest(p: PromptInfo, args: string, ctx: { uri?: string; range?: Range; selected: string }): RunRequest {
  const a = args.trim();
  const req: RunRequest = { prompt: `/${p.name}${a ? ` ${a}` : ''}`, uri: ctx.uri };
  if (p.mode) req.mode = p.mode;
  if (ctx.selected.trim() !== '' && ctx.range) req.range = ctx.range;
  return req;
}

/** toolsMarkdown renders the agentls.tools reply for people. */
export function toolsMarkdown(v: unknown): string {
  const o = (v && typeof v === 'object' ? v : {}) as { tools?: unknown; hooks?: unknown };
  const lines = ['# Tools the model has', ''];
  for (const t of Array.isArray(o.tools) ? o.tools : []) {
    const x = t as { name?: string; source?: string; description?: string; readOnly?: boolean; effects?: string[] };
    const access = x.readOnly ? 'read-only' : (x.effects ?? []).join(', ');
    lines.push(`- \`${x.name}\` (${x.source}; ${access}): ${x.description ?? ''}`);
  }
  lines.push('', '# Hooks', '');
  const hooks = Array.isArray(o.hooks) ? o.hooks : [];
  if (hooks.length === 0) lines.push('None (the `agentls.hooks` setting is empty).');
  for (const h of hooks) {
    const x = h as { event?: string; matcher?: string; command?: string; timeout?: string };
    lines.push(`- ${x.event}${x.matcher ? ` matching \`${x.matcher}\`` : ''}: \`${x.command}\` (timeout ${x.timeout})`);
  }
  return lines.join('\n') + '\n';
}

/**
 * plainMessage: a notification's text as plain text. VS Code shows
 * notifications without markdown, so `**main.go**` and backticks would show
 * raw; a command's name repeated by the server ("agentls: agentls.run: ...")
 * says nothing to the user.
 */
export function plainMessage(text: string): string {
  return text
    .replace(/\*\*([^*\n]+)\*\*/g, '$1')
    .replace(/__([^_\n]+)__/g, '$1')
    .replace(/`([^`\n]+)`/g, '$1')
    .replace(/^(agentls:\s*)+(agentls\.\w+:\s*)+/, 'agentls: ')
    .replace(/^(agentls:\s*){2,}/, 'agentls: ');
}

/**
 * humanTime: an RFC 3339 time as people read it: "today 14:05", "yesterday
 * 09:12", "Mar 3 16:40", "Mar 3 2025 16:40" (another year); the input when
 * it is not a time.
 */
export function humanTime(iso: string, now: Date = new Date()): string {
  const t = new Date(iso);
  if (!iso || isNaN(t.getTime())) return iso;
  const hm = `${String(t.getHours()).padStart(2, '0')}:${String(t.getMinutes()).padStart(2, '0')}`;
  const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((day(now) - day(t)) / 86400000);
  if (days === 0) return `today ${hm}`;
  if (days === 1) return `yesterday ${hm}`;
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][t.getMonth()];
  return t.getFullYear() === now.getFullYear() ? `${month} ${t.getDate()} ${hm}` : `${month} ${t.getDate()} ${t.getFullYear()} ${hm}`;
}

/**
 * stoppedMessage: what the user reads when the server exits by itself:
 * "agentls stopped (exit code 2, last log line: ...); run "agentls: Resume
 * task" to continue".
 */
export function stoppedMessage(exit: { code?: number | null; signal?: string | null }, lastLogLine: string | undefined): string {
  const how = exit.signal ? `killed by ${exit.signal}` : typeof exit.code === 'number' ? `exit code ${exit.code}` : 'the server exited';
  const last = (lastLogLine ?? '').trim();
  const cut = last.length > 200 ? `${last.slice(0, 199)}…` : last;
  return `agentls stopped (${how}${cut ? `, last log line: ${cut}` : ''}); run "agentls: Resume task" to continue`;
}

/**
 * withElapsed: a status line with the time since start, replacing the
 * server's own " · N s" (as old as its last report): "agentls: running go
 * vet ./... · turn 2/30 · 12 s".
 */
export function withElapsed(text: string, start: number, now: number): string {
  const s = Math.max(0, Math.floor((now - start) / 1000));
  const t = s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${text.replace(/ · \d+ s$/, '')} · ${t}`;
}
