package tools

import (
	"path"
	"strings"

	"github.com/agentls/agentls/workspace"
)

// SecretFile reports whether the workspace-relative path rel names a file
// that commonly holds secrets: dotenv files (.env, .env.local, prod.env,
// .envrc; not the .env.example, .env.sample, .env.template or .env.dist
// that projects commit as documentation), private keys and key stores
// (*.pem, *.key, *.p12, *.pfx, *.jks, *.keystore, *.ppk, id_rsa and the
// other id_* without an extension, everything under .ssh but public keys
// and known_hosts, everything under .gnupg), credential files of common
// tools (.netrc, .npmrc, .pypirc, .git-credentials, .pgpass, .htpasswd,
// .aws/credentials, .docker/config.json, .kube/config, credentials.json,
// client_secret*.json, *.tfvars). read_file and grep ask the user before
// such a file's content reaches the model, whatever the approval setting.
//
// It goes by name only; SecretTarget and SecretPath also follow links to
// where the file really is.
func SecretFile(rel string) bool {
	rel = strings.ToLower(path.Clean(strings.ReplaceAll(rel, `\`, "/")))
	base := path.Base(rel)
	// Every grep of the whole workspace asks this of each file: no
	// allocation per folder name.
	dir := path.Dir(rel)
	inDir := func(name string) bool {
		for rest := dir; rest != ""; {
			var seg string
			seg, rest, _ = strings.Cut(rest, "/")
			if seg == name {
				return true
			}
		}
		return false
	}
	parent := path.Base(dir)
	switch {
	case inDir(".ssh"):
		return !strings.HasSuffix(base, ".pub") && base != "known_hosts" && base != "config"
	case inDir(".gnupg"):
		return true
	case parent == ".aws" && (base == "credentials" || base == "config"):
		return true
	case parent == ".docker" && base == "config.json":
		return true
	case parent == ".kube" && base == "config":
		return true
	}
	switch base {
	case ".env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", ".htpasswd",
		"credentials.json", ".dockercfg", ".vault-token":
		return true
	}
	if rest, ok := strings.CutPrefix(base, ".env."); ok {
		switch rest {
		case "example", "sample", "template", "dist", "defaults", "schema":
			return false // committed as documentation of the variables
		}
		return true
	}
	switch path.Ext(base) {
	case ".env", ".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".tfvars", ".kdbx":
		return true
	}
	if strings.HasPrefix(base, "id_") && !strings.Contains(base, ".") {
		return true // id_rsa, id_ed25519, id_ecdsa_sk; not id_rsa.pub, not id_test.go
	}
	if strings.HasPrefix(base, "client_secret") && strings.HasSuffix(base, ".json") {
		return true
	}
	return false
}

// SecretTarget reports whether the file name (relative to root, or
// absolute) holds secrets by the name used or by its real target, every
// symbolic link on the way resolved: docs/setup.txt -> ../.env is secret.
// It is the one rule of secret files by target; the context gate
// (agent/ctxgate) applies it to every file whose text reaches the model.
func SecretTarget(root, name string) bool {
	return SecretFile(name) || SecretFile(workspace.RealTarget(root, name))
}

// SecretPath is SecretTarget for a resolved workspace path.
func SecretPath(p workspace.Path) bool {
	return SecretFile(p.Rel()) || SecretFile(p.Target())
}

// secretSummary is the approval question's text for reading a secret file;
// a link names where it leads.
func secretSummary(verb string, p workspace.Path) string {
	name := p.String()
	if t := p.Target(); t != p.Rel() {
		name += " (a link to " + t + ")"
	}
	return verb + " " + name + ", a file that commonly holds secrets (its content would be sent to the model)"
}
