package server

import (
	"crypto/subtle"
)

// equal compares two secrets-derived strings in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// validNonce accepts what a probe sends: 1 to 128 letters, digits, - or _.
func validNonce(n string) bool {
	if len(n) == 0 || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
