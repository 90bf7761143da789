package admission

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Ledger kinds, recorded in meta so that one kind is never opened as the
// other (MAJLIS_HOST_LEDGER pointed at a repository's admission.db).
const (
	kindRepository = "repository"
	kindHost       = "host"
)

// schemaVersion is the only ledger schema this package reads or writes.
const schemaVersion = "1"

// RepositoryLedgerName is the repository ledger's file name in the state dir.
const RepositoryLedgerName = "admission.db"

// HostLedgerEnv names the environment variable from which the CLI takes
// the host ledger's path (HostLedgerPath); admission itself reads no
// environment.
const HostLedgerEnv = "MAJLIS_HOST_LEDGER"

// schema creates a ledger. Times are unix nanoseconds (UTC). Lease rows are
// never deleted, except pending host rows whose admission never committed;
// generations rows are never deleted, so a generation is never reused.
var schema = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE generations (
		scope TEXT NOT NULL, key TEXT NOT NULL, subtree INTEGER NOT NULL, checkout TEXT NOT NULL,
		last INTEGER NOT NULL,
		PRIMARY KEY (scope, key, subtree, checkout))`,
	`CREATE TABLE leases (
		id TEXT PRIMARY KEY,
		scope TEXT NOT NULL CHECK (scope IN ('file', 'intent', 'host')),
		resource TEXT NOT NULL,
		key TEXT NOT NULL,
		subtree INTEGER NOT NULL CHECK (subtree IN (0, 1)),
		checkout TEXT NOT NULL,
		repo TEXT NOT NULL,
		holder TEXT NOT NULL,
		generation INTEGER NOT NULL,
		acquired_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		released_at INTEGER,
		resolved_at INTEGER,
		resolved_how TEXT,
		owner_json TEXT,
		state TEXT NOT NULL CHECK (state IN ('pending', 'granted')),
		request_id TEXT NOT NULL,
		pending_request TEXT,
		admitter_json TEXT,
		repo_ledger TEXT,
		token_digest TEXT,
		forced_json TEXT,
		FOREIGN KEY (scope, key, subtree, checkout) REFERENCES generations (scope, key, subtree, checkout))`,
	`CREATE INDEX leases_live ON leases (scope, key) WHERE released_at IS NULL AND resolved_at IS NULL`,
	`CREATE INDEX leases_holder ON leases (holder) WHERE released_at IS NULL AND resolved_at IS NULL`,
	`CREATE INDEX leases_pending ON leases (pending_request) WHERE pending_request IS NOT NULL`,
	tokenIndex,
	`CREATE TABLE requests (id TEXT PRIMARY KEY, op TEXT NOT NULL, args_digest TEXT NOT NULL,
		result_json TEXT NOT NULL, at INTEGER NOT NULL, attempt TEXT)`,
	`CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL,
		holder TEXT NOT NULL, lease_id TEXT NOT NULL, detail_json TEXT NOT NULL)`,
}

// repositorySchema is created in repository ledgers only.
var repositorySchema = []string{
	`CREATE TABLE policy (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	// attempts holds the key of every two-phase admission whose repository
	// transaction committed: the proof that its pending host rows may be
	// granted.
	`CREATE TABLE attempts (id TEXT PRIMARY KEY, at INTEGER NOT NULL)`,
}

// A ledger is one SQLite database: a repository's admission.db or the
// host ledger.
type ledger struct {
	path string
	kind string
	busy time.Duration // how long a connection waits for SQLite's lock
	db   *sql.DB
}

// dsn builds the connection string: a file: URI (so that any character in
// the path survives) with the pragmas every connection runs.
func dsn(path string, busy time.Duration) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath() + "?_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)"
}

// openLedger opens (creating when absent) the ledger at path and validates
// its schema. A file that is not a SQLite database, or a ledger of another
// kind or schema version, refuses with ErrMalformed naming the file and is
// left untouched. busy is the busy timeout (0: DefaultBusyTimeout).
func openLedger(ctx context.Context, path, kind string, busy time.Duration) (*ledger, error) {
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	l := &ledger{path: path, kind: kind, busy: busy}
	if err := checkHeader(path); err != nil {
		return nil, l.malformed("open", err.Error())
	}
	// Opening a new ledger switches it to WAL, which takes SQLite's
	// exclusive lock; a connection that meets it while holding a shared
	// lock is refused with SQLITE_BUSY at once (deadlock avoidance: the
	// busy timeout does not apply). Opening changes nothing that another
	// opener would not also do, so it is tried again, for as long as the
	// busy timeout would have waited.
	deadline := time.Now().Add(busy)
	for attempt := 0; ; attempt++ {
		db, err := sql.Open("sqlite", dsn(path, busy))
		if err != nil {
			return nil, &Error{Op: "open", Path: path, Err: err}
		}
		l.db = db
		err = l.validate(ctx)
		if err == nil {
			return l, nil
		}
		db.Close()
		if !isBusy(err) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(1+rand.IntN(5+min(attempt, 20)*5)) * time.Millisecond):
		}
	}
}

