package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// Peer kinds.
const (
	PeerWorkspace    = "workspace"         // a majlis workspace, in any state
	PeerWorktree     = "worktree"          // a linked worktree git lists
	PeerMainWorktree = "main_worktree"     // the repository's main worktree
	PeerNestedRepo   = "nested_repository" // an independent repository inside the target
)

// A Peer is a retained peer of a reclaim target: something whose files may
// still exist. Its JSON appears in previews and peer_overlap errors.
type Peer struct {
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	Binding  string `json:"binding,omitempty"`
	Relation string `json:"relation"` // disjoint, or why it does not overlap, or the overlap
	Overlaps bool   `json:"overlaps"`
}

// How retainedPeers learns the repository's workspaces.
const (
	fullCheck = false // from every claim record, validating all of them
	fastCheck = true  // from the claims journal when it proves no overlap (journal.go)
)

// retainedPeers lists every retained peer of the target claim and judges
// whether each overlaps it. It reads the state folder and the filesystem
// afresh on every call: callers run it immediately before every
// destructive effect.
//
// A fastCheck takes the workspaces from the claims journal, which names a
// superset of them; when that finds a workspace that overlaps, or the
// journal cannot be used, the answer comes from the full check instead.
func (p *Provider) retainedPeers(ctx context.Context, target *claimRecord, fast bool) ([]Peer, error) {
	if fast {
		peers, err := p.checkPeers(ctx, target, true)
		if err == nil || !errors.Is(err, errJournalUnusable) && !errors.Is(err, errJournalOverlap) {
			return peers, err
		}
	}
	return p.checkPeers(ctx, target, false)
}

var errJournalOverlap = errors.New("a workspace the journal names overlaps")

func (p *Provider) checkPeers(ctx context.Context, target *claimRecord, fromJournal bool) ([]Peer, error) {
	t := target.Claim
	tr, err := pathid.Resolve(t.Path)
	if err != nil {
		return nil, &Error{Op: "reclaim", Binding: t.Binding, Path: t.Path, Err: ErrIdentity, Reason: err.Error()}
	}
	// Git's list of worktrees is read meanwhile.
	type worktrees struct {
		paths []string
		err   error
	}
	listed := make(chan worktrees, 1)
	go func() {
		paths, err := gitops.WorktreePaths(ctx, t.CommonDir)
		listed <- worktrees{paths, err}
	}()
	received := false
	defer func() {
		if !received { // an early return still waits for the reader
			<-listed
		}
	}()

	var peers []Peer
	// A workspace is usually listed twice (its claim and git's entry):
	// resolve each path once per check, and the directories they share
	// once too.
	resolver := pathid.NewResolver()
	resolved := map[string]pathid.Resolved{}
	add := func(kind, path, binding string) error {
		pr, ok := resolved[path]
		var err error
		if !ok {
			if pr, err = resolver.Resolve(path); err == nil {
				resolved[path] = pr
			}
		}
		if err != nil {
			// A peer whose place cannot be resolved cannot be shown to be
			// elsewhere: it overlaps.
			peers = append(peers, Peer{Kind: kind, Path: path, Binding: binding, Overlaps: true,
				Relation: "unresolvable: " + err.Error()})
			return nil
		}
		o := tr.Compare(pr) // A = target, B = peer
		peer := Peer{Kind: kind, Path: path, Binding: binding}
		switch o.Relation {
		case pathid.Disjoint:
			peer.Relation = "disjoint"
		case pathid.BContainsA:
			// The target lies inside the peer: allowed only where the peer
			// ignores it, so none of the peer's own files are in it.
			if kind != PeerNestedRepo {
				if ok, why := p.peerIgnores(ctx, path, o, tr); ok {
					peer.Relation = "contains the target, which it ignores (" + why + ")"
					break
				}
			}
			peer.Overlaps, peer.Relation = true, "contains the target ("+o.String()+")"
		default:
			peer.Overlaps, peer.Relation = true, o.String()
		}
		peers = append(peers, peer)
		return nil
	}

	// Every majlis workspace of the repository, in any state, except the
	// target claim itself. One is ignored only when it was reclaimed AND its
	// directory is attested absent now.
	if fromJournal {
		claims, err := p.readJournal()
		if err != nil {
			return nil, err
		}
		for _, c := range claims {
			if c.Digest == target.Digest || c.Failed {
				continue
			}
			if c.Reclaimed && absentNow(c.Path, c.Dev, c.Ino, c.Digest) {
				continue
			}
			if err := add(PeerWorkspace, c.Path, c.Binding); err != nil {
				return nil, err
			}
			if peers[len(peers)-1].Overlaps {
				return nil, errJournalOverlap
			}
		}
	}
	var all [][]*claimRecord
	if !fromJournal {
		inv, err := p.readInventory()
		if err != nil {
			return nil, err
		}
		all = inv.good
		// A damaged binding's workspaces are peers wherever they may be.
		stand, err := inv.peerRecords("reclaim")
		if err != nil {
			return nil, err
		}
		for _, r := range stand {
			if err := add(PeerWorkspace, r.Claim.Path, r.Claim.Binding); err != nil {
				return nil, err
			}
		}
	}
	for _, recs := range all {
		for _, r := range recs {
			if r.Digest == target.Digest || r.has(EventFailed) {
				continue
			}
			// A reclaimed workspace whose kept trash was purged or restored
			// (then a newer claim has the directory) is not a peer either.
			if r.has(EventReclaimed) && (attestedAbsent(r) || r.has(EventPurged)) {
				continue
			}
			if err := add(PeerWorkspace, r.Claim.Path, r.Claim.Binding); err != nil {
				return nil, err
			}
		}
	}
	// Every worktree git knows, the main one included.
	wt := <-listed
	received = true
	paths, err := wt.paths, wt.err
	if err != nil {
		return nil, err
	}
	// The main worktree is not listed by git when the git directory
	// lives apart from it (git lists the git directory instead).
	if p.mainErr != nil {
		return nil, p.mainUnknown("reclaim", t.Binding)
	}
	if p.main != "" && !slices.Contains(paths, p.main) {
		paths = append(paths, p.main)
	}
	for _, w := range paths {
		if w == t.Path || w == t.PhysicalPath {
			continue // the target's own entry
		}
		kind := PeerWorktree
		if w == p.main {
			kind = PeerMainWorktree
		}
		if err := add(kind, w, ""); err != nil {
			return nil, err
		}
	}
	// Every independent repository nested inside the target. The target's
	// own checked-out submodules are part of it, not peers: their work is
	// kept before removal (keepSubmodules).
	owned, err := ownedSubmodules(ctx, t.Path)
	if err != nil {
		return nil, err
	}
	nested, err := nestedRepositories(t.Path)
	if err != nil {
		return nil, &Error{Op: "reclaim", Binding: t.Binding, Path: t.Path, Err: ErrIdentity,
			Reason: "cannot search the workspace for nested repositories: " + err.Error()}
	}
	for _, n := range nested {
		if owned[n] {
			continue
		}
		if err := add(PeerNestedRepo, n, ""); err != nil {
			return nil, err
		}
	}
	return peers, nil
}

