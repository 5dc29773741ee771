// End-to-end test of `agentls acp` driven by the official ACP TypeScript SDK
// client (@agentclientprotocol/sdk, protocol v1) against the real binary and
// `agentls fake-model` (model.json). Every message the server sends is
// validated against the ACP JSON schema shipped in the SDK package.
//
// Environment (set by editors/testing/run-acp-e2e): AGENTLS_BIN, AGENTLS_E2E_WS
// (a fresh copy of the fixture workspace), AGENTLS_E2E_ARTIFACTS, and the
// model's OPENAI_BASE_URL / OPENAI_API_KEY / AGENTLS_MODEL.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";

const BIN = process.env.AGENTLS_BIN;
const WS = process.env.AGENTLS_E2E_WS;
const ART = process.env.AGENTLS_E2E_ARTIFACTS || ".";
assert.ok(BIN && WS, "AGENTLS_BIN and AGENTLS_E2E_WS must be set (run editors/testing/run-acp-e2e)");
const MAIN = path.join(WS, "main.go");
const UNSAVED = "// unsaved: typed in the editor, not yet on disk\n";

// ---- schema validation of everything the server sends ----
// The schema of the SDK version in use (the package exports no path to it).
const schemaPath = path.join(path.dirname(new URL(import.meta.url).pathname), "node_modules/@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(fs.readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const f of ["int64", "int32", "uint64", "uint32", "uint16"]) ajv.addFormat(f, { type: "number", validate: Number.isInteger });
ajv.addFormat("double", { type: "number", validate: () => true });
ajv.addFormat("uri", { type: "string", validate: (s) => /^[a-z][a-z0-9+.-]*:/i.test(s) });
ajv.addSchema(schema, "acp");
const whole = ajv.compile({ $ref: "acp" });
const def = (name) => ajv.getSchema(`acp#/$defs/${name}`) || assert.fail(`no $defs/${name} in the schema`);
const requestParams = { "session/request_permission": "RequestPermissionRequest", "fs/read_text_file": "ReadTextFileRequest", "fs/write_text_file": "WriteTextFileRequest" };
const responseResult = {
  initialize: "InitializeResponse", "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
  "session/list": "ListSessionsResponse", "session/prompt": "PromptResponse", "session/set_mode": "SetSessionModeResponse",
  "session/resume": "ResumeSessionResponse", "session/close": "CloseSessionResponse", "session/set_config_option": "SetSessionConfigOptionResponse",
  "session/delete": "DeleteSessionResponse", authenticate: "AuthenticateResponse",
};
const validation = { checked: 0, invalid: [] };
function validateFromServer(msg, sentMethods) {
  validation.checked++;
  const fail = (what, errors) => validation.invalid.push({ what, errors, msg });
  if (!whole(msg)) fail("message (top-level schema)", whole.errors);
  let v;
  if (msg.method && msg.id !== undefined) {
    const name = requestParams[msg.method];
    if (!name) return fail(`unknown request method ${msg.method}`, []);
    v = def(name);
    if (!v(msg.params)) fail(msg.method, v.errors);
  } else if (msg.method) {
    if (msg.method !== "session/update") return fail(`unknown notification ${msg.method}`, []);
    v = def("SessionNotification");
    if (!v(msg.params)) fail(msg.method, v.errors);
  } else if (msg.error) {
    v = def("Error");
    if (!v(msg.error)) fail("error response", v.errors);
  } else {
    const method = sentMethods.get(JSON.stringify(msg.id));
    const name = responseResult[method];
    if (!name) return fail(`response to unknown request ${JSON.stringify(msg.id)} (${method})`, []);
    v = def(name);
    if (!v(msg.result)) fail(`${method} response`, v.errors);
  }
}

// ---- the server and the SDK client ----
const allSent = []; // every message from the server, for the artifacts
const updates = []; // session/update params, in order
const permissions = []; // session/request_permission params
const reads = []; // fs/read_text_file paths
const writes = []; // fs/write_text_file params
let permissionAnswer = () => "allow_once";

function startServer(label) {
  const child = spawn(BIN, ["acp"], { cwd: WS, stdio: ["pipe", "pipe", "pipe"], env: process.env });
  const errLog = fs.createWriteStream(path.join(ART, `acp.server-${label}.stderr`));
  child.stderr.pipe(errLog);
  const sentMethods = new Map();
  let inBuf = "";
  let outBuf = "";
  const readable = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (chunk) => {
        inBuf += chunk.toString("utf8");
        let i;
        while ((i = inBuf.indexOf("\n")) >= 0) {
          const line = inBuf.slice(0, i);
          inBuf = inBuf.slice(i + 1);
          if (!line.trim()) continue;
          let msg;
          try {
            msg = JSON.parse(line);
          } catch (e) {
            validation.invalid.push({ what: "not JSON on stdout", errors: [String(e)], msg: line });
            continue;
          }
          allSent.push({ server: label, msg });
          validateFromServer(msg, sentMethods);
        }
        controller.enqueue(new Uint8Array(chunk));
      });
      child.stdout.on("end", () => controller.close());
    },
  });
  const writable = new WritableStream({
    write(chunk) {
      outBuf += Buffer.from(chunk).toString("utf8");
      let i;
      while ((i = outBuf.indexOf("\n")) >= 0) {
        const line = outBuf.slice(0, i);
        outBuf = outBuf.slice(i + 1);
        const m = JSON.parse(line);
        if (m.method && m.id !== undefined) sentMethods.set(JSON.stringify(m.id), m.method);
      }
      return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
    },
    close() {
      child.stdin.end();
    },
  });
  const app = acp
    .client({ name: "agentls-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      permissions.push(params);
      return { outcome: { outcome: "selected", optionId: permissionAnswer(params) } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      reads.push(params.path);
      // The editor holds main.go with an unsaved line; other files as on disk.
      if (params.path === MAIN && !writes.some((w) => w.path === MAIN)) return { content: UNSAVED + fs.readFileSync(MAIN, "utf8") };
      return { content: fs.readFileSync(params.path, "utf8") };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      writes.push(params);
      fs.writeFileSync(params.path, params.content); // an editor that saves what the agent writes
      return {};
    });
  const conn = app.connect(acp.ndJsonStream(writable, readable));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, agent: conn.agent, conn, exited };
}

