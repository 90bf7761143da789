package provider

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fillAll sets every field of the struct v points to, recursively, to a
// value that is not its zero value.
func fillAll(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("value-%d", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) + 1000)
	case reflect.Uint64:
		v.SetUint(uint64(*n) + 2000)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("no filler for %s", v.Type())
		}
		v.Set(reflect.ValueOf([]string{fmt.Sprintf("a-%d", *n), fmt.Sprintf("b-%d", *n)}))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *n, time.FixedZone("", 3600))))
			return
		}
		for i := range v.NumField() {
			fillAll(t, v.Field(i), n)
		}
	default:
		t.Fatalf("no filler for %s", v.Type())
	}
}

// The index's codec carries every field of claims and events: one added
// to Claim, reservation.Owner or Event and not to the codec fails here.
func TestClaimsIndexCodecComplete(t *testing.T) {
	t.Parallel()
	var c Claim
	var e Event
	n := 0
	fillAll(t, reflect.ValueOf(&c).Elem(), &n)
	fillAll(t, reflect.ValueOf(&e).Elem(), &n)
	var w ixWriter
	w.claim(&c)
	w.event(&e)
	r := ixReader{b: w.b}
	gotC, gotE := r.claim(), r.event()
	if r.err != nil || len(r.b) != 0 {
		t.Fatalf("decode: %v, %d bytes left", r.err, len(r.b))
	}
	if diff := cmp.Diff(&c, gotC); diff != "" {
		t.Errorf("claim round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&e, gotE); diff != "" {
		t.Errorf("event round trip (-want +got):\n%s", diff)
	}
	// Nil and empty intents stay apart (a claim without one is invalid).
	for _, intent := range [][]string{nil, {}} {
		var w ixWriter
		w.claim(&Claim{Intent: intent})
		r := ixReader{b: w.b}
		if got := r.claim().Intent; (got == nil) != (intent == nil) || r.err != nil {
			t.Errorf("intent %#v comes back as %#v (%v)", intent, got, r.err)
		}
	}
}

// indexedRepo is a repository with an outer workspace and, nested inside
// it, an inner one that is its retained peer, and the index written.
func indexedRepo(t *testing.T) (*Provider, *Workspace) {
	t.Helper()
	_, p := newProvider(t)
	outer := mustAllocate(t, p, AllocateOptions{Binding: "outer"})
	mustAllocate(t, p, AllocateOptions{Binding: "inner", Path: filepath.Join(outer.Path, "inner"), AllowNested: true})
	mustAllocate(t, p, AllocateOptions{Binding: "other"})
	if _, err := p.Release(t.Context(), "other", ""); err != nil {
		t.Fatal(err)
	}
	settleIndex(t, p)
	return p, outer
}

// settleIndex reads the inventory until the index holds every binding
// (one changed in the file system's current clock tick is left out
// until a later read).
func settleIndex(t *testing.T, p *Provider) {
	t.Helper()
	p.records.eagerIndex = true
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := p.readInventory(); err != nil {
			t.Fatal(err)
		}
		bindings, err := p.records.Bindings()
		if err != nil {
			t.Fatal(err)
		}
		if idx := p.records.Index(); idx != nil && len(idx) == len(bindings) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the claims index never came to hold every binding")
		}
	}
}

// sameAsRecords fails unless reading through the index gives what the
// records give.
func sameAsRecords(t *testing.T, p *Provider) {
	t.Helper()
	_, viaIndex, errs, err := p.records.Each()
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	_, fromFiles, errs, err := p.records.EachFromRecords()
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if diff := cmp.Diff(fromFiles, viaIndex, cmp.AllowUnexported(claimRecord{})); diff != "" {
		t.Errorf("through the index (-records +index):\n%s", diff)
	}
}

// The index returns exactly what the records hold, and follows every
// change to them: a new event, a new binding, a record rewritten in place.
func TestClaimsIndexFollowsRecords(t *testing.T) {
	t.Parallel()
	p, _ := indexedRepo(t)
	sameAsRecords(t, p)
	if _, err := p.Release(t.Context(), "inner", ""); err != nil {
		t.Fatal(err)
	}
	sameAsRecords(t, p)
	mustAllocate(t, p, AllocateOptions{Binding: "late"})
	sameAsRecords(t, p)
	// A record damaged in place: the inventory reports it damaged, as it
	// would without an index.
	settleIndex(t, p)
	path := filepath.Join(p.records.Dir("other"), claimName(1, EventReleased))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"released"`), []byte(`"relaxed!"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := p.readInventory()
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.damaged) != 1 || inv.damaged[0].Binding != "other" {
		t.Errorf("damaged = %+v, want binding other", inv.damaged)
	}
}

