package provider

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

// The retained-peer and authority matrix of reclaim (issue 4): every
// refusal is asserted with errors.Is AND with a full before/after picture
// of everything a reclaim could touch, so a refusal that came after a
// destructive effect cannot pass.

// A peerWorld is everything a refused reclaim must leave exactly as it was.
type peerWorld struct {
	Trees     map[string][]string // every entry below each directory: name, type, mode, content digest; the root's inode
	Status    map[string]string   // git status --porcelain=v2 -z (with untracked and ignored files) of each directory
	Worktrees string              // git worktree list --porcelain
	Refs      string              // every ref, salvage refs included
	Claims    []string            // the claims folder: name and content digest of every record
	Leases    []string            // <state>/leases/*.lease: name and content digest
}

// peerObserve records the world of the repository and of dirs (workspaces,
// peers, anything a reclaim must not touch).
func peerObserve(t *testing.T, p *Provider, repo *fixtures.Repo, dirs ...string) peerWorld {
	t.Helper()
	w := peerWorld{Trees: map[string][]string{}, Status: map[string]string{}}
	for _, d := range append([]string{repo.Dir}, dirs...) {
		w.Trees[d] = peerTree(t, d)
		// --no-optional-locks: observing must not refresh an index (a
		// nested repository's lies inside the trees compared).
		out, err := (&fixtures.Repo{T: t, Dir: d}).TryGit("--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored")
		if err != nil {
			out = "error: " + err.Error()
		}
		w.Status[d] = out
	}
	w.Worktrees = repo.Git("worktree", "list", "--porcelain")
	w.Refs = repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
	w.Claims = peerTree(t, filepath.Join(p.stateDir, "claims"))
	leases, _ := filepath.Glob(filepath.Join(p.stateDir, "leases", "*.lease"))
	for _, l := range leases {
		b, err := os.ReadFile(l)
		w.Leases = append(w.Leases, fmt.Sprintf("%s %x %v", filepath.Base(l), sha256.Sum256(b), err))
	}
	return w
}

// peerTree lists every entry below root (root's own .git directory excepted:
// that is the common dir, which git itself rewrites), with the content
// digest of files, the target of symlinks and the identity of root.
func peerTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, path)
		if err != nil {
			out = append(out, fmt.Sprintf("%q error %v", rel, err))
			return nil
		}
		if rel == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		fi, err := os.Lstat(path)
		if err != nil {
			out = append(out, fmt.Sprintf("%q error %v", rel, err))
			return nil
		}
		var line string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			line = fmt.Sprintf("%q symlink -> %s", rel, target)
		case fi.IsDir():
			line = fmt.Sprintf("%q dir %v", rel, fi.Mode().Perm())
		case !fi.Mode().IsRegular():
			// A FIFO or a device: reading it could block.
			line = fmt.Sprintf("%q %v", rel, fi.Mode())
		default:
			b, err := os.ReadFile(path)
			line = fmt.Sprintf("%q file %v %x %v", rel, fi.Mode().Perm(), sha256.Sum256(b), err)
		}
		if rel == "." {
			id, _ := pathid.Lstat(path)
			line += " id " + id.String()
		}
		out = append(out, line)
		return nil
	})
	return out
}

func peerUnchanged(t *testing.T, before, after peerWorld) {
	t.Helper()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("a refused reclaim changed something (-before +after):\n%s", diff)
	}
}

// peerNoLease asserts that no reclaim reservation is left behind.
func peerNoLease(t *testing.T, p *Provider) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(p.stateDir, "leases", reclaimPrefix+"*.lease"))
	if len(left) > 0 {
		t.Errorf("reclaim reservation left behind: %v", left)
	}
}

// peerRefused asserts that err wraps want and returns the *Error carrying the
// facts.
func peerRefused(t *testing.T, err, want error) *Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("%v is not a *provider.Error", err)
	}
	return pe
}

// peerRefusedOverlap asserts a peer_overlap refusal that names peer.
func peerRefusedOverlap(t *testing.T, err error, kind string, peer ...string) {
	t.Helper()
	pe := peerRefused(t, err, ErrPeerOverlap)
	if !slices.Contains(peer, pe.Peer) {
		t.Errorf("refusal names peer %q, want one of %q: %v", pe.Peer, peer, err)
	}
	if !strings.Contains(err.Error(), pe.Peer) || !strings.Contains(err.Error(), kind) {
		t.Errorf("message does not name the %s peer %s: %v", kind, pe.Peer, err)
	}
	if pe.Hint == "" {
		t.Errorf("refusal says nothing about what to do: %v", err)
	}
}

// peerProvider makes a registered repository whose HEAD tracks a
// .gitignore (build/, *.log), README.md and src/app.go.
func peerProvider(t *testing.T) (*fixtures.Repo, *Provider) {
	t.Helper()
	repo, p := newProvider(t)
	repo.WriteGitignore("build/", "*.log")
	repo.WriteFile("src/app.go", "package app\n")
	repo.Commit("gitignore and sources")
	return repo, p
}

// peerDirty gives a workspace every kind of uncommitted state: a modified
// tracked file, a staged new file, an untracked file and an ignored one,
// so that a reset or clean that should not have run cannot go unseen.
func peerDirty(t *testing.T, dir string) {
	t.Helper()
	ws := &fixtures.Repo{T: t, Dir: dir}
	ws.WriteFile("README.md", "# edited in "+filepath.Base(dir)+"\n")
	ws.WriteFile("src/staged.go", "package app // staged\n")
	ws.Git("add", "src/staged.go")
	ws.WriteFile("notes.txt", "untracked notes\n")
	ws.WriteFile("build/out.o", "ignored build output\n")
}

