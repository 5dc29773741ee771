// extension.ts: the VS Code side of agentls. It starts the agentls language
// server over stdio with vscode-languageclient, adds the palette commands,
// shows each task's work-done progress as a cancellable notification plus a
// status bar item, the tasks and their plans in the explorer's "agentls
// tasks" view, approvals in a panel that shows the whole question, and the
// whole answer in a markdown preview.
import * as childProcess from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as readline from 'readline';
import * as vscode from 'vscode';
import { DiagnosticSources, Manifest, languagesOfFile, servesLanguage } from './diagsources';
import { agentlsCandidates, notFoundMessage } from './locate';
import {
  CancellationToken,
  CancellationTokenSource,
  DidChangeConfigurationNotification,
  ExecuteCommandParams,
  ExecuteCommandRequest,
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  LSPErrorCodes,
  MessageActionItem,
  ResponseError,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageParams,
  ShowMessageRequest,
  ShowMessageRequestParams,
  StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from 'vscode-languageclient/node';
import {
  MdToken,
  MessageGate,
  ProgressTracker,
  ProgressValue,
  RunRequest,
  RunResult,
  ServerCommand,
  ServerNotification,
  ServerRequest,
  TaskInfo,
  AnswerPart,
  experimentalCapabilities,
  streamMarkdown,
  answerFits,
  answerMarkdown,
  humanTime,
  plainMessage,
  stoppedMessage,
  withElapsed,
  apiKeyEnv,
  approvalHtml,
  buildRunArgs,
  executePlanArgs,
  taskArgs,
  inertTokens,
  isAgentlsDocument,
  isApproval,
  isAuthFailure,
  isPlanResult,
  isRunning,
  keyPromptNeeded,
  ownDiagnostic,
  parsePrompts,
  parseResult,
  parseTasks,
  planItems,
  promptRunRequest,
  reportTarget,
  resultView,
  serverEnv,
  serverSettings,
  strictestReview,
  settingsSection,
  statusMark,
  stderrLevel,
  taskTitle,
  toLspDiagnostic,
  toolsMarkdown,
  uriList,
  userOnlySettings,
  userValue,
  validEnvName,
} from './contract';

const secretKey = 'agentls.openaiApiKey';
const noKeyNeededKey = 'agentls.noKeyNeeded';
const answerScheme = 'agentls-answer';
const setKeyAction = 'Set API key';

/** A task this window started and is waiting for. */
interface LocalRun {
  token: string;
  prompt: string;
  tracker: ProgressTracker;
  cancel: () => void;
  start: number; // Date.now() when it started: the status bar's time ticks from it
}

let client: LanguageClient | undefined;
let log: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;
let ctx: vscode.ExtensionContext;
let lastResult: RunResult | undefined;
const runs = new Map<string, LocalRun>();
let runSeq = 0;
// Server messages that may repeat what a reply of ours says (see MessageGate).
const gate = new MessageGate<ShowMessageParams>();
// Prompts of the tasks this window ran, by task id (for answer titles).
const prompts = new Map<string, string>();

function config() {
  return vscode.workspace.getConfiguration(settingsSection);
}

/**
 * userSetting reads a setting of userOnlySettings from the user's own
 * settings (or its default): never from .vscode/settings.json or a folder's
 * settings, which a repository controls.
 */
function userSetting<T>(key: (typeof userOnlySettings)[number]): T | undefined {
  return userValue<T>(config().inspect<T>(key));
}

function keyEnvName(): string {
  const v = userSetting<string>('apiKeyEnv');
  return validEnvName(v) ? v : apiKeyEnv;
}

function readSettings() {
  const c = config();
  return serverSettings({
    model: c.get<string>('model'),
    baseURL: userSetting<string>('baseURL'),
    // Only a value the user set: the default would hide the user settings file's.
    approval: config().inspect<string>('approval')?.globalValue,
    allowCommands: userSetting<unknown>('allowCommands'),
    safeCommands: userSetting<unknown>('safeCommands'),
    allowSecretReads: userSetting<unknown>('allowSecretReads'),
    checkCommand: userSetting<string>('checkCommand'),
    apiKeyEnv: keyEnvName(),
    sandbox: userSetting<string>('sandbox'),
    commandNetwork: userSetting<unknown>('commandNetwork'),
    mcpServers: userSetting<unknown>('mcpServers'),
    hooks: userSetting<unknown>('hooks'),
    review: strictestReview(c.inspect<unknown>('review')),
    // Ghost text comes from vscode-languageclient's own inline completion
    // provider (textDocument/inlineCompletion) once the server offers it.
    completion: c.get<unknown>('completion'),
  });
}

function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}

// ---- messages from the server ------------------------------------------

function showServerMessage(m: ShowMessageParams): void {
  const show = m.type === 1 ? vscode.window.showErrorMessage : m.type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const text = plainMessage(m.message);
  if (isAuthFailure(m.message)) {
    show(text, setKeyAction).then((pick) => {
      if (pick === setKeyAction) vscode.commands.executeCommand('agentls.setApiKey');
    });
    return;
  }
  show(text);
}

function onServerMessage(m: ShowMessageParams): void {
  log.info(`server: ${m.message}`);
  if (gate.offer(m, Date.now())) {
    setTimeout(() => gate.expire(Date.now()).forEach(showServerMessage), gate.holdMs + 50);
    return;
  }
  showServerMessage(m);
}

/**
 * request sends one of our own commands; the server's messages that arrive
 * meanwhile are held and, when the reply says the same (texts), dropped.
 */
async function request(command: string, args: unknown[], token?: CancellationToken, workDoneToken?: string, said?: (reply: unknown) => string[]): Promise<unknown> {
  const lc = requireClient();
  gate.begin();
  let texts: string[] = [];
  try {
    const params: ExecuteCommandParams = { command, arguments: args };
    if (workDoneToken) params.workDoneToken = workDoneToken;
    const reply = await lc.sendRequest(ExecuteCommandRequest.type, params, token);
    texts = said ? said(reply) : [];
    return reply;
  } catch (err) {
    texts = [errorText(err)];
    throw err;
  } finally {
    gate.end();
    gate.settle(texts).forEach(showServerMessage);
  }
}

// ---- approvals ----------------------------------------------------------

/** An approval question on screen, and what withdraws it. */
interface OpenApproval {
  panel: vscode.WebviewPanel;
  // The runs of this window in flight when it was asked: when all have
  // ended, the question is withdrawn even if no $/cancelRequest came.
  owners: Set<string>;
  withdraw: () => void;
}
const approvals = new Set<OpenApproval>();

