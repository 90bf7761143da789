package gitops

import (
	"sort"
	"strings"
)

// ChangedPaths lists the paths the status reports as changed, relative to
// the worktree's top level as Git names them, sorted, each once: modified,
// staged, deleted, conflicted and untracked entries, and both sides of
// renames and copies. Ignored entries are not changes. A path Git reports
// as a folder (an untracked nested repository) has no trailing slash.
func (s *Status) ChangedPaths() []string {
	seen := map[string]bool{}
	for _, e := range s.Entries {
		if e.Kind == Ignored {
			continue
		}
		seen[strings.TrimSuffix(e.Path, "/")] = true
		if e.OrigPath != "" {
			seen[strings.TrimSuffix(e.OrigPath, "/")] = true
		}
	}
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}
