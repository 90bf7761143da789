package admission

import (
	"os"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/envvar"
)

// CheckEnvironment validates the environment variables admission reads:
// MAJLIS_HOST_LEDGER, when set, must name a file (a relative path is
// taken from the working directory), not a directory. It returns an
// *envvar.Error.
func CheckEnvironment() error {
	p := os.Getenv(HostLedgerEnv)
	if p == "" {
		return nil
	}
	fail := func(reason string) error {
		return &envvar.Error{Name: HostLedgerEnv, Value: p, Reason: reason,
			Accepted: "the path of the host ledger's SQLite file (a relative path is taken from the working directory); unset or empty means $XDG_STATE_HOME/majlis/host.db, else ~/.local/state/majlis/host.db"}
	}
	if strings.HasSuffix(p, "/") {
		return fail("it names a directory")
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return fail("it is a directory")
	}
	return nil
}

// CheckHolder reports whether holder is a valid holder name: printable
// characters, not too long, without leading or trailing spaces. The error
// wraps ErrInvalid and says what is accepted.
func CheckHolder(holder string) error { return checkHolder("check", holder) }

// ValidTTL reports whether ttl is an accepted lease lifetime: 0 (meaning
// DefaultTTL) up to ten years, as Acquire and Renew accept. The error wraps
// ErrInvalid; op names the operation in it.
func ValidTTL(op string, ttl time.Duration) error {
	_, err := checkTTL(op, ttl)
	return err
}