function withdrawOrphanApprovals(): void {
  for (const a of [...approvals]) {
    if (a.owners.size > 0 && [...a.owners].every((t) => !runs.has(t))) {
      log.info('approval withdrawn: its task ended');
      a.withdraw();
    }
  }
}

/**
 * askApproval shows an agentls approval question in a panel: the whole
 * message and command wrap, the buttons wrap instead of being cut. The
 * answer is the chosen action; closing the panel is Deny. $/cancelRequest
 * for the request (the task ended or was cancelled) closes the panel and
 * answers RequestCancelled, as LSP wants of a cancelled request.
 */
function askApproval(params: ShowMessageRequestParams, token: CancellationToken): Promise<MessageActionItem | null> {
  const actions = (params.actions ?? []).map((a) => a.title);
  return new Promise((resolve, reject) => {
    let settled = false;
    const panel = vscode.window.createWebviewPanel('agentls.approval', 'agentls: approve?', { viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, { enableScripts: true, retainContextWhenHidden: true });
    const nonce = randomBytes(16).toString('base64');
    panel.webview.html = approvalHtml(params.message, actions, nonce, panel.webview.cspSource);
    const entry: OpenApproval = {
      panel,
      owners: new Set(runs.keys()),
      withdraw: () => {
        if (settled) return;
        settled = true;
        cleanup();
        panel.dispose();
        reject(new ResponseError(LSPErrorCodes.RequestCancelled, 'the approval question was withdrawn'));
      },
    };
    approvals.add(entry);
    const finish = (title: string) => {
      if (settled) return;
      settled = true;
      cleanup();
      log.info(`approval: ${title}`);
      panel.dispose();
      resolve({ title });
    };
    const subs = [
      panel.webview.onDidReceiveMessage((m: { action?: unknown }) => {
        if (typeof m.action === 'string' && actions.includes(m.action)) finish(m.action);
      }),
      panel.onDidDispose(() => finish('Deny')),
      token.onCancellationRequested(() => {
        log.info('approval withdrawn by the server ($/cancelRequest)');
        entry.withdraw();
      }),
    ];
    function cleanup() {
      approvals.delete(entry);
      subs.forEach((s) => s.dispose());
    }
    if (token.isCancellationRequested) entry.withdraw();
  });
}

async function onMessageRequest(params: ShowMessageRequestParams, token: CancellationToken): Promise<MessageActionItem | null> {
  if (isApproval(params)) return askApproval(params, token);
  // Any other question: what vscode-languageclient does by default.
  const show = params.type === 1 ? vscode.window.showErrorMessage : params.type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const pick = await show(params.message, ...(params.actions ?? []));
  return pick ?? null;
}

// ---- requests from the server: save documents, editor diagnostics --------

function findDocument(u: string): vscode.TextDocument | undefined {
  const want = client ? client.protocol2CodeConverter.asUri(u).toString() : vscode.Uri.parse(u).toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === want);
}

/**
 * saveDocuments writes the listed documents that are open and modified;
 * one that is not open or not modified counts as saved. Never prompts:
 * untitled documents (which would ask for a name) are reported as failed.
 */
async function saveDocuments(params: unknown): Promise<{ saved: string[]; failed: { uri: string; reason: string }[] }> {
  const saved: string[] = [];
  const failed: { uri: string; reason: string }[] = [];
  await Promise.all(uriList(params).map(async (u) => {
    const doc = findDocument(u);
    if (!doc || !doc.isDirty) {
      saved.push(u);
      return;
    }
    if (doc.isUntitled) {
      failed.push({ uri: u, reason: 'an untitled document has no file to save to' });
      return;
    }
    try {
      if (await doc.save()) saved.push(u);
      else failed.push({ uri: u, reason: 'the editor did not save it' });
    } catch (err) {
      failed.push({ uri: u, reason: errorText(err) });
    }
  }));
  log.info(`${ServerRequest.saveDocuments}: saved ${saved.length}, failed ${failed.length}`);
  return { saved, failed };
}

// What this window has seen of diagnostics sources (src/diagsources.ts):
// agentls/diagnostics answers `checked: false` for a document no source can
// check, and the server then does not wait for diagnostics after an edit.
const diagSources = new DiagnosticSources();

function manifests(): Manifest[] {
  return vscode.extensions.all.map((e) => e.packageJSON as Manifest);
}

/** languagesOf: the open document's language, else those contributed for its file name. */
function languagesOf(uri: vscode.Uri): string[] {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  return doc ? [doc.languageId] : languagesOfFile(manifests(), uri.path);
}

/**
 * noteDiagnostics records the documents some source reported diagnostics
 * for (an empty report too: a language server sends one for a clean file).
 * agentls publishes none itself; were its own collection to hold some for
 * a document, a report with nothing else in it is not counted.
 */
function noteDiagnostics(uris: readonly vscode.Uri[]): void {
  for (const uri of uris) {
    const own = client?.diagnostics?.get(uri) ?? [];
    if (own.length > 0 && vscode.languages.getDiagnostics(uri).length <= own.length) continue;
    diagSources.reported(uri.toString(), languagesOf(uri));
  }
}

/** checkedOf: agentls/diagnostics' `checked` for uri (undefined: cannot tell). */
function checkedOf(uri: vscode.Uri): boolean | undefined {
  const langs = languagesOf(uri);
  return diagSources.checked(uri.toString(), langs, servesLanguage(manifests(), langs, ctx.extension.id));
}

/** editorDiagnostics answers agentls/diagnostics with what the editor shows, agentls's own left out. */
function editorDiagnostics(params: unknown) {
  const lc = requireClient();
  const uris = uriList(params);
  const pairs: [vscode.Uri, readonly vscode.Diagnostic[]][] = uris.length === 0
    ? vscode.languages.getDiagnostics()
    : uris.map((u) => {
      const uri = lc.protocol2CodeConverter.asUri(u);
      return [uri, vscode.languages.getDiagnostics(uri)];
    });
  const out = [];
  for (const [uri, ds] of pairs) {
    const own = new Set(lc.diagnostics?.get(uri) ?? []);
    const diagnostics = ds.filter((d) => !own.has(d) && !ownDiagnostic(d)).map((d) => toLspDiagnostic({
      range: { start: { line: d.range.start.line, character: d.range.start.character }, end: { line: d.range.end.line, character: d.range.end.character } },
      severity: d.severity,
      message: d.message,
      source: d.source,
      code: d.code === undefined ? undefined : typeof d.code === 'object' ? { value: d.code.value } : d.code,
    }));
    if (uris.length === 0 && diagnostics.length === 0) continue;
    // No version: VS Code does not say which version of the text a
    // language server's diagnostics are for, and the document's own version
    // would tell the server they are current right after an edit, before
    // the language server has looked. Without one the server waits until
    // the errors change (bounded), unless nothing checks the document.
    out.push({ uri: lc.code2ProtocolConverter.asUri(uri), diagnostics, checked: uris.length === 0 ? undefined : checkedOf(uri) });
  }
  return out;
}