// indexDamage is every way the index can be wrong: each must leave the
// reclaim of the outer workspace refused for its overlapping inner one.
var indexDamage = map[string]func(t *testing.T, p *Provider, saved []byte){
	"removed": func(t *testing.T, p *Provider, _ []byte) { os.Remove(p.records.indexPath()) },
	"truncated": func(t *testing.T, p *Provider, saved []byte) {
		writeIndex(t, p, saved[:len(saved)/2])
	},
	"corrupted": func(t *testing.T, p *Provider, saved []byte) {
		bad := bytes.Clone(saved)
		bad[len(bad)/2] ^= 0x55
		writeIndex(t, p, bad)
	},
	"garbage": func(t *testing.T, p *Provider, _ []byte) { writeIndex(t, p, []byte(claimsIndexMagic+"\xff\xff")) },
	// The index lies with a valid checksum: the inner workspace is
	// elsewhere, then missing altogether. Its files' identities match,
	// so the preview believes it; the checks before every destructive
	// step do not read the index.
	"forged path": func(t *testing.T, p *Provider, saved []byte) {
		writeIndex(t, p, forgeIndex(t, saved, func(bs []*indexBinding) []*indexBinding {
			for _, b := range bs {
				for _, f := range b.Files {
					if f.Claim != nil && f.Claim.Binding == "inner" {
						f.Claim.Path, f.Claim.PhysicalPath = "/elsewhere/inner", "/elsewhere/inner"
					}
				}
			}
			return bs
		}))
	},
	"forged missing claim": func(t *testing.T, p *Provider, saved []byte) {
		writeIndex(t, p, forgeIndex(t, saved, func(bs []*indexBinding) []*indexBinding {
			return slices.DeleteFunc(bs, func(b *indexBinding) bool { return b.Binding == "inner" })
		}))
	},
	"forged reclaimed": func(t *testing.T, p *Provider, saved []byte) {
		writeIndex(t, p, forgeIndex(t, saved, func(bs []*indexBinding) []*indexBinding {
			for _, b := range bs {
				if b.Binding == "inner" {
					c := b.Files[0].Claim
					b.Files = append(b.Files, indexFile{Name: claimName(c.Seq, EventReclaimed), Key: b.Files[0].Key,
						Event: &Event{Format: formatEvent, Kind: EventReclaimed, Binding: c.Binding, Seq: c.Seq,
							ClaimDigest: b.Files[0].Digest, At: time.Now()}})
				}
			}
			return bs
		}))
	},
	"stale": func(t *testing.T, p *Provider, _ []byte) {
		// Written before the inner workspace existed: the inner binding
		// is not in it, and outer's folder has not changed since.
	},
}

