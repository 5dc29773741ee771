package workspace

// Indexed reports whether p is a file of the workspace's file index: not
// excluded by the default exclude list, a .gitignore, an .ignore file or
// .git/info/exclude (the files the user keeps out of the agent's sight),
// and not a link that leads outside the workspace.
func (w *Workspace) Indexed(p Path) bool {
	r, rel, err := w.locate(p)
	if err != nil || r.idx == nil {
		return false
	}
	_, ok := r.idx.snap.Load().find(rel)
	return ok
}
