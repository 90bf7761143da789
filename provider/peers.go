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
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// Peer kinds.
const (
	PeerWorkspace    = "workspace"         // a majlis workspace, in any state
	PeerWorktree     = "worktree"          // a linked worktree git lists
	PeerMainWorktree = "main_worktree"     // the repository's main worktree
	PeerNestedRepo   = "nested_repository" // an independent repository inside the target
)

// Peer is wire.Peer: the result type is defined once, in the wire contract.
type Peer = wire.Peer

// retainedPeers lists every retained peer of the target claim and judges
// whether each overlaps it. It reads the state folder and the filesystem
// afresh on every call: reclaim runs it immediately before every
// destructive effect.
//
// It takes the workspaces from the claims journal, which names a superset
// of them (records_journal.go); when that finds a workspace that overlaps, or the
// journal cannot be used, the answer comes from the claim records
// themselves (retainedPeersFromRecords), never from the claims index.
func (p *Provider) retainedPeers(ctx context.Context, target *claimRecord) ([]Peer, error) {
	facts, err := p.collectPeers(ctx, target, p.journalWorkspaces)
	if err == nil {
		peers := judgePeers(facts)
		if !slices.ContainsFunc(peers, func(pr Peer) bool { return pr.Overlaps && pr.Kind == PeerWorkspace }) {
			return peers, nil
		}
	} else if !errors.Is(err, errJournalUnusable) {
		return nil, err
	}
	return p.retainedPeersFromRecords(ctx, target)
}

// retainedPeersFromClaims is retainedPeers from every claim, read through
// the claims index (records_index.go): what a preview shows. The reclaim
// that follows decides with retainedPeers before every destructive step.
func (p *Provider) retainedPeersFromClaims(ctx context.Context, target *claimRecord) ([]Peer, error) {
	facts, err := p.collectPeers(ctx, target, inventoryWorkspaces(p.readInventory))
	if err != nil {
		return nil, err
	}
	return judgePeers(facts), nil
}

// retainedPeersFromRecords is retainedPeers from every claim record read
// from its file, each validated: the answer whenever the journal is in
// doubt.
func (p *Provider) retainedPeersFromRecords(ctx context.Context, target *claimRecord) ([]Peer, error) {
	facts, err := p.collectPeers(ctx, target, inventoryWorkspaces(p.readInventoryFromRecords))
	if err != nil {
		return nil, err
	}
	return judgePeers(facts), nil
}

// A peerCandidate is one place that may hold a retained peer's files, as
// collected: where it is, and what the file system and git said of it.
type peerCandidate struct {
	Kind, Path, Binding string
	// Unresolvable: the place could not be resolved (why); it cannot be
	// shown to be elsewhere.
	Unresolvable string
	Overlap      pathid.Overlap // A = the target, B = the candidate
	// Ignores, for a candidate that contains the target: why its git
	// ignores the target's folder; empty when it does not.
	Ignores string
}

// peerFacts are what the peer check collects before it judges.
type peerFacts struct {
	Candidates []peerCandidate
}

// A workspaceSource lists the workspaces of the repository, in any state,
// that may still have files: every one except the target claim itself,
// failed allocations, and reclaimed workspaces whose directory is attested
// absent now. Damaged bindings contribute every place they may be.
type workspaceSource func(target *claimRecord) ([]workspacePlace, error)

// A workspacePlace is a workspace's path, as a source names it.
type workspacePlace struct{ Path, Binding string }

// journalWorkspaces is the workspaceSource of the claims journal (a
// superset of the claim records' workspaces), or errJournalUnusable.
func (p *Provider) journalWorkspaces(target *claimRecord) ([]workspacePlace, error) {
	claims, err := p.records.Journal()
	if err != nil {
		return nil, err
	}
	var out []workspacePlace
	for _, c := range claims {
		if c.Digest == target.Digest || c.Failed {
			continue
		}
		if c.Reclaimed && absentNow(c.Path, c.Dev, c.Ino, c.Digest) {
			continue
		}
		out = append(out, workspacePlace{c.Path, c.Binding})
	}
	return out, nil
}