/** lspRange is a VS Code range in LSP shape. */
function lspRange(r: vscode.Range) {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

/** lspLocation is a Location or LocationLink as an LSP Location. */
function lspLocation(l: vscode.Location | vscode.LocationLink) {
  if ('targetUri' in l) return { uri: l.targetUri.toString(), range: lspRange(l.targetSelectionRange ?? l.targetRange) };
  return { uri: l.uri.toString(), range: lspRange(l.range) };
}

/** lspSymbol is a DocumentSymbol or SymbolInformation in LSP shape (LSP kinds are VS Code's plus one). */
function lspSymbol(s: vscode.DocumentSymbol | vscode.SymbolInformation): unknown {
  if ('location' in s) {
    return { name: s.name, kind: s.kind + 1, containerName: s.containerName, location: lspLocation(s.location) };
  }
  return { name: s.name, kind: s.kind + 1, detail: s.detail, range: lspRange(s.range), selectionRange: lspRange(s.selectionRange), children: s.children.map(lspSymbol) };
}

/** hoverText is a hover's contents as one markdown text. */
function hoverText(hs: vscode.Hover[]): string {
  const parts: string[] = [];
  for (const h of hs) {
    for (const c of h.contents) {
      parts.push(typeof c === 'string' ? c : 'value' in c ? (c as { value: string }).value : '');
    }
  }
  return parts.filter((p) => p !== '').join('\n\n');
}

/**
 * forwardLsp answers agentls/lsp ({method, params}) with the answer of the
 * editor's language servers, through VS Code's vscode.execute*Provider
 * commands (the Go extension's gopls, Pylance, ...), in LSP shape; null
 * when none answers or the method has no such command (agentls then asks
 * its own server).
 */
async function forwardLsp(params: unknown): Promise<unknown> {
  const lc = requireClient();
  const req = (params ?? {}) as { method?: string; params?: Record<string, unknown> };
  const q = (req.params ?? {}) as { textDocument?: { uri?: string }; position?: { line: number; character: number }; newName?: string; query?: string };
  const uri = typeof q.textDocument?.uri === 'string' ? lc.protocol2CodeConverter.asUri(q.textDocument.uri) : undefined;
  const pos = q.position ? new vscode.Position(q.position.line, q.position.character) : undefined;
  const exec = <T>(command: string, ...args: unknown[]) => vscode.commands.executeCommand<T>(command, ...args);
  const orNull = <T>(xs: T[]) => (xs.length === 0 ? null : xs);
  try {
    switch (req.method) {
      case 'textDocument/definition':
        if (!uri || !pos) return null;
        return orNull((await exec<(vscode.Location | vscode.LocationLink)[]>('vscode.executeDefinitionProvider', uri, pos) ?? []).map(lspLocation));
      case 'textDocument/implementation':
        if (!uri || !pos) return null;
        return orNull((await exec<(vscode.Location | vscode.LocationLink)[]>('vscode.executeImplementationProvider', uri, pos) ?? []).map(lspLocation));
      case 'textDocument/references':
        if (!uri || !pos) return null;
        return orNull((await exec<vscode.Location[]>('vscode.executeReferenceProvider', uri, pos) ?? []).map(lspLocation));
      case 'textDocument/hover': {
        if (!uri || !pos) return null;
        const text = hoverText(await exec<vscode.Hover[]>('vscode.executeHoverProvider', uri, pos) ?? []);
        return text === '' ? null : { contents: { kind: 'markdown', value: text } };
      }
      case 'textDocument/documentSymbol':
        if (!uri) return null;
        return orNull((await exec<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>('vscode.executeDocumentSymbolProvider', uri) ?? []).map(lspSymbol));
      case 'workspace/symbol':
        return orNull((await exec<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', q.query ?? '') ?? []).map(lspSymbol));
      case 'textDocument/rename': {
        if (!uri || !pos || typeof q.newName !== 'string') return null;
        const edit = await exec<vscode.WorkspaceEdit>('vscode.executeDocumentRenameProvider', uri, pos, q.newName);
        if (!edit) return null;
        const changes: Record<string, unknown[]> = {};
        for (const [u, edits] of edit.entries()) {
          changes[u.toString()] = edits.map((e) => ({ range: lspRange(e.range), newText: e.newText }));
        }
        return { changes };
      }
    }
  } catch (err) {
    log.info(`${ServerRequest.lsp} ${req.method}: ${errorText(err)}`);
  }
  return null;
}

// ---- the client ---------------------------------------------------------

function lines(input: NodeJS.ReadableStream, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on('line', each);
}

/**
 * serverPath is the program to start: agentls.path when set, else the first
 * agentls on PATH or in the Go bin folders (`go env GOPATH` is asked only
 * when neither PATH nor the usual folders have it); undefined when none.
 */
function serverPath(): string | undefined {
  const set = userSetting<string>('path');
  if (set) return set;
  const runnable = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  const home = os.homedir();
  const found = agentlsCandidates(process.env, home).find(runnable);
  if (found) return found;
  let gopath: string | undefined;
  try {
    gopath = childProcess.execFileSync('go', ['env', 'GOPATH'], { timeout: 5000, encoding: 'utf8' }).trim();
  } catch {
    gopath = undefined;
  }
  const tried = agentlsCandidates(process.env, home, gopath);
  const late = tried.find(runnable);
  if (!late) vscode.window.showErrorMessage(notFoundMessage(tried), 'Open settings').then((pick) => {
    if (pick) vscode.commands.executeCommand('workbench.action.openSettings', '@ext:agentls.agentls path');
  });
  return late;
}

async function startClient(): Promise<void> {
  const path = serverPath();
  if (!path) {
    log.error('agentls was not found; set agentls.path');
    throw new Error('agentls was not found');
  }
  const apiKey = await ctx.secrets.get(secretKey);
  const keyEnv = keyEnvName();
  const serverOptions: ServerOptions = {
    command: path,
    // No transport: vscode-languageclient would append --stdio; agentls
    // serve speaks stdio without a flag.
    args: ['serve'],
    // The key goes to the server's environment only: never to settings,
    // initializationOptions or the log.
    options: { env: serverEnv(process.env, apiKey, keyEnv) },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    outputChannel: log,
    initializationOptions: readSettings(),
    // stderr carries slog lines and notes such as "agentls: logging to
    // FILE": each at its own level, not all as errors.
    stdioOptions: {
      stdout: (input, ch) => lines(input, (l) => ch.info(l)),
      stderr: (input, ch) => lines(input, (l) => {
        if (l.trim() !== '') lastLogLine = l;
        ch[stderrLevel(l)](l);
      }),
    },
    // A server that exits is not restarted behind the user's back (a task
    // it ran is interrupted, not silently lost): serverStopped says so once
    // and the next command starts a new server.
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        serverStopped(lc);
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
    middleware: {
      // Code actions ("Ask agent about X", "Plan with agent") run agentls.run
      // through the same path as the palette, so they get the notification,
      // the answer and the result.
      executeCommand: async (command, args, next) => {
        if (command === ServerCommand.run && args.length > 0 && args[0] && typeof args[0] === 'object') {
          return runTask(args[0] as RunRequest);
        }
        return next(command, args);
      },
    },
  };
  log.info(`starting ${path} serve (API key ${apiKey ? `set in secret storage, passed as ${keyEnv}` : 'not in secret storage'})`);
  const lc = new LanguageClient('agentls', 'agentls', serverOptions, clientOptions);
  // Registered before start, so they replace vscode-languageclient's
  // defaults for these methods.
  lc.onRequest(ShowMessageRequest.type, onMessageRequest);
  lc.onNotification(ShowMessageNotification.type, onServerMessage);
  lc.onRequest(ServerRequest.saveDocuments, saveDocuments);
  lc.onRequest(ServerRequest.diagnostics, editorDiagnostics);
  lc.onRequest(ServerRequest.lsp, forwardLsp);
  lc.onNotification(ServerNotification.answer, onAnswer);
  // capabilities.experimental.agentls: the agentls/* requests this
  // extension answers (the server sends them only to a client that lists
  // them) and the answer stream.
  lc.registerFeature(agentlsCapabilitiesFeature);
  client = lc;
  try {
    await lc.start();
  } catch (err) {
    log.error(`agentls did not start: ${String(err)}`);
    vscode.window.showErrorMessage(`agentls: could not start "${path}": ${String(err)}. Set agentls.path.`, 'Open settings').then((pick) => {
      if (pick) vscode.commands.executeCommand('workbench.action.openSettings', '@ext:agentls.agentls path');
    });
    throw err;
  }
  tasksView.refresh();
}

/** The last line the server wrote on stderr (its log), for the stop message. */
let lastLogLine: string | undefined;
/** Set when the server exited by itself: the next command starts a new one. */
let stoppedByItself = false;
/** Set while this window stops the server (restart, deactivate). */
let stopping = false;

/**
 * serverStopped: the server of lc exited. Its tasks are over for this
 * window: their progress and the status bar clear, and the user reads once
 * why and how to continue, unless this window stopped it.
 */
function serverStopped(lc: LanguageClient): void {
  if (stopping || lc !== client) return;
  stoppedByItself = true;
  const proc = (lc as unknown as { _serverProcess?: { exitCode?: number | null; signalCode?: string | null } })._serverProcess;
  const msg = stoppedMessage({ code: proc?.exitCode, signal: proc?.signalCode }, lastLogLine);
  log.error(msg);
  runs.clear();
  withdrawOrphanApprovals();
  refreshStatus();
  vscode.window.showErrorMessage(msg, 'Resume task').then((pick) => {
    if (pick) vscode.commands.executeCommand('agentls.resumeTask');
  });
}

/** ensureClient starts a new server when the last one exited by itself. */
async function ensureClient(): Promise<void> {
  if (!stoppedByItself) return;
  stoppedByItself = false;
  await restartClient();
}

async function restartClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    stopping = true;
    try {
      await old.stop();
    } catch (err) {
      log.warn(`stopping agentls: ${String(err)}`);
    } finally {
      stopping = false;
    }
  }
  await startClient();
}

function requireClient(): LanguageClient {
  if (!client || !client.isRunning()) {
    throw new Error('the agentls server is not running (see the "agentls" output)');
  }
  return client;
}

function refreshStatus(): void {
  const active = [...runs.values()];
  if (active.length === 0) {
    status.hide();
    return;
  }
  const first = active[0];
  const more = active.length > 1 ? ` (+${active.length - 1})` : '';
  status.text = `$(sync~spin) ${withElapsed(first.tracker.statusText(), first.start, Date.now())}${more}`;
  // The tooltip has room for the whole checklist, one item a line.
  const tip = new vscode.MarkdownString();
  tip.appendText(`${first.tracker.title || taskTitle(first.prompt)}\n\n`);
  tip.appendCodeblock(first.tracker.message || 'starting', 'text');
  tip.appendText('\nClick to cancel.');
  status.tooltip = tip;
  status.show();
}

// ---- tasks: run, show, tree ---------------------------------------------

/**
 * runTask executes agentls.run (or agentls.resume) with our own work-done
 * token, shows the progress as a cancellable notification (the cancel
 * button sends window/workDoneProgress/cancel) and the result.
 */
async function runTask(req: RunRequest): Promise<RunResult | undefined> {
  const args = buildRunArgs(req);
  return runCommand(ServerCommand.run, args, args.prompt);
}

async function runCommand(command: string, arg: object, prompt: string): Promise<RunResult | undefined> {
  const lc = requireClient();
  const token = `agentls-vscode-${process.pid}-${++runSeq}`;
  const tracker = new ProgressTracker();
  const cts = new CancellationTokenSource();
  const run: LocalRun = {
    token,
    prompt,
    tracker,
    start: Date.now(),
    cancel: () => {
      log.info(`cancelling ${token}`);
      lc.sendNotification(WorkDoneProgressCancelNotification.type, { token });
    },
  };
  runs.set(token, run);
  refreshStatus();
  // The time in the status bar moves every second, not only on reports.
  const tick = setInterval(refreshStatus, 1000);
  // What is sent, as sent (a long prompt cut for the log only).
  const sent = arg as { prompt?: unknown };
  log.info(`${command} ${JSON.stringify(typeof sent.prompt === 'string' ? { ...arg, prompt: sent.prompt.slice(0, 200) } : arg)}`);
  try {
    const reply = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: taskTitle(prompt), cancellable: true },
      async (progress, cancel) => {
        cancel.onCancellationRequested(() => run.cancel());
        const sub = lc.onProgress(WorkDoneProgress.type, token, (v) => {
          const step = tracker.update(v as ProgressValue);
          progress.report(step);
          refreshStatus();
          tasksView.refreshSoon();
          if (tracker.done) {
            // Belt and braces: the task is over, so no question of it stays.
            runs.delete(token);
            withdrawOrphanApprovals();
          }
        });
        try {
          return await request(command, [arg], cts.token, token, (r) => {
            const res = parseResult(r);
            return res ? [res.summary ?? '', `${res.status}: ${res.summary ?? ''}`] : [];
          });
        } finally {
          sub.dispose();
        }
      },
    );
    const result = parseResult(reply);
    log.info(`${command} replied in ${Date.now() - run.start} ms`);
    if (result) {
      prompts.set(result.taskId, prompt);
      lastResult = result;
      showResult(result);
    }
    return result;
  } catch (err) {
    const text = errorText(err);
    log.error(`${command} failed: ${text}`);
    // A server that died is said once, by serverStopped, not as
    // "Pending response rejected since connection got disposed".
    if (!stoppedByItself) showError(text);
    return undefined;
  } finally {
    clearInterval(tick);
    runs.delete(token);
    withdrawOrphanApprovals();
    cts.dispose();
    refreshStatus();
    tasksView.refresh();
  }
}

