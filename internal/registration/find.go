package registration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/majlis-dev/majlis/wire"
)

// The refusals of Find.
var (
	ErrNotRepository  = wire.Sentinel("not_a_repository", "registration: not inside a git worktree")
	ErrNotInitialized = wire.Sentinel("not_initialized", "registration: repository not initialized")
	ErrMalformed      = wire.Sentinel("malformed_record", "registration: malformed registration")
	ErrMoved          = wire.Sentinel("identity_drift", "registration: registered for another git directory")
)

// An Error is a refusal of Find, with the file or folder concerned.
type Error struct {
	Path   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	return strings.TrimPrefix(e.Err.Error(), "registration: ") + ": " + e.Reason + " (" + e.Path + ")"
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorDetails are the path and the reason.
func (e *Error) ErrorDetails() map[string]any {
	return map[string]any{"op": "locate", "path": e.Path, "reason": e.Reason}
}

// Find finds the registered repository whose worktree contains dir ("" is
// the working directory), without running git: from dir's physical path
// up, as git walks up, to the first .git (the git directory, or a file
// "gitdir: PATH" naming it), then the repository's common directory (the
// git directory, or the one its "commondir" file names), then the
// registration in <common>/majlis, which must name that very directory (a
// copied repository carries its original's registration). It returns the
// state folder and the registration. Anything else than these plain
// layouts refuses, naming the file.
func Find(dir string) (stateDir string, reg *Registration, err error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	top, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, &Error{Path: abs, Reason: err.Error(), Err: ErrNotRepository}
	}
	gitDir, err := findGitDir(top)
	if err != nil {
		return "", nil, err
	}
	common, err := commonDir(gitDir)
	if err != nil {
		return "", nil, err
	}
	stateDir = filepath.Join(common, "majlis")
	name := filepath.Join(stateDir, FileName)
	data, err := readRegular(name)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, &Error{Path: common, Reason: "the repository has not been registered with majlis", Err: ErrNotInitialized}
	}
	if err != nil {
		return "", nil, &Error{Path: name, Reason: err.Error(), Err: ErrMalformed}
	}
	if reg, err = Decode(data); err != nil {
		return "", nil, &Error{Path: name, Reason: err.Error(), Err: ErrMalformed}
	}
	if reg.CommonDir != common && !sameFile(reg.CommonDir, common) {
		return "", nil, &Error{Path: name, Reason: "registered for " + reg.CommonDir + " but found in " + common, Err: ErrMoved}
	}
	return stateDir, reg, nil
}

// findGitDir walks up from dir to the first .git and returns the git
// directory it is or names.
func findGitDir(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Lstat(dotgit)
		switch {
		case err == nil && fi.IsDir():
			return dotgit, nil
		case err == nil && fi.Mode().IsRegular():
			return gitdirFile(dotgit)
		case err == nil:
			return "", &Error{Path: dotgit, Reason: "neither a folder nor a file naming the git directory", Err: ErrNotRepository}
		case !errors.Is(err, os.ErrNotExist):
			return "", &Error{Path: dotgit, Reason: err.Error(), Err: ErrNotRepository}
		}
		if filepath.Dir(d) == d {
			return "", &Error{Path: dir, Reason: "no .git in it or any folder above it", Err: ErrNotRepository}
		}
	}
}

// gitdirFile reads a .git file ("gitdir: PATH") and returns the git
// directory it names, its symbolic links resolved.
func gitdirFile(name string) (string, error) {
	data, err := readRegular(name)
	if err != nil {
		return "", &Error{Path: name, Reason: err.Error(), Err: ErrNotRepository}
	}
	line, ok := bytes.CutPrefix(bytes.TrimSuffix(data, []byte("\n")), []byte("gitdir: "))
	if !ok || len(line) == 0 || bytes.ContainsAny(line, "\n\r\x00") {
		return "", &Error{Path: name, Reason: "not a line 'gitdir: PATH'", Err: ErrNotRepository}
	}
	return resolve(filepath.Dir(name), string(line), name)
}

// commonDir is the repository's common directory: the git directory, or
// the one its commondir file names.
func commonDir(gitDir string) (string, error) {
	name := filepath.Join(gitDir, "commondir")
	data, err := readRegular(name)
	if errors.Is(err, os.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return "", &Error{Path: name, Reason: err.Error(), Err: ErrNotRepository}
	}
	line := strings.TrimSuffix(string(data), "\n")
	if line == "" || strings.ContainsAny(line, "\n\r\x00") {
		return "", &Error{Path: name, Reason: "not one line naming a folder", Err: ErrNotRepository}
	}
	return resolve(gitDir, line, name)
}

// resolve is p (absolute, or relative to base) with its symbolic links
// resolved; it must be a folder.
func resolve(base, p, from string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(r); err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a folder", r)
		}
	}
	if err != nil {
		return "", &Error{Path: from, Reason: "it names " + p + ": " + err.Error(), Err: ErrNotRepository}
	}
	return r, nil
}

// readRegular reads name like os.ReadFile, without waiting on a FIFO in
// its place, and refuses anything but a regular file.
func readRegular(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// sameFile reports whether a and b are the same folder.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
