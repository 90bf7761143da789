package pathid

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tempDir returns a fresh temporary directory by its physical path, so that
// expectations are not thrown off by a symlinked TMPDIR.
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// layout creates entries under root. A key ending in "/" is a directory;
// "name -> target" is a symlink; anything else a file holding the value.
func layout(t testing.TB, root string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		if name, target, ok := strings.Cut(e, " -> "); ok {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(root, e)
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(e), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkErr fails the test unless err matches every one of wants (none:
// err must be nil).
func checkErr(t *testing.T, err error, wants ...error) {
	t.Helper()
	if len(wants) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %v", wants)
	}
	for _, w := range wants {
		if !errors.Is(err, w) {
			t.Fatalf("error %q does not match %v", err, w)
		}
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %q is a %T, not a *pathid.Error", err, err)
	}
}
