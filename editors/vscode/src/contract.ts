// contract.ts: the pure half of the extension. Everything here is plain data
// in, plain data out (no `vscode` import), so it is unit tested with
// `node --test`. The names are the public contract of the agentls server
// (docs/editors.md, issue 7); the extension never spells them elsewhere.

/** Server commands (workspace/executeCommand) of the agentls contract. */
export const ServerCommand = {
  run: 'agentls.run',
  cancel: 'agentls.cancel',
  tasks: 'agentls.tasks',
  showReport: 'agentls.showReport',
} as const;

/** Settings section sent in workspace/didChangeConfiguration. */
export const settingsSection = 'agentls';

/** The environment variable the server reads the API key from. */
export const apiKeyEnv = 'OPENAI_API_KEY';

export type Mode = 'ask' | 'edit';

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
  checkCommand?: string;
}

/** The server-facing settings object (initializationOptions and the agentls section). */
export interface ServerSettings {
  model?: string;
  baseURL?: string;
  approval?: 'ask' | 'auto' | 'deny';
  allowCommands?: string[];
  checkCommand?: string;
  apiKeyEnv: string;
}

/**
 * serverSettings maps the user's settings to what the server reads. Empty
 * strings are omitted so the server keeps its own defaults; an approval
 * value outside ask|auto|deny falls back to "ask" (the safe choice). The API
 * key is never part of it: only the name of the variable that holds it.
 */
export function serverSettings(s: Settings): ServerSettings {
  const out: ServerSettings = { apiKeyEnv };
  const str = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  if (str(s.model)) out.model = str(s.model);
  if (str(s.baseURL)) out.baseURL = str(s.baseURL);
  const approval = str(s.approval);
  out.approval = approval === 'auto' || approval === 'deny' ? approval : 'ask';
  if (Array.isArray(s.allowCommands)) {
    const cmds = s.allowCommands.filter((c): c is string => typeof c === 'string').map((c) => c.trim()).filter((c) => c !== '');
    if (cmds.length > 0) out.allowCommands = cmds;
  }
  if (str(s.checkCommand)) out.checkCommand = str(s.checkCommand);
  return out;
}

/**
 * serverEnv returns the environment of the server process: a copy of base
 * with the API key set when there is one. base is not modified.
 */
export function serverEnv(base: Record<string, string | undefined>, apiKey: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined) env[k] = v;
  }
  if (apiKey) env[apiKeyEnv] = apiKey;
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
  const files = r.changedFiles && r.changedFiles.length > 0 ? ` (changed: ${r.changedFiles.join(', ')})` : '';
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
  return { doing: other.join(' '), plan };
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
 * compactMessage renders a progress message on one line for a notification:
 * what the agent does now, then the plan as marks ("reading a.go · [x] Read
 * [>] Edit [ ] Check").
 */
export function compactMessage(message: string): string {
  const { doing, plan } = parsePlan(message);
  const marksOut = plan.map((p) => `[${{ done: 'x', todo: ' ', skipped: '-', active: '>' }[p.state]}] ${p.text}`).join('  ');
  return [doing, marksOut].filter((s) => s !== '').join(' · ');
}

/** A task as listed by agentls.tasks, normalized. */
export interface TaskInfo {
  id: string;
  prompt: string;
  state: string;
  progress: string;
  started: string;
  duration: string;
}

const finalStates = new Set(['completed', 'failed', 'cancelled', 'done', 'error']);

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
      state: typeof o.state === 'string' ? o.state : typeof o.status === 'string' ? o.status : '',
      progress: fmtProgress(o.progress ?? o.plan),
      started: typeof o.started === 'string' ? o.started : '',
      duration: fmtDuration(o.duration),
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
