package provider

// A workspace whose folder is gone (moved or deleted by hand, a backup
// tool) while git's admin entry of it remains. The entry alone still
// holds the workspace's HEAD (a commit made on a detached HEAD), its
// per-worktree refs (refs/worktree/*, refs/bisect/*), its index (staged
// blobs), its reflogs and the repositories of its checked-out submodules:
// dropping it would leave those to git gc. So reclaim salvages the entry
// as it salvages a workspace (salvage.SnapshotEntry: the index commit, the
// meta commit, a pin for every commit only the entry holds; submodule
// history under .../modules/), then takes it out of git's list with one
// rename into majlis's trash, <state>/trash/<binding>.<seq>.entry. There
// it is kept while the trash is kept (the undo window): a folder moved by
// hand can be attached again only while its entry exists (move the entry
// back into worktrees/, then `git worktree repair NEW_PATH`). The
// reclaimed event names it (admin_kept) with its keep_until; the purge of
// kept trash salvages it again (salvageKeptEntry) before it deletes it.
// An entry git cannot read refuses the reclaim: nothing is dropped that
// was not read.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
)

var (
	// reclaim/forget-salvaged: git's entry of a workspace whose folder is
	// gone salvaged, the entry not yet moved aside.
	fpForgetSalvaged = failpoint.New("reclaim/forget-salvaged")
	// reclaim/forget-aside: the entry moved aside, not yet kept or
	// deleted, the claim not yet retired.
	fpForgetAside = failpoint.New("reclaim/forget-aside")
)

// entryAsidePath is where git's entry of the claim's workspace goes when
// its folder is gone: in the state folder, on the common dir's file
// system, named after the claim so that a retry finds it.
func (p *Provider) entryAsidePath(c *Claim) string {
	return filepath.Join(p.stateDir, "trash", fmt.Sprintf("%s.%06d.entry", c.Binding, c.Seq))
}

// surveyEntry reads what the entry holds, or refuses naming it.
func surveyEntry(ctx context.Context, c *Claim, entryDir string) (*salvage.EntrySurvey, error) {
	es, err := salvage.SurveyEntry(ctx, entryDir, c.CommonDir)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: entryDir, Err: ErrMalformed,
			Reason: "the workspace's folder is gone, and git's entry of it, which still holds its HEAD, index and refs, cannot be read: " + err.Error(),
			Hint:   "majlis drops nothing it could not read; inspect the entry (git worktree list), repair it, or remove it by hand once you know nothing in it is needed"}
	}
	return es, nil
}

