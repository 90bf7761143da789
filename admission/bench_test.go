package admission

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// benchEnv is newEnv for benchmarks.
func benchEnv(b *testing.B) *env {
	b.Helper()
	main := fixtures.NewRepo(b)
	state := filepath.Join(main.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		b.Fatal(err)
	}
	e := &env{main: main, state: state, host: filepath.Join(fixtures.TempDir(b), "host.db"), clock: newClock()}
	s, err := Open(context.Background(), state, Options{HostLedger: e.host, Now: e.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	e.s = s
	return e
}

// seed gives n existing leases to holders bg-0..bg-9, in one admission per
// holder: n/10 intents each, on disjoint subtrees.
func seed(b *testing.B, e *env, n int, scope string) {
	b.Helper()
	for h := range 10 {
		var rs []string
		for i := h; i < n; i += 10 {
			switch scope {
			case "intent":
				rs = append(rs, fmt.Sprintf("intent:d%03d/f%05d/**", i/100, i))
			default:
				rs = append(rs, fmt.Sprintf("file:d%03d/f%05d.go", i/100, i))
			}
		}
		if _, err := e.s.Acquire(context.Background(), AcquireRequest{Token: testToken, Holder: fmt.Sprintf("bg-%d", h), Checkout: e.main.Dir,
			Resources: rs, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdmission5Of1000 times the admission and release of a
// 5-resource set against 1,000 existing leases, beside a floor: bare
// SQLite transactions writing the same rows (generations, leases, events;
// then the release updates and events) into a ledger of the same schema
// and size, with the same pragmas, but without any check. The two
// alternate, so both see the same machine; it reports both and their
// ratio (x-sqlite).
func BenchmarkAdmission5Of1000(b *testing.B) {
	e := benchEnv(b)
	seed(b, e, 1000, "file")
	f := benchEnv(b)
	seed(b, f, 1000, "file")
	floor := f.s.repo
	ctx := context.Background()
	resources := []string{"file:new/a.go", "file:new/b.go", "intent:lib/**", "file:d000/f00001.go/x", "intent:docs/x.md"}
	p, err := f.s.prepareAcquire(ctx, AcquireRequest{Token: testToken, Holder: "me", Checkout: f.main.Dir, Resources: resources})
	if err != nil {
		b.Fatal(err)
	}

	var ours, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := e.s.Acquire(ctx, AcquireRequest{Token: testToken, Holder: "me", Checkout: e.main.Dir, Resources: resources}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.s.Release(ctx, ReleaseRequest{Token: testToken, Holder: "me"}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := floorAdmission(ctx, floor, p); err != nil {
			b.Fatal(err)
		}
		ours += t1.Sub(t0)
		bare += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "admission-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "sqlite-ns/op")
	b.ReportMetric(float64(ours)/float64(bare), "x-sqlite")
}

// floorAdmission writes what an admission of p and its release write, in
// two transactions, with no check: the floor of BenchmarkAdmission5Of1000.
func floorAdmission(ctx context.Context, l *ledger, p *prepared) error {
	now := time.Now().UnixNano()
	var ids []string
	err := l.tx(ctx, "floor", func(c *sql.Conn) error {
		var gargs, largs []any
		var evs []event
		for _, t := range p.targets {
			id := newLeaseID()
			ids = append(ids, id)
			gargs = append(gargs, string(t.scope), t.key, t.subtree, t.checkout)
			largs = append(largs, id, string(t.scope), t.resource, t.key, t.subtree, t.checkout, "repo", p.holder, 1,
				now, now+int64(time.Hour), nil, nil, nil, nil, "granted", "", nil, nil, nil)
			evs = append(evs, event{kind: "grant", holder: p.holder, leaseID: id,
				detail: map[string]any{"resource": t.resource, "generation": 1, "checkout": t.checkout, "expires_at": time.Now()}})
		}
		rows, err := c.QueryContext(ctx, `INSERT INTO generations (scope, key, subtree, checkout, last) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, 1), ", len(p.targets)), ", ")+
			` ON CONFLICT (scope, key, subtree, checkout) DO UPDATE SET last = last + 1 RETURNING last`, gargs...)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		rows.Close()
		if _, err := c.ExecContext(ctx, `INSERT INTO leases (`+rowColumns+`) VALUES `+placeholders(len(p.targets), 20), largs...); err != nil {
			return err
		}
		return appendEvents(ctx, c, now, evs)
	})
	if err != nil {
		return err
	}
	return l.tx(ctx, "floor", func(c *sql.Conn) error {
		if err := updateRows(ctx, c, "released_at", now, ids); err != nil {
			return err
		}
		var evs []event
		for _, id := range ids {
			evs = append(evs, event{kind: "release", holder: p.holder, leaseID: id, detail: map[string]string{"resource": "r"}})
		}
		return appendEvents(ctx, c, now, evs)
	})
}

// BenchmarkConflictLookup10000 times the conflict lookup of one subtree
// intent among 10,000 intents (goal: under 2 ms), inside a transaction as
// admission does it.
func BenchmarkConflictLookup10000(b *testing.B) {
	e := benchEnv(b)
	seed(b, e, 10000, "intent")
	ctx := context.Background()
	p, err := e.s.prepareAcquire(ctx, AcquireRequest{Token: testToken, Holder: "me", Checkout: e.main.Dir, Resources: []string{"intent:d042/**", "file:d017/f01712/x.go"}})
	if err != nil {
		b.Fatal(err)
	}
	conflicts := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := e.s.repo.tx(ctx, "bench", func(c *sql.Conn) error {
			ev, err := e.s.evaluate(ctx, e.s.repo, c, p, []int{0, 1})
			if err != nil {
				return err
			}
			conflicts = len(ev.conflicts)
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if conflicts != 101 {
		b.Fatalf("%d conflicts, want 101", conflicts)
	}
}

var errRollback = errors.New("rollback")
