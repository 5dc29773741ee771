package workspace

import "fmt"

// PendingError is returned by an Editor's Apply when its context ended
// after the change was handed to the editor and before the editor answered:
// the change may still be applied. Applied waits for the answer.
type PendingError struct {
	Paths  []Path
	answer <-chan bool
}

// NewPendingError returns the error of a change whose answer will arrive on
// answer (true: applied); answer must receive once or be closed.
func NewPendingError(paths []Path, answer <-chan bool) *PendingError {
	return &PendingError{Paths: paths, answer: answer}
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("the change to %v was sent to the editor, which has not answered yet", e.Paths)
}

// Applied blocks until the editor answers and reports whether it applied
// the change.
func (e *PendingError) Applied() bool { return <-e.answer }
