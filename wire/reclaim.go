package wire

import "time"

// A Peer is a retained peer of a reclaim target: something whose files may
// still exist. Its JSON appears in previews and peer_overlap errors.
type Peer struct {
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	Binding  string `json:"binding,omitempty"`
	Relation string `json:"relation"` // disjoint, or why it does not overlap, or the overlap
	Overlaps bool   `json:"overlaps"`
}

// A Step is one effect a reclaim will have (or had).
type Step struct {
	Name   string `json:"name"`   // salvage, move, resalvage, delete-trash (forget, record for a missing workspace)
	Count  int    `json:"count"`  // files concerned
	Detail string `json:"detail"` // in words
}

// A ReclaimResult reports a finished reclaim. Its JSON is part of the CLI
// contract.
type ReclaimResult struct {
	Binding     string   `json:"binding"`
	Path        string   `json:"path"`
	SalvageRef  *string  `json:"salvage_ref"`  // the salvage taken before the first destructive step
	SalvageRefs []string `json:"salvage_refs"` // every salvage of this reclaim, across retries
	Submodules  []string `json:"salvaged_submodules"`
	StepsDone   []string `json:"steps_done"`
	Removed     bool     `json:"removed"`
	Branch      string   `json:"branch"` // kept
	// SecondSalvageRef is the salvage of what the workspace held once moved
	// aside, when it differs from the first salvage (a writer was still at
	// work); it is in SalvageRefs too.
	SecondSalvageRef *string `json:"second_salvage_ref,omitempty"`
	// TrashPath and TrashKeptUntil are set when the trash is kept
	// (--keep-trash): the workspace's directory is there until then.
	TrashPath      string     `json:"trash_path,omitempty"`
	TrashKeptUntil *time.Time `json:"trash_kept_until,omitempty"`
	// TrashNotKept says why the trash folder was deleted at once although
	// the policy (or --keep-trash) keeps trash: it would lie inside
	// another workspace or worktree.
	TrashNotKept string `json:"trash_not_kept,omitempty"`
	// PathOccupied reports that something appeared at the workspace's path
	// after the move: someone else's, left alone.
	PathOccupied bool `json:"path_occupied,omitempty"`
	// TrashPurged is always empty: a reclaim no longer deletes other
	// workspaces' kept trash in its own time (PurgeDue does, after it).
	TrashPurged []string `json:"trash_purged"`
	// RecoveredLeases are the leases of the workspace's task (or taken in
	// it) whose owner process was proven dead: the reclaim released them,
	// recorded as a recovery, before its first destructive step.
	RecoveredLeases []LeaseRef `json:"recovered_leases"`
	// PinnedOnFirstContact reports that the workspace, allocated before
	// majlis pinned admin entries, was pinned by this reclaim.
	PinnedOnFirstContact bool `json:"pinned_on_first_contact,omitempty"`
	// IgnoredFiles and SpecialFiles count what the reclaim deletes (or,
	// with --keep-trash, will delete) without salvaging it, as the
	// preview computed under its reservation saw the workspace: ignored
	// files, and FIFOs, sockets and device nodes, which git cannot keep.
	// With --yes no one saw that preview: the result says it.
	IgnoredFiles int `json:"ignored_files"`
	SpecialFiles int `json:"special_files"`
}

// A RestoreResult reports a restore. Its JSON is part of the CLI contract.
type RestoreResult struct {
	Workspace  *Workspace `json:"workspace"`
	SalvageRef string     `json:"salvage_ref"`
	Commit     string     `json:"commit"`
	Layout     int        `json:"layout"` // the salvage layout version: 1 (earlier majlis) or 2
	Head       string     `json:"head"`   // "" when Unborn
	Branch     *string    `json:"branch"` // null when detached
	// Unborn says HEAD is a branch with no commit yet, as the salvage
	// found it.
	Unborn bool `json:"unborn"`
	// Restored lists what was put back ("files", "index", per-worktree
	// refs, "the state of the interrupted rebase", ...); NotRestored what
	// could not be, and why.
	Restored    []string `json:"restored"`
	NotRestored []string `json:"not_restored"`
}

// A SalvageResult reports a salvage. Its JSON is part of the CLI contract.
type SalvageResult struct {
	Binding string  `json:"binding"`
	Ref     *string `json:"ref"`    // null when clean
	Commit  *string `json:"commit"` // null when clean
	Files   int     `json:"files"`  // paths captured
	Clean   bool    `json:"clean"`
	Counts  struct {
		Added       int `json:"added"`
		Modified    int `json:"modified"`
		Deleted     int `json:"deleted"`
		TypeChanged int `json:"type_changed"`
	} `json:"counts"`
	// DirtySubmodules and NestedRepositories were recorded as pointers
	// only: their own changes were NOT captured.
	DirtySubmodules    []string `json:"dirty_submodules"`
	NestedRepositories []string `json:"nested_repositories"`
	// Pins are the commits only the workspace held, kept as parents of
	// the salvage commit; Hidden the assume-unchanged and skip-worktree
	// files whose edits are in its tree; WorktreeRefs and Operation what
	// its meta commit keeps (see docs/workspaces.md, "Salvage").
	Pins         []Pin        `json:"pins"`
	Hidden       []HiddenFile `json:"hidden"`
	WorktreeRefs []string     `json:"worktree_refs"`
	Operation    string       `json:"operation"`
	// UnpopulatedSubmoduleFiles are the files in the folders of submodules
	// that are not checked out, which git does not see: kept in the meta
	// commit.
	UnpopulatedSubmoduleFiles []string `json:"unpopulated_submodule_files"`
	// IndexCommit and MetaCommit are the salvage commit's index commit
	// and meta commit (null when clean; MetaCommit null too when there was
	// nothing for it to keep).
	IndexCommit *string `json:"index_commit"`
	MetaCommit  *string `json:"meta_commit"`
	// Changes counts the workspace's changes as git status saw them just
	// before the salvage: the one counts object of show, list --status and
	// the reclaim preview (every key always present).
	Changes Counts `json:"changes"`
	// SpecialFiles counts the FIFOs, sockets and device nodes in the
	// workspace, which the salvage did NOT keep (git cannot: a FIFO or a
	// socket has no content, a device node only its numbers); a reclaim
	// deletes them. SpecialPaths names the first MaxIgnoredPaths.
	SpecialFiles int           `json:"special_files"`
	SpecialPaths []SpecialFile `json:"special_paths"`
}

