package client_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/serverctl"
)

// bin is the majlis binary these tests run (fixtures.BuildBinary), put
// first in $PATH: the client starts servers with it, as it would with an
// installed majlis.
var bin string

func TestMain(m *testing.M) {
	home, err := fixtures.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fixtures:", err)
		os.Exit(1)
	}
	built, err := fixtures.BuildBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The client starts 'majlis' from $PATH, as it would an installed one.
	dir := filepath.Join(home, "path")
	bin = filepath.Join(dir, "majlis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Symlink(built, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// newRepo is a registered repository of ten files whose server is
// stopped when the test ends.
func newRepo(t testing.TB) string {
	t.Helper()
	r := fixtures.NewRepo(t)
	for i := range 10 {
		r.WriteFile(fmt.Sprintf("src/f%d.go", i), "package src\n")
	}
	r.Commit("ten files")
	if out, err := exec.Command(bin, "init", "--repo", r.Dir).CombinedOutput(); err != nil {
		t.Fatalf("majlis init: %v\n%s", err, out)
	}
	t.Cleanup(func() { stopServer(r.Dir) })
	return r.Dir
}

// stopServer stops the repository's server, if one runs.
func stopServer(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if t, err := serverctl.Locate(dir); err == nil {
		_, _ = serverctl.Stop(ctx, t, serverctl.StopOptions{Force: true, Grace: time.Second})
	}
}
