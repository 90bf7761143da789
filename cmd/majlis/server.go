package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/server"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/spf13/cobra"
)

func newServerCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Start, attach to, stop and probe the repository's server",
		Long: `One majlis server runs per repository ('majlis serve'). These commands find
it through its server lease and its liveness route, never by trusting a port
alone: the answer must come from the leaseholder (same repository, pid, start
time and token digest, and an HMAC of a fresh nonce under the token).

The probe's states, and the exit status of 'majlis server status':

  running           0  the leaseholder answers and is ready
  not-running       5  no server lease (server_not_running)
  stale-lease       5  the lease's owner is dead; start retires it (server_stale_lease)
  starting          4  the leaseholder answers, not ready yet (server_starting)
  unresponsive      4  the leaseholder is alive but does not answer (server_unresponsive)
  foreign           3  the recorded port answers, not as the leaseholder (server_foreign)
  version-mismatch  3  the leaseholder runs another majlis version (server_version_mismatch)

An unresponsive server is never taken over and never killed implicitly.`,
		Example: `  majlis server attach --json
  majlis server status
  majlis server stop`,
	}
	cmd.AddCommand(newServerStartCmd(g), newServerAttachCmd(g), newServerStopCmd(g), newServerStatusCmd(g))
	return cmd
}

// serverTarget locates the repository named by --repo.
func (g *globalOptions) serverTarget(ctx context.Context) (serverctl.Target, error) {
	// Finding the repository needs none of the provider's options.
	p, err := provider.Open(ctx, g.Repo, provider.Options{})
	if err != nil {
		return serverctl.Target{}, err
	}
	defer p.Close()
	return serverctl.Target{StateDir: p.StateDir(), Repository: p.Repository().ID}, nil
}

// serveCommand is the argv that runs this binary's 'serve' for the
// repository t was located from.
func (g *globalOptions) serveCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the majlis binary to start the server: %w", err)
	}
	repo := g.Repo
	if repo == "" {
		repo = "."
	}
	if repo, err = filepath.Abs(repo); err != nil {
		return nil, err
	}
	return []string{exe, "serve", "--repo", repo}, nil
}

func renderStatus(w io.Writer, st *serverctl.Status) {
	switch st.State {
	case serverctl.Running, serverctl.Starting:
		fmt.Fprintf(w, "%s on %s (pid %d, majlis %s, %d busy)\n", st.State, st.Address, st.PID, st.Version, st.Busy)
	default:
		fmt.Fprintf(w, "%s: %s\n", st.State, st.Reason)
	}
}

// statusError turns a probe's state other than running into the error
// that carries its exit status and code.
func statusError(st *serverctl.Status) error {
	sentinel := map[serverctl.State]error{
		serverctl.NotRunning:      serverctl.ErrNotRunning,
		serverctl.StaleLease:      serverctl.ErrStaleLease,
		serverctl.Starting:        serverctl.ErrStarting,
		serverctl.Unresponsive:    serverctl.ErrUnresponsive,
		serverctl.Foreign:         serverctl.ErrForeign,
		serverctl.VersionMismatch: serverctl.ErrVersionMismatch,
	}[st.State]
	if sentinel == nil {
		return nil
	}
	return &server.Error{Op: "status", Status: st, Err: sentinel, Reason: st.Reason}
}
