package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
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
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, "claim")), func(b []byte) []byte { return b[:len(b)/2] })
	}},
	{"empty claim", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, "claim")), func([]byte) []byte { return nil })
	}},
	{"garbage claim", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, "claim")), func([]byte) []byte { return []byte("\x00\xffnot json") })
	}},
	{"claim with a wrong digest", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, "claim")), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"base_ref":"HEAD"`, `"base_ref":"HEAX"`, 1))
		})
	}},
	{"claim of an unknown format", SourceJournal, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, "claim")), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), formatClaim, "majlis.claim/9", 1))
		})
	}},
	{"editor backup in the claims folder", SourceClaim, func(t *testing.T, p *Provider) string {
		f := filepath.Join(p.records.Dir("A"), "000001.claim~")
		if err := os.WriteFile(f, []byte("editor backup"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}},
	{"truncated created event", SourceClaim, func(t *testing.T, p *Provider) string {
		return rewrite(t, filepath.Join(p.records.Dir("A"), claimName(1, EventCreated)), func(b []byte) []byte { return b[:10] })
	}},
	{"FIFO in place of the created event", SourceClaim, func(t *testing.T, p *Provider) string {
		// Reading a FIFO waits for a writer: the record must be refused
		// as not a regular file, not waited on.
		f := filepath.Join(p.records.Dir("A"), claimName(1, EventCreated))
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(f, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}},
	{"claim deleted, its events left", SourceJournal, func(t *testing.T, p *Provider) string {
		f := filepath.Join(p.records.Dir("A"), claimName(1, "claim"))
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(p.records.Dir("A"), claimName(1, EventCreated))
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
	t.Parallel()
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
			if len(da.Damage.Paths) == 0 || da.Damage.Paths[0] != (KnownPath{Path: a.Path, Source: tc.source}) {
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
				// The binding is the fact from which the command line
				// points at 'majlis doctor'.
				var pe *Error
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), file) || !errors.As(err, &pe) || pe.Binding != "A" {
					t.Errorf("%s A: %v, want malformed_record naming %s and the binding", op, err, file)
				}
			}
			peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, b.Path))
			peerNoLease(t, p)

			// Others proceed, with A as a retained peer at its place (the
			// full check from the records and the fast one from the
			// journal agree: peerList compares them).
			if pr := peerFind(peerList(t, p, "B"), PeerWorkspace, a.Path); pr == nil || pr.Binding != "A" {
				t.Errorf("B's peers lack workspace A at %s", a.Path)
			}
			mustAllocate(t, p, AllocateOptions{Binding: "C"})
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
		})
	}
}

// A damaged claim whose place neither the journal nor git's admin entries
// know blocks allocation and reclaim (fail closed), naming the file; git's
// admin entry with majlis's lock reason alone is enough to locate it.
func TestDamageUnlocated(t *testing.T) {
	t.Parallel()
	for _, locked := range []bool{false, true} {
		name := "unlocated"
		if locked {
			name = "located by git's admin entry"
		}
		t.Run(name, func(t *testing.T) {
			repo, p := peerProvider(t)
			a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
			b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
			if err := os.Remove(p.records.JournalPath()); err != nil {
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
				if len(da.Damage.Paths) != 1 || da.Damage.Paths[0] != (KnownPath{Path: a.PhysicalPath, Source: SourceAdminEntry}) {
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
	t.Parallel()
	repo, p := peerProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	repo.Git("worktree", "unlock", a.Path)
	if err := os.RemoveAll(a.Path); err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "prune")
	file := damageModes[0].damage(t, p)
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "C", Path: a.Path})
	if !errors.Is(err, ErrNested) || !strings.Contains(err.Error(), "workspace A") || !strings.Contains(err.Error(), file) {
		t.Fatalf("allocate at A's place: %v, want it refused as overlapping A", err)
	}
	if _, err := os.Lstat(a.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", a.Path, err)
	}
}

// lockedFor decodes git lock reasons, which anyone can write: it must
// accept exactly the reasons majlis writes, and round-trip them.
func FuzzLockedFor(f *testing.F) {
	rec := &claimRecord{Claim: Claim{Binding: "T-14"}, Digest: "sha256:0123456789abcdef"}
	f.Add(lockReason(rec))
	f.Add("majlis workspace T-14 (reclaim interrupted)")
	f.Add("majlis workspace ../x (claim 0123456789ab)")
	f.Add("majlis workspace T-14 (claim 0123456789AB)")
	f.Add("on removable media")
	f.Add("")
	f.Fuzz(func(t *testing.T, reason string) {
		b, short, ok := lockedFor(reason)
		if !ok {
			return
		}
		if ValidBinding(b) != nil {
			t.Fatalf("%q: accepted invalid binding %q", reason, b)
		}
		if short == "" {
			if reason != "majlis workspace "+b+" (reclaim interrupted)" {
				t.Fatalf("%q accepted as the reclaim-interrupted reason of %s", reason, b)
			}
			return
		}
		back := lockReason(&claimRecord{Claim: Claim{Binding: b}, Digest: "sha256:" + short})
		if back != reason {
			t.Fatalf("%q decoded to %s %s, which majlis writes as %q", reason, b, short, back)
		}
	})
}

// Whatever bytes a claim file holds, list neither fails nor loses the
// workspace: it is whole, or damaged with the file named and its place
// known from the journal, and repair would move exactly that claim aside.
func FuzzDamagedClaim(f *testing.F) {
	repo := fixtures.NewRepo(f)
	if _, err := Init(f.Context(), repo.Dir, InitOptions{}); err != nil {
		f.Fatal(err)
	}
	p, err := Open(f.Context(), repo.Dir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	a, err := p.Allocate(f.Context(), AllocateOptions{Binding: "A"})
	if err != nil {
		f.Fatal(err)
	}
	file := filepath.Join(p.records.Dir("A"), claimName(1, "claim"))
	good, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte(`{"claim":{},"sha256":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		list, err := p.List(t.Context(), ListOptions{})
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %v, %v", list, err)
		}
		w := list[0]
		switch w.State {
		case StateActive:
			if w.ClaimDigest != a.ClaimDigest {
				t.Fatalf("a different claim is listed as A: %+v", w)
			}
		case StateDamaged:
			// A's real place is always among the places kept as peers.
			known := false
			for _, kp := range w.Damage.Paths {
				known = known || kp.Path == a.Path || kp.Path == a.PhysicalPath
			}
			if w.Damage.File == "" || !w.Damage.Located || !known {
				t.Fatalf("damaged A: %+v, want the file named and %s among its places", w.Damage, a.Path)
			}
			if files := damagedFiles(p.records.Dir("A")); !slices.Contains(files, w.Damage.File) {
				t.Fatalf("repair would move %v, not the damaged %s", files, w.Damage.File)
			}
		default:
			t.Fatalf("A is %s", w.State)
		}
	})
}

