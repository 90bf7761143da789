package gitops

import (
	"context"
	"path/filepath"
	"strings"
)

// HooksDir returns the absolute directory where git looks for the hooks of
// the worktree containing dir, as git itself resolves it: core.hooksPath
// when set (a relative value is taken from the worktree's top level, "~/"
// from HOME), else the hooks folder of the repository's common git
// directory, shared by every worktree. The directory may not exist.
func HooksDir(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	res, err := Run(ctx, abs, Cmd{ReadOnly: true}, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	out, ok := strings.CutSuffix(string(res.Stdout), "\n")
	if !ok || out == "" || strings.Contains(out, "\n") || !filepath.IsAbs(out) {
		return "", Unexpected("git rev-parse --git-path hooks", "want one absolute path, got %q", res.Stdout)
	}
	return filepath.Clean(out), nil
}
