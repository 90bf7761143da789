package provider

// The trash's policy: how long a reclaim keeps its workspace in its trash
// folder (the undo window), and the bounds beyond which the oldest kept
// trash goes early: a disk budget for all of a repository's kept trash,
// and a floor of free space on the file system that holds it. Each key
// lives in its own sealed record in the state folder (policy/<key>.json),
// written whole by `majlis policy set`, so that two settings of different
// keys never undo each other; a key never set has its default.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
)

// Trash policy keys.
const (
	// PolicyTrashKeep is how long a reclaim keeps the workspace in its
	// trash folder (a Go duration); 0 deletes it at once.
	PolicyTrashKeep = "trash.keep"
	// PolicyTrashMaxBytes bounds the size of all the repository's kept
	// trash together: beyond it the oldest goes first.
	PolicyTrashMaxBytes = "trash.max_bytes"
	// PolicyTrashMinFree is the free space the kept trash never eats
	// into, on the file system that holds it: a size ("20GiB") or a share
	// of the file system ("10%"). Below it the oldest goes first.
	PolicyTrashMinFree = "trash.min_free"
)

// The defaults. A day of undo; at most 10 GiB of kept trash per
// repository; and never less than a tenth of the disk free because of
// it. A laptop's disk can then never fill up because of kept trash: a
// reclaim only renames (it takes no new space), and whatever the trash
// holds goes, oldest first, as soon as the free space falls below the
// floor or the trash grows past the budget.
const (
	DefaultTrashKeep     = 24 * time.Hour
	DefaultTrashMaxBytes = "10GiB"
	DefaultTrashMinFree  = "10%"
)

// Where a policy value comes from.
const (
	SourceDefault    = "default"    // never set
	SourceRepository = "repository" // set with majlis policy set
)

const formatPolicy = "majlis.policy/1"

// TrashPolicyKeys lists the trash's policy keys.
func TrashPolicyKeys() []string {
	return []string{PolicyTrashKeep, PolicyTrashMaxBytes, PolicyTrashMinFree}
}

// A TrashPolicy is the trash's policy of a repository, parsed, with the
// text of each value and where it comes from.
type TrashPolicy struct {
	Keep     time.Duration
	MaxBytes int64
	// MinFree is the floor of free space: MinFreeBytes, or when
	// MinFreePercent is positive that share of the file system.
	MinFreeBytes   int64
	MinFreePercent float64
	// Values and Sources map each key to its text and its source
	// (SourceDefault or SourceRepository).
	Values  map[string]string
	Sources map[string]string
}

// floor returns the free-space floor on a file system of total bytes.
func (tp TrashPolicy) floor(total int64) int64 {
	if tp.MinFreePercent > 0 {
		return int64(float64(total) * tp.MinFreePercent / 100)
	}
	return tp.MinFreeBytes
}

// policyRecord is one key's record.
type policyRecord struct {
	Format string    `json:"format"`
	Key    string    `json:"key"`
	Value  string    `json:"value"`
	SetAt  time.Time `json:"set_at"`
}

func (r *policyRecord) check() error {
	if r.SetAt.IsZero() {
		return errors.New("incomplete policy record")
	}
	if why := checkTrashValue(r.Key, r.Value); why != "" {
		return errors.New(why)
	}
	return nil
}

func (p *Provider) policyDir() string { return filepath.Join(p.stateDir, "policy") }

