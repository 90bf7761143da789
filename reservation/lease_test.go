package reservation

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/internal/procid"
)

func req(res string) Request {
	return Request{Resource: res, Purpose: "test", TTL: time.Minute,
		AuthorityDigest: "sha256:abc", Metadata: map[string]string{"binding": "T-1", "request_id": "r1"}}
}

func mustAcquire(t *testing.T, d *Dir, r Request) *Lease {
	t.Helper()
	l, err := d.Acquire(t.Context(), r)
	if err != nil {
		t.Fatalf("acquire %s: %v", r.Resource, err)
	}
	return l
}

func TestAcquireInspectRelease(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	rec := l.Record()
	got, err := d.Inspect("res")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&rec, got); diff != "" {
		t.Errorf("inspect (-acquired +on disk):\n%s", diff)
	}
	self, _ := d.owner()
	if rec.Owner != self || rec.Generation != 1 || rec.Metadata["binding"] != "T-1" || rec.AuthorityDigest != "sha256:abc" {
		t.Errorf("record does not describe this grant: %+v", rec)
	}
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lease file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := l.Check(); err != nil {
		t.Errorf("check while held: %v", err)
	}
	names, err := d.List("")
	if err != nil || !cmp.Equal(names, []string{"res"}) {
		t.Errorf("List = %v, %v", names, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect("res"); !errors.Is(err, ErrNotFound) {
		t.Errorf("inspect after release: %v, want ErrNotFound", err)
	}
	assertNoTemps(t, d)
}

func TestHeldCarriesHolderFacts(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	_, err := d.Acquire(t.Context(), req("res"))
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	e, ok := asError(err)
	if !ok || e.Holder == nil || e.Holder.Token != l.Record().Token {
		t.Fatalf("held error lacks the holder's record: %#v", err)
	}
	for _, want := range []string{"res.lease", "pid ", "generation 1", "wait for the holder"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	assertNoTemps(t, d)
}

func TestGenerationsGrowAcrossRelease(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	for want := uint64(1); want <= 5; want++ {
		l := mustAcquire(t, d, req("res"))
		if g := l.Record().Generation; g != want {
			t.Fatalf("grant %d has generation %d", want, g)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// Other resources count on their own.
	if g := mustAcquire(t, d, req("other")).Record().Generation; g != 1 {
		t.Errorf("other resource starts at generation %d", g)
	}
}

func TestReleaseRefusals(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l1 := mustAcquire(t, d, req("res"))

	// A non-owner that knows the record but holds another file.
	other, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	forged := &Lease{dir: d, rec: l1.Record(), f: other, pid: os.Getpid()}
	if err := forged.Release(); !errors.Is(err, ErrNotOwner) {
		t.Errorf("release by a non-owner: %v, want ErrNotOwner", err)
	}
	if err := l1.Check(); err != nil {
		t.Fatalf("the refused release disturbed the owner: %v", err)
	}

	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(); !errors.Is(err, ErrNotOwner) {
		t.Errorf("double release: %v, want ErrNotOwner", err)
	}
	if err := l1.Renew(time.Minute); !errors.Is(err, ErrNotOwner) {
		t.Errorf("renew after release: %v, want ErrNotOwner", err)
	}

	// The next owner's lease survives the stale handle's attempts.
	l2 := mustAcquire(t, d, req("res"))
	if err := l1.Release(); !errors.Is(err, ErrNotOwner) {
		t.Errorf("release of a lease now held by another grant: %v", err)
	}
	if err := l2.Check(); err != nil {
		t.Errorf("new owner disturbed: %v", err)
	}
}

func TestRenewAfterLeaseLost(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l1 := mustAcquire(t, d, req("res"))
	// Someone removed the lease by hand and another grant took the name.
	if err := os.Remove(l1.Path()); err != nil {
		t.Fatal(err)
	}
	l2 := mustAcquire(t, d, req("res"))
	for name, f := range map[string]func() error{
		"renew": func() error { return l1.Renew(time.Hour) }, "release": l1.Release, "check": l1.Check,
	} {
		err := f()
		if !errors.Is(err, ErrNotOwner) {
			t.Errorf("%s of a lost lease: %v, want ErrNotOwner", name, err)
		}
	}
	if err := l2.Check(); err != nil {
		t.Errorf("the current owner was disturbed: %v", err)
	}
	if got, _ := d.Inspect("res"); got.Token != l2.Record().Token {
		t.Errorf("lease file no longer holds the current grant")
	}
}

func TestRenew(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	before := l.Record()
	fi0, _ := os.Stat(l.Path())
	if err := l.Renew(time.Hour); err != nil {
		t.Fatal(err)
	}
	after := l.Record()
	if after.Token != before.Token || after.Generation != before.Generation || after.AcquiredAt != before.AcquiredAt {
		t.Errorf("renew changed the grant's identity: %+v -> %+v", before, after)
	}
	if !after.ExpiresAt.After(before.ExpiresAt) {
		t.Errorf("renew did not extend: %v -> %v", before.ExpiresAt, after.ExpiresAt)
	}
	disk, err := d.Inspect("res")
	if err != nil || !disk.ExpiresAt.Equal(after.ExpiresAt) {
		t.Errorf("renewal not on disk: %v %v", disk, err)
	}
	fi1, _ := os.Stat(l.Path())
	if os.SameFile(fi0, fi1) {
		t.Errorf("renew rewrote the lease in place; it must publish a new file")
	}
	if a, err := d.Assess("res"); err != nil || a.Liveness != procid.Alive {
		t.Errorf("witness lost across renew: %+v %v", a, err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("check after renew: %v", err)
	}
	assertNoTemps(t, d)
}

func TestAcquireWaitsForRelease(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	holder := mustAcquire(t, d, req("res"))

	waiterDir, err := Open(d.path)
	if err != nil {
		t.Fatal(err)
	}
	defer waiterDir.Close()
	var attempts atomic.Int32
	waiterDir.hook = func(step string) {
		if step == "acquire/held" {
			attempts.Add(1)
		}
	}
	r := req("res")
	r.Wait = time.Minute
	done := make(chan error, 1)
	var got *Lease
	go func() {
		var err error
		got, err = waiterDir.Acquire(t.Context(), r)
		done <- err
	}()
	waitFor(t, "the waiter to have been refused", func() bool { return attempts.Load() >= 1 })
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	if got.Record().Generation != holder.Record().Generation+1 {
		t.Errorf("generation %d after %d", got.Record().Generation, holder.Record().Generation)
	}
}

func TestAcquireWaitGivesUp(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	holder := mustAcquire(t, d, req("res"))
	r := req("res")
	r.Wait = 30 * time.Millisecond
	_, err := d.Acquire(t.Context(), r)
	e, ok := asError(err)
	if !errors.Is(err, ErrHeld) || !ok || e.Holder == nil || e.Holder.Token != holder.Record().Token {
		t.Fatalf("acquire after waiting: %v, want ErrHeld naming the holder", err)
	}
	assertNoTemps(t, d)
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	for _, r := range []Request{
		{Resource: "", Purpose: "p", TTL: time.Minute},
		{Resource: ".hidden", Purpose: "p", TTL: time.Minute},
		{Resource: "a/b", Purpose: "p", TTL: time.Minute},
		{Resource: "../up", Purpose: "p", TTL: time.Minute},
		{Resource: strings.Repeat("x", 201), Purpose: "p", TTL: time.Minute},
		{Resource: "ok", Purpose: "", TTL: time.Minute},
		{Resource: "ok", Purpose: "p", TTL: 0},
		{Resource: "ok", Purpose: "p", TTL: -time.Second},
		{Resource: "ok", Purpose: "p", TTL: time.Minute, Metadata: map[string]string{"": "x"}},
	} {
		if _, err := d.Acquire(t.Context(), r); !errors.Is(err, ErrInvalid) {
			t.Errorf("Acquire(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	entries, _ := os.ReadDir(d.path)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "ok") {
			t.Errorf("invalid request left %s", e.Name())
		}
	}
	for _, res := range []string{"port:3000", "reclaim.T-14", "a@b+c=d", "X_1"} {
		l := mustAcquire(t, d, Request{Resource: res, Purpose: "p", TTL: time.Minute})
		l.Release()
	}
}

func TestUntrustedFilesystems(t *testing.T) {
	t.Parallel()
	for magic, name := range untrustedFS {
		if err := fsTypeError(magic); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s (%#x) accepted: %v", name, magic, err)
		}
	}
	for _, magic := range []int64{0xef53 /* ext4 */, 0x58465342 /* xfs */, 0x9123683e /* btrfs */, 0x01021994 /* tmpfs */} {
		if err := fsTypeError(magic); err != nil {
			t.Errorf("local filesystem %#x refused: %v", magic, err)
		}
	}
	// The test's own temp dir is local.
	if err := checkLocalFS(t.TempDir()); err != nil {
		t.Errorf("temp dir refused: %v", err)
	}
}

func TestSweepRemovesOnlyAbandonedTemps(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	abandoned := filepath.Join(d.path, ".res.0123456789abcdef.tmp")
	if err := os.WriteFile(abandoned, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	// One that a live writer holds locked.
	r := sampleRecord()
	r.Resource = "live"
	f, live, err := d.writeTemp("acquire", r)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if n, _ := d.Sweep(); n != 0 {
		t.Errorf("a fresh temp file was swept (%d)", n)
	}
	d.now = func() time.Time { return time.Now().Add(time.Hour) }
	if n, _ := d.Sweep(); n != 1 {
		t.Errorf("swept %d files, want 1", n)
	}
	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned temp still there")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live writer's temp was removed: %v", err)
	}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
