package salvage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"golang.org/x/sys/unix"
)

// git keeps one permission bit, the executable one; a checkout writes
// every file readable by all (0666 or 0777, less the umask). A file its
// owner had made private (0600: a key, a token, a local .env that is not
// ignored) would come back from a restore readable by everyone. So the
// salvage records the permissions of the files it keeps that others could
// not read (privateModesFile in the meta commit), and restore sets them
// again.

// privateModesFile is the meta commit's list of private files: for each,
// its permission bits in octal, a space and its path, NUL-terminated.
const privateModesFile = "majlis/private-modes"

// isPrivate reports whether a checkout would make the file with mode m
// readable by someone m keeps out: its group or others may not read it.
func isPrivate(m fs.FileMode) bool { return m.Perm()&0o044 != 0o044 }

// findPrivate records in s.private the regular files among paths (in the
// worktree dir) whose permissions isPrivate.
func (s *Survey) findPrivate(dir string, paths []string) {
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && isPrivate(fi.Mode()) {
			s.private = append(s.private, fmt.Sprintf("%04o %s", fi.Mode().Perm(), p))
		}
	}
}

// restorePrivate sets the permissions the list data (privateModesFile)
// records on the files of the worktree dir, following no symbolic link.
// What it cannot set is returned as not restored.
func restorePrivate(dir string, data []byte) (n int, notRestored []string) {
	for _, rec := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		m, rel, ok := strings.Cut(rec, " ")
		perm, err := strconv.ParseUint(m, 8, 32)
		switch {
		case !ok || err != nil || perm > 0o777:
			notRestored = append(notRestored, privateModesFile+": a malformed record")
			continue
		case rel == "" || rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../"):
			notRestored = append(notRestored, privateModesFile+": "+rel+": not a path inside the worktree")
			continue
		}
		if err := chmodNoFollow(dir, rel, uint32(perm)); err != nil {
			notRestored = append(notRestored, "the permissions of "+rel+" ("+m+"): "+err.Error())
			continue
		}
		n++
	}
	return n, notRestored
}

// chmodNoFollow sets the permissions of the regular file rel below dir,
// reaching it through no symbolic link.
func chmodNoFollow(dir, rel string, perm uint32) error {
	fd, name, err := openParentNoFollow(dir, rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("not a regular file")
	}
	return unix.Fchmod(f, perm)
}

// openParentNoFollow opens the folder of rel (slash-separated) below dir,
// each folder on the way with O_NOFOLLOW from its parent's descriptor,
// creating missing ones when create is set, and returns its descriptor and
// rel's last name.
func openParentNoFollow(dir, rel string, create bool) (int, string, error) {
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	parts := strings.Split(rel, "/")
	for _, name := range parts[:len(parts)-1] {
		if create {
			if err := unix.Mkdirat(fd, name, 0o777); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return -1, "", err
			}
		}
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, "", fmt.Errorf("folder %s: %w", name, err)
		}
		fd = next
	}
	return fd, parts[len(parts)-1], nil
}

// privateEntry stores the list of private files as a blob and returns its
// `git update-index --index-info` line, or "" when there are none.
func (s *Survey) privateEntry(ctx context.Context) (string, error) {
	if len(s.private) == 0 {
		return "", nil
	}
	id, err := s.writeBlob(ctx, []byte(strings.Join(s.private, "\x00")+"\x00"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s 0\t%s\x00", gitops.ModeFile, id, privateModesFile), nil
}
