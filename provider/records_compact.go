package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/reservation"
)

// Compaction: gc moves a binding's old records out of its claims folder,
// so that what reads every binding (list, allocate, the reclaim preview
// and the peer checks) reads only the records that still matter. Nothing
// is deleted: the records move, whole and still sealed, into
// <state>/compacted/<binding>/<first>-<last>/.
//
// A claim is several files, and a reader must never see an event without
// its claim or a claim without its events. So the folder is never edited
// file by file: under the binding's reclaim reservation and the
// publication lease (nothing else can publish into it then), gc builds a
// staging folder holding hard links to the records that stay, and
// exchanges it with the claims folder in one atomic rename
// (renameat2 RENAME_EXCHANGE). A crash before the exchange leaves the old
// folder; after it, the new one. Either is a complete claims folder, so
// every reader works on both unchanged. The staging folder then holds the
// old folder; the links it shares with the claims folder are removed
// (the same file stays in the claims folder) and it is renamed to its
// archive name. A gc that finds a staging folder left by a crash finishes
// it the same way, whichever step the crash interrupted.
//
// A record is compacted only when all of these hold:
//   - it is not its binding's newest record (the next claim number, the
//     branch restore gives back and the binding's state come from it), and
//     the newest one is finished too (reclaimed or failed): nothing can
//     publish into the folder while it is swapped;
//   - it is reclaimed or failed, longer ago than the record age;
//   - its workspace is attested absent, and its trash folder, if it had
//     one, is gone (a kept trash is still a peer);
//   - no salvage ref it names exists any more (gc keeps salvages that a
//     record names);
//   - it is not the claim by which gc judges a branch majlis created and
//     that still exists.
//
// The confirmed gc checks the disk again under the binding's reclaim
// reservation, and leaves a binding whose reservation another holds.
//
// A retry of a request whose claim was compacted still finds it: the
// request lookup reads the compacted records when the claims folder has
// no claim of that request id (RequestClaim).

// Failpoints of compaction.
var (
	fpCompactStaged    = failpoint.New("gc/compact-staged")    // the staging folder holds the records that stay; not yet exchanged
	fpCompactExchanged = failpoint.New("gc/compact-exchanged") // exchanged; the staging folder holds the old folder
	fpCompactCleaned   = failpoint.New("gc/compact-cleaned")   // the staging folder holds only the compacted records; not yet archived
)

// compactedDirName is the folder, in the state folder, that holds the
// compacted records of each binding.
const compactedDirName = "compacted"

// stagingName is the staging folder of a compaction, in
// <state>/compacted/<binding>/.
const stagingName = ".staging"

// errExchangeUnsupported: the system cannot exchange two folders in one
// rename; compaction is then left undone.
var errExchangeUnsupported = errors.New("this system cannot exchange two folders atomically")

func (br *bindingRecords) compactedDir(binding string) string {
	return filepath.Join(br.state, compactedDirName, binding)
}

// SwapOut moves the records whose seq is in out from binding's claims
// folder into a staging folder, exchanged with the claims folder in one
// rename, then archives the staging folder. The caller holds the
// binding's reclaim reservation; lock takes the publication lease,
// held around the exchange. ok is false, and nothing changed, when a
// record was published into the folder meanwhile.
func (br *bindingRecords) SwapOut(binding string, out map[int]string, lock func() (*reservation.Lease, error)) (ok bool, err error) {
	claims := br.Dir(binding)
	names, err := recordNames(binding, claims)
	if err != nil {
		return false, err
	}
	var keep []string
	for _, name := range names {
		seq, _ := recordSeq(name)
		if _, gone := out[seq]; !gone {
			keep = append(keep, name)
		}
	}
	dir := br.compactedDir(binding)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return false, &Error{Op: "gc", Binding: binding, Path: dir, Err: err}
	}
	staging := filepath.Join(dir, stagingName)
	if err := os.Mkdir(staging, 0o755); err != nil {
		return false, &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
	}
	undo := func(err error) (bool, error) {
		for _, name := range keep {
			os.Remove(filepath.Join(staging, name)) // links only: the files stay in the claims folder
		}
		os.Remove(staging)
		return false, err
	}
	for _, name := range keep {
		if err := os.Link(filepath.Join(claims, name), filepath.Join(staging, name)); err != nil {
			return undo(&Error{Op: "gc", Binding: binding, Path: filepath.Join(staging, name), Err: err})
		}
	}
	if err := durable.SyncDir(staging); err != nil {
		return undo(&Error{Op: "gc", Binding: binding, Path: staging, Err: err})
	}
	if err := fpCompactStaged.Inject(); err != nil {
		return undo(err)
	}
	// Under the publication lease, the folder must still hold what was
	// staged from: then nothing can be published into it until the
	// exchange is done.
	pub, err := lock()
	if err != nil {
		return undo(err)
	}
	now, err := recordNames(binding, claims)
	if err != nil || !slices.Equal(now, names) {
		pub.Release()
		return undo(err)
	}
	err = exchangeDirs(staging, claims)
	pub.Release()
	if err != nil {
		return undo(&Error{Op: "gc", Binding: binding, Path: claims, Err: err})
	}
	if err := durable.SyncDir(filepath.Dir(claims)); err != nil {
		return true, &Error{Op: "gc", Binding: binding, Path: filepath.Dir(claims), Err: err}
	}
	if err := durable.SyncDir(dir); err != nil {
		return true, &Error{Op: "gc", Binding: binding, Path: dir, Err: err}
	}
	if err := fpCompactExchanged.Inject(); err != nil {
		return true, err
	}
	return true, br.FinishCompaction(binding)
}

