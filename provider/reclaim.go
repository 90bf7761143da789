package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

var (
	fpReclaimReserved = failpoint.New("reclaim/reserved")
	fpReclaimSalvaged = failpoint.New("reclaim/salvaged")
	// reclaim/removed: the trash deleted (or kept), the claim not yet
	// retired. The steps between are in trash.go.
	fpReclaimRemoved = failpoint.New("reclaim/removed")
)

// A Step is one effect a reclaim will have (or had).
type Step struct {
	Name   string `json:"name"`   // salvage, move, resalvage, delete-trash (forget, record for a missing workspace)
	Count  int    `json:"count"`  // files concerned
	Detail string `json:"detail"` // in words
}

// A Preview says everything a reclaim of a workspace would do. Its digest
// pins it: --confirm DIGEST proceeds only if the preview computed at that
// moment has the same digest.
type Preview struct {
	Digest       string `json:"digest"`
	Binding      string `json:"binding"`
	Path         string `json:"path"`
	PhysicalPath string `json:"physical_path"`
	Branch       string `json:"branch"`
	Head         string `json:"head"`
	ClaimDigest  string `json:"claim_digest"`
	Released     bool   `json:"released"`
	Salvage      struct {
		Clean           bool     `json:"clean"`
		Files           int      `json:"files"`
		Modified        int      `json:"modified"`
		Added           int      `json:"added"`
		Deleted         int      `json:"deleted"`
		Renamed         int      `json:"renamed"`
		Untracked       int      `json:"untracked"`
		Conflicted      int      `json:"conflicted"`
		DirtySubmodules []string `json:"dirty_submodules"`
		// What the salvage keeps beyond the files: the index when a file
		// is staged at a version the worktree no longer has, or has
		// intent-to-add entries; commits only the workspace holds (Pins,
		// each with where it was found); per-worktree refs; an interrupted
		// operation's state; hidden (assume-unchanged, skip-worktree)
		// edits.
		PartiallyStaged int                 `json:"partially_staged"`
		IntentToAdd     int                 `json:"intent_to_add"`
		Pins            []gitops.Pin        `json:"pins"`
		WorktreeRefs    []string            `json:"worktree_refs"`
		Operation       string              `json:"operation"`
		Hidden          []gitops.HiddenFile `json:"hidden"`
	} `json:"salvage"`
	IgnoredFiles int `json:"ignored_files"` // deleted with the directory, not salvaged
	// IgnoredPaths names the first MaxIgnoredPaths of them.
	IgnoredPaths []string `json:"ignored_paths"`
	Steps        []Step   `json:"steps"`
	PeersChecked int      `json:"peers_checked"`
	Peers        []Peer   `json:"peers"`
	// AdminEntry is git's administrative entry of the workspace
	// (<common dir>/worktrees/<id>). Pinned says whether it carries
	// majlis's pin; an entry of a workspace allocated before majlis pinned
	// them is pinned by the reclaim, before its first step.
	AdminEntry struct {
		Path   string `json:"path"`
		Pinned bool   `json:"pinned"`
	} `json:"admin_entry"`

	status *gitops.Status
}

// MaxIgnoredPaths bounds how many ignored files a preview names; it
// counts them all.
const MaxIgnoredPaths = 100

