package admission

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/procid"
	"modernc.org/sqlite"
)

// TestCommitOutcomeSurvivesCancel: a context cancelled while COMMIT runs
// must not turn a committed grant into a reported failure. The driver
// reports ctx's error for any call during which ctx ended, even one that
// committed; then the caller believes it holds nothing while a lease it
// never learns of stands (and, expired, quarantines the file).
func TestCommitOutcomeSurvivesCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := e.s.repo.db
	// One connection, so that the commit hook below is on the one the
	// admission uses.
	db.SetMaxOpenConns(1)
	defer db.SetMaxOpenConns(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	armed := false
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Raw(func(dc any) error {
		dc.(sqlite.HookRegisterer).RegisterCommitHook(func() int32 {
			if armed {
				armed = false
				// ctx ends while COMMIT runs; give the driver's watcher
				// time to see it.
				cancel()
				time.Sleep(200 * time.Millisecond)
			}
			return 0
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	armed = true
	res, err := e.s.Acquire(ctx, AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, Resources: []string{"file:src/a.go"}})
	db.SetMaxOpenConns(0)
	granted := 0
	for _, l := range e.list(false) {
		if l.Holder == "a" && l.State == StateActive {
			granted++
		}
	}
	switch {
	case err != nil && granted != 0:
		t.Fatalf("acquire reported %v, yet the ledger holds its grant", err)
	case err == nil && (granted != 1 || len(res.Leases) != 1):
		t.Fatalf("acquire reported %+v, the ledger holds %d grants", res, granted)
	}
}

// TestPanicInTransactionReleasesLock: a panic inside a transaction (here
// at the failpoint, recovered by a caller such as a server) rolls it back;
// the connection does not return to the pool holding the write lock.
func TestPanicInTransactionReleasesLock(t *testing.T) {
	e := newEnv(t)
	stepHook = func(name string) {
		if name == "admission/in-transaction" {
			panic("boom")
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		e.acquire("a", "", "file:src/a.go")
	}()
	stepHook = nil
	// Another process (another set of handles) can write.
	other := e.open()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := other.Acquire(ctx, AcquireRequest{Token: tokenOf("b"), Holder: "b", Checkout: e.main.Dir, Resources: []string{"file:src/b.go"}}); err != nil {
		t.Fatalf("after a panic in a transaction: %v", err)
	}
	if _, err := e.acquire("c", "", "file:src/c.go"); err != nil {
		t.Fatalf("the same service after a panic: %v", err)
	}
}

// TestNestedWorktreeIsNotThisCheckout: a linked worktree placed inside the
// main checkout (git worktree add .worktrees/x, or a workspace root inside
// it) holds files that have their own key in that worktree. Leasing them
// through the outer checkout gave one physical file two keys in two
// checkouts, so two holders were granted it at once.
func TestNestedWorktreeIsNotThisCheckout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nested := e.main.AddWorktree(e.main.Path("wts/feature"), "feature")
	e.mustAcquire("b", nested.Dir, "file:src/a.go")
	for _, r := range []string{
		"file:" + e.main.Path("wts/feature/src/a.go"), // absolute, into the nested worktree
		"file:wts/feature/src/a.go",
		"file:wts/feature/src/new.go", // absent, under the nested worktree
		"intent:wts/feature/src/**",
		"intent:wts/feature/**",
		"intent:wts/feature",
	} {
		_, err := e.acquire("a", "", r)
		ae := wantErr(t, err, ErrUnsafePath)
		if !strings.Contains(ae.Reason, "wts/feature") {
			t.Errorf("%s: reason %q does not name the nested worktree", r, ae.Reason)
		}
	}
	// From a working directory inside the nested worktree while naming
	// the outer checkout.
	_, err := e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir,
		Cwd: nested.Path("src"), Resources: []string{"file:a.go"}})
	if err == nil {
		t.Fatal("a path relative to a cwd in the nested worktree was leased in the outer checkout")
	}
	// The outer checkout's own files, and a subtree around the nested
	// worktree (whose files it does not name), are still fine.
	e.mustAcquire("a", "", "file:src/a.go", "intent:wts/**", "file:wts/readme")
	// A submodule's files belong to another repository.
	sub := fixtures.NewRepo(t)
	e.main.AddSubmodule("vendor/lib", sub)
	_, err = e.acquire("a", "", "file:vendor/lib/README.md")
	wantErr(t, err, ErrUnsafePath)
}

// TestCheckDoesNotFollowSymlinks: Git reports a symlink as a change of the
// link itself (it never follows links in the worktree). Check resolved
// each changed path through its symlinks, so a new link to a leased file,
// or a tracked directory replaced by a link into a leased one, passed as
// covered.
func TestCheckDoesNotFollowSymlinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.main.WriteFiles(map[string]string{"src/a.go": "a\n", "lib/x.go": "x\n"})
	e.main.Commit("files")
	e.mustAcquire("a", "", "file:src/a.go", "intent:src/**")
	e.main.Symlink("src/a.go", "evil")  // a new link to a leased file
	e.main.Remove("lib")                // lib/x.go deleted ...
	e.main.Symlink("src", "lib")        // ... and lib now a link into the intent
	e.main.WriteFile("src/a.go", "b\n") // an edit inside the leases
	res, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"evil", "lib", "lib/x.go"}
	if strings.Join(res.Gaps, ",") != strings.Join(want, ",") {
		t.Fatalf("gaps = %q, want %q", res.Gaps, want)
	}
	// A lease taken through an alias covers edits of its target, which
	// is the path Git reports.
	e.main.Remove("evil")
	e.main.Remove("lib")
	e.main.Git("checkout", "--", "lib")
	e.main.Symlink("lib/x.go", "xlink")
	e.main.Commit("link")
	e.mustAcquire("a", "", "file:xlink")
	e.main.WriteFile("lib/x.go", "changed\n")
	res, err = e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)})
	if err != nil || len(res.Gaps) != 0 {
		t.Fatalf("an edit of a file leased through its alias: %+v, %v", res, err)
	}
}