// TrashPolicy reads the trash's policy. A record that cannot be read or
// holds what this majlis does not know refuses (ErrMalformed, naming the
// file): a reclaim never guesses how long to keep a workspace.
func (p *Provider) TrashPolicy() (TrashPolicy, error) {
	tp := TrashPolicy{Values: map[string]string{}, Sources: map[string]string{}}
	for _, k := range TrashPolicyKeys() {
		v, src := trashDefault(k), SourceDefault
		var rec policyRecord
		path := filepath.Join(p.policyDir(), k+".json")
		if _, err := readRecord(path, "policy", formatPolicy, &rec); err == nil {
			if rec.Key != k {
				return tp, &Error{Op: "policy", Path: path, Err: ErrMalformed, Reason: fmt.Sprintf("the record names %q", rec.Key),
					Hint: "set the policy key " + k + " again"}
			}
			v, src = rec.Value, SourceRepository
		} else if !errors.Is(err, os.ErrNotExist) {
			var pe *Error
			if errors.As(err, &pe) && pe.Hint == "" {
				pe.Hint = "set the policy key " + k + " again"
			}
			return tp, err
		}
		tp.Values[k], tp.Sources[k] = v, src
		switch k {
		case PolicyTrashKeep:
			tp.Keep, _ = time.ParseDuration(v)
		case PolicyTrashMaxBytes:
			tp.MaxBytes, _ = ParseBytes(v)
		case PolicyTrashMinFree:
			tp.MinFreeBytes, tp.MinFreePercent, _ = parseFloor(v)
		}
	}
	return tp, nil
}

// SetTrashPolicy sets the trash's policy key to value, in its own record
// written whole, and returns the policy that results. An unknown key or a
// value the key does not take refuses (ErrInvalidArgument).
func (p *Provider) SetTrashPolicy(key, value string) (TrashPolicy, error) {
	if !isTrashKey(key) {
		return TrashPolicy{}, &Error{Op: "policy", Err: ErrInvalidArgument, Reason: fmt.Sprintf("unknown policy key %q", key),
			Hint: "keys: " + strings.Join(TrashPolicyKeys(), ", ")}
	}
	if why := checkTrashValue(key, value); why != "" {
		return TrashPolicy{}, &Error{Op: "policy", Err: ErrInvalidArgument, Reason: why}
	}
	data, _, err := seal("policy", &policyRecord{Format: formatPolicy, Key: key, Value: value, SetAt: p.now().UTC()})
	if err != nil {
		return TrashPolicy{}, err
	}
	if err := durable.MkdirAll(p.policyDir(), 0o755); err != nil {
		return TrashPolicy{}, err
	}
	if err := durable.Replace(p.policyDir(), key+".json", data); err != nil {
		return TrashPolicy{}, err
	}
	return p.TrashPolicy()
}

func isTrashKey(key string) bool {
	for _, k := range TrashPolicyKeys() {
		if k == key {
			return true
		}
	}
	return false
}

func trashDefault(key string) string {
	switch key {
	case PolicyTrashKeep:
		return "24h"
	case PolicyTrashMaxBytes:
		return DefaultTrashMaxBytes
	}
	return DefaultTrashMinFree
}

// checkTrashValue says why value is not one key takes ("" when it is).
func checkTrashValue(key, value string) string {
	switch key {
	case PolicyTrashKeep:
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Sprintf("%s takes a duration such as 24h, 30m or 0 (delete at once), not %q", key, value)
		}
	case PolicyTrashMaxBytes:
		if _, err := ParseBytes(value); err != nil {
			return fmt.Sprintf("%s takes a size such as 10GiB, 500MB or 0, not %q", key, value)
		}
	case PolicyTrashMinFree:
		if _, _, err := parseFloor(value); err != nil {
			return fmt.Sprintf("%s takes a size such as 20GiB or a share of the disk such as 10%%, not %q", key, value)
		}
	default:
		return checkPoolValue(key, value) // poolpolicy.go
	}
	return ""
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseBytes parses a size: a whole number of bytes, or a number with a
// unit (kB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB, or K, M, G,
// T: powers of 1024), case aside.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok || i == 0 {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || n < 0 || n*float64(unit) > 1<<62 {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	return int64(n * float64(unit)), nil
}

// parseFloor parses trash.min_free: a size, or a percentage (0 to 100).
func parseFloor(s string) (bytes int64, percent float64, err error) {
	if num, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		pc, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || pc < 0 || pc > 100 {
			return 0, 0, fmt.Errorf("not a percentage: %q", s)
		}
		return 0, pc, nil
	}
	b, err := ParseBytes(s)
	return b, 0, err
}
