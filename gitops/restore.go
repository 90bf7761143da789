package gitops

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
)

// A RestoreReport says what RestoreInto put back and what it could not.
type RestoreReport struct {
	Restored    []string
	NotRestored []string
}

// RestoreInto fills the empty worktree whose top level is worktree (made
// by AddWorktree with NoCheckout at the salvage's HEAD) from the salvage commit
// commit with layout l: the worktree's files from the salvage tree
// (deletions stay deleted, modes and symbolic links as they were, files
// outside a sparse cone left out as they were), then the worktree's own
// git-directory files from the meta commit (per-worktree refs, reflogs, an
// interrupted operation's state, per-worktree config, sparse patterns),
// the bytes of the files a checkout converts as they were on disk (written
// over what the checkout wrote, see converted.go), and last the raw index,
// whole: staged versions, conflicts,
// intent-to-add entries and the assume-unchanged and skip-worktree flags.
// A version 1 salvage has no index: the index is HEAD's, so every change
// shows as unstaged.
func RestoreInto(ctx context.Context, worktree, commit string, l SalvageLayout) (RestoreReport, error) {
	var rep RestoreReport
	dir, ceiling, err := topLevel(worktree)
	if err != nil {
		return rep, err
	}
	gitDir, err := worktreeGitDir(dir)
	if err != nil {
		return rep, err
	}
	hashLen := len(commit) / 2
	var meta map[string][]byte
	if l.Version >= 2 && l.Meta != "" {
		res, err := git(ctx, dir, cmdOpts{readOnly: true, ceiling: ceiling}, "archive", "--format=tar", l.Meta)
		if err != nil {
			return rep, err
		}
		if meta, err = readMetaTar(res.stdout); err != nil {
			return rep, fmt.Errorf("gitops: meta commit %s: %w", l.Meta, err)
		}
	}
	rawIndex, haveIndex := meta["index"]

	// The files. The skip-worktree files that were not on disk (outside a
	// sparse cone) are left out: through a private index holding the
	// salvage tree with those marked, which checkout-index skips.
	// Otherwise one `git read-tree --reset -u` writes them all (into the
	// worktree's own index, which is replaced below).
	var absent, sparseDirs []string
	if haveIndex {
		present := map[string]bool{}
		for _, p := range strings.Split(string(meta["majlis/skip-worktree-present"]), "\x00") {
			present[p] = true
		}
		if err := scanIndex(rawIndex, hashLen, func(e indexEntry) {
			switch {
			case e.Stage != 0 || !e.SkipWorktree || present[e.Path]:
			case e.Mode == ModeTree:
				// A sparse index's folder outside the cone ("other/"):
				// none of its files was on disk.
				sparseDirs = append(sparseDirs, strings.TrimSuffix(e.Path, "/")+"/")
			default:
				absent = append(absent, e.Path)
			}
		}); err != nil {
			// A split index, say: its skip-worktree entries are not known
			// here. That matters only with a sparse checkout.
			if _, sparse := meta["info/sparse-checkout"]; sparse {
				rep.NotRestored = append(rep.NotRestored, "sparse checkout: the index could not be read, so files outside the cone were written too")
			}
		}
	}
	if len(sparseDirs) > 0 {
		res, err := git(ctx, dir, cmdOpts{readOnly: true, ceiling: ceiling}, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit+"^{tree}")
		if err != nil {
			return rep, err
		}
		for _, p := range strings.Split(string(res.stdout), "\x00") {
			for _, d := range sparseDirs {
				if strings.HasPrefix(p, d) {
					absent = append(absent, p)
					break
				}
			}
		}
	}
	if len(absent) == 0 {
		if _, err := git(ctx, dir, cmdOpts{ceiling: ceiling}, "read-tree", "--reset", "-u", commit+"^{tree}"); err != nil {
			return rep, err
		}
	} else {
		tmp := filepath.Join(gitDir, "majlis-restore.index")
		defer func() { os.Remove(tmp); os.Remove(tmp + ".lock") }()
		o := cmdOpts{indexFile: tmp, ceiling: ceiling}
		if _, err := git(ctx, dir, o, "read-tree", commit+"^{tree}"); err != nil {
			return rep, err
		}
		o.stdin = []byte(strings.Join(absent, "\x00") + "\x00")
		if _, err := git(ctx, dir, o, "update-index", "--skip-worktree", "-z", "--stdin"); err != nil {
			return rep, err
		}
		o.stdin = nil
		if _, err := git(ctx, dir, o, "checkout-index", "--all", "--force"); err != nil {
			return rep, err
		}
	}
	rep.Restored = append(rep.Restored, "files")

	if l.Version < 2 {
		if l.Head != "" {
			if _, err := git(ctx, dir, cmdOpts{ceiling: ceiling}, "read-tree", l.Head); err != nil {
				return rep, err
			}
		}
		rep.NotRestored = append(rep.NotRestored,
			"index: a salvage made by an earlier majlis keeps no index, so every change shows as unstaged",
			"per-worktree refs, reflogs and an interrupted operation's state: not kept by earlier salvages")
		return rep, nil
	}

	if l.Meta == "" {
		// Nothing beyond HEAD and the index commit, whose tree is the
		// whole index.
		if _, err := git(ctx, dir, cmdOpts{ceiling: ceiling}, "read-tree", l.Index); err != nil {
			return rep, err
		}
		rep.Restored = append(rep.Restored, "index")
		return rep, nil
	}

	// The git directory's own files, then the index.
	names := make([]string, 0, len(meta))
	for n := range meta {
		names = append(names, n)
	}
	sort.Strings(names)
	var refs []string
	for _, n := range names {
		switch {
		case n == "index" || n == "HEAD" || strings.HasPrefix(n, "conflicts/") || strings.HasPrefix(n, "resolve-undo/") || strings.HasPrefix(n, "majlis/"):
			continue
		case !keptName(n):
			rep.NotRestored = append(rep.NotRestored, n+": not a file majlis restores")
			continue
		}
		dst := filepath.Join(gitDir, filepath.FromSlash(n))
		if n == "logs/HEAD" {
			// The old reflog, then the entry git just wrote.
			now, err := os.ReadFile(dst)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return rep, err
			}
			if err := writeFileAtomic(dst, append(append([]byte{}, meta[n]...), now...)); err != nil {
				return rep, err
			}
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			rep.NotRestored = append(rep.NotRestored, n+": git made its own on the new worktree")
			continue
		}
		if pseudoRefName(n) && !slices.Contains(keptFiles, n) && !pseudoRefContent(meta[n]) {
			rep.NotRestored = append(rep.NotRestored, n+": not a ref")
			continue
		}
		if err := writeFileAtomic(dst, meta[n]); err != nil {
			return rep, err
		}
		if n == "config.worktree" {
			dropped, err := restrictWorktreeConfig(ctx, dir, dst)
			if err != nil {
				return rep, err
			}
			for _, key := range dropped {
				rep.NotRestored = append(rep.NotRestored, "config.worktree: "+key+" (a restore writes back only user.name, user.email and the sparse-checkout settings; the salvage keeps the file: set it again by hand if you trust it)")
			}
		}
		for _, ns := range perWorktreeRefs {
			if strings.HasPrefix(n, ns) {
				refs = append(refs, n)
			}
		}
	}
	rep.Restored = append(rep.Restored, refs...)
	for _, op := range operations {
		if _, ok := meta[op.file]; ok || hasPrefixKey(meta, op.file+"/") {
			rep.Restored = append(rep.Restored, "the state of the interrupted "+op.op)
			break
		}
	}
	if _, ok := meta["logs/HEAD"]; ok {
		rep.Restored = append(rep.Restored, "HEAD's reflog")
	}
	if list, ok := meta[convertedList]; ok {
		n, failed, err := restoreConverted(ctx, dir, ceiling, l.Meta, commit+"^{tree}", list)
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.Restored = append(rep.Restored, fmt.Sprintf("the bytes of %d files as they were on disk, where git's end-of-line conversion or filters would change them", n))
		}
		rep.NotRestored = append(rep.NotRestored, failed...)
	}
	if _, ok := meta[unpopulatedPrefix]; ok {
		n, failed, err := restoreUnpopulated(ctx, dir, ceiling, l.Meta, commit+"^{tree}")
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.Restored = append(rep.Restored, fmt.Sprintf("%d files in the folders of submodules that were not checked out", n))
		}
		rep.NotRestored = append(rep.NotRestored, failed...)
	}
	if list, ok := meta[refusedList]; ok {
		n, failed, err := restoreRefused(ctx, dir, ceiling, l.Meta, list)
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.Restored = append(rep.Restored, fmt.Sprintf("%d files whose names git refuses to track", n))
		}
		rep.NotRestored = append(rep.NotRestored, failed...)
	}
	// After the files kept outside the tree, which may be among them.
	if data, ok := meta[privateModesFile]; ok {
		n, failed := restorePrivate(dir, data)
		if n > 0 {
			rep.Restored = append(rep.Restored, fmt.Sprintf("the permissions of %d files others could not read", n))
		}
		rep.NotRestored = append(rep.NotRestored, failed...)
	}
	if haveIndex {
		if err := writeFileAtomic(filepath.Join(gitDir, "index"), rawIndex); err != nil {
			return rep, err
		}
		rep.Restored = append(rep.Restored, "index")
	}
	return rep, nil
}

