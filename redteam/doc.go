// Package redteam holds agentls's red-team suite: attacks that a hostile
// repository or a prompt-injected model makes on the boundary of the
// server, organised by family (git configuration, the sandbox's file
// system, network and sockets, programs on PATH and the server's own
// binary, settings trust, exfiltration through what the editor renders,
// resource exhaustion, secrets by value, secrets by alias, MCP secrets).
//
// Each attack is one attempt: it runs for real (a real server over pipes,
// a scripted model over HTTP, real files, real processes in the real
// sandbox) and reports whether it escaped or held. The suite fails on any
// escape, and prints one line per family with its counts (scripts/redteam
// shows them in make test). The package has no production code.
package redteam
