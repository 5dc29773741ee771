// The v1 schema of @agentclientprotocol/sdk (pinned by package-lock.json),
// and a validator of the messages an agent sends, by their method: the
// acpx suite (acpx.test.mjs) and the agent-shell suite
// (editors/testing/agent-shell/schema_check.mjs) check every message
// agentls sent with it.
import fs from "node:fs";
import path from "node:path";
import Ajv2020 from "ajv/dist/2020.js";

const here = path.dirname(new URL(import.meta.url).pathname);
export const schemaPath = path.join(here, "node_modules/@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(fs.readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const f of ["int64", "int32", "uint64", "uint32", "uint16"]) ajv.addFormat(f, { type: "number", validate: Number.isInteger });
ajv.addFormat("double", { type: "number", validate: () => true });
ajv.addFormat("uri", { type: "string", validate: (s) => /^[a-z][a-z0-9+.-]*:/i.test(s) });
ajv.addSchema(schema, "acp");
const def = (name) => {
  const v = ajv.getSchema(`acp#/$defs/${name}`);
  if (!v) throw new Error(`no $defs/${name} in ${schemaPath}`);
  return v;
};

// What an agent sends: its requests and notifications by method, and its
// results by the method of the client's request they answer.
export const agentRequests = {
  "session/request_permission": "RequestPermissionRequest", "fs/read_text_file": "ReadTextFileRequest", "fs/write_text_file": "WriteTextFileRequest",
  "elicitation/create": "CreateElicitationRequest",
};
export const agentNotifications = { "session/update": "SessionNotification", "$/cancel_request": "CancelRequestNotification" };
export const agentResults = {
  initialize: "InitializeResponse", authenticate: "AuthenticateResponse", "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
  "session/resume": "ResumeSessionResponse", "session/close": "CloseSessionResponse", "session/list": "ListSessionsResponse",
  "session/prompt": "PromptResponse", "session/set_mode": "SetSessionModeResponse", "session/set_config_option": "SetSessionConfigOptionResponse",
  "session/delete": "DeleteSessionResponse", logout: "LogoutResponse",
};

// agentMessages counts and checks messages an agent sent: validate(m)
// takes one JSON-RPC message, a response carrying the method it answers as
// m._method; checked counts them, invalid lists the failures.
export function agentMessages() {
  const validation = { checked: 0, invalid: [] };
  validation.validate = (m) => {
    validation.checked++;
    const fail = (what, errors) => validation.invalid.push({ what, errors: (errors || []).slice(0, 3), msg: JSON.stringify(m).slice(0, 300) });
    let v;
    if (m.method && m.id !== undefined) {
      const name = agentRequests[m.method];
      if (!name) return fail(`request ${m.method}`, []);
      v = def(name);
      if (!v(m.params)) fail(m.method, v.errors);
    } else if (m.method) {
      const name = agentNotifications[m.method];
      if (!name) return fail(`notification ${m.method}`, []);
      v = def(name);
      if (!v(m.params)) fail(m.method, v.errors);
    } else if (m.error) {
      v = def("Error");
      if (!v(m.error)) fail("error response", v.errors);
    } else {
      const name = agentResults[m._method];
      if (!name) return fail(`response to ${m._method}`, []);
      v = def(name);
      if (!v(m.result)) fail(`${m._method} response`, v.errors);
    }
  };
  return validation;
}