// attestedAbsent reports whether a reclaimed workspace's directory is gone
// now: nothing at its path, or a different directory than the one it had.
func attestedAbsent(r *claimRecord) bool {
	var dev, ino uint64
	if ev := r.Events[EventCreated]; ev != nil {
		dev, ino = ev.Dev, ev.Ino
	}
	return absentNow(r.Claim.Path, dev, ino, r.Digest)
}

// absentNow reports whether the reclaimed workspace of the claim with
// digest, once at path with identity dev:ino, is gone now: nothing is at
// path, or a different directory (zero dev:ino: none was ever recorded, so
// only nothing at all counts), or a worktree pinned for another claim. The
// last case matters because file systems reuse inode numbers: a workspace
// restored or allocated at the same path often gets the reclaimed one's
// inode back, and its pin is what tells them apart.
func absentNow(path string, dev, ino uint64, digest string) bool {
	id, err := pathid.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil || ino == 0 {
		return false
	}
	if id.Dev != dev || id.Ino != ino {
		return true
	}
	pin, err := gitops.PinAt(path)
	return err == nil && digest != "" && pin != digest
}

// peerIgnores asks the ancestor peer's git whether it ignores the target's
// path relative to it.
func (p *Provider) peerIgnores(ctx context.Context, peer string, o pathid.Overlap, target pathid.Resolved) (bool, string) {
	for _, pair := range [][2]string{{peer, target.Lexical}, {o.B, o.A}} {
		rel, err := filepath.Rel(pair[0], pair[1])
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		ignored, err := gitops.CheckIgnore(ctx, pair[0], filepath.ToSlash(rel)+"/")
		if err == nil && ignored {
			return true, "git check-ignore " + filepath.ToSlash(rel) + "/"
		}
	}
	return false, ""
}