const of = (sessionId) => updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
const textOf = (sessionId, kind = "agent_message_chunk", from = 0) =>
  of(sessionId).slice(from).filter((u) => u.sessionUpdate === kind && u.content.type === "text").map((u) => u.content.text).join("");
async function waitFor(what, cond, ms = 3000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = cond();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}
async function initialize(agent) {
  return agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
    clientInfo: { name: "agentls-e2e", version: "1" },
  });
}
const prompt = (agent, sessionId, text, extra = []) =>
  agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }, ...extra] });
const link = { type: "resource_link", uri: "file://" + MAIN, name: "main.go" };

// processes whose command line is argv and that descend from pid
function descendantsRunning(pid, argv) {
  const found = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean);
    } catch {
      continue;
    }
    if (cmd.join(" ") !== argv) continue;
    let p = Number(d);
    for (let hops = 0; p > 1 && hops < 20; hops++) {
      if (p === pid) {
        found.push(Number(d));
        break;
      }
      try {
        const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
        p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      } catch {
        break;
      }
    }
  }
  return found;
}
function anyRunning(argv) {
  const found = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ") === argv) found.push(Number(d));
    } catch {}
  }
  return found;
}

let server = startServer("first");
let session1; // the question and the edit; loaded again after the restart
const figures = {};

after(async () => {
  server.child.kill();
  const lines = allSent.map((m) => JSON.stringify(m)).join("\n") + "\n";
  fs.writeFileSync(path.join(ART, "acp.messages.jsonl"), lines);
  fs.writeFileSync(path.join(ART, "acp.figures.json"), JSON.stringify({ ...figures, validated: validation.checked, invalid: validation.invalid.length }, null, 2) + "\n");
  fs.writeFileSync(path.join(ART, "acp.updates.txt"), picture());
});

