// Every message agentls sent to agent-shell, validated against the v1
// schema of @agentclientprotocol/sdk (editors/testing/acpx/acp_schema.mjs,
// the acpx suite's check). The agent-shell suite starts agentls through a
// recorder (run-agent-shell-e2e) that copies each `agentls acp` process's
// stdin to PID.in.jsonl and its stdout to PID.out.jsonl; a response is
// checked against the result of the method of the client's request it
// answers (found in the same process's stdin).
//
//   node schema_check.mjs TRACEDIR
// Prints one JSON line {processes, checked, invalid: [...]}; exit 1 when a
// message is invalid or unparsable, or nothing was recorded.
import fs from "node:fs";
import path from "node:path";
import { agentMessages, schemaPath } from "../acpx/acp_schema.mjs";

const dir = process.argv[2];
const lines = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim());
const validation = agentMessages();
let processes = 0;
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".out.jsonl")).sort()) {
  processes++;
  const asked = new Map(); // the client's request id -> method
  const inFile = path.join(dir, f.replace(/\.out\.jsonl$/, ".in.jsonl"));
  for (const l of fs.existsSync(inFile) ? lines(inFile) : []) {
    const m = JSON.parse(l);
    if (m.method && m.id !== undefined) asked.set(JSON.stringify(m.id), m.method);
  }
  for (const l of lines(path.join(dir, f))) {
    let m;
    try {
      m = JSON.parse(l);
    } catch {
      validation.invalid.push({ what: "not JSON", msg: l.slice(0, 300) });
      continue;
    }
    if (!m.method) m._method = asked.get(JSON.stringify(m.id));
    validation.validate(m);
  }
}
console.log(JSON.stringify({ processes, checked: validation.checked, schema: path.relative(process.cwd(), schemaPath), invalid: validation.invalid }));
process.exit(validation.invalid.length || !validation.checked ? 1 : 0);
