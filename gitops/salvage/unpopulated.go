package salvage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"golang.org/x/sys/unix"
)

// A submodule that is not checked out (majlis allocates workspaces without
// checking submodules out) leaves an empty folder at its path. git status
// and git add -A pass by everything under a gitlink's path, so files
// written into that folder are seen by neither: a salvage that relied on
// git alone would call the workspace clean, and a reclaim would delete
// them. The survey finds them (findUnpopulated), the salvage keeps them in
// its meta commit under unpopulatedPrefix, and restore writes them back
// (restoreUnpopulated).

// unpopulatedPrefix is where the meta commit keeps the files found in
// submodule folders that are not checked out, at their worktree paths.
const unpopulatedPrefix = "majlis/unpopulated/"

// An unpopulatedFile is a regular file or symbolic link in the folder of a
// submodule that is not checked out.
type unpopulatedFile struct {
	path string      // slash-separated, from the worktree's top level
	mode gitops.Mode // ModeFile, ModeExecutable or ModeSymlink
}

// findUnpopulated lists the regular files and symbolic links below the
// folders of the index's gitlinks that hold no .git (submodules not
// checked out) into s.Unpopulated. A folder with a .git is a checked-out
// submodule, or a repository majlis treats as a peer; special files are
// named by SpecialFiles. A folder it cannot read is an error.
func (s *Survey) findUnpopulated(ctx context.Context, dir, ceiling string) error {
	s.dir = dir
	links, err := gitops.IndexGitlinks(s.indexData, s.hashLen)
	if err != nil {
		if len(s.indexData) == 0 {
			return nil
		}
		// A split index, say: ask git.
		res, gerr := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, "ls-files", "-s", "-z")
		if gerr != nil {
			return gerr
		}
		links = nil
		for _, rec := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
			if meta, p, ok := strings.Cut(rec, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
				links = append(links, p)
			}
		}
	}
	for _, link := range links {
		root := filepath.Join(dir, filepath.FromSlash(link))
		fi, err := os.Lstat(root)
		if err != nil || !fi.IsDir() {
			continue // absent, or replaced: git status shows that
		}
		if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
			continue
		}
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			var mode gitops.Mode
			switch t := e.Type(); {
			case t.IsDir():
				return nil
			case t&fs.ModeSymlink != 0:
				mode = gitops.ModeSymlink
			case t.IsRegular():
				fi, err := e.Info()
				if err != nil {
					return err
				}
				mode = execBit(fi)
			default:
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			s.unpopulated = append(s.unpopulated, unpopulatedFile{filepath.ToSlash(rel), mode})
			return nil
		})
		if err != nil {
			return fmt.Errorf("salvage: reading the folder of submodule %s, which is not checked out: %w", link, err)
		}
	}
	sort.Slice(s.unpopulated, func(i, j int) bool { return s.unpopulated[i].path < s.unpopulated[j].path })
	for _, f := range s.unpopulated {
		s.Unpopulated = append(s.Unpopulated, f.path)
	}
	return nil
}

// unpopulatedEntries stores the files findUnpopulated found as blobs and
// returns their `git update-index --index-info` lines, under
// unpopulatedPrefix.
func (s *Survey) unpopulatedEntries(ctx context.Context, dir string) (string, error) {
	return s.rawFileEntries(ctx, dir, s.unpopulated, func(_ int, f unpopulatedFile) string {
		return unpopulatedPrefix + f.path
	})
}

