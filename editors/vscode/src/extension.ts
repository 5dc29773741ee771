// extension.ts: the VS Code side of agentls. It starts the agentls language
// server over stdio with vscode-languageclient, adds the palette commands,
// shows each task's work-done progress as a cancellable notification plus a
// status bar item, and shows the result with a "Show report" button.
import * as vscode from 'vscode';
import {
  CancellationTokenSource,
  DidChangeConfigurationNotification,
  ExecuteCommandParams,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  ShowMessageNotification,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from 'vscode-languageclient/node';
import {
  ProgressTracker,
  ProgressValue,
  RunRequest,
  RunResult,
  ServerCommand,
  buildRunArgs,
  isRunning,
  parseTasks,
  reportTarget,
  resultView,
  serverEnv,
  serverSettings,
  settingsSection,
  taskTitle,
} from './contract';

const secretKey = 'agentls.openaiApiKey';

/** A task this window started and is waiting for. */
interface LocalRun {
  token: string;
  prompt: string;
  tracker: ProgressTracker;
  cancel: () => void;
}

let client: LanguageClient | undefined;
let log: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;
let ctx: vscode.ExtensionContext;
let lastResult: RunResult | undefined;
const runs = new Map<string, LocalRun>();
let runSeq = 0;

function readSettings() {
  const c = vscode.workspace.getConfiguration(settingsSection);
  return serverSettings({
    model: c.get<string>('model'),
    baseURL: c.get<string>('baseURL'),
    approval: c.get<string>('approval'),
    allowCommands: c.get<unknown>('allowCommands'),
    checkCommand: c.get<string>('checkCommand'),
  });
}

async function startClient(): Promise<void> {
  const path = vscode.workspace.getConfiguration(settingsSection).get<string>('path') || 'agentls';
  const apiKey = await ctx.secrets.get(secretKey);
  const serverOptions: ServerOptions = {
    command: path,
    // No transport: vscode-languageclient would append --stdio; agentls
    // serve speaks stdio without a flag.
    args: ['serve'],
    // The key goes to the server's environment only: never to settings,
    // initializationOptions or the log.
    options: { env: serverEnv(process.env, apiKey) },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    outputChannel: log,
    initializationOptions: readSettings(),
    middleware: {
      // Code actions ("Ask agent about X") run agentls.run through the same
      // path as the palette, so they get the notification and the result.
      executeCommand: async (command, args, next) => {
        if (command === ServerCommand.run && args.length > 0 && args[0] && typeof args[0] === 'object') {
          return runTask(args[0] as RunRequest);
        }
        return next(command, args);
      },
    },
  };
  log.appendLine(`starting ${path} serve (API key ${apiKey ? 'set' : 'not set'} in secret storage)`);
  client = new LanguageClient('agentls', 'agentls', serverOptions, clientOptions);
  try {
    await client.start();
    // The server announces a task's end with window/showMessage (for clients
    // without progress) right before its reply; runTask shows the reply with a
    // "Show report" button, so for our own runs the message only goes to the log.
    const lc = client;
    lc.onNotification(ShowMessageNotification.type, (m) => {
      log.appendLine(`server: ${m.message}`);
      if (runs.size > 0 && m.type >= 2 && m.message.startsWith('agentls')) return;
      const show = m.type === 1 ? vscode.window.showErrorMessage : m.type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
      show(m.message);
    });
  } catch (err) {
    log.appendLine(`agentls did not start: ${String(err)}`);
    vscode.window.showErrorMessage(`agentls: could not start "${path}": ${String(err)}. Set agentls.path.`, 'Open settings').then((pick) => {
      if (pick) vscode.commands.executeCommand('workbench.action.openSettings', 'agentls.path');
    });
    throw err;
  }
}

async function restartClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (err) {
      log.appendLine(`stopping agentls: ${String(err)}`);
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
  status.text = `$(sync~spin) ${first.tracker.statusText()}${more}`;
  status.tooltip = `${first.tracker.title || taskTitle(first.prompt)}\n\n${first.tracker.message}\n\nClick to cancel.`;
  status.show();
}

/**
 * runTask executes agentls.run with our own work-done token, shows the
 * progress as a cancellable notification (the cancel button sends
 * window/workDoneProgress/cancel) and the result as a notification.
 */
async function runTask(req: RunRequest): Promise<RunResult | undefined> {
  const lc = requireClient();
  const args = buildRunArgs(req);
  const token = `agentls-vscode-${process.pid}-${++runSeq}`;
  const tracker = new ProgressTracker();
  const cts = new CancellationTokenSource();
  const run: LocalRun = {
    token,
    prompt: args.prompt,
    tracker,
    cancel: () => {
      log.appendLine(`cancelling ${token}`);
      lc.sendNotification(WorkDoneProgressCancelNotification.type, { token });
    },
  };
  runs.set(token, run);
  refreshStatus();
  log.appendLine(`agentls.run ${JSON.stringify({ ...args, prompt: args.prompt.slice(0, 200) })}`);
  try {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: taskTitle(args.prompt), cancellable: true },
      async (progress, cancel) => {
        cancel.onCancellationRequested(() => run.cancel());
        const sub = lc.onProgress(WorkDoneProgress.type, token, (v) => {
          const step = tracker.update(v as ProgressValue);
          progress.report(step);
          refreshStatus();
        });
        try {
          const params: ExecuteCommandParams = { command: ServerCommand.run, arguments: [args], workDoneToken: token };
          return (await lc.sendRequest(ExecuteCommandRequest.type, params, cts.token)) as RunResult;
        } finally {
          sub.dispose();
        }
      },
    );
    if (result) {
      lastResult = result;
      showResult(result);
    }
    return result;
  } catch (err) {
    log.appendLine(`agentls.run failed: ${String(err)}`);
    vscode.window.showErrorMessage(`agentls: ${errorText(err)}`);
    return undefined;
  } finally {
    runs.delete(token);
    cts.dispose();
    refreshStatus();
  }
}

