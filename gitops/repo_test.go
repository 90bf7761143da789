package gitops

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestDiscover(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	main.Mkdir("sub/deeper")
	linked := main.AddWorktree(filepath.Join(fixtures.TempDir(t), "linked worktree"), "feature")
	linked.Mkdir("src")
	common := filepath.Join(main.Dir, ".git")
	linkedGitDir := filepath.Join(common, "worktrees", "linked-worktree")

	inMain := Repo{Toplevel: main.Dir, GitDir: common, CommonDir: common, MainWorktree: main.Dir}
	inLinked := Repo{Toplevel: linked.Dir, GitDir: linkedGitDir, CommonDir: common, MainWorktree: main.Dir}
	tests := []struct {
		name   string
		path   string
		want   Repo
		linked bool
	}{
		{"main top level", main.Dir, inMain, false},
		{"main subdirectory", main.Path("sub/deeper"), inMain, false},
		{"main relative path", relTo(t, main.Path("sub")), inMain, false},
		{"linked top level", linked.Dir, inLinked, true},
		{"linked subdirectory", linked.Path("src"), inLinked, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Discover(ctx, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Discover(%q) mismatch (-want +got):\n%s", tt.path, diff)
			}
			if got.Linked() != tt.linked {
				t.Errorf("Linked() = %v, want %v", got.Linked(), tt.linked)
			}
		})
	}
}

// relTo returns path relative to the working directory.
func relTo(t *testing.T, path string) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func TestDiscoverFailures(t *testing.T) {
	t.Parallel()
	outside := fixtures.TempDir(t)
	bare := filepath.Join(fixtures.TempDir(t), "bare.git")
	fixtures.Git(t, outside, "init", "--quiet", "--bare", bare)
	broken := fixtures.TempDir(t)
	if err := os.WriteFile(filepath.Join(broken, ".git"), []byte("gitdir: /nonexistent/worktrees/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want error
	}{
		{"outside any repository", outside, ErrNotARepository},
		{"dangling .git file", broken, ErrNotARepository},
		{"bare repository", bare, ErrNotAWorkTree},
		{"inside a git directory", filepath.Join(bare, "refs"), ErrNotAWorkTree},
		{"missing directory", filepath.Join(outside, "missing"), fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Discover(ctx, tt.path)
			e := gitError(t, err, tt.want)
			if e.ExitCode != 128 || e.Stderr == "" {
				t.Errorf("error %+v: want exit code 128 and git's stderr", e)
			}
		})
	}
}

func TestParseDiscover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		out  string
		want Repo
		ok   bool
	}{
		{"main", "/r\n/r/.git\n/r/.git\n", Repo{"/r", "/r/.git", "/r/.git", "/r"}, true},
		{"linked", "/w\n/r/.git/worktrees/w\n/r/.git\n", Repo{"/w", "/r/.git/worktrees/w", "/r/.git", "/r"}, true},
		{"separate git dir, linked", "/w\n/g/worktrees/w\n/g\n", Repo{"/w", "/g/worktrees/w", "/g", ""}, true},
		{"uncleaned", "/r/\n/r/./.git\n/r/.git/\n", Repo{"/r", "/r/.git", "/r/.git", "/r"}, true},
		{"newline in a path", "/r\nx\n/r/.git\n/r/.git\n", Repo{}, false},
		{"relative", "r\n.git\n.git\n", Repo{}, false},
		{"unterminated", "/r\n/r/.git\n/r/.git", Repo{}, false},
		{"empty", "", Repo{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDiscover([]byte(tt.out))
			if (err == nil) != tt.ok {
				t.Fatalf("parseDiscover(%q) error = %v, want ok %v", tt.out, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
