package reservation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/wire"
)

// Format is the format identifier of the lease records this package writes
// and the only one it accepts.
const Format = "majlis.lease/1"

// Record is wire.ReservationRecord: the result type is defined once, in the wire contract.
type Record = wire.ReservationRecord

// encodeRecord renders r as a complete lease file (a sealed record of
// kind "lease").
func encodeRecord(r *Record) ([]byte, error) {
	c := *r
	c.AcquiredAt, c.RenewedAt, c.ExpiresAt = c.AcquiredAt.UTC(), c.RenewedAt.UTC(), c.ExpiresAt.UTC()
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	data, _, err := durable.Seal("lease", &c)
	return data, err
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
	var r Record
	_, body, err := durable.Unseal(data, "lease", Format, &r)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, fmt.Errorf("lease object: %v", err)
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
	if err := validate(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// validate checks the values of a decoded record.
func validate(r *Record) error {
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
