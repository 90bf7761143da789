package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
)

// The warm pool's policy (pool.md): how many ready pooled worktrees the
// server keeps (pool.size). Stored as the trash's keys are, one sealed
// record per key in the state folder's policy/ (trashpolicy.go).

// PolicyPoolSize is how many ready pooled worktrees the per-repository
// server keeps in the background (0: none; pool fill's default size).
const PolicyPoolSize = "pool.size"

// DefaultPoolSize keeps no pool: filling one costs a full checkout each.
const DefaultPoolSize = 0

// PoolPolicyKeys lists the pool's policy keys.
func PoolPolicyKeys() []string { return []string{PolicyPoolSize} }

func isPoolKey(key string) bool { return key == PolicyPoolSize }

// checkPoolValue says why value is not one a pool key takes ("" when it
// is).
func checkPoolValue(key, value string) string {
	if key != PolicyPoolSize {
		return fmt.Sprintf("unknown policy key %q", key)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(value)); err != nil || n < 0 || n > maxPoolSize || strings.TrimSpace(value) != value {
		return fmt.Sprintf("%s takes a number of worktrees from 0 to %d, not %q", key, maxPoolSize, value)
	}
	return ""
}

// PoolSize reads pool.size, with where it comes from (SourceDefault or
// SourceRepository). A record that cannot be read refuses, naming it.
func (p *Provider) PoolSize() (int, string, error) {
	var rec policyRecord
	path := filepath.Join(p.policyDir(), PolicyPoolSize+".json")
	_, err := readRecord(path, "policy", formatPolicy, &rec)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return DefaultPoolSize, SourceDefault, nil
	case err != nil:
		var pe *Error
		if errors.As(err, &pe) && pe.Hint == "" {
			pe.Hint = "set the policy key " + PolicyPoolSize + " again"
		}
		return 0, "", err
	case rec.Key != PolicyPoolSize:
		return 0, "", &Error{Op: "policy", Path: path, Err: ErrMalformed, Reason: fmt.Sprintf("the record names %q", rec.Key),
			Hint: "set the policy key " + PolicyPoolSize + " again"}
	}
	n, _ := strconv.Atoi(rec.Value)
	return n, SourceRepository, nil
}

// setPoolPolicy sets a pool key in its own record, written whole.
func (p *Provider) setPoolPolicy(key, value string) error {
	if why := checkPoolValue(key, value); why != "" {
		return &Error{Op: "policy", Err: ErrInvalidArgument, Reason: why}
	}
	data, _, err := seal("policy", &policyRecord{Format: formatPolicy, Key: key, Value: value, SetAt: p.now().UTC()})
	if err != nil {
		return err
	}
	if err := durable.MkdirAll(p.policyDir(), 0o755); err != nil {
		return err
	}
	return durable.Replace(p.policyDir(), key+".json", data)
}
