package session

import (
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/internal/lazyregexp"
)

var (
	editVerbs     = lazyregexp.New(`(?i)\b(fix|add|change|rename|refactor|implement|write|create|remove|delete|update|replace|make|move|convert|generate|insert|apply|edit|modify|rewrite|format|clean ?up|optimi[sz]e|improve|simplify|extract|inline|migrate|upgrade|bump|port|translate|document|comment out|uncomment|set|turn|split|merge|introduce|append|prepend|drop)\b`)
	questionStart = lazyregexp.New(`(?i)^\s*(what|why|how|where|which|who|whom|whose|when|is|are|was|were|does|do|did|can|could|should|would|will|has|have|explain|describe|summari[sz]e|tell me|show me|list|find|locate|search|look up|where's|what's|how's|why's)\b`)
	// Requests that look like questions but ask for a change.
	editQuestion = lazyregexp.New(`(?i)^\s*(can|could|would|will) you (please )?(fix|add|change|rename|refactor|implement|write|create|remove|delete|update|replace|make|move|convert|generate|insert|edit|modify|rewrite|format)\b`)
)

// DecideMode picks the task kind of a prompt sent without a mode: "ask"
// when it is a question and asks for no edit, else "edit". A verb inside a
// question ("how do I add a flag?") does not make it an edit; a request
// phrased as a question ("can you fix the test?") does.
func DecideMode(prompt string) agent.Kind {
	p := strings.TrimSpace(prompt)
	question := strings.HasSuffix(p, "?") || questionStart.MatchString(p)
	switch {
	case editQuestion.MatchString(p):
		return agent.KindEdit
	case question:
		return agent.KindAsk
	case editVerbs.MatchString(p):
		return agent.KindEdit
	}
	return agent.KindEdit
}