/** showError: one notification; a key problem gets a "Set API key" button. */
function showError(text: string): void {
  const msg = plainMessage(`agentls: ${text.replace(/^agentls:\s*/, '')}`);
  if (isAuthFailure(text)) {
    vscode.window.showErrorMessage(msg, setKeyAction).then((pick) => {
      if (pick === setKeyAction) vscode.commands.executeCommand('agentls.setApiKey');
    });
    return;
  }
  vscode.window.showErrorMessage(msg);
}

function showResult(r: RunResult): void {
  log.info(`task ${r.taskId} ${r.status}: ${r.summary ?? ''}`);
  // The panel showed the answer as it streamed: the result replaces it
  // there (opening the preview again would open a second one beside it).
  const streamed = streams.delete(r.taskId);
  // shown: the answer panel showed this task's stream (it was open, or the
  // stream outgrew a notification and opened it).
  const shown = streamShown.delete(r.taskId);
  if (streamed) setAnswer(r);
  if (isPlanResult(r)) {
    const n = planItems(r).length;
    if (!shown) showAnswer(r).catch((err) => log.warn(`plan preview: ${errorText(err)}`));
    vscode.window.showInformationMessage(`agentls: plan ready (${n} step${n === 1 ? '' : 's'}${r.plannedFiles?.length ? `, ${r.plannedFiles.length} file(s)` : ''}). Execute it?`, 'Execute plan', 'Show plan').then((pick) => {
      if (pick === 'Execute plan') executePlan(r.taskId);
      else if (pick === 'Show plan') showAnswer(r);
    });
    return;
  }
  const view = resultView(r);
  const buttons: string[] = [];
  const failedOnKey = r.status === 'failed' && isAuthFailure(`${r.summary ?? ''} ${r.stopReason ?? ''}`);
  if (failedOnKey) buttons.push(setKeyAction);
  const whole = !answerFits(r.answer) && r.status === 'completed';
  if (whole) buttons.push('Show answer');
  if (r.report) buttons.push('Show report');
  if (whole && !shown && config().get<boolean>('openAnswer', true)) {
    showAnswer(r).catch((err) => log.warn(`answer preview: ${errorText(err)}`));
  }
  const show = view.severity === 'error' ? vscode.window.showErrorMessage : view.severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  show(plainMessage(view.message), ...buttons).then((pick) => {
    if (pick === setKeyAction) vscode.commands.executeCommand('agentls.setApiKey');
    else if (pick === 'Show answer') showAnswer(r);
    else if (pick === 'Show report') showReport(r).catch((err) => showError(errorText(err)));
  });
}

