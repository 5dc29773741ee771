package workspace

import "context"

// Watching reports whether file events (fsnotify, not the polling fallback)
// keep the index and the change log current, so that ChangesSince sees
// changes made outside agentls within the watcher's debounce: false until
// every root's folders are watched (see Options.ListInBackground). Added
// for the tools package: its grep index trusts the change log only then.
func (w *Workspace) Watching() bool {
	if w.watch == nil || w.watch.isPolling() {
		return false
	}
	for _, r := range w.rootList() {
		select {
		case <-r.idx.watched:
		default:
			return false
		}
	}
	return true
}

// waitWatched waits until every root's folders are watched, ctx ends or
// the workspace closes.
func (w *Workspace) waitWatched(ctx context.Context) {
	for _, r := range w.rootList() {
		select {
		case <-r.idx.watched:
		case <-ctx.Done():
			return
		case <-w.closing:
			return
		}
	}
}
