package acp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// kindOf is the ACP kind of a call as its tool describes it: editors pick
// an icon and a presentation by it. The tools' kinds are ACP's own names.
func kindOf(k tools.Kind) sdk.ToolKind {
	switch k {
	case tools.KindRead, tools.KindEdit, tools.KindSearch, tools.KindExecute, tools.KindFetch, tools.KindThink:
		return sdk.ToolKind(k)
	}
	return sdk.ToolKindOther
}

// toolKind is the ACP kind of a call of tool known by name only (a
// question that names no call the client shows).
func toolKind(tool string) sdk.ToolKind {
	return kindOf(tools.DescribeCall(tool, nil).Kind)
}

// storedCall is how a call read back from a stored task looks, as its
// tool describes it; shownApart when a replay shows it otherwise (as the
// plan, or as the diffs of the files it changed).
func storedCall(root, tool string, args []byte) (title string, kind sdk.ToolKind, locs []sdk.ToolCallLocation, shownApart bool) {
	pr := tools.DescribeCall(tool, args)
	return pr.Title, kindOf(pr.Kind), locations(root, pr.Locations), pr.AsPlan || pr.Kind == tools.KindEdit
}

// rawArgs is a call's arguments as a JSON object, or nil when they are not
// one.
func rawArgs(args []byte) map[string]any {
	var raw map[string]any
	if json.Unmarshal(args, &raw) != nil {
		return nil
	}
	return raw
}

// locations are the places of a presentation as the protocol names them:
// absolute paths inside the root (a place outside it is left out).
func locations(root string, locs []tools.Location) []sdk.ToolCallLocation {
	var out []sdk.ToolCallLocation
	for _, l := range locs {
		abs, ok := absPath(root, l.Path)
		if !ok {
			continue
		}
		loc := sdk.ToolCallLocation{Path: abs}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		out = append(out, loc)
	}
	return out
}

// absPath turns a tool's workspace-relative path into the absolute path the
// protocol requires; ok is false for a path that leaves root.
func absPath(root, p string) (string, bool) {
	if p == "" || root == "" {
		return "", false
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		rel, err := filepath.Rel(root, c)
		return c, err == nil && filepath.IsLocal(rel)
	}
	if p == "." {
		return root, true
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", false
	}
	return filepath.Join(root, filepath.FromSlash(p)), true
}

// planEntries maps the agent's checklist onto ACP plan entries: done and
// skipped are completed (a skipped entry says so and why).
func planEntries(p tools.Plan) []sdk.PlanEntry {
	out := make([]sdk.PlanEntry, 0, len(p.Items))
	for _, it := range p.Items {
		e := sdk.PlanEntry{Content: it.Text, Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusPending}
		switch it.Status {
		case tools.PlanInProgress:
			e.Status = sdk.PlanEntryStatusInProgress
		case tools.PlanDone:
			e.Status = sdk.PlanEntryStatusCompleted
		case tools.PlanSkipped:
			e.Status = sdk.PlanEntryStatusCompleted
			e.Content = it.Text + " (skipped"
			if it.Reason != "" {
				e.Content += ": " + it.Reason
			}
			e.Content += ")"
		}
		out = append(out, e)
	}
	return out
}

// stopReason is the ACP stop reason of a task's result. A failed task that
// ran out of budget says which budget; any other failure ends the turn (its
// error was sent as a message first).
func stopReason(res *agent.Result) sdk.StopReason {
	if res == nil {
		return sdk.StopReasonEndTurn
	}
	switch {
	case res.Status == agent.StateCancelled:
		return sdk.StopReasonCancelled
	case res.StopReason == agent.StopTurnBudget:
		return sdk.StopReasonMaxTurnRequests
	case res.StopReason == agent.StopTokenBudget:
		return sdk.StopReasonMaxTokens
	}
	return sdk.StopReasonEndTurn
}

// fileOfURI is the absolute path a file:// URI names, or "".
func fileOfURI(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "file" || pu.Path == "" || !filepath.IsAbs(filepath.FromSlash(pu.Path)) {
		return ""
	}
	return filepath.Clean(filepath.FromSlash(pu.Path))
}

// promptInput is what a prompt's content blocks ask: the text for the
// model, the editor context (the first file named), the files the client
// attached (absolute paths) and the text it embedded for them.
type promptInput struct {
	Text     string
	Context  agent.EditorContext
	Files    []string          // files named by resource links and embedded resources
	Embedded map[string]string // absolute path -> text the client sent with the prompt
	Images   []llm.Image       // image blocks, for the model's request as image parts
}