/** Declares experimental.agentls.answerStream: the server streams answers in agentls/answer. */
const agentlsCapabilitiesFeature: StaticFeature = {
  fillClientCapabilities: (caps) => {
    caps.experimental = { ...(caps.experimental as object | undefined), ...experimentalCapabilities };
  },
  initialize: () => undefined,
  getState: () => ({ kind: 'static' }),
  clear: () => undefined,
};

// The streamed answers so far, by task id, until the task's reply.
const streams = new Map<string, string>();
// The tasks whose stream the answer panel shows, until the task's reply.
const streamShown = new Set<string>();

/**
 * onAnswer: a part of a task's answer (agentls/answer). The answer panel
 * (the one reused markdown preview) shows the parts as they come, opening
 * once they outgrow a notification; the reply replaces them with the
 * result (showResult).
 */
function onAnswer(p: AnswerPart): void {
  if (!p || typeof p.taskId !== 'string' || !config().get<boolean>('openAnswer', true)) return;
  const text = (streams.get(p.taskId) ?? '') + (typeof p.text === 'string' ? p.text : '');
  if (text.trim() === '') return;
  streams.set(p.taskId, text);
  // The prompt of the task: the one this window runs, when it runs one.
  const mine = [...runs.values()];
  const uri = answerUri();
  answers.set(uri.toString(), streamMarkdown(p.taskId, mine.length === 1 ? mine[0].prompt : prompts.get(p.taskId), text, p.done === true));
  answerChanged.fire(uri);
  // An answer panel already open shows the new document in place. Else
  // the panel opens once the answer outgrows a notification, the rule the
  // reply follows (answerFits): a one-line answer never opens a panel.
  if (streamShown.has(p.taskId)) return;
  if (answerPanelOpen()) {
    streamShown.add(p.taskId);
  } else if (!answerFits(text)) {
    streamShown.add(p.taskId);
    openPreview(uri).catch((err) => log.warn(`answer preview: ${errorText(err)}`));
  }
}