// concurrently runs fns at once and returns the first error, after all
// have returned.
func concurrently(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ReclaimOptions describe a reclaim.
type ReclaimOptions struct {
	Binding           string
	Confirm           string // the digest of the preview the user saw
	Yes               bool   // proceed without comparing digests (the checks still run)
	SalvageSubmodules bool   // salvage dirty submodules too, instead of refusing
	RequestID         string
	// KeepTrash, when positive, keeps the moved workspace in its trash
	// folder for this long instead of deleting it; the next reclaim after
	// that deletes it.
	KeepTrash time.Duration
}

// A ReclaimResult reports a finished reclaim. Its JSON is part of the CLI
// contract.
type ReclaimResult struct {
	Binding     string   `json:"binding"`
	Path        string   `json:"path"`
	SalvageRef  *string  `json:"salvage_ref"`  // the salvage taken before the first destructive step
	SalvageRefs []string `json:"salvage_refs"` // every salvage of this reclaim, across retries
	Submodules  []string `json:"salvaged_submodules,omitempty"`
	StepsDone   []string `json:"steps_done"`
	Removed     bool     `json:"removed"`
	Branch      string   `json:"branch"` // kept
	// SecondSalvageRef is the salvage of what the workspace held once moved
	// aside, when it differs from the first salvage (a writer was still at
	// work); it is in SalvageRefs too.
	SecondSalvageRef *string `json:"second_salvage_ref,omitempty"`
	// TrashPath and TrashKeptUntil are set when the trash is kept
	// (--keep-trash): the workspace's directory is there until then.
	TrashPath      string     `json:"trash_path,omitempty"`
	TrashKeptUntil *time.Time `json:"trash_kept_until,omitempty"`
	// PathOccupied reports that something appeared at the workspace's path
	// after the move: someone else's, left alone.
	PathOccupied bool `json:"path_occupied,omitempty"`
	// TrashPurged lists kept trash folders, of any workspace, that had
	// expired and that this reclaim deleted.
	TrashPurged []string `json:"trash_purged,omitempty"`
	// PinnedOnFirstContact reports that the workspace, allocated before
	// majlis pinned admin entries, was pinned by this reclaim.
	PinnedOnFirstContact bool `json:"pinned_on_first_contact,omitempty"`
}

// PreviewReclaim computes what a reclaim of binding would do, changing
// nothing. It refuses (as Reclaim would) when the target's authority
// cannot be established or a retained peer overlaps it.
func (p *Provider) PreviewReclaim(ctx context.Context, binding string) (*Preview, error) {
	rec, err := p.current("reclaim", binding)
	if err != nil {
		return nil, err
	}
	if rec.has(EventMoved) {
		if pv, ok := p.movedPreview(rec); ok {
			return pv, nil
		}
	}
	entry, err := p.authority(ctx, rec)
	if err != nil {
		if errors.Is(err, ErrMissing) {
			pv, _, merr := p.missingPreview(ctx, rec, err)
			if merr == nil {
				p.rememberPreview(pv)
			}
			return pv, merr
		}
		return nil, err
	}
	pv, err := p.previewWith(ctx, rec, entry, false)
	if err != nil {
		return nil, err
	}
	if err := firstOverlap(rec.Claim.Binding, rec.Claim.Path, pv.Peers); err != nil {
		return nil, err
	}
	if err := checkMovable(rec); err != nil {
		return nil, err
	}
	p.rememberPreview(pv)
	return pv, nil
}

// preview computes the preview. refresh, set only under the reservation of
// a reclaim that is going ahead, lets git refresh the workspace index's
// stat cache (gitops.StatusOptions.Refresh): the index's content stays
// the same, and the snapshot in the trash then need not re-read every
// file.
func (p *Provider) preview(ctx context.Context, rec *claimRecord, refresh bool) (*Preview, error) {
	dir, err := verifyRepository("reclaim", rec)
	if err != nil {
		return nil, err
	}
	entry, err := verifyAdminEntry("reclaim", rec, dir, false)
	if err != nil {
		return nil, err
	}
	return p.previewWith(ctx, rec, entry, refresh)
}

// previewWith is preview with the admin entry that authority verified.
func (p *Provider) previewWith(ctx context.Context, rec *claimRecord, entry *adminEntry, refresh bool) (*Preview, error) {
	c := rec.Claim
	var st *gitops.Status
	var sv *gitops.Survey
	err := concurrently(func() (err error) {
		st, err = gitops.ReadStatus(ctx, c.Path, gitops.StatusOptions{Ignored: true, Refresh: refresh})
		return err
	}, func() (err error) {
		sv, err = gitops.SurveyWorktree(ctx, c.Path)
		return err
	})
	if err != nil {
		return nil, err
	}
	peers, err := p.retainedPeers(ctx, rec, fullCheck)
	if err != nil {
		return nil, err
	}
	pv := &Preview{Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath, Branch: c.Branch, Head: st.Head,
		ClaimDigest: rec.Digest, Released: rec.has(EventReleased), PeersChecked: len(peers), Peers: peers, status: st}
	if pv.Peers == nil {
		pv.Peers = []Peer{}
	}
	pv.AdminEntry.Path, pv.AdminEntry.Pinned = entry.dir, entry.pinned
	n := st.Counts()
	s := &pv.Salvage
	s.Modified, s.Added, s.Deleted = n.Modified+n.TypeChanged, n.Added, n.Deleted
	s.Renamed, s.Untracked, s.Conflicted = n.Renamed+n.Copied, n.Untracked, n.Conflicted
	s.Files = n.Total()
	s.DirtySubmodules = nonNil(st.DirtySubmodules())
	s.Pins, s.Hidden, s.Operation, s.IntentToAdd = sv.Pins, sv.Hidden, sv.Operation, sv.IntentToAdd
	if s.Pins == nil {
		s.Pins = []gitops.Pin{}
	}
	if s.Hidden == nil {
		s.Hidden = []gitops.HiddenFile{}
	}
	s.WorktreeRefs = []string{}
	for r := range sv.Refs {
		s.WorktreeRefs = append(s.WorktreeRefs, r)
	}
	sort.Strings(s.WorktreeRefs)
	pv.IgnoredPaths = []string{}
	for _, e := range st.Entries {
		switch {
		case e.Kind == gitops.Ignored && len(pv.IgnoredPaths) < MaxIgnoredPaths:
			pv.IgnoredPaths = append(pv.IgnoredPaths, e.Path)
		case (e.Kind == gitops.Ordinary || e.Kind == gitops.RenamedOrCopied) && e.X != '.' && e.Y != '.':
			s.PartiallyStaged++
		}
	}
	s.Clean = s.Files == 0 && sv.Empty()
	pv.IgnoredFiles = n.Ignored
	if !s.Clean {
		var what []string
		if s.Files > 0 {
			what = append(what, fmt.Sprintf("%d changed files", s.Files))
		}
		if s.PartiallyStaged+s.IntentToAdd+s.Conflicted > 0 {
			what = append(what, fmt.Sprintf("the index (%d partially staged, %d intent-to-add, %d conflicted)", s.PartiallyStaged, s.IntentToAdd, s.Conflicted))
		}
		if len(s.Hidden) > 0 {
			what = append(what, fmt.Sprintf("%d hidden edits (assume-unchanged or skip-worktree)", len(s.Hidden)))
		}
		if len(s.Pins) > 0 {
			what = append(what, fmt.Sprintf("%d commits no branch or tag reaches", len(s.Pins)))
		}
		if len(s.WorktreeRefs) > 0 {
			what = append(what, fmt.Sprintf("%d per-worktree refs", len(s.WorktreeRefs)))
		}
		if s.Operation != "" {
			what = append(what, "the state of an interrupted "+s.Operation)
		}
		if set := sv.Settings(); len(set) > 0 {
			what = append(what, "the per-worktree settings ("+strings.Join(set, ", ")+")")
		}
		pv.Steps = append(pv.Steps, Step{"salvage", s.Files, "keep " + strings.Join(what, ", ") + " on " + SalvagePrefix + c.Binding + "/<n>"})
	}
	pv.Steps = append(pv.Steps,
		Step{"move", 0, fmt.Sprintf("move the directory, with one rename, into a trash folder beside it (%s/%s%s.%d.<random>), still locked; nothing is deleted at %s", filepath.Dir(c.Path), trashPrefix, c.Binding, c.Seq, c.Path)},
		Step{"resalvage", 0, "snapshot it again in the trash; anything written since the salvage goes to a second salvage ref"},
		Step{"delete-trash", n.Ignored, fmt.Sprintf("delete the trash folder, with %d ignored files that are not salvaged (--keep-trash D keeps it for D); branch %s is kept", n.Ignored, c.Branch)})
	pins := make([]string, 0, len(s.Pins)+len(sv.Refs))
	for _, p := range s.Pins {
		pins = append(pins, p.Commit+" "+p.Source)
	}
	for _, r := range s.WorktreeRefs {
		pins = append(pins, r+" "+sv.Refs[r])
	}

	// The digest covers every fact above and the paths behind the counts.
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(pv)
	entries := make([]string, 0, len(st.Entries))
	for _, e := range st.Entries {
		entries = append(entries, fmt.Sprintf("%s %s %s", e.Kind, e.Path, e.OrigPath))
	}
	sort.Strings(entries)
	enc.Encode(entries)
	enc.Encode(pins)
	if ev := rec.Events[EventCreated]; ev != nil {
		enc.Encode([]uint64{ev.Dev, ev.Ino})
	}
	pv.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return pv, nil
}

// authority establishes that the target may be reclaimed at all: no live
// owner, the directory is the one allocated, it is a linked worktree of
// the claimed repository whose admin entry is the one allocated and not
// locked by anyone else, and git run in it acts on it (see adminentry.go).
// It returns the verified admin entry.
func (p *Provider) authority(ctx context.Context, rec *claimRecord) (*adminEntry, error) {
	c := rec.Claim
	// Releasing hands the workspace back: its owner process stops counting.
	if c.OwnerPID != 0 && !rec.has(EventReleased) {
		self, err := procid.Of(os.Getpid())
		if err != nil {
			return nil, err
		}
		owner := self
		owner.PID, owner.StartTime = c.OwnerPID, c.OwnerStart
		if live, why := procid.Judge(owner); live != procid.Dead {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrWorkspaceLive,
				Reason: fmt.Sprintf("its owner process %d is %s: %s", c.OwnerPID, live, why),
				Hint:   "stop the owner process (or wait for it to exit), then reclaim"}
		}
	}
	if err := p.leaseLiveness(ctx, rec); err != nil {
		return nil, err
	}
	return p.verifyWorkspace(ctx, "reclaim", rec)
}

