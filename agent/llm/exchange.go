package llm

import (
	"encoding/json"
	"time"
)

// Recorder receives one Exchange per Complete call: the flight recorder.
// Record must not keep a reference to x's slices after it returns.
type Recorder interface {
	Record(x Exchange) error
}

// Exchange is one model call as the flight recorder writes it: the request
// as sent on the wire (never with the API key, which travels only in a
// header) and the answer or the error, with usage and timing.
type Exchange struct {
	Time    time.Time       `json:"time"`
	Seq     int             `json:"seq"` // 1-based call number of the client
	Model   string          `json:"model"`
	BaseURL string          `json:"baseURL"`
	Request json.RawMessage `json:"request,omitempty"` // the body of the last attempt

	Message      *Message     `json:"message,omitempty"` // nil when the call failed
	FinishReason FinishReason `json:"finishReason,omitempty"`
	Usage        Usage        `json:"usage"`
	DurationMs   float64      `json:"durationMs"`
	FirstTokenMs float64      `json:"firstTokenMs,omitempty"`
	Attempts     int          `json:"attempts"`
	Failures     []Failure    `json:"failures,omitempty"` // failed attempts, in order
	Error        string       `json:"error,omitempty"`    // the call's final error
}

// Failure is one failed attempt of a call.
type Failure struct {
	Attempt      int     `json:"attempt"`
	Status       int     `json:"status,omitempty"`
	Code         string  `json:"code,omitempty"`
	Error        string  `json:"error"`
	RetryAfterMs float64 `json:"retryAfterMs,omitempty"`
	WaitMs       float64 `json:"waitMs,omitempty"` // wait before the next attempt; 0 when none followed
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