/** answerPanelOpen: a markdown preview of the answer document is open in some editor group. */
function answerPanelOpen(): boolean {
  const name = answerUri().path.replace(/^.*\//, '');
  return vscode.window.tabGroups.all.some((g) => g.tabs.some((t) =>
    t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('markdown.preview') && t.label.endsWith(name)));
}

// The answer documents, by URI: agentls-answer:/answer-ID.md.
const answers = new Map<string, string>();
const answerChanged = new vscode.EventEmitter<vscode.Uri>();

/** answerUri is the one answer document (its preview is the answer panel). */
function answerUri(): vscode.Uri {
  return vscode.Uri.from({ scheme: answerScheme, path: '/answer.md' });
}

/** showAnswer opens the whole answer of a task in the markdown preview. */
async function showAnswer(r: RunResult): Promise<void> {
  await openPreview(setAnswer(r));
}

/**
 * setAnswer makes the one answer document show r: an open preview of it
 * updates in place instead of opening a new editor group per answer.
 */
function setAnswer(r: RunResult): vscode.Uri {
  const uri = answerUri();
  answers.set(uri.toString(), answerMarkdown({ ...r, prompt: prompts.get(r.taskId) }));
  answerChanged.fire(uri);
  return uri;
}

async function openPreview(uri: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
  } catch (err) {
    // Without the markdown extension: the source, which is still whole.
    log.warn(`markdown.showPreviewToSide: ${errorText(err)}`);
    await vscode.window.showTextDocument(uri, { preview: true, viewColumn: vscode.ViewColumn.Beside });
  }
}

/** showReport opens the task's report rendered (markdown preview), not its source. */
async function showReport(r: { taskId: string; report?: string }): Promise<void> {
  let target = r.report;
  if (!target) {
    const reply = await request(ServerCommand.showReport, [taskArgs(r.taskId)]);
    const t = reportTarget(reply);
    if (t.markdown) {
      await showAnswer({ taskId: r.taskId, status: 'completed', answer: t.markdown });
      return;
    }
    target = t.uri;
  }
  if (!target) throw new Error(`task ${r.taskId} has no report`);
  await openPreview(vscode.Uri.parse(target));
}

/** resultOf asks the server for a task's whole result (agentls.result), for tasks of any session. */
async function resultOf(id: string): Promise<RunResult | undefined> {
  try {
    return parseResult(await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.result, arguments: [taskArgs(id)] }));
  } catch (err) {
    log.info(`${ServerCommand.result} ${id}: ${errorText(err)}`);
    return undefined;
  }
}

async function listTasks(): Promise<TaskInfo[]> {
  const reply = await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.tasks, arguments: [] });
  return parseTasks(reply);
}

/** A node of the tasks view: a task, or one item of its plan. */
type Node = { task: TaskInfo } | { item: { text: string; state: string }; parent: TaskInfo };

function taskIcon(t: TaskInfo): vscode.ThemeIcon {
  if (isRunning(t.state)) return new vscode.ThemeIcon('sync~spin');
  switch (t.state) {
    case 'completed': return new vscode.ThemeIcon(t.mode === 'plan' ? 'checklist' : 'check');
    case 'failed': return new vscode.ThemeIcon('error');
    case 'interrupted': return new vscode.ThemeIcon('debug-pause');
    case 'undone': return new vscode.ThemeIcon('discard');
    default: return new vscode.ThemeIcon('circle-slash');
  }
}

const itemIcons: Record<string, string> = { done: 'pass', active: 'arrow-right', todo: 'circle-large-outline', skipped: 'circle-slash' };

/**
 * TasksView is the "agentls tasks" tree: every task agentls.tasks lists
 * (this session and earlier ones), newest first, each with its plan as a
 * checklist. It is refreshed when a task ends and, throttled, on progress.
 */
class TasksView implements vscode.TreeDataProvider<Node> {
  private changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private tasks: TaskInfo[] = [];
  private timer: NodeJS.Timeout | undefined;

  refresh(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!client || !client.isRunning()) return;
    listTasks().then((t) => {
      this.tasks = t.reverse();
      this.changed.fire(undefined);
    }, (err) => log.debug(`agentls.tasks: ${errorText(err)}`));
  }

  /** refreshSoon refreshes at most twice a second while progress flows. */
  refreshSoon(): void {
    if (!this.timer) this.timer = setTimeout(() => this.refresh(), 500);
  }

  getTreeItem(n: Node): vscode.TreeItem {
    if ('task' in n) {
      const t = n.task;
      const it = new vscode.TreeItem(t.prompt || t.id, t.plan.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
      // The id changes when the task first gets a plan: VS Code keeps a
      // node it knew as a leaf childless even once it is drawn expanded.
      it.id = `task:${t.id}${t.plan.length > 0 ? ':plan' : ''}`;
      it.description = [t.state, t.mode, t.progress, t.duration].filter((s) => s).join(' · ');
      it.tooltip = `${t.prompt}\n\ntask ${t.id} · ${t.state}${t.started ? ` · started ${humanTime(t.started)}` : ''}`;
      it.iconPath = taskIcon(t);
      it.contextValue = `task.${isRunning(t.state) ? 'running' : t.state}${t.mode === 'plan' ? '.plan' : ''}`;
      // A finished task opens its answer; a running one has nothing to show yet.
      if (!isRunning(t.state)) it.command = { command: 'agentls.showAnswer', title: 'Show answer', arguments: [n] };
      return it;
    }
    const it = new vscode.TreeItem(n.item.text, vscode.TreeItemCollapsibleState.None);
    const mark = statusMark(n.item.state === 'todo' ? 'pending' : n.item.state === 'active' ? 'in_progress' : n.item.state);
    it.description = mark;
    it.tooltip = `${mark} ${n.item.text}`;
    it.iconPath = new vscode.ThemeIcon(itemIcons[n.item.state] ?? 'circle-large-outline');
    return it;
  }

  getChildren(n?: Node): Node[] {
    if (!n) return this.tasks.map((task) => ({ task }));
    if ('task' in n) return n.task.plan.map((item) => ({ item, parent: n.task }));
    return [];
  }
}
const tasksView = new TasksView();

/** pickTask: the task a command is about, from the tree node it was run on or a QuickPick over agentls.tasks. */
async function pickTask(arg: unknown, title: string, keep: (t: TaskInfo) => boolean): Promise<TaskInfo | undefined> {
  if (arg && typeof arg === 'object' && 'task' in arg) return (arg as { task: TaskInfo }).task;
  const tasks = (await listTasks()).filter(keep).reverse();
  if (tasks.length === 0) {
    vscode.window.showInformationMessage(`agentls: no task to ${title.toLowerCase()}`);
    return undefined;
  }
  const item = await vscode.window.showQuickPick(
    tasks.map((t) => ({ label: t.prompt || t.id, description: [t.id, t.state, t.mode, t.duration].filter((s) => s).join(' · '), detail: t.plan.length > 0 ? t.plan.map((p) => `${statusMark(p.state === 'todo' ? 'pending' : p.state === 'active' ? 'in_progress' : p.state)} ${p.text}`).join('   ') : humanTime(t.started), task: t })),
    { title: `agentls: ${title} which task?`, matchOnDescription: true, ignoreFocusOut: true },
  );
  return item?.task;
}