// entryPreview fills the salvage part and the steps of a missing
// workspace's preview from git's entry of it, and returns the facts its
// digest covers.
func entryPreview(ctx context.Context, pv *Preview, c *Claim, entryDir string) ([]any, error) {
	es, err := surveyEntry(ctx, c, entryDir)
	if err != nil {
		return nil, err
	}
	s := &pv.Salvage
	st := es.Staged
	pv.Changes = st
	s.Files, s.Modified, s.Added, s.Deleted, s.Conflicted = st.Total(), st.Modified+st.TypeChanged, st.Added, st.Deleted, st.Conflicted
	s.IntentToAdd, s.Operation = es.IntentToAdd, es.Operation
	if es.Pins != nil {
		s.Pins = es.Pins
	}
	for r := range es.Refs {
		s.WorktreeRefs = append(s.WorktreeRefs, r)
	}
	sort.Strings(s.WorktreeRefs)
	s.Clean = es.Clean()
	if !s.Clean {
		var what []string
		if st.Total() > 0 {
			what = append(what, fmt.Sprintf("the index (%s staged)", nounCount(st.Total(), "file", "files")))
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
		if len(es.Modules) > 0 {
			what = append(what, fmt.Sprintf("the history of %s", nounCount(len(es.Modules), "submodule", "submodules")))
		}
		if len(what) == 0 {
			what = append(what, "its reflogs and settings")
		}
		pv.Steps = append(pv.Steps, Step{Name: "salvage", Count: s.Files, Detail: "the folder is gone (moved or deleted by hand), but git's entry of it still holds " +
			strings.Join(what, ", ") + ": keep them on " + SalvagePrefix + c.Binding + "/<n>"})
	}
	pv.Steps = append(pv.Steps, Step{Name: "forget", Count: 0, Detail: "take git's entry of the workspace out of its list of worktrees, with one rename into majlis's trash " +
		"(kept while the trash is kept: a folder you moved can be attached to it again; else deleted once salvaged), and retire the claim; " +
		"nothing else on disk is touched (if you moved the folder and want to keep using it as a worktree, do not reclaim: have git repair its record of the worktree at the new place instead)"})
	return []any{es.Head, es.Branch, pinFacts(s.Pins, s.WorktreeRefs, es.Refs), es.StagedPaths, es.Modules}, nil
}

// salvageEntry salvages git's entry entryDir of rec's workspace, whose
// folder is gone: the salvage commit on a new salvage ref (ref is "" when
// the entry holds nothing to keep), and the history of the submodule
// repositories kept in it, fetched into the repository under
// refs/majlis/salvage/<binding>/modules/<k>/ (modules lists them).
func (p *Provider) salvageEntry(ctx context.Context, rec *claimRecord, entryDir, why string) (ref string, modules []string, err error) {
	c := rec.Claim
	msg := fmt.Sprintf("majlis %s of workspace %s: what git's entry of it held, its folder gone\n\nMajlis-Binding: %s\nMajlis-Claim: %s\nMajlis-Path: %s\nMajlis-Entry: %s\n",
		why, c.Binding, c.Binding, rec.Digest, c.Path, entryDir)
	snap, es, err := salvage.SnapshotEntry(ctx, entryDir, c.CommonDir, msg)
	if err != nil {
		if _, serr := surveyEntry(ctx, &c, entryDir); serr != nil {
			return "", nil, serr
		}
		return "", nil, err
	}
	if modules, err = p.keepEntryModules(ctx, rec, entryDir, es.Modules); err != nil {
		return "", nil, err
	}
	if snap.Clean {
		return "", modules, nil
	}
	ref, err = p.storeSalvage(ctx, c.Binding, snap.Commit)
	return ref, modules, err
}

// keepEntryModules fetches from each submodule repository kept in the
// entry its HEAD, branches, tags, majlis refs, stash entries and the
// commits only its reflogs or per-worktree refs hold, as keepSubmodules
// does for a workspace that is there. It returns "path prefix" lines.
func (p *Provider) keepEntryModules(ctx context.Context, rec *claimRecord, entryDir string, mods []string) ([]string, error) {
	if len(mods) == 0 {
		return nil, nil
	}
	c := rec.Claim
	base, k, err := nextModulesSalvage(ctx, c)
	if err != nil {
		return nil, err
	}
	var kept []string
	for _, mod := range mods {
		dir := filepath.Join(entryDir, filepath.FromSlash(mod))
		prefix := base + strconv.Itoa(k) + "/" + refSafe(mod)
		sv, err := salvage.SurveyEntry(ctx, dir, "")
		if err != nil {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: dir, Err: ErrMalformed,
				Reason: "a submodule repository in git's entry of the workspace cannot be read: " + err.Error(),
				Hint:   "majlis drops nothing it could not read; inspect it"}
		}
		own, err := salvage.GitDirRefs(ctx, dir, "refs/heads", "refs/tags", "refs/majlis")
		if err != nil {
			return nil, err
		}
		copied := map[string]string{}
		for name, id := range own {
			copied[prefix+"/"+strings.TrimPrefix(strings.TrimPrefix(name, "refs/"), "")] = id
		}
		if sv.Head != "" {
			copied[prefix+"/HEAD"] = sv.Head
		}
		stashes, err := salvage.EntryStashes(dir)
		if err != nil {
			return nil, err
		}
		for i, id := range stashes {
			copied[prefix+"/stash/"+strconv.Itoa(i)] = id
		}
		for i, pin := range sv.Pins {
			if pin.Commit != sv.Head {
				copied[prefix+"/pins/"+strconv.Itoa(i)] = pin.Commit
			}
		}
		if err := salvage.CopyFromGitDir(ctx, c.CommonDir, dir, copied); err != nil {
			return nil, err
		}
		kept = append(kept, mod+" "+prefix)
	}
	return kept, nil
}

// salvageKeptEntry salvages again a workspace's entry kept aside at
// entryDir, before a purge deletes it: anything someone added since (an
// entry moved back and used, say). It returns the new salvage ref, or "".
func (p *Provider) salvageKeptEntry(ctx context.Context, rec *claimRecord, entryDir string) (string, error) {
	ref, _, err := p.salvageEntry(ctx, rec, entryDir, "purge")
	return ref, err
}

