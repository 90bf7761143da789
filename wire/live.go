package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Live is the body of GET /api/v1/live (LivePath). It never carries the token: only
// its SHA-256 digest, and with ?nonce=N the HMAC-SHA256 of N keyed with the
// token, which only a holder of the token can compute.
type Live struct {
	Repository  string `json:"repository"`   // the repository id
	PID         int    `json:"pid"`          // the server's pid
	StartTime   uint64 `json:"start_time"`   // its process start time (clock ticks after boot, as in the lease)
	Holder      bool   `json:"holder"`       // whether this process holds the server lease now
	TokenSHA256 string `json:"token_sha256"` // hex SHA-256 of the lease token (its 32 hex characters)
	Nonce       string `json:"nonce"`        // the nonce asked for, or ""
	HMAC        string `json:"hmac"`         // hex HMAC-SHA256(key: token, message: nonce), or "" without a nonce
	Ready       bool   `json:"ready"`        // whether it serves API requests yet
	Version     string `json:"version"`      // majlis version of the server
	API         string `json:"api"`          // APIVersion of the server
	Busy        int    `json:"busy"`         // API handlers running now
	MaxHandlers int    `json:"max_handlers"` // their bound
	Waiting     int    `json:"waiting"`      // requests waiting for a handler
	Reading     int    `json:"reading"`      // requests whose body is being read (they hold no handler)
	// Connections are the open connections, MaxConnections their cap.
	Connections    int `json:"connections"`
	MaxConnections int `json:"max_connections"`
}

// TokenDigest is the hex SHA-256 of a lease token.
func TokenDigest(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// TokenHMAC is the hex HMAC-SHA256 of nonce keyed with token.
func TokenHMAC(token, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}