func peerList(t *testing.T, p *Provider, binding string) []Peer {
	t.Helper()
	rec, err := p.records.Current("test", binding)
	if err != nil {
		t.Fatal(err)
	}
	peers, err := p.retainedPeersFromClaims(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	// The check from the claims journal must see the same peers.
	fast, err := p.retainedPeers(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	byKey := func(a, b Peer) int { return strings.Compare(a.Kind+"\x00"+a.Path, b.Kind+"\x00"+b.Path) }
	if diff := cmp.Diff(slices.SortedFunc(slices.Values(peers), byKey), slices.SortedFunc(slices.Values(fast), byKey)); diff != "" {
		t.Errorf("fast peer check disagrees with the full one (-full +fast):\n%s", diff)
	}
	return peers
}

func peerFind(peers []Peer, kind, path string) *Peer {
	for i := range peers {
		if peers[i].Kind == kind && peers[i].Path == path {
			return &peers[i]
		}
	}
	return nil
}

// peerReclaimed asserts that a workspace was reclaimed: directory and worktree
// entry gone, branch kept, list --all says reclaimed, no reservation left.
func peerReclaimed(t *testing.T, p *Provider, repo *fixtures.Repo, ws *Workspace, res *ReclaimResult) {
	t.Helper()
	if res == nil || !res.Removed || res.Binding != ws.Binding {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Lstat(ws.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists: %v", ws.Path, err)
	}
	if list := repo.Git("worktree", "list", "--porcelain"); strings.Contains(list, ws.PhysicalPath+"\n") {
		t.Errorf("worktree entry of %s left:\n%s", ws.Binding, list)
	}
	if got := repo.RevParse("refs/heads/" + ws.Branch); got != ws.Base {
		t.Errorf("branch %s at %s, want it kept at %s", ws.Branch, got, ws.Base)
	}
	all, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range all {
		if w.ClaimDigest == ws.ClaimDigest {
			found = true
			want := ""
			if res.SalvageRef != nil {
				want = *res.SalvageRef
			}
			if w.State != StateReclaimed || w.SalvageRef != want {
				t.Errorf("list --all: %s state %s salvage %q, want reclaimed with %q", w.Binding, w.State, w.SalvageRef, want)
			}
		}
	}
	if !found {
		t.Errorf("list --all does not show %s", ws.Binding)
	}
	peerNoLease(t, p)
}

// Peers inside the target always overlap it: a majlis workspace, a plain
// git worktree, an independent repository and a .git file pointing
// elsewhere. Each refuses with peer_overlap naming the peer, before any
// effect, the preview included.
func TestReclaimRefusesNestedPeers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind string
		// nest puts a peer inside target and returns its path.
		nest func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string
	}{
		{"majlis workspace", PeerWorkspace, func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string {
			return mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true}).Path
		}},
		{"plain git worktree", PeerWorktree, func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string {
			return repo.AddWorktree(filepath.Join(target.Path, "plain"), "plain").Dir
		}},
		{"independent repository", PeerNestedRepo, func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string {
			return fixtures.NewRepoAt(t, filepath.Join(target.Path, "vendor", "lib")).Dir
		}},
		{"independent repository, deep and committed-to", PeerNestedRepo, func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string {
			r := fixtures.NewRepoAt(t, filepath.Join(target.Path, "a", "b", "c", "deep"))
			r.WriteFile("work.txt", "its own work\n")
			r.Commit("own commit")
			r.WriteFile("uncommitted.txt", "its own uncommitted work\n")
			return r.Dir
		}},
		{".git file pointing elsewhere", PeerNestedRepo, func(t *testing.T, repo *fixtures.Repo, p *Provider, target *Workspace) string {
			other := fixtures.NewRepo(t)
			dir := filepath.Join(target.Path, "linked")
			ws := &fixtures.Repo{T: t, Dir: target.Path}
			ws.WriteFile("linked/file.txt", "someone else's checkout\n")
			ws.WriteFile("linked/.git", "gitdir: "+other.GitDir()+"\n")
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			peerDirty(t, target.Path)
			peer := tc.nest(t, repo, p, target)
			before := peerObserve(t, p, repo, target.Path, peer)

			_, err := p.PreviewReclaim(t.Context(), "T-1")
			peerRefusedOverlap(t, err, tc.kind, peer)
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, RequestID: "rc-" + tc.name})
			peerRefusedOverlap(t, err, tc.kind, peer)

			peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, peer))
			peerNoLease(t, p)
			if r, err := p.records.Request("rc-" + tc.name); err == nil {
				t.Errorf("a refused reclaim recorded a result for its request id: %s", r.Result)
			}
			// The refusal is not sticky: a second attempt refuses the same way
			// (no reservation of the first attempt blocks it).
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			peerRefusedOverlap(t, err, tc.kind, peer)
		})
	}
}

