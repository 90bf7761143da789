// Package gitops is the only package that starts Git: every git process
// majlis runs is started by Run.
//
// Everything that changes repository state, or that must agree with
// `git status`, runs the git CLI with a sanitised environment and strictly
// parsed -z porcelain output. go-git is used read-only, in process, where it
// is cheaper: resolving refs, reading commits and trees, listing refs. A git
// failure is reported as an error carrying the command, its exit code and
// its stderr.
//
// gitops knows nothing of workspaces, claims or leases. The salvage
// engine (snapshot, survey, restore, the salvage layout) is package
// gitops/salvage, which runs git through Run; gitops does not import it.
//
// # Running git
//
// Every command runs as `git -C <dir> ...` with LC_ALL=C (messages are
// stable, and failures are classified by them), GIT_TERMINAL_PROMPT=0,
// GIT_PAGER=cat, stdin closed, and without the variables that would aim
// git at another repository, index or object store (GIT_DIR,
// GIT_WORK_TREE, GIT_INDEX_FILE, GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY and
// their kin), which leak in when majlis runs from a git hook or alias. The
// user's configuration is kept: it carries core.excludesFile, identities
// and the like. Read-only commands run with GIT_OPTIONAL_LOCKS=0, so that
// reading status never rewrites the index. Cancelling the context
// interrupts git (SIGINT, on which git removes its lock files) rather than
// killing it.
//
// A command that acts on a worktree (status, a salvage's commands, the
// ignore check, reads through a Reader opened on a worktree) names that
// worktree's git directory (read from its .git) and work tree to git as
// GIT_DIR and GIT_WORK_TREE. That overrides core.worktree and core.bare,
// which a worktree's own config (extensions.worktreeConfig) can set to aim
// git at another directory, such as the main worktree. CheckWorkTree says
// whether git, left to itself, would agree, so that callers can refuse a
// worktree their user's git treats as something else.
//
// A failed command is an *Error with the arguments, exit status and
// stderr. Failures that callers branch on unwrap to a sentinel
// (ErrNotARepository, ErrRefExists, ErrWorktreeLocked, ...): test with
// errors.Is, and get the facts with errors.As.
//
// # What it offers
//
//   - Discover: where a path is (worktree top level, its git dir, the
//     common dir, the main worktree), in one git process.
//   - Worktrees: AddWorktree (always locked; one call, AddOptions say
//     what HEAD is and whether files are checked out), ListWorktrees
//     (strictly parsed), RemoveWorktree, LockWorktree, UnlockWorktree; in
//     a worktree's administrative entry, its lock's reason
//     (ReadWorktreeLock, UnlockWorktreeIf, which lifts only a lock with
//     the reason given) and an entry pin, the claim's digest, that dies
//     with the entry (WriteEntryPin, ReadEntryPin, ReadWorktreePin,
//     EntriesPinnedWith); CheckWorkTree.
//   - ReadStatus: `git status --porcelain=v2 -z` parsed into entries, with
//     submodule state and counts by kind.
//   - Refs: UpdateRefCreate, UpdateRef and DeleteRef store and retire a
//     ref (a salvage, say) with explicit expected values.
//   - HEAD: ReadHead, DetachHead, AttachHead (a kept trash folder's
//     HEAD), SetUnbornBranch.
//   - CheckIgnore: the ignore check a reclaim needs. No function here
//     resets or cleans a worktree: a reclaim moves the whole folder to
//     the trash after its salvage, and durable.DeleteTree deletes it when
//     due.
//   - Reader: read-only lookups (ResolveCommit, Refs, IsAncestor) with
//     go-git, falling back to the CLI where go-git cannot open the
//     repository or might answer differently from git.
//   - For gitops/salvage: the runner (Run, with a Cmd saying what each
//     command may do and see, giving a Result), and the in-process
//     readers both packages use: the index scanner (ScanIndex,
//     IndexGitlinks, IndexResolveUndo, CacheTreeRoot), the raw diff
//     parser (ParseRawDiff), a worktree's top level and git directory
//     (TopLevel, WorktreeGitDir, OpenTree) and the strict parsers
//     (ParseMode, IsObjectID, Unexpected).
//
// Never use go-git for the index, HEAD or branch changes, status, add,
// commit, reset, checkout or prune: in linked worktrees it misreads ignore
// rules, its Reset deletes untracked files, and it writes the index
// without taking index.lock.
//
// Parsers never guess: output that does not parse strictly is an error
// wrapping ErrUnexpectedOutput. The worktree list in particular refuses
// attributes it does not know, because callers decide from it which files
// belong to someone else.
package gitops