// verifyWorkspace runs the checks of the workspace itself (not of its
// owner or leases): directory identity, repository, admin entry, git's
// view. They read files in process but for one git process.
func (p *Provider) verifyWorkspace(ctx context.Context, op string, rec *claimRecord) (*adminEntry, error) {
	if err := p.verifyIdentity(op, rec); err != nil {
		return nil, err
	}
	dir, err := verifyRepository(op, rec)
	if err != nil {
		return nil, err
	}
	entry, err := verifyAdminEntry(op, rec, dir, false)
	if err != nil {
		return nil, err
	}
	if err := verifyGitView(ctx, op, rec); err != nil {
		return nil, err
	}
	return entry, nil
}

// verifyRepository checks that the target's .git file points into the
// claimed common dir, and that git's record there points back. It returns
// that record's directory, the worktree's admin entry.
func verifyRepository(op string, rec *claimRecord) (string, error) {
	c := rec.Claim
	fail := func(reason string) (string, error) {
		return "", &Error{Op: op, Binding: c.Binding, Path: filepath.Join(c.Path, ".git"), Err: ErrRepository,
			Reason: reason, Hint: "majlis will not touch it; inspect the directory"}
	}
	dotgit := filepath.Join(c.Path, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || !fi.Mode().IsRegular() {
		return fail("it has no .git file: it is not a linked worktree")
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return fail(err.Error())
	}
	gitdir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "gitdir: ")
	if !ok {
		return fail("its .git file is not a gitdir link")
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(c.Path, gitdir)
	}
	worktrees := filepath.Join(c.CommonDir, "worktrees")
	if filepath.Dir(filepath.Clean(gitdir)) != worktrees {
		return fail(fmt.Sprintf("its .git file points to %s, outside %s", gitdir, worktrees))
	}
	back, err := os.ReadFile(filepath.Join(gitdir, "gitdir"))
	if err != nil {
		return fail("the repository has no record of it: " + err.Error())
	}
	backPath := strings.TrimRight(string(back), "\n")
	same, _ := pathid.Compare(backPath, dotgit)
	if same.Relation != pathid.Equal {
		return fail(fmt.Sprintf("the repository's record %s points to %s, not here", gitdir, backPath))
	}
	return filepath.Clean(gitdir), nil
}

