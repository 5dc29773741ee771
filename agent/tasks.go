package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// TaskRegistry is the index of the tasks of one host, the only one: every
// task the host starts is added to it (Config.Registry), so a follow-up, a
// resume or a cancel finds it. A task started without one gets its own.
type TaskRegistry struct {
	prefix string // random, so task IDs of different hosts never collide

	mu    sync.Mutex // guards tasks and seq
	tasks []*Task    // in start order
	seq   int
}

// NewTaskRegistry returns an empty registry.
func NewTaskRegistry() *TaskRegistry {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &TaskRegistry{prefix: hex.EncodeToString(b[:])}
}

// newID returns the ID of the registry's next task: "<prefix>-<n>".
func (g *TaskRegistry) newID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	return fmt.Sprintf("%s-%d", g.prefix, g.seq)
}

// taskIDFormat is the form of every ID newID makes: the registry's prefix
// (8 hexadecimal digits) and the task's number.
var taskIDFormat = lazyregexp.New(`^[0-9a-f]{8}-[1-9][0-9]{0,9}$`)

// ErrInvalidTaskID is the error of a task ID that agentls never makes.
var ErrInvalidTaskID = errors.New("invalid task id")

// CheckTaskID accepts only IDs of the form agentls gives tasks
// ("3fa2b1c0-1"). Every face checks a task ID it is given before the ID
// names a file (the report .agentls/tasks/ID.md) or is looked up, so an ID
// such as "../../x" never becomes a path.
func CheckTaskID(id string) error {
	if taskIDFormat.MatchString(id) {
		return nil
	}
	shown := id
	if len(shown) > 40 {
		shown = shown[:40] + "..."
	}
	return fmt.Errorf("%w %q: a task id is 8 hexadecimal digits, a dash and a number, as agentls.run and agentls.tasks give it (e.g. \"3fa2b1c0-1\")", ErrInvalidTaskID, shown)
}

// Task returns the task with id, or nil.
func (g *TaskRegistry) Task(id string) *Task {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.tasks {
		if t.id == id {
			return t
		}
	}
	return nil
}

// Tasks returns the tasks, oldest first.
func (g *TaskRegistry) Tasks() []*Task {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Task(nil), g.tasks...)
}

// add lists t; a task of the same ID that has ended (an earlier run of a
// resumed task) is replaced. It fails when a live task has that ID.
func (g *TaskRegistry) add(t *Task) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.tasks {
		if o.id == t.id {
			if !o.State().Terminal() {
				return false
			}
			g.tasks = append(g.tasks[:i], g.tasks[i+1:]...)
			break
		}
	}
	g.tasks = append(g.tasks, t)
	return true
}
