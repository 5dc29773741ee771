package session

import (
	"fmt"
	"path"
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/render"
)

// A task may change files that other programs read as instructions to run
// programs: git (attributes name filters and diff drivers), editors
// (settings name language servers, formatters and tasks), shells (direnv),
// package managers, hook managers and CI (with the repository's secrets).
// agentls runs none of them, but the user's next `git status`, a reopened
// folder, `npm install` or `git push` would. The
// report lists every such file the task changed, so the user reviews it
// first. The lists below name what is known to run programs; a file they
// miss is no less a change the report shows in "Files changed".
// (.editorconfig is not listed: it sets indentation and line endings, and
// names no program.)

// programFileNames are file names (any folder) and why they matter.
var programFileNames = map[string]string{
	".gitattributes":          "git runs the filters and diff drivers it names (git status, git diff)",
	".gitmodules":             "git clones and runs the submodules it names (git submodule update)",
	".gitconfig":              "git settings: programs run by git if included",
	".lfsconfig":              "git-lfs settings (git checkout, git pull)",
	".envrc":                  "direnv runs it as a shell script when you enter the folder",
	".pre-commit-config.yaml": "pre-commit runs the hooks it names on git commit",
	"lefthook.yml":            "lefthook runs the commands it names on git hooks",
	"lefthook.yaml":           "lefthook runs the commands it names on git hooks",
	".lefthook.yml":           "lefthook runs the commands it names on git hooks",
	"lefthook-local.yml":      "lefthook runs the commands it names on git hooks",
	".overcommit.yml":         "overcommit runs the hooks it names on git hooks",
	".mcp.json":               "agents and editors start the MCP servers it names",
	".dir-locals.el":          "Emacs evaluates its settings when you open a file here",
	".dir-locals-2.el":        "Emacs evaluates its settings when you open a file here",
	".nvim.lua":               "Neovim runs it (exrc) when you open the folder",
	".nvimrc":                 "Neovim runs it (exrc) when you open the folder",
	".exrc":                   "Vim and Neovim run it (exrc) when you open the folder",
	".lazy.lua":               "lazy.nvim loads it as plugin code",
	".npmrc":                  "npm settings can name the shell and node options scripts run with",
	".yarnrc":                 "yarn settings",
	".yarnrc.yml":             "yarn runs the file its yarnPath names on every yarn command",
	".pnpmfile.cjs":           "pnpm runs it on pnpm install",
	".bazelrc":                "bazel settings can name programs to run under",
	".mise.toml":              "mise runs the hooks and tasks it names",
	"mise.toml":               "mise runs the hooks and tasks it names",
	".gitlab-ci.yml":          "CI runs it on push, with the repository's secrets",
	".travis.yml":             "CI runs it on push, with the repository's secrets",
	"azure-pipelines.yml":     "CI runs it on push, with the repository's secrets",
	"bitbucket-pipelines.yml": "CI runs it on push, with the repository's secrets",
	"Jenkinsfile":             "CI runs it on push, with the repository's secrets",
}

// programFilePaths are files named by their last two or three path
// elements.
var programFilePaths = map[string]string{
	".circleci/config.yml":                     "CI runs it on push, with the repository's secrets",
	".vscode/settings.json":                    "VS Code settings name language servers, formatters and linters it starts",
	".vscode/tasks.json":                       "VS Code tasks can run when the folder opens (runOn: folderOpen)",
	".vscode/launch.json":                      "VS Code launch configurations name programs to start",
	".vscode/mcp.json":                         "VS Code starts the MCP servers it names",
	".cursor/mcp.json":                         "Cursor starts the MCP servers it names",
	".zed/settings.json":                       "Zed settings name language servers and formatters it starts",
	".zed/tasks.json":                          "Zed tasks name programs to run",
	".helix/config.toml":                       "Helix settings",
	".helix/languages.toml":                    "Helix starts the language servers and formatters it names",
	".cargo/config.toml":                       "cargo runs the runners and wrappers it names (cargo build, cargo run)",
	".cargo/config":                            "cargo runs the runners and wrappers it names (cargo build, cargo run)",
	".claude/settings.json":                    "Claude Code runs the hooks it names",
	".claude/settings.local.json":              "Claude Code runs the hooks it names",
	".mvn/jvm.config":                          "Maven passes it to the JVM",
	".mvn/wrapper/maven-wrapper.properties":    "the Maven wrapper downloads and runs the distribution it names",
	"gradle/wrapper/gradle-wrapper.properties": "the Gradle wrapper downloads and runs the distribution it names",
}

// programFileDirs are folders whose every file matters.
var programFileDirs = map[string]string{
	".git":          "git's own folder: config, hooks and attributes git runs",
	".husky":        "husky runs these scripts as git hooks",
	".githooks":     "git hooks, when core.hooksPath names this folder",
	".idea":         "JetBrains IDEs read run configurations and tool settings from it",
	".agentls":      "agentls's own settings and state",
	".devcontainer": "dev containers run the commands and images it names",
}

// programFileSuffixes are file name endings.
var programFileSuffixes = map[string]string{
	".code-workspace":   "VS Code workspace settings name programs it starts",
	".sublime-project":  "Sublime Text project settings name build systems",
	".sublime-settings": "Sublime Text settings",
}

// runsPrograms reports whether the workspace path p (slash-separated) is a
// file that makes tools run programs, and why.
func runsPrograms(p string) (string, bool) {
	p = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	comps := strings.Split(p, "/")
	for i, c := range comps[:len(comps)-1] {
		if why, ok := programFileDirs[c]; ok {
			return why, true
		}
		if c == ".github" && comps[i+1] == "workflows" && i+2 < len(comps) {
			return "CI runs these workflows on push, with the repository's secrets", true
		}
	}
	base := comps[len(comps)-1]
	if why, ok := programFileNames[base]; ok {
		return why, true
	}
	for n := 2; n <= 4 && n <= len(comps); n++ {
		if why, ok := programFilePaths[strings.Join(comps[len(comps)-n:], "/")]; ok {
			return why, true
		}
	}
	for suf, why := range programFileSuffixes {
		if strings.HasSuffix(base, suf) {
			return why, true
		}
	}
	return "", false
}

// programFiles are the files the task changed that make tools run
// programs, in the order of res.Files, with why.
func programFiles(res *agent.Result) (paths, whys []string) {
	if res == nil {
		return nil, nil
	}
	for _, f := range res.Files {
		if why, ok := runsPrograms(f.Path); ok {
			paths = append(paths, f.Path)
			whys = append(whys, why)
		}
	}
	return paths, whys
}

// programFilesSection is the report's warning about the files the task
// changed that make tools run programs; "" when there are none.
func programFilesSection(res *agent.Result) string {
	paths, whys := programFiles(res)
	if len(paths) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Files that make tools run programs\n\n")
	b.WriteString("The task changed files that git, editors or other tools read as programs to run. " +
		"Review them (see Files changed) before you run git, reopen the folder or install dependencies:\n\n")
	for i, p := range paths {
		fmt.Fprintf(&b, "- %s: %s\n", render.Cell(p), whys[i])
	}
	return b.String()
}

// programFilesNote is the summary's warning: "" when the task changed no
// such file.
func programFilesNote(res *agent.Result) string {
	paths, _ := programFiles(res)
	if len(paths) == 0 {
		return ""
	}
	if len(paths) > 3 {
		paths = append(paths[:3:3], fmt.Sprintf("and %d more", len(paths)-3))
	}
	return "; review before running git or reopening the folder, it changed files that make tools run programs: " + strings.Join(paths, ", ")
}
