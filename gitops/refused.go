package gitops

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Files whose names git refuses to put in an index (see addAll) cannot be
// in the salvage tree, nor under their own names anywhere in a commit: the
// meta commit keeps each as refusedPrefix<n>, and refusedList maps the
// numbers back to modes and paths ("<mode> <n> <path>", NUL-terminated).
// Restore writes them back (restoreRefused).
const (
	refusedPrefix = "majlis/refused/"
	refusedList   = "majlis/refused-files"
)

// findRefused lists the untracked files left out of the private index
// file index after `git add -A --ignore-errors`: those git would not add.
// Nested repositories (listed with a trailing slash) are not files.
func (s *Survey) findRefused(ctx context.Context, dir, ceiling, index string) ([]unpopulatedFile, error) {
	res, err := git(ctx, dir, cmdOpts{readOnly: true, indexFile: index, ceiling: ceiling},
		"ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var out []unpopulatedFile
	for _, p := range strings.Split(strings.TrimSuffix(string(res.stdout), "\x00"), "\x00") {
		if p == "" || strings.HasSuffix(p, "/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			out = append(out, unpopulatedFile{p, ModeSymlink})
		case fi.Mode().IsRegular():
			out = append(out, unpopulatedFile{p, execBit(fi)})
		}
	}
	return out, nil
}

// refusedEntries stores the refused files and their list as blobs and
// returns their `git update-index --index-info` lines.
func (s *Survey) refusedEntries(ctx context.Context) (string, error) {
	if len(s.refused) == 0 {
		return "", nil
	}
	named := make([]unpopulatedFile, len(s.refused))
	var list strings.Builder
	for i, f := range s.refused {
		named[i] = unpopulatedFile{strconv.Itoa(i), f.mode}
		fmt.Fprintf(&list, "%s %d %s\x00", f.mode, i, f.path)
	}
	lines, err := s.rawFileEntries(ctx, s.dir, s.refused, func(i int, _ unpopulatedFile) string {
		return refusedPrefix + strconv.Itoa(i)
	})
	if err != nil {
		return "", err
	}
	id, err := s.writeBlob(ctx, []byte(list.String()))
	if err != nil {
		return "", err
	}
	return lines + fmt.Sprintf("%s %s 0\t%s\x00", ModeFile, id, refusedList), nil
}

// restoreRefused writes back the files the meta commit meta keeps under
// refusedPrefix, at the paths refusedList (whose content is list) names,
// as restoreUnpopulated writes its files: following no symbolic link,
// replacing nothing.
func restoreRefused(ctx context.Context, dir, ceiling, meta string, list []byte) (restored int, notRestored []string, err error) {
	res, err := git(ctx, dir, cmdOpts{readOnly: true, ceiling: ceiling, literalPathspecs: true},
		"ls-tree", "-z", "--full-tree", meta+":"+strings.TrimSuffix(refusedPrefix, "/"))
	if err != nil {
		return 0, nil, err
	}
	ids := map[string]string{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(res.stdout), "\x00"), "\x00") {
		if m, name, ok := strings.Cut(rec, "\t"); ok {
			if f := strings.Fields(m); len(f) == 3 && f[1] == "blob" {
				ids[name] = f[2]
			}
		}
	}
	var entries []blobFile
	for _, rec := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, " ", 3)
		if len(f) != 3 {
			notRestored = append(notRestored, refusedList+": a malformed record")
			continue
		}
		mode, merr := parseMode(f[0])
		rel, id := f[2], ids[f[1]]
		switch {
		case merr != nil || mode != ModeFile && mode != ModeExecutable && mode != ModeSymlink:
			notRestored = append(notRestored, refusedList+": "+rel+": not a file")
		case rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../"):
			notRestored = append(notRestored, refusedList+": "+rel+": not a path inside the worktree")
		case id == "":
			notRestored = append(notRestored, refusedList+": "+rel+": its content is missing")
		default:
			entries = append(entries, blobFile{mode, id, rel})
		}
	}
	return writeBlobs(ctx, dir, ceiling, entries, notRestored, func(rel string, err error) string {
		return rel + " (a name git refuses): " + err.Error()
	})
}
