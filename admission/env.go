package admission

import (
	"fmt"
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
	if tok := os.Getenv(TokenEnv); tok != "" && checkToken("check", tok) != nil {
		// The value is a secret: it is not repeated in the error.
		return &envvar.Error{Name: TokenEnv, Value: "(not shown)", Reason: "not a lease token",
			Accepted: fmt.Sprintf("a lease token: %d to %d printable characters without spaces; unset or empty means none (one is generated when a lease is acquired)", minToken, maxToken)}
	}
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
