package admission

import "time"

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

// MinToken and MaxToken bound the length of a lease token a client
// supplies (ValidToken).
const MinToken, MaxToken = minToken, maxToken
