package provider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
	"golang.org/x/sys/unix"
)

// Every temporary file majlis writes in the state folder is named
// ".<name>.<random>.tmp" (internal/durable, the claims index) and is
// locked (flock, exclusive) by its writer for as long as the writer may
// still use it. A crash, or a writer older than that rule, leaves it
// behind: nothing reads it, it only takes space. doctor reports those no
// running process can own (older than strayTempAge, and their lock free)
// and --repair removes them, each re-checked under its lock.

// FindingTempStray: a temporary file no running process can own.
const FindingTempStray = "temp_stray"

// RepairRemoveTemp removes a stray temporary file.
const RepairRemoveTemp = "remove_temp"

// strayTempAge is how old a temporary file must be before doctor looks at
// its lock: a writer creates it and locks it in the same instant, so a
// younger one is never touched (not even its lock tried).
const strayTempAge = time.Minute

// tempSkipDirs are folders of the state folder whose content majlis moved
// there whole (damaged records, git's entries kept aside): they are kept
// as they are, temporary-looking names included.
var tempSkipDirs = map[string]bool{"damaged": true, "trash": true}

func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, durable.TempSuffix) && len(name) > 1+len(durable.TempSuffix)
}

// strayTemps lists the state folder's stray temporary files with their
// fingerprints, in path order.
func (p *Provider) strayTemps() (paths, fps []string) {
	type stray struct{ path, fp string }
	var out []stray
	_ = filepath.WalkDir(p.stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder: the other checks report what matters in it
		}
		if d.IsDir() {
			if filepath.Dir(path) == p.stateDir && tempSkipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isTempName(d.Name()) {
			return nil
		}
		if fp, ok := strayTemp(path, p.now()); ok {
			out = append(out, stray{path, fp})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	for _, s := range out {
		paths, fps = append(paths, s.path), append(fps, s.fp)
	}
	return paths, fps
}

// strayTemp reports whether the temporary file at path is stray (old
// enough, its lock free) and its fingerprint (identity, size, time).
func strayTemp(path string, now time.Time) (string, bool) {
	f, fp, err := lockTemp(path, now)
	if err != nil {
		return "", false
	}
	unlockClose(f)
	return fp, true
}

// unlockClose lifts the lock before it closes f: a child another goroutine
// forks at that moment shares the open file until it execs, and Close
// alone would leave the lock held through it, so that a writer or the
// next repair would see the file in use.
func unlockClose(f *os.File) {
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// lockTemp opens the temporary file at path and takes its lock, when it
// is old enough and no process holds it; the caller closes the file
// (which lifts the lock).
func lockTemp(path string, now time.Time) (*os.File, string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < strayTempAge {
		return nil, "", errTempInUse
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", err
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return nil, "", errTempInUse // a live writer holds it
	}
	held, err := f.Stat()
	if err != nil || !os.SameFile(fi, held) {
		unlockClose(f)
		return nil, "", errTempInUse
	}
	k, ok := keyOf(held)
	if !ok {
		unlockClose(f)
		return nil, "", errTempInUse
	}
	return f, fmt.Sprintf("%d %d %d %d", k.Dev, k.Ino, k.Size, k.Mtime), nil
}

var errTempInUse = errors.New("temporary file in use")

// checkTemps reports the stray temporary files.
func (p *Provider) checkTemps(add func(Finding)) {
	paths, _ := p.strayTemps()
	for _, path := range paths {
		add(Finding{Code: FindingTempStray, Severity: SeverityWarning, Path: path, Repair: true,
			Message: "a temporary file that an interrupted write left in the state folder: no running process holds it, and nothing reads it",
			Fix:     "majlis doctor --repair removes it"})
	}
}

// planTemps plans the removal of every stray temporary file.
func (p *Provider) planTemps() []RepairAction {
	var out []RepairAction
	paths, fps := p.strayTemps()
	for i, path := range paths {
		out = append(out, RepairAction{Kind: RepairRemoveTemp, Path: path, Fingerprint: fps[i], Files: []string{}, Salvage: []string{},
			Detail: "remove the stray temporary file " + path + " (no running process holds it)"})
	}
	return out
}

// removeTemp removes a stray temporary file while it holds its lock, when
// it is still the file the preview saw.
func (p *Provider) removeTemp(a RepairAction) error {
	f, fp, err := lockTemp(a.Path, p.now())
	if errors.Is(err, os.ErrNotExist) {
		return nil // gone meanwhile: what the action was for
	}
	if err != nil || fp != a.Fingerprint {
		if f != nil {
			unlockClose(f)
		}
		return &Error{Op: "repair", Path: a.Path, Err: ErrPreviewStale,
			Reason: RepairRemoveTemp + ": the temporary file changed or is in use since the preview", Hint: "preview the repair again"}
	}
	defer unlockClose(f)
	if err := os.Remove(a.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return &Error{Op: "repair", Path: a.Path, Err: err}
	}
	return nil
}
