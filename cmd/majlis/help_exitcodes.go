package main

import "github.com/spf13/cobra"

const exitCodesHelp = `Every majlis command exits with one of these codes. Scripts may rely on them.

  0  done
  1  unexpected failure (a bug, an I/O error, git failing unexpectedly);
     a panic is reported as the error internal
  2  usage error (unknown command, subcommand or flag, a command group
     without its subcommand, bad argument, an environment variable majlis
     does not accept); nothing was changed
  3  refused for safety: overlap with a retained peer, identity drift,
     a lock majlis did not set, a workspace git would not act on,
     malformed or unverifiable authority, unconfirmed or stale preview,
     quarantined resource, unsafe path, blocked by policy, unsupported
     filesystem, a hook majlis did not write; nothing was changed
  4  held by another live owner (a lease or reservation conflict, or an
     owner whose death cannot be proven); retry later or see the holder
  5  not found

With --json, a failure prints exactly one object on stdout:

  {"error": {"code": "<stable_snake_case>", "message": "...", "details": {...}}}

The code is stable and more precise than the exit status. The codes, by
exit status:

  1  internal, git_failed, reservation_failed, admission_failed,
     server_fenced, server_start_failed, trash_failed
  2  usage, invalid_argument, invalid_binding, invalid_request
  3  peer_overlap, preview_stale, unconfirmed, dirty_submodule,
     repository_mismatch, worktree_config_mismatch, locked, cross_device,
     already_initialized, branch_exists, path_exists,
     nested_workspace, reserved_target, request_conflict, malformed_record,
     workspace_missing, identity_drift, interrupted, unsupported_filesystem,
     not_owner, lease_changed, quarantined, unsafe_path, policy_blocked,
     not_holder, not_quarantined, hook_exists, token_required,
     server_foreign, server_version_mismatch, unsafe_state,
     branch_checked_out
  4  held, binding_live, workspace_live, owner_alive, owner_unknown,
     not_expired, exists, reclaiming, recoverable, server_starting,
     server_unresponsive, no_free_port
  5  not_found, not_a_repository, not_initialized, unknown_base,
     server_not_running, server_stale_lease, unknown_branch

Lease refusals carry their facts in details: "conflicts" (held,
quarantined: each with the other lease and the policy key that decided),
"gaps" (policy_blocked: the changed paths outside the holder's leases).
Workspace refusals do too: "lock_reason" and "admin_entry" (locked: a
worktree lock majlis did not set, which it never lifts), "setting",
"value", "origin", "git_work_tree" and "git_dir" (worktree_config_mismatch:
the workspace's own git config aims git at another directory, or none).

malformed_record names the damaged file (details.path). Damage stays local:
a workspace's damaged record refuses that workspace's operations, and others
only when its place cannot be known; 'majlis workspace list' shows it as
damaged, and 'majlis doctor' says what is wrong and what to run.

Server refusals, and 'majlis server status' for every state but running,
carry the probe's findings in details.server ('majlis server --help').`

// newExitCodesTopic is an additional help topic: `majlis help exit-codes`.
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and JSON errors, for scripts",
		Long:  exitCodesHelp,
	}
}
