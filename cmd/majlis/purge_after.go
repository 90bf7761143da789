package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/provider"
)

// purgeAfter starts, once a reclaim's result is written, a detached
// 'majlis gc --purge-due' for the repository when a purge may have work
// (provider.PurgeMayBeDue: something is due, or a kept trash was not
// measured yet), so that the purge of what is due (each with its salvage
// first) takes none of this command's time. MAJLIS_BACKGROUND_PURGE=0 turns it off. Whether
// it could start is not the reclaim's concern: the server, gc, or the
// next reclaim purges what is due.
func (g *globalOptions) purgeAfter(ctx context.Context, p *provider.Provider) {
	if os.Getenv(envvar.BackgroundPurge) == "0" || ctx.Err() != nil || !p.PurgeMayBeDue() {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	repo := g.Repo
	if repo == "" {
		repo = "."
	}
	if repo, err = filepath.Abs(repo); err != nil {
		return
	}
	cmd := exec.Command(exe, "gc", "--purge-due", "--repo", repo)
	cmd.Args[0] = os.Args[0] // the binary may dispatch on it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cmd.Start() == nil {
		_ = cmd.Process.Release()
	}
}

// checkBackgroundPurge validates MAJLIS_BACKGROUND_PURGE.
func checkBackgroundPurge() error {
	switch v := os.Getenv(envvar.BackgroundPurge); v {
	case "", "0", "1":
		return nil
	default:
		return &envvar.Error{Name: envvar.BackgroundPurge, Value: v, Reason: "not 0 or 1",
			Accepted: "0 (a reclaim leaves the purge of due trash to the server or gc) or 1; unset or empty means 1"}
	}
}
