package salvage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// addAll runs `git add -A --sparse` into the private index file index,
// as a salvage does, then records the executable bits core.fileMode=false
// hides (recordExecBits). A tracked file replaced by a FIFO, a socket or a
// device makes git add refuse ("can only add regular files"): such an
// entry is removed from the private index first and git add runs again,
// so that the salvage records the file as deleted (the special file
// itself cannot be kept; SpecialFiles names it).
//
// An untracked file whose name git refuses to put in an index (".git.",
// "GIT~1" or "sub/.git " that NTFS would take for .git, a symbolic link
// named .gitmodules) makes git add refuse too. Then git add runs again
// with --ignore-errors, and the files left untracked in the private index
// are returned, for the meta commit to keep beside the tree (refused.go).
//
// The files under an entry named .git that is no repository, which git
// never lists (dotgit.go), are looked for meanwhile, and returned with the
// refused ones.
func (s *Survey) addAll(ctx context.Context, dir, ceiling, index string) (refused []unpopulatedFile, _ error) {
	var dotgit []unpopulatedFile
	var dotgitErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		dotgit, dotgitErr = dotGitFiles(dir)
	}()
	refused, err := s.addAllListed(ctx, dir, ceiling, index)
	<-done
	if err == nil {
		err = dotgitErr
	}
	if err != nil {
		return nil, err
	}
	return append(refused, dotgit...), nil
}

// addAllListed is addAll for the files git lists.
func (s *Survey) addAllListed(ctx context.Context, dir, ceiling, index string) (refused []unpopulatedFile, _ error) {
	o := gitops.Cmd{IndexFile: index, Ceiling: ceiling}
	add := func(extra ...string) error {
		// advice.addEmbeddedRepo: an untracked nested repository is
		// reported in the result instead of in a hint on stderr.
		// core.safecrlf=false: git add would refuse (or warn about) an
		// end-of-line conversion it cannot undo; the salvage keeps such a
		// file's bytes as they are beside the tree (converted.go).
		args := append([]string{"-c", "advice.addEmbeddedRepo=false", "-c", "advice.updateSparsePath=false",
			"-c", "core.safecrlf=false", "add", "-A", "--sparse"}, extra...)
		_, err := gitops.Run(ctx, dir, o, args...)
		return err
	}
	err := add()
	var ge *gitops.Error
	if err != nil && errors.As(err, &ge) && strings.Contains(ge.Stderr, "can only add regular files") {
		special, serr := s.specialEntries(ctx, dir, ceiling, index)
		if serr != nil || len(special) == 0 {
			return nil, err
		}
		o.Stdin = []byte(strings.Join(special, "\x00") + "\x00")
		if _, rerr := gitops.Run(ctx, dir, o, "update-index", "--force-remove", "-z", "--stdin"); rerr != nil {
			return nil, rerr
		}
		o.Stdin = nil
		err = add()
	}
	if err != nil && errors.As(err, &ge) && strings.Contains(ge.Stderr, "invalid path '") {
		if rerr := add("--ignore-errors"); rerr != nil && !(errors.As(rerr, &ge) && strings.Contains(ge.Stderr, "invalid path '")) {
			return nil, rerr
		}
		var rerr error
		if refused, rerr = s.findRefused(ctx, dir, ceiling, index); rerr != nil {
			return nil, rerr
		}
		if len(refused) == 0 {
			return nil, err
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return refused, s.recordExecBits(ctx, dir, ceiling, index)
}

// specialEntries lists the entries of the index file index whose path in
// the worktree dir is neither a regular file, a directory nor a symbolic
// link.
func (s *Survey) specialEntries(ctx context.Context, dir, ceiling, index string) ([]string, error) {
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, err
	}
	var paths []string
	seen := map[string]bool{}
	check := func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			paths = append(paths, p)
		}
	}
	if err := gitops.ScanIndex(data, s.hashLen, func(e gitops.IndexEntry) { check(e.Path) }); err == nil {
		return paths, nil
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling}, "ls-files", "-z")
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if p != "" {
			check(p)
		}
	}
	return paths, nil
}
