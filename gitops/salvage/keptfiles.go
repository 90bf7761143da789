package salvage

// The files a salvage keeps outside its tree, as blobs of its meta commit
// (the bytes of converted files, files whose names git refuses):
// storing them and writing them back.

import (
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"golang.org/x/sys/unix"
)

// convertedEntries stores the converted files' bytes and their list as
// blobs and returns their `git update-index --index-info` lines.
func (s *Survey) convertedEntries(ctx context.Context) (string, error) {
	return s.keptFileEntries(ctx, s.converted, convertedPrefix, convertedList)
}

// keptFileEntries stores files (paths below the worktree) as blobs of
// their bytes, each as prefix<n>, and their list "<mode> <n> <path>"
// (NUL-terminated) as list, and returns their `git update-index
// --index-info` lines.
func (s *Survey) keptFileEntries(ctx context.Context, files []unpopulatedFile, prefix, list string) (string, error) {
	if len(files) == 0 {
		return "", nil
	}
	var b strings.Builder
	for i, f := range files {
		fmt.Fprintf(&b, "%s %d %s\x00", f.mode, i, f.path)
	}
	lines, err := s.rawFileEntries(ctx, s.dir, files, func(i int, _ unpopulatedFile) string {
		return prefix + strconv.Itoa(i)
	})
	if err != nil {
		return "", err
	}
	id, err := s.writeBlob(ctx, []byte(b.String()))
	if err != nil {
		return "", err
	}
	return lines + fmt.Sprintf("%s %s 0\t%s\x00", gitops.ModeFile, id, list), nil
}

// readKeptFiles reads the files the meta commit meta keeps under prefix,
// at the paths its list (whose content is data, named list) names. What
// cannot be written back is returned as not restored.
func readKeptFiles(ctx context.Context, dir, ceiling, meta, prefix, list string, data []byte, modes ...gitops.Mode) ([]blobFile, []string, error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling, LiteralPathspecs: true},
		"ls-tree", "-z", "--full-tree", meta+":"+strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, nil, err
	}
	ids := map[string]string{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if m, name, ok := strings.Cut(rec, "\t"); ok {
			if f := strings.Fields(m); len(f) == 3 && f[1] == "blob" {
				ids[name] = f[2]
			}
		}
	}
	var entries []blobFile
	var notRestored []string
	for _, rec := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, " ", 3)
		if len(f) != 3 {
			notRestored = append(notRestored, list+": a malformed record")
			continue
		}
		mode, merr := gitops.ParseMode(f[0])
		rel, id := f[2], ids[f[1]]
		switch {
		case merr != nil || !containsMode(modes, mode):
			notRestored = append(notRestored, list+": "+rel+": not a file")
		case rel == "" || rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../"):
			notRestored = append(notRestored, list+": "+rel+": not a path inside the worktree")
		case id == "":
			notRestored = append(notRestored, list+": "+rel+": its content is missing")
		default:
			entries = append(entries, blobFile{mode, id, rel})
		}
	}
	return entries, notRestored, nil
}

func containsMode(modes []gitops.Mode, m gitops.Mode) bool {
	for _, x := range modes {
		if x == m {
			return true
		}
	}
	return false
}

// restoreConverted writes the bytes the meta commit meta keeps under
// convertedPrefix over the files a checkout just wrote at the paths
// convertedList (whose content is list) names: the bytes that were on
// disk, where the checkout wrote git's conversion of them. Only a path
// that is a regular file of the salvage tree tree is written (a salvage
// ref can come from anywhere, and the list could name .git), following no
// symbolic link and replacing only a regular file (or writing one where
// there is none).
func restoreConverted(ctx context.Context, dir, ceiling, meta, tree string, list []byte) (restored int, notRestored []string, err error) {
	kept, notRestored, err := readKeptFiles(ctx, dir, ceiling, meta, convertedPrefix, convertedList, list, gitops.ModeFile, gitops.ModeExecutable)
	if err != nil || len(kept) == 0 {
		return 0, notRestored, err
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return 0, nil, err
	}
	files := map[string]bool{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if m, p, ok := strings.Cut(rec, "\t"); ok && (strings.HasPrefix(m, "100644 ") || strings.HasPrefix(m, "100755 ")) {
			files[p] = true
		}
	}
	var entries []blobFile
	for _, f := range kept {
		if !files[f.rel] {
			notRestored = append(notRestored, convertedList+": "+f.rel+": not a file of the salvage tree")
			continue
		}
		entries = append(entries, f)
	}
	if len(entries) == 0 {
		return 0, notRestored, nil
	}
	var in strings.Builder
	for _, f := range entries {
		in.WriteString(f.id + "\n")
	}
	blobs, err := catBlobs(ctx, dir, ceiling, in.String(), len(entries))
	if err != nil {
		return 0, nil, err
	}
	for i, f := range entries {
		if err := replaceNoFollow(dir, f.rel, f.mode, blobs[i]); err != nil {
			notRestored = append(notRestored, f.rel+" (its bytes as they were on disk): "+err.Error())
			continue
		}
		restored++
	}
	return restored, notRestored, nil
}

// replaceNoFollow writes content as the regular file rel (slash-separated)
// below dir, replacing a regular file there by a rename of a new one in
// its folder, following no symbolic link on the way (openParentNoFollow).
// Anything else at rel is left as it is, and an error.
func replaceNoFollow(dir, rel string, mode gitops.Mode, content []byte) error {
	fd, name, err := openParentNoFollow(dir, rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == unix.ENOENT:
		return writeNoFollow(dir, rel, mode, content)
	case err != nil:
		return err
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("not a regular file")
	}
	perm := uint32(0o666)
	if mode == gitops.ModeExecutable {
		perm = 0o777
	}
	tmp := ".majlis-restore-" + strconv.Itoa(os.Getpid()) + "-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	f, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(f), tmp)
	_, err = file.Write(content)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd, tmp, fd, name)
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
	}
	return err
}
