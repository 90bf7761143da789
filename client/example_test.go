package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/wire"
)

// An orchestrator allocates a workspace for a task, lets an agent work in
// it, keeps the agent's unfinished work, and takes the workspace back.
func Example() {
	ctx := context.Background()
	repo := exampleRepo() // a registered repository ('majlis init')
	defer os.RemoveAll(filepath.Dir(repo))
	defer stopServer(repo)

	// Find the repository's server, starting one when none runs.
	c, err := client.New(ctx, client.Options{Dir: repo, Start: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.Allocate(ctx, wire.AllocateRequest{Binding: "T-14"})
	if err != nil {
		log.Fatal(err)
	}
	ws := res.Workspace
	fmt.Println("allocated", ws.Binding, "on branch", ws.Branch)

	// The agent works in ws.Path, and stops halfway.
	if err := os.WriteFile(filepath.Join(ws.Path, "notes.txt"), []byte("half done\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	sv, err := c.Salvage(ctx, wire.SalvageRequest{Binding: "T-14", Message: "checkpoint"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("salvaged", sv.Files, "file to", *sv.Ref)

	// Take the workspace back: preview, then confirm that very preview.
	if _, err := c.Release(ctx, wire.ReleaseRequest{Binding: "T-14"}); err != nil {
		log.Fatal(err)
	}
	pv, err := c.PreviewReclaim(ctx, "T-14")
	if err != nil {
		log.Fatal(err)
	}
	rc, err := c.Reclaim(ctx, wire.ReclaimRequest{Binding: "T-14", Confirm: pv.Digest})
	if err != nil {
		log.Fatal(err)
	}
	_, statErr := os.Stat(ws.Path)
	fmt.Println("removed:", rc.Removed, os.IsNotExist(statErr), "branch kept:", rc.Branch)
	fmt.Println("uncommitted work kept on", *rc.SalvageRef)
	// Output:
	// allocated T-14 on branch majlis/T-14
	// salvaged 1 file to refs/majlis/salvage/T-14/1
	// removed: true true branch kept: majlis/T-14
	// uncommitted work kept on refs/majlis/salvage/T-14/2
}

// exampleRepo makes a registered repository with one commit.
func exampleRepo() string {
	top, err := os.MkdirTemp("", "majlis-example-")
	if err != nil {
		log.Fatal(err)
	}
	repo := filepath.Join(top, "app")
	for _, argv := range [][]string{
		{"git", "init", "--quiet", repo},
		{"git", "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "start"},
		{"majlis", "init", "--repo", repo},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			log.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	return repo
}
