package session

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// countingPort is a face whose editor shares no diagnostics; it counts
// how often it is asked.
type countingPort struct {
	Unsupported
	asked int
}

func (*countingPort) Event(agent.Event)                            {}
func (*countingPort) Editor(*workspace.Workspace) workspace.Editor { return nil }
func (*countingPort) AskUser(context.Context, permission.Request) (tools.Decision, error) {
	return tools.Deny, nil
}
func (p *countingPort) Diagnostics(ctx context.Context, paths []string) ([]Diagnostic, map[string]int32, error) {
	p.asked++
	return nil, nil, fmt.Errorf("agentls/diagnostics: %w", ErrUnsupported)
}

func TestUnsupportedCapabilityIsNotAskedAgain(t *testing.T) {
	var u Unsupported
	if _, err := u.Save(context.Background(), []string{"a.go"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Unsupported.Save = %v; want ErrUnsupported", err)
	}
	if _, _, err := u.Diagnostics(context.Background(), []string{"a.go"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Unsupported.Diagnostics = %v; want ErrUnsupported", err)
	}
	p := &countingPort{}
	d := newDiagnostics(p, nil, nil)
	for range 3 {
		if _, _, ok := d.fetch(context.Background(), "a.go"); ok {
			t.Fatal("fetch from a face without diagnostics reported ok")
		}
	}
	if p.asked != 1 {
		t.Errorf("face asked %d times for diagnostics; want 1 (unsupported is remembered)", p.asked)
	}
	if got := d.delta(); got != nil {
		t.Errorf("delta without diagnostics = %+v; want nil (no report section)", got)
	}
}
