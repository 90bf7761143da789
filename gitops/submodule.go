package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Submodules returns the paths (slash-separated, relative to the top
// level) of the submodule entries (gitlinks) in the index of the worktree
// whose top level is worktree.
//
// It reads the index file in process when it can (a millisecond on 20,000
// entries); an index it cannot parse (split, another hash, damaged) is
// asked of git.
func Submodules(ctx context.Context, worktree string) ([]string, error) {
	dir, o, err := OpenTree(worktree)
	if err != nil {
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(o.GitDir, "index")); err == nil {
		if links, err := IndexGitlinks(data, 20); err == nil {
			return links, nil
		}
	} else if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no index yet: no submodules
	}
	o.ReadOnly = true
	res, err := Run(ctx, dir, o, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	return parseGitlinks(res.Stdout)
}

// parseGitlinks reads `git ls-files --stage -z`: "<mode> <id> <stage>\t<path>\0".
func parseGitlinks(out []byte) ([]string, error) {
	var paths []string
	seen := map[string]bool{}
	for len(out) > 0 {
		rec, rest, ok := bytes.Cut(out, []byte{0})
		if !ok {
			return nil, Unexpected("git ls-files", "record without a NUL terminator")
		}
		out = rest
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok || len(path) == 0 {
			return nil, Unexpected("git ls-files", "record %q has no path", rec)
		}
		if bytes.HasPrefix(meta, []byte("160000 ")) && !seen[string(path)] {
			seen[string(path)] = true
			paths = append(paths, string(path))
		}
	}
	return paths, nil
}

// FetchInto copies refs, with the objects they need, from the repository
// at src (a path) into the repository containing dir: `git fetch --no-tags
// --no-write-fetch-head SRC REFSPEC...`. It is how commits that exist only
// in a submodule's per-worktree repository are kept before that worktree
// is removed.
func FetchInto(ctx context.Context, dir, src string, refspecs ...string) error {
	if len(refspecs) == 0 {
		return errors.New("gitops: FetchInto needs a refspec")
	}
	// uploadpack.allowAnySHA1InWant: refspecs may name commits by id
	// (stash entries that only the stash's reflog holds); git passes -c
	// settings on to the upload-pack it runs for the local source.
	args := append([]string{"-c", "protocol.file.allow=always", "-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet", "--no-tags",
		"--no-write-fetch-head", "--no-recurse-submodules", "--", src}, refspecs...)
	if _, err := Run(ctx, dir, Cmd{}, args...); err != nil {
		return fmt.Errorf("gitops: keeping refs of %s: %w", src, err)
	}
	return nil
}

// StashEntries returns the stash entries of the repository whose worktree
// has its top level at worktree, newest (stash@{0}) first, read in process
// from the stash's reflog: refs/stash names only the newest.
func StashEntries(worktree string) ([]string, error) {
	gitDir, err := WorktreeGitDir(worktree)
	if err != nil {
		return nil, err
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	b, err := os.ReadFile(filepath.Join(common, "logs", "refs", "stash"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids, err := ParseReflogNew(b)
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: %w", filepath.Join(common, "logs", "refs", "stash"), err)
	}
	return ids, nil
}

// ParseReflogNew returns the new ids of a reflog's lines ("<old> <new>
// <who> <when>\t<message>"), newest (the last line) first.
func ParseReflogNew(b []byte) ([]string, error) {
	var ids []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 || !IsObjectID(f[0]) || !IsObjectID(f[1]) {
			return nil, fmt.Errorf("malformed reflog line %q", line)
		}
		ids = append([]string{f[1]}, ids...)
	}
	return ids, nil
}