// Reclaim salvages, cleans and removes the binding's workspace, under a
// reclaim reservation, re-checking the reservation, the claim, the
// target's identity and every retained peer immediately before each
// destructive effect.
func (p *Provider) Reclaim(ctx context.Context, o ReclaimOptions) (*ReclaimResult, error) {
	if err := ValidBinding(o.Binding); err != nil {
		return nil, err
	}
	if o.Confirm != "" {
		if err := CheckDigest(o.Confirm); err != nil {
			return nil, err
		}
	}
	args := requestArgs{Op: "reclaim", Binding: o.Binding}
	if res, done, err := replay[ReclaimResult](p, o.RequestID, args); done || err != nil {
		return res, err
	}
	rec, err := p.current("reclaim", o.Binding)
	if err != nil {
		return nil, err
	}
	if !o.Yes && o.Confirm == "" {
		return nil, &Error{Op: "reclaim", Binding: o.Binding, Err: ErrUnconfirmed,
			Hint: "preview the reclaim, then confirm its digest"}
	}
	if rec.has(EventMoved) {
		// An interrupted reclaim moved (or was about to move) the
		// workspace into its trash folder: finish from there.
		if res, handled, err := p.reclaimMoved(ctx, rec, o, args); handled {
			return res, err
		}
	}
	entry, err := p.authority(ctx, rec)
	if err != nil {
		if errors.Is(err, ErrMissing) {
			return p.reclaimMissing(ctx, rec, o, args, err)
		}
		return nil, err
	}
	lease, err := p.reserve(ctx, rec, o.RequestID)
	if err != nil {
		return nil, err
	}
	// A refusal or failure ends the reclaim: release the reservation so a
	// retry need not wait for it to expire. (A crash leaves it held; a
	// retry recovers it once it has expired and this process is proven
	// dead.)
	defer lease.release()
	// The leases again, now that the reservation stands: an admission
	// that did not see it had committed before this reads (liveness.go).
	if err := p.leaseLiveness(ctx, rec); err != nil {
		return nil, err
	}
	if err := fpReclaimReserved.Inject(); err != nil {
		return nil, err
	}
	res, err := p.reclaimReserved(ctx, rec, entry, lease, o)
	if err != nil {
		return nil, err
	}
	// Kept trash whose time is up goes with the next reclaim.
	res.TrashPurged = p.purgeExpiredTrash(ctx, rec)
	if o.RequestID != "" {
		if err := p.recordRequest(o.RequestID, args, res); err != nil {
			return nil, err
		}
	}
	if err := lease.release(); err != nil {
		return nil, err
	}
	p.forgetPreviews(o.Binding)
	return res, nil
}

