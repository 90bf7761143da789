package provider

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// pool.keep_ignored (pool.md, "Kept ignored paths"): the exact paths of
// caches (node_modules, target) a pooled worktree may hold although git
// ignores them, so that a recycled workspace starts with them warm. Only
// exact paths: a pattern could keep what nobody named (an .env beside a
// cache), a ".." or an absolute path would reach outside the worktree,
// and git's own folder is never a cache.

// maxKeepIgnored bounds how many paths the key names.
const maxKeepIgnored = 32

// parseKeepIgnored parses pool.keep_ignored's value: paths separated by
// commas, each relative to the worktree's root with "/" between its
// names ("" keeps nothing). Anything but an exact path refuses, naming
// the path and why.
func parseKeepIgnored(value string) ([]string, error) {
	names := []string{}
	if value == "" {
		return names, nil
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(value, ",") {
		if why := checkKeptPath(name); why != "" {
			return nil, fmt.Errorf("%s takes exact paths relative to the worktree's root, separated by commas (such as node_modules,target): %q %s", PolicyPoolKeepIgnored, name, why)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s names %q twice", PolicyPoolKeepIgnored, name)
		}
		seen[name] = true
		names = append(names, name)
	}
	if len(names) > maxKeepIgnored {
		return nil, fmt.Errorf("%s names %d paths: at most %d", PolicyPoolKeepIgnored, len(names), maxKeepIgnored)
	}
	return names, nil
}

// checkKeptPath says why name is not an exact relative path a pooled
// worktree may keep ("" when it is).
func checkKeptPath(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.TrimSpace(name) != name:
		return "starts or ends with a space"
	case strings.HasPrefix(name, "/"):
		return "is absolute"
	case len(name) > 1024:
		return "is too long"
	case strings.ContainsAny(name, `*?[]{}\!:`):
		return "is a pattern (only exact paths are kept)"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "holds a control character"
		}
	}
	for _, part := range strings.Split(name, "/") {
		switch {
		case part == "":
			return "has an empty name in it (a leading, trailing or double slash)"
		case part == "." || part == "..":
			return "names . or .. (only paths inside the worktree)"
		case strings.EqualFold(part, ".git"):
			return "is or is inside git's own folder"
		case isEnvName(part):
			return "is or is inside an environment file (.env), which may hold secrets"
		}
	}
	return ""
}

// isEnvName reports whether a file or folder name is an environment
// file's (.env, .env.local, .envrc), which a pooled worktree never keeps.
func isEnvName(name string) bool {
	return strings.HasPrefix(strings.ToLower(name), ".env")
}

// inKeptPath reports whether rel (slash-separated, relative to the
// worktree's root) is one of the kept paths or inside one.
func inKeptPath(rel string, kept []string) bool {
	for _, k := range kept {
		if rel == k || (len(rel) > len(k) && rel[len(k)] == '/' && rel[:len(k)] == k) {
			return true
		}
	}
	return false
}

// aboveKeptPath reports whether rel is a kept path or a folder above one.
func aboveKeptPath(rel string, kept []string) bool {
	for _, k := range kept {
		if rel == k || strings.HasPrefix(k, rel+"/") {
			return true
		}
	}
	return false
}

// linksOut reports whether the symbolic link at file (rel from the
// worktree's root) points out of the worktree or into its .git: an
// absolute target, one that climbs above the root, or one that cannot be
// read. pnpm's links inside node_modules are relative and stay inside.
func linksOut(file, rel string) bool {
	target, err := os.Readlink(file)
	if err != nil || target == "" || filepath.IsAbs(target) {
		return true
	}
	to := path.Clean(path.Join(path.Dir(rel), filepath.ToSlash(target)))
	first, _, _ := strings.Cut(to, "/")
	return to == ".." || strings.HasPrefix(to, "../") || strings.EqualFold(first, ".git")
}

// errKeptPath names what a pooled worktree holds in or above a kept path
// that it may not (treeStamp).
type errKeptPath struct{ path, why string }

func (e *errKeptPath) Error() string { return e.path + " " + e.why }

// unkept says what in git's status of a pooled worktree is more than the
// kept caches may hold ("" when nothing is): every entry must be a file
// git ignores inside a kept path, and every file with another name
// (linked, from the stamp) must be one of them: a hard link inside a
// kept path that git tracks, or does not ignore, is refused as anywhere
// else. Anything else (a change, an untracked file, an ignored file
// outside the kept paths) is what it was before pool.keep_ignored.
func unkept(entries []gitops.StatusEntry, kept, linked []string) string {
	ignored := make(map[string]bool, len(entries))
	for _, e := range entries {
		p := strings.TrimSuffix(e.Path, "/")
		if e.Kind != gitops.Ignored || !inKeptPath(p, kept) {
			return fmt.Sprintf("it is not clean: %s (%d path(s) changed, untracked or ignored%s)", e.Path, len(entries), keptNote(kept))
		}
		ignored[p] = true
	}
	for _, l := range linked {
		if !ignored[l] {
			return fmt.Sprintf("%s, in a kept path, has another name (a hard link) and git does not ignore it", l)
		}
	}
	return ""
}

func keptNote(kept []string) string {
	if len(kept) == 0 {
		return ""
	}
	return "; only files git ignores inside " + strings.Join(kept, ", ") + " are kept"
}

// stampPooledClean takes the stamp of the pooled worktree of rec (git's
// entry of it is entry) and records it when git status, run after it was
// taken, finds the worktree clean but for the kept caches: HEAD detached
// at the claim's base, nothing changed or untracked, ignored files only
// inside pool.keep_ignored's paths, and every file there with another
// name ignored by git. It reports whether it recorded one. Recycling
// calls it once it has cleaned a worktree; without a stamp a hand-out
// runs git status.
func (p *Provider) stampPooledClean(ctx context.Context, rec *claimRecord, entry string) bool {
	kept, err := p.PoolKeepIgnored()
	if err != nil {
		return false
	}
	s, err := stampOf(rec, entry, kept)
	if err != nil {
		return false
	}
	st, err := gitops.ReadStatus(ctx, rec.Claim.Path, gitops.StatusOptions{Ignored: true})
	if err != nil || !st.Detached || st.Head != rec.Claim.Base || unkept(st.Entries, kept, s.linkedFiles()) != "" {
		return false
	}
	p.writePoolStamp(s)
	return true
}