// ---- commands -----------------------------------------------------------

function editorContext(): { uri?: string; range?: RunRequest['range']; selected: string } {
  const ed = vscode.window.activeTextEditor;
  if (!ed || ed.document.uri.scheme === answerScheme) return { selected: '' };
  const uri = client ? client.code2ProtocolConverter.asUri(ed.document.uri) : ed.document.uri.toString();
  const sel = ed.selection;
  // VS Code positions are UTF-16 based, like LSP's default encoding.
  const range = { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } };
  return { uri, range, selected: ed.document.getText(sel) };
}

async function promptAndRun(title: string, mode?: RunRequest['mode']): Promise<void> {
  const prompt = await vscode.window.showInputBox({ title: `agentls: ${title}`, prompt: mode === 'plan' ? 'What should the agent plan? (it explores read-only and proposes a plan)' : 'What should the agent do? (a question is answered, a change is made)', ignoreFocusOut: true });
  if (!prompt || prompt.trim() === '') return;
  // A selection makes the task about those lines; a bare cursor does not.
  const { uri, range, selected } = editorContext();
  await runTask({ prompt, mode, uri, range: selected.trim() !== '' ? range : undefined });
}

/** cmdRunCustomCommand picks a custom command (agentls.prompts), asks for its arguments when it takes some, and runs it. */
async function cmdRunCustomCommand(): Promise<void> {
  const list = parsePrompts(await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.prompts, arguments: [] }));
  if (list.length === 0) {
    vscode.window.showInformationMessage('agentls: no custom commands (add Markdown files to .agentls/commands/)');
    return;
  }
  const item = await vscode.window.showQuickPick(
    list.map((p) => ({ label: `/${p.name}`, description: p.argumentHint ?? '', detail: `${p.description} (${p.scope})`, prompt: p })),
    { title: 'agentls: Run custom command', matchOnDetail: true },
  );
  if (!item) return;
  let args = '';
  if (item.prompt.argumentHint) {
    const v = await vscode.window.showInputBox({ title: `agentls: /${item.prompt.name}`, prompt: item.prompt.argumentHint, ignoreFocusOut: true });
    if (v === undefined) return;
    args = v;
  }
  await runTask(promptRunRequest(item.prompt, args, editorContext()));
}

/** cmdShowTools shows every tool the model has and every hook (agentls.tools). */
async function cmdShowTools(): Promise<void> {
  const reply = await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.tools, arguments: [] });
  const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: toolsMarkdown(reply) });
  await vscode.window.showTextDocument(doc, { preview: true });
}

async function cmdAskSelection(): Promise<void> {
  const ed = vscode.window.activeTextEditor;
  if (!ed) {
    vscode.window.showWarningMessage('agentls: open a file and select code to ask about');
    return;
  }
  const ctxNow = editorContext();
  const uri = ctxNow.uri;
  let { range, selected } = ctxNow;
  if (selected.trim() === '') {
    const word = ed.document.getWordRangeAtPosition(ed.selection.active);
    if (!word) {
      vscode.window.showWarningMessage('agentls: select code or put the cursor on a symbol');
      return;
    }
    selected = ed.document.getText(word);
    range = { start: { line: word.start.line, character: word.start.character }, end: { line: word.end.line, character: word.end.character } };
  }
  const short = selected.length > 40 ? `${selected.slice(0, 40)}…` : selected;
  const question = await vscode.window.showInputBox({ title: `agentls: Ask about ${short}`, value: 'Explain this code.', ignoreFocusOut: true });
  if (!question) return;
  await runTask({ prompt: question, mode: 'ask', uri, range });
}

async function cmdCancelTask(arg?: unknown): Promise<void> {
  let task: TaskInfo | undefined;
  if (arg && typeof arg === 'object' && 'task' in arg) {
    task = (arg as { task: TaskInfo }).task;
  } else {
    let tasks;
    try {
      tasks = (await listTasks()).filter((t) => isRunning(t.state));
    } catch (err) {
      log.warn(`agentls.tasks failed, cancelling this window's tasks: ${String(err)}`);
      for (const r of runs.values()) r.cancel();
      return;
    }
    if (tasks.length === 0) {
      if (runs.size === 0) {
        vscode.window.showInformationMessage('agentls: no task is running');
        return;
      }
      for (const r of runs.values()) r.cancel();
      return;
    }
    task = tasks[0];
    if (tasks.length > 1) {
      const item = await vscode.window.showQuickPick(tasks.map((t) => ({ label: t.prompt || t.id, description: `${t.id} · ${t.state} ${t.progress}`, task: t })), { title: 'agentls: Cancel which task?' });
      if (!item) return;
      task = item.task;
    }
  }
  await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.cancel, arguments: [taskArgs(task.id)] });
}

async function cmdShowTasks(): Promise<void> {
  await vscode.commands.executeCommand('agentls.tasks.focus');
  tasksView.refresh();
}

async function cmdShowAnswer(arg?: unknown): Promise<void> {
  const t = await pickTask(arg, 'Show the answer of', (x) => !isRunning(x.state));
  if (!t) return;
  const r = (lastResult && lastResult.taskId === t.id ? lastResult : undefined) ?? (await resultOf(t.id));
  if (r) {
    prompts.set(t.id, prompts.get(t.id) ?? t.prompt);
    await showAnswer(r);
    return;
  }
  // A server without agentls.result: the report has the whole answer.
  await showReport({ taskId: t.id });
}

async function cmdShowReportOf(arg?: unknown): Promise<void> {
  const t = await pickTask(arg, 'Show the report of', (x) => !isRunning(x.state));
  if (t) await showReport({ taskId: t.id });
}

async function cmdShowLastReport(): Promise<void> {
  if (!lastResult) {
    vscode.window.showInformationMessage('agentls: no task has finished in this window yet');
    return;
  }
  await showReport(lastResult);
}

async function cmdUndoTask(arg?: unknown): Promise<void> {
  const t = await pickTask(arg, 'Undo', (x) => !isRunning(x.state) && x.mode !== 'ask' && x.mode !== 'plan');
  if (!t) return;
  try {
    // The server says what it reverted in a message of its own.
    await request(ServerCommand.undo, [taskArgs(t.id)]);
  } catch (err) {
    showError(errorText(err));
  }
  tasksView.refresh();
}

