package admission

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestOpenNotInitialized(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	state := filepath.Join(repo.CommonDir(), "majlis")
	_, err := Open(context.Background(), state, Options{HostLedger: filepath.Join(t.TempDir(), "host.db")})
	wantErr(t, err, ErrNotInitialized)
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the state dir: %v", err)
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, l := range []*ledger{e.s.repo, func() *ledger { l, _ := e.s.hostLedger(context.Background(), true); return l }()} {
		for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000"} {
			var got string
			if err := l.db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: PRAGMA %s = %s, want %s", l.path, pragma, got, want)
			}
		}
	}
	// foreign_keys is enforced: a lease must name a known generation row.
	_, err := e.s.repo.db.Exec(`INSERT INTO leases (id, scope, resource, key, subtree, checkout, repo, holder, generation,
		acquired_at, expires_at, state, request_id) VALUES ('L-x', 'file', 'file:x', 'x', 0, '/c', '/r', 'h', 1, 0, 1, 'granted', '')`)
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("insert without a generation row: %v", err)
	}
}

// TestMalformedLedger: a ledger that is not a SQLite database, or of an
// unknown schema version or kind, refuses with ErrMalformed naming the
// file, and the file is left as it was.
func TestMalformedLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*env, string) {
		e := newEnv(t)
		e.s.Close()
		return e, filepath.Join(e.state, RepositoryLedgerName)
	}
	sqlExec := func(t *testing.T, path, stmt string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, path string)
		reason string
	}{
		{"garbage", func(t *testing.T, path string) {
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 100), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a SQLite database"},
		{"truncated header", func(t *testing.T, path string) {
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			os.WriteFile(path, []byte("SQLite"), 0o644)
		}, "not a SQLite database"},
		{"corrupt pages", func(t *testing.T, path string) {
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			os.WriteFile(path, append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 4000)...), 0o644)
		}, ""},
		{"unknown schema version", func(t *testing.T, path string) {
			sqlExec(t, path, `UPDATE meta SET value = '99' WHERE key = 'schema_version'`)
		}, `unknown schema_version "99"`},
		{"no meta", func(t *testing.T, path string) {
			sqlExec(t, path, `DROP TABLE meta`)
		}, "no meta table"},
		{"other kind", func(t *testing.T, path string) {
			sqlExec(t, path, `UPDATE meta SET value = 'host' WHERE key = 'kind'`)
		}, `"host" ledger`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, path := setup(t)
			tc.break_(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(ctx, e.state, Options{HostLedger: e.host})
			ae := wantErr(t, err, ErrMalformed)
			if ae.Path != path || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %q (path %q) does not name %s and %q", err, ae.Path, path, tc.reason)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatal("a refused open changed the ledger file")
			}
		})
	}
}

func TestMalformedHostLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	garbage := []byte("this is not a ledger\n")
	if err := os.WriteFile(e.host, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rs := range [][]string{{"host:port:1"}, {"host:port:1", "file:a"}} {
		_, err := e.acquire("a", "", rs...)
		ae := wantErr(t, err, ErrMalformed)
		if ae.Path != e.host {
			t.Fatalf("error names %q, want %s", ae.Path, e.host)
		}
	}
	if _, err := e.s.List(context.Background(), ListRequest{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("list: %v", err)
	}
	e.mustAcquire("a", "", "file:a") // the repository ledger works on
	if b, _ := os.ReadFile(e.host); !bytes.Equal(b, garbage) {
		t.Fatal("the host ledger was changed")
	}
	// A repository ledger is not a host ledger.
	s, err := Open(context.Background(), e.state, Options{HostLedger: filepath.Join(e.state, RepositoryLedgerName)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Acquire(context.Background(), AcquireRequest{Token: tokenOf("a"), Holder: "a", Resources: []string{"host:x"}})
	wantErr(t, err, ErrMalformed)
}

// The host ledger's conventional path comes from the environment the
// caller passes; admission reads none, and refuses to guess one.
func TestHostLedgerPath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		env  func(string) string
		want string
	}{
		{env("XDG_STATE_HOME", "/xdg", "HOME", "/home/u"), "/xdg/majlis/host.db"},
		{env("XDG_STATE_HOME", "relative", "HOME", "/home/u"), "/home/u/.local/state/majlis/host.db"},
		{env("HOME", "/home/u"), "/home/u/.local/state/majlis/host.db"},
		{env(HostLedgerEnv, "/shared/host.db", "XDG_STATE_HOME", "/xdg"), "/shared/host.db"},
	} {
		if p, err := HostLedgerPath(c.env); err != nil || p != c.want {
			t.Errorf("HostLedgerPath = %s, %v; want %s", p, err, c.want)
		}
	}
	if _, err := HostLedgerPath(env()); !errors.Is(err, ErrInvalid) {
		t.Errorf("without HOME: %v, want ErrInvalid", err)
	}
	t.Setenv(HostLedgerEnv, "/from/the/environment.db")
	if _, err := Open(t.Context(), newEnv(t).state, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open without a host ledger: %v, want ErrInvalid (admission reads no environment)", err)
	}
	for _, bad := range []string{"/x/", t.TempDir()} {
		if CheckHostLedgerPath(bad) == nil {
			t.Errorf("CheckHostLedgerPath(%q) accepted a folder", bad)
		}
	}
	if err := CheckHostLedgerPath(filepath.Join(t.TempDir(), "host.db")); err != nil {
		t.Error(err)
	}
}

// A busy timeout given as an option is the one every connection uses.
func TestBusyTimeoutOption(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, err := Open(t.Context(), e.state, Options{HostLedger: e.host, BusyTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ms int
	if err := s.repo.db.QueryRowContext(t.Context(), `PRAGMA busy_timeout`).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	if ms != 1500 {
		t.Errorf("busy_timeout %d ms, want 1500", ms)
	}
}

// TestHostLedgerCreatedPrivate: the host ledger's folder is created 0700,
// and only when a host resource is first admitted.
func TestHostLedgerCreatedPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.s.Close()
	e.host = filepath.Join(t.TempDir(), "state", "majlis", "host.db")
	e.s = e.open()
	e.mustAcquire("a", "", "file:a")
	e.list(true)
	if _, err := os.Stat(filepath.Dir(e.host)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("host ledger folder created without a host resource: %v", err)
	}
	e.mustAcquire("a", "", "host:port:1")
	fi, err := os.Stat(filepath.Dir(e.host))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("host ledger folder: %v, %v", fi, err)
	}
}

// TestJSONShapes pins the JSON fields the CLI prints.
func TestJSONShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustAcquire("a", e.linked.Dir, "intent:src/**")
	res := e.mustAcquire("b", "", "file:src/a.go", "host:port:1")
	keys := func(v any) []string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{res, []string{"decided_by", "leases", "ports", "replayed", "reused", "warnings"}},
		{res.Leases[0], []string{"acquired_at", "checkout", "expires_at", "generation", "holder", "id", "key", "resource", "scope", "state"}},
		{res.Leases[1], []string{"acquired_at", "expires_at", "generation", "holder", "id", "key", "resource", "scope", "state"}},
		{res.Warnings[0], []string{"code", "lease", "message", "policy", "resource"}},
		{Conflict{}, []string{"lease", "policy", "reason", "resource"}}, // recoverable only when true
		{DefaultPolicy(), []string{"coordination", "cross_worktree_overlap", "enforcement_gap", "port_range", "same_checkout_conflict"}},
	} {
		if got := keys(tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("%T keys = %v, want %v", tc.v, got, tc.want)
		}
	}
}
