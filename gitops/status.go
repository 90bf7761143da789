package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// A Mode is a Git file mode as git prints it in octal: 100644 (file),
// 100755 (executable), 120000 (symbolic link), 160000 (gitlink, that is a
// submodule), 040000 (tree) or 000000 (absent).
type Mode uint32

// Git file modes.
const (
	ModeAbsent     Mode = 0
	ModeTree       Mode = 0o040000
	ModeFile       Mode = 0o100644
	ModeExecutable Mode = 0o100755
	ModeSymlink    Mode = 0o120000
	ModeGitlink    Mode = 0o160000
)

// String renders m as git does: six octal digits.
func (m Mode) String() string { return fmt.Sprintf("%06o", uint32(m)) }

// EntryKind is the kind of a status entry, named by the character that
// starts it in `git status --porcelain=v2`.
type EntryKind byte

// Status entry kinds.
const (
	Ordinary        EntryKind = '1' // a changed tracked path
	RenamedOrCopied EntryKind = '2' // a renamed or copied path; OrigPath is set
	Unmerged        EntryKind = 'u' // a path with merge conflicts
	Untracked       EntryKind = '?'
	Ignored         EntryKind = '!'
)

func (k EntryKind) String() string {
	switch k {
	case Ordinary:
		return "ordinary"
	case RenamedOrCopied:
		return "renamed-or-copied"
	case Unmerged:
		return "unmerged"
	case Untracked:
		return "untracked"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("EntryKind(%q)", byte(k))
}

// SubmoduleState is the <sub> field of a status entry: whether the path is
// a submodule and, if so, what changed inside it. Changes inside a
// submodule (Modified, Untracked) are not part of the superproject's tree:
// nothing the superproject does (add, commit, salvage) captures them.
type SubmoduleState struct {
	IsSubmodule   bool // the path is a submodule (gitlink)
	CommitChanged bool // its checked-out commit differs from the recorded one
	Modified      bool // it has tracked changes
	Untracked     bool // it has untracked files
}

// Dirty reports whether the submodule has changes of its own, which its
// superproject cannot capture.
func (s SubmoduleState) Dirty() bool { return s.Modified || s.Untracked }

// A Stage is one side of a conflict in the index.
type Stage struct {
	Mode Mode
	ID   string // blob id
}

// A StatusEntry is one path reported by `git status --porcelain=v2 -z`.
// Which fields are set depends on Kind; see git-status(1).
type StatusEntry struct {
	Kind EntryKind
	// X and Y are the index and worktree status letters ('.' for
	// unchanged, else one of MTADRCU); zero for untracked and ignored
	// entries.
	X, Y      byte
	Submodule SubmoduleState
	// HeadMode, IndexMode and HeadID, IndexID describe the path in HEAD
	// and in the index (ordinary and renamed entries). WorktreeMode is its
	// mode in the worktree (ordinary, renamed and unmerged entries).
	HeadMode, IndexMode, WorktreeMode Mode
	HeadID, IndexID                   string
	// Score is the rename or copy score, such as "R100" (renamed entries).
	Score string
	// Stages are the conflict stages 1 (base), 2 (ours), 3 (theirs) of an
	// unmerged entry.
	Stages [3]Stage
	// Path is relative to the top level of the worktree. Untracked
	// directories (nested repositories) end in "/".
	Path string
	// OrigPath is the path a renamed or copied entry came from.
	OrigPath string
}

// Status is the parsed output of `git status --porcelain=v2 -z --branch`.
type Status struct {
	Head     string // commit id of HEAD; empty on an unborn branch
	Branch   string // short name of the checked-out branch; empty when detached
	Detached bool
	Entries  []StatusEntry
}

// StatusOptions tune ReadStatus.
type StatusOptions struct {
	// Ignored also lists ignored files (--ignored), one entry per file.
	Ignored bool
	// Refresh lets git refresh the index's cached file stats, as a plain
	// `git status` does when it can take index.lock: the index's content
	// (paths, modes, object ids) stays the same, only the stat data that
	// lets the next status skip re-reading files changes. A fresh checkout
	// has every file "racily clean", which costs each status a read of
	// every file until someone refreshes; reclaim refreshes once so that
	// `git worktree remove` after it does not pay that again.
	Refresh bool
}

// ReadStatus runs `git status --porcelain=v2 -z --branch
// --untracked-files=all` in the worktree containing dir and parses it.
// Unless opts.Refresh is set it never writes: the command runs with
// GIT_OPTIONAL_LOCKS=0, so git does not refresh the index file behind the
// caller, and the index stays byte-identical. Dirty submodules are reported (--ignore-submodules=none),
// whatever the repository's configuration.
func ReadStatus(ctx context.Context, dir string, opts StatusOptions) (*Status, error) {
	args := []string{"status", "--porcelain=v2", "-z", "--branch", "--no-ahead-behind",
		"--untracked-files=all", "--ignore-submodules=none"}
	if opts.Ignored {
		args = append(args, "--ignored=traditional")
	}
	o := treeOpts(dir)
	o.ReadOnly, o.refreshIndex = true, opts.Refresh
	res, err := Run(ctx, dir, o, args...)
	if err != nil {
		return nil, err
	}
	return parseStatus(res.Stdout)
}

// Clean reports whether the worktree has no changes: no entries other than
// ignored ones.
func (s *Status) Clean() bool {
	for _, e := range s.Entries {
		if e.Kind != Ignored {
			return false
		}
	}
	return true
}

// DirtySubmodules returns the paths of submodules with changes of their own
// (modified or untracked content), in status order.
func (s *Status) DirtySubmodules() []string {
	var paths []string
	for _, e := range s.Entries {
		if e.Submodule.Dirty() {
			paths = append(paths, e.Path)
		}
	}
	return paths
}

// Counts is wire.Counts: the result type is defined once, in the wire contract.
type Counts = wire.Counts

// Counts tallies the entries of s.
func (s *Status) Counts() Counts {
	var c Counts
	for _, e := range s.Entries {
		switch e.Kind {
		case Unmerged:
			c.Conflicted++
			continue
		case Untracked:
			c.Untracked++
			continue
		case Ignored:
			c.Ignored++
			continue
		}
		if e.X != '.' {
			c.Staged++
		}
		switch {
		case e.X == 'R' || e.Y == 'R':
			c.Renamed++
		case e.X == 'C' || e.Y == 'C':
			c.Copied++
		case e.X == 'A':
			c.Added++
		case e.X == 'D' || e.Y == 'D':
			c.Deleted++
		case e.X == 'T' || e.Y == 'T':
			c.TypeChanged++
		default:
			c.Modified++
		}
	}
	return c
}

// parseStatus parses `git status --porcelain=v2 -z [--branch]` output.
// Every entry must be well formed; header lines ("# ...") that are not
// known are skipped, since git adds new ones (such as "# stash") and they
// carry nothing that could hide a change.
func parseStatus(out []byte) (*Status, error) {
	s := &Status{}
	entries := false
	for n := 1; len(out) > 0; n++ {
		rec, rest, ok := cutNUL(out)
		if !ok {
			return nil, Unexpected("git status", "record %d is not NUL-terminated", n)
		}
		out = rest
		if strings.HasPrefix(rec, "# ") {
			if entries {
				return nil, Unexpected("git status", "header %q after the entries", rec)
			}
			if err := s.parseHeader(rec[2:]); err != nil {
				return nil, err
			}
			continue
		}
		entries = true
		e, err := parseStatusEntry(rec)
		if err != nil {
			return nil, fmt.Errorf("%w (record %d)", err, n)
		}
		if e.Kind == RenamedOrCopied {
			orig, rest, ok := cutNUL(out)
			if !ok || orig == "" {
				return nil, Unexpected("git status", "renamed entry %q without its original path", e.Path)
			}
			e.OrigPath, out = orig, rest
		}
		s.Entries = append(s.Entries, e)
	}
	return s, nil
}

func (s *Status) parseHeader(h string) error {
	key, val, _ := strings.Cut(h, " ")
	switch key {
	case "branch.oid":
		switch {
		case val == "(initial)":
			s.Head = ""
		case IsObjectID(val):
			s.Head = val
		default:
			return Unexpected("git status", "branch.oid %q", val)
		}
	case "branch.head":
		if val == "" {
			return Unexpected("git status", "empty branch.head")
		}
		if val == "(detached)" {
			s.Detached = true
		} else {
			s.Branch = val
		}
	}
	return nil
}

func cutNUL(b []byte) (string, []byte, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", b, false
	}
	return string(b[:i]), b[i+1:], true
}