// keptName reports whether n is one of the git-directory files a salvage
// keeps (see keptFiles and keptDirs): restore writes nothing else.
func keptName(n string) bool {
	if n != path.Clean(n) || strings.HasPrefix(n, "/") || strings.HasPrefix(n, "../") || n == ".." {
		return false
	}
	for _, f := range keptFiles {
		if n == f {
			return true
		}
	}
	if strings.HasPrefix(n, "sharedindex.") && !strings.Contains(n, "/") || pseudoRefName(n) {
		return true
	}
	for _, d := range keptDirs {
		if strings.HasPrefix(n, d+"/") && !strings.HasSuffix(n, ".lock") {
			return true
		}
	}
	return false
}

func hasPrefixKey(m map[string][]byte, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// readMetaTar reads the regular files of a `git archive --format=tar`
// stream: name -> content. Anything but directories, regular files and
// git's global pax header (the commit id) is refused.
func readMetaTar(b []byte) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		case tar.TypeSymlink:
			if !strings.HasPrefix(h.Name, unpopulatedPrefix) && !strings.HasPrefix(h.Name, refusedPrefix) {
				return nil, fmt.Errorf("entry %q of type %q", h.Name, h.Typeflag)
			}
		default:
			return nil, fmt.Errorf("entry %q of type %q", h.Name, h.Typeflag)
		}
		if h.Name == "" || h.Name != path.Clean(h.Name) || strings.HasPrefix(h.Name, "/") || strings.HasPrefix(h.Name, "../") {
			return nil, fmt.Errorf("entry name %q", h.Name)
		}
		if strings.HasPrefix(h.Name, unpopulatedPrefix) || strings.HasPrefix(h.Name, refusedPrefix) || strings.HasPrefix(h.Name, convertedPrefix) {
			// Files of submodule folders, files whose names git refuses
			// (symbolic links among them), and files' bytes as they were
			// on disk: restoreUnpopulated, restoreRefused and
			// restoreConverted read them from the commit.
			if strings.HasPrefix(h.Name, unpopulatedPrefix) {
				files[unpopulatedPrefix] = nil
			}
			continue
		}
		if _, dup := files[h.Name]; dup {
			return nil, fmt.Errorf("entry %q twice", h.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = data
	}
}