func (p *Provider) reclaimReserved(ctx context.Context, rec *claimRecord, entry *adminEntry, lease *heldReservation, o ReclaimOptions) (*ReclaimResult, error) {
	c := rec.Claim
	pv, err := p.previewWith(ctx, rec, entry, true)
	if err != nil {
		return nil, err
	}
	if err := firstOverlap(c.Binding, c.Path, pv.Peers); err != nil {
		return nil, err
	}
	if !o.Yes && pv.Digest != o.Confirm {
		return nil, p.staleError(o.Confirm, pv)
	}
	res := &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{}}
	if len(pv.Salvage.DirtySubmodules) > 0 && !o.SalvageSubmodules {
		return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrDirtySubmodule,
			Reason: "dirty submodules: " + strings.Join(pv.Salvage.DirtySubmodules, ", "),
			Hint:   "commit their changes, or have the reclaim salvage them too"}
	}
	if err := checkMovable(rec); err != nil {
		return nil, err
	}
	// A workspace allocated before majlis pinned admin entries is pinned
	// now, before any step: the checks that follow then require the pin,
	// so the entry cannot be swapped for another one meanwhile.
	if !entry.pinned {
		if _, err := verifyAdminEntry("reclaim", rec, entry.dir, false); err != nil {
			return nil, err
		}
		if err := gitops.PinWorktree(entry.dir, rec.Digest); err != nil {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: entry.dir, Err: ErrIdentity,
				Reason: "pinning git's entry of the workspace: " + err.Error(), Hint: "inspect it"}
		}
		res.PinnedOnFirstContact = true
	}

	// Salvage first; nothing is destroyed if it fails. Checked-out
	// submodules keep their work and their commits in this worktree's own
	// git directory, which removal deletes: copy them into the repository.
	kept, err := p.keepSubmodules(ctx, rec, pv.Salvage.DirtySubmodules, o.SalvageSubmodules)
	if err != nil {
		return nil, err
	}
	res.Submodules = kept
	if !pv.Salvage.Clean {
		// A retry after an interruption salvages again whatever is there
		// now; the first salvage (recorded in the salvaged event) holds the
		// state before any destructive step and stays the reclaim's ref.
		s, err := p.salvage(ctx, rec, "majlis reclaim of workspace "+c.Binding)
		if err != nil {
			return nil, err
		}
		if s.Ref != nil {
			res.SalvageRefs = append(res.SalvageRefs, *s.Ref)
			res.StepsDone = append(res.StepsDone, "salvage")
			if _, err := p.publishEvent(rec, Event{Kind: EventSalvaged, SalvageRef: *s.Ref}); err != nil {
				return nil, err
			}
		}
	}
	if err := fpReclaimSalvaged.Inject(); err != nil {
		return nil, err
	}

	// From here on nothing runs on the workspace's path: it is moved
	// aside, verified and salvaged again there, then deleted (trash.go).
	return p.moveAside(ctx, rec, entry, lease, o, res)
}

