package gitops

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// With WithProgress, a worktree add passes git's progress meter on, and
// only it: git's other messages stay out of it. Without, nothing is shown.
func TestAddWorktreeProgress(t *testing.T) {
	t.Setenv("GIT_PROGRESS_DELAY", "0") // git shows its meter at once
	r := fixtures.NewRepo(t)
	for i := range 50 {
		r.WriteFile(fmt.Sprintf("f%d.txt", i), "x\n")
	}
	r.Git("add", ".")
	r.Git("commit", "-q", "-m", "files")
	r.Git("branch", "existing")
	dir := fixtures.TempDir(t)

	var shown bytes.Buffer
	ctx := WithProgress(t.Context(), &shown)
	if err := AddWorktree(ctx, r.Dir, AddOptions{Path: filepath.Join(dir, "a"), Branch: "new", Commit: r.Head(), LockReason: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := AddWorktree(ctx, r.Dir, AddOptions{Path: filepath.Join(dir, "b"), Mode: ExistingBranch, Branch: "existing", LockReason: "test"}); err != nil {
		t.Fatal(err)
	}
	got := shown.String()
	if len(regexp.MustCompile(`Updating files: 100% \([0-9]+/[0-9]+\), done\.\n`).FindAllString(got, -1)) != 2 {
		t.Errorf("progress shown: %q; want git's meter reaching 100%% twice", got)
	}
	for _, line := range strings.FieldsFunc(got, func(r rune) bool { return r == '\r' || r == '\n' }) {
		if !progressLine.MatchString(line) {
			t.Errorf("progress shown has a line that is no meter: %q", line)
		}
	}

	// Without: nothing, and git's error still classified.
	if err := AddWorktree(t.Context(), r.Dir, AddOptions{Path: filepath.Join(dir, "c"), Branch: "other", Commit: r.Head(), LockReason: "test"}); err != nil {
		t.Fatal(err)
	}
	shown.Reset()
	err := AddWorktree(ctx, r.Dir, AddOptions{Path: filepath.Join(dir, "a"), Branch: "again", Commit: r.Head(), LockReason: "test"})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("AddWorktree onto an existing path with progress: %v", err)
	}
}

func TestProgressSplit(t *testing.T) {
	t.Parallel()
	var meter, rest bytes.Buffer
	s := &progressSplit{progress: &meter, rest: &rest}
	for _, chunk := range []string{"Preparing worktree (new branch 'x')\nUpdat", "ing files:  50% (1/2)\rUpdating files: 100% (2/2)\r",
		"Updating files: 100% (2/2), done.\n", "fatal: something"} {
		s.Write([]byte(chunk))
	}
	s.flush()
	if want := "Updating files:  50% (1/2)\rUpdating files: 100% (2/2)\rUpdating files: 100% (2/2), done.\n"; meter.String() != want {
		t.Errorf("meter got %q, want %q", meter.String(), want)
	}
	if want := "Preparing worktree (new branch 'x')\nfatal: something"; rest.String() != want {
		t.Errorf("rest got %q, want %q", rest.String(), want)
	}
}