// writeFileAtomic replaces name with data durably (internal/durable),
// creating parent directories.
func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return durable.Replace(dir, filepath.Base(name), data)
}

// restoredConfig lists the per-worktree settings a restore writes back:
// the committer's identity and those of a sparse checkout. A salvage ref can come from anywhere (fetched
// from a shared remote, written by hand), and other settings can point git
// at another directory (core.worktree, core.bare, include.path) or run
// programs (core.fsmonitor, core.hooksPath, filters, aliases).
var restoredConfig = map[string]bool{
	"user.name":               true,
	"user.email":              true,
	"core.sparsecheckout":     true,
	"core.sparsecheckoutcone": true,
	"index.sparse":            true,
}

// restrictWorktreeConfig removes from the config file path every setting
// that restoredConfig does not list, and returns their names.
func restrictWorktreeConfig(ctx context.Context, dir, path string) ([]string, error) {
	res, err := git(ctx, dir, cmdOpts{readOnly: true}, "config", "--file", path, "--null", "--name-only", "--list")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var dropped []string
	for _, name := range strings.Split(string(res.stdout), "\x00") {
		key := strings.ToLower(strings.TrimSuffix(name, "\n"))
		if key == "" || restoredConfig[key] || seen[key] {
			continue
		}
		seen[key] = true
		dropped = append(dropped, name)
	}
	for _, key := range dropped {
		if _, err := git(ctx, dir, cmdOpts{okCodes: []int{5}}, "config", "--file", path, "--unset-all", key); err != nil {
			return nil, err
		}
	}
	return dropped, nil
}

// SetUnbornBranch points HEAD of the worktree whose top level is worktree
// at branch (a short name, refs/heads/ implied), which must not exist: an
// unborn branch, as `git checkout --orphan` leaves it, the index and the
// files untouched. The first commit made there creates the branch. A
// branch that exists gives ErrBranchExists and changes nothing.
func SetUnbornBranch(ctx context.Context, worktree, branch string) error {
	if err := CheckBranchName(branch); err != nil {
		return err
	}
	dir, o, err := openTree(worktree)
	if err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	ro := o
	ro.readOnly, ro.okCodes = true, []int{1}
	res, err := git(ctx, dir, ro, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return err
	}
	if res.code == 0 {
		return fmt.Errorf("%w: %s", ErrBranchExists, branch)
	}
	_, err = git(ctx, dir, o, "symbolic-ref", "-m", "majlis restore: unborn branch "+branch, "HEAD", ref)
	return err
}
