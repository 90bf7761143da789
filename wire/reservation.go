package wire

import "time"

// A ReservationRecord is the content of a lease file: who holds which
// resource, since when, until when, and with which fencing generation.
// Records are immutable once published: renewal publishes a new file.
type ReservationRecord struct {
	Format     string `json:"format"`
	Resource   string `json:"resource"`
	Purpose    string `json:"purpose"`
	Token      string `json:"token"`      // 128 random bits, lower-case hex; identifies this grant
	Generation uint64 `json:"generation"` // fencing token: grows with every grant of Resource

	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	ExpiresAt  time.Time `json:"expires_at"`

	// AuthorityDigest is what the holder pinned (for example a claim's
	// digest); empty when the lease pins nothing.
	AuthorityDigest string            `json:"authority_digest"`
	Metadata        map[string]string `json:"metadata"`

	// Owner identifies the process holding the lease precisely enough
	// that a reused pid is never taken for it.
	Owner Owner `json:"owner"`
}

// Expired reports whether the lease has expired at time now.
func (r *ReservationRecord) Expired(now time.Time) bool { return !now.Before(r.ExpiresAt) }
