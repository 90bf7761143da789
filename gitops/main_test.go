package gitops

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// statusBytes returns `git status --porcelain=v2 -z` as a user would see
// it, without letting git refresh the index (so that reading it does not
// change the index bytes the tests compare).
func statusBytes(r *fixtures.Repo) string {
	r.T.Helper()
	return r.GitEnv([]string{"GIT_OPTIONAL_LOCKS=0"}, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignored")
}

// readIndex returns the bytes of the worktree's index file.
func readIndex(r *fixtures.Repo) []byte {
	r.T.Helper()
	b, err := os.ReadFile(filepath.Join(r.GitDir(), "index"))
	if err != nil {
		r.T.Fatal(err)
	}
	return b
}

// gitError asserts that err is an *Error wrapping want and returns it.
func gitError(t *testing.T, err, want error) *Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *gitops.Error", err, err)
	}
	return e
}

// sameBytes fails the test if two snapshots of a file differ.
func sameBytes(t *testing.T, what string, before, after []byte) {
	t.Helper()
	if !bytes.Equal(before, after) {
		t.Errorf("%s changed:\nbefore %q\nafter  %q", what, trunc(before), trunc(after))
	}
}

func trunc(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

var ctx = context.Background()

// lsTree lists a tree-ish recursively as path -> "mode type id".
func lsTree(r *fixtures.Repo, treeish string) map[string]string {
	r.T.Helper()
	m := map[string]string{}
	for _, rec := range strings.Split(r.Git("ls-tree", "-r", "-z", "--end-of-options", treeish), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			r.T.Fatalf("ls-tree record %q", rec)
		}
		m[path] = meta
	}
	return m
}

// blob returns the content of path in treeish.
func blob(r *fixtures.Repo, treeish, path string) string {
	r.T.Helper()
	return r.Git("cat-file", "blob", treeish+":"+path)
}
