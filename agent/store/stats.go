package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Stats are the workspace's task statistics, computed from the database, so
// they survive restarts.
type Stats struct {
	Since     time.Time `json:"since,omitzero"`
	Tasks     int       `json:"tasks"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
	Cancelled int       `json:"cancelled"`
	Live      int       `json:"live"` // running now, or interrupted by a crash
	// CompletionRate is Completed / (Completed + Failed + Cancelled); 0 when
	// no task has ended.
	CompletionRate float64 `json:"completionRate"`

	ModelCalls    int        `json:"modelCalls"`
	CallsPerTask  float64    `json:"callsPerTask"`
	InputTokens   int64      `json:"inputTokens"`
	OutputTokens  int64      `json:"outputTokens"`
	CachedTokens  int64      `json:"cachedTokens"`
	TokensPerTask float64    `json:"tokensPerTask"` // input + output
	ModelTime     Millis     `json:"modelTimeMs"`
	ToolTime      Millis     `json:"toolTimeMs"`
	ToolCalls     int        `json:"toolCalls"`
	MostUsedTools []ToolStat `json:"mostUsedTools"`
	SlowestTools  []ToolStat `json:"slowestTools"`
}

// ToolStat summarizes the calls of one tool. Percentiles are nearest-rank.
type ToolStat struct {
	Name   string `json:"name"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	Median Millis `json:"medianMs"`
	P95    Millis `json:"p95Ms"`
	Max    Millis `json:"maxMs"`
	Total  Millis `json:"totalMs"`
}

// Millis is a duration that marshals to JSON as fractional milliseconds.
type Millis time.Duration

// MarshalJSON writes the duration in milliseconds.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.3f", float64(time.Duration(m))/float64(time.Millisecond))), nil
}

// String formats the duration for tables.
func (m Millis) String() string {
	d := time.Duration(m)
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}

// Stats computes the statistics of tasks created at or after since (zero:
// all tasks). topN bounds the tool lists (default 10).
func (s *Store) Stats(ctx context.Context, since time.Time, topN int) (*Stats, error) {
	if topN <= 0 {
		topN = 10
	}
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	st := &Stats{Since: since}
	var modelUS, toolUS int64
	err = db.QueryRowContext(ctx, `SELECT COUNT(*),
			COALESCE(SUM(state = 'completed'), 0), COALESCE(SUM(state = 'failed'), 0),
			COALESCE(SUM(state = 'cancelled'), 0),
			COALESCE(SUM(llm_calls), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
			COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(model_us), 0), COALESCE(SUM(tool_us), 0)
		FROM tasks WHERE created_at >= ?`, ms(since)).
		Scan(&st.Tasks, &st.Completed, &st.Failed, &st.Cancelled, &st.ModelCalls, &st.InputTokens,
			&st.OutputTokens, &st.CachedTokens, &modelUS, &toolUS)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	st.Live = st.Tasks - st.Completed - st.Failed - st.Cancelled
	if ended := st.Completed + st.Failed + st.Cancelled; ended > 0 {
		st.CompletionRate = float64(st.Completed) / float64(ended)
	}
	if st.Tasks > 0 {
		st.CallsPerTask = float64(st.ModelCalls) / float64(st.Tasks)
		st.TokensPerTask = float64(st.InputTokens+st.OutputTokens) / float64(st.Tasks)
	}
	st.ModelTime = Millis(time.Duration(modelUS) * time.Microsecond)
	st.ToolTime = Millis(time.Duration(toolUS) * time.Microsecond)

	rows, err := db.QueryContext(ctx, `WITH c AS (
			SELECT tc.name, tc.duration_us, tc.is_error,
				ROW_NUMBER() OVER (PARTITION BY tc.name ORDER BY tc.duration_us) AS rn,
				COUNT(*) OVER (PARTITION BY tc.name) AS n
			FROM tool_calls tc JOIN tasks t ON t.id = tc.task_id
			WHERE t.created_at >= ?
		)
		SELECT name, MAX(n), SUM(is_error),
			MAX(CASE WHEN rn = (n + 1) / 2 THEN duration_us END),
			MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN duration_us END),
			MAX(duration_us), SUM(duration_us)
		FROM c GROUP BY name`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("stats: tools: %w", err)
	}
	var all []ToolStat
	for rows.Next() {
		var t ToolStat
		var med, p95, mx, tot int64
		if err := rows.Scan(&t.Name, &t.Calls, &t.Errors, &med, &p95, &mx, &tot); err != nil {
			rows.Close()
			return nil, fmt.Errorf("stats: tools: %w", err)
		}
		us := func(v int64) Millis { return Millis(time.Duration(v) * time.Microsecond) }
		t.Median, t.P95, t.Max, t.Total = us(med), us(p95), us(mx), us(tot)
		st.ToolCalls += t.Calls
		all = append(all, t)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("stats: tools: %w", err)
	}
	used := append([]ToolStat(nil), all...)
	sort.SliceStable(used, func(i, j int) bool {
		if used[i].Calls != used[j].Calls {
			return used[i].Calls > used[j].Calls
		}
		return used[i].Name < used[j].Name
	})
	slow := append([]ToolStat(nil), all...)
	sort.SliceStable(slow, func(i, j int) bool {
		if slow[i].P95 != slow[j].P95 {
			return slow[i].P95 > slow[j].P95
		}
		return slow[i].Name < slow[j].Name
	})
	st.MostUsedTools = used[:min(topN, len(used))]
	st.SlowestTools = slow[:min(topN, len(slow))]
	if st.MostUsedTools == nil {
		st.MostUsedTools = []ToolStat{}
		st.SlowestTools = []ToolStat{}
	}
	return st, nil
}
