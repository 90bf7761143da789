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
		if _, err := e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf(fmt.Sprintf("bg-%d", h)), Holder: fmt.Sprintf("bg-%d", h), Checkout: e.main.Dir,
			Resources: rs, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdmission5Of1000 times the admission and release of a
// 5-resource set against 1,000 existing leases, beside a floor: bare
// SQLite transactions writing the same rows into a ledger of the same
// schema, size and pragmas, but without any check (floorAdmission). The
// two alternate, so both see the same machine; it reports both and their
// ratio (x-sqlite).
func BenchmarkAdmission5Of1000(b *testing.B) {
	e := benchEnv(b)
	seed(b, e, 1000, "file")
	f := benchEnv(b)
	seed(b, f, 1000, "file")
	ctx := context.Background()
	resources := []string{"file:new/a.go", "file:new/b.go", "intent:lib/**", "file:d000/f00001.go/x", "intent:docs/x.md"}
	p, err := f.s.prepareAcquire(ctx, AcquireRequest{Token: tokenOf("me"), Holder: "me", Checkout: f.main.Dir, Resources: resources})
	if err != nil {
		b.Fatal(err)
	}

	var ours, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := e.s.Acquire(ctx, AcquireRequest{Token: tokenOf("me"), Holder: "me", Checkout: e.main.Dir, Resources: resources}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.s.Release(ctx, ReleaseRequest{Token: tokenOf("me"), Holder: "me"}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := floorAdmission(ctx, f.s, p); err != nil {
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
// the same two transactions of s's repository ledger, with no check and
// no read: the floor of BenchmarkAdmission5Of1000. Its writes are
// admission's own code (insertAll: the generations, the lease rows with
// every column, the grant events; updateRows and appendEvents: the
// release), so the floor's statements are admission's and follow the
// schema wherever it goes.
func floorAdmission(ctx context.Context, s *Service, p *prepared) error {
	idx := make([]int, len(p.targets))
	for i := range idx {
		idx[i] = i
	}
	e := &evaluation{s: s, l: s.repo, p: p, idx: idx, now: s.nanos(), rows: map[int]row{}, reused: map[int]bool{}}
	err := s.repo.tx(ctx, "floor", func(c *sql.Conn) error {
		e.c = c
		return e.insertAll(ctx, nil)
	})
	if err != nil {
		return err
	}
	if len(e.rows) != len(p.targets) {
		return fmt.Errorf("floor: %d rows written for %d targets", len(e.rows), len(p.targets))
	}
	return s.repo.tx(ctx, "floor", func(c *sql.Conn) error {
		var ids []string
		var evs []event
		for _, i := range idx {
			r := e.rows[i]
			ids = append(ids, r.id)
			evs = append(evs, event{kind: "release", holder: r.holder, leaseID: r.id, detail: map[string]string{"resource": r.resource}})
		}
		if err := updateRows(ctx, c, "released_at", e.now, ids); err != nil {
			return err
		}
		return appendEvents(ctx, c, e.now, evs)
	})
}

// TestLeaseColumnsAreTheSchemas checks that rowColumns, which every lease
// insert and read uses (the benchmark's floor included), names every
// column of the schema's leases table, in the schema's order: a column
// added to one and not the other fails here, not in a benchmark.
func TestLeaseColumnsAreTheSchemas(t *testing.T) {
	t.Parallel()
	l, err := openLedger(context.Background(), filepath.Join(t.TempDir(), "a.db"), kindRepository, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	rows, err := l.db.Query(`SELECT name FROM pragma_table_info('leases') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var schema []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		schema = append(schema, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, c := range strings.Split(rowColumns, ",") {
		ours = append(ours, strings.TrimSpace(c))
	}
	if strings.Join(ours, ",") != strings.Join(schema, ",") {
		t.Errorf("rowColumns:\n%v\nthe schema's leases columns:\n%v", ours, schema)
	}
}

// BenchmarkConflictLookup10000 times the conflict lookup of one subtree
// intent among 10,000 intents (goal: under 2 ms), inside a transaction as
// admission does it. When the benchmarks run once each
// (fixtures.BenchSmoke), among 1,000: the same lookup, the same conflicts.
func BenchmarkConflictLookup10000(b *testing.B) {
	n, dir, file := 10000, "d042", "d017/f01712"
	if fixtures.BenchSmoke() {
		n, dir, file = 1000, "d004", "d001/f00171"
	}
	e := benchEnv(b)
	seed(b, e, n, "intent")
	ctx := context.Background()
	p, err := e.s.prepareAcquire(ctx, AcquireRequest{Token: tokenOf("me"), Holder: "me", Checkout: e.main.Dir,
		Resources: []string{"intent:" + dir + "/**", "file:" + file + "/x.go"}})
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
