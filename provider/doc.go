// Package provider owns the workspace lifecycle: init, allocate, list,
// salvage, release and reclaim, with the claims and retained-peer checks
// that make reclaim safe.
//
// Contract (see docs/design.md):
//   - A workspace is allocated only after its immutable claim is published
//     with the no-clobber link of package reservation; a failure after the
//     claim leaves no worktree, directory or branch behind.
//   - Nothing destructive happens before the confirmation matches the
//     current preview, the target's authority is re-verified, the reclaim
//     reservation is still ours and no retained peer overlaps the target,
//     re-checked immediately before every destructive effect.
//   - Uncommitted work is salvaged to refs/majlis/salvage/<binding>/<n>
//     before the first destructive effect.
//
// The package knows nothing of cobra or of output formats; it runs Git only
// through package gitops and touches lease files only through package
// reservation.
package provider