// readPrompt turns ACP content blocks into a prompt. Text blocks are the
// request; a resource link names a file ("see main.go"); an embedded
// resource carries the editor's text of a file or selection, which goes
// into the prompt as a fenced block. An image block becomes an image of
// the task message (checked: a media type of imageTypes, base64 data);
// audio is not offered in the capabilities and is refused.
func readPrompt(blocks []sdk.ContentBlock, root string) (promptInput, error) {
	in := promptInput{Embedded: map[string]string{}}
	var text []string
	var refs []string
	rel := func(abs string) string {
		if r, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(r) {
			return filepath.ToSlash(r)
		}
		return abs
	}
	noteFile := func(abs string) {
		if abs == "" {
			return
		}
		in.Files = append(in.Files, abs)
		if in.Context.File == "" {
			if r := rel(abs); r != abs {
				in.Context.File = r
			}
		}
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			text = append(text, b.Text.Text)
		case b.ResourceLink != nil:
			abs := fileOfURI(b.ResourceLink.Uri)
			noteFile(abs)
			name := b.ResourceLink.Uri
			if abs != "" {
				name = rel(abs)
			}
			refs = append(refs, "- "+name)
		case b.Resource != nil:
			res := b.Resource.Resource.TextResourceContents
			if res == nil {
				return in, fmt.Errorf("binary resources are not supported: attach text files")
			}
			abs := fileOfURI(res.Uri)
			noteFile(abs)
			name := res.Uri
			if abs != "" {
				name = rel(abs)
				in.Embedded[abs] = res.Text
			}
			refs = append(refs, fmt.Sprintf("- %s:\n```\n%s\n```", name, strings.TrimRight(res.Text, "\n")))
		case b.Image != nil:
			img, err := readImage(b.Image)
			if err != nil {
				return in, err
			}
			in.Images = append(in.Images, img)
		case b.Audio != nil:
			return in, fmt.Errorf("audio is not supported by agentls")
		}
	}
	in.Text = strings.TrimSpace(strings.Join(text, "\n"))
	if in.Text == "" && len(in.Images) > 0 {
		in.Text = "Look at the attached image."
	}
	if len(refs) > 0 {
		in.Text += "\n\nFiles attached in the editor:\n" + strings.Join(refs, "\n")
		in.Text = strings.TrimSpace(in.Text)
	}
	return in, nil
}

// maxPromptBytes bounds one prompt's content (its text, embedded resources
// and any binary data but images): a bigger prompt is refused with -32602.
const maxPromptBytes = 256 << 10

// maxImageBytes bounds the base64 data of a prompt's images together (the
// line limit, 10 MiB, bounds the whole message).
const maxImageBytes = 8 << 20

// imageTypes are the media types an image block may have: those OpenAI's
// image inputs take.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// readImage checks an image block: an allowed media type and base64 data.
func readImage(b *sdk.ContentBlockImage) (llm.Image, error) {
	mime := strings.ToLower(strings.TrimSpace(b.MimeType))
	if !imageTypes[mime] {
		return llm.Image{}, fmt.Errorf("image of type %q not supported: send PNG, JPEG, GIF or WebP", b.MimeType)
	}
	if b.Data == "" {
		return llm.Image{}, fmt.Errorf("image without data: agentls takes images inline (base64 data), not by URI")
	}
	if _, err := base64.StdEncoding.DecodeString(b.Data); err != nil {
		return llm.Image{}, fmt.Errorf("image data is not base64: %v", err)
	}
	return llm.Image{MIMEType: mime, Data: b.Data}, nil
}

// describeImages names a prompt's images for the log by type and size
// ("image/png, 70 bytes"), never by their data.
func describeImages(images []llm.Image) string {
	parts := make([]string, len(images))
	for i, img := range images {
		b, _ := base64.StdEncoding.DecodeString(img.Data) // checked by readImage
		parts[i] = fmt.Sprintf("%s, %d bytes", img.MIMEType, len(b))
	}
	return strings.Join(parts, "; ")
}

// imageSize is the size of a prompt's image data in bytes.
func imageSize(blocks []sdk.ContentBlock) int {
	n := 0
	for _, b := range blocks {
		if b.Image != nil {
			n += len(b.Image.Data)
		}
	}
	return n
}

// promptSize is the size of a prompt's content but its images in bytes.
func promptSize(blocks []sdk.ContentBlock) int {
	n := 0
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			n += len(b.Text.Text)
		case b.ResourceLink != nil:
			n += len(b.ResourceLink.Uri)
		case b.Resource != nil:
			if t := b.Resource.Resource.TextResourceContents; t != nil {
				n += len(t.Text)
			}
			if bl := b.Resource.Resource.BlobResourceContents; bl != nil {
				n += len(bl.Blob)
			}
		case b.Audio != nil:
			n += len(b.Audio.Data)
		}
	}
	return n
}
