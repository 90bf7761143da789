package reservation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Format is the format identifier of the lease records this package writes
// and the only one it accepts.
const Format = "majlis.lease/1"

// A Record is the content of a lease file: who holds which resource, since
// when, until when, and with which fencing generation. Records are
// immutable once published: renewal publishes a new file.
type Record struct {
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

	Owner Owner `json:"owner"`
}

// An Owner identifies the process holding a lease precisely enough that a
// reused pid is never taken for it.
type Owner struct {
	Hostname     string `json:"hostname"`
	MachineID    string `json:"machine_id"`    // /etc/machine-id
	BootID       string `json:"boot_id"`       // /proc/sys/kernel/random/boot_id
	PIDNamespace string `json:"pid_namespace"` // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
	PID          int    `json:"pid"`
	StartTime    uint64 `json:"start_time"` // field 22 of /proc/<pid>/stat: clock ticks after boot
}

// Expired reports whether the lease has expired at time now.
func (r *Record) Expired(now time.Time) bool { return !now.Before(r.ExpiresAt) }

// envelope is the file layout: the record plus the SHA-256 of the record's
// exact bytes as they appear in the file.
type envelope struct {
	Lease  json.RawMessage `json:"lease"`
	SHA256 string          `json:"sha256"`
}

// encodeRecord renders r as a complete lease file.
func encodeRecord(r *Record) ([]byte, error) {
	c := *r
	c.AcquiredAt, c.RenewedAt, c.ExpiresAt = c.AcquiredAt.UTC(), c.RenewedAt.UTC(), c.ExpiresAt.UTC()
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	body, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	var b bytes.Buffer
	b.Grow(len(body) + 96)
	b.WriteString(`{"lease":`)
	b.Write(body)
	b.WriteString(`,"sha256":"`)
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteString("\"}\n")
	return b.Bytes(), nil
}

// requiredKeys must all be present in a record; values are validated after.
var requiredKeys = []string{
	"format", "resource", "purpose", "token", "generation",
	"acquired_at", "renewed_at", "expires_at", "authority_digest", "metadata", "owner",
}

var requiredOwnerKeys = []string{"hostname", "machine_id", "boot_id", "pid_namespace", "pid", "start_time"}

// ValidName reports whether s is 1 to max characters, the first a letter
// or digit (or one of first), the rest letters, digits or one of rest.
// (Hand-written: compiling regular expressions at start-up costs every
// majlis invocation about a millisecond.)
func ValidName(s string, max int, first, rest string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum {
			continue
		}
		if i == 0 && !strings.ContainsRune(first, rune(c)) || i > 0 && !strings.ContainsRune(rest, rune(c)) {
			return false
		}
	}
	return true
}

func validResource(s string) bool { return ValidName(s, 200, "", "._:@+=-") }

// isLowerHex reports whether s is exactly n lower-case hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// decodeRecord parses and validates a lease file. Any deviation is an
// error describing it; the caller wraps it as ErrMalformed with the path.
func decodeRecord(data []byte) (*Record, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file")
	}
	var env envelope
	if err := strictUnmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("not a complete lease file (truncated or corrupt): %v", err)
	}
	if len(env.Lease) == 0 || env.Lease[0] != '{' {
		return nil, errors.New(`missing "lease" object`)
	}
	if !isLowerHex(env.SHA256, 64) {
		return nil, errors.New(`missing or invalid "sha256"`)
	}
	sum := sha256.Sum256(env.Lease)
	if hex.EncodeToString(sum[:]) != env.SHA256 {
		return nil, errors.New("checksum mismatch: the record was altered or partly written")
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(env.Lease, &keys); err != nil {
		return nil, fmt.Errorf("lease object: %v", err)
	}
	var format string
	if raw, ok := keys["format"]; !ok || json.Unmarshal(raw, &format) != nil {
		return nil, errors.New(`missing "format"`)
	}
	if format != Format {
		return nil, fmt.Errorf("unknown format %q (this majlis reads %q)", format, Format)
	}
	for _, k := range requiredKeys {
		if _, ok := keys[k]; !ok {
			return nil, fmt.Errorf("missing field %q", k)
		}
	}
	var owner map[string]json.RawMessage
	if err := json.Unmarshal(keys["owner"], &owner); err != nil || owner == nil {
		return nil, errors.New(`"owner" is not an object`)
	}
	for _, k := range requiredOwnerKeys {
		if _, ok := owner[k]; !ok {
			return nil, fmt.Errorf("missing field \"owner.%s\"", k)
		}
	}
	var r Record
	if err := strictUnmarshal(env.Lease, &r); err != nil {
		return nil, fmt.Errorf("lease object: %v", err)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// validate checks the values of a decoded record.
func (r *Record) validate() error {
	switch {
	case !validResource(r.Resource):
		return fmt.Errorf("invalid resource name %q", r.Resource)
	case r.Purpose == "":
		return errors.New("empty purpose")
	case !isLowerHex(r.Token, 32):
		return fmt.Errorf("invalid token %q (want 32 lower-case hex digits)", r.Token)
	case r.Generation == 0:
		return errors.New("generation 0 (generations start at 1)")
	case r.AcquiredAt.IsZero() || r.RenewedAt.IsZero() || r.ExpiresAt.IsZero():
		return errors.New("zero time")
	case r.RenewedAt.Before(r.AcquiredAt):
		return errors.New("renewed_at before acquired_at")
	case !r.ExpiresAt.After(r.RenewedAt):
		return errors.New("expires_at not after renewed_at")
	case r.Owner.Hostname == "" || r.Owner.MachineID == "" || r.Owner.BootID == "" || r.Owner.PIDNamespace == "":
		return errors.New("incomplete owner identity")
	case r.Owner.PID <= 0:
		return fmt.Errorf("invalid owner pid %d", r.Owner.PID)
	case r.Owner.StartTime == 0:
		return errors.New("owner start_time 0")
	}
	for k := range r.Metadata {
		if k == "" {
			return errors.New("empty metadata key")
		}
	}
	return nil
}

// strictUnmarshal decodes exactly one JSON value with no unknown fields and
// nothing after it.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
