//go:build unix

package gitops

import (
	"errors"
	"io/fs"
	"syscall"
)

// readSmallFile reads a file of a few hundred bytes, such as a worktree's
// gitdir or HEAD, in one read. Listing a thousand worktrees reads four
// thousand of them: it opens them with the system call itself, since
// os.Open spends an fstat, four fcntl and a poller registration on each.
// Larger files are read whole.
func readSmallFile(path string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		want := cap(buf) - len(buf)
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		buf = buf[:len(buf)+n]
		if n < want { // a regular file reads short only at its end
			return buf, nil
		}
	}
}
