package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestModelsGoesThroughTheClientsTransport: the model list is asked with
// the client's key and base URL query, like every model call, and a
// listing larger than the bound is refused rather than read whole.
func TestModelsGoesThroughTheClientsTransport(t *testing.T) {
	var mu sync.Mutex
	var auth, query []string
	big := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		query = append(query, r.URL.RawQuery)
		b := big
		mu.Unlock()
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if b {
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"` + strings.Repeat("m", maxModelsBytes+1) + `"}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":"b"},{"id":""}]}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL + "/v1?tenant=t1", APIKey: "sk-models", Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("models %q; want [a b]", got)
	}
	mu.Lock()
	if len(auth) != 1 || auth[0] != "Bearer sk-models" || query[0] != "tenant=t1" {
		t.Errorf("the request carried Authorization %q and query %q; want the client's key and the base URL's query", auth, query)
	}
	big = true
	mu.Unlock()
	if got, err := c.Models(context.Background()); err == nil {
		t.Errorf("a listing over %d bytes gave %d models and no error", maxModelsBytes, len(got))
	}
}