// A target inside an ancestor peer is allowed only where that peer ignores
// it.
func TestReclaimAncestorPeers(t *testing.T) {
	t.Parallel()
	t.Run("inside the main worktree, which ignores it", func(t *testing.T) {
		repo, p := peerProvider(t)
		repo.WriteGitignore("build/", "*.log", ".worktrees/")
		repo.Commit("ignore .worktrees")
		// No --allow-nested: the ignore rule is what allows it.
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Path: repo.Path(".worktrees/T-1")})
		peerDirty(t, target.Path)
		pv, err := p.PreviewReclaim(t.Context(), "T-1")
		if err != nil {
			t.Fatal(err)
		}
		main := peerFind(pv.Peers, PeerMainWorktree, repo.Dir)
		if main == nil || main.Overlaps || !strings.Contains(main.Relation, "ignores") {
			t.Fatalf("main worktree peer %+v, want a non-overlapping one that ignores the target; peers %+v", main, pv.Peers)
		}
		mainBefore := peerTree(t, repo.Dir)
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest, DeleteTrash: true})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, target, res)
		// Only the target left the main worktree's tree.
		var want []string
		for _, l := range mainBefore {
			if !strings.HasPrefix(l, `".worktrees/T-1`) {
				want = append(want, l)
			}
		}
		if diff := cmp.Diff(want, peerTree(t, repo.Dir)); diff != "" {
			t.Errorf("main worktree changed beyond the target (-want +got):\n%s", diff)
		}
	})

	t.Run("inside the main worktree, which does not ignore it", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Path: repo.Path("nest/T-1"), AllowNested: true})
		peerDirty(t, target.Path)
		before := peerObserve(t, p, repo, target.Path)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerMainWorktree, repo.Dir)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		peerNoLease(t, p)
	})

	t.Run("inside a plain worktree, which does not ignore it", func(t *testing.T) {
		repo, p := peerProvider(t)
		plain := repo.NewWorktree("plain")
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Path: plain.Path("sub/T-1"), AllowNested: true})
		before := peerObserve(t, p, repo, target.Path, plain.Dir)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorktree, plain.Dir)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, plain.Dir))
		peerNoLease(t, p)
	})

	// Two nested workspaces block each other: the inner lies in the outer,
	// which does not ignore it, and the outer contains the inner. The way
	// out (docs/reclaim.md): the outer ignores the inner's folder, through
	// its .gitignore or the repository's info/exclude; then the inner can be
	// reclaimed, then the outer.
	for _, way := range []struct {
		name   string
		ignore func(t *testing.T, repo *fixtures.Repo, outer *Workspace)
	}{
		{"outer's .gitignore", func(t *testing.T, repo *fixtures.Repo, outer *Workspace) {
			(&fixtures.Repo{T: t, Dir: outer.Path}).WriteGitignore("/inner/")
		}},
		{"repository's info/exclude", func(t *testing.T, repo *fixtures.Repo, outer *Workspace) {
			repo.WriteInfoExclude("/inner/")
		}},
	} {
		t.Run("two nested workspaces, the way out through the "+way.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			outer := mustAllocate(t, p, AllocateOptions{Binding: "O"})
			inner := mustAllocate(t, p, AllocateOptions{Binding: "I", Path: filepath.Join(outer.Path, "inner"), AllowNested: true})
			peerDirty(t, outer.Path)
			peerDirty(t, inner.Path)
			before := peerObserve(t, p, repo, outer.Path)

			_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "I", Yes: true})
			peerRefusedOverlap(t, err, PeerWorkspace, outer.Path)
			if pe := peerRefused(t, err, ErrPeerOverlap); !strings.Contains(pe.Hint, "ignore") {
				t.Errorf("the inner's refusal does not point at the way out (the outer ignoring it): %v", err)
			}
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "O", Yes: true})
			peerRefusedOverlap(t, err, PeerWorkspace, inner.Path)
			if pe := peerRefused(t, err, ErrPeerOverlap); !strings.Contains(pe.Hint, "reclaim the inner") {
				t.Errorf("the outer's refusal does not say to reclaim the inner one first: %v", err)
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, outer.Path))
			peerNoLease(t, p)

			way.ignore(t, repo, outer)
			outerBefore := peerTree(t, outer.Path)
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "I", Yes: true})
			if err != nil {
				t.Fatalf("reclaim of the ignored inner workspace: %v", err)
			}
			peerReclaimed(t, p, repo, inner, res)
			var want []string
			for _, l := range outerBefore {
				if !strings.HasPrefix(l, `"inner`) {
					want = append(want, l)
				}
			}
			if diff := cmp.Diff(want, peerTree(t, outer.Path)); diff != "" {
				t.Errorf("reclaiming the inner workspace changed the outer (-want +got):\n%s", diff)
			}
			if pr := peerFind(peerList(t, p, "O"), PeerWorkspace, inner.Path); pr != nil {
				t.Errorf("the reclaimed, absent inner workspace is still a peer: %+v", pr)
			}
			res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "O", Yes: true})
			if err != nil {
				t.Fatalf("reclaim of the outer workspace: %v", err)
			}
			peerReclaimed(t, p, repo, outer, res)
			if got := repo.Git("show", *res.SalvageRef+":notes.txt"); got != "untracked notes\n" {
				t.Errorf("the outer's work was not salvaged: %q", got)
			}
		})
	}
}

// A peer reached through another name is still found: the overlap is
// judged physically, not on the path strings.
func TestReclaimAliasedPeers(t *testing.T) {
	t.Parallel()
	t.Run("peer allocated through a symlink to the target", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		link := filepath.Join(fixtures.TempDir(t), "alias")
		if err := os.Symlink(target.Path, link); err != nil {
			t.Fatal(err)
		}
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(link, "inner"), AllowNested: true})
		if pathid.Contains(target.Path, peer.Path) || !pathid.Contains(target.Path, peer.PhysicalPath) {
			t.Fatalf("fixture: peer %s (physically %s) should lie in %s only physically", peer.Path, peer.PhysicalPath, target.Path)
		}
		// The claim itself, under its lexical path, is judged overlapping
		// (not only the worktree entry git recorded, or the .git file found
		// inside the target).
		if pr := peerFind(peerList(t, p, "T-1"), PeerWorkspace, peer.Path); pr == nil || !pr.Overlaps {
			t.Errorf("the aliased claim as peer: %+v, want an overlapping one", pr)
		}
		before := peerObserve(t, p, repo, target.Path, peer.Path)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path, peer.PhysicalPath)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, peer.Path))
		peerNoLease(t, p)
	})

	t.Run("target allocated through a symlinked parent", func(t *testing.T) {
		repo, p := peerProvider(t)
		real := filepath.Join(fixtures.TempDir(t), "real")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(fixtures.TempDir(t), "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Path: filepath.Join(link, "T-1")})
		if target.Path == target.PhysicalPath {
			t.Fatalf("fixture: target %s has no alias", target.Path)
		}
		// A plain git worktree added at the physical path, inside the target.
		peer := repo.AddWorktree(filepath.Join(real, "T-1", "plain"), "plain").Dir
		before := peerObserve(t, p, repo, target.Path, peer)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorktree, peer)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, peer))
		peerNoLease(t, p)
	})

	t.Run("case variant", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		insensitive, err := pathid.CaseInsensitive(target.Path)
		if err != nil || !insensitive {
			t.Skipf("the file system at %s is not positively identified as case-insensitive (%v, %v): case variants name different directories here", target.Path, insensitive, err)
		}
		variant := filepath.Join(filepath.Dir(target.Path), peerSwapCase(filepath.Base(target.Path)), "inner")
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: variant, AllowNested: true})
		before := peerObserve(t, p, repo, target.Path)
		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path, peer.PhysicalPath)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
	})
}

func peerSwapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

// Termination and release do not free a peer's files: only a reclaimed
// event plus a current attestation that its directory is gone does. A
// claim whose allocation failed (and was undone) is no peer.
func TestReclaimReleasedAndGonePeers(t *testing.T) {
	t.Parallel()
	t.Run("released but present", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true})
		if _, err := p.Release(t.Context(), "N", ""); err != nil {
			t.Fatal(err)
		}
		if pr := peerFind(peerList(t, p, "T-1"), PeerWorkspace, peer.Path); pr == nil || !pr.Overlaps {
			t.Fatalf("released workspace as peer: %+v, want an overlapping peer", pr)
		}
		before := peerObserve(t, p, repo, target.Path)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		peerNoLease(t, p)
	})

	t.Run("reclaimed event but directory still present", func(t *testing.T) {
		// Without the attestation (the very directory is still there), a
		// reclaimed event alone does not release the peer.
		_, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true})
		rec, err := p.records.Current("test", "N")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.records.Publish(rec, Event{Kind: EventReclaimed}); err != nil {
			t.Fatal(err)
		}
		if pr := peerFind(peerList(t, p, "T-1"), PeerWorkspace, peer.Path); pr == nil || !pr.Overlaps {
			t.Fatalf("reclaimed-but-present workspace as peer: %+v, want an overlapping peer", pr)
		}
		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path)
		peerNoLease(t, p)
	})

	t.Run("reclaimed and gone", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		(&fixtures.Repo{T: t, Dir: target.Path}).WriteGitignore("/nested/")
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true})
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "N", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, peer, res)
		for _, pr := range peerList(t, p, "T-1") {
			if pr.Overlaps || pr.Binding == "N" {
				t.Errorf("peer %+v: a reclaimed workspace whose directory is gone is no peer", pr)
			}
		}
		res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, target, res)
	})

	t.Run("failed allocation", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		hook := filepath.Join(repo.CommonDir(), "hooks", "post-checkout")
		os.MkdirAll(filepath.Dir(hook), 0o755)
		if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true}); err == nil {
			t.Fatal("allocation succeeded despite the failing hook")
		}
		os.Remove(hook)
		if recs, _ := p.records.Binding("N"); len(recs) != 1 || !recs[0].has(EventFailed) {
			t.Fatalf("fixture: N's claim not marked failed")
		}
		for _, pr := range peerList(t, p, "T-1") {
			if pr.Binding == "N" || pr.Overlaps {
				t.Errorf("peer %+v: a failed allocation is no peer", pr)
			}
		}
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, target, res)
	})
}

// A peer published after the preview: the confirmed digest no longer
// describes the world. An overlapping one refuses as peer_overlap (whether
// the digest is confirmed or --yes skips the comparison); a non-overlapping
// one makes the confirmation stale.
func TestReclaimPeerPublishedAfterPreview(t *testing.T) {
	t.Parallel()
	t.Run("nested", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peerDirty(t, target.Path)
		pv, err := p.PreviewReclaim(t.Context(), "T-1")
		if err != nil {
			t.Fatal(err)
		}
		peer := mustAllocate(t, p, AllocateOptions{Binding: "N", Path: filepath.Join(target.Path, "nested"), AllowNested: true})
		before := peerObserve(t, p, repo, target.Path)

		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
		// The overlap is judged before the digest is compared: the more
		// useful of the two refusals (both exit 3) names the peer.
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path)
		if now, err := p.preview(t.Context(), peerCurrent(t, p, "T-1"), false); err != nil || now.Digest == pv.Digest {
			t.Errorf("the preview's digest did not change with the new peer (%v)", err)
		}
		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		peerRefusedOverlap(t, err, PeerWorkspace, peer.Path)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		peerNoLease(t, p)
	})

	t.Run("sibling", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peerDirty(t, target.Path)
		pv, err := p.PreviewReclaim(t.Context(), "T-1")
		if err != nil {
			t.Fatal(err)
		}
		sibling := mustAllocate(t, p, AllocateOptions{Binding: "S"})
		before := peerObserve(t, p, repo, target.Path, sibling.Path)
		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
		peerRefused(t, err, ErrPreviewStale)
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, sibling.Path))
		peerNoLease(t, p)

		// Preview again and confirm that: it proceeds.
		pv, err = p.PreviewReclaim(t.Context(), "T-1")
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, target, res)
	})
}