// missingPreview is the preview of a workspace whose directory is gone:
// deleted or moved by hand, or removed by a reclaim interrupted before it
// could record so (failpoint reclaim/removed). listed says whether git
// still has a worktree entry for the path. Any other state at the path
// returns missing, the error that led here.
func (p *Provider) missingPreview(ctx context.Context, rec *claimRecord, missing error) (*Preview, bool, error) {
	c := rec.Claim
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		return nil, false, missing
	}
	paths, err := gitops.WorktreePaths(ctx, c.CommonDir)
	if err != nil {
		return nil, false, err
	}
	listed := false
	for _, w := range paths {
		listed = listed || w == c.Path || w == c.PhysicalPath
	}
	pv := &Preview{Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath, Branch: c.Branch,
		ClaimDigest: rec.Digest, Released: rec.has(EventReleased), Peers: []Peer{}}
	if listed {
		// The entry git keeps for the path must be the workspace's own, and
		// not locked by anyone else ("on removable media"): forgetting it
		// would make the directory, when it comes back, no worktree at all.
		entries, err := gitops.WorktreeEntries(c.CommonDir, c.Path, c.PhysicalPath)
		if err != nil {
			return nil, false, err
		}
		if len(entries) != 1 {
			return nil, false, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
				Reason: fmt.Sprintf("git lists a worktree at the path, but %d entries of %s name it", len(entries), filepath.Join(c.CommonDir, "worktrees")),
				Hint:   "inspect git's worktree entries ('git worktree list --porcelain')"}
		}
		entry, err := verifyAdminEntry("reclaim", rec, entries[0], true)
		if err != nil {
			return nil, false, err
		}
		pv.AdminEntry.Path, pv.AdminEntry.Pinned = entry.dir, entry.pinned
	}
	pv.Salvage.Clean, pv.Salvage.DirtySubmodules = true, []string{}
	pv.Salvage.Pins, pv.Salvage.Hidden, pv.Salvage.WorktreeRefs, pv.IgnoredPaths = []gitops.Pin{}, []gitops.HiddenFile{}, []string{}, []string{}
	if listed {
		pv.Steps = []Step{{"forget", 0, "the directory is gone (deleted or moved by hand): unregister git's worktree entry and retire the claim; nothing on disk is deleted (if you moved it, run 'git worktree repair NEW_PATH' instead)"}}
	} else {
		pv.Steps = []Step{{"record", 0, "the worktree was already removed: retire the claim"}}
	}
	h := sha256.New()
	json.NewEncoder(h).Encode(pv)
	pv.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return pv, listed, nil
}

// reclaimMissing retires the claim of a workspace whose directory is gone.
// If git still lists a worktree entry for it, the entry is unregistered
// (`git worktree remove` of a missing directory deletes only git's
// administrative files). Under the reservation it re-checks that the
// directory is still absent and the claim unchanged. It deletes nothing on
// disk.
func (p *Provider) reclaimMissing(ctx context.Context, rec *claimRecord, o ReclaimOptions, args requestArgs, missing error) (*ReclaimResult, error) {
	c := rec.Claim
	pv, listed, err := p.missingPreview(ctx, rec, missing)
	if err != nil {
		return nil, err
	}
	if listed && !o.Yes && o.Confirm != pv.Digest {
		return nil, p.staleError(o.Confirm, pv)
	}
	lease, err := p.reserve(ctx, rec, o.RequestID)
	if err != nil {
		return nil, err
	}
	defer lease.release()
	recheck := func() (bool, error) {
		if err := lease.check(); err != nil {
			return false, err
		}
		if now, err := p.current("reclaim", c.Binding); err != nil {
			return false, err
		} else if now.Digest != rec.Digest {
			return false, &Error{Op: "reclaim", Binding: c.Binding, Err: ErrIdentity,
				Reason: "the binding's claim changed during the reclaim"}
		}
		_, listed, err := p.missingPreview(ctx, rec, missing)
		return listed, err
	}
	res := &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{}, Removed: true}
	if listed, err = recheck(); err != nil {
		return nil, err
	}
	if listed {
		if err := unlockOwn(rec, pv.AdminEntry.Path); err != nil {
			return nil, err
		}
		if err := gitops.RemoveWorktree(ctx, c.CommonDir, c.Path, false); err != nil {
			return nil, err
		}
		if listed, err = recheck(); err != nil {
			return nil, err
		} else if listed {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
				Reason: "git still lists the worktree after removing its entry"}
		}
		res.StepsDone = append(res.StepsDone, "forget")
	}
	ref := ""
	if ev := rec.Events[EventSalvaged]; ev != nil {
		ref = ev.SalvageRef
		res.SalvageRef = &ref
		res.SalvageRefs = append(res.SalvageRefs, ref)
	}
	if _, err := p.publishEvent(rec, Event{Kind: EventReclaimed, SalvageRef: ref}); err != nil {
		return nil, err
	}
	if o.RequestID != "" {
		if err := p.recordRequest(o.RequestID, args, res); err != nil {
			return nil, err
		}
	}
	if err := lease.release(); err != nil {
		return nil, err
	}
	p.forgetPreviews(o.Binding)
	return res, nil
}

