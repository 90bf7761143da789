package salvage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// With core.fileMode=false git does not trust the file system's executable
// bit: status does not show a chmod, and `git add` keeps the mode an index
// entry already has (and gives a new file 100644, whatever its bit). A
// salvage made by `git add -A` alone would keep the old mode, and a restore
// would bring back the old bit: the chmod would be lost. So where the
// setting is off, the salvage reads the bit from the file system itself
// (recordExecBits) and the survey reports the tracked files whose bit git
// does not see (findExecBits), as hidden edits with the flag
// FlagFileModeIgnored. On a file system that keeps no bit per file (FAT,
// exFAT, NTFS: execBitsKept) there is nothing to lose, and git's view is
// kept.

// FlagFileModeIgnored is the HiddenFile.Flag of a tracked file whose
// executable bit on disk differs from its index entry's mode while
// core.fileMode=false hides that from git; its Change is "mode".
const FlagFileModeIgnored = "core.fileMode=false"

// execBit is how git reads a regular file's mode from the file system
// (when it trusts it): executable when the owner may execute it.
func execBit(fi os.FileInfo) gitops.Mode {
	if fi.Mode()&0o100 != 0 {
		return gitops.ModeExecutable
	}
	return gitops.ModeFile
}

// regularEntries lists the stage-0 entries of regular files (100644 and
// 100755) of the index file index, whose content data holds: read in
// process, or by git when this code cannot read it (a split index).
func regularEntries(ctx context.Context, dir, ceiling, index string, data []byte, hashLen int) ([]gitops.IndexEntry, error) {
	var out []gitops.IndexEntry
	keep := func(e gitops.IndexEntry) {
		if e.Stage == 0 && (e.Mode == gitops.ModeFile || e.Mode == gitops.ModeExecutable) {
			out = append(out, e)
		}
	}
	if err := gitops.ScanIndex(data, hashLen, keep); err == nil {
		return out, nil
	}
	out = nil
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling}, "ls-files", "-s", "-v", "-z")
	if err != nil {
		return nil, err
	}
	for _, rec := range bytes.Split(bytes.TrimSuffix(res.Stdout, []byte{0}), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		e, err := parseStageRecord(rec)
		if err != nil {
			return nil, err
		}
		keep(e)
	}
	return out, nil
}

// findExecBits reports, where core.fileMode=false, the tracked files whose
// executable bit on disk differs from their index entry (s.execBits). The
// same `git config` answers the conversion settings (s.conversion).
// Flagged entries are left to checkFlagged, which compares whole modes;
// intent-to-add entries are new files, which `git add` records anyway.
func (s *Survey) findExecBits(ctx context.Context, dir, ceiling string, index []byte) error {
	ignored, conv, err := worktreeSettings(ctx, dir, ceiling)
	s.conversion = conv
	if err != nil || !ignored || !execBitsKept(dir) {
		return err
	}
	s.ignoresFileMode = true
	entries, err := regularEntries(ctx, dir, ceiling, filepath.Join(s.gitDir, "index"), index, s.hashLen)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.AssumeUnchanged || e.SkipWorktree || e.IntentToAdd {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted or replaced: git status shows that
		}
		if execBit(fi) != e.Mode {
			s.execBits = append(s.execBits, HiddenFile{Path: e.Path, Flag: FlagFileModeIgnored, Change: "mode"})
		}
	}
	return nil
}

// mergeExecBits adds the files findExecBits found to s.Hidden, sorted by
// path. It runs once findHidden is done with s.Hidden.
func (s *Survey) mergeExecBits() {
	if len(s.execBits) == 0 {
		return
	}
	s.Hidden = append(s.Hidden, s.execBits...)
	s.execBits = nil
	sort.SliceStable(s.Hidden, func(i, j int) bool { return s.Hidden[i].Path < s.Hidden[j].Path })
}

// recordExecBits, where core.fileMode=false, sets the mode of every regular
// file's entry in the private index file index (just filled by `git add
// -A`) to the executable bit the file has on disk, keeping its blob: what
// git, trusting the file system, would have recorded.
func (s *Survey) recordExecBits(ctx context.Context, dir, ceiling, index string) error {
	if !s.ignoresFileMode {
		return nil
	}
	data, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	entries, err := regularEntries(ctx, dir, ceiling, index, data, s.hashLen)
	if err != nil {
		return err
	}
	var in strings.Builder
	for _, e := range entries {
		if e.SkipWorktree {
			continue // not on disk: outside a sparse cone
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if m := execBit(fi); m != e.Mode {
			fmt.Fprintf(&in, "%s %s\t%s\x00", m, e.ID, e.Path)
		}
	}
	if in.Len() == 0 {
		return nil
	}
	_, err = gitops.Run(ctx, dir, gitops.Cmd{IndexFile: index, Ceiling: ceiling, Stdin: []byte(in.String())},
		"update-index", "-z", "--index-info")
	return err
}