// TestReleaseSettlesDeadAdmission: an admitter killed after its repository
// transaction committed leaves pending host rows. Releasing everything of
// the holder released the repository leases but skipped the pending rows,
// so a retry with the request id (a replay, evidence only) or the next
// admission meeting them turned them into a grant after the holder had let
// go. Release settles them first, and the replay grants nothing.
func TestReleaseSettlesDeadAdmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	resources := []string{"host:port:9", "file:src/a.go"}
	crashAcquire(t, e, "admission/repo-committed", "a", "req-9", resources...)
	if _, err := e.s.Release(ctx, ReleaseRequest{Token: tokenOf("a"), Holder: "a"}); err != nil {
		t.Fatal(err)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 a released" {
		t.Fatalf("host rows after releasing everything = %v", rows)
	}
	res, err := e.s.Acquire(ctx, AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, Resources: resources, RequestID: "req-9"})
	if err != nil || !res.Replayed {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	for _, l := range e.list(false) {
		t.Errorf("after release and replay, %s holds %s (%s)", l.Holder, l.Resource, l.State)
	}
	e.mustAcquire("b", "", "host:port:9")

	// Killed before the repository transaction: the pending row is
	// removed, by id as well.
	crashAcquire(t, e, "admission/host-pending", "c", "", "host:port:10", "file:src/c.go")
	var id string
	for _, l := range e.list(false) {
		if l.Holder == "c" {
			id = l.ID
		}
	}
	rel, err := e.s.Release(ctx, ReleaseRequest{Token: tokenOf("c"), Holder: "c", IDs: []string{id}})
	if err != nil || len(rel.Leases) != 0 {
		t.Fatalf("release of an abandoned pending row: %+v, %v", rel, err)
	}
	if ls := e.list(true); len(ls) != 3 {
		t.Fatalf("leases = %+v", ls)
	}

	// Killed after the repository transaction, released by id.
	crashAcquire(t, e, "admission/repo-committed", "d", "", "host:port:11", "file:src/d.go")
	var ids []string
	for _, l := range e.list(false) {
		if l.Holder == "d" {
			ids = append(ids, l.ID)
		}
	}
	rel, err = e.s.Release(ctx, ReleaseRequest{Token: tokenOf("d"), Holder: "d", IDs: ids})
	if err != nil || len(rel.Leases) != 2 || rel.Leases[0].State != StateReleased || rel.Leases[1].State != StateReleased {
		t.Fatalf("release by id: %+v, %v", rel, err)
	}
}

