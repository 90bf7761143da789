package gitops

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestHooksDir(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	main.Mkdir("sub")
	linked := main.NewWorktree("linked")
	linked.Mkdir("deep/er")
	common := filepath.Join(main.Dir, ".git", "hooks")
	home, _ := os.UserHomeDir()

	tests := []struct {
		name      string
		hooksPath string // core.hooksPath; "" leaves it unset
		dir       string
		want      string
	}{
		{"main worktree", "", main.Dir, common},
		{"main subdirectory", "", main.Path("sub"), common},
		{"linked worktree shares the common hooks", "", linked.Path("deep/er"), common},
		{"absolute core.hooksPath", "/srv/hooks", linked.Dir, "/srv/hooks"},
		{"relative core.hooksPath, from the main worktree", ".githooks", main.Path("sub"), main.Path(".githooks")},
		{"relative core.hooksPath is per worktree", ".githooks", linked.Path("deep/er"), linked.Path(".githooks")},
		{"core.hooksPath in HOME", "~/hooks", main.Dir, filepath.Join(home, "hooks")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hooksPath == "" {
				main.TryGit("config", "--local", "--unset", "core.hooksPath")
			} else {
				main.Config("core.hooksPath", tt.hooksPath)
			}
			got, err := HooksDir(ctx, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("HooksDir(%s) = %s, want %s", tt.dir, got, tt.want)
			}
		})
	}
}

func TestHooksDirOutsideARepository(t *testing.T) {
	t.Parallel()
	_, err := HooksDir(ctx, fixtures.TempDir(t))
	if !errorsIs(err, ErrNotARepository) {
		t.Fatalf("HooksDir outside a repository: %v, want ErrNotARepository", err)
	}
}