function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}

function showResult(r: RunResult): void {
  const view = resultView(r);
  log.appendLine(`task ${r.taskId} ${r.status}: ${r.summary ?? ''}`);
  const show = view.severity === 'error' ? vscode.window.showErrorMessage : view.severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  show(view.message, 'Show report').then((pick) => {
    if (pick) showReport(r).catch((err) => vscode.window.showErrorMessage(`agentls: ${errorText(err)}`));
  });
}

async function openMarkdown(markdown: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: markdown });
  await vscode.window.showTextDocument(doc, { preview: true });
}

async function showReport(r: RunResult): Promise<void> {
  if (r.report) {
    await vscode.window.showTextDocument(vscode.Uri.parse(r.report), { preview: true });
    return;
  }
  const reply = await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.showReport, arguments: [{ taskId: r.taskId }] });
  const target = reportTarget(reply);
  if (target.uri) {
    await vscode.window.showTextDocument(vscode.Uri.parse(target.uri), { preview: true });
  } else if (target.markdown) {
    await openMarkdown(target.markdown);
  } else if (r.answer || r.summary) {
    await openMarkdown(`# ${taskTitle(r.taskId)}\n\n${r.answer || r.summary}\n`);
  }
}

function editorContext(): { uri?: string; range?: RunRequest['range']; selected: string } {
  const ed = vscode.window.activeTextEditor;
  if (!ed) return { selected: '' };
  const uri = client ? client.code2ProtocolConverter.asUri(ed.document.uri) : ed.document.uri.toString();
  const sel = ed.selection;
  // VS Code positions are UTF-16 based, like LSP's default encoding.
  const range = { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } };
  return { uri, range, selected: ed.document.getText(sel) };
}

async function cmdRunTask(): Promise<void> {
  const prompt = await vscode.window.showInputBox({ title: 'agentls: Run task', prompt: 'What should the agent do? (a question is answered, a change is made)', ignoreFocusOut: true });
  if (!prompt || prompt.trim() === '') return;
  // A selection makes the task about those lines; a bare cursor does not.
  const { uri, range, selected } = editorContext();
  await runTask({ prompt, uri, range: selected.trim() !== '' ? range : undefined });
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

async function listTasks() {
  const reply = await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.tasks, arguments: [] });
  return parseTasks(reply);
}

