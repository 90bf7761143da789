package gitops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// Pin is wire.Pin: the result type is defined once, in the wire contract.
type Pin = wire.Pin

// An AdminEntry is one of git's administrative entries of linked worktrees
// (<common dir>/worktrees/<id>), as read from its files, in process.
type AdminEntry struct {
	Dir  string       // the entry itself
	Path string       // the worktree it names (its gitdir back-pointer, without /.git); empty if unreadable
	Lock WorktreeLock // git's lock, if any
	Pin  string       // majlis's pin (WriteEntryPin), empty if none
	// PinErr is set when the pin exists but cannot be read or is not one line.
	PinErr error
}

// AdminEntries lists git's administrative entries of linked worktrees. An
// entry whose files cannot be read is still listed, with what could be read.
func AdminEntries(commonDir string) ([]AdminEntry, error) {
	root := filepath.Join(commonDir, "worktrees")
	dirs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []AdminEntry
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		e := AdminEntry{Dir: filepath.Join(root, d.Name())}
		if b, err := readSmallFile(filepath.Join(e.Dir, "gitdir")); err == nil {
			p := strings.TrimRight(string(b), "\n")
			if p != "" && !filepath.IsAbs(p) {
				p = filepath.Join(e.Dir, p) // worktree.useRelativePaths
			}
			if p = filepath.Clean(p); p != "." && filepath.Base(p) == ".git" {
				e.Path = filepath.Dir(p)
			}
		}
		e.Lock, _ = ReadWorktreeLock(e.Dir)
		pin, err := ReadEntryPin(e.Dir)
		switch {
		case err == nil:
			e.Pin = pin
		case !errors.Is(err, fs.ErrNotExist):
			e.PinErr = err
		}
		out = append(out, e)
	}
	return out, nil
}
