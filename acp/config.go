package acp

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/session"
)

// Session config options (session/set_config_option): the model, the mode
// and, for a model that takes one, the reasoning effort. Every client's
// picker (acpx `set model`, agent-shell, Zed) works from them. The mode is
// both a config option and the older session mode; the two stay in step.

const (
	configModel   = "model"
	configMode    = "mode"
	configEffort  = "reasoning_effort"
	configReview  = "review_edits"
	configNetwork = "command_network"
)

// The boolean options (offered to a client that declares
// clientCapabilities.session.configOptions.boolean) only narrow the
// user's settings, like every change that does not come from the user's
// own settings file: review before apply may be turned on for a session,
// and off again only when the settings do not ask for it; commands'
// network may be turned off for a session, and on again only when the
// settings allow it.

// sessionReview is whether the session's edits are reviewed before they apply.
func (a *Agent) sessionReview(s *acpSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.review || (a.opts.Settings.Review != "" && a.opts.Settings.Review != session.ReviewOff)
}

// sessionNetwork is whether the session's commands may use the network.
func (a *Agent) sessionNetwork(s *acpSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := a.opts.Settings.CommandNetwork
	return (n.All || len(n.Allow) > 0) && !s.noNetwork
}

// booleanOptions are the session's boolean config options.
func (a *Agent) booleanOptions(s *acpSession) []sdk.SessionConfigOption {
	review := sdk.NewSessionConfigOptionBoolean(a.sessionReview(s))
	rdesc := "Show every edit for review before it applies"
	review.Boolean.Id, review.Boolean.Name, review.Boolean.Description = configReview, "Review edits", &rdesc
	network := sdk.NewSessionConfigOptionBoolean(a.sessionNetwork(s))
	ndesc := "Let commands open network connections (to the hosts the user's commandNetwork setting allows)"
	network.Boolean.Id, network.Boolean.Name, network.Boolean.Description = configNetwork, "Command network", &ndesc
	return []sdk.SessionConfigOption{review, network}
}

// setBoolean sets a boolean option of session s.
func (a *Agent) setBoolean(s *acpSession, id string, v bool) error {
	st := a.opts.Settings
	switch id {
	case configReview:
		if !v && st.Review != "" && st.Review != session.ReviewOff {
			return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("review is %q in the user's settings: a session cannot turn it off", st.Review)})
		}
		s.mu.Lock()
		s.review = v
		s.mu.Unlock()
	case configNetwork:
		if v && !st.CommandNetwork.All && len(st.CommandNetwork.Allow) == 0 {
			return sdk.NewInvalidParams(map[string]any{"error": "commandNetwork is off in the user's settings: a session cannot turn it on; set it in the user settings file"})
		}
		s.mu.Lock()
		s.noNetwork = !v
		s.mu.Unlock()
	default:
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown boolean config option %q: %s or %s", id, configReview, configNetwork)})
	}
	return nil
}

// modelList is the models a session may choose from: the "models" setting,
// else the service's /models list (asked once per connection), with the
// configured model always among them.
type modelList struct {
	once   sync.Once
	models []session.ModelInfo
}

// models returns the models on offer.
func (a *Agent) models(ctx context.Context) []session.ModelInfo {
	a.modelList.once.Do(func() {
		st := a.opts.Settings
		out := slices.Clone(st.Models)
		if len(out) == 0 {
			for _, name := range a.serviceModels(ctx) {
				out = append(out, session.ModelInfo{Name: name})
			}
		}
		if !slices.ContainsFunc(out, func(m session.ModelInfo) bool { return m.Name == st.Model }) {
			out = append([]session.ModelInfo{{Name: st.Model}}, out...)
		}
		a.modelList.models = out
	})
	return a.modelList.models
}

