package registration_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/registration"
	"github.com/majlis-dev/majlis/provider"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// Find finds what provider.Open finds, from the main worktree, a folder
// in it and a linked worktree, without git; it refuses a repository not
// initialized, a folder in no repository, and a copy of a registered
// repository (its registration names the original).
func TestFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := fixtures.NewRepo(t)
	r.WriteFile("src/a.go", "package src\n")
	r.Commit("one file")
	if _, _, err := registration.Find(r.Dir); !errors.Is(err, registration.ErrNotInitialized) {
		t.Fatalf("before init: %v, want not initialized", err)
	}
	repo, err := provider.Init(ctx, r.Dir, provider.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	r.AddWorktree(wt, "side")
	for _, dir := range []string{r.Dir, filepath.Join(r.Dir, "src"), wt} {
		state, reg, err := registration.Find(dir)
		if err != nil {
			t.Fatalf("from %s: %v", dir, err)
		}
		if reg.ID != repo.ID || state != repo.StateDir || reg.CommonDir != repo.CommonDir {
			t.Errorf("from %s: %s %+v; want %s %+v", dir, state, reg, repo.StateDir, repo)
		}
	}
	if _, _, err := registration.Find(t.TempDir()); !errors.Is(err, registration.ErrNotRepository) {
		t.Errorf("outside a repository: %v", err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", r.Dir, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if _, _, err := registration.Find(cp); !errors.Is(err, registration.ErrMoved) {
		t.Errorf("a copy of the repository: %v, want identity drift", err)
	}
	// A registration that is no record refuses, naming the file.
	name := filepath.Join(repo.StateDir, registration.FileName)
	if err := os.WriteFile(name, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var re *registration.Error
	if _, _, err := registration.Find(r.Dir); !errors.Is(err, registration.ErrMalformed) || !errors.As(err, &re) || re.Path != name {
		t.Errorf("a malformed registration: %v", err)
	}
}

// FuzzDecode: no input makes Decode panic, and what it accepts passes
// Check.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("{}"))
	f.Add([]byte(""))
	f.Add([]byte(`{"kind":"repository","format":"majlis.repository/1","object":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := registration.Decode(data)
		if err == nil {
			if cerr := reg.Check(); cerr != nil {
				t.Fatalf("accepted %q: %v", data, cerr)
			}
		}
	})
}
