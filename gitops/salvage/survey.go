package salvage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/wire"
)

// HiddenFile is wire.HiddenFile: the result type is defined once, in the wire contract.
type HiddenFile = wire.HiddenFile

// A Survey is what a worktree holds beyond its files: what a salvage keeps
// besides the worktree's tree and the index's tree.
type Survey struct {
	// Head is HEAD's commit ("" on an unborn branch); Branch the full ref
	// HEAD names ("" when detached).
	Head, Branch string
	// Pins are the commits only this worktree holds, HEAD first.
	Pins []gitops.Pin
	// Refs are the per-worktree refs (refs/worktree/*, refs/bisect/*,
	// refs/rewritten/*) and their values.
	Refs map[string]string
	// Operation names an interrupted operation ("rebase", "merge",
	// "cherry-pick", "revert", "bisect", "sequencer"), or is empty.
	Operation string
	// Hidden lists assume-unchanged and skip-worktree files that differ
	// from their index entries.
	Hidden []HiddenFile
	// Conflicted and IntentToAdd count the index entries `git write-tree`
	// leaves out: conflicted paths and intent-to-add entries.
	Conflicted, IntentToAdd int
	// Unpopulated lists the files (and symbolic links) in the folders of
	// submodules that are not checked out: git status and git add do not
	// see them; a salvage keeps them in its meta commit (unpopulated.go).
	Unpopulated []string

	gitDir, commonDir string
	// files are the worktree's own git-directory files a salvage keeps,
	// relative to gitDir, slash-separated, sorted.
	files []string
	// present are the skip-worktree paths present in the worktree (a
	// restore writes only those of them).
	present []string
	// unhide are hidden paths whose flag a salvage clears in its private
	// index so that git add records their worktree state, by flag.
	unhide map[string][]string
	// hidden are the index entries of Hidden, which a salvage re-enters
	// in its private index without their stat data (see revealHidden).
	hidden []gitops.IndexEntry
	// stages are the conflicted index entries, kept as blobs; resolveUndo
	// the stages of conflicts resolved since (the index's resolve-undo
	// extension), kept as blobs too: often only the index holds them.
	stages, resolveUndo []gitops.IndexEntry
	// flagged are the assume-unchanged and skip-worktree entries; askGit
	// says the index could not be read in process.
	flagged, toHash []gitops.IndexEntry
	askGit          bool
	hashLen         int
	// cacheTree is the index's tree when its cache-tree extension holds
	// a valid root (what `git write-tree` would answer), else "".
	cacheTree string
	// indexData is the index file's content as newSurvey read it.
	indexData []byte
	// ignoresFileMode says git runs in the worktree with
	// core.fileMode=false; execBits are the tracked files whose bit it
	// does not see, until mergeExecBits adds them to Hidden (filemode.go).
	ignoresFileMode bool
	execBits        []HiddenFile
	// unpopulated are the files of Unpopulated with their modes; dir the
	// worktree's top level, where they are.
	unpopulated []unpopulatedFile
	dir         string
	// private are the records of privateModesFile: the files the salvage
	// keeps that others may not read (private.go).
	private []string
	// refused are the untracked files whose names git refuses to put in
	// an index, found by addAll (refused.go).
	refused []unpopulatedFile
	// conversion are the settings under which git may convert files
	// (core.autocrlf, attributes from elsewhere); attributesInIndex says
	// the index holds a .gitattributes file (or could not be read);
	// converted are the files whose bytes on disk a checkout would not
	// give back, which the salvage keeps raw (converted.go).
	conversion        conversionSettings
	attributesInIndex bool
	converted         []unpopulatedFile
	// commonOpts, when set, are the options git runs with in the common
	// directory (SurveyEntry names it, whose config may send git to a
	// work tree that is gone).
	commonOpts *gitops.Cmd
}