// TestClockBackDoesNotLiftQuarantine: once a ledger has acted on an expiry
// (here, a denial citing the quarantine), a clock stepped back (NTP, a
// restored VM) must not make the lease active again: its holder renewed
// it, or got it back as its own active lease, and its edits were covered
// again, without a release, a resolve or a dead owner.
func TestClockBackDoesNotLiftQuarantine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	q := quarantine(t, e, 0)
	_, err := e.acquire("b", "", "file:src/a.go")
	wantErr(t, err, ErrQuarantined)
	e.clock.Advance(-2 * time.Minute)

	_, err = e.s.Renew(ctx, RenewRequest{Token: tokenOf("a"), Holder: "a", IDs: []string{q.ID}})
	wantErr(t, err, ErrQuarantined)
	_, err = e.s.Renew(ctx, RenewRequest{Token: tokenOf("a"), Holder: "a"})
	wantErr(t, err, ErrQuarantined)
	_, err = e.acquire("a", "", "file:src/a.go")
	wantErr(t, err, ErrQuarantined)
	if l := e.lease(q.ID); l.State != StateQuarantined || !l.ExpiresAt.Equal(q.ExpiresAt) {
		t.Fatalf("lease = %+v", l)
	}
	e.main.WriteFile("src/a.go", "edit\n")
	res, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)})
	if err != nil || len(res.Gaps) != 1 {
		t.Fatalf("check: %+v, %v", res, err)
	}
	// Release still lifts it; new leases run on the ledger's time.
	if _, err := e.s.Release(ctx, ReleaseRequest{Token: tokenOf("a"), Holder: "a"}); err != nil {
		t.Fatal(err)
	}
	l := e.mustAcquire("b", "", "file:src/a.go").Leases[0]
	if e.lease(l.ID).State != StateActive {
		t.Fatalf("new lease = %+v", e.lease(l.ID))
	}
}

// TestPendingAdmitterPIDReused: a pending row whose admitter died and
// whose pid now belongs to another, live process (another start time) is
// settled as abandoned, not held forever.
func TestPendingAdmitterPIDReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	crashAcquire(t, e, "admission/host-pending", "dead", "", "host:port:9", "file:src/a.go")
	sleeper := startSleeper(t)
	hl, err := e.s.hostLedger(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	var adm string
	if err := hl.db.QueryRow(`SELECT admitter_json FROM leases WHERE state = 'pending'`).Scan(&adm); err != nil {
		t.Fatal(err)
	}
	var o procid.Owner
	if err := json.Unmarshal([]byte(adm), &o); err != nil {
		t.Fatal(err)
	}
	o.PID = sleeper.Pid() // the dead admitter's pid, reused
	b, _ := json.Marshal(o)
	if _, err := hl.db.Exec(`UPDATE leases SET admitter_json = ?`, string(b)); err != nil {
		t.Fatal(err)
	}
	e.mustAcquire("b", "", "host:port:9")
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 b active" {
		t.Fatalf("host rows = %v", rows)
	}
}

// TestPendingCleanupRace: processes racing for a name whose pending row
// was left by a dead admitter settle it once; exactly one wins.
func TestPendingCleanupRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	crashAcquire(t, e, "admission/host-pending", "dead", "", "host:port:9", "file:src/a.go")
	racers := startRacers(t, 8, "acquire", e)
	won := 0
	for _, r := range race(t, racers, func(i int) racerJob {
		return racerJob{Holder: "racer-" + string(rune('a'+i)), Checkout: e.main.Dir,
			Resources: []string{"host:port:9", "file:src/" + string(rune('a'+i)) + ".go"}}
	}) {
		switch {
		case r.OK:
			won++
		case r.Code != "held":
			t.Errorf("a racer failed: %+v", r)
		}
	}
	rows := hostRows(t, e)
	if won != 1 || len(rows) != 1 || !strings.HasSuffix(rows[0], " active") {
		t.Fatalf("%d won; host rows %v", won, rows)
	}
}

// TestUnsafePathTouchesNoLedger: a path refusal comes before any ledger
// work, whatever else the request holds; the host ledger is not even
// created (the conformance suite checks the rest).
func TestUnsafePathTouchesNoLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.main.Symlink("/etc", "out")
	_, err := e.acquire("a", "", "host:port:1", "file:out/passwd")
	wantErr(t, err, ErrUnsafePath)
	if l := e.list(true); len(l) != 0 {
		t.Fatalf("leases after a refused request: %+v", l)
	}
	if _, err := os.Stat(e.host); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the host ledger was created: %v", err)
	}
	if _, err := e.acquire("a", "", "file:README.md/../x"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("traversal: %v", err)
	}
}

// quarantine makes holder "a" hold file:src/a.go with a 1m ttl, then lets
// it expire without release.
func quarantine(t *testing.T, e *env, ownerPID int) Lease {
	t.Helper()
	res, err := e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, TTL: time.Minute,
		Resources: []string{"file:src/a.go"}, OwnerPID: ownerPID})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	l := e.lease(res.Leases[0].ID)
	if l.State != StateQuarantined {
		t.Fatalf("expired lease is %s, want quarantined", l.State)
	}
	return l
}
