package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Damage stays local (issue 13, item 10): one binding's damaged records
// refuse that binding's operations only. Every refusal leaves the world as
// it was.

// damageModes damage workspace A's records in the ways a disk, an editor or
// a crash can; each returns the damaged file.
var damageModes = []struct {
	name   string
	source string // where A's path is then known from
	damage func(t *testing.T, p *Provider) string
}{
	{"truncated claim", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.claimsDir("A"), claimName(1, "claim")), func(b []byte) []byte { return b[:len(b)/2] })
	}},
	{"empty claim", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.claimsDir("A"), claimName(1, "claim")), func([]byte) []byte { return nil })
	}},
	{"garbage claim", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.claimsDir("A"), claimName(1, "claim")), func([]byte) []byte { return []byte("\x00\xffnot json") })
	}},
	{"claim with a wrong digest", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.claimsDir("A"), claimName(1, "claim")), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"base_ref":"HEAD"`, `"base_ref":"HEAX"`, 1))
		})
	}},
	{"truncated created event", SourceClaim, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.claimsDir("A"), claimName(1, EventCreated)), func(b []byte) []byte { return b[:10] })
	}},
	{"claim deleted, its events left", SourceJournal, func(t *testing.T, p *Provider) string {
		f := filepath.Join(p.claimsDir("A"), claimName(1, "claim"))
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(p.claimsDir("A"), claimName(1, EventCreated))
	}},
}

func rewrite(t *testing.T, f string, change func([]byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, change(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func listed(t *testing.T, p *Provider) map[string]*Workspace {
	t.Helper()
	list, err := p.List(t.Context(), ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	out := map[string]*Workspace{}
	for _, w := range list {
		out[w.Binding] = w
	}
	return out
}

func TestDamageStaysLocal(t *testing.T) {
	for _, tc := range damageModes {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := peerProvider(t)
			a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
			b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
			peerDirty(t, a.Path)
			file := tc.damage(t, p)

			// list shows A as damaged, with the file, the reason and where it is.
			ws := listed(t, p)
			da := ws["A"]
			if da == nil || da.State != StateDamaged || da.Damage == nil {
				t.Fatalf("list: A is %+v, want damaged", da)
			}
			if da.Damage.File != file || da.Damage.Reason == "" || !da.Damage.Located || da.Path != a.Path {
				t.Errorf("list: damage %+v path %s, want file %s, a reason, located at %s", da.Damage, da.Path, file, a.Path)
			}
			if len(da.Damage.Paths) == 0 || da.Damage.Paths[0] != (KnownPath{a.Path, tc.source}) {
				t.Errorf("list: paths %+v, want %s from %s", da.Damage.Paths, a.Path, tc.source)
			}
			if ws["B"] == nil || ws["B"].State != StateActive {
				t.Errorf("list: B is %+v, want active", ws["B"])
			}

			// A's own operations refuse, naming the file, and change nothing.
			before := peerObserve(t, p, repo, a.Path, b.Path)
			for op, err := range map[string]error{
				"preview": func() error { _, err := p.PreviewReclaim(t.Context(), "A"); return err }(),
				"reclaim": func() error { _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "A", Yes: true}); return err }(),
				"show":    func() error { _, err := p.Show(t.Context(), "A"); return err }(),
				"release": func() error { _, err := p.Release(t.Context(), "A", ""); return err }(),
				"salvage": func() error { _, err := p.Salvage(t.Context(), "A", "", ""); return err }(),
			} {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "majlis doctor") {
					t.Errorf("%s A: %v, want malformed_record naming %s and doctor", op, err, file)
				}
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, b.Path))
			peerNoLease(t, p)

			// Others proceed, with A as a retained peer at its place.
			c := mustAllocate(t, p, AllocateOptions{Binding: "C"})
			pv, err := p.PreviewReclaim(t.Context(), "B")
			if err != nil {
				t.Fatalf("preview B: %v", err)
			}
			if pr := peerFind(pv.Peers, PeerWorkspace, a.Path); pr == nil || pr.Binding != "A" || pr.Overlaps {
				t.Errorf("preview B: peers %+v, want workspace A at %s, disjoint", pv.Peers, a.Path)
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "B", Confirm: pv.Digest})
			if err != nil {
				t.Fatalf("reclaim B: %v", err)
			}
			peerReclaimed(t, p, repo, b, res)
			if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "C", Yes: true}); err != nil {
				t.Fatalf("reclaim C: %v", err)
			}
			if _, err := os.Stat(filepath.Join(a.Path, "notes.txt")); err != nil {
				t.Errorf("A's files: %v", err)
			}
			_ = c
		})
	}
}

// A damaged claim whose place neither the journal nor git's admin entries
// know blocks allocation and reclaim (fail closed), naming the file; git's
// admin entry with majlis's lock reason alone is enough to locate it.
func TestDamageUnlocated(t *testing.T) {
	for _, locked := range []bool{false, true} {
		name := "unlocated"
		if locked {
			name = "located by git's admin entry"
		}
		t.Run(name, func(t *testing.T) {
			repo, p := peerProvider(t)
			a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
			b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
			if err := os.Remove(p.journalPath()); err != nil {
				t.Fatal(err)
			}
			if !locked {
				repo.Git("worktree", "unlock", a.Path)
			}
			file := damageModes[0].damage(t, p)

			da := listed(t, p)["A"]
			if da == nil || da.State != StateDamaged || da.Damage.Located != locked {
				t.Fatalf("list: A is %+v (damage %+v), want damaged, located %v", da, da.Damage, locked)
			}
			if locked {
				if len(da.Damage.Paths) != 1 || da.Damage.Paths[0] != (KnownPath{a.PhysicalPath, SourceAdminEntry}) {
					t.Errorf("paths %+v, want %s from git's admin entry", da.Damage.Paths, a.PhysicalPath)
				}
				mustAllocate(t, p, AllocateOptions{Binding: "C"})
				if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "B", Yes: true}); err != nil {
					t.Fatalf("reclaim B: %v", err)
				}
				return
			}
			if len(da.Damage.Unlocated) != 1 || da.Damage.Unlocated[0] != file {
				t.Errorf("unlocated %v, want %s", da.Damage.Unlocated, file)
			}
			before := peerObserve(t, p, repo, a.Path, b.Path)
			_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "C"})
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), file) {
				t.Errorf("allocate C: %v, want malformed_record naming %s", err, file)
			}
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "B", Yes: true})
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), file) {
				t.Errorf("reclaim B: %v, want malformed_record naming %s", err, file)
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, b.Path))
			peerNoLease(t, p)
			if _, err := os.Lstat(filepath.Join(repo.Dir, "..", filepath.Base(repo.Dir)+".workspaces", "C")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("C's directory: %v", err)
			}
		})
	}
}

// A damaged binding's place known only from the journal (its worktree gone
// and pruned) still keeps an allocation off it: never fewer peers.
func TestDamagedPlaceIsNotAllocated(t *testing.T) {
	repo, p := peerProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	repo.Git("worktree", "unlock", a.Path)
	if err := os.RemoveAll(a.Path); err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "prune")
	damageModes[0].damage(t, p)
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "C", Path: a.Path})
	if !errors.Is(err, ErrNested) || !strings.Contains(err.Error(), "A") {
		t.Fatalf("allocate at A's place: %v, want it refused as overlapping A", err)
	}
	if _, err := os.Lstat(a.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", a.Path, err)
	}
}
