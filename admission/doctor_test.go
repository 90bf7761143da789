package admission

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CheckLedger finds what doctor must report, and changes no byte of a
// ledger it refuses.
func TestCheckLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := t.Context()
	absent := filepath.Join(dir, "absent.db")
	if found, err := CheckLedger(ctx, absent, "repository"); found || err != nil {
		t.Errorf("absent ledger: found %v, %v", found, err)
	}
	if _, err := os.Lstat(absent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checking an absent ledger created it: %v", err)
	}

	good := filepath.Join(dir, "admission.db")
	l, err := openLedger(ctx, good, kindRepository, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.close()
	if found, err := CheckLedger(ctx, good, "repository"); !found || err != nil {
		t.Errorf("good ledger: found %v, %v", found, err)
	}
	if _, err := CheckLedger(ctx, good, "host"); !errors.Is(err, ErrMalformed) {
		t.Errorf("a repository ledger checked as a host ledger: %v, want ErrMalformed", err)
	}

	for name, content := range map[string][]byte{
		"garbage":   []byte("this is not a database\n"),
		"truncated": append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 90)...),
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "admission.db")
			if err := os.WriteFile(f, content, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := CheckLedger(ctx, f, "repository")
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %v, want ErrMalformed", name, err)
			}
			if b, _ := os.ReadFile(f); sha256.Sum256(b) != sha256.Sum256(content) {
				t.Errorf("%s: the ledger was changed", name)
			}
		})
	}
}
