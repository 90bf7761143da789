// Package provider owns the workspace lifecycle of a git repository: it
// gives every task (a person, a script, a coding agent) its own linked
// worktree, a workspace, and takes it back without ever destroying
// anybody's files.
//
// # Opening a repository
//
// [Init] registers a repository once (its state lives in
// <git-common-dir>/majlis/, shared by all its worktrees). [Open] opens it
// from any of its worktrees, with [Options]: the clock, the reservation
// TTL, the host ledger and a logger. The package reads none of majlis's
// environment variables; a program that wants one to tune it reads it and
// passes the value (the majlis command does so with MAJLIS_RESERVATION_TTL
// and MAJLIS_HOST_LEDGER). A [Provider] holds no lock between calls and is safe
// for concurrent use, and processes coordinate through the files in the
// state folder, so any number of them may act on one repository at once.
//
// # The lifecycle
//
//   - [Provider.Allocate] publishes the workspace's claim (binding, paths, repository,
//     base, branch, intent), then adds the worktree. One live workspace
//     per binding (a task id such as T-14).
//   - [Provider.List] and [Provider.Show] report workspaces; [Provider.Release] records that the task is
//     done with one (its files stay).
//   - [Provider.Salvage] keeps everything a removal would lose, except ignored files,
//     as one commit on refs/majlis/salvage/<binding>/<n>, without touching
//     the workspace.
//   - [Provider.PreviewReclaim] says what a reclaim would do, and its digest pins
//     that; [Provider.Reclaim] with the digest confirmed salvages, moves the
//     workspace into a trash folder beside it with one rename, salvages
//     again there, and deletes it. The branch is kept.
//   - [Provider.Restore] puts a salvage back into a fresh workspace; [Provider.RestoreFromTrash]
//     puts back a trash folder that a reclaim kept.
//   - [Provider.Begin] allocates a workspace and declares the task's intent in one
//     step (package [admission] grants the leases; [Provider.Admission] opens its
//     ledgers).
//   - [Provider.Doctor] examines the state folder; [Provider.Repair] carries out the safe
//     repairs it proposes.
//
// Every mutating call takes a request id: a retry with the same id and
// arguments returns the recorded result and does nothing again, or
// resumes where an interrupted call stopped.
//
// # Safety
//
// See docs/design.md, "Safety rules". In short:
//   - A workspace is allocated only after its immutable claim is published
//     with the no-clobber link of package reservation; a failure after the
//     claim leaves no worktree, directory or branch behind.
//   - Nothing destructive happens before the confirmation matches the
//     current preview, the target's authority is re-verified, the reclaim
//     reservation is still ours and no retained peer overlaps the target,
//     re-checked immediately before every destructive effect.
//   - The reclaim reservation is a [reservation.Session]: the reclaim runs
//     under its context, so a lost reservation cancels the work under way
//     and no later step runs; a retry resumes.
//   - Uncommitted work is salvaged before the first destructive effect, and
//     nothing destructive ever runs on a path a task may still use.
//   - A refusal changes nothing. Errors are [*Error] values wrapping one of
//     the Err sentinels (errors.Is), with the facts: operation, binding,
//     path, reason.
//
// The package knows nothing of cobra or of output formats; it runs git
// only through package gitops and touches lease files only through
// package reservation.
package provider