// rawFileEntries stores the files (paths below dir) as blobs, the bytes
// as they are on disk (no filter, no end-of-line conversion: git never
// checked these files out), a symbolic link's target for a link, and
// returns their `git update-index --index-info` lines, each under the
// name name gives it.
func (s *Survey) rawFileEntries(ctx context.Context, dir string, files []unpopulatedFile, name func(int, unpopulatedFile) string) (string, error) {
	var err error
	var b strings.Builder
	var batch []int
	for i, f := range files {
		abs := filepath.Join(dir, filepath.FromSlash(f.path))
		if f.mode != gitops.ModeSymlink && !strings.Contains(abs, "\n") {
			batch = append(batch, i) // hashed together below
			continue
		}
		// A link's target, or a file whose name --stdin-paths cannot
		// carry (a newline in it): read here.
		var content []byte
		if f.mode == gitops.ModeSymlink {
			target, err := os.Readlink(abs)
			if err != nil {
				return "", err
			}
			content = []byte(target)
		} else if content, err = os.ReadFile(abs); err != nil {
			return "", err
		}
		id, err := s.writeBlob(ctx, content)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %s 0\t%s\x00", f.mode, id, name(i, f))
	}
	if len(batch) == 0 {
		return b.String(), nil
	}
	var in strings.Builder
	for _, i := range batch {
		in.WriteString(filepath.Join(dir, filepath.FromSlash(files[i].path)) + "\n")
	}
	res, err := gitops.Run(ctx, s.commonDir, gitops.Cmd{Stdin: []byte(in.String())}, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return "", err
	}
	ids := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	if len(ids) != len(batch) {
		return "", gitops.Unexpected("git hash-object", "%d ids for %d files", len(ids), len(batch))
	}
	for k, i := range batch {
		if !gitops.IsObjectID(ids[k]) {
			return "", gitops.Unexpected("git hash-object", "%q is not an object id", ids[k])
		}
		fmt.Fprintf(&b, "%s %s 0\t%s\x00", files[i].mode, ids[k], name(i, files[i]))
	}
	return b.String(), nil
}

// restoreUnpopulated writes back the files a salvage kept from submodule
// folders that were not checked out: the entries of the meta commit meta
// under unpopulatedPrefix, each below a gitlink of the restored index's
// tree tree. It creates folders as needed and never follows a symbolic
// link or replaces anything: a salvage ref can come from anywhere, and a
// path through a link could lead out of the worktree. What it cannot
// write is returned as not restored.
func restoreUnpopulated(ctx context.Context, dir, ceiling, meta, tree string) (restored int, notRestored []string, err error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling, LiteralPathspecs: true},
		"ls-tree", "-r", "-z", "--full-tree", meta, "--", strings.TrimSuffix(unpopulatedPrefix, "/"))
	if err != nil {
		return 0, nil, err
	}
	type entry struct {
		mode      gitops.Mode
		id, rel   string
		submodule string
	}
	var entries []entry
	links := map[string]bool{}
	lres, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return 0, nil, err
	}
	for _, rec := range strings.Split(strings.TrimSuffix(string(lres.Stdout), "\x00"), "\x00") {
		if m, p, ok := strings.Cut(rec, "\t"); ok && strings.HasPrefix(m, "160000 ") {
			links[p] = true
		}
	}
	for _, rec := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		m, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(m)
		if !ok || len(f) != 3 {
			return 0, nil, gitops.Unexpected("git ls-tree", "record %q", rec)
		}
		mode, err := gitops.ParseMode(f[0])
		if err != nil {
			return 0, nil, err
		}
		rel := strings.TrimPrefix(p, unpopulatedPrefix)
		e := entry{mode: mode, id: f[2], rel: rel}
		for l := range links {
			if strings.HasPrefix(rel, l+"/") {
				e.submodule = l
			}
		}
		switch {
		case rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../"):
			notRestored = append(notRestored, p+": not a path inside the worktree")
		case e.submodule == "":
			notRestored = append(notRestored, p+": not inside a submodule's folder")
		case mode != gitops.ModeFile && mode != gitops.ModeExecutable && mode != gitops.ModeSymlink:
			notRestored = append(notRestored, p+": not a file")
		default:
			entries = append(entries, e)
		}
	}
	files := make([]blobFile, len(entries))
	for i, e := range entries {
		files[i] = blobFile{mode: e.mode, id: e.id, rel: e.rel}
	}
	return writeBlobs(ctx, dir, ceiling, files, notRestored, func(rel string, err error) string {
		return unpopulatedPrefix + rel + ": " + err.Error()
	})
}

