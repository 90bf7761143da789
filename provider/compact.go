package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
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
// no claim of that request id (findRequestClaim).

// Failpoints of compaction.
var (
	fpCompactStaged    = failpoint.New("gc/compact-staged")    // the staging folder holds the records that stay; not yet exchanged
	fpCompactExchanged = failpoint.New("gc/compact-exchanged") // exchanged; the staging folder holds the old folder
	fpCompactCleaned   = failpoint.New("gc/compact-cleaned")   // the staging folder holds only the compacted records; not yet archived
)

// DefaultRecordAge is how long gc leaves a finished workspace's records in
// place before it compacts them.
const DefaultRecordAge = 30 * 24 * time.Hour

// compactedDirName is the folder, in the state folder, that holds the
// compacted records of each binding.
const compactedDirName = "compacted"

// stagingName is the staging folder of a compaction, in
// <state>/compacted/<binding>/.
const stagingName = ".staging"

// errExchangeUnsupported: the system cannot exchange two folders in one
// rename; compaction is then left undone.
var errExchangeUnsupported = errors.New("this system cannot exchange two folders atomically")

// A GCRecord is a record gc compacts: a finished workspace's claim and its
// events, moved out of the claims folder.
type GCRecord struct {
	Binding     string    `json:"binding"`
	Seq         int       `json:"seq"`
	ClaimDigest string    `json:"claim_digest"`
	Outcome     string    `json:"outcome"` // reclaimed or failed
	At          time.Time `json:"at"`      // when it was reclaimed or failed
	Path        string    `json:"path"`
}

func (p *Provider) compactedDir(binding string) string {
	return filepath.Join(p.stateDir, compactedDirName, binding)
}

// finished returns the event that ended a record (reclaimed or failed),
// or nil.
func finished(r *claimRecord) *Event {
	if ev := r.Events[EventReclaimed]; ev != nil {
		return ev
	}
	return r.Events[EventFailed]
}

// gcRecords lists the records gc may compact (see above).
func (p *Provider) gcRecords(ctx context.Context, reader *gitops.Reader, all [][]*claimRecord, age time.Duration, plan *GCPlan) error {
	if !canExchange {
		return nil
	}
	refs, err := reader.Refs(ctx, SalvagePrefix)
	if err != nil {
		return err
	}
	salvages := make(map[string]bool, len(refs))
	for _, r := range refs {
		salvages[r.Name] = true
	}
	heads, err := reader.Refs(ctx, "refs/heads/")
	if err != nil {
		return err
	}
	branches := make(map[string]bool, len(heads))
	for _, h := range heads {
		branches[strings.TrimPrefix(h.Name, "refs/heads/")] = true
	}
	judged := branchJudges(all)
	now := p.now()
	for _, recs := range all {
		if len(recs) < 2 || finished(recs[len(recs)-1]) == nil {
			continue
		}
		for _, r := range recs[:len(recs)-1] {
			if why := compactable(r, now, age, salvages); why != "" {
				continue
			}
			if b := r.Claim.Branch; b != "" && branches[b] && judged[b] == r {
				continue
			}
			ev := finished(r)
			plan.Records = append(plan.Records, GCRecord{Binding: r.Claim.Binding, Seq: r.Claim.Seq, ClaimDigest: r.Digest,
				Outcome: ev.Kind, At: ev.At.UTC(), Path: r.Claim.Path})
		}
	}
	return nil
}

// branchJudges returns, for each branch majlis created, the claim gc
// judges it by (the latest that created it; see gcBranches).
func branchJudges(all [][]*claimRecord) map[string]*claimRecord {
	created := map[string]*claimRecord{}
	for _, recs := range all {
		for _, r := range recs {
			c := r.Claim
			if c.Branch == "" || r.has(EventFailed) || c.Checkout || c.Detached {
				continue
			}
			if prev := created[c.Branch]; prev == nil || prev.Claim.CreatedAt.Before(c.CreatedAt) {
				created[c.Branch] = r
			}
		}
	}
	return created
}

// compactable says why record r must stay where it is ("" when it may be
// compacted), from what is on disk now: its outcome and age, its
// workspace, its trash folder, and the salvage refs it names (salvages:
// the refs that exist).
func compactable(r *claimRecord, now time.Time, age time.Duration, salvages map[string]bool) string {
	ev := finished(r)
	switch {
	case ev == nil:
		return "not finished"
	case now.Sub(ev.At) < age:
		return "finished too recently"
	case r.has(EventCreated) && !attestedAbsent(r):
		return "its workspace may still be there"
	}
	for _, e := range r.Events {
		if e.TrashPath != "" {
			if _, err := os.Lstat(e.TrashPath); !errors.Is(err, os.ErrNotExist) {
				return "its trash folder may still be there"
			}
		}
		if e.SalvageRef != "" && salvages[e.SalvageRef] {
			return "a salvage it names exists"
		}
	}
	if r.Claim.Restore != "" && salvages[r.Claim.Restore] {
		return "the salvage it restored exists"
	}
	return ""
}