// recheck runs immediately before every destructive effect: the
// reservation is still ours, the claim is unchanged, the target is the
// same directory of the same repository, and no retained peer overlaps.
func (p *Provider) recheck(ctx context.Context, rec *claimRecord, lease *heldReservation) error {
	if err := lease.check(); err != nil {
		return err
	}
	now, err := p.current("reclaim", rec.Claim.Binding)
	if err != nil {
		return err
	}
	if now.Digest != rec.Digest {
		return &Error{Op: "reclaim", Binding: rec.Claim.Binding, Err: ErrIdentity,
			Reason: "the binding's claim changed during the reclaim"}
	}
	entry, err := p.verifyWorkspace(ctx, "reclaim", now)
	if err != nil {
		return err
	}
	if !entry.pinned {
		return &Error{Op: "reclaim", Binding: rec.Claim.Binding, Path: rec.Claim.Path, Err: ErrIdentity,
			Reason: "git's entry of the workspace (" + entry.dir + ") lost majlis's pin during the reclaim",
			Hint:   "majlis will not act on it; inspect the worktree"}
	}
	if err := p.leaseLiveness(ctx, now); err != nil {
		return err
	}
	peers, err := p.retainedPeers(ctx, now, fastCheck)
	if err != nil {
		return err
	}
	return firstOverlap(rec.Claim.Binding, rec.Claim.Path, peers)
}

