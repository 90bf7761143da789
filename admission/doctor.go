package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// CheckLedger examines the ledger at path for `majlis doctor`: an absent
// ledger is fine (found false) and is not created; an existing one must be
// a SQLite database of this kind and schema version ("repository" or
// "host") that passes SQLite's quick_check. A problem is reported as an
// error wrapping ErrMalformed that names the file, and the file is left
// as it is. A ledger that opens is opened as every command opens it, which
// brings one made by an earlier majlis up to this schema (migrate).
func CheckLedger(ctx context.Context, path, kind string) (found bool, err error) {
	if kind != kindRepository && kind != kindHost {
		return false, fmt.Errorf("admission: unknown ledger kind %q", kind)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &Error{Op: "check", Path: path, Err: err}
	}
	if fi.Size() == 0 {
		return true, nil // created on first use
	}
	l, err := openLedger(ctx, path, kind, 0)
	if err != nil {
		return true, err
	}
	defer l.close()
	rows, err := l.db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return true, l.fail("check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return true, l.fail("check", err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return true, l.fail("check", err)
	}
	if len(problems) > 0 {
		return true, l.malformed("check", "quick_check: "+strings.Join(problems, "; "))
	}
	return true, nil
}