// picture is the session updates as a client shows them, one line each.
function picture() {
  const out = [];
  let chunk = null; // consecutive chunks of one kind are one line
  for (const u of updates) {
    const x = u.update;
    const s = u.sessionId.slice(0, 12);
    if (x.sessionUpdate.endsWith("_chunk") && x.content.type === "text") {
      const who = { user_message_chunk: "user", agent_message_chunk: "agent", agent_thought_chunk: "thought" }[x.sessionUpdate];
      if (chunk && chunk.key === s + who) {
        chunk.text += x.content.text;
        out[chunk.at] = `${s} ${who}: ${JSON.stringify(chunk.text.length > 160 ? chunk.text.slice(0, 157) + "..." : chunk.text)}`;
      } else {
        chunk = { key: s + who, text: x.content.text, at: out.length };
        out.push(`${s} ${who}: ${JSON.stringify(x.content.text)}`);
      }
      continue;
    }
    chunk = null;
    switch (x.sessionUpdate) {
      case "plan":
        out.push(`${s} plan: ${x.entries.map((e) => `[${e.status}] ${e.content}`).join(" | ")}`);
        break;
      case "tool_call":
        out.push(`${s} tool_call ${x.toolCallId} ${x.kind} ${x.status} "${x.title}" ${(x.locations || []).map((l) => l.path).join(",")}`);
        break;
      case "tool_call_update":
        out.push(`${s} tool_call_update ${x.toolCallId} ${x.status || ""} ${(x.content || []).map((c) => (c.type === "diff" ? `diff ${c.path}` : c.type)).join(",")}`);
        break;
      case "usage_update":
        out.push(`${s} usage_update used=${x.used} size=${x.size}`);
        break;
      default:
        out.push(`${s} ${x.sessionUpdate}`);
    }
  }
  return out.join("\n") + "\n";
}

test("initialize states what agentls can do", async () => {
  const r = await initialize(server.agent);
  assert.equal(r.protocolVersion, 1);
  assert.equal(r.agentCapabilities.loadSession, true);
  assert.equal(r.agentCapabilities.promptCapabilities.embeddedContext, true);
  assert.equal(r.agentCapabilities.promptCapabilities.image, true, "images taken");
  assert.ok(!r.agentCapabilities.promptCapabilities.audio, "no audio");
  assert.ok(r.agentCapabilities.sessionCapabilities.list, "session/list offered");
  assert.deepEqual(r.agentCapabilities.sessionCapabilities.delete, {}, "session/delete offered");
});

test("a question in ask mode is answered, reading the file through the client", async () => {
  const mcp = [{ name: "exits-at-once", command: "/bin/true", args: [], env: [] }];
  const r = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: mcp });
  session1 = r.sessionId;
  assert.equal(r.modes.currentModeId, "edit", "sessions start in edit mode");
  assert.deepEqual(r.modes.availableModes.map((m) => m.id), ["ask", "edit", "plan"]);
  // The client's MCP servers are the session's (their tools join edit tasks).
  assert.match(r._meta.agentls.mcpServers, /^1 used/);
  assert.deepEqual(r._meta.agentls.servers, ["exits-at-once"]);
  const cmds = await waitFor("available_commands_update", () => of(session1).find((u) => u.sessionUpdate === "available_commands_update"));
  for (const c of ["undo", "report", "tasks"]) assert.ok(cmds.availableCommands.some((x) => x.name === c), c);
  await server.agent.request(acp.methods.agent.session.setMode, { sessionId: session1, modeId: "ask" });
  const res = await prompt(server.agent, session1, "ACPQ1: What does Greet return?", [link]);
  assert.equal(res.stopReason, "end_turn");
  assert.match(textOf(session1), /returns "Hello, " followed by the name/);
  assert.match(textOf(session1, "agent_thought_chunk"), /concatenates a prefix and the name/, "the model's reasoning streams as thoughts");
  assert.ok(reads.includes(MAIN), `fs/read_text_file asked for ${MAIN}; reads: ${reads}`);
});

