package salvage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
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
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling},
		"ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var out []unpopulatedFile
	for _, p := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if p == "" || strings.HasSuffix(p, "/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			out = append(out, unpopulatedFile{p, gitops.ModeSymlink})
		case fi.Mode().IsRegular():
			out = append(out, unpopulatedFile{p, execBit(fi)})
		}
	}
	return out, nil
}

// refusedEntries stores the refused files and their list as blobs and
// returns their `git update-index --index-info` lines.
func (s *Survey) refusedEntries(ctx context.Context) (string, error) {
	return s.keptFileEntries(ctx, s.refused, refusedPrefix, refusedList)
}

// restoreRefused writes back the files the meta commit meta keeps under
// refusedPrefix, at the paths refusedList (whose content is list) names,
// as restoreUnpopulated writes its files: following no symbolic link,
// replacing nothing.
func restoreRefused(ctx context.Context, dir, ceiling, meta string, list []byte) (restored int, notRestored []string, err error) {
	entries, notRestored, err := readKeptFiles(ctx, dir, ceiling, meta, refusedPrefix, refusedList, list, gitops.ModeFile, gitops.ModeExecutable, gitops.ModeSymlink)
	if err != nil {
		return 0, nil, err
	}
	if entries, notRestored, err = safeUnderDotGit(ctx, dir, ceiling, entries, notRestored); err != nil {
		return 0, nil, err
	}
	return writeBlobs(ctx, dir, ceiling, entries, notRestored, func(rel string, err error) string {
		return rel + " (a name git refuses): " + err.Error()
	})
}

// safeUnderDotGit leaves out of files those that would make a folder
// named .git (in any case) a repository, or a file named .git a link to
// one: a salvage ref can come from anywhere, and git run in such a folder
// would read its config (and run the programs it names). A salvage keeps
// only entries named .git that are no repository (dotgit.go), so nothing
// a salvage made is left out.
func safeUnderDotGit(ctx context.Context, dir, ceiling string, files []blobFile, notRestored []string) ([]blobFile, []string, error) {
	var keep, links []blobFile
	for _, f := range files {
		parts := strings.Split(f.rel, "/")
		bad := false
		for i, c := range parts {
			if strings.EqualFold(c, ".git") && i+1 < len(parts) {
				for _, m := range repoMarkers {
					bad = bad || strings.EqualFold(parts[i+1], m)
				}
			}
		}
		switch {
		case bad:
			notRestored = append(notRestored, f.rel+" (under a folder named .git): it would make that folder a repository")
		case strings.EqualFold(parts[len(parts)-1], ".git"):
			links = append(links, f)
		default:
			keep = append(keep, f)
		}
	}
	if len(links) == 0 {
		return keep, notRestored, nil
	}
	var in strings.Builder
	for _, f := range links {
		in.WriteString(f.id + "\n")
	}
	blobs, err := catBlobs(ctx, dir, ceiling, in.String(), len(links))
	if err != nil {
		return nil, nil, err
	}
	for i, f := range links {
		if f.mode == gitops.ModeSymlink || bytes.HasPrefix(bytes.ToLower(blobs[i]), []byte("gitdir:")) {
			notRestored = append(notRestored, f.rel+": a file named .git that would link to a repository")
			continue
		}
		keep = append(keep, f)
	}
	return keep, notRestored, nil
}