// nestedRepositories walks the target for .git entries (directories or
// files) other than its own top-level .git.
func nestedRepositories(root string) ([]string, error) {
	var out []string
	err := walkForGit(root, true, &out)
	sort.Strings(out)
	return out, err
}

// walkForGit looks through dir for entries named .git, the way
// filepath.WalkDir would (no symlink is followed), but without sorting or
// building a path for every file: a workspace holds tens of thousands of
// files and a reclaim walks it before every destructive step.
func walkForGit(dir string, top bool, out *[]string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	if !top && slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "HEAD" }) {
		// A directory git would open as a git directory (a bare
		// repository, a moved .git, an admin entry) is a repository of
		// its own too.
		names := make(map[string]bool, len(entries))
		for _, e := range entries {
			names[e.Name()] = true
		}
		if isGitDir(dir, names) {
			*out = append(*out, dir)
			return nil
		}
	}
	for _, e := range entries {
		name := e.Name()
		if name == ".git" {
			if !top {
				*out = append(*out, dir)
			}
			continue // the target's own .git, or a nested repository's
		}
		if e.IsDir() {
			if err := walkForGit(dir+string(filepath.Separator)+name, false, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// firstOverlap returns a peer_overlap error for the first overlapping peer.
func firstOverlap(binding, target string, peers []Peer) error {
	for _, pr := range peers {
		if pr.Overlaps {
			who := pr.Kind
			if pr.Binding != "" {
				who += " " + pr.Binding
			}
			return &Error{Op: "reclaim", Binding: binding, Path: target, Peer: pr.Path, Err: ErrPeerOverlap,
				Reason: fmt.Sprintf("%s at %s overlaps the target %s: %s", who, pr.Path, target, pr.Relation),
				Hint:   overlapHint(pr)}
		}
	}
	return nil
}

func overlapHint(pr Peer) string {
	if strings.HasPrefix(pr.Relation, "contains the target") {
		// The target lies inside the peer: reclaiming "the inner one first"
		// is this very reclaim, so the way out is the peer's ignore rules.
		return "have " + pr.Path + " ignore the workspace's folder (its .gitignore, or the repository's info/exclude), or move the workspace; " +
			"two nested workspaces: once the outer ignores the inner's folder, reclaim the inner one, then the outer (nothing was changed)"
	}
	switch pr.Kind {
	case PeerNestedRepo:
		return "move the nested repository out of the workspace (nothing was changed)"
	case PeerWorkspace:
		return "reclaim the inner workspace first, or move it; two nested workspaces: have the outer ignore the inner's folder (.gitignore), reclaim the inner one, then the outer (nothing was changed)"
	case PeerMainWorktree, PeerWorktree:
		return "remove or move that worktree out of the workspace first (nothing was changed)"
	}
	return "nothing was changed"
}

// ownedSubmodules returns the checked-out submodules of the worktree at
// top (absolute path -> true): gitlinks in its index whose .git is a file
// pointing into the worktree's own git directory (<gitdir>/modules/...).
// Anything else with a .git at a gitlink path (a repository cloned there
// by hand, a .git directory) stays an independent repository: a peer.
func ownedSubmodules(ctx context.Context, top string) (map[string]bool, error) {
	owned := map[string]bool{}
	gitdir, err := dotGitLink(top, filepath.Join(top, ".git"))
	if err != nil {
		return owned, nil // not a linked worktree: verifyRepository says so
	}
	subs, err := gitops.Submodules(ctx, top)
	if err != nil {
		return nil, err
	}
	modules := filepath.Join(gitdir, "modules") + string(filepath.Separator)
	for _, sub := range subs {
		dir := filepath.Join(top, filepath.FromSlash(sub))
		if sg, err := dotGitLink(dir, filepath.Join(dir, ".git")); err == nil && strings.HasPrefix(sg, modules) {
			owned[dir] = true
		}
	}
	return owned, nil
}

// dotGitLink reads a .git file ("gitdir: X") and returns X, absolute and
// cleaned (relative to dir).
func dotGitLink(dir, dotgit string) (string, error) {
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", dotgit)
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", err
	}
	g, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "gitdir: ")
	if !ok || g == "" {
		return "", fmt.Errorf("%s is not a gitdir link", dotgit)
	}
	if !filepath.IsAbs(g) {
		g = filepath.Join(dir, g)
	}
	return filepath.Clean(g), nil
}