// number of space-separated fields before the path, per entry kind.
var statusFields = map[EntryKind]int{Ordinary: 8, RenamedOrCopied: 9, Unmerged: 10, Untracked: 1, Ignored: 1}

func parseStatusEntry(rec string) (StatusEntry, error) {
	var e StatusEntry
	if len(rec) < 2 || rec[1] != ' ' {
		return e, Unexpected("git status", "malformed entry %q", rec)
	}
	e.Kind = EntryKind(rec[0])
	nf, ok := statusFields[e.Kind]
	if !ok {
		return e, Unexpected("git status", "unknown entry kind in %q", rec)
	}
	// The path is last and may itself contain spaces: split off exactly
	// the fields before it.
	f := strings.SplitN(rec, " ", nf+1)
	if len(f) != nf+1 || f[nf] == "" {
		return e, Unexpected("git status", "entry %q has too few fields", rec)
	}
	e.Path = f[nf]
	if e.Kind == Untracked || e.Kind == Ignored {
		return e, nil
	}
	var err error
	if e.X, e.Y, err = parseXY(e.Kind, f[1]); err != nil {
		return e, err
	}
	if e.Submodule, err = parseSubmodule(f[2]); err != nil {
		return e, err
	}
	switch e.Kind {
	case Ordinary, RenamedOrCopied:
		if e.HeadMode, err = ParseMode(f[3]); err != nil {
			return e, err
		}
		if e.IndexMode, err = ParseMode(f[4]); err != nil {
			return e, err
		}
		if e.WorktreeMode, err = ParseMode(f[5]); err != nil {
			return e, err
		}
		if e.HeadID, err = parseID(f[6]); err != nil {
			return e, err
		}
		if e.IndexID, err = parseID(f[7]); err != nil {
			return e, err
		}
		if e.Kind == RenamedOrCopied {
			if e.Score, err = parseScore(f[8]); err != nil {
				return e, err
			}
		}
	case Unmerged:
		for i := range e.Stages {
			if e.Stages[i].Mode, err = ParseMode(f[3+i]); err != nil {
				return e, err
			}
			if e.Stages[i].ID, err = parseID(f[7+i]); err != nil {
				return e, err
			}
		}
		if e.WorktreeMode, err = ParseMode(f[6]); err != nil {
			return e, err
		}
	}
	return e, nil
}

