package salvage_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
)

// Salvaging a workspace: snapshot its uncommitted work, store the commit
// under a create-only ref, and only then do anything destructive.
func ExampleSnapshot() {
	ctx := context.Background()
	repo := fixtures.ExampleRepo()
	defer os.RemoveAll(repo)

	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello, edited\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("untracked work\n"), 0o644)

	res, err := salvage.Snapshot(ctx, repo, "majlis: salvage of T-14")
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
