package salvage

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

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
)

// A RestoreReport says what RestoreInto put back and what it could not.
type RestoreReport struct {
	Restored    []string
	NotRestored []string
}

// RestoreInto fills the empty worktree whose top level is worktree (made
// by gitops.AddWorktree with NoCheckout at the salvage's HEAD) from the salvage commit
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
func RestoreInto(ctx context.Context, worktree, commit string, l Layout) (RestoreReport, error) {
	r := &restoreRun{ctx: ctx, commit: commit, l: l}
	var err error
	if r.dir, r.ceiling, err = gitops.TopLevel(worktree); err != nil {
		return r.rep, err
	}
	if r.gitDir, err = gitops.WorktreeGitDir(r.dir); err != nil {
		return r.rep, err
	}
	if err := r.readMeta(); err != nil {
		return r.rep, err
	}
	if err := r.writeFiles(); err != nil {
		return r.rep, err
	}
	if l.Version < 2 {
		return r.rep, r.legacyIndex()
	}
	if l.Meta == "" {
		// Nothing beyond HEAD and the index commit, whose tree is the
		// whole index.
		if _, err := gitops.Run(ctx, r.dir, gitops.Cmd{Ceiling: r.ceiling}, "read-tree", l.Index); err != nil {
			return r.rep, err
		}
		r.rep.Restored = append(r.rep.Restored, "index")
		return r.rep, nil
	}
	// The git directory's own files, the files kept outside the tree,
	// then the index.
	if err := r.writeGitDirFiles(); err != nil {
		return r.rep, err
	}
	if err := r.writeKeptOutside(); err != nil {
		return r.rep, err
	}
	if raw, ok := r.meta["index"]; ok {
		if err := writeFileAtomic(filepath.Join(r.gitDir, "index"), raw); err != nil {
			return r.rep, err
		}
		r.rep.Restored = append(r.rep.Restored, "index")
	}
	return r.rep, nil
}

// A restoreRun is one RestoreInto: the worktree, the salvage, the meta
// commit's files, and the report each step adds to.
type restoreRun struct {
	ctx                  context.Context
	dir, ceiling, gitDir string
	commit               string
	l                    Layout
	meta                 map[string][]byte // the meta commit's files, by name
	rep                  RestoreReport
}

// readMeta reads the meta commit's files (a version 2 salvage's).
func (r *restoreRun) readMeta() error {
	if r.l.Version < 2 || r.l.Meta == "" {
		return nil
	}
	res, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{ReadOnly: true, Ceiling: r.ceiling}, "archive", "--format=tar", r.l.Meta)
	if err != nil {
		return err
	}
	if r.meta, err = readMetaTar(res.Stdout); err != nil {
		return fmt.Errorf("salvage: meta commit %s: %w", r.l.Meta, err)
	}
	return nil
}

// writeFiles writes the worktree's files from the salvage tree. The
// skip-worktree files that were not on disk (outside a sparse cone) are
// left out: through a private index holding the salvage tree with those
// marked, which checkout-index skips. Otherwise one `git read-tree --reset
// -u` writes them all (into the worktree's own index, which is replaced
// later).
func (r *restoreRun) writeFiles() error {
	absent, err := r.absentFiles()
	if err != nil {
		return err
	}
	ctx, dir, tree := r.ctx, r.dir, r.commit+"^{tree}"
	if len(absent) == 0 {
		if _, err := gitops.Run(ctx, dir, gitops.Cmd{Ceiling: r.ceiling}, "read-tree", "--reset", "-u", tree); err != nil {
			return err
		}
	} else {
		tmp := filepath.Join(r.gitDir, "majlis-restore.index")
		defer func() { os.Remove(tmp); os.Remove(tmp + ".lock") }()
		o := gitops.Cmd{IndexFile: tmp, Ceiling: r.ceiling}
		if _, err := gitops.Run(ctx, dir, o, "read-tree", tree); err != nil {
			return err
		}
		o.Stdin = []byte(strings.Join(absent, "\x00") + "\x00")
		if _, err := gitops.Run(ctx, dir, o, "update-index", "--skip-worktree", "-z", "--stdin"); err != nil {
			return err
		}
		o.Stdin = nil
		if _, err := gitops.Run(ctx, dir, o, "checkout-index", "--all", "--force"); err != nil {
			return err
		}
	}
	r.rep.Restored = append(r.rep.Restored, "files")
	return nil
}