async function cmdCancelTask(): Promise<void> {
  let tasks;
  try {
    tasks = (await listTasks()).filter((t) => isRunning(t.state));
  } catch (err) {
    log.appendLine(`agentls.tasks failed, cancelling this window's tasks: ${String(err)}`);
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
  let pick = tasks[0];
  if (tasks.length > 1) {
    const item = await vscode.window.showQuickPick(tasks.map((t) => ({ label: t.prompt || t.id, description: `${t.state} ${t.progress}`, task: t })), { title: 'agentls: Cancel which task?' });
    if (!item) return;
    pick = item.task;
  }
  await requireClient().sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.cancel, arguments: [{ taskId: pick.id }] });
}

async function cmdShowTasks(): Promise<void> {
  const tasks = await listTasks();
  if (tasks.length === 0) {
    vscode.window.showInformationMessage('agentls: no tasks yet');
    return;
  }
  const item = await vscode.window.showQuickPick(
    tasks.map((t) => ({ label: `${isRunning(t.state) ? '$(sync~spin)' : t.state === 'completed' ? '$(check)' : '$(circle-slash)'} ${t.prompt || t.id}`, description: [t.state, t.progress, t.duration].filter((s) => s).join(' · '), detail: t.started, task: t })),
    { title: 'agentls: Tasks (pick one for its report)' },
  );
  if (item) await showReport({ taskId: item.task.id, status: 'completed' });
}

async function cmdShowLastReport(): Promise<void> {
  if (!lastResult) {
    vscode.window.showInformationMessage('agentls: no task has finished in this window yet');
    return;
  }
  await showReport(lastResult);
}

async function cmdSetApiKey(): Promise<void> {
  const key = await vscode.window.showInputBox({ title: 'agentls: Set API key', prompt: 'Stored in VS Code secret storage and passed to the server as OPENAI_API_KEY. Empty removes it.', password: true, ignoreFocusOut: true });
  if (key === undefined) return;
  if (key.trim() === '') {
    await ctx.secrets.delete(secretKey);
  } else {
    await ctx.secrets.store(secretKey, key.trim());
  }
  log.appendLine(`API key ${key.trim() === '' ? 'removed' : 'stored'}; restarting the server`);
  await restartClient();
  vscode.window.showInformationMessage(`agentls: API key ${key.trim() === '' ? 'removed' : 'saved'}; server restarted`);
}

function guard(fn: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await fn();
    } catch (err) {
      vscode.window.showErrorMessage(`agentls: ${errorText(err)}`);
    }
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ctx = context;
  log = vscode.window.createOutputChannel('agentls', { log: true });
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.name = 'agentls';
  status.command = 'agentls.cancelTask';
  context.subscriptions.push(
    log,
    status,
    vscode.commands.registerCommand('agentls.runTask', guard(cmdRunTask)),
    vscode.commands.registerCommand('agentls.askSelection', guard(cmdAskSelection)),
    vscode.commands.registerCommand('agentls.cancelTask', guard(cmdCancelTask)),
    vscode.commands.registerCommand('agentls.showTasks', guard(cmdShowTasks)),
    vscode.commands.registerCommand('agentls.showLastReport', guard(cmdShowLastReport)),
    vscode.commands.registerCommand('agentls.setApiKey', guard(cmdSetApiKey)),
    vscode.commands.registerCommand('agentls.restartServer', guard(restartClient)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(settingsSection)) return;
      if (e.affectsConfiguration(`${settingsSection}.path`)) {
        restartClient().catch(() => undefined);
        return;
      }
      if (client && client.isRunning()) {
        client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [settingsSection]: readSettings() } });
      }
    }),
    context.secrets.onDidChange((e) => {
      if (e.key === secretKey) log.appendLine('API key changed in secret storage');
    }),
  );
  try {
    await startClient();
  } catch {
    // Reported to the user in startClient; the commands stay available.
  }
}

export async function deactivate(): Promise<void> {
  if (client) await client.stop();
}