// keepSubmodules copies into the repository, under
// refs/majlis/salvage/<binding>/modules/<k>/<path>/, the HEAD, branches,
// tags, majlis refs, every stash entry (stash/<i> for stash@{i}) and the
// commits only its reflogs or per-worktree refs hold (pins/<i>) of every
// checked-out submodule of the workspace, after
// salvaging (with salvageDirty) the uncommitted work of dirty ones into
// their own refs/majlis/salvage/<binding>/<n>. It returns "path prefix"
// lines for the result.
func (p *Provider) keepSubmodules(ctx context.Context, rec *claimRecord, dirty []string, salvageDirty bool) ([]string, error) {
	c := rec.Claim
	owned, err := ownedSubmodules(ctx, c.Path)
	if err != nil || len(owned) == 0 {
		return nil, err
	}
	isDirty := map[string]bool{}
	for _, d := range dirty {
		isDirty[filepath.Join(c.Path, filepath.FromSlash(d))] = true
	}
	dirs := make([]string, 0, len(owned))
	for d := range owned {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	reader, err := gitops.OpenReader(ctx, c.CommonDir)
	if err != nil {
		return nil, err
	}
	base := SalvagePrefix + c.Binding + "/modules/"
	refs, err := reader.Refs(ctx, base)
	if err != nil {
		return nil, err
	}
	k := 0
	for _, r := range refs {
		n, _, _ := strings.Cut(strings.TrimPrefix(r.Name, base), "/")
		if v, err := strconv.Atoi(n); err == nil && v > k {
			k = v
		}
	}
	k++
	var kept []string
	for _, dir := range dirs {
		rel, _ := filepath.Rel(c.Path, dir)
		if isDirty[dir] && salvageDirty {
			snap, err := gitops.Snapshot(ctx, dir, "majlis reclaim of workspace "+c.Binding+", submodule "+filepath.ToSlash(rel))
			if err != nil {
				return nil, err
			}
			if !snap.Clean {
				ref := SalvagePrefix + c.Binding + "/" + strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := gitops.UpdateRefCreate(ctx, dir, ref, snap.Commit); err != nil {
					return nil, err
				}
			}
		}
		prefix := base + strconv.Itoa(k) + "/" + refSafe(filepath.ToSlash(rel))
		// Every stash entry, not only stash@{0}: the older ones live in
		// the stash's reflog, which no refspec names.
		stashes, err := gitops.StashEntries(dir)
		if err != nil {
			return nil, err
		}
		specs := []string{"+HEAD:" + prefix + "/HEAD", "+refs/heads/*:" + prefix + "/heads/*",
			"+refs/tags/*:" + prefix + "/tags/*", "+refs/majlis/*:" + prefix + "/majlis/*"}
		for i, id := range stashes {
			specs = append(specs, "+"+id+":"+prefix+"/stash/"+strconv.Itoa(i))
		}
		// Commits that only the submodule's reflogs, per-worktree refs or
		// an interrupted operation hold, as salvage finds them for the
		// workspace itself.
		sv, err := gitops.SurveyWorktree(ctx, dir)
		if err != nil {
			return nil, err
		}
		for i, pin := range sv.Pins {
			if pin.Source != "HEAD" { // HEAD is fetched above
				specs = append(specs, "+"+pin.Commit+":"+prefix+"/pins/"+strconv.Itoa(i))
			}
		}
		if err := gitops.FetchInto(ctx, c.CommonDir, dir, specs...); err != nil {
			return nil, err
		}
		kept = append(kept, filepath.ToSlash(rel)+" "+prefix)
	}
	return kept, nil
}

// refSafe turns a path into ref name components: anything but letters,
// digits, '-' and '_' (and '.' inside a component) becomes '_'.
func refSafe(path string) string {
	parts := strings.Split(path, "/")
	for i, part := range parts {
		b := []byte(part)
		for j, ch := range b {
			ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' && j > 0
			if !ok {
				b[j] = '_'
			}
		}
		s := strings.TrimSuffix(strings.ReplaceAll(string(b), "..", "__"), ".lock")
		if s == "" || strings.HasSuffix(s, ".") {
			s += "_"
		}
		parts[i] = s
	}
	return strings.Join(parts, "/")
}

// A heldReservation is a reclaim reservation kept alive by renewal.
type heldReservation struct {
	lease   *reservation.Lease
	ttl     time.Duration
	once    sync.Once
	relOnce sync.Once
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error // a failed renewal: the reservation may be lost
}

// reserve registers the per-binding reclaim reservation under the brief
// publication lease. A reservation whose owner is proven dead (and which
// has expired) is recovered first.
func (p *Provider) reserve(ctx context.Context, rec *claimRecord, requestID string) (*heldReservation, error) {
	c := rec.Claim
	ttl := p.ttl
	pub, err := p.publicationLease(ctx, "reclaim "+c.Binding)
	if err != nil {
		return nil, err
	}
	defer pub.Release()
	req := reservation.Request{Resource: reclaimPrefix + c.Binding, Purpose: "reclaim", TTL: ttl,
		AuthorityDigest: rec.Digest,
		Metadata:        map[string]string{"binding": c.Binding, "request_id": requestID, "path": c.Path, "physical_path": c.PhysicalPath}}
	l, err := p.leases.Acquire(ctx, req)
	if errors.Is(err, reservation.ErrHeld) {
		if _, rerr := p.leases.Recover(ctx, req.Resource); rerr == nil {
			l, err = p.leases.Acquire(ctx, req)
		}
	}
	if err != nil {
		return nil, err
	}
	h := &heldReservation{lease: l, ttl: ttl, done: make(chan struct{})}
	h.wg.Add(1)
	go h.renew()
	return h, nil
}

func (h *heldReservation) renew() {
	defer h.wg.Done()
	// Renew every third of the TTL: two renewals may fail before it
	// expires. The floor keeps the interval positive whatever the TTL.
	t := time.NewTicker(max(h.ttl/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
			if err := h.lease.Renew(h.ttl); err != nil {
				h.mu.Lock()
				h.err = err
				h.mu.Unlock()
				return
			}
		}
	}
}

func (h *heldReservation) check() error {
	h.mu.Lock()
	err := h.err
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return h.lease.Check()
}

func (h *heldReservation) stop() {
	h.once.Do(func() { close(h.done) })
	h.wg.Wait()
}

// release ends the reservation. Releasing twice is harmless: the second
// call reports nothing.
func (h *heldReservation) release() error {
	h.stop()
	var err error
	h.relOnce.Do(func() { err = h.lease.Release() })
	return err
}

// RecoverReservation retires the binding's reclaim reservation when it has
// expired and its exact same-host owner is proven dead. It retires the
// lease file only: never the claim, the worktree or a ref.
// A retry with the same requestID returns the recorded result.
func (p *Provider) RecoverReservation(ctx context.Context, binding, requestID string) (*reservation.Record, error) {
	if err := ValidBinding(binding); err != nil {
		return nil, err
	}
	args := requestArgs{Op: "recover", Binding: binding}
	if rec, done, err := replay[reservation.Record](p, requestID, args); done || err != nil {
		return rec, err
	}
	rec, err := p.leases.Recover(ctx, reclaimPrefix+binding)
	if err != nil {
		return nil, err
	}
	if requestID != "" {
		if err := p.recordRequest(requestID, args, rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}