func peerCurrent(t *testing.T, p *Provider, binding string) *claimRecord {
	t.Helper()
	rec, err := p.records.Current("test", binding)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Workspaces beside the target, sharing its repository, are peers that do
// not overlap: the reclaim proceeds and leaves them exactly as they were.
func TestReclaimSiblingsAreNotPeers(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	target := mustAllocate(t, p, AllocateOptions{Binding: "B"})
	c := mustAllocate(t, p, AllocateOptions{Binding: "C", Path: filepath.Join(fixtures.TempDir(t), "elsewhere", "C")})
	// A name that shares the target's as a prefix is no child of it.
	d := mustAllocate(t, p, AllocateOptions{Binding: "D", Path: target.Path + "-suffix"})
	plain := repo.NewWorktree("plain")
	for _, ws := range []string{a.Path, target.Path, c.Path, d.Path, plain.Dir} {
		peerDirty(t, ws)
	}
	siblings := []string{a.Path, c.Path, d.Path, plain.Dir}
	before := peerObserve(t, p, repo, siblings...)

	pv, err := p.PreviewReclaim(t.Context(), "B")
	if err != nil {
		t.Fatal(err)
	}
	// The claims of A, C and D; the worktrees of A, C, D and plain; the
	// main worktree. Not the target's own claim or entry.
	if pv.PeersChecked != 8 {
		t.Errorf("peers checked: %d, want 8: %+v", pv.PeersChecked, pv.Peers)
	}
	for _, pr := range pv.Peers {
		if pr.Overlaps {
			t.Errorf("sibling peer overlaps: %+v", pr)
		}
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "B", Confirm: pv.Digest})
	if err != nil {
		t.Fatal(err)
	}
	peerReclaimed(t, p, repo, target, res)

	after := peerObserve(t, p, repo, siblings...)
	// What the reclaim changes is the target's own records: its salvage
	// ref, its worktree entry and its events. Everything of the siblings
	// stays.
	if diff := cmp.Diff(before.Trees, after.Trees); diff != "" {
		t.Errorf("sibling files changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Status, after.Status); diff != "" {
		t.Errorf("sibling git status changed (-before +after):\n%s", diff)
	}
	ws, err := p.List(t.Context(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, w := range ws {
		states = append(states, w.Binding+" "+w.State)
	}
	if diff := cmp.Diff([]string{"A active", "C active", "D active"}, states); diff != "" {
		t.Errorf("workspaces after the reclaim (-want +got):\n%s", diff)
	}
}

// Authority: a live owner, a replaced directory, a foreign repository and
// a malformed inventory each refuse before any effect.
func TestReclaimAuthority(t *testing.T) {
	t.Parallel()
	t.Run("owner alive, then dead", func(t *testing.T) {
		repo, p := peerProvider(t)
		owner := exec.Command("sleep", "600")
		if err := owner.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", OwnerPID: owner.Process.Pid})
		peerDirty(t, target.Path)
		before := peerObserve(t, p, repo, target.Path)
		_, err := p.PreviewReclaim(t.Context(), "T-1")
		peerRefused(t, err, ErrWorkspaceLive)
		_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		pe := peerRefused(t, err, ErrWorkspaceLive)
		if !strings.Contains(pe.Reason, fmt.Sprint(owner.Process.Pid)) {
			t.Errorf("refusal does not name the owner pid %d: %v", owner.Process.Pid, err)
		}
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		peerNoLease(t, p)

		owner.Process.Kill()
		owner.Wait() // reaped: the pid is free
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatalf("reclaim after the owner exited: %v", err)
		}
		peerReclaimed(t, p, repo, target, res)
	})

	t.Run("task holds leases, then releases them", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peerDirty(t, target.Path)
		svc, err := admission.Open(t.Context(), p.stateDir, admission.Options{HostLedger: filepath.Join(t.TempDir(), "host.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		// The task's own intent, and another holder's file lease taken in
		// the workspace: each keeps it live.
		for _, acq := range []admission.AcquireRequest{
			{Holder: "T-1", Checkout: target.Path, Resources: []string{"intent:src/**"}, Token: "token-of-T-1-0123456789"},
			{Holder: "helper", Checkout: target.Path, Resources: []string{"file:notes.txt"}, Token: "token-of-helper-0123456789"},
		} {
			if _, err := svc.Acquire(t.Context(), acq); err != nil {
				t.Fatal(err)
			}
			before := peerObserve(t, p, repo, target.Path)
			_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			pe := peerRefused(t, err, ErrWorkspaceLive)
			if !strings.Contains(pe.Reason, acq.Holder) {
				t.Errorf("refusal does not name the holder %s: %v", acq.Holder, err)
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
			peerNoLease(t, p)
			if _, err := svc.Release(t.Context(), admission.ReleaseRequest{Holder: acq.Holder, Token: acq.Token}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatalf("reclaim after the leases were released: %v", err)
		}
		peerReclaimed(t, p, repo, target, res)
	})

	for _, tc := range []struct {
		name  string
		want  error
		drift func(t *testing.T, repo *fixtures.Repo, target *Workspace) (moved string)
	}{
		{"directory replaced by another directory", ErrIdentity, func(t *testing.T, repo *fixtures.Repo, target *Workspace) string {
			moved := target.Path + ".moved"
			if err := os.Rename(target.Path, moved); err != nil {
				t.Fatal(err)
			}
			(&fixtures.Repo{T: t, Dir: target.Path}).WriteFile("README.md", "an impostor\n")
			return moved
		}},
		{"directory replaced by a symlink to the original", ErrIdentity, func(t *testing.T, repo *fixtures.Repo, target *Workspace) string {
			moved := target.Path + ".moved"
			if err := os.Rename(target.Path, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, target.Path); err != nil {
				t.Fatal(err)
			}
			return moved
		}},
		{".git file points into another repository", ErrRepository, func(t *testing.T, repo *fixtures.Repo, target *Workspace) string {
			other := fixtures.NewRepo(t).NewWorktree("other")
			os.WriteFile(filepath.Join(target.Path, ".git"), []byte("gitdir: "+other.GitDir()+"\n"), 0o644)
			return other.Dir
		}},
		{".git file points to a sibling's entry", ErrRepository, func(t *testing.T, repo *fixtures.Repo, target *Workspace) string {
			sibling := repo.NewWorktree("sibling")
			os.WriteFile(filepath.Join(target.Path, ".git"), []byte("gitdir: "+sibling.GitDir()+"\n"), 0o644)
			return sibling.Dir
		}},
		{".git file replaced by a directory", ErrRepository, func(t *testing.T, repo *fixtures.Repo, target *Workspace) string {
			os.Remove(filepath.Join(target.Path, ".git"))
			fixtures.InitRepo(t, target.Path)
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			peerDirty(t, target.Path)
			moved := tc.drift(t, repo, target)
			dirs := []string{target.Path}
			if moved != "" {
				dirs = append(dirs, moved)
			}
			before := peerObserve(t, p, repo, dirs...)
			_, err := p.PreviewReclaim(t.Context(), "T-1")
			peerRefused(t, err, tc.want)
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			pe := peerRefused(t, err, tc.want)
			if pe.Hint == "" {
				t.Errorf("no hint: %v", err)
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, dirs...))
			peerNoLease(t, p)
		})
	}
}

// A malformed inventory refuses before any effect and says which file is
// wrong.
// A damaged record of ANOTHER workspace no longer refuses: damage stays
// local (damage_test.go).
func TestReclaimMalformedInventory(t *testing.T) {
	t.Parallel()
	claimFile := func(p *Provider, binding string) string {
		return filepath.Join(p.records.Dir(binding), claimName(1, "claim"))
	}
	garbageLease := func(t *testing.T, p *Provider, content string) string {
		f := filepath.Join(p.stateDir, "leases", reclaimPrefix+"T-1.lease")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		want   error
		damage func(t *testing.T, p *Provider) (file string)
	}{
		{"truncated target claim", ErrMalformed, func(t *testing.T, p *Provider) string {
			f := claimFile(p, "T-1")
			b, _ := os.ReadFile(f)
			os.WriteFile(f, b[:len(b)/2], 0o644)
			return f
		}},
		{"unknown format of the target claim", ErrMalformed, func(t *testing.T, p *Provider) string {
			f := claimFile(p, "T-1")
			b, _ := os.ReadFile(f)
			os.WriteFile(f, []byte(strings.Replace(string(b), formatClaim, "majlis.claim/9", 1)), 0o644)
			return f
		}},
		{"garbage file in the claims folder", ErrMalformed, func(t *testing.T, p *Provider) string {
			f := filepath.Join(p.records.Dir("T-1"), "notes.txt")
			os.WriteFile(f, []byte("hi"), 0o644)
			return f
		}},
		{"garbage entry among the bindings", ErrMalformed, func(t *testing.T, p *Provider) string {
			f := filepath.Join(p.stateDir, "claims", ".DS_Store")
			os.WriteFile(f, nil, 0o644)
			return f
		}},
		{"forged event", ErrMalformed, func(t *testing.T, p *Provider) string {
			f := filepath.Join(p.records.Dir("T-1"), claimName(1, "released"))
			os.WriteFile(f, []byte(`{"event":{},"sha256":"00"}`), 0o644)
			return f
		}},
		{"garbage reclaim reservation of the target", reservation.ErrMalformed, func(t *testing.T, p *Provider) string {
			return garbageLease(t, p, "not a lease\n")
		}},
		{"empty reclaim reservation of the target", reservation.ErrMalformed, func(t *testing.T, p *Provider) string {
			return garbageLease(t, p, "")
		}},
		{"reclaim reservation naming another resource", reservation.ErrMalformed, func(t *testing.T, p *Provider) string {
			l, err := p.leases.Acquire(t.Context(), reservation.Request{Resource: reclaimPrefix + "P", Purpose: "reclaim", TTL: time.Minute,
				Metadata: map[string]string{"binding": "P", "path": "/nowhere", "physical_path": "/nowhere"}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(l.Path())
			l.Release()
			return garbageLease(t, p, string(b))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			peer := mustAllocate(t, p, AllocateOptions{Binding: "P"})
			peerDirty(t, target.Path)
			file := tc.damage(t, p)
			before := peerObserve(t, p, repo, target.Path, peer.Path)
			_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("reclaim: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("refusal does not name the malformed file %s: %v", file, err)
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, target.Path, peer.Path))
			if _, err := os.Lstat(target.Path); err != nil {
				t.Errorf("target: %v", err)
			}
			if strings.Contains(tc.name, "reservation") {
				return // the damaged lease itself is still there, untouched
			}
			peerNoLease(t, p)
		})
	}
}

// Confirmation: none refuses; a digest that no longer matches refuses; a
// dirty submodule refuses unless its work is salvaged too.
func TestReclaimConfirmation(t *testing.T) {
	t.Parallel()
	t.Run("unconfirmed", func(t *testing.T) {
		repo, p := peerProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peerDirty(t, target.Path)
		before := peerObserve(t, p, repo, target.Path)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1"})
		if pe := peerRefused(t, err, ErrUnconfirmed); !strings.Contains(pe.Hint, "preview") {
			t.Errorf("hint does not say how to confirm: %v", err)
		}
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		peerNoLease(t, p)
	})

	for _, tc := range []struct {
		name   string
		change func(t *testing.T, target string)
		digest func(pv *Preview) string
	}{
		{"new untracked file", func(t *testing.T, target string) {
			os.WriteFile(filepath.Join(target, "late.txt"), []byte("written after the preview\n"), 0o644)
		}, nil},
		{"tracked file modified again", func(t *testing.T, target string) {
			os.WriteFile(filepath.Join(target, "src", "app.go"), []byte("package app // edited after the preview\n"), 0o644)
		}, nil},
		{"untracked file renamed", func(t *testing.T, target string) {
			os.Rename(filepath.Join(target, "notes.txt"), filepath.Join(target, "notes2.txt"))
		}, nil},
		{"new ignored file", func(t *testing.T, target string) {
			os.WriteFile(filepath.Join(target, "build", "more.o"), []byte("more ignored output\n"), 0o644)
		}, nil},
		{"digest of nothing", func(t *testing.T, target string) {}, func(*Preview) string { return "sha256:" + strings.Repeat("0", 64) }},
	} {
		t.Run("stale: "+tc.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			peerDirty(t, target.Path)
			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			digest := pv.Digest
			if tc.digest != nil {
				digest = tc.digest(pv)
			}
			tc.change(t, target.Path)
			before := peerObserve(t, p, repo, target.Path)
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: digest})
			peerRefused(t, err, ErrPreviewStale)
			peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
			peerNoLease(t, p)
		})
	}
}

// A workspace whose submodule is checked out and dirty. The preview
// detects the dirty submodule, but the reclaim refuses earlier, and more
// broadly: the submodule's worktree has a .git file of its own, so it is
// judged a nested repository (peer_overlap), with or without
// --salvage-submodules. That refusal is safe (nothing changes, the
// submodule's work stays), and it is the only outcome today: see the
// report on ErrDirtySubmodule being unreachable. Should submodules stop
// counting as nested repositories, the first reclaim below must become
// ErrDirtySubmodule.
// submoduleWorkspace makes a repository with a submodule "lib", registers
// it, and allocates workspace T-1 (its submodule not yet checked out).
func submoduleWorkspace(t *testing.T) (*fixtures.Repo, *Provider, *Workspace) {
	t.Helper()
	lib := fixtures.NewRepo(t)
	repo := fixtures.NewRepoAt(t, filepath.Join(fixtures.TempDir(t), "app"))
	repo.AddSubmodule("lib", lib)
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return repo, p, mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
}

func TestReclaimDirtySubmodule(t *testing.T) {
	t.Parallel()
	repo, p, target := submoduleWorkspace(t)
	var err error
	ws := &fixtures.Repo{T: t, Dir: target.Path}
	ws.Git("-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--init")
	sub := &fixtures.Repo{T: t, Dir: ws.Path("lib")}
	// A commit that exists only in this workspace's copy of the submodule,
	// and uncommitted work on top of it.
	sub.WriteFile("local.txt", "committed only here\n")
	localCommit := sub.Commit("local only")
	ws.WriteFile("lib/README.md", "# edited inside the submodule\n")
	ws.WriteFile("notes.txt", "untracked in the superproject\n")

	pv, err := p.preview(t.Context(), peerCurrent(t, p, "T-1"), false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"lib"}, pv.Salvage.DirtySubmodules); diff != "" {
		t.Errorf("dirty submodules in the preview (-want +got):\n%s", diff)
	}
	for _, peer := range pv.Peers {
		if peer.Overlaps {
			t.Errorf("the workspace's own submodule counted as an overlapping peer: %+v", peer)
		}
	}
	// Without --salvage-submodules: refused, nothing changed.
	before := peerObserve(t, p, repo, target.Path)
	_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if !errors.Is(err, ErrDirtySubmodule) {
		t.Fatalf("reclaim with a dirty submodule: %v, want ErrDirtySubmodule", err)
	}
	peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
	peerNoLease(t, p)

	// With it: the submodule's work and its local commit are kept in the
	// repository before the workspace goes.
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, SalvageSubmodules: true})
	if err != nil {
		t.Fatalf("reclaim with --salvage-submodules: %v", err)
	}
	if len(res.Submodules) != 1 || !strings.HasPrefix(res.Submodules[0], "lib refs/majlis/salvage/T-1/modules/1/lib") {
		t.Fatalf("kept submodules: %v", res.Submodules)
	}
	if _, err := os.Lstat(target.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace not removed: %v", err)
	}
	prefix := "refs/majlis/salvage/T-1/modules/1/lib"
	if got := strings.TrimSpace(repo.Git("rev-parse", prefix+"/HEAD")); got != localCommit {
		t.Errorf("kept submodule HEAD %s, want the local commit %s", got, localCommit)
	}
	salvaged := strings.Fields(repo.Git("for-each-ref", "--format=%(refname)", prefix+"/majlis/salvage/T-1/"))
	if len(salvaged) != 1 {
		t.Fatalf("submodule salvage refs kept: %v", salvaged)
	}
	if got := repo.Git("show", salvaged[0]+":README.md"); got != "# edited inside the submodule\n" {
		t.Errorf("submodule salvage holds %q", got)
	}
	if got := repo.Git("show", *res.SalvageRef+":notes.txt"); got != "untracked in the superproject\n" {
		t.Errorf("superproject salvage holds %q", got)
	}
	if out, err := repo.TryGit("fsck", "--no-progress", "--connectivity-only"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// A repository cloned by hand at a submodule's path (a .git directory, not
// a link into the worktree's modules) is not the workspace's: it stays a
// peer and refuses.
func TestReclaimForeignRepoAtSubmodulePath(t *testing.T) {
	t.Parallel()
	_, p, target := submoduleWorkspace(t)
	fixtures.InitRepo(t, filepath.Join(target.Path, "lib"))
	_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	peerRefusedOverlap(t, err, PeerNestedRepo, filepath.Join(target.Path, "lib"))
}

// The success path, end to end: every kind of uncommitted state, odd
// names, the salvage ref's exact content, the records, the reservation,
// the binding allocatable again, and a request-id retry that does nothing.
func TestReclaimSuccessPath(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	repo.WriteFiles(map[string]string{"keep.txt": "kept\n", "gone.txt": "deleted in the workspace\n", "staged.txt": "old\n"})
	for i, name := range fixtures.OddNames() {
		if i%2 == 0 {
			repo.WriteFile("odd/"+name, "committed odd "+name+"\n")
		}
	}
	repo.Commit("files")
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: target.Path}

	// want is the workspace's non-ignored content: what the salvage ref's
	// tree must hold exactly.
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(repo.Git("ls-files", "-z"), "\x00"), "\x00") {
		want[line] = repo.ReadFile(line)
	}
	write := func(rel, content string) {
		ws.WriteFile(rel, content)
		want[rel] = content
	}
	write("README.md", "# modified, not staged\n")
	write("staged.txt", "modified and staged\n")
	ws.Git("add", "staged.txt")
	write("new-staged.txt", "new and staged\n")
	ws.Git("add", "new-staged.txt")
	ws.Remove("gone.txt")
	delete(want, "gone.txt")
	write("notes.txt", "untracked\n")
	write("new dir/deeper/file.txt", "untracked in a new directory\n")
	for i, name := range fixtures.OddNames() {
		if i%2 == 0 {
			write("odd/"+name, "modified odd "+name+"\n")
		} else {
			write("odd/"+name, "untracked odd "+name+"\n")
		}
	}
	ws.WriteFile("build/out.o", "ignored\n")
	ws.WriteFile("debug.log", "ignored\n")
	ws.WriteFile("odd/new\nline.log", "ignored odd\n")

	pv, err := p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Salvage.Clean || pv.IgnoredFiles == 0 || pv.Salvage.Untracked == 0 || pv.Salvage.Deleted != 1 {
		t.Errorf("preview salvage %+v ignored %d", pv.Salvage, pv.IgnoredFiles)
	}
	var steps []string
	for _, s := range pv.Steps {
		steps = append(steps, s.Name)
	}
	if diff := cmp.Diff([]string{"salvage", "move", "resalvage", "delete-trash"}, steps); diff != "" {
		t.Errorf("preview steps (-want +got):\n%s", diff)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest, RequestID: "rc-1", DeleteTrash: true})
	if err != nil {
		t.Fatal(err)
	}
	peerReclaimed(t, p, repo, target, res)
	if diff := cmp.Diff([]string{"salvage", "move", "delete-trash"}, res.StepsDone); diff != "" {
		t.Errorf("steps done (-want +got):\n%s", diff)
	}
	if res.SalvageRef == nil || *res.SalvageRef != SalvagePrefix+"T-1/1" || res.Branch != "majlis/T-1" {
		t.Fatalf("result %+v", res)
	}

	// The salvage commit sits on the workspace's HEAD and holds exactly the
	// non-ignored content.
	ref := *res.SalvageRef
	if parent := repo.RevParse(ref + "^"); parent != target.Base {
		t.Errorf("salvage commit's parent %s, want %s", parent, target.Base)
	}
	got := map[string]string{}
	for _, e := range strings.Split(strings.TrimSuffix(repo.Git("ls-tree", "-r", "-z", "--full-tree", ref), "\x00"), "\x00") {
		meta, path, _ := strings.Cut(e, "\t")
		oid := meta[strings.LastIndexByte(meta, ' ')+1:]
		got[path] = repo.Git("cat-file", "blob", oid)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("salvage tree (-want +got):\n%s", diff)
	}

	// The binding can be allocated again (on a new branch: the old one is
	// kept), and the same request id returns the recorded result without
	// touching the new workspace.
	again := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Branch: "majlis/T-1-again"})
	if again.Path != target.Path {
		t.Errorf("reallocated at %s, want %s", again.Path, target.Path)
	}
	peerDirty(t, again.Path)
	before := peerObserve(t, p, repo, again.Path)
	retry, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, RequestID: "rc-1"})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if diff := cmp.Diff(res, retry); diff != "" {
		t.Errorf("retry result (-first +retry):\n%s", diff)
	}
	peerUnchanged(t, before, peerObserve(t, p, repo, again.Path))
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "OTHER", Yes: true, RequestID: "rc-1"}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("request id reused for another binding: %v, want ErrRequestConflict", err)
	}
}