// Empty reports whether the survey found nothing a salvage must keep
// beyond the trees: no pinned commit, per-worktree ref, interrupted
// operation, hidden edit, resolved conflict's stages, per-worktree config
// or sparse patterns.
func (s *Survey) Empty() bool {
	return len(s.Pins) == 0 && len(s.Refs) == 0 && s.Operation == "" && len(s.Hidden) == 0 && len(s.resolveUndo) == 0 &&
		len(s.Unpopulated) == 0 && len(s.Settings()) == 0
}

// Settings lists the per-worktree settings the worktree's git directory
// holds ("config.worktree", "info/sparse-checkout"): a removal deletes
// them, a salvage keeps them. One with the same bytes as the main
// worktree's is left out: `git worktree add` copies those into every new
// worktree, so they are not the workspace's own.
func (s *Survey) Settings() []string {
	var out []string
	for _, f := range s.files {
		if f != "config.worktree" && f != "info/sparse-checkout" {
			continue
		}
		own, err := os.ReadFile(filepath.Join(s.gitDir, filepath.FromSlash(f)))
		main, merr := os.ReadFile(filepath.Join(s.commonDir, filepath.FromSlash(f)))
		if err == nil && merr == nil && bytes.Equal(own, main) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// keptFiles are the files of a worktree's own git directory that salvage
// keeps (and restore puts back); keptDirs the directories kept whole. The
// rest is git's bookkeeping of the worktree entry (gitdir, commondir,
// locked), lock files, and submodules' repositories (modules/), which
// reclaim keeps separately.
var (
	keptFiles = []string{"HEAD", "index", "ORIG_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_AUTOSTASH",
		"AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "SQUASH_MSG", "FETCH_HEAD", "BISECT_START", "BISECT_LOG",
		"BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_RUN", "BISECT_HEAD",
		"BISECT_FIRST_PARENT", "config.worktree", "info/sparse-checkout", "logs/HEAD"}
	keptDirs = []string{"rebase-merge", "rebase-apply", "sequencer", "refs/worktree", "refs/bisect", "refs/rewritten",
		"logs/refs/worktree", "logs/refs/bisect", "logs/refs/rewritten"}
	// operations maps a state file or directory to the operation it marks.
	operations = []struct{ file, op string }{
		{"rebase-merge", "rebase"}, {"rebase-apply", "rebase"}, {"MERGE_HEAD", "merge"},
		{"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"}, {"sequencer", "sequencer"},
		{"BISECT_START", "bisect"},
	}
	// perWorktreeRefs are the ref namespaces private to a worktree.
	perWorktreeRefs = []string{"refs/worktree/", "refs/bisect/", "refs/rewritten/"}
)

// SurveyWorktree finds what the worktree whose top level is worktree holds
// beyond its files (see Survey), changing nothing. It reads the worktree's
// git directory and index in process, and runs git to tell commits from
// other objects, to find which of them no shared ref reaches, and to hash
// hidden files.
func SurveyWorktree(ctx context.Context, worktree string) (*Survey, error) {
	dir, ceiling, err := gitops.TopLevel(worktree)
	if err != nil {
		return nil, err
	}
	gitDir, err := gitops.WorktreeGitDir(dir)
	if err != nil {
		return nil, err
	}
	r, err := gitops.OpenReader(ctx, dir)
	if err != nil {
		return nil, err
	}
	head, err := r.Head(ctx)
	if err != nil {
		return nil, err
	}
	return survey(ctx, dir, ceiling, gitDir, head, nil)
}

// survey does SurveyWorktree's work; index, when not nil, is the index
// file's content already read.
func survey(ctx context.Context, dir, ceiling, gitDir, head string, index []byte) (*Survey, error) {
	s, err := newSurvey(gitDir, head, index)
	if err != nil {
		return nil, err
	}
	if err := s.readGitDir(); err != nil {
		return nil, err
	}
	if err := workers.Concurrently(
		func() error { return s.findPins(ctx) },
		func() error { return s.findHidden(ctx, dir, ceiling) },
		func() error { return s.findExecBits(ctx, dir, ceiling, s.indexData) },
		func() error { return s.findUnpopulated(ctx, dir, ceiling) },
	); err != nil {
		return nil, err
	}
	s.mergeExecBits()
	return s, nil
}

// newSurvey does the first in-process part of a survey: the index's
// flagged and conflicted entries and its cache-tree. readGitDir (the
// git directory's files), then findPins and findHidden, which run git,
// follow.
func newSurvey(gitDir, head string, index []byte) (*Survey, error) {
	s := &Survey{Head: head, Refs: map[string]string{}, gitDir: gitDir, unhide: map[string][]string{}}
	s.commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		s.commonDir = filepath.Clean(c)
	}
	s.hashLen = 20
	if len(head) == 64 {
		s.hashLen = 32
	}
	if index == nil {
		var err error
		index, err = os.ReadFile(filepath.Join(gitDir, "index"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	s.indexData = index
	if len(index) > 0 {
		end := -1
		err := gitops.ScanIndexAt(index, s.hashLen, func(e gitops.IndexEntry) {
			switch {
			case e.Stage != 0:
				s.Conflicted++
				s.stages = append(s.stages, e)
			case e.IntentToAdd:
				s.IntentToAdd++
			}
			if e.Stage == 0 && (e.AssumeUnchanged || e.SkipWorktree) && e.Mode != gitops.ModeTree && e.Mode != gitops.ModeGitlink {
				s.flagged = append(s.flagged, e)
			}
			if isAttributesFile(e.Path) {
				s.attributesInIndex = true
			}
		}, &end)
		if err != nil {
			// A split index, or one this code cannot read: findHidden
			// asks git for the entries instead.
			s.Conflicted, s.IntentToAdd, s.stages, s.flagged = 0, 0, nil, nil
			s.askGit, s.attributesInIndex = true, true
			if errors.Is(err, gitops.ErrSplitIndex) && end >= 0 {
				// A split index keeps its extensions in this file.
				s.resolveUndo, _ = gitops.IndexResolveUndo(index, s.hashLen, end)
			}
		} else {
			if s.Conflicted == 0 && s.IntentToAdd == 0 {
				s.cacheTree = gitops.CacheTreeRoot(index, s.hashLen, end)
			}
			// Unreadable resolve-undo data is not kept; the raw index is.
			s.resolveUndo, _ = gitops.IndexResolveUndo(index, s.hashLen, end)
		}
	}
	return s, nil
}

// readGitDir lists the kept files of the git directory, its per-worktree
// refs, HEAD's branch and the interrupted operation; findPins, Empty and
// needsMeta need it first.
func (s *Survey) readGitDir() error {
	if err := s.collectFiles(); err != nil {
		return fmt.Errorf("salvage: reading %s: %w", s.gitDir, err)
	}
	for _, o := range operations {
		if _, err := os.Lstat(filepath.Join(s.gitDir, o.file)); err == nil {
			s.Operation = o.op
			break
		}
	}
	return nil
}

// collectFiles lists the kept files of the git directory and reads the
// per-worktree refs and HEAD's branch.
func (s *Survey) collectFiles() error {
	for _, f := range keptFiles {
		fi, err := os.Lstat(filepath.Join(s.gitDir, filepath.FromSlash(f)))
		if err == nil && fi.Mode().IsRegular() {
			s.files = append(s.files, f)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
			return err
		}
	}
	// Pseudo-refs of the worktree's own (git update-ref KEEP_HEAD C run
	// in it): git writes them into this directory, without a reflog, so a
	// commit only one of them names goes with it.
	entries, err := os.ReadDir(s.gitDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && pseudoRefName(n) && !slices.Contains(keptFiles, n) {
			if b, err := os.ReadFile(filepath.Join(s.gitDir, n)); err == nil && pseudoRefContent(b) {
				s.files = append(s.files, n)
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(s.gitDir, "sharedindex.*")); len(m) > 0 {
		for _, f := range m {
			s.files = append(s.files, filepath.Base(f))
		}
	}
	for _, d := range keptDirs {
		root := filepath.Join(s.gitDir, filepath.FromSlash(d))
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == root {
					return nil
				}
				return err
			}
			if !e.Type().IsRegular() || strings.HasSuffix(p, ".lock") {
				return nil
			}
			rel, err := filepath.Rel(s.gitDir, p)
			if err != nil {
				return err
			}
			s.files = append(s.files, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Strings(s.files)
	if b, err := os.ReadFile(filepath.Join(s.gitDir, "HEAD")); err == nil {
		if ref, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "ref: "); ok {
			s.Branch = ref
		}
	}
	for _, f := range s.files {
		for _, ns := range perWorktreeRefs {
			if strings.HasPrefix(f, ns) {
				b, err := os.ReadFile(filepath.Join(s.gitDir, filepath.FromSlash(f)))
				if err != nil {
					return err
				}
				s.Refs[f] = strings.TrimRight(string(b), "\n")
			}
		}
	}
	return nil
}

// findPins reads every object id named in the kept files (refs, reflogs,
// operation state), keeps the commits, and asks git which of them no
// shared ref reaches: `git rev-list --not --single-worktree --all`, run in
// the common directory so that this worktree's HEAD and private refs do
// not count. The stash does not count either: it is shared by every
// worktree, and an entry is gone once anyone drops it or it expires, so a
// commit only a stash entry reaches (a stash made on a detached HEAD) is
// pinned. Of those, only the tips are pins: a commit that is the
// parent of another unreachable one is kept through it.
func (s *Survey) findPins(ctx context.Context) error {
	type cand struct{ id, source string }
	var cands []cand
	seen := map[string]bool{}
	if s.Head != "" {
		seen[s.Head] = true
		// HEAD on a branch is that branch's tip: a shared ref holds it,
		// and so everything it reaches.
		if s.Branch == "" {
			cands = append(cands, cand{s.Head, "HEAD"})
		}
	}
	for _, f := range s.files {
		if f == "index" || strings.HasPrefix(f, "sharedindex.") || f == "HEAD" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.gitDir, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		for _, id := range objectIDs(b) {
			if !seen[id] {
				seen[id] = true
				cands = append(cands, cand{id, f})
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, c := range cands {
		in.WriteString(c.id + "\n")
	}
	res, err := gitops.Run(ctx, s.commonDir, s.onCommon(in.Bytes()),
		"cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return err
	}
	commits := map[string]bool{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if id, typ, ok := strings.Cut(line, " "); ok && typ == "commit" && gitops.IsObjectID(id) {
			commits[id] = true
		}
	}
	in.Reset()
	for _, c := range cands {
		if commits[c.id] {
			in.WriteString(c.id + "\n")
		}
	}
	if in.Len() == 0 {
		return nil
	}
	res, err = gitops.Run(ctx, s.commonDir, s.onCommon(in.Bytes()),
		"rev-list", "--parents", "--stdin", "--not", "--single-worktree", "--exclude=refs/stash", "--all")
	if err != nil {
		return err
	}
	unreachable, parents := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, id := range f {
			if !gitops.IsObjectID(id) {
				return gitops.Unexpected("git rev-list", "%q is not an object id", id)
			}
		}
		unreachable[f[0]] = true
		for _, p := range f[1:] {
			parents[p] = true
		}
	}
	for _, c := range cands {
		if unreachable[c.id] && !parents[c.id] {
			s.Pins = append(s.Pins, gitops.Pin{Commit: c.id, Source: c.source})
		}
	}
	return nil
}

// pseudoRefName reports whether n has the syntax git gives a worktree's
// own pseudo-refs (KEEP_HEAD: capital letters, '-' and '_'), ending in
// _HEAD as every pseudo-ref git writes does.
func pseudoRefName(n string) bool {
	if len(n) <= len("_HEAD") || !strings.HasSuffix(n, "_HEAD") {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// pseudoRefContent reports whether b is what git writes for a ref: one
// object id, or a symbolic ref, on one line.
func pseudoRefContent(b []byte) bool {
	line, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok || bytes.IndexByte(line, '\n') >= 0 {
		return false
	}
	return gitops.IsObjectID(string(line)) || bytes.HasPrefix(line, []byte("ref: refs/"))
}

// objectIDs returns the full object ids (40 or 64 hex digits standing
// alone) in b, in order.
func objectIDs(b []byte) []string {
	var ids []string
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }
	for i := 0; i < len(b); {
		if !isHex(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isHex(b[j]) {
			j++
		}
		if n := j - i; (n == 40 || n == 64) && (i == 0 || !isWordByte(b[i-1])) && (j == len(b) || !isWordByte(b[j])) {
			ids = append(ids, string(b[i:j]))
		}
		i = j
	}
	return ids
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// surveyed is what Snapshot and WorktreeTree both start from: the
// worktree's top level, the ceiling that keeps git inside it, its git
// directory, HEAD (empty when unborn), and a survey of its index with the
// flagged (assume-unchanged, skip-worktree) entries loaded and checked.
type surveyed struct {
	dir, ceiling, gitDir, parent string
	sv                           *Survey
}

// surveyWorktree builds a surveyed for the worktree whose top level is
// worktree; what names the operation in errors.
func surveyWorktree(ctx context.Context, worktree, what string) (surveyed, error) {
	var s surveyed
	var err error
	if s.dir, s.ceiling, err = gitops.TopLevel(worktree); err != nil {
		return s, err
	}
	if s.gitDir, err = gitops.WorktreeGitDir(s.dir); err != nil {
		return s, err
	}
	r, err := gitops.OpenReader(ctx, s.dir)
	if err != nil {
		return s, err
	}
	if s.parent, err = r.Head(ctx); err != nil {
		return s, err
	}
	indexData, err := os.ReadFile(filepath.Join(s.gitDir, "index"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("salvage: %s of %s: %w", what, s.dir, err)
	}
	if s.sv, err = newSurvey(s.gitDir, s.parent, indexData); err != nil {
		return s, err
	}
	err = workers.Concurrently(func() error {
		if err := s.sv.loadFlagged(ctx, s.dir, s.ceiling); err != nil {
			return err
		}
		return s.sv.checkFlagged(s.dir)
	}, func() error {
		return s.sv.findExecBits(ctx, s.dir, s.ceiling, indexData)
	}, func() error {
		return s.sv.findUnpopulated(ctx, s.dir, s.ceiling)
	})
	if err != nil {
		return s, err
	}
	s.sv.mergeExecBits()
	return s, nil
}

// parseStageRecord parses one record of `git ls-files -s -v -z`: the tag
// (lower case: assume-unchanged; S: skip-worktree), mode, object id and
// stage, a tab, and the path.
func parseStageRecord(rec []byte) (gitops.IndexEntry, error) {
	meta, path, ok := bytes.Cut(rec, []byte{'\t'})
	f := strings.Fields(string(meta))
	if !ok || len(f) != 4 || len(f[0]) != 1 {
		return gitops.IndexEntry{}, gitops.Unexpected("git ls-files", "record %q", rec)
	}
	mode, err := gitops.ParseMode(f[1])
	if err != nil {
		return gitops.IndexEntry{}, err
	}
	e := gitops.IndexEntry{Path: string(path), Mode: mode, ID: f[2]}
	fmt.Sscan(f[3], &e.Stage)
	tag := f[0][0]
	e.AssumeUnchanged = tag >= 'a' && tag <= 'z'
	e.SkipWorktree = tag == 'S' || tag == 's'
	return e, nil
}