// compactBinding compacts the records of binding that want names (seq to
// claim digest), checked again under the binding's reclaim reservation.
// It returns the records it compacted, or why it compacted none.
func (p *Provider) compactBinding(ctx context.Context, binding string, want map[int]string) (done []int, skipped string, err error) {
	const changed = "its records changed since the preview"
	recs, err := p.readBinding(binding)
	if err != nil {
		return nil, "", err
	}
	if len(recs) == 0 {
		return nil, changed, nil
	}
	newest := recs[len(recs)-1]
	// The reservation keeps reclaims, restores and other gcs of the
	// binding away; the publication lease, taken around the exchange,
	// keeps new claims away.
	lease, err := p.reserve(ctx, newest, "")
	if err != nil {
		if errors.Is(err, reservation.ErrHeld) {
			return nil, "it is being reclaimed or restored now", nil
		}
		return nil, "", err
	}
	defer lease.Release()
	if err := p.finishCompaction(binding); err != nil {
		return nil, "", err
	}
	if recs, err = p.readBinding(binding); err != nil {
		return nil, "", err
	}
	if len(recs) == 0 || recs[len(recs)-1].Digest != newest.Digest || finished(recs[len(recs)-1]) == nil {
		return nil, changed, nil
	}
	now := p.now()
	for _, r := range recs[:len(recs)-1] {
		d, ok := want[r.Claim.Seq]
		if !ok {
			continue
		}
		if d != r.Digest {
			return nil, changed, nil
		}
		// The preview judged the age and the salvage refs; the disk is
		// judged again now.
		if why := compactable(r, now, 0, nil); why != "" {
			return nil, fmt.Sprintf("#%d: %s", r.Claim.Seq, why), nil
		}
		done = append(done, r.Claim.Seq)
	}
	if len(done) != len(want) {
		return nil, changed, nil
	}
	if err := lease.Check(); err != nil {
		return nil, "", p.lostOr(binding, lease, err)
	}
	ok, err := p.swapOut(ctx, binding, want)
	if err != nil || !ok {
		return nil, changed, err
	}
	sort.Ints(done)
	return done, "", nil
}

// swapOut moves the records whose seq is in out from binding's claims
// folder into a staging folder, exchanged with the claims folder in one
// rename, then archives the staging folder. The caller holds the
// binding's reclaim reservation. ok is false, and nothing changed, when a
// record was published into the folder meanwhile.
func (p *Provider) swapOut(ctx context.Context, binding string, out map[int]string) (ok bool, err error) {
	claims := p.claimsDir(binding)
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
	dir := p.compactedDir(binding)
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
	pub, err := p.publicationLease(ctx, "gc "+binding)
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
	return true, p.finishCompaction(binding)
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

// finishCompaction finishes the staging folder of binding, if there is
// one (left by swapOut, or by a gc that crashed): every file in it that
// is the very file of the same name in the claims folder is unlinked
// (the file stays there), and what remains, the compacted records, is
// renamed to its archive name; an empty staging folder is removed. Only
// links the claims folder holds too are ever removed, so this is right
// whichever step a crash interrupted. The caller holds the binding's
// reclaim reservation (no other gc compacts it meanwhile).
func (p *Provider) finishCompaction(binding string) error {
	dir := p.compactedDir(binding)
	staging := filepath.Join(dir, stagingName)
	entries, err := os.ReadDir(staging)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Op: "gc", Binding: binding, Path: staging, Err: err}
	}
	claims := p.claimsDir(binding)
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

// compactJournal rewrites the claims journal from the claim records, once
// gc compacted some: the lines of compacted claims go, so that reclaim's
// re-checks, which read every line, read fewer. Under the publication
// lease no claim is being published, so every claim is in the records and
// the rewritten journal names it (journal.go). A failed or reclaimed line
// appended meanwhile to the old file may be lost: the journal then holds
// that workspace for possibly present, which only sends some checks to the
// full path. A journal that is missing or unusable is left to doctor.
func (p *Provider) compactJournal(ctx context.Context) error {
	lease, err := p.publicationLease(ctx, "gc journal")
	if err != nil {
		return err
	}
	defer lease.Release()
	if _, err := p.readJournal(); err != nil {
		return nil
	}
	_, all, errs, err := p.readBindingsFromRecords()
	if err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return nil // a damaged binding: the journal stays as it is
		}
	}
	if err := lease.Check(); err != nil {
		return nil
	}
	return durable.Replace(p.stateDir, journalName, p.journalFromClaims(all), durable.Perm(0o644))
}

// finishCompactions finishes the compactions a crashed gc left, each
// under its binding's reclaim reservation; a binding whose reservation is
// held is left for the next gc.
func (p *Provider) finishCompactions(ctx context.Context) error {
	root := filepath.Join(p.stateDir, compactedDirName)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Op: "gc", Path: root, Err: err}
	}
	for _, e := range entries {
		b := e.Name()
		if _, err := os.Lstat(filepath.Join(root, b, stagingName)); err != nil || ValidBinding(b) != nil {
			continue
		}
		recs, err := p.readBinding(b)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			continue // nothing to finish against: the staging folder stays as it is
		}
		lease, err := p.reserve(ctx, recs[len(recs)-1], "")
		if errors.Is(err, reservation.ErrHeld) {
			continue
		}
		if err != nil {
			return err
		}
		err = p.finishCompaction(b)
		lease.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// compactedRequestClaim returns the compacted claim of binding that
// request id published, or nil. A request id that majlis did not make up
// published a claim only if it was recorded (publishClaim records it
// first), so only those, and ids majlis made up, are looked for: a new
// allocation does not read the binding's compacted records.
func (p *Provider) compactedRequestClaim(binding, id string) (*claimRecord, error) {
	dir := p.compactedDir(binding)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Op: "read", Binding: binding, Path: dir, Err: err}
	}
	if !strings.HasPrefix(id, autoRequestPrefix) {
		if _, err := p.readRequest(id); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if !entries[i].IsDir() {
			continue
		}
		folder := filepath.Join(dir, entries[i].Name())
		names, err := filepath.Glob(filepath.Join(folder, "[0-9]*.claim"))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			var c Claim
			if _, err := readRecord(name, "claim", formatClaim, &c); err != nil {
				return nil, err
			}
			if c.RequestID != id {
				continue
			}
			recs, _, err := readClaimsFolder(folder, binding)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if r.Claim.Seq == c.Seq {
					return r, nil
				}
			}
		}
	}
	return nil, nil
}