// A damaged request record refuses only a retry with that request id.
func TestDamagedRequestStaysLocal(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A", RequestID: "req-a"})
	dir, name := p.records.RequestPath("req-a")
	file := rewrite(t, filepath.Join(dir, name), func(b []byte) []byte { return b[:len(b)-3] })
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "A", RequestID: "req-a"})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), file) {
		t.Errorf("retry of req-a: %v, want malformed_record naming %s", err, file)
	}
	mustAllocate(t, p, AllocateOptions{Binding: "B", RequestID: "req-b"})
	if ws := listed(t, p); ws["A"] == nil || ws["A"].State != StateActive {
		t.Errorf("list: %+v", ws)
	}
	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := findingCodes(rep)[FindingRequestDamaged]; !ok || f.Path != file {
		t.Errorf("doctor: %+v", rep.Findings)
	}
}

// A damaged workspace inside the reclaim target still overlaps it: the
// reclaim refuses with peer_overlap naming it, and changes nothing.
// With gone set, A's worktree is removed and pruned first, so git lists it
// no more: only A's records (damaged) know its place.
func TestDamagedPeerInsideTargetRefuses(t *testing.T) {
	t.Parallel()
	for _, mode := range damageModes {
		for _, gone := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gone=%v", mode.name, gone), func(t *testing.T) {
				repo, p := peerProvider(t)
				b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
				a := mustAllocate(t, p, AllocateOptions{Binding: "A", Path: filepath.Join(b.Path, "inner"), AllowNested: true})
				peerDirty(t, b.Path)
				if gone {
					repo.Git("worktree", "unlock", a.Path)
					if err := os.RemoveAll(a.Path); err != nil {
						t.Fatal(err)
					}
					repo.Git("worktree", "prune")
				} else {
					peerDirty(t, a.Path)
				}
				mode.damage(t, p)
				before := peerObserve(t, p, repo, a.Path, b.Path)
				_, err := p.PreviewReclaim(t.Context(), "B")
				peerRefusedOverlap(t, err, PeerWorkspace, a.Path, a.PhysicalPath)
				_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "B", Yes: true})
				if !errors.Is(err, ErrPeerOverlap) {
					t.Errorf("reclaim B: %v, want peer_overlap", err)
				}
				peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, b.Path))
				peerNoLease(t, p)
			})
		}
	}
}