// serviceModels asks the model service for its models (GET {baseURL}/models,
// OpenAI's list format) through the model client (agent/llm), the same
// client and transport as every model call; nil when it does not answer
// within a few seconds. The settings are the user's own (agent/settings),
// so the key goes where the user's settings say.
func (a *Agent) serviceModels(ctx context.Context) []string {
	st := a.opts.Settings
	if st.Azure != nil || st.BaseURL == "" {
		return nil
	}
	c, err := llm.New(st.ModelConfig(a.opts.Getenv), llm.WithLogger(a.log))
	if err != nil {
		a.log.Info("the model service's model list is not available", "error", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	out, err := c.Models(ctx)
	if err != nil {
		a.log.Info("the model service's model list is not available", "error", err)
		return nil
	}
	return out
}

// sessionModel is the model a session's tasks use, and what is declared of it.
func (a *Agent) sessionModel(ctx context.Context, s *acpSession) (session.ModelInfo, string) {
	s.mu.Lock()
	name, effort := s.model, s.effort
	s.mu.Unlock()
	if name == "" {
		name = a.opts.Settings.Model
	}
	for _, m := range a.models(ctx) {
		if m.Name == name {
			return m, effort
		}
	}
	return session.ModelInfo{Name: name}, effort
}

// configOptions are the session's config options as they stand.
func (a *Agent) configOptions(ctx context.Context, s *acpSession) []sdk.SessionConfigOption {
	model, effort := a.sessionModel(ctx, s)
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()

	var models sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range a.models(ctx) {
		models = append(models, sdk.SessionConfigSelectOption{Name: m.Name, Value: sdk.SessionConfigValueId(m.Name)})
	}
	cat := sdk.SessionConfigOptionCategoryModel
	modelOpt := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(model.Name), sdk.SessionConfigSelectOptions{Ungrouped: &models})
	modelOpt.Select.Id, modelOpt.Select.Name, modelOpt.Select.Category = configModel, "Model", &cat

	var modes sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range modeState(mode).AvailableModes {
		modes = append(modes, sdk.SessionConfigSelectOption{Name: m.Name, Value: sdk.SessionConfigValueId(m.Id), Description: m.Description})
	}
	mcat := sdk.SessionConfigOptionCategoryMode
	modeOpt := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(mode), sdk.SessionConfigSelectOptions{Ungrouped: &modes})
	modeOpt.Select.Id, modeOpt.Select.Name, modeOpt.Select.Category = configMode, "Mode", &mcat

	out := []sdk.SessionConfigOption{modeOpt, modelOpt}
	if len(model.ReasoningEfforts) > 0 {
		if effort == "" || !slices.Contains(model.ReasoningEfforts, effort) {
			effort = model.ReasoningEfforts[len(model.ReasoningEfforts)/2]
		}
		var efforts sdk.SessionConfigSelectOptionsUngrouped
		for _, e := range model.ReasoningEfforts {
			efforts = append(efforts, sdk.SessionConfigSelectOption{Name: e, Value: sdk.SessionConfigValueId(e)})
		}
		tcat := sdk.SessionConfigOptionCategoryThoughtLevel
		effortOpt := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(effort), sdk.SessionConfigSelectOptions{Ungrouped: &efforts})
		effortOpt.Select.Id, effortOpt.Select.Name, effortOpt.Select.Category = configEffort, "Reasoning effort", &tcat
		out = append(out, effortOpt)
	}
	if a.boolOptions.Load() {
		out = append(out, a.booleanOptions(s)...)
	}
	return out
}

// SetSessionConfigOption implements sdk.Agent: the model, the mode or the
// reasoning effort of the session, from its next prompt. The reply (and a
// config_option_update) carries every option, as a change of model may
// add or remove the reasoning effort.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	if p.Boolean != nil {
		s, err := a.session(p.Boolean.SessionId)
		if err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		if err := a.setBoolean(s, string(p.Boolean.ConfigId), p.Boolean.Value); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		a.save(context.WithoutCancel(ctx), s)
		return sdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(ctx, s)}, nil
	}
	if p.ValueId == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "a config option needs a value"})
	}
	s, err := a.session(p.ValueId.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	value := string(p.ValueId.Value)
	switch string(p.ValueId.ConfigId) {
	case configModel:
		if !slices.ContainsFunc(a.models(ctx), func(m session.ModelInfo) bool { return m.Name == value }) {
			return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown model %q: pick one of the options", value)})
		}
		s.mu.Lock()
		s.model = value
		s.mu.Unlock()
	case configMode:
		if err := a.setMode(s, value); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		a.update(s.id, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(value)}})
	case configEffort:
		model, _ := a.sessionModel(ctx, s)
		if !slices.Contains(model.ReasoningEfforts, value) {
			return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("model %s takes no reasoning effort %q", model.Name, value)})
		}
		s.mu.Lock()
		s.effort = value
		s.mu.Unlock()
	default:
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown config option %q: model, mode or reasoning_effort", p.ValueId.ConfigId)})
	}
	a.save(context.WithoutCancel(ctx), s)
	opts := a.configOptions(ctx, s)
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

// setMode changes a session's mode.
func (a *Agent) setMode(s *acpSession, mode string) error {
	switch mode {
	case ModeAsk, ModeEdit, ModePlan:
	default:
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown mode %q: ask, edit or plan", mode)})
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	return nil
}

// taskSettings are the settings of a session's next task: the connection's
// with the session's model and reasoning effort.
func (a *Agent) taskSettings(ctx context.Context, s *acpSession) session.Settings {
	st := a.opts.Settings
	model, effort := a.sessionModel(ctx, s)
	st.Model = model.Name
	// The boolean options narrow the settings only (setBoolean).
	if a.sessionReview(s) && (st.Review == "" || st.Review == session.ReviewOff) {
		st.Review = session.ReviewAlways
	}
	if !a.sessionNetwork(s) {
		st.CommandNetwork = session.Network{}
	}
	if len(model.ReasoningEfforts) > 0 {
		if effort == "" || !slices.Contains(model.ReasoningEfforts, effort) {
			effort = model.ReasoningEfforts[len(model.ReasoningEfforts)/2]
		}
		extra := make(map[string]any, len(st.ExtraBody)+1)
		for k, v := range st.ExtraBody {
			extra[k] = v
		}
		extra["reasoning_effort"] = effort
		st.ExtraBody = extra
	}
	return st
}
