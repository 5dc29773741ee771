package llm

import "context"

type callRecorderKey struct{}

// WithCallRecorder returns a context whose Complete calls are also written
// to r, in addition to the client's own recorder (WithRecorder). The agent
// uses it to keep one flight recording per task with one shared client. The
// exchange r receives has the API key redacted like any other.
func WithCallRecorder(ctx context.Context, r Recorder) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, callRecorderKey{}, r)
}

func callRecorder(ctx context.Context) Recorder {
	r, _ := ctx.Value(callRecorderKey{}).(Recorder)
	return r
}
