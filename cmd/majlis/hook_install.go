package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/cmd/majlis/internal/githook"
	"github.com/spf13/cobra"
)

func newHookInstallCmd(g *globalOptions) *cobra.Command {
	var opts githook.Options
	cmd := &cobra.Command{
		Use:   "install [--force]",
		Short: "Install a pre-commit hook that runs 'majlis check'",
		Long: `Install a pre-commit hook that runs 'majlis check --if-holder' before every
commit: in a majlis workspace (or with MAJLIS_HOLDER set), changes outside the
holder's leases are reported, and refused when the policy enforcement_gap is
block; in a checkout that no task holds, the hook checks nothing.

The hook goes where git looks for it (core.hooksPath, else the repository's
hooks folder, shared by all its worktrees). It records the absolute path of
this majlis executable, and runs majlis from PATH once that is gone.
Installing again is harmless. A pre-commit hook that majlis did not write is
never overwritten (exit 3, hook_exists): --force moves it to
pre-commit.majlis-backup, which the majlis hook then runs first.`,
		Example: `  majlis hook install
  majlis hook install --force --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if exe, err := os.Executable(); err == nil && filepath.IsAbs(exe) {
				opts.Majlis = exe
			}
			// The hook belongs to a registered repository: its check
			// would fail in any other.
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			opts.Dir = p.Worktree()
			res, err := githook.Install(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return g.emit(hookJSON{Hook: res}, func(w io.Writer) {
				switch {
				case !res.Changed:
					fmt.Fprintf(w, "the majlis pre-commit hook is installed already at %s\n", res.Path)
				case res.Backup != "":
					fmt.Fprintf(w, "installed the majlis pre-commit hook at %s; the hook that was there is now %s and runs first\n", res.Path, res.Backup)
				default:
					fmt.Fprintf(w, "installed the majlis pre-commit hook at %s (it runs %s check)\n", res.Path, res.Majlis)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "move a pre-commit hook majlis did not write to pre-commit.majlis-backup")
	cmd.Flags().String("request-id", "", "idempotency key (install is idempotent: a retry reports the installed hook)")
	return cmd
}
