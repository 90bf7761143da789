package admission

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLeaseTokens: a grant without a supplied token gets a generated one,
// returned once and stored only as a digest; renew and release need it
// (a wrong or missing token refuses and changes nothing); with it they
// work; --force works without it and is recorded, in the event log and in
// the lease as List shows it.
func TestLeaseTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	res, err := e.s.Acquire(ctx, AcquireRequest{Holder: "A-4", Checkout: e.main.Dir, Resources: []string{"file:src/a.go", "host:port:3000"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := res.Token
	if !strings.HasPrefix(tok, "mlt_") || len(tok) < 32 {
		t.Fatalf("generated token %q", tok)
	}
	for _, db := range []string{e.s.RepositoryLedger(), e.host} {
		for _, suffix := range []string{"", "-wal"} {
			b, _ := os.ReadFile(db + suffix)
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("%s holds the token itself, not only its digest", db+suffix)
			}
		}
	}
	ids := []string{res.Leases[0].ID, res.Leases[1].ID}
	for _, bad := range []string{"", "mlt_not-the-token-0123456789"} {
		_, err := e.s.Release(ctx, ReleaseRequest{Holder: "A-4", Token: bad})
		ae := wantErr(t, err, ErrTokenRequired)
		if !strings.Contains(ae.Hint, "supply the token") || strings.Contains(ae.Hint, "force") || ae.Details["holder"] != "A-4" {
			t.Errorf("refusal hint %q (details %v) does not ask for the token (and only for it), or whose lease it is", ae.Hint, ae.Details)
		}
		_, err = e.s.Renew(ctx, RenewRequest{Holder: "A-4", Token: bad, IDs: ids})
		wantErr(t, err, ErrTokenRequired)
	}
	for _, l := range e.list(false) {
		if l.State != StateActive {
			t.Fatalf("a refused release changed lease %s: %+v", l.ID, l)
		}
	}
	if _, err := e.s.Renew(ctx, RenewRequest{Holder: "A-4", Token: tok}); err != nil {
		t.Fatalf("renew with the token: %v", err)
	}
	if _, err := e.s.Release(ctx, ReleaseRequest{Holder: "A-4", Token: tok, IDs: ids[:1]}); err != nil {
		t.Fatalf("release with the token: %v", err)
	}
	// Force: done, and recorded.
	if _, err := e.s.Release(ctx, ReleaseRequest{Holder: "A-4", Force: true}); err != nil {
		t.Fatalf("release --force: %v", err)
	}
	l := e.lease(ids[1])
	if l.State != StateReleased || l.Forced == nil || l.Forced.Op != "release" || l.Forced.By.PID != os.Getpid() {
		t.Fatalf("forced release not shown on the lease: %+v", l)
	}
	if l := e.lease(ids[0]); l.Forced != nil {
		t.Errorf("the release with the token is shown as forced: %+v", l)
	}
	hl, err := e.s.hostLedger(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := hl.db.QueryRow(`SELECT count(*) FROM events WHERE kind = 'force' AND lease_id = ?`, ids[1]).Scan(&n); err != nil || n != 1 {
		t.Errorf("force events for %s: %d, %v; want 1", ids[1], n, err)
	}
}

// TestLeaseTokenRetry: a retry with the same request id must present the
// same token; a supplied token is accepted and needed.
func TestLeaseTokenRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const tok = "client-token-0123456789abcdef"
	req := AcquireRequest{Holder: "A-1", Checkout: e.main.Dir, Resources: []string{"file:x"}, RequestID: "r-1", Token: tok}
	first, err := e.s.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Token != "" {
		t.Errorf("a supplied token was echoed back: %q", first.Token)
	}
	again, err := e.s.Acquire(ctx, req)
	if err != nil || !again.Replayed || again.Leases[0].ID != first.Leases[0].ID {
		t.Fatalf("retry with the same token: %+v, %v", again, err)
	}
	for _, other := range []string{"", "client-token-other-0123456789"} {
		r := req
		r.Token = other
		_, err := e.s.Acquire(ctx, r)
		wantErr(t, err, ErrRequestConflict)
	}
	r := req
	r.Token = "short"
	_, err = e.s.Acquire(ctx, r)
	wantErr(t, err, ErrInvalid)
	if _, err := e.s.Release(ctx, ReleaseRequest{Holder: "A-1", Token: tok}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseOwnerProcess: the owner process (and its descendants: here the
// test process is the owner) releases without a token; another process
// cannot, until the owner is proven dead, and then its lease is reported
// recoverable, not held, and anyone may release it.
func TestLeaseOwnerProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.s.Acquire(ctx, AcquireRequest{Holder: "self", Checkout: e.main.Dir, Resources: []string{"file:s"}, OwnerPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Release(ctx, ReleaseRequest{Holder: "self"}); err != nil {
		t.Fatalf("release by the owner process itself, without the token: %v", err)
	}

	owner := startSleeper(t)
	res, err := e.s.Acquire(ctx, AcquireRequest{Holder: "agent", Checkout: e.main.Dir, Resources: []string{"file:a", "host:port:3000"},
		OwnerPID: owner.Pid()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.s.Release(ctx, ReleaseRequest{Holder: "agent"})
	wantErr(t, err, ErrTokenRequired)
	_, err = e.acquire("other", "", "file:a")
	wantErr(t, err, ErrHeld)

	owner.Kill()
	_, err = e.s.Acquire(ctx, AcquireRequest{Token: tokenOf("other"), Holder: "other", Checkout: e.main.Dir, Resources: []string{"file:a", "host:port:3000"}})
	ae := wantErr(t, err, ErrRecoverable)
	if !strings.Contains(ae.Reason, "recoverable") || !strings.Contains(ae.Hint, "release it") || ae.Details["holder"] != "agent" || ae.Details["lease"] == nil {
		t.Errorf("the refusal does not say the lease is recoverable and how: %v", err)
	}
	for _, c := range ae.Conflicts {
		if !c.Recoverable {
			t.Errorf("conflict %+v not marked recoverable", c)
		}
	}
	for _, l := range res.Leases {
		if got := e.lease(l.ID); !got.Recoverable || got.State != StateActive {
			t.Errorf("lease of a dead owner listed as %+v, want active and recoverable", got)
		}
	}
	// Renewing a dead owner's lease needs the token still; releasing does not.
	_, err = e.s.Renew(ctx, RenewRequest{Holder: "agent"})
	wantErr(t, err, ErrTokenRequired)
	if _, err := e.s.Release(ctx, ReleaseRequest{Holder: "agent"}); err != nil {
		t.Fatalf("release of a dead owner's leases without the token: %v", err)
	}
	for _, l := range res.Leases {
		if got := e.lease(l.ID); got.State != StateReleased || got.Forced != nil || got.Recoverable {
			t.Errorf("lease after its dead owner's release: %+v", got)
		}
		// The release is recorded as a recovery (in the ledger of the
		// lease: the host lease in the host ledger).
		var n int
		for _, db := range []*sql.DB{e.s.repo.db, e.s.host.db} {
			var k int
			if err := db.QueryRow(`SELECT count(*) FROM events WHERE kind = 'release' AND lease_id = ? AND json_extract(detail_json, '$.how') = 'owner_dead'`, l.ID).Scan(&k); err != nil {
				t.Fatal(err)
			}
			n += k
		}
		if n != 1 {
			t.Errorf("the release of %s is recorded as a recovery %d times, want once", l.ID, n)
		}
	}
	e.mustAcquire("other", "", "file:a")
}

// TestLedgerMigration opens a ledger written by a majlis without lease
// tokens: it is upgraded in place (the token columns added), its leases
// are kept, and one granted before tokens is released by its holder name.
func TestLedgerMigration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, RepositoryLedgerName)
	db, err := sql.Open("sqlite", dsn(path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, s := range append(append([]string{}, schema...), repositorySchema...) {
		if s == tokenIndex {
			continue // made with tokens, later
		}
		s = strings.Replace(s, "\t\ttoken_digest TEXT,\n\t\tforced_json TEXT,\n", "", 1)
		old = append(old, s)
	}
	if strings.Contains(strings.Join(old, "\n"), "token_digest") {
		t.Fatal("could not make the old schema")
	}
	old = append(old,
		`INSERT INTO meta (key, value) VALUES ('schema_version', '1'), ('kind', 'repository')`,
		`INSERT INTO generations (scope, key, subtree, checkout, last) VALUES ('host', 'port:1', 0, '', 1)`,
		`INSERT INTO leases (id, scope, resource, key, subtree, checkout, repo, holder, generation, acquired_at, expires_at, state, request_id)
		 VALUES ('L-00000000000000aa', 'host', 'host:port:1', 'port:1', 0, '', '/r', 'old', 1, 1, 9000000000000000000, 'granted', '')`)
	for _, s := range old {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()

	l, err := openLedger(context.Background(), path, kindRepository, 0)
	if err != nil {
		t.Fatalf("opening a ledger without token columns: %v", err)
	}
	defer l.close()
	rows, err := queryRows(context.Background(), l.db, `SELECT `+rowColumns+` FROM leases`)
	if err != nil || len(rows) != 1 || rows[0].tokenDigest.Valid {
		t.Fatalf("leases after the upgrade: %+v, %v", rows, err)
	}
	if _, err := (authority{}).authorize("release", rows[0]); err != nil {
		t.Errorf("a lease granted before tokens needs one: %v", err)
	}
	var n int
	if err := l.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'leases_token'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("the token index after the upgrade: %d, %v", n, err)
	}
	// Opening again finds nothing to do.
	l2, err := openLedger(context.Background(), path, kindRepository, 0)
	if err != nil {
		t.Fatal(err)
	}
	l2.close()
}

// TestLeaseOwnerDescendantReleases: a process descended from the lease's
// owner process (here, a child of the test process, which is the owner)
// releases without the token; a process that is not (the child again, for
// a lease owned by an unrelated running process) cannot.
func TestLeaseOwnerDescendantReleases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sleeper := startSleeper(t)
	for _, tc := range []struct {
		holder string
		owner  int
		ok     bool
	}{
		{"mine", os.Getpid(), true},
		{"theirs", sleeper.Pid(), false},
	} {
		if _, err := e.s.Acquire(ctx, AcquireRequest{Holder: tc.holder, Checkout: e.main.Dir, Resources: []string{"file:" + tc.holder},
			OwnerPID: tc.owner}); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, "acquire", "MAJLIS_STATE="+e.state, "MAJLIS_HOST="+e.host, "MAJLIS_HOLDER="+tc.holder, "MAJLIS_RELEASE=1",
			"MAJLIS_NOW="+e.clock.Now().Format(time.RFC3339Nano))
		r, _ := result(c)
		if r.OK != tc.ok || (!tc.ok && r.Code != "token_required") {
			t.Errorf("%s: release by a child process without the token: %+v, want ok %v (else token_required)", tc.holder, r, tc.ok)
		}
	}
}

// TestServesOthersNeedsTheToken: a service that acts for other processes
// (the majlis server, often the child of the process that owns the
// leases) grants nothing to its own process tree: a lease owned by this
// very process still needs its token to be renewed or released there.
func TestServesOthersNeedsTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv, err := Open(ctx, e.state, Options{HostLedger: e.host, Now: e.clock.Now, ServesOthers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if _, err := srv.Acquire(ctx, AcquireRequest{Token: tokenOf("self"), Holder: "self", Checkout: e.main.Dir, Resources: []string{"file:s"}, OwnerPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	_, err = srv.Renew(ctx, RenewRequest{Holder: "self"})
	wantErr(t, err, ErrTokenRequired)
	_, err = srv.Release(ctx, ReleaseRequest{Holder: "self"})
	wantErr(t, err, ErrTokenRequired)
	if got := e.list(false); len(got) != 1 || got[0].State != StateActive {
		t.Fatalf("a refused release changed the lease: %+v", got)
	}
	if _, err := srv.Release(ctx, ReleaseRequest{Holder: "self", Token: tokenOf("self")}); err != nil {
		t.Fatalf("release with the token: %v", err)
	}
}

// TestOneTokenPerTask: a token guards one holder's leases. Another holder
// presenting it is refused (token_in_use), as is the holder itself
// acquiring more with another token or none (its commands then all work
// with the one token); a dead owner's leases guard nothing any more.
func TestOneTokenPerTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tok := tokenOf("T-21")
	if _, err := e.s.Acquire(ctx, AcquireRequest{Token: tok, Holder: "T-21", Checkout: e.main.Dir, Resources: []string{"intent:src/**"}}); err != nil {
		t.Fatal(err)
	}
	// The same token for another task, in either ledger.
	for _, res := range []string{"intent:docs/**", "host:port:4100"} {
		_, err := e.s.Acquire(ctx, AcquireRequest{Token: tok, Holder: "T-22", Checkout: e.main.Dir, Resources: []string{res}})
		ae := wantErr(t, err, ErrTokenInUse)
		if ae.Details["other_holder"] != "T-21" || strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the refusal %v does not name T-21, or repeats the token", res, err)
		}
	}
	// The task itself: more leases with its token; none or another is refused.
	if _, err := e.s.Acquire(ctx, AcquireRequest{Token: tok, Holder: "T-21", Checkout: e.main.Dir, Resources: []string{"host:port:4101"}}); err != nil {
		t.Fatalf("more leases for the task with its own token: %v", err)
	}
	for _, other := range []string{"", tokenOf("elsewhere")} {
		_, err := e.s.Acquire(ctx, AcquireRequest{Token: other, Holder: "T-21", Checkout: e.main.Dir, Resources: []string{"file:README.md"}})
		if ae := wantErr(t, err, ErrTokenRequired); ae.Details["token_of_holder"] != true {
			t.Errorf("token %q: %v, want the holder's token asked for", other, err)
		}
	}
	// One release with the one token ends them all.
	if rel, err := e.s.Release(ctx, ReleaseRequest{Token: tok, Holder: "T-21"}); err != nil || len(rel.Leases) != 2 {
		t.Fatalf("release with the task's token: %+v, %v", rel, err)
	}
	// Released, the token guards nothing: another task may take it.
	if _, err := e.s.Acquire(ctx, AcquireRequest{Token: tok, Holder: "T-22", Checkout: e.main.Dir, Resources: []string{"intent:docs/**"}}); err != nil {
		t.Fatalf("a token whose leases were released: %v", err)
	}
	// A dead owner's leases guard nothing: its token, or a new one for its
	// holder, is accepted.
	owner := startSleeper(t)
	if _, err := e.s.Acquire(ctx, AcquireRequest{Token: tokenOf("agent"), Holder: "agent", Checkout: e.main.Dir,
		Resources: []string{"file:a"}, OwnerPID: owner.Pid()}); err != nil {
		t.Fatal(err)
	}
	owner.Kill()
	if _, err := e.s.Acquire(ctx, AcquireRequest{Holder: "agent", Checkout: e.main.Dir, Resources: []string{"file:b"}}); err != nil {
		t.Fatalf("a new token for a holder whose only leases' owner is dead: %v", err)
	}
}
