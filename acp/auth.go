package acp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/session"
)

// Authentication: agentls needs the model service's API key. It comes
// from the environment (OPENAI_API_KEY, or the variable the apiKeyEnv
// setting names), else from `agentls login`, which stores it in the
// user's configuration folder (mode 0600). A client that runs terminal
// logins (clientCapabilities.auth.terminal) is offered `agentls acp login`.

const (
	authEnv      = "api-key-env"
	authTerminal = "agentls-login"
)

// authMethods are the methods initialize offers.
func (a *Agent) authMethods(caps sdk.ClientCapabilities) []sdk.AuthMethod {
	env := a.opts.Settings.APIKeyEnv
	desc := fmt.Sprintf("Set %s in the environment the editor starts agentls from, or run `agentls login` in a terminal to store a key (mode 0600) in the user's configuration folder", env)
	out := []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{Id: authEnv, Name: "API key (" + env + " or agentls login)", Description: &desc}}}
	if caps.Auth.Terminal {
		tdesc := "Type the model service's API key once; agentls keeps it in the user's configuration folder (mode 0600)"
		out = append(out, sdk.AuthMethod{Terminal: &sdk.AuthMethodTerminalInline{Id: authTerminal, Name: "Log in with an API key", Description: &tdesc, Args: []string{"login"}}})
	}
	return out
}

// noKeyMessage is what a client shows when there is no key.
func (a *Agent) noKeyMessage() string {
	return fmt.Sprintf("no API key: set %s or run agentls login", a.opts.Settings.APIKeyEnv)
}

// haveKey reports whether the model service can be reached with a key (or
// needs none: a local server).
func (a *Agent) haveKey() bool {
	st := a.opts.Settings
	return a.opts.Getenv(st.APIKeyEnv) != "" || session.IsLoopback(st.BaseURL)
}

// authError is the auth_required error of a missing key; its message says
// what to do (clients show the message, not the data).
func (a *Agent) authError() error {
	return &sdk.RequestError{Code: -32000, Message: a.noKeyMessage(), Data: map[string]any{"authMethods": []string{authEnv}}}
}

// startError is the reply to a prompt whose task did not start.
func (a *Agent) startError(err error) error {
	var noKey *session.ErrNoAPIKey
	if errors.As(err, &noKey) {
		return a.authError()
	}
	return &sdk.RequestError{Code: -32603, Message: "the task did not start: " + err.Error()}
}

// authCapabilities offer logout when there is a stored key to forget.
func (a *Agent) authCapabilities() sdk.AgentAuthCapabilities {
	if a.opts.Logout == nil {
		return sdk.AgentAuthCapabilities{}
	}
	return sdk.AgentAuthCapabilities{Logout: &sdk.LogoutCapabilities{}}
}

// UnstableLogout answers logout (stable in the v1 schema; the SDK names it
// unstable): the key `agentls login` stored is forgotten, so the next task
// needs a key again. A key in the environment is the editor's to remove.
func (a *Agent) UnstableLogout(ctx context.Context, _ sdk.UnstableLogoutRequest) (sdk.UnstableLogoutResponse, error) {
	if err := a.checkInitialized(ctx); err != nil {
		return sdk.UnstableLogoutResponse{}, err
	}
	if a.opts.Logout == nil {
		return sdk.UnstableLogoutResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodLogout)
	}
	if err := a.opts.Logout(); err != nil {
		return sdk.UnstableLogoutResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	a.log.Info("acp logout: the stored key was forgotten")
	return sdk.UnstableLogoutResponse{}, nil
}
