package workspace

// Watching reports whether file events (fsnotify, not the polling fallback)
// keep the index and the change log current, so that ChangesSince sees
// changes made outside agentls within the watcher's debounce. Added for the
// tools package: its grep index trusts the change log only then.
func (w *Workspace) Watching() bool { return w.watch != nil && !w.watch.isPolling() }