// forgetEntry takes git's entry of rec's workspace, whose folder is gone,
// out of git's list: salvaged first (a new salvage ref, recorded by the
// salvaged event when it is the first), then moved aside with one rename.
// recheck, run before each step, must find the folder still gone and the
// entry still listed and the workspace's own. It fills res.
func (p *Provider) forgetEntry(ctx context.Context, rec *claimRecord, entryDir string, o ReclaimOptions, res *ReclaimResult, recheck func() (bool, error)) error {
	c := rec.Claim
	ref, mods, err := p.salvageEntry(ctx, rec, entryDir, "reclaim")
	if err != nil {
		return err
	}
	res.Submodules = mods
	if ref != "" {
		res.SalvageRefs = append(res.SalvageRefs, ref)
		res.StepsDone = append(res.StepsDone, "salvage")
		if _, err := p.records.Publish(rec, Event{Kind: EventSalvaged, SalvageRef: ref, RequestID: o.RequestID}); err != nil {
			return err
		}
	}
	if err := p.inject(ctx, fpForgetSalvaged); err != nil {
		return err
	}
	if listed, err := recheck(); err != nil {
		return err
	} else if !listed {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: entryDir, Err: ErrInterrupted,
			Reason: "git's entry of the workspace left git's list while it was salvaged", Hint: "retry the reclaim"}
	}
	aside := p.entryAsidePath(&c)
	if err := os.MkdirAll(filepath.Dir(aside), 0o700); err != nil {
		return err
	}
	if err := durable.MoveDir(entryDir, aside); err != nil {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: entryDir, Peer: aside, Err: ErrTrash,
			Reason: "moving git's entry of the workspace into majlis's trash: " + err.Error(),
			Hint:   "nothing was deleted, and the entry is salvaged; retry the reclaim with the same request id"}
	}
	if err := p.inject(ctx, fpForgetAside); err != nil {
		return err
	}
	if listed, err := recheck(); err != nil {
		return err
	} else if listed {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "git still lists the worktree after its entry was moved aside"}
	}
	res.StepsDone = append(res.StepsDone, "forget")
	return nil
}

// keepOrDropEntry ends the life of an entry moved aside by forgetEntry
// (this run's or an interrupted one's): kept until o.KeepTrash from now,
// named in the reclaimed event, or deleted at once (it was salvaged
// first). It returns when it is kept, nil when there is none or it was
// deleted.
func (p *Provider) keepOrDropEntry(rec *claimRecord, o ReclaimOptions, reclaimed *Event, res *ReclaimResult) error {
	c := rec.Claim
	aside := p.entryAsidePath(&c)
	if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if !ownEntry(rec, aside) {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: aside, Err: ErrIdentity,
			Reason: "the entry in majlis's trash is not the workspace's (neither its claim's pin nor, unpinned, majlis's lock of it)", Hint: "majlis leaves it; inspect it"}
	}
	if o.KeepTrash > 0 {
		// Kept, would the purge that follows delete it at once? Then it
		// is not promised (it is salvaged: only the chance to attach a
		// folder moved by hand to it again goes).
		size, err := p.trashSize(aside)
		if err != nil {
			return err
		}
		why, _, err := p.trashAtOnce(aside, size)
		if err != nil {
			return err
		}
		if why != "" {
			o.KeepTrash = 0
			res.TrashNotKept = "the policy would purge it at once: " + why
		}
	}
	if o.KeepTrash > 0 {
		until := p.now().UTC().Add(o.KeepTrash)
		reclaimed.AdminKept, reclaimed.KeepUntil = aside, &until
		res.TrashPath, res.TrashKeptUntil = aside, &until
		res.StepsDone = append(res.StepsDone, "keep-trash")
		return nil
	}
	id, err := pathid.Lstat(aside)
	if err != nil {
		return err
	}
	if err := durable.DeleteTree(aside, durable.DirIdentity{Dev: id.Dev, Ino: id.Ino}); err != nil {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: aside, Err: ErrTrash, Reason: "deleting git's entry of the workspace, salvaged: " + err.Error(),
			Hint: "a retry of the reclaim with the same request id finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	return nil
}

// ownEntry reports whether the entry at dir (moved aside) is rec's
// workspace's, as verifyAdminEntry judged it in git's list: it carries
// the claim's pin, or, allocated before pins, no pin and majlis's own lock
// for this claim.
func ownEntry(rec *claimRecord, dir string) bool {
	pin, err := gitops.ReadEntryPin(dir)
	if err == nil {
		return pin == rec.Digest
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	lock, err := gitops.ReadWorktreeLock(dir)
	return err == nil && lock.Locked && ownLock(rec, lock.Reason)
}