test("an edit task streams its plan and a diff and writes through the client", async () => {
  await server.agent.request(acp.methods.agent.session.setMode, { sessionId: session1, modeId: "edit" });
  const from = of(session1).length;
  permissionAnswer = () => "allow_once";
  const res = await prompt(server.agent, session1, "ACPEDIT: Add a header comment to main.go", [link]);
  assert.equal(res.stopReason, "end_turn", textOf(session1, "agent_message_chunk", from));
  const ups = of(session1).slice(from);
  const plans = ups.filter((u) => u.sessionUpdate === "plan");
  assert.ok(plans.length >= 2, "plan updates");
  assert.deepEqual(plans[0].entries.map((e) => e.status), ["in_progress", "pending"]);
  assert.deepEqual(plans.at(-1).entries.map((e) => e.status), ["completed", "completed"]);
  const call = ups.find((u) => u.sessionUpdate === "tool_call" && u.kind === "edit");
  assert.ok(call, "an edit tool call");
  assert.equal(call.locations[0].path, MAIN, "absolute location");
  const diff = ups
    .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId)
    .flatMap((u) => u.content || [])
    .find((c) => c.type === "diff");
  assert.ok(diff, "a diff on the edit's tool call");
  assert.equal(diff.path, MAIN);
  assert.ok(diff.oldText.startsWith(UNSAVED), "the edit was made on the editor's unsaved text (read through fs/read_text_file)");
  assert.ok(diff.newText.includes("// Package main greets the world.\npackage main\n"));
  const done = ups.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId).at(-1);
  assert.equal(done.status, "completed");
  const usage = ups.filter((u) => u.sessionUpdate === "usage_update");
  assert.ok(usage.length > 0 && usage.every((u) => u.size > 0 && u.used > 0), "usage_update with the context in use and its size");
  const ask = permissions.find((p) => p.sessionId === session1 && p.toolCall.toolCallId === call.toolCallId);
  assert.ok(ask, "the edit asked permission, naming its tool call");
  assert.equal(ask.toolCall.title, undefined, "the permission keeps the call's title");
  const askDiff = (ask.toolCall.content || []).find((c) => c.type === "diff");
  assert.ok(askDiff && askDiff.path === MAIN && askDiff.oldText.startsWith(UNSAVED) && askDiff.newText === diff.newText, "the permission carries the diff");
  const w = writes.find((x) => x.path === MAIN);
  assert.ok(w, "fs/write_text_file for main.go");
  assert.ok(w.content.startsWith(UNSAVED), "the unsaved line survives the edit");
  assert.equal(w.content, diff.newText);
  assert.equal(fs.readFileSync(MAIN, "utf8"), diff.newText);
  assert.match(textOf(session1, "agent_message_chunk", from), /Added a package comment/);
  assert.doesNotMatch(textOf(session1, "agent_message_chunk", from), /PASS/, "the check's verdict is not part of the answer");
  assert.doesNotMatch(textOf(session1, "agent_thought_chunk", from), /PASS/, "the check's verdict is an internal step, not a thought");
});

test("slash commands /tasks and /report are answered by the face; /tasks lists the command line's tasks too", async () => {
  // A task of another face (the command line) in the same workspace store.
  const cli = spawnSync(BIN, ["run", "--workspace", WS, "ACPQ1 from the command line: What does Greet return?"], { env: process.env, encoding: "utf8", timeout: 30000 });
  assert.equal(cli.status, 0, cli.stderr);
  let from = of(session1).length;
  assert.equal((await prompt(server.agent, session1, "/tasks")).stopReason, "end_turn");
  const tasks = textOf(session1, "agent_message_chunk", from);
  assert.match(tasks, /ACPQ1: What does Greet return/);
  assert.match(tasks, /ACPEDIT/);
  assert.match(tasks, /ACPQ1 from the command line/);
  from = of(session1).length;
  await prompt(server.agent, session1, "/report");
  assert.match(textOf(session1, "agent_message_chunk", from), /ACPEDIT/);
});

