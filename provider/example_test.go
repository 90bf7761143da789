package provider_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// exampleRepository makes a git repository with one commit in a fresh
// temporary folder, registers it with majlis (provider.Init), and
// returns its main worktree and a function that removes it all.
func exampleRepository() (string, func()) {
	tmp, err := os.MkdirTemp("", "majlis-example-")
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join(tmp, "app")
	git := func(args ...string) {
		args = append([]string{"-c", "user.name=Example", "-c", "user.email=example@majlis.invalid", "-c", "init.defaultBranch=main"}, args...)
		cmd := exec.Command("git", args...)
		cmd.Dir = tmp
		if _, err := os.Stat(dir); err == nil {
			cmd.Dir = dir
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	git("add", "README.md")
	git("commit", "-q", "-m", "first")
	if _, err := provider.Init(context.Background(), dir, provider.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(tmp) }
}

// Open a registered repository from any of its worktrees. The options are
// what a program tunes; the majlis command fills them from its
// environment (MAJLIS_RESERVATION_TTL, MAJLIS_HOST_LEDGER).
func ExampleOpen() {
	dir, cleanup := exampleRepository()
	defer cleanup()

	p, err := provider.Open(context.Background(), dir, provider.Options{
		ReservationTTL: 30 * time.Second,                    // a crashed reclaim blocks its binding this long
		Logger:         slog.New(slog.DiscardHandler),       // or a handler of the program's log
		HostLedger:     filepath.Join(dir, "..", "host.db"), // host singletons shared by this user's repositories
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(filepath.Base(p.StateDir()))
	// Output: majlis
}

// Allocate gives a task its own worktree, on a new branch, after
// publishing the claim that lets every later reclaim find it.
func ExampleProvider_Allocate() {
	dir, cleanup := exampleRepository()
	defer cleanup()
	ctx := context.Background()
	p, err := provider.Open(ctx, dir, provider.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	ws, err := p.Allocate(ctx, provider.AllocateOptions{Binding: "T-14", Intent: []string{"src/auth/**"}})
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Dir(dir), ws.Path)
	fmt.Println(ws.Binding, ws.State, ws.Branch)
	fmt.Println(rel)
	fmt.Println(ws.Intent)

	// One live workspace per binding.
	_, err = p.Allocate(ctx, provider.AllocateOptions{Binding: "T-14"})
	fmt.Println(errors.Is(err, provider.ErrBindingLive))
	// Output:
	// T-14 active majlis/T-14
	// app.workspaces/T-14
	// [src/auth/**]
	// true
}

// Salvage keeps a workspace's uncommitted work on a salvage ref, without
// touching the workspace.
func ExampleProvider_Salvage() {
	dir, cleanup := exampleRepository()
	defer cleanup()
	ctx := context.Background()
	p, err := provider.Open(ctx, dir, provider.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ws, err := p.Allocate(ctx, provider.AllocateOptions{Binding: "T-14"})
	if err != nil {
		log.Fatal(err)
	}
	// The task edits a tracked file and creates another.
	os.WriteFile(filepath.Join(ws.Path, "README.md"), []byte("# app, edited\n"), 0o644)
	os.WriteFile(filepath.Join(ws.Path, "notes.txt"), []byte("half done\n"), 0o644)

	s, err := p.Salvage(ctx, "T-14", "before lunch", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*s.Ref)
	fmt.Printf("%d files: %d added, %d modified\n", s.Files, s.Counts.Added, s.Counts.Modified)
	b, _ := os.ReadFile(filepath.Join(ws.Path, "notes.txt"))
	fmt.Printf("still in the workspace: %s", b)
	// Output:
	// refs/majlis/salvage/T-14/1
	// 2 files: 1 added, 1 modified
	// still in the workspace: half done
}

// A reclaim is previewed first; confirming the preview's digest lets it
// proceed only if nothing changed since. It salvages and moves the
// workspace into a trash folder, kept for the undo window (the policy's
// trash.keep, a day by default: RestoreFromTrash undoes the reclaim); a
// purge (PurgeDue) deletes it afterwards. The branch is kept.
func ExampleProvider_Reclaim() {
	dir, cleanup := exampleRepository()
	defer cleanup()
	ctx := context.Background()
	p, err := provider.Open(ctx, dir, provider.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ws, err := p.Allocate(ctx, provider.AllocateOptions{Binding: "T-14"})
	if err != nil {
		log.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws.Path, "notes.txt"), []byte("half done\n"), 0o644)

	pv, err := p.PreviewReclaim(ctx, "T-14")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range pv.Steps {
		fmt.Println("will", s.Name)
	}

	res, err := p.Reclaim(ctx, provider.ReclaimOptions{Binding: "T-14", Confirm: pv.Digest})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("done", res.StepsDone)
	fmt.Println("work kept on", *res.SalvageRef, "and branch", res.Branch)
	_, err = os.Stat(ws.Path)
	fmt.Println("workspace removed:", res.Removed && os.IsNotExist(err))
	// Output:
	// will salvage
	// will move
	// will resalvage
	// will delete-trash
	// done [salvage move keep-trash]
	// work kept on refs/majlis/salvage/T-14/1 and branch majlis/T-14
	// workspace removed: true
}
