package admission

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// Lease tokens. Every grant carries a secret token that its client
// supplies (or that Acquire generates and returns once). The ledger keeps
// only its digest. Renewing or releasing a lease needs the token, or must
// come from the lease's owner process itself (one of the caller's
// ancestors, exactly: pid and start time), or from anyone once that owner
// is proven dead (release only); otherwise only Force does it, and the
// ledger records who forced it. A lease granted before tokens existed has
// no digest: its holder name is enough, as it was then.

// TokenEnv names the environment variable the CLI reads a lease token from.
const TokenEnv = "MAJLIS_LEASE_TOKEN"

// minToken and maxToken bound a client-supplied token's length.
const minToken, maxToken = 16, 512

// NewToken returns a fresh random lease token.
func NewToken() string {
	var b [24]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err)
	}
	return "mlt_" + hex.EncodeToString(b[:])
}

// checkToken validates a client-supplied token: 16 to 512 printable
// characters without spaces.
func checkToken(op, token string) error {
	if len(token) < minToken || len(token) > maxToken || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("a lease token is %d to %d printable characters without spaces", minToken, maxToken),
			Hint: "omit the token to have one generated, or supply a longer random one", Details: map[string]any{"argument": "token"}}
	}
	return nil
}

// tokenDigest is what the ledger stores of a token.
func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Forced records who renewed or released a lease without its token
// (wire.Forced).
type Forced = wire.Forced

// callerIdentity is the forcing process, for the record.
func callerIdentity(op string, now int64) (Forced, error) {
	f := Forced{Op: op, At: fromNanos(now)}
	o, err := procid.Of(os.Getpid())
	if err != nil {
		return f, err
	}
	f.By = o
	if u, err := user.Current(); err == nil {
		f.User = u.Username
	}
	return f, nil
}

// authority is how a caller may act on a lease: with its token, as its
// owner process (or a descendant of it), or by force.
type authority struct {
	token string // "" when none was supplied
	force bool
	// servesOthers: the calling process acts for others (a server), so
	// being the owner process or its descendant proves nothing.
	servesOthers bool
}

// authorize decides whether the caller may renew or release r. forced
// reports that only Force allowed it.
func (a authority) authorize(op string, r row) (forced bool, err error) {
	if !r.tokenDigest.Valid || r.tokenDigest.String == "" {
		return false, nil // granted before lease tokens: the holder name suffices
	}
	if a.token != "" && subtle.ConstantTimeCompare([]byte(tokenDigest(a.token)), []byte(r.tokenDigest.String)) == 1 {
		return false, nil
	}
	o, ok, _ := ownerOf(r.owner)
	if ok && !a.servesOthers && procid.IsSelfOrAncestor(o) {
		return false, nil
	}
	dead := false
	if ok {
		live, _ := procid.Judge(o)
		dead = live == procid.Dead
	}
	if dead && op == "release" {
		return false, nil // recoverable: its owner is proven dead
	}
	if a.force {
		return true, nil
	}
	if dead {
		// Renewing for a dead owner would keep its leases alive with no
		// one at work: what helps is the release, which needs no token.
		return false, &Error{Op: op, Resource: r.resource, Err: ErrTokenRequired,
			Reason:  fmt.Sprintf("lease %s of %s belongs to owner process %d, which is proven dead: it is recoverable, not renewable without its token", r.id, r.holder, o.PID),
			Hint:    "release it (no token is needed once its owner is dead)",
			Details: map[string]any{"holder": r.holder, "lease": r.id, "owner_pid": o.PID, "owner_dead": true}}
	}
	why := "no token was given"
	if a.token != "" {
		why = "the token given is not this lease's"
	}
	hint := "supply the token printed when it was granted, run it from the lease's owner process"
	details := map[string]any{"holder": r.holder, "lease": r.id}
	if ok {
		hint += fmt.Sprintf(" (pid %d)", o.PID)
		details["owner_pid"] = o.PID
	}
	if ok {
		hint += "; once that process is dead, releasing needs no token"
	}
	return false, &Error{Op: op, Resource: r.resource, Err: ErrTokenRequired,
		Reason: fmt.Sprintf("lease %s of %s is protected by its lease token and %s", r.id, r.holder, why), Hint: hint, Details: details}
}

// recovers reports whether a release of r by this caller is a recovery:
// r is protected by a token the caller does not present, the caller is
// not its owner process, and that owner is proven dead.
func (a authority) recovers(r row) bool {
	if !r.tokenDigest.Valid || r.tokenDigest.String == "" {
		return false
	}
	if a.token != "" && subtle.ConstantTimeCompare([]byte(tokenDigest(a.token)), []byte(r.tokenDigest.String)) == 1 {
		return false
	}
	o, ok, _ := ownerOf(r.owner)
	if !ok || !a.servesOthers && procid.IsSelfOrAncestor(o) {
		return false
	}
	live, _ := procid.Judge(o)
	return live == procid.Dead
}

// recordForced marks r forced in the ledger and appends a force event.
func recordForced(ctx context.Context, c *sql.Conn, now int64, op string, r *row) error {
	f, err := callerIdentity(op, now)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(f)
	r.forced = sql.NullString{String: string(b), Valid: true}
	if _, err := c.ExecContext(ctx, `UPDATE leases SET forced_json = ? WHERE id = ?`, r.forced.String, r.id); err != nil {
		return err
	}
	return appendEvent(ctx, c, now, "force", r.holder, r.id, f)
}

// migrate brings a ledger made by an earlier majlis up to this schema,
// inside a write transaction: the columns of lease tokens and forced
// operations are added to leases (nullable: an earlier lease has no token,
// see authorize). Adding columns is compatible both ways: an earlier
// majlis names the columns it reads and writes, and leaves them NULL.
func (l *ledger) migrate(ctx context.Context) error {
	if err := l.migrateColumns(ctx); err != nil {
		return err
	}
	return l.ensureTokenIndex(ctx)
}

func (l *ledger) migrateColumns(ctx context.Context) error {
	has := func(q querier) (bool, error) {
		rows, err := q.QueryContext(ctx, `SELECT name FROM pragma_table_info('leases')`)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return false, err
			}
			if name == "token_digest" || name == "forced_json" {
				n++
			}
		}
		return n == 2, rows.Err()
	}
	if ok, err := has(l.db); err != nil || ok {
		return err
	}
	return l.tx(ctx, "open", func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `SELECT name FROM pragma_table_info('leases')`)
		if err != nil {
			return err
		}
		cols := map[string]bool{}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			cols[name] = true
		}
		rows.Close()
		for _, col := range []string{"token_digest", "forced_json"} {
			if cols[col] {
				continue
			}
			if _, err := c.ExecContext(ctx, `ALTER TABLE leases ADD COLUMN `+col+` TEXT`); err != nil {
				return err
			}
		}
		return nil
	})
}

// ValidToken refuses (ErrInvalid) a lease token that Acquire would
// refuse, so that a caller can check it before any other effect.
func ValidToken(op, token string) error { return checkToken(op, token) }