test("a command that asks permission runs when granted once", async () => {
  const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: [] });
  const n = permissions.length;
  permissionAnswer = () => "allow_once";
  const res = await prompt(server.agent, sessionId, "ACPGRANT: print something with echo");
  assert.equal(res.stopReason, "end_turn");
  const q = permissions.slice(n).find((p) => p.sessionId === sessionId);
  assert.ok(q, "session/request_permission");
  assert.deepEqual(q.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
  const call = of(sessionId).find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === q.toolCall.toolCallId);
  assert.equal(call?.kind, "execute", "the question names the execute tool call the client was shown");
  assert.ok((q.toolCall.content || []).some((c) => c.type === "content" && /\$ .*echo/.test(c.content.text)), "the permission shows the whole command");
  const out = of(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId).flatMap((u) => u.content || []);
  assert.ok(out.some((c) => c.type === "content" && /granted-output-42/.test(c.content.text)), "the tool call shows the command's output");
  assert.match(textOf(sessionId), /The command printed granted-output-42\./);
});

test("the model and the mode are config options a client switches", async () => {
  const r = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: [] });
  const model = r.configOptions.find((o) => o.id === "model");
  const mode = r.configOptions.find((o) => o.id === "mode");
  assert.ok(model && mode, "model and mode options");
  assert.equal(model.category, "model");
  assert.ok(model.options.some((o) => o.value === "fake"), "the service's /models list is offered");
  const res = await server.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: r.sessionId, configId: "model", value: "fake" });
  assert.equal(res.configOptions.find((o) => o.id === "model").currentValue, "fake");
  const res2 = await server.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: r.sessionId, configId: "mode", value: "ask" });
  assert.equal(res2.configOptions.find((o) => o.id === "mode").currentValue, "ask");
  await waitFor("current_mode_update", () => of(r.sessionId).find((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "ask"));
});

test("a command rejected once does not run", async () => {
  const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: [] });
  permissionAnswer = () => "reject_once";
  const res = await prompt(server.agent, sessionId, "ACPREJECT: create a marker file");
  assert.equal(res.stopReason, "end_turn");
  assert.ok(permissions.some((p) => p.sessionId === sessionId), "asked");
  assert.ok(!fs.existsSync(path.join(WS, "rejected-marker")), "the rejected command did not run");
  const call = of(sessionId).find((u) => u.sessionUpdate === "tool_call" && u.kind === "execute");
  const end = of(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId).at(-1);
  assert.equal(end.status, "failed");
  assert.match(textOf(sessionId), /not allowed/);
});

test("cancel in the middle of a command ends the turn as cancelled and leaves no process", async () => {
  const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: [] });
  permissionAnswer = () => "allow_once";
  const turn = prompt(server.agent, sessionId, "ACPSLOW: run a long command");
  const pids = await waitFor("sleep 37 running under agentls", () => {
    const p = descendantsRunning(server.child.pid, "sleep 37");
    return p.length ? p : null;
  }, 10000);
  const t0 = performance.now();
  await server.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  const res = await turn;
  const ms = performance.now() - t0;
  figures.cancelMs = Math.round(ms * 10) / 10;
  assert.equal(res.stopReason, "cancelled");
  console.log(`cancel: stopReason cancelled ${figures.cancelMs} ms after session/cancel`);
  assert.ok(ms < 200, `cancelled turn answered in ${ms} ms (limit 200 ms)`);
  const left = anyRunning("sleep 37");
  figures.processesLeft = left.length;
  assert.deepEqual(left, [], `processes left after cancel (were ${pids})`);
  const call = of(sessionId).find((u) => u.sessionUpdate === "tool_call" && u.kind === "execute");
  const end = of(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId).at(-1);
  assert.equal(end?.status, "failed", "the cancelled command's tool call is closed");
});