// BenchmarkPeerCheck times the retained-peer check of one target (what
// reclaim runs before every destructive step) in the shared repository of
// 1,000 workspaces (scale_bench_test.go); each is a claim and a worktree
// entry, so about twice as many peers are judged. Goal: under 20 ms. The
// full/ run is the check from every claim record (what a preview runs
// when the claims index cannot be used); the parts/ runs time the check's
// inputs on their own, to show where the time goes.
func BenchmarkPeerCheck(b *testing.B) {
	ctx := context.Background()
	s := scaleRepository(b)
	p, target := s.p, s.target
	size := scaleWorkspaces()
	b.Run(fmt.Sprintf("workspaces=%d", size), func(b *testing.B) {
		var peers []Peer
		var err error
		for b.Loop() {
			if peers, err = p.retainedPeers(ctx, target); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(peers)), "peers")
		for _, pr := range peers {
			if pr.Overlaps {
				b.Fatalf("peer %+v overlaps", pr)
			}
		}
	})
	b.Run(fmt.Sprintf("full/workspaces=%d", size), func(b *testing.B) {
		for b.Loop() {
			if _, err := p.retainedPeersFromRecords(ctx, target); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("parts/journal/workspaces=%d", size), func(b *testing.B) {
		for b.Loop() {
			if _, err := p.records.Journal(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("parts/claims/workspaces=%d", size), func(b *testing.B) {
		for b.Loop() {
			if _, err := p.records.All(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("parts/worktrees/workspaces=%d", size), func(b *testing.B) {
		for b.Loop() {
			if _, err := gitops.WorktreePaths(ctx, p.reg.CommonDir); err != nil {
				b.Fatal(err)
			}
		}
	})
	paths, err := gitops.WorktreePaths(ctx, p.reg.CommonDir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("parts/resolve/paths=%d", 2*len(paths)), func(b *testing.B) {
		tr, err := pathid.Resolve(target.Claim.Path)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for range 2 { // once for the claim, once for the worktree entry
				for _, w := range paths {
					pr, err := pathid.Resolve(w)
					if err != nil {
						b.Fatal(err)
					}
					tr.Compare(pr)
				}
			}
		}
	})
}

// benchWorkspace makes a real workspace as Allocate does (claim, git
// worktree add, created event) but publishes the claim without Allocate's
// scans of every other claim and worktree, which would make the setup
// quadratic: the benchmark measures the peer check, not allocation.
func benchWorkspace(b *testing.B, p *Provider, binding string) {
	path := filepath.Join(p.reg.WorkspaceRoot, binding)
	physical, err := pathid.Physical(path)
	if err != nil {
		b.Fatal(err)
	}
	self, err := procid.Of(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	claim := Claim{Format: formatClaim, Binding: binding, Seq: 1, RequestID: autoRequestPrefix + binding, Path: path,
		PhysicalPath: physical, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: benchHead(b, p),
		BaseRef: "HEAD", Branch: "majlis/" + binding, Intent: []string{}, Allocator: self, CreatedAt: time.Now().UTC()}
	data, digest, err := seal("claim", &claim)
	if err != nil {
		b.Fatal(err)
	}
	dir := p.records.Dir(binding)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := p.records.appendJournal(journalEntry{Kind: journalClaim, Binding: binding, Seq: 1, Digest: digest, Path: path}, true); err != nil {
		b.Fatal(err)
	}
	if err := durable.Publish(dir, claimName(1, "claim"), data); err != nil {
		b.Fatal(err)
	}
	if _, err := p.createWorktree(context.Background(), &claimRecord{Claim: claim, Digest: digest, Events: map[string]*Event{}}, nil); err != nil {
		b.Fatal(err)
	}
}

func benchHead(b *testing.B, p *Provider) string {
	recs, err := p.records.Binding("target")
	if err != nil || len(recs) == 0 {
		b.Fatalf("target claim: %v", err)
	}
	return recs[0].Claim.Base
}