// absentFiles lists the files of the salvage tree that were not on disk
// when it was taken: skip-worktree entries outside a sparse cone, and
// every file under a sparse index's folder outside it.
func (r *restoreRun) absentFiles() ([]string, error) {
	rawIndex, haveIndex := r.meta["index"]
	if !haveIndex {
		return nil, nil
	}
	var absent, sparseDirs []string
	present := map[string]bool{}
	for _, p := range strings.Split(string(r.meta["majlis/skip-worktree-present"]), "\x00") {
		present[p] = true
	}
	if err := gitops.ScanIndex(rawIndex, len(r.commit)/2, func(e gitops.IndexEntry) {
		switch {
		case e.Stage != 0 || !e.SkipWorktree || present[e.Path]:
		case e.Mode == gitops.ModeTree:
			// A sparse index's folder outside the cone ("other/"): none
			// of its files was on disk.
			sparseDirs = append(sparseDirs, strings.TrimSuffix(e.Path, "/")+"/")
		default:
			absent = append(absent, e.Path)
		}
	}); err != nil {
		// A split index, say: its skip-worktree entries are not known
		// here. That matters only with a sparse checkout.
		if _, sparse := r.meta["info/sparse-checkout"]; sparse {
			r.rep.NotRestored = append(r.rep.NotRestored, "sparse checkout: the index could not be read, so files outside the cone were written too")
		}
	}
	if len(sparseDirs) == 0 {
		return absent, nil
	}
	res, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{ReadOnly: true, Ceiling: r.ceiling}, "ls-tree", "-r", "-z", "--name-only", "--full-tree", r.commit+"^{tree}")
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Split(string(res.Stdout), "\x00") {
		for _, d := range sparseDirs {
			if strings.HasPrefix(p, d) {
				absent = append(absent, p)
				break
			}
		}
	}
	return absent, nil
}

// legacyIndex gives a version 1 salvage, which keeps no index, HEAD's
// index: every change shows as unstaged.
func (r *restoreRun) legacyIndex() error {
	if r.l.Head != "" {
		if _, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{Ceiling: r.ceiling}, "read-tree", r.l.Head); err != nil {
			return err
		}
	}
	r.rep.NotRestored = append(r.rep.NotRestored,
		"index: a salvage made by an earlier majlis keeps no index, so every change shows as unstaged",
		"per-worktree refs, reflogs and an interrupted operation's state: not kept by earlier salvages")
	return nil
}

// writeGitDirFiles writes the worktree's own git-directory files from
// the meta commit (per-worktree refs, reflogs, an interrupted operation's
// state, per-worktree config, sparse patterns), and reports them.
func (r *restoreRun) writeGitDirFiles() error {
	meta := r.meta
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
			r.rep.NotRestored = append(r.rep.NotRestored, n+": not a file majlis restores")
			continue
		}
		written, err := r.writeGitDirFile(n)
		if err != nil {
			return err
		}
		for _, ns := range perWorktreeRefs {
			if written && strings.HasPrefix(n, ns) {
				refs = append(refs, n)
			}
		}
	}
	r.rep.Restored = append(r.rep.Restored, refs...)
	for _, op := range operations {
		if _, ok := meta[op.file]; ok || hasPrefixKey(meta, op.file+"/") {
			r.rep.Restored = append(r.rep.Restored, "the state of the interrupted "+op.op)
			break
		}
	}
	if _, ok := meta["logs/HEAD"]; ok {
		r.rep.Restored = append(r.rep.Restored, "HEAD's reflog")
	}
	return nil
}

