package gitops

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A Reader answers read-only questions about a repository's refs and
// commits. It reads in process with go-git where that is exact and cheap
// (opening a repository costs well under a millisecond, spawning git about
// as much as the rest of a small salvage), and runs the git CLI otherwise:
// when go-git cannot open the repository at all (extensions.worktreeConfig,
// unknown formats), for revision syntax it does not parse exactly as git
// does, and whenever it fails or finds nothing, since git is the authority.
// It never writes.
//
// A Reader is safe for concurrent use. It sees ref updates made after it
// was opened.
type Reader struct {
	dir  string // absolute path the Reader was opened on
	tree Cmd    // names dir's git dir and work tree when dir is a worktree's top level (OpenTree)

	mu     sync.Mutex
	repo   *gogit.Repository // nil: every question goes to the git CLI
	peeled map[string]string // object id -> the commit it peels to (objects never change)
}

// OpenReader opens the repository containing path (any directory of any
// of its worktrees). A path outside any repository gives
// ErrNotARepository.
func OpenReader(ctx context.Context, path string) (*Reader, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r := &Reader{dir: abs, tree: treeOpts(abs)}
	repo, err := gogit.PlainOpenWithOptions(abs, &gogit.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err == nil {
		r.repo = repo
		return r, nil
	}
	// go-git refused; let git say whether this is a repository at all.
	if _, err := Run(ctx, abs, r.opts(Cmd{ReadOnly: true}), "rev-parse", "--git-dir"); err != nil {
		return nil, err
	}
	return r, nil
}

// InProcess reports whether the Reader reads the repository with go-git
// (true) or runs git for every question (false).
func (r *Reader) InProcess() bool { return r.repo != nil }

// A Ref is a reference and the object it points at (for an annotated tag,
// the tag object, not its commit).
type Ref struct {
	Name string // full name, such as refs/majlis/salvage/T-14/1
	ID   string
}

// ResolveCommit resolves rev, with git's revision syntax and rules, to the
// id of the commit it names (tags are peeled). A revision that names no
// commit gives ErrUnknownRevision.
func (r *Reader) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if r.repo != nil && rev != "" {
		if id, ok := r.resolveInProcess(rev); ok {
			return id, nil
		}
	}
	return ResolveCommitWith(ctx, r.dir, r.tree, rev)
}

// opts returns o with the Reader's git directory and work tree named (see
// OpenTree), when it was opened on a worktree's top level.
func (r *Reader) opts(o Cmd) Cmd {
	o.GitDir, o.WorkTree = r.tree.GitDir, r.tree.WorkTree
	if o.Ceiling == "" {
		o.Ceiling = r.tree.Ceiling
	}
	return o
}

// ResolveCommitWith resolves rev with git run in dir, with tree's git directory
// and work tree (see OpenTree) when set.
func ResolveCommitWith(ctx context.Context, dir string, tree Cmd, rev string) (string, error) {
	if rev == "" || strings.ContainsAny(rev, "\x00\n") {
		return "", fmt.Errorf("%w: %q", ErrUnknownRevision, rev)
	}
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, OKCodes: []int{1}, GitDir: tree.GitDir, WorkTree: tree.WorkTree, Ceiling: tree.Ceiling, Env: tree.Env},
		"rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", classify(err, ErrUnknownRevision, "Needed a single revision", "unknown revision", "ambiguous argument")
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if res.Code == 1 {
		return "", fmt.Errorf("%w: %q does not name a commit", ErrUnknownRevision, rev)
	}
	if !IsObjectID(id) {
		return "", Unexpected("git rev-parse", "%q is not an object id", id)
	}
	return id, nil
}

// dwimRules are git's rules for expanding a short ref name, in git's order
// (refs.c, ref_rev_parse_rules), after the name itself.
var dwimRules = []string{"refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"}

// resolveInProcess resolves the revisions whose meaning go-git can
// reproduce exactly: a full object id, HEAD, and ref names expanded by
// git's rules. Anything else (HEAD~2, @{u}, short ids, which git and
// go-git disambiguate differently) reports !ok and goes to git.
func (r *Reader) resolveInProcess(rev string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if IsObjectID(rev) {
		return r.peelToCommit(plumbing.NewHash(rev))
	}
	if !plainRefName(rev) {
		return "", false
	}
	var candidates []string
	switch {
	case rev == "HEAD" || strings.HasPrefix(rev, "refs/"):
		candidates = append(candidates, rev)
	case strings.ToUpper(rev) == rev:
		// Pseudo-refs (FETCH_HEAD, ORIG_HEAD...) have formats of their own.
		return "", false
	}
	for _, rule := range dwimRules {
		candidates = append(candidates, fmt.Sprintf(rule, rev))
	}
	for _, name := range candidates {
		ref, err := r.repo.Reference(plumbing.ReferenceName(name), true)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			continue
		}
		if err != nil {
			return "", false
		}
		return r.peelToCommit(ref.Hash())
	}
	return "", false
}

