package main

import "github.com/spf13/cobra"

const exitCodesHelp = `Every majlis command exits with one of these codes. Scripts may rely on them.

  0  done
  1  unexpected failure (a bug, an I/O error, git failing unexpectedly)
  2  usage error (unknown command or flag, bad argument); nothing was changed
  3  refused for safety: overlap with a retained peer, identity drift,
     malformed or unverifiable authority, unconfirmed or stale preview,
     quarantined resource, blocked by policy, unsupported filesystem;
     nothing was changed
  4  held by another live owner (a lease or reservation conflict, or an
     owner whose death cannot be proven); retry later or see the holder
  5  not found

With --json, a failure prints exactly one object on stdout:

  {"error": {"code": "<stable_snake_case>", "message": "...", "details": {...}}}

The code is stable and more precise than the exit status (for example
"held", "owner_alive", "malformed_record", "preview_stale", "peer_overlap").`

// newExitCodesTopic is an additional help topic: `majlis help exit-codes`.
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and JSON errors, for scripts",
		Long:  exitCodesHelp,
	}
}