// DefaultBusyTimeout is how long a ledger connection waits for another
// writer's lock before giving up (SQLITE_BUSY), and how long opening a
// ledger retries; Options.BusyTimeout changes it.
const DefaultBusyTimeout = 10 * time.Second

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// checkHeader refuses, before SQLite opens it, a non-empty file that is not
// a SQLite database: opening it would otherwise run pragmas against it.
func checkHeader(path string) error {
	// O_NONBLOCK: a FIFO in the ledger's place must be refused, not
	// waited on (a plain open blocks until someone writes to it).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && err == io.EOF:
		return nil // empty: a ledger about to be created
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return err
	case !bytes.Equal(head[:n], sqliteMagic):
		return errors.New("not a SQLite database")
	}
	return nil
}

// validate checks meta (kind and schema version), creating the schema in
// an empty database.
func (l *ledger) validate(ctx context.Context) error {
	tables, err := l.tables(ctx, l.db)
	if err != nil {
		return l.fail("open", err)
	}
	if len(tables) == 0 {
		err := l.tx(ctx, "open", func(c *sql.Conn) error {
			// Re-read inside the write lock: another process may have
			// created the schema since.
			tables, err := l.tables(ctx, c)
			if err != nil || len(tables) > 0 {
				return err
			}
			stmts := schema
			if l.kind == kindRepository {
				stmts = append(append([]string{}, schema...), repositorySchema...)
			}
			stmts = append(stmts,
				`INSERT INTO meta (key, value) VALUES ('schema_version', '`+schemaVersion+`'), ('kind', '`+l.kind+`')`)
			for _, s := range stmts {
				if _, err := c.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	meta := map[string]string{}
	rows, err := l.db.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return l.malformed("open", "it has tables but no meta table: not a majlis ledger")
		}
		return l.fail("open", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return l.malformed("open", "meta: "+err.Error())
		}
		meta[k] = v
	}
	if err := rows.Err(); err != nil {
		return l.fail("open", err)
	}
	switch {
	case meta["schema_version"] != schemaVersion:
		return l.malformed("open", fmt.Sprintf("unknown schema_version %q (this majlis reads %s)", meta["schema_version"], schemaVersion))
	case meta["kind"] != l.kind:
		return l.malformed("open", fmt.Sprintf("it is a %q ledger, not a %s ledger", meta["kind"], l.kind))
	}
	rows.Close()
	return l.migrate(ctx)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (l *ledger) tables(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func (l *ledger) close() error { return l.db.Close() }

// tx runs fn inside BEGIN IMMEDIATE ... COMMIT on one pinned connection:
// the write lock is taken before anything is read, so what fn reads stays
// true until COMMIT. Any error (from fn or COMMIT) rolls back; success is
// reported only after COMMIT returned.
func (l *ledger) tx(ctx context.Context, op string, fn func(c *sql.Conn) error) (err error) {
	c, err := l.db.Conn(ctx)
	if err != nil {
		return l.fail(op, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		// The driver reports ctx's error when ctx ends during the call,
		// even if BEGIN took the write lock meanwhile: such a connection
		// must not return to the pool (closing it ends the transaction).
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		return l.fail(op, err)
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		// Roll back on any error, a panic included, even when ctx was
		// cancelled. A connection that cannot roll back must not return
		// to the pool inside a transaction.
		if _, rbErr := c.ExecContext(context.Background(), "ROLLBACK"); rbErr != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := fn(c); err != nil {
		return l.fail(op, err)
	}
	// COMMIT is not tied to ctx: the driver reports ctx's error when ctx
	// ends during a call, even one that committed, and the answer must be
	// the outcome: a grant that committed is reported as a grant.
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		return l.fail(op, err)
	}
	committed = true
	return nil
}

// fail wraps a database error with the ledger's path; an unreadable or
// corrupt database is ErrMalformed.
func (l *ledger) fail(op string, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		if ae.Path == "" && errors.Is(ae.Err, ErrMalformed) {
			ae.Path = l.path
		}
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return l.malformed(op, err.Error())
		}
	}
	return &Error{Op: op, Path: l.path, Err: err}
}

func (l *ledger) malformed(op, reason string) error {
	return &Error{Op: op, Path: l.path, Err: ErrMalformed, Reason: l.kind + " ledger " + l.path + ": " + reason,
		Hint: "move the file aside to start an empty ledger (its leases are then forgotten), or restore it from a backup"}
}

// HostLedgerPath returns the host ledger's conventional path in the
// environment that getenv reads (the caller's: admission reads none):
// $MAJLIS_HOST_LEDGER (made absolute), else $XDG_STATE_HOME/majlis/host.db,
// else $HOME/.local/state/majlis/host.db.
func HostLedgerPath(getenv func(string) string) (string, error) {
	if p := getenv(HostLedgerEnv); p != "" {
		return filepath.Abs(p)
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "majlis", "host.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", &Error{Op: "open", Err: ErrInvalid, Reason: "no host ledger location: $HOME is not defined",
			Hint: "set " + HostLedgerEnv + " or HOME"}
	}
	return filepath.Join(home, ".local", "state", "majlis", "host.db"), nil
}

// CheckHostLedgerPath reports why p cannot name the host ledger (it names
// a folder), or nil.
func CheckHostLedgerPath(p string) error {
	if strings.HasSuffix(p, "/") {
		return errors.New("it names a directory")
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return errors.New("it is a directory")
	}
	return nil
}