func writeIndex(t *testing.T, p *Provider, data []byte) {
	t.Helper()
	if err := os.WriteFile(p.records.indexPath(), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// forgeIndex decodes an index, changes it, and encodes it again with a
// valid checksum.
func forgeIndex(t *testing.T, saved []byte, change func([]*indexBinding) []*indexBinding) []byte {
	t.Helper()
	bs, err := decodeClaimsIndex(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		b.raw = nil // encode the changes, not the bytes as they were
	}
	out := encodeClaimsIndex(change(bs))
	if bytes.Equal(out, saved) {
		t.Fatal("the forgery changed nothing")
	}
	return out
}

// Whatever is wrong with the index, a reclaim never proceeds past an
// overlapping retained peer, and nothing of either workspace changes.
func TestClaimsIndexNeverHidesAPeer(t *testing.T) {
	t.Parallel()
	for name, damage := range indexDamage {
		t.Run(name, func(t *testing.T) {
			var p *Provider
			var outer *Workspace
			var saved []byte
			if name == "stale" {
				_, p = newProvider(t)
				outer = mustAllocate(t, p, AllocateOptions{Binding: "outer"})
				settleIndex(t, p)
				var err error
				if saved, err = os.ReadFile(p.records.indexPath()); err != nil {
					t.Fatal(err)
				}
				mustAllocate(t, p, AllocateOptions{Binding: "inner", Path: filepath.Join(outer.Path, "inner"), AllowNested: true})
				writeIndex(t, p, saved) // the index as it was before
			} else {
				p, outer = indexedRepo(t)
				var err error
				if saved, err = os.ReadFile(p.records.indexPath()); err != nil {
					t.Fatal(err)
				}
			}
			damage(t, p, saved)
			inner := filepath.Join(outer.Path, "inner")
			marker := filepath.Join(inner, "work.txt")
			if err := os.WriteFile(marker, []byte("uncommitted\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := peerCurrent(t, p, "outer")
			// The check before every destructive step names the peer.
			peers, err := p.retainedPeers(t.Context(), rec)
			if err != nil {
				t.Fatal(err)
			}
			if pr := peerFind(peers, PeerWorkspace, inner); pr == nil || !pr.Overlaps {
				t.Errorf("retainedPeers: inner workspace not named as overlapping: %+v", peers)
			}
			// A reclaim that skips the preview is refused.
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "outer", Yes: true})
			peerRefused(t, err, ErrPeerOverlap)
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the inner workspace's file: %v", err)
			}
			if _, err := os.Stat(outer.Path); err != nil {
				t.Errorf("the outer workspace: %v", err)
			}
		})
	}
}

func FuzzDecodeClaimsIndex(f *testing.F) {
	c := &Claim{Format: formatClaim, Binding: "T-1", Seq: 1, RequestID: "r", Path: "/w/T-1", PhysicalPath: "/w/T-1",
		CommonDir: "/r/.git", RepositoryID: "id", Base: "b", Branch: "majlis/T-1", Intent: []string{}, CreatedAt: time.Unix(1, 0).UTC()}
	d := "sha256:00"
	b := &indexBinding{Binding: "T-1", Dir: statKey{1, 2, 3, 4, 5}, Files: []indexFile{
		{Name: claimName(1, "claim"), Key: statKey{1, 3, 4, 5, 6}, Digest: d, Claim: c},
		{Name: claimName(1, EventCreated), Key: statKey{1, 4, 4, 5, 6},
			Event: &Event{Format: formatEvent, Kind: EventCreated, Binding: "T-1", Seq: 1, ClaimDigest: d, At: time.Unix(2, 0).UTC(), Ino: 9}},
	}}
	f.Add(encodeClaimsIndex([]*indexBinding{b}))
	f.Add(encodeClaimsIndex(nil))
	f.Add([]byte(claimsIndexMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := decodeClaimsIndex(data)
		if err != nil {
			if !errors.Is(err, errIndexUnusable) {
				t.Fatalf("error %v is not errIndexUnusable", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes: nothing is dropped
		// or read differently.
		if again := encodeClaimsIndex(bs); !bytes.Equal(again, data) {
			t.Fatalf("decoded %q, re-encodes as %q", data, again)
		}
	})
}

// A checksum is not all: an index whose checksum is right but whose
// content is not a valid index is refused too.
func TestClaimsIndexDecoderRefuses(t *testing.T) {
	t.Parallel()
	withCRC := func(body string) []byte {
		b := []byte(claimsIndexMagic + body)
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, indexCRC))
	}
	for name, data := range map[string][]byte{
		"empty":        nil,
		"magic only":   []byte(claimsIndexMagic),
		"other format": []byte("majlis-claims-index-9\n\x00\x00\x00\x00\x00"),
		"huge count":   withCRC("\xff\xff\xff\xff\x0f"),
		"trailing":     withCRC("\x00\x00"),
		"bad binding":  withCRC("\x01\x02..\x00\x00\x00\x00\x00\x00"),
	} {
		if _, err := decodeClaimsIndex(data); !errors.Is(err, errIndexUnusable) {
			t.Errorf("%s: %v, want errIndexUnusable", name, err)
		}
	}
}

// A few changed bindings are read from their records without a new index
// (writing one costs about thirty bindings' reads); past the slack the
// next reader writes one. Either way a reader gets what the records hold.
func TestClaimsIndexSlack(t *testing.T) {
	t.Parallel()
	p, _ := indexedRepo(t)
	settleIndex(t, p)
	p.records.eagerIndex = false
	stat := func() os.FileInfo {
		fi, err := os.Lstat(p.records.indexPath())
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := stat()
	n := indexSlack(0)
	for i := range n {
		mustAllocate(t, p, AllocateOptions{Binding: fmt.Sprintf("S-%d", i)})
	}
	if _, err := p.readInventory(); err != nil {
		t.Fatal(err)
	}
	if after := stat(); !os.SameFile(before, after) {
		t.Fatalf("%d changed bindings (the slack is %d) made a reader write a new index", n, indexSlack(n))
	}
	// A reader that began a new index and did not write it leaves no
	// temporary file behind (issue 27: one per `workspace list`).
	for range 3 {
		if _, err := p.List(t.Context(), ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	noTemporaryIndex(t, p)
	mustAllocate(t, p, AllocateOptions{Binding: "one-more"})
	if _, err := p.readInventory(); err != nil {
		t.Fatal(err)
	}
	if after := stat(); os.SameFile(before, after) {
		t.Fatalf("%d changed bindings did not make a reader write a new index", n+1)
	}
	noTemporaryIndex(t, p)
	sameAsRecords(t, p)
}

func noTemporaryIndex(t *testing.T, p *Provider) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(p.stateDir, ".claims.index-*.tmp")); len(left) > 0 {
		t.Fatalf("temporary indexes left in the state folder: %v", left)
	}
}