// A blobFile is a file a restore writes from a blob: its mode, the blob
// and its path in the worktree.
type blobFile struct {
	mode    gitops.Mode
	id, rel string
}

// writeBlobs writes files into the worktree dir from their blobs, read
// with one `git cat-file --batch`, never following a link or replacing
// anything (writeNoFollow). A file that cannot be written is added to
// notRestored, in the words of failed; restored counts the others.
func writeBlobs(ctx context.Context, dir, ceiling string, files []blobFile, notRestored []string,
	failed func(rel string, err error) string) (restored int, _ []string, _ error) {
	if len(files) == 0 {
		return 0, notRestored, nil
	}
	var in strings.Builder
	for _, f := range files {
		in.WriteString(f.id + "\n")
	}
	blobs, err := catBlobs(ctx, dir, ceiling, in.String(), len(files))
	if err != nil {
		return 0, nil, err
	}
	for i, f := range files {
		if err := writeNoFollow(dir, f.rel, f.mode, blobs[i]); err != nil {
			notRestored = append(notRestored, failed(f.rel, err))
			continue
		}
		restored++
	}
	return restored, notRestored, nil
}

// catBlobs reads n blobs, whose ids are the lines of ids, with one `git
// cat-file --batch`.
func catBlobs(ctx context.Context, dir, ceiling, ids string, n int) ([][]byte, error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling, Stdin: []byte(ids)}, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	out := res.Stdout
	var blobs [][]byte
	for range n {
		hdr, rest, ok := strings.Cut(string(out), "\n")
		f := strings.Fields(hdr)
		var size int
		if !ok || len(f) != 3 || f[1] != "blob" {
			return nil, gitops.Unexpected("git cat-file", "header %q", hdr)
		}
		if _, err := fmt.Sscan(f[2], &size); err != nil || size < 0 || size+1 > len(rest) {
			return nil, gitops.Unexpected("git cat-file", "header %q", hdr)
		}
		blobs = append(blobs, []byte(rest[:size]))
		out = []byte(rest[size+1:])
	}
	return blobs, nil
}

// writeNoFollow creates the file rel (slash-separated) below dir with
// content (a link target for ModeSymlink), creating missing folders and
// following no symbolic link on the way: every folder on the path is
// opened with O_NOFOLLOW from its parent's descriptor. An existing file is
// never replaced.
func writeNoFollow(dir, rel string, mode gitops.Mode, content []byte) error {
	fd, name, err := openParentNoFollow(dir, rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if mode == gitops.ModeSymlink {
		return unix.Symlinkat(string(content), fd, name)
	}
	perm := uint32(0o666)
	if mode == gitops.ModeExecutable {
		perm = 0o777
	}
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(f), name)
	_, err = file.Write(content)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}

// OutsideTree names what the salvage meta commit meta keeps of the
// worktree's files outside its tree: the files of submodule folders that
// were not checked out, those whose names git refuses, and the bytes of
// those a checkout converts (the ids of their trees and lists); "" when it keeps none (or meta is ""). Equal
// names, equal files.
func OutsideTree(ctx context.Context, dir, meta string) (string, error) {
	if meta == "" {
		return "", nil
	}
	var ids []string
	for _, p := range []string{strings.TrimSuffix(unpopulatedPrefix, "/"), strings.TrimSuffix(refusedPrefix, "/"), refusedList,
		strings.TrimSuffix(convertedPrefix, "/"), convertedList} {
		res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, OKCodes: []int{1, 128}}, "rev-parse", "--verify", "--quiet", meta+":"+p)
		if err != nil {
			return "", err
		}
		id := strings.TrimSpace(string(res.Stdout))
		if id != "" && !gitops.IsObjectID(id) {
			return "", gitops.Unexpected("git rev-parse", "%q is not an object id", id)
		}
		ids = append(ids, id)
	}
	if strings.Join(ids, "") == "" {
		return "", nil
	}
	return strings.Join(ids, " "), nil
}
