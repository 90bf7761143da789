package provider

// The preview of a reclaim and its digest. A preview says everything a
// reclaim would do (what it salvages, the steps, the retained peers it
// checked) and changes nothing; its digest pins it, so that --confirm
// DIGEST proceeds only if the preview computed under the reservation,
// immediately before the first step, is the same. What a stale digest
// changed is worded from the summaries in previews.go.

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
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/wire"
)

// Step is wire.Step: the result type is defined once, in the wire contract.
type Step = wire.Step

// A Preview is what a reclaim would do (wire.Preview, its JSON), with
// what its digest covers beyond what it shows.
type Preview struct {
	wire.Preview
	status  *gitops.Status
	facts   []any // what the digest covers beyond the fields (digestWithout)
	procErr error // why Processes could not be found
	// trashKey is the policy key behind TrashGoesAtOnce.
	trashKey string
}

// MaxIgnoredPaths bounds how many ignored files a preview names; it
// counts them all.
const MaxIgnoredPaths = 100

// PreviewReclaim computes what a reclaim of binding would do, changing
// nothing. It refuses (as Reclaim would) when the target's authority
// cannot be established or a retained peer overlaps it.
func (p *Provider) PreviewReclaim(ctx context.Context, binding string) (*Preview, error) {
	rec, err := p.records.Current("reclaim", binding)
	if err != nil {
		return nil, err
	}
	rec = p.asGitSees(ctx, rec)
	if rec.has(EventMoved) {
		if pv, ok := p.movedPreview(rec); ok {
			pv.Processes, pv.RecoverLeases = []Process{}, []LeaseRef{}
			return pv, nil
		}
	}
	entry, err := p.authority(ctx, rec)
	if err != nil {
		if errors.Is(err, ErrMissing) {
			pv, _, merr := p.missingPreview(ctx, rec, err)
			if merr == nil {
				p.lookInside(ctx, rec, pv)
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
	pv.OwnerPID = rec.Claim.OwnerPID
	pv.OwnerState, _ = ownerState(&rec.Claim)
	p.lookInside(ctx, rec, pv)
	p.rememberPreview(pv)
	return pv, nil
}

// lookInside adds what informs a preview beyond its digest: the
// processes inside the workspace and the leases the reclaim would
// recover. A scan that cannot be made leaves Processes nil (procErr
// says why): a bulk reclaim then leaves the workspace out.
func (p *Provider) lookInside(ctx context.Context, rec *claimRecord, pv *Preview) {
	pv.Processes, pv.procErr = workspaceProcesses(&rec.Claim)
	pv.RecoverLeases = []LeaseRef{}
	if svc, err := p.admission(ctx); err == nil {
		if live, err := svc.LiveLeases(ctx, rec.Claim.Binding, rec.Claim.PhysicalPath); err == nil {
			_, dead := splitRecoverable(live)
			pv.RecoverLeases = leaseRefs(dead)
		}
	}
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
	var sv *salvage.Survey
	var specials []salvage.SpecialFile
	var nSpecial, nDotGit int
	var dotgit, refused []string
	var size int64
	err := workers.ConcurrentlyJoined(func() (err error) {
		if st, err = gitops.ReadStatus(ctx, c.Path, gitops.StatusOptions{Ignored: true, Refresh: refresh}); err != nil {
			return err
		}
		refused, err = refusedNames(ctx, c.Path, st)
		return err
	}, func() (err error) {
		sv, err = salvage.SurveyWorktree(ctx, c.Path)
		return err
	}, func() (err error) {
		nSpecial, specials, err = salvage.SpecialFiles(c.Path, MaxIgnoredPaths)
		return err
	}, func() (err error) {
		nDotGit, dotgit, err = salvage.DotGitFiles(c.Path, MaxIgnoredPaths)
		return err
	}, func() (err error) {
		size, err = p.trashSize(c.Path) // what its trash would take
		return err
	})
	if err != nil {
		return nil, err
	}
	peers, err := p.retainedPeersFromClaims(ctx, rec)
	if err != nil {
		return nil, err
	}
	pv := &Preview{Preview: wire.Preview{Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath, Branch: c.Branch, Head: st.Head,
		ClaimDigest: rec.Digest, Released: rec.has(EventReleased), PeersChecked: len(peers), Peers: peers}, status: st}
	if pv.Peers == nil {
		pv.Peers = []Peer{}
	}
	pv.AdminEntry.Path, pv.AdminEntry.Pinned = entry.dir, entry.pinned
	n := st.Counts()
	pv.Changes = n
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
		s.Hidden = []salvage.HiddenFile{}
	}
	s.UnpopulatedSubmoduleFiles = nonNil(sv.Unpopulated)
	s.RefusedNames = append(refused, dotgit...)
	if len(s.RefusedNames) > MaxIgnoredPaths {
		s.RefusedNames = s.RefusedNames[:MaxIgnoredPaths]
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
	s.Clean = s.Files == 0 && sv.Empty() && nDotGit == 0
	pv.IgnoredFiles = n.Ignored
	pv.SpecialFiles, pv.SpecialPaths = nSpecial, specials
	// Why the trash would go at once names sizes that change with every
	// write to the disk: the digest covers the key behind it, and the
	// why is shown once the digest is made.
	var atOnce string
	if atOnce, pv.trashKey, err = p.trashAtOnce(c.PhysicalPath, size); err != nil {
		return nil, err
	}
	pv.Steps = reclaimSteps(pv, &c, salvageWhat(pv, sv.Settings(), len(refused)+nDotGit))
	pins := append(pinFacts(s.Pins, s.WorktreeRefs, sv.Refs), dotgit...)
	// The digest covers every fact above and the paths behind the counts.
	entries := make([]string, 0, len(st.Entries))
	for _, e := range st.Entries {
		entries = append(entries, fmt.Sprintf("%s %s %s", e.Kind, e.Path, e.OrigPath))
	}
	sort.Strings(entries)
	facts := []any{entries, pins, pv.trashKey}
	if ev := rec.Events[EventCreated]; ev != nil {
		facts = append(facts, []uint64{ev.Dev, ev.Ino})
	}
	pv.facts = facts
	pv.Digest = previewDigest(pv, facts...)
	pv.TrashGoesAtOnce = atOnce
	return pv, nil
}

// reclaimSteps are the steps of a preview of the workspace of claim c:
// its salvage (keeping what) unless it is clean, the move, the second
// salvage and the trash's deletion.
func reclaimSteps(pv *Preview, c *Claim, what []string) []Step {
	var steps []Step
	if !pv.Salvage.Clean {
		steps = append(steps, Step{Name: "salvage", Count: pv.Salvage.Files, Detail: "keep " + strings.Join(what, ", ") + " on " + SalvagePrefix + c.Binding + "/<n>"})
	}
	return append(steps,
		Step{Name: "move", Count: 0, Detail: fmt.Sprintf("move the directory, with one rename, into a trash folder beside it (%s/%s%s.%d.<random>), still locked; nothing is deleted at %s", filepath.Dir(c.Path), trashPrefix, c.Binding, c.Seq, c.Path)},
		Step{Name: "resalvage", Count: 0, Detail: "snapshot it again in the trash; anything written since the salvage goes to a second salvage ref"},
		deleteTrashStep(pv.IgnoredFiles, pv.SpecialFiles, c.Branch, pv.trashKey))
}

// deleteTrashStep is a preview's last step: the trash folder deleted,
// unless it is kept for the undo window; or, when the policy's space
// bound key would purge it at once, deleted by the reclaim itself.
func deleteTrashStep(ignored, special int, branch, key string) Step {
	if key != "" {
		return Step{Name: "delete-trash", Count: ignored + special, Detail: fmt.Sprintf("delete the trash folder at once, with %s that are not salvaged: "+
			"the policy's %s would purge it at once, so it is not kept for the undo window; branch %s is kept", notSalvaged(ignored, special), key, branch)}
	}
	return Step{Name: "delete-trash", Count: ignored + special, Detail: fmt.Sprintf("delete the trash folder, with %s that are not salvaged, unless the trash is kept; branch %s is kept", notSalvaged(ignored, special), branch)}
}

// pinFacts are the pins and per-worktree refs a preview's digest covers.
func pinFacts(pins []gitops.Pin, refNames []string, refs map[string]string) []string {
	out := make([]string, 0, len(pins)+len(refNames))
	for _, p := range pins {
		out = append(out, p.Commit+" "+p.Source)
	}
	for _, r := range refNames {
		out = append(out, r+" "+refs[r])
	}
	return out
}

// salvageWhat words what a preview's salvage keeps, for its step: settings
// are the per-worktree settings kept, refused the files git will not
// store under their names.
func salvageWhat(pv *Preview, settings []string, refused int) []string {
	s := &pv.Salvage
	var what []string
	if s.Files > 0 {
		what = append(what, fmt.Sprintf("%d changed files", s.Files))
	}
	if s.PartiallyStaged+s.IntentToAdd+s.Conflicted > 0 {
		what = append(what, fmt.Sprintf("the index (%d partially staged, %d intent-to-add, %d conflicted)", s.PartiallyStaged, s.IntentToAdd, s.Conflicted))
	}
	if len(s.Hidden) > 0 {
		what = append(what, fmt.Sprintf("%d hidden edits (assume-unchanged, skip-worktree, or an executable bit core.fileMode=false hides)", len(s.Hidden)))
	}
	if len(s.UnpopulatedSubmoduleFiles) > 0 {
		what = append(what, fmt.Sprintf("%d files in the folders of submodules that are not checked out (git does not see them)", len(s.UnpopulatedSubmoduleFiles)))
	}
	if refused > 0 {
		what = append(what, fmt.Sprintf("%s git will not store under their names (kept under encoded names)", nounCount(refused, "file", "files")))
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
	if len(settings) > 0 {
		what = append(what, "the per-worktree settings ("+strings.Join(settings, ", ")+")")
	}
	return what
}

// refusedNames asks git which of the workspace's untracked files it
// refuses to store under their names (salvage.RefusedNames).
func refusedNames(ctx context.Context, dir string, st *gitops.Status) ([]string, error) {
	var untracked []string
	for _, e := range st.Entries {
		if e.Kind == gitops.Untracked {
			untracked = append(untracked, e.Path)
		}
	}
	return salvage.RefusedNames(ctx, dir, untracked)
}

// notSalvaged words what a reclaim deletes without salvaging it: the
// ignored files and, when there are any, the special files.
func notSalvaged(ignored, special int) string {
	what := fmt.Sprintf("%d ignored files", ignored)
	if special > 0 {
		what += fmt.Sprintf(" and %s (FIFOs, sockets, devices: git cannot keep them)", nounCount(special, "special file", "special files"))
	}
	return what
}

// notSalvagedShort is notSalvaged for a progress line.
func notSalvagedShort(ignored, special int) string {
	what := nounCount(ignored, "ignored file", "ignored files")
	if special > 0 {
		what += " and " + nounCount(special, "special file", "special files")
	}
	return what
}

// digestWithout is the digest of pv as if the peers at the paths of
// without were not there. A bulk reclaim compares each workspace's
// preview this way, so that the other workspaces of its set, reclaimed
// meanwhile, do not make it stale.
func (pv *Preview) digestWithout(without map[string]bool) string {
	if pv.status == nil {
		return pv.Digest // a missing or moved workspace's preview lists no peers
	}
	c := *pv
	c.Digest, c.OwnerPID, c.OwnerState, c.TrashGoesAtOnce = "", 0, "", ""
	c.Processes, c.RecoverLeases = nil, nil
	c.Peers = []Peer{}
	for _, peer := range pv.Peers {
		if !without[peer.Path] {
			c.Peers = append(c.Peers, peer)
		}
	}
	c.PeersChecked = len(c.Peers)
	return previewDigest(&c, pv.facts...)
}

// previewDigest is the digest that pins a preview: SHA-256 over the JSON
// of everything it shows (its Digest still empty) and then of each of
// facts, the details behind its counts that it does not show. A
// confirmation proceeds only when the preview computed at that moment has
// the digest confirmed, so anything that would change what a reclaim does
// must change the digest.
func previewDigest(pv *Preview, facts ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(pv)
	for _, f := range facts {
		enc.Encode(f)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
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
	if !listed && !rec.has(EventMoved) {
		// Not at its path and not listed there, but git's entry pinned
		// with the claim may still exist: `git worktree move` (or a move
		// and `git worktree repair`) took the workspace elsewhere, with its
		// work and majlis's lock. It was moved, not removed.
		moved, err := gitops.EntriesPinnedWith(c.CommonDir, rec.Digest)
		if err != nil {
			return nil, false, err
		}
		if len(moved) > 0 {
			return nil, false, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
				Reason: fmt.Sprintf("the workspace was moved, not removed: git's entry of it (%s) now names %s", moved[0].Dir, moved[0].WorkTree),
				Hint:   fmt.Sprintf("move it back ('git worktree move --force --force %s %s'), then reclaim", moved[0].WorkTree, c.Path)}
		}
	}
	pv := &Preview{Preview: wire.Preview{Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath, Branch: c.Branch,
		ClaimDigest: rec.Digest, Released: rec.has(EventReleased), Peers: []Peer{}}}
	if listed && c.PhysicalPath != c.Path {
		// git lists the worktree at its physical path: if something is
		// there, the folder is not gone (the same directory is judged
		// present before this; see asGitSees), and its entry is not to be
		// dropped under it.
		if _, err := os.Lstat(c.PhysicalPath); !errors.Is(err, os.ErrNotExist) {
			return nil, false, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Peer: c.PhysicalPath, Err: ErrIdentity,
				Reason: "nothing is at the workspace's path, but git lists it at " + c.PhysicalPath + ", where another directory is (a symbolic link among its parents changed?)",
				Hint:   "majlis will not act on it; inspect both paths"}
		}
	}
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
	pv.Salvage.Pins, pv.Salvage.Hidden, pv.Salvage.WorktreeRefs, pv.IgnoredPaths = []gitops.Pin{}, []salvage.HiddenFile{}, []string{}, []string{}
	pv.Salvage.UnpopulatedSubmoduleFiles, pv.Salvage.RefusedNames = []string{}, []string{}
	pv.SpecialPaths = []salvage.SpecialFile{}
	var facts []any
	if listed {
		// What only git's entry still holds is salvaged before it goes
		// (entryaside.go).
		if facts, err = entryPreview(ctx, pv, &c, pv.AdminEntry.Path); err != nil {
			return nil, false, err
		}
	} else {
		pv.Steps = []Step{{Name: "record", Count: 0, Detail: "the worktree was already removed: retire the claim"}}
	}
	pv.Digest = previewDigest(pv, facts...)
	return pv, listed, nil
}

// CheckDigest reports whether d is a well-formed preview digest: "sha256:"
// and 64 lowercase hexadecimal digits. The error wraps ErrInvalidArgument.
func CheckDigest(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	valid := ok && len(hex) == 64
	for i := 0; valid && i < len(hex); i++ {
		c := hex[i]
		valid = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
	}
	if !valid {
		return &Error{Op: "reclaim", Err: ErrInvalidArgument,
			Reason: fmt.Sprintf("%q is not a preview digest (sha256: and 64 lowercase hexadecimal digits)", d),
			Hint:   "copy the digest that the preview printed", Details: map[string]any{"argument": "digest"}}
	}
	return nil
}