// plainRefName reports whether s can only be a ref name: no revision
// operators, nothing git would read as anything else.
func plainRefName(s string) bool {
	if s == "" || s[0] == '-' || s[0] == '/' || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".lock") ||
		strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{") || s == "@" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("~^:?*[\\", c) >= 0 {
			return false
		}
	}
	return true
}

// peelToCommit follows tags from id to a commit.
func (r *Reader) peelToCommit(id plumbing.Hash) (string, bool) {
	for range 16 {
		obj, err := r.repo.Object(plumbing.AnyObject, id)
		if err != nil {
			return "", false
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o.Hash.String(), true
		case *object.Tag:
			id = o.Target
		default:
			return "", false
		}
	}
	return "", false
}

// Refs lists the refs under prefix, which must name a hierarchy
// ("refs/majlis/"), sorted by name. Symbolic refs are resolved.
func (r *Reader) Refs(ctx context.Context, prefix string) ([]Ref, error) {
	if !strings.HasPrefix(prefix, "refs/") || !strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "*?[\\ \x00\n") {
		return nil, fmt.Errorf("gitops: ref prefix %q must be a hierarchy such as refs/majlis/", prefix)
	}
	if r.repo != nil {
		if refs, err := r.refsInProcess(prefix); err == nil {
			return refs, nil
		}
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "for-each-ref", "--format=%(objectname) %(refname)", "--", prefix)
	if err != nil {
		return nil, err
	}
	return parseRefList(res.Stdout)
}

func (r *Reader) refsInProcess(prefix string) ([]Ref, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	iter, err := r.repo.References()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	refs := []Ref{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		if ref.Type() == plumbing.SymbolicReference {
			target, err := r.repo.Reference(ref.Name(), true)
			if err != nil {
				return err
			}
			ref = target
		}
		refs = append(refs, Ref{Name: name, ID: ref.Hash().String()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	return refs, nil
}

// parseRefList parses for-each-ref lines "<id> <name>". Ref names cannot
// contain spaces or newlines, so lines are unambiguous.
func parseRefList(out []byte) ([]Ref, error) {
	refs := []Ref{}
	s := string(out)
	for s != "" {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return nil, Unexpected("git for-each-ref", "unterminated line %q", line)
		}
		s = rest
		id, name, ok := strings.Cut(line, " ")
		if !ok || !IsObjectID(id) || !strings.HasPrefix(name, "refs/") || strings.Contains(name, " ") {
			return nil, Unexpected("git for-each-ref", "line %q", line)
		}
		refs = append(refs, Ref{Name: name, ID: id})
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	return refs, nil
}

// maxAncestryWalk bounds the in-process ancestry search. go-git walks
// commits one by one; git uses the commit-graph and generation numbers,
// and is much faster on deep histories. A short walk settles the common
// case (a workspace a few commits ahead of its base) in process.
const maxAncestryWalk = 2000

// IsAncestor reports whether commit ancestor is reachable from commit
// descendant (a commit is its own ancestor), like
// `git merge-base --is-ancestor`. Both must be commit ids or revisions
// that ResolveCommit accepts.
func (r *Reader) IsAncestor(ctx context.Context, ancestor, descendant string) (bool, error) {
	a, err := r.ResolveCommit(ctx, ancestor)
	if err != nil {
		return false, err
	}
	d, err := r.ResolveCommit(ctx, descendant)
	if err != nil {
		return false, err
	}
	if a == d {
		return true, nil
	}
	if r.repo != nil {
		if found, ok := r.ancestorInProcess(a, d); ok {
			return found, nil
		}
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, OKCodes: []int{1}}), "merge-base", "--is-ancestor", a, d)
	if err != nil {
		return false, err
	}
	return res.Code == 0, nil
}

// ancestorInProcess walks back from d looking for a. It gives up (ok ==
// false) on any read error, on a history longer than maxAncestryWalk, and
// when the repository has replacement refs or grafts, which git honours
// and go-git does not.
func (r *Reader) ancestorInProcess(a, d string) (found, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rewritesHistory() {
		return false, false
	}
	want := plumbing.NewHash(a)
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{plumbing.NewHash(d)}
	for len(queue) > 0 {
		if len(seen) >= maxAncestryWalk {
			return false, false
		}
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return false, false
		}
		for _, p := range c.ParentHashes {
			if p == want {
				return true, true
			}
			queue = append(queue, p)
		}
	}
	return false, true
}

// rewritesHistory reports whether git would see a different history than
// the objects say: replacement refs (refs/replace/) or a shallow clone.
// Errors count as yes.
func (r *Reader) rewritesHistory() bool {
	iter, err := r.repo.References()
	if err != nil {
		return true
	}
	defer iter.Close()
	replaced := false
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if strings.HasPrefix(ref.Name().String(), "refs/replace/") {
			replaced = true
		}
		return nil
	})
	if err != nil || replaced {
		return true
	}
	shallow, err := r.repo.Storer.Shallow()
	return err != nil || len(shallow) > 0
}
