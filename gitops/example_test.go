package gitops_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

func ExampleListWorktrees() {
	ctx := context.Background()
	repo := fixtures.ExampleRepo()
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