// writeGitDirFile writes the meta commit's file n into the worktree's git
// directory, and reports whether it wrote it as it was kept (HEAD's
// reflog, put before the entry git just wrote, is not counted so).
func (r *restoreRun) writeGitDirFile(n string) (bool, error) {
	dst := filepath.Join(r.gitDir, filepath.FromSlash(n))
	if n == "logs/HEAD" {
		// The old reflog, then the entry git just wrote.
		now, err := os.ReadFile(dst)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		return false, writeFileAtomic(dst, append(append([]byte{}, r.meta[n]...), now...))
	}
	if _, err := os.Lstat(dst); err == nil {
		r.rep.NotRestored = append(r.rep.NotRestored, n+": git made its own on the new worktree")
		return false, nil
	}
	if pseudoRefName(n) && !slices.Contains(keptFiles, n) && !pseudoRefContent(r.meta[n]) {
		r.rep.NotRestored = append(r.rep.NotRestored, n+": not a ref")
		return false, nil
	}
	if err := writeFileAtomic(dst, r.meta[n]); err != nil {
		return false, err
	}
	if n == "config.worktree" {
		dropped, err := restrictWorktreeConfig(r.ctx, r.dir, dst)
		if err != nil {
			return false, err
		}
		for _, key := range dropped {
			r.rep.NotRestored = append(r.rep.NotRestored, "config.worktree: "+key+" (a restore writes back only user.name, user.email and the sparse-checkout settings; the salvage keeps the file: set it again by hand if you trust it)")
		}
	}
	return true, nil
}

// writeKeptOutside writes back what the salvage keeps outside its tree:
// the bytes of converted files (written over what the checkout wrote, see
// converted.go), files in unpopulated submodules' folders, files whose
// names git refuses, and last the permissions of private files, which may
// be among them.
func (r *restoreRun) writeKeptOutside() error {
	ctx, dir, ceiling, meta, tree := r.ctx, r.dir, r.ceiling, r.meta, r.commit+"^{tree}"
	if list, ok := meta[convertedList]; ok {
		n, failed, err := restoreConverted(ctx, dir, ceiling, r.l.Meta, tree, list)
		if err != nil {
			return err
		}
		r.report(n, "the bytes of %d files as they were on disk, where git's end-of-line conversion or filters would change them", failed)
	}
	if _, ok := meta[unpopulatedPrefix]; ok {
		n, failed, err := restoreUnpopulated(ctx, dir, ceiling, r.l.Meta, tree)
		if err != nil {
			return err
		}
		r.report(n, "%d files in the folders of submodules that were not checked out", failed)
	}
	if list, ok := meta[refusedList]; ok {
		n, failed, err := restoreRefused(ctx, dir, ceiling, r.l.Meta, list)
		if err != nil {
			return err
		}
		r.report(n, "%d files whose names git refuses to track", failed)
	}
	if data, ok := meta[privateModesFile]; ok {
		n, failed := restorePrivate(dir, data)
		r.report(n, "the permissions of %d files others could not read", failed)
	}
	return nil
}

// report adds n things restored (format names them, with n) when there
// are any, and what failed.
func (r *restoreRun) report(n int, format string, failed []string) {
	if n > 0 {
		r.rep.Restored = append(r.rep.Restored, fmt.Sprintf(format, n))
	}
	r.rep.NotRestored = append(r.rep.NotRestored, failed...)
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
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true}, "config", "--file", path, "--null", "--name-only", "--list")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var dropped []string
	for _, name := range strings.Split(string(res.Stdout), "\x00") {
		key := strings.ToLower(strings.TrimSuffix(name, "\n"))
		if key == "" || restoredConfig[key] || seen[key] {
			continue
		}
		seen[key] = true
		dropped = append(dropped, name)
	}
	for _, key := range dropped {
		if _, err := gitops.Run(ctx, dir, gitops.Cmd{OKCodes: []int{5}}, "config", "--file", path, "--unset-all", key); err != nil {
			return nil, err
		}
	}
	return dropped, nil
}