async function cmdResumeTask(arg?: unknown): Promise<void> {
  const t = await pickTask(arg, 'Resume', (x) => x.state === 'interrupted');
  if (!t) return;
  await runCommand(ServerCommand.resume, taskArgs(t.id), t.prompt || t.id);
}

async function executePlan(id: string): Promise<void> {
  const args = executePlanArgs(id);
  await runCommand(ServerCommand.run, args, `${args.prompt} (plan ${id})`);
}

async function cmdExecutePlan(arg?: unknown): Promise<void> {
  const t = await pickTask(arg, 'Execute the plan of', (x) => x.mode === 'plan' && x.state === 'completed');
  if (t) await executePlan(t.id);
}

async function cmdSetApiKey(): Promise<void> {
  const key = await vscode.window.showInputBox({ title: 'agentls: Set API key', prompt: `Stored in VS Code secret storage and passed to the server as ${keyEnvName()}. Empty removes it.`, password: true, ignoreFocusOut: true });
  if (key === undefined) return;
  if (key.trim() === '') {
    await ctx.secrets.delete(secretKey);
  } else {
    await ctx.secrets.store(secretKey, key.trim());
  }
  log.info(`API key ${key.trim() === '' ? 'removed' : 'stored'}; restarting the server`);
  await restartClient();
  vscode.window.showInformationMessage(`agentls: API key ${key.trim() === '' ? 'removed' : 'saved'}; server restarted`);
}

/** askForKeyOnce: at start, without a key anywhere, offer to set one (once per "Not needed"). */
async function askForKeyOnce(): Promise<void> {
  const stored = await ctx.secrets.get(secretKey);
  const keyEnv = keyEnvName();
  if (!keyPromptNeeded({ stored, env: process.env, keyEnv, dismissed: ctx.globalState.get<boolean>(noKeyNeededKey) })) return;
  log.info(`no API key: none in secret storage and ${keyEnv} is not set`);
  const pick = await vscode.window.showWarningMessage(`agentls: no API key is set, so the model service will refuse its tasks (a local model server may need none). The key is kept in VS Code's secret storage.`, setKeyAction, 'Not needed');
  if (pick === setKeyAction) await vscode.commands.executeCommand('agentls.setApiKey');
  else if (pick === 'Not needed') await ctx.globalState.update(noKeyNeededKey, true);
}

function guard(fn: (...args: unknown[]) => Promise<void>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    try {
      await ensureClient();
      await fn(...args);
    } catch (err) {
      showError(errorText(err));
    }
  };
}

/**
 * extendMarkdownIt adds the answer preview's guard to VS Code's markdown
 * preview (contributes "markdown.markdownItPlugins"): in agentls answers
 * and task reports, remote images, links that carry data and raw HTML are
 * shown as text (inertTokens), whatever the server sent.
 */
export function extendMarkdownIt(md: { core: { ruler: { push(name: string, rule: (state: { tokens: MdToken[]; env?: { currentDocument?: { scheme?: string; path?: string } } }) => void): void } } }): unknown {
  md.core.ruler.push('agentls_inert', (state) => {
    if (isAgentlsDocument(state.env?.currentDocument)) inertTokens(state.tokens);
  });
  return md;
}

export async function activate(context: vscode.ExtensionContext): Promise<{ extendMarkdownIt: typeof extendMarkdownIt }> {
  ctx = context;
  log = vscode.window.createOutputChannel('agentls', { log: true });
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.name = 'agentls';
  status.command = 'agentls.cancelTask';
  context.subscriptions.push(
    log,
    status,
    answerChanged,
    vscode.workspace.registerTextDocumentContentProvider(answerScheme, {
      onDidChange: answerChanged.event,
      provideTextDocumentContent: (uri) => answers.get(uri.toString()) ?? '(this answer is no longer in memory: use "agentls: Show answer")',
    }),
    vscode.window.createTreeView('agentls.tasks', { treeDataProvider: tasksView, showCollapseAll: true }),
    vscode.commands.registerCommand('agentls.runTask', guard(() => promptAndRun('Run task'))),
    vscode.commands.registerCommand('agentls.planTask', guard(() => promptAndRun('Plan task', 'plan'))),
    vscode.commands.registerCommand('agentls.executePlan', guard(cmdExecutePlan)),
    vscode.commands.registerCommand('agentls.askSelection', guard(cmdAskSelection)),
    vscode.commands.registerCommand('agentls.runCustomCommand', guard(cmdRunCustomCommand)),
    vscode.commands.registerCommand('agentls.showTools', guard(cmdShowTools)),
    vscode.commands.registerCommand('agentls.cancelTask', guard(cmdCancelTask)),
    vscode.commands.registerCommand('agentls.undoTask', guard(cmdUndoTask)),
    vscode.commands.registerCommand('agentls.resumeTask', guard(cmdResumeTask)),
    vscode.commands.registerCommand('agentls.showTasks', guard(cmdShowTasks)),
    vscode.commands.registerCommand('agentls.refreshTasks', guard(async () => tasksView.refresh())),
    vscode.commands.registerCommand('agentls.showAnswer', guard(cmdShowAnswer)),
    vscode.commands.registerCommand('agentls.openReport', guard(cmdShowReportOf)),
    vscode.commands.registerCommand('agentls.showLastReport', guard(cmdShowLastReport)),
    vscode.commands.registerCommand('agentls.setApiKey', guard(cmdSetApiKey)),
    vscode.commands.registerCommand('agentls.restartServer', guard(restartClient)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(settingsSection)) return;
      // A new program, key variable or model service starts a new server:
      // the server takes the settings of initialize as the user's, and asks
      // before a later change sends the key elsewhere.
      if (['path', 'apiKeyEnv', 'baseURL'].some((k) => e.affectsConfiguration(`${settingsSection}.${k}`))) {
        restartClient().catch(() => undefined);
        return;
      }
      if (client && client.isRunning()) {
        client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [settingsSection]: readSettings() } });
      }
    }),
    context.secrets.onDidChange((e) => {
      if (e.key === secretKey) log.info('API key changed in secret storage');
    }),
    vscode.languages.onDidChangeDiagnostics((e) => noteDiagnostics(e.uris)),
  );
  noteDiagnostics(vscode.languages.getDiagnostics().map(([uri]) => uri));
  askForKeyOnce().catch((err) => log.warn(`API key prompt: ${errorText(err)}`));
  try {
    await startClient();
  } catch {
    // Reported to the user in startClient; the commands stay available.
  }
  return { extendMarkdownIt };
}

export async function deactivate(): Promise<void> {
  for (const a of [...approvals]) a.withdraw();
  stopping = true;
  if (client) await client.stop();
}
