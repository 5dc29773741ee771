package lsp

// PendingHints reports whether the service has instruction-comment
// diagnostics waiting to be published (a flush armed): a test's way to
// see that a document change was not taken up, which no wait could show.
func PendingHints(s *Service) bool {
	s.hints.mu.Lock()
	defer s.hints.mu.Unlock()
	return s.hints.timer != nil || len(s.hints.pending) > 0
}