// inventoryWorkspaces is the workspaceSource of the claims as read.
func inventoryWorkspaces(read func() (*inventory, error)) workspaceSource {
	return func(target *claimRecord) ([]workspacePlace, error) {
		inv, err := read()
		if err != nil {
			return nil, err
		}
		// A damaged binding's workspaces are peers wherever they may be.
		stand, err := inv.peerRecords("reclaim")
		if err != nil {
			return nil, err
		}
		var out []workspacePlace
		for _, r := range stand {
			out = append(out, workspacePlace{r.Claim.Path, r.Claim.Binding})
		}
		for _, recs := range inv.good {
			for _, r := range recs {
				if r.Digest == target.Digest || r.has(EventFailed) {
					continue
				}
				// A reclaimed workspace whose kept trash was purged or restored
				// (then a newer claim has the directory) is not a peer either.
				if r.has(EventReclaimed) && (attestedAbsent(r) || r.has(EventPurged)) {
					continue
				}
				out = append(out, workspacePlace{r.Claim.Path, r.Claim.Binding})
			}
		}
		return out, nil
	}
}

// collectPeers gathers every candidate peer of the target: the workspaces
// the source names, every worktree git lists (the main one included), and
// every independent repository nested inside the target; each resolved on
// the file system and compared with the target, and, where one contains
// the target, whether its git ignores it.
func (p *Provider) collectPeers(ctx context.Context, target *claimRecord, source workspaceSource) (*peerFacts, error) {
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

	facts := &peerFacts{}
	// A workspace is usually listed twice (its claim and git's entry):
	// resolve each path once per check, and the directories they share
	// once too. Once per check, not once per process: each check must see
	// the file system as it is now, since a symlink put on a peer's way
	// since the last check moves the peer (perhaps into the target).
	resolver := pathid.NewResolver()
	resolved := map[string]pathid.Resolved{}
	add := func(kind, path, binding string) {
		c := peerCandidate{Kind: kind, Path: path, Binding: binding}
		pr, ok := resolved[path]
		if !ok {
			var err error
			if pr, err = resolver.Resolve(path); err != nil {
				c.Unresolvable = err.Error()
				facts.Candidates = append(facts.Candidates, c)
				return
			}
			resolved[path] = pr
		}
		c.Overlap = tr.Compare(pr)
		if c.Overlap.Relation == pathid.BContainsA && kind != PeerNestedRepo {
			_, c.Ignores = p.peerIgnores(ctx, path, c.Overlap, tr)
		}
		facts.Candidates = append(facts.Candidates, c)
	}

	workspaces, err := source(target)
	if err != nil {
		return nil, err
	}
	for _, w := range workspaces {
		add(PeerWorkspace, w.Path, w.Binding)
	}
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
		add(kind, w, "")
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
		if !owned[n] {
			add(PeerNestedRepo, n, "")
		}
	}
	return facts, nil
}

// judgePeers decides, from the collected facts alone, which candidates
// overlap the target. A candidate whose place cannot be resolved cannot be
// shown to be elsewhere: it overlaps. One that contains the target
// overlaps unless its git ignores the target (so none of its own files
// are in it); a nested repository always does.
func judgePeers(f *peerFacts) []Peer {
	peers := make([]Peer, 0, len(f.Candidates))
	for _, c := range f.Candidates {
		peer := Peer{Kind: c.Kind, Path: c.Path, Binding: c.Binding}
		switch {
		case c.Unresolvable != "":
			peer.Overlaps, peer.Relation = true, "unresolvable: "+c.Unresolvable
		case c.Overlap.Relation == pathid.Disjoint:
			peer.Relation = "disjoint"
		case c.Overlap.Relation == pathid.BContainsA && c.Kind != PeerNestedRepo && c.Ignores != "":
			peer.Relation = "contains the target, which it ignores (" + c.Ignores + ")"
		case c.Overlap.Relation == pathid.BContainsA:
			peer.Overlaps, peer.Relation = true, "contains the target ("+c.Overlap.String()+")"
		default:
			peer.Overlaps, peer.Relation = true, c.Overlap.String()
		}
		peers = append(peers, peer)
	}
	return peers
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
	pin, err := gitops.ReadWorktreePin(path)
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
			if top {
				continue // the target's own
			}
			child := dir + string(filepath.Separator) + name
			if salvage.DotGitIsRepository(child) {
				*out = append(*out, dir)
				continue // a nested repository's
			}
			// A folder or file named .git that is no repository: its
			// files are the workspace's, kept by the salvage beside its
			// tree (git never lists them); a repository inside it is not.
			if e.IsDir() {
				if err := walkForGit(child, false, out); err != nil {
					return err
				}
			}
			continue
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