// recordNames lists the record files of a claims folder, sorted (a
// writer's temporary files left out).
func recordNames(binding, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &Error{Op: "gc", Binding: binding, Path: dir, Err: err}
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if _, ok := recordSeq(name); !ok {
			return nil, &Error{Op: "gc", Binding: binding, Path: filepath.Join(dir, name), Err: ErrMalformed,
				Reason: "unexpected file in the claims folder", Hint: "move it out of the majlis state folder"}
		}
		names = append(names, name)
	}
	return names, nil
}

// recordSeq returns the claim number of a record's file name.
func recordSeq(name string) (int, bool) {
	seqStr, _, ok := strings.Cut(name, ".")
	seq, err := strconv.Atoi(seqStr)
	if !ok || err != nil || seq < 1 || len(seqStr) != 6 {
		return 0, false
	}
	return seq, true
}

// FinishCompaction finishes the staging folder of binding, if there is
// one (left by SwapOut, or by a gc that crashed): every file in it that
// is the very file of the same name in the claims folder is unlinked
// (the file stays there), and what remains, the compacted records, is
// renamed to its archive name; an empty staging folder is removed. Only
// links the claims folder holds too are ever removed, so this is right
// whichever step a crash interrupted. The caller holds the binding's
// reclaim reservation (no other gc compacts it meanwhile).
func (br *bindingRecords) FinishCompaction(binding string) error {
	dir := br.compactedDir(binding)
	staging := filepath.Join(dir, stagingName)
	entries, err := os.ReadDir(staging)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
	}
	claims := br.Dir(binding)
	first, last := 0, 0
	left := 0
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(staging, name)
		a, aerr := os.Lstat(path)
		b, berr := os.Lstat(filepath.Join(claims, name))
		if aerr == nil && berr == nil && a.Mode().IsRegular() && os.SameFile(a, b) {
			if err := os.Remove(path); err != nil {
				return &Error{Op: "gc", Binding: binding, Path: path, Err: err}
			}
			continue
		}
		left++
		if seq, ok := recordSeq(name); ok {
			if first == 0 || seq < first {
				first = seq
			}
			last = max(last, seq)
		}
	}
	if err := durable.SyncDir(staging); err != nil {
		return &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
	}
	if err := fpCompactCleaned.Inject(); err != nil {
		return err
	}
	if left == 0 {
		if err := os.Remove(staging); err != nil {
			return &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
		}
		return durable.SyncDir(dir)
	}
	name := "leftover"
	if first > 0 {
		name = fmt.Sprintf("%06d-%06d", first, last)
	}
	for i := 1; ; i++ {
		target := filepath.Join(dir, name)
		if i > 1 {
			target += "." + strconv.Itoa(i)
		}
		err := renameNoReplace(staging, target)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
		}
		return durable.SyncDir(dir)
	}
}

// StagingDir is the staging folder of a compaction of binding.
func (br *bindingRecords) StagingDir(binding string) string {
	return filepath.Join(br.compactedDir(binding), stagingName)
}

// UnfinishedCompactions lists the bindings whose compaction a crashed gc
// left unfinished (a staging folder remains), in name order; a name
// that is no valid binding is listed too.
func (br *bindingRecords) UnfinishedCompactions() ([]string, error) {
	root := filepath.Join(br.state, compactedDirName)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Op: "gc", Path: root, Err: err}
	}
	var out []string
	for _, e := range entries {
		b := e.Name()
		if _, err := os.Lstat(filepath.Join(root, b, stagingName)); err != nil {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}
