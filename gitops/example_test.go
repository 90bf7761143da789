package gitops_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
)

// exampleRepo makes a repository with one commit and returns its path.
// (Tests use package fixtures, which needs a *testing.T.)
func exampleRepo() string {
	dir, err := os.MkdirTemp("", "gitops-example-")
	if err != nil {
		log.Fatal(err)
	}
	run := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			log.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644)
	run("add", "README.md")
	run("commit", "--quiet", "-m", "initial")
	return dir
}

// Salvaging a workspace: snapshot its uncommitted work, store the commit
// under a create-only ref, and only then do anything destructive.
func ExampleSnapshot() {
	ctx := context.Background()
	repo := exampleRepo()
	defer os.RemoveAll(repo)

	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello, edited\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("untracked work\n"), 0o644)

	res, err := gitops.Snapshot(ctx, repo, "majlis: salvage of T-14")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("clean: %v, modified: %d, added: %d\n", res.Clean, res.Files.Modified, res.Files.Added)

	const ref = "refs/majlis/salvage/T-14/1"
	if err := gitops.UpdateRefCreate(ctx, repo, ref, res.Commit); err != nil {
		log.Fatal(err)
	}
	// A second salvage to the same ref is refused, never overwritten.
	err = gitops.UpdateRefCreate(ctx, repo, ref, res.Parent)
	fmt.Println(errors.Is(err, gitops.ErrRefExists))

	// The worktree is untouched: status still shows the work.
	st, err := gitops.ReadStatus(ctx, repo, gitops.StatusOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", st.Counts())
	// Output:
	// clean: false, modified: 1, added: 1
	// true
	// {Modified:1 Added:0 Deleted:0 Renamed:0 Copied:0 TypeChanged:0 Untracked:1 Ignored:0 Conflicted:0 Staged:0}
}

func ExampleListWorktrees() {
	ctx := context.Background()
	repo := exampleRepo()
	defer os.RemoveAll(repo)
	r, err := gitops.OpenReader(ctx, repo)
	if err != nil {
		log.Fatal(err)
	}
	head, err := r.ResolveCommit(ctx, "HEAD")
	if err != nil {
		log.Fatal(err)
	}
	ws := filepath.Join(repo+".workspaces", "T-14")
	defer os.RemoveAll(repo + ".workspaces")
	if err := gitops.AddWorktree(ctx, repo, gitops.AddOptions{Path: ws, Branch: "majlis/T-14", Commit: head, LockReason: "majlis workspace T-14"}); err != nil {
		log.Fatal(err)
	}
	list, err := gitops.ListWorktrees(ctx, repo)
	if err != nil {
		log.Fatal(err)
	}
	for i, w := range list {
		name := filepath.Base(w.Path)
		if i == 0 {
			name = "(main worktree)" // git always lists it first
		}
		fmt.Printf("%s %s locked=%v %q\n", name, w.Branch, w.Locked, w.LockReason)
	}
	// Output:
	// (main worktree) refs/heads/main locked=false ""
	// T-14 refs/heads/majlis/T-14 locked=true "majlis workspace T-14"
}