// A Preview says everything a reclaim of a workspace would do. Its digest
// pins it: --confirm DIGEST proceeds only if the preview computed at that
// moment has the same digest.
type Preview struct {
	Digest       string `json:"digest"`
	Binding      string `json:"binding"`
	Path         string `json:"path"`
	PhysicalPath string `json:"physical_path"`
	Branch       string `json:"branch"`
	Head         string `json:"head"`
	ClaimDigest  string `json:"claim_digest"`
	Released     bool   `json:"released"`
	// OwnerPID and OwnerState are the recorded owner process and what is
	// known of it (exited, alive, unknown; absent when none is recorded).
	// They inform; the digest does not cover them.
	OwnerPID   int    `json:"owner_pid,omitempty"`
	OwnerState string `json:"owner_state,omitempty"`
	// Processes are the processes whose working directory or open files
	// are inside the workspace (a dev server its dead agent started): the
	// reclaim moves the folder from under them, into its kept trash. A
	// bulk reclaim leaves such a workspace out. RecoverLeases are the
	// leases whose owner process is proven dead, which the reclaim will
	// retire as recovered. Both inform; the digest does not cover them.
	Processes     []Process  `json:"processes"`
	RecoverLeases []LeaseRef `json:"recover_leases"`
	Salvage       struct {
		Clean           bool     `json:"clean"`
		Files           int      `json:"files"`
		Modified        int      `json:"modified"`
		Added           int      `json:"added"`
		Deleted         int      `json:"deleted"`
		Renamed         int      `json:"renamed"`
		Untracked       int      `json:"untracked"`
		Conflicted      int      `json:"conflicted"`
		DirtySubmodules []string `json:"dirty_submodules"`
		// What the salvage keeps beyond the files: the index when a file
		// is staged at a version the worktree no longer has, or has
		// intent-to-add entries; commits only the workspace holds (Pins,
		// each with where it was found); per-worktree refs; an interrupted
		// operation's state; hidden (assume-unchanged, skip-worktree)
		// edits.
		PartiallyStaged int          `json:"partially_staged"`
		IntentToAdd     int          `json:"intent_to_add"`
		Pins            []Pin        `json:"pins"`
		WorktreeRefs    []string     `json:"worktree_refs"`
		Operation       string       `json:"operation"`
		Hidden          []HiddenFile `json:"hidden"`
		// UnpopulatedSubmoduleFiles are the files in the folders of
		// submodules that are not checked out: git does not see them;
		// the salvage keeps them in its meta commit.
		UnpopulatedSubmoduleFiles []string `json:"unpopulated_submodule_files"`
		// RefusedNames are the files git will not store under their
		// names: untracked files whose names it refuses (x/.GIT/config,
		// GIT~1, .git.), and files under a folder (or a file) named .git
		// that is no repository, which git never lists. The salvage keeps
		// their bytes beside its tree, under encoded names; restore
		// writes them back. The first MaxIgnoredPaths are named.
		RefusedNames []string `json:"refused_names"`
	} `json:"salvage"`
	// Changes counts the workspace's changes by kind, the one counts
	// object of show, list --status and salvage (every key always present).
	Changes      Counts `json:"changes"`
	IgnoredFiles int    `json:"ignored_files"` // deleted with the directory, not salvaged
	// IgnoredPaths names the first MaxIgnoredPaths of them.
	IgnoredPaths []string `json:"ignored_paths"`
	// SpecialFiles counts the FIFOs, sockets and device nodes anywhere in
	// the workspace (ignored folders and nested repositories included):
	// git neither tracks nor reports them, so no salvage can keep them,
	// and they are deleted with the directory. SpecialPaths names the
	// first MaxIgnoredPaths of them, each with its type.
	SpecialFiles int           `json:"special_files"`
	SpecialPaths []SpecialFile `json:"special_paths"`
	// TrashGoesAtOnce says why the trash folder would not be kept for the
	// undo window although the policy keeps trash: the repository's
	// space bounds (trash.max_bytes, trash.min_free) would have the purge
	// that follows the reclaim delete it at once, so the reclaim deletes
	// it itself, with the ignored and special files above. "" when it
	// would be kept. The digest covers the key it names (not the sizes,
	// which change with every write): confirming a preview that says so
	// is the consent to delete those files; a reclaim not confirmed by
	// such a preview refuses to.
	TrashGoesAtOnce string `json:"trash_goes_at_once,omitempty"`
	Steps           []Step `json:"steps"`
	PeersChecked    int    `json:"peers_checked"`
	Peers           []Peer `json:"peers"`
	// AdminEntry is git's administrative entry of the workspace
	// (<common dir>/worktrees/<id>). Pinned says whether it carries
	// majlis's pin; an entry of a workspace allocated before majlis pinned
	// them is pinned by the reclaim, before its first step.
	AdminEntry struct {
		Path   string `json:"path"`
		Pinned bool   `json:"pinned"`
	} `json:"admin_entry"`
}
