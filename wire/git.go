package wire

// Counts tallies changed paths by kind. Each entry counts once, under the
// first of these that applies: Conflicted (unmerged), Untracked, Ignored,
// Renamed, Copied, Added (new in the index), Deleted (from the index or
// the worktree), TypeChanged (file, symlink or submodule replaced by
// another type), else Modified (content or mode). Staged counts, in
// addition, the entries with a change in the index.
//
// The JSON field names appear in majlis's --json output: add fields, never
// rename them.
type Counts struct {
	Modified    int `json:"modified"`
	Added       int `json:"added"`
	Deleted     int `json:"deleted"`
	Renamed     int `json:"renamed"`
	Copied      int `json:"copied"`
	TypeChanged int `json:"type_changed"`
	Untracked   int `json:"untracked"`
	Ignored     int `json:"ignored"`
	Conflicted  int `json:"conflicted"`
	Staged      int `json:"staged"`
}

// Total is the number of changed paths counted, ignored files excluded
// (Staged overlaps the others and is not added).
func (c Counts) Total() int {
	return c.Modified + c.Added + c.Deleted + c.Renamed + c.Copied + c.TypeChanged + c.Untracked + c.Conflicted
}

// A Pin is a commit that a salvage keeps reachable because nothing else
// would once the worktree is gone: reachable from no branch, tag or other
// shared ref, only from this worktree's HEAD, its per-worktree refs, its
// reflogs or an interrupted operation's state.
type Pin struct {
	Commit string `json:"commit"`
	// Source says where the worktree held it: "HEAD", a per-worktree ref
	// file ("refs/worktree/x", "refs/bisect/bad"), a reflog ("logs/HEAD")
	// or an operation's state file ("ORIG_HEAD", "rebase-merge/orig-head").
	Source string `json:"source"`
}

// A HiddenFile is a tracked file whose worktree copy differs from its
// index entry in a way git status does not show and git add does not
// record: marked assume-unchanged or skip-worktree, or (Flag
// FlagFileModeIgnored) with an executable bit core.fileMode=false hides.
type HiddenFile struct {
	Path   string `json:"path"`
	Flag   string `json:"flag"`   // "assume-unchanged", "skip-worktree" or "core.fileMode=false"
	Change string `json:"change"` // "modified", "deleted" or "type_changed"; "mode" for core.fileMode=false
}

// A SpecialFile is a file in a worktree that is neither a regular file, a
// directory nor a symbolic link: a FIFO, a socket or a device node. git
// neither tracks nor reports one (status, add -A and clean all pass it by
// without a word), so no salvage can keep it: removing the worktree's
// directory deletes it. It has no content to lose; what is lost is the
// node itself, and a process may still be using it.
type SpecialFile struct {
	// Path is relative to the worktree's top level, slash-separated.
	Path string `json:"path"`
	// Type is "fifo", "socket", "char_device", "block_device" or
	// "irregular" (anything else the file system reports).
	Type string `json:"type"`
}
