// Package salvage keeps everything a removal of a worktree would lose, as
// one commit, and puts it back.
//
// A salvage is a commit (its parents and trailers are the Layout) whose
// tree is the worktree's files as `git add -A` would stage them, hidden
// edits included, and whose parents keep HEAD, the index, and what only
// the worktree's own git directory holds. It owns:
//
//   - Snapshot and SnapshotKept: the salvage of a worktree, made in a
//     private copy of the index, touching nothing the user sees; the
//     caller stores the commit (gitops.UpdateRefCreate). WorktreeTree
//     computes the same tree without a commit.
//   - The survey (SurveyWorktree, Survey): what a worktree holds beyond
//     its files: HEAD, the branch, commits only it holds (Pins), hidden
//     edits (assume-unchanged, skip-worktree, core.fileMode=false),
//     conflicts, operation state, per-worktree settings.
//   - The files git cannot keep in a tree, kept in the meta commit: names
//     git refuses (RefusedNames, and the files under a .git that is no
//     repository: DotGitFiles, DotGitIsRepository), bytes a checkout
//     would not give back (end-of-line and filter conversions), files in
//     the folders of submodules that are not checked out, and the
//     permissions of private files. SpecialFiles lists what nothing can
//     keep (FIFOs, sockets, devices).
//   - The salvage of a worktree whose folder is gone, from git's
//     administrative entry alone (SurveyEntry, SnapshotEntry), and the
//     refs and stashes of a repository kept in it (GitDirRefs,
//     CopyFromGitDir, EntryStashes).
//   - The layout (Layout, Version, ParseCommit, Read, Holds: whether a
//     salvage still holds a worktree's state) and RestoreInto, which fills
//     an empty worktree from a salvage, as it was.
//
// It runs git only through gitops.Run, the one place that starts git, and
// reads git's files in process with gitops's readers (gitops.ScanIndex,
// gitops.WorktreeGitDir). gitops does not import it.
package salvage
