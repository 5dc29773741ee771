# agentls build, test and benchmark targets. `make install` then `make test`
# is all a fresh machine needs (see README.md).

GO       ?= go
BIN      := bin/agentls
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
PKGS     := ./...
FUZZTIME ?= 10s

.PHONY: all build install deps test unit static redteam lint fuzz eval bench e2e vscode clean

all: build

# The binary is static (CGO_ENABLED=0; SQLite is modernc, pure Go): no
# dynamic loader, so no LD_PRELOAD or LD_LIBRARY_PATH acts on agentls or on
# the sandbox supervisor it re-executes (docs/security.md). Set on each
# build, not exported: commands the tests run keep the user's cgo.
STATIC   := CGO_ENABLED=0

# Two programs (cmd/agentls): agentls, which users start, runs `agentls
# tool` itself and becomes agentls-core, beside it, for everything else.
build:
	$(STATIC) $(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/agentls ./cmd/agentls-core

# install: the system packages the tests drive (ripgrep, neovim, emacs) when
# they are missing, the Go modules, then the binary into bin/ and GOBIN.
install: deps build
	$(STATIC) $(GO) install -ldflags '$(LDFLAGS)' ./cmd/agentls ./cmd/agentls-core

deps:
	./scripts/setup
	./scripts/setup-npm
	$(GO) mod download
	# The npm MCP server the tools/mcp tests run (package-lock.json pins it).
	npm ci --ignore-scripts --no-audit --no-fund --prefix editors/testing/mcp >/dev/null

# test: everything CI checks, in the order that fails fastest.
test: lint static unit redteam fuzz eval e2e

# static: the built binary has no dynamic loader (scripts/check-static).
static: build
	./scripts/check-static $(BIN) $(BIN)-core

unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v /redteam$$)

# redteam: the attacks on the server's boundary, by family (README "Security").
redteam:
	./scripts/redteam

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# fuzz: each fuzz target for a short, bounded time (FUZZTIME each).
fuzz:
	./scripts/fuzz $(FUZZTIME)

# eval: the task suite (README "Evaluating with your model") against each
# task's scripted model, which tests the harness: every task must be solved
# at its minimum calls. EVAL_FLAGS adds flags (e.g. --run go-); without
# --scripted, `bin/agentls eval` runs the suite against the model the
# environment configures. The completion eval (docs/completion.md) runs
# scripted too: its scores must be those its script makes.
EVAL_FLAGS ?=
eval: build
	$(BIN) eval --scripted --parallel 2 --out bin/eval-scripted.json $(EVAL_FLAGS)
	$(BIN) eval --completion --scripted --out bin/eval-completion-scripted.json

# bench: speed and memory figures (see README "Performance").
# BenchmarkAtTheDoor (./cmd/agentls) runs once among them and writes the
# table of figures taken the way a user meets them (docs/performance.md),
# printed again at the end.
bench:
	@mkdir -p bin
	AGENTLS_BENCH_TABLE=$(CURDIR)/bin/bench-door.md $(GO) test -run '^$$' -bench . -benchmem -timeout 60m $(PKGS)
	@cat bin/bench-door.md

# e2e: tests in real editors (headless Neovim, Emacs, VS Code via code-server).
e2e: build
	./scripts/e2e

vscode:
	$(MAKE) -C editors/vscode vsix

clean:
	rm -rf bin
	$(GO) clean -testcache
