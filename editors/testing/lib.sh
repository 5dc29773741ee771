# Shared pieces of the editor end-to-end runners (sourced, not run).
# Each runner takes the server to test against:
#   standin  editors/testing/standin-server.js, the contract double (today)
#   agentls  bin/agentls serve + `agentls fake-model --script` (issue 7)

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
  [ -n "${E2E_AUX:-}" ] && rm -rf "$E2E_AUX"
  E2E_AUX=""
}
trap e2e_cleanup EXIT

# e2e_server MODE WORKSPACE MODELSCRIPT: sets E2E_CMD_JSON (the server
# command as a JSON array), E2E_CMD_PATH (one executable, for VS Code's
# agentls.path) and the environment the server reads.
e2e_server() {
  local mode=$1 ws=$2 script=$3
  # Helper files live beside the workspace, not in it.
  ws=$(mktemp -d /tmp/agentls-e2e-aux.XXXXXX)
  E2E_AUX=$ws
  case "$mode" in
    standin)
      export STANDIN_LOG="$ws/.standin.log"
      : >"$STANDIN_LOG"
      E2E_CMD_PATH="$ws/.agentls-standin"
      printf '#!/bin/sh\nexec node %q "$@"\n' "$E2E_ROOT/editors/testing/standin-server.js" >"$E2E_CMD_PATH"
      chmod +x "$E2E_CMD_PATH"
      ;;
    agentls)
      [ -x "$E2E_ROOT/bin/agentls" ] || (cd "$E2E_ROOT" && make -s build)
      local out="$ws/.fake-model.out"
      "$E2E_ROOT/bin/agentls" fake-model --script "$script" --addr 127.0.0.1:0 >"$out" 2>"$ws/.fake-model.err" &
      E2E_PIDS+=($!)
      local i
      for i in $(seq 1 100); do
        [ -s "$out" ] && break
        sleep 0.1
      done
      OPENAI_BASE_URL=$(head -1 "$out")
      [ -n "$OPENAI_BASE_URL" ] || { e2e_log "fake-model printed no URL: $(cat "$ws/.fake-model.err")"; exit 1; }
      export OPENAI_BASE_URL OPENAI_API_KEY=e2e-not-a-key AGENTLS_MODEL=e2e-model
      E2E_CMD_PATH="$E2E_ROOT/bin/agentls"
      ;;
    *) e2e_log "unknown server $mode (standin|agentls)"; exit 2 ;;
  esac
  if [ "$mode" = standin ]; then
    E2E_CMD_JSON="[\"$E2E_CMD_PATH\"]"
  else
    E2E_CMD_JSON="[\"$E2E_CMD_PATH\",\"serve\"]"
  fi
  export E2E_CMD_JSON E2E_CMD_PATH
}
