// Where the agentls program is, when the user set no agentls.path: VS Code
// started from a desktop launcher often has a PATH without the Go bin
// folder that `make install` (go install) writes to. Pure: the caller
// checks which candidate exists.
import * as path from 'path';

/**
 * agentlsCandidates lists, in order, the paths where `agentls` may be: each
 * folder of PATH, then GOBIN, each GOPATH entry's bin, the GOPATH that
 * `go env GOPATH` printed (goEnvGopath, when the caller asked go), and
 * ~/go/bin (Go's default GOPATH). No path is listed twice.
 */
export function agentlsCandidates(env: Record<string, string | undefined>, home: string, goEnvGopath?: string, exe = 'agentls'): string[] {
  const dirs: string[] = [];
  for (const d of (env.PATH || '').split(path.delimiter)) {
    if (d !== '') dirs.push(d);
  }
  if (env.GOBIN) dirs.push(env.GOBIN);
  for (const g of [env.GOPATH, goEnvGopath]) {
    for (const d of (g || '').split(path.delimiter)) {
      if (d.trim() !== '') dirs.push(path.join(d.trim(), 'bin'));
    }
  }
  if (home) dirs.push(path.join(home, 'go', 'bin'));
  const out: string[] = [];
  for (const d of dirs) {
    const p = path.join(d, exe);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** notFoundMessage is what the user reads when no candidate exists. */
export function notFoundMessage(tried: string[]): string {
  const where = tried.length > 4 ? tried.slice(-3).join(', ') : tried.join(', ');
  return `agentls: the agentls program was not found on PATH nor in the Go bin folders (${where}). Run \`make install\` in the agentls repository, or set agentls.path to the program.`;
}