test("a session loaded after the server restarted replays its history and continues", async () => {
  // The editor goes away: its end of the pipe closes.
  server.child.stdin.end();
  const { code } = await server.exited;
  server.conn.close();
  assert.equal(code, 0, "the server exits cleanly when the client goes");
  server = startServer("second");
  await initialize(server.agent);
  const list = await server.agent.request(acp.methods.agent.session.list, { cwd: WS });
  const info = list.sessions.find((s) => s.sessionId === session1);
  assert.ok(info, `session/list has ${session1}: ${JSON.stringify(list.sessions.map((s) => s.sessionId))}`);
  assert.equal(info.cwd, WS);
  const from = of(session1).length;
  await server.agent.request(acp.methods.agent.session.load, { sessionId: session1, cwd: WS, mcpServers: [] });
  const replay = of(session1).slice(from);
  const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
  assert.deepEqual(users.map((t) => t.split(":")[0]), ["ACPQ1", "ACPEDIT"]);
  assert.ok(replay.some((u) => u.sessionUpdate === "agent_message_chunk" && /Hello, /.test(u.content.text)), "the answer replayed");
  assert.ok(replay.some((u) => u.sessionUpdate === "tool_call" && (u.content || []).some((c) => c.type === "diff" && c.path === MAIN)), "the edit replayed as a diff");
  assert.ok(replay.every((u) => u.sessionUpdate !== "tool_call" || u.status === "completed" || u.status === "failed"), "replayed calls have ended");
  const mark = of(session1).length;
  const res = await prompt(server.agent, session1, "ACPFOLLOW: what did I ask you last?");
  assert.equal(res.stopReason, "end_turn");
  assert.match(textOf(session1, "agent_message_chunk", mark), /You last asked me to add a package comment/);
});

test("history: session/list titles the sessions; session/delete removes one from the list and the store", async () => {
  const made = await server.agent.request(acp.methods.agent.session.new, { cwd: WS, mcpServers: [] });
  const doomed = made.sessionId;
  const res = await prompt(server.agent, doomed, "ACPDELETE: a session to delete");
  assert.equal(res.stopReason, "end_turn");
  const list = await server.agent.request(acp.methods.agent.session.list, { cwd: WS });
  const titles = Object.fromEntries(list.sessions.map((s) => [s.sessionId, s.title]));
  assert.equal(titles[doomed], "ACPDELETE: a session to delete", "titled by its first prompt");
  assert.equal(titles[session1], "ACPQ1: What does Greet return?", "the first session is titled by its first prompt");
  assert.ok(list.sessions.every((s) => s.updatedAt && !Number.isNaN(Date.parse(s.updatedAt))), "every session has an update time");
  assert.deepEqual(await server.agent.request(acp.methods.agent.session.delete, { sessionId: doomed }), {});
  const after = await server.agent.request(acp.methods.agent.session.list, { cwd: WS });
  assert.ok(!after.sessions.some((s) => s.sessionId === doomed), "the deleted session is not listed");
  assert.ok(after.sessions.some((s) => s.sessionId === session1), "the other session still is");
  await assert.rejects(server.agent.request(acp.methods.agent.session.load, { sessionId: doomed, cwd: WS, mcpServers: [] }), "a deleted session does not load");
});

test("every message the server sent validates against the ACP schema", () => {
  figures.messages = validation.checked;
  console.log(`schema: ${validation.checked} server messages checked against ${path.relative(process.cwd(), schemaPath)}, ${validation.invalid.length} invalid`);
  assert.ok(validation.checked > 30, "messages were checked");
  assert.deepEqual(validation.invalid.map((x) => ({ what: x.what, errors: x.errors?.slice(0, 3), msg: JSON.stringify(x.msg).slice(0, 300) })), []);
});
