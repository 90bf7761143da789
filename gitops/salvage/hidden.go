package salvage

// Hidden edits: files of the index flagged assume-unchanged or
// skip-worktree whose worktree copy differs, found for the survey and
// made visible to the salvage's private index.

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// findHidden compares the assume-unchanged and skip-worktree entries of
// the index with the worktree. A skip-worktree file that is absent is
// outside a sparse checkout's cone (or was never checked out), not
// deleted; an absent assume-unchanged file was deleted.
func (s *Survey) findHidden(ctx context.Context, dir, ceiling string) error {
	if err := s.loadFlagged(ctx, dir, ceiling); err != nil {
		return err
	}
	if err := s.checkFlagged(dir); err != nil {
		return err
	}
	return s.hashFlagged(ctx, dir, ceiling)
}

// checkFlagged is the in-process part of findHidden: what lstat and the
// index tell (presence, type, mode, symbolic link targets). The files
// left to hash are in s.toHash.
func (s *Survey) checkFlagged(dir string) error {
	for _, e := range s.flagged {
		flag := "assume-unchanged"
		if e.SkipWorktree {
			flag = "skip-worktree"
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path)))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || err != nil && isNotDir(err):
			if !e.SkipWorktree {
				s.addHidden(e, flag, "deleted")
			}
			continue
		case err != nil:
			return err
		}
		if e.SkipWorktree {
			s.present = append(s.present, e.Path)
		}
		var mode gitops.Mode
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			mode = gitops.ModeSymlink
		case fi.Mode().IsRegular() && fi.Mode()&0o111 != 0:
			mode = gitops.ModeExecutable
		case fi.Mode().IsRegular():
			mode = gitops.ModeFile
		default:
			s.addHidden(e, flag, "type_changed")
			continue
		}
		if (mode == gitops.ModeSymlink) != (e.Mode == gitops.ModeSymlink) {
			s.addHidden(e, flag, "type_changed")
			continue
		}
		if mode == gitops.ModeSymlink {
			target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(e.Path)))
			if err != nil {
				return err
			}
			if blobHash([]byte(target), s.hashLen) != e.ID {
				s.addHidden(e, flag, "modified")
			}
			continue
		}
		if mode != e.Mode {
			s.addHidden(e, flag, "modified")
			continue
		}
		s.toHash = append(s.toHash, e)
	}
	return nil
}

// hashFlagged has git hash the flagged files that only their content can
// tell apart from their index entries.
func (s *Survey) hashFlagged(ctx context.Context, dir, ceiling string) error {
	defer sort.Slice(s.Hidden, func(i, j int) bool { return s.Hidden[i].Path < s.Hidden[j].Path })
	toHash := s.toHash
	if len(toHash) == 0 {
		return nil
	}
	// git hashes the files, so that clean filters and end-of-line
	// conversion apply as they would to git add.
	args := []string{"hash-object", "--"}
	for _, e := range toHash {
		args = append(args, e.Path)
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, args...)
	if err != nil {
		return err
	}
	ids := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	if len(ids) != len(toHash) {
		return gitops.Unexpected("git hash-object", "%d ids for %d files", len(ids), len(toHash))
	}
	for i, e := range toHash {
		if ids[i] != e.ID {
			flag := "assume-unchanged"
			if e.SkipWorktree {
				flag = "skip-worktree"
			}
			s.addHidden(e, flag, "modified")
		}
	}
	return nil
}

// loadFlagged asks git for the flagged and conflicted entries when the
// index could not be read in process.
func (s *Survey) loadFlagged(ctx context.Context, dir, ceiling string) error {
	if !s.askGit {
		return nil
	}
	flagged, err := s.flaggedByGit(ctx, dir, ceiling)
	if err != nil {
		return err
	}
	s.flagged, s.askGit = flagged, false
	return nil
}

func (s *Survey) addHidden(e gitops.IndexEntry, flag, change string) {
	s.Hidden = append(s.Hidden, HiddenFile{Path: e.Path, Flag: flag, Change: change})
	s.hidden = append(s.hidden, e)
	if e.AssumeUnchanged {
		s.unhide["--no-assume-unchanged"] = append(s.unhide["--no-assume-unchanged"], e.Path)
	}
	if e.SkipWorktree {
		s.unhide["--no-skip-worktree"] = append(s.unhide["--no-skip-worktree"], e.Path)
	}
}

// revealHidden makes the hidden files that differ from their entries
// visible to `git add` in the private index file index: it clears their
// flags, then re-enters each entry with the same mode and blob but no stat
// data. Clearing the flags is not enough: git never refreshes a flagged
// entry, so its stat data is still what it was when the flag was set, and
// an edit that kept the size, in the same second (or with core.trustctime
// off and the mtime put back), matches it; git add trusts matching stat
// data and would keep the old blob, so a reclaim would delete the edit. An
// entry without stat data never matches, and git add hashes the file.
func (s *Survey) revealHidden(ctx context.Context, dir, ceiling, index string) error {
	for _, flag := range []string{"--no-assume-unchanged", "--no-skip-worktree"} {
		if paths := s.unhide[flag]; len(paths) > 0 {
			in := strings.Join(paths, "\x00") + "\x00"
			if _, err := gitops.Run(ctx, dir, gitops.Cmd{IndexFile: index, Ceiling: ceiling, Stdin: []byte(in)},
				"update-index", flag, "-z", "--stdin"); err != nil {
				return err
			}
		}
	}
	if len(s.hidden) == 0 {
		return nil
	}
	var in strings.Builder
	for _, e := range s.hidden {
		fmt.Fprintf(&in, "%s %s\t%s\x00", e.Mode, e.ID, e.Path)
	}
	_, err := gitops.Run(ctx, dir, gitops.Cmd{IndexFile: index, Ceiling: ceiling, Stdin: []byte(in.String())},
		"update-index", "-z", "--index-info")
	return err
}

// flaggedByGit lists the assume-unchanged and skip-worktree entries with
// `git ls-files -s -v -z` (lowercase tags mark assume-unchanged, S marks
// skip-worktree), and the conflicted ones.
func (s *Survey) flaggedByGit(ctx context.Context, dir, ceiling string) ([]gitops.IndexEntry, error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, "ls-files", "-s", "-v", "-z")
	if err != nil {
		return nil, err
	}
	var out []gitops.IndexEntry
	s.Conflicted, s.stages = 0, nil
	for _, rec := range bytes.Split(bytes.TrimSuffix(res.Stdout, []byte{0}), []byte{0}) {
		e, err := parseStageRecord(rec)
		if err != nil {
			return nil, err
		}
		if e.Stage != 0 {
			s.Conflicted++
			s.stages = append(s.stages, e)
		} else if (e.AssumeUnchanged || e.SkipWorktree) && e.Mode != gitops.ModeGitlink {
			out = append(out, e)
		}
	}
	return out, nil
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// blobHash is the id git gives a blob with content, for ids of hashLen
// bytes.
func blobHash(content []byte, hashLen int) string {
	return objectHash("blob", content, hashLen)
}

// objectHash is the id git gives an object of type typ with content.
func objectHash(typ string, content []byte, hashLen int) string {
	hdr := fmt.Sprintf("%s %d\x00", typ, len(content))
	if hashLen == 32 {
		h := sha256.New()
		h.Write([]byte(hdr))
		h.Write(content)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
