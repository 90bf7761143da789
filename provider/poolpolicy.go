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
// server keeps (pool.size), how much space they may take together
// (pool.max_bytes), and which ignored caches a recycled worktree keeps
// (pool.keep_ignored, poolkeep.go). Stored as the trash's keys are, one
// sealed record per key in the state folder's policy/ (trashpolicy.go).

// Pool policy keys.
const (
	// PolicyPoolSize is how many ready pooled worktrees the
	// per-repository server keeps in the background (0: none; pool
	// fill's default size).
	PolicyPoolSize = "pool.size"
	// PolicyPoolMaxBytes bounds the size of all pooled worktrees
	// together: a fill stops before a new one would pass it.
	PolicyPoolMaxBytes = "pool.max_bytes"
	// PolicyPoolKeepIgnored names the ignored paths (relative to a
	// worktree's root, comma-separated) that a pooled worktree may hold.
	PolicyPoolKeepIgnored = "pool.keep_ignored"
)

// The defaults. No pool: filling one costs a full checkout each. At most
// 10 GiB of pooled worktrees, as much as the default budget of the kept
// trash, which the pool shares (trash.max_bytes): a pool.size set too
// large for the repository stops at a bound the user sees, rather than
// filling the disk. No ignored path is kept.
const (
	DefaultPoolSize        = 0
	DefaultPoolMaxBytes    = "10GiB"
	DefaultPoolKeepIgnored = ""
)

// PoolPolicyKeys lists the pool's policy keys.
func PoolPolicyKeys() []string {
	return []string{PolicyPoolSize, PolicyPoolMaxBytes, PolicyPoolKeepIgnored}
}

func isPoolKey(key string) bool {
	for _, k := range PoolPolicyKeys() {
		if k == key {
			return true
		}
	}
	return false
}

func poolDefault(key string) string {
	switch key {
	case PolicyPoolSize:
		return strconv.Itoa(DefaultPoolSize)
	case PolicyPoolMaxBytes:
		return DefaultPoolMaxBytes
	}
	return DefaultPoolKeepIgnored
}

// checkPoolValue says why value is not one a pool key takes ("" when it
// is).
func checkPoolValue(key, value string) string {
	switch key {
	case PolicyPoolSize:
		if n, err := strconv.Atoi(strings.TrimSpace(value)); err != nil || n < 0 || n > maxPoolSize || strings.TrimSpace(value) != value {
			return fmt.Sprintf("%s takes a number of worktrees from 0 to %d, not %q", key, maxPoolSize, value)
		}
	case PolicyPoolMaxBytes:
		if _, err := ParseBytes(value); err != nil {
			return fmt.Sprintf("%s takes a size such as 10GiB, 500MB or 0 (no pool), not %q", key, value)
		}
	case PolicyPoolKeepIgnored:
		if _, err := parseKeepIgnored(value); err != nil {
			return err.Error()
		}
	default:
		return fmt.Sprintf("unknown policy key %q", key)
	}
	return ""
}

// poolPolicyValue reads a pool key's text, with where it comes from
// (SourceDefault or SourceRepository). A record that cannot be read, or
// holds a value this majlis does not take, refuses, naming it.
func (p *Provider) poolPolicyValue(key string) (string, string, error) {
	var rec policyRecord
	path := filepath.Join(p.policyDir(), key+".json")
	_, err := readRecord(path, "policy", formatPolicy, &rec)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return poolDefault(key), SourceDefault, nil
	case err != nil:
		var pe *Error
		if errors.As(err, &pe) && pe.Hint == "" {
			pe.Hint = "set the policy key " + key + " again"
		}
		return "", "", err
	case rec.Key != key:
		return "", "", &Error{Op: "policy", Path: path, Err: ErrMalformed, Reason: fmt.Sprintf("the record names %q", rec.Key),
			Hint: "set the policy key " + key + " again"}
	}
	return rec.Value, SourceRepository, nil
}

// PoolSize reads pool.size, with where it comes from (SourceDefault or
// SourceRepository). A record that cannot be read refuses, naming it.
func (p *Provider) PoolSize() (int, string, error) {
	v, src, err := p.poolPolicyValue(PolicyPoolSize)
	if err != nil {
		return 0, "", err
	}
	n, _ := strconv.Atoi(v)
	return n, src, nil
}

// PoolMaxBytes reads pool.max_bytes: the most all pooled worktrees may
// take together, with its text and where it comes from.
func (p *Provider) PoolMaxBytes() (int64, string, string, error) {
	v, src, err := p.poolPolicyValue(PolicyPoolMaxBytes)
	if err != nil {
		return 0, "", "", err
	}
	n, _ := ParseBytes(v)
	return n, v, src, nil
}

// PoolKeepIgnored reads pool.keep_ignored: the paths, relative to a
// worktree's root and slash-separated, under which a pooled worktree may
// hold files git ignores (an empty list when the key is off, its
// default). Each is an exact path checked by parseKeepIgnored: no
// pattern, no "..", nothing absolute, nothing in ".git", no ".env". A
// record that cannot be read refuses (ErrMalformed, naming the file):
// nothing ignored is kept on a guess.
func (p *Provider) PoolKeepIgnored() ([]string, error) {
	v, _, err := p.poolPolicyValue(PolicyPoolKeepIgnored)
	if err != nil {
		return nil, err
	}
	return parseKeepIgnored(v)
}

// setPoolPolicy sets a pool key in its own record, written whole. A value
// the key does not take refuses before anything is written.
func (p *Provider) setPoolPolicy(key, value string) error {
	if why := checkPoolValue(key, value); why != "" {
		return &Error{Op: "policy", Err: ErrInvalidArgument, Reason: why}
	}
	if key == PolicyPoolKeepIgnored {
		names, _ := parseKeepIgnored(value)
		value = strings.Join(names, ",")
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