func parseXY(k EntryKind, xy string) (x, y byte, err error) {
	if len(xy) != 2 {
		return 0, 0, Unexpected("git status", "status %q is not two letters", xy)
	}
	if k == Unmerged {
		switch xy {
		case "DD", "AU", "UD", "UA", "DU", "AA", "UU":
			return xy[0], xy[1], nil
		}
		return 0, 0, Unexpected("git status", "unmerged status %q", xy)
	}
	for i := 0; i < 2; i++ {
		if !strings.ContainsRune(".MTADRCU", rune(xy[i])) {
			return 0, 0, Unexpected("git status", "status %q", xy)
		}
	}
	return xy[0], xy[1], nil
}

func parseSubmodule(f string) (SubmoduleState, error) {
	if f == "N..." {
		return SubmoduleState{}, nil
	}
	if len(f) != 4 || f[0] != 'S' || (f[1] != 'C' && f[1] != '.') || (f[2] != 'M' && f[2] != '.') || (f[3] != 'U' && f[3] != '.') {
		return SubmoduleState{}, Unexpected("git status", "submodule state %q", f)
	}
	return SubmoduleState{IsSubmodule: true, CommitChanged: f[1] == 'C', Modified: f[2] == 'M', Untracked: f[3] == 'U'}, nil
}

func ParseMode(f string) (Mode, error) {
	if len(f) != 6 {
		return 0, Unexpected("git", "mode %q", f)
	}
	m, err := strconv.ParseUint(f, 8, 32)
	if err != nil {
		return 0, Unexpected("git", "mode %q", f)
	}
	return Mode(m), nil
}

func parseID(f string) (string, error) {
	if !IsObjectID(f) {
		return "", Unexpected("git", "object id %q", f)
	}
	return f, nil
}

func parseScore(f string) (string, error) {
	if len(f) >= 2 && len(f) <= 4 && (f[0] == 'R' || f[0] == 'C') {
		if n, err := strconv.Atoi(f[1:]); err == nil && n >= 0 && n <= 100 && strconv.Itoa(n) == f[1:] {
			return f, nil
		}
	}
	return "", Unexpected("git", "rename score %q", f)
}

// appendStatusEntry renders e as git does (the inverse of
// parseStatusEntry, plus the original path of a rename); the fuzz test
// checks that parsing loses nothing.
func appendStatusEntry(b []byte, e StatusEntry) []byte {
	b = append(b, byte(e.Kind), ' ')
	switch e.Kind {
	case Untracked, Ignored:
		return append(append(b, e.Path...), 0)
	}
	b = append(b, e.X, e.Y, ' ')
	b = append(b, e.Submodule.String()...)
	switch e.Kind {
	case Unmerged:
		for _, st := range e.Stages {
			b = append(b, ' ')
			b = append(b, st.Mode.String()...)
		}
		b = append(b, ' ')
		b = append(b, e.WorktreeMode.String()...)
		for _, st := range e.Stages {
			b = append(b, ' ')
			b = append(b, st.ID...)
		}
	default:
		b = fmt.Appendf(b, " %s %s %s %s %s", e.HeadMode, e.IndexMode, e.WorktreeMode, e.HeadID, e.IndexID)
		if e.Kind == RenamedOrCopied {
			b = append(b, ' ')
			b = append(b, e.Score...)
		}
	}
	b = append(b, ' ')
	b = append(b, e.Path...)
	b = append(b, 0)
	if e.Kind == RenamedOrCopied {
		b = append(append(b, e.OrigPath...), 0)
	}
	return b
}

// String renders s as the <sub> field of porcelain v2: "N..." or
// "S<c><m><u>".
func (s SubmoduleState) String() string {
	if !s.IsSubmodule {
		return "N..."
	}
	b := []byte("S...")
	if s.CommitChanged {
		b[1] = 'C'
	}
	if s.Modified {
		b[2] = 'M'
	}
	if s.Untracked {
		b[3] = 'U'
	}
	return string(b)
}
