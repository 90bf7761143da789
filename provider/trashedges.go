package provider

// Errors about a kept trash folder in the user's words: a lock someone
// else put on it, the folder gone (moved or deleted by hand), git's entry
// alone kept (the folder was gone at the reclaim). Each names the trash
// path, why, and what can be done; the command line adds its commands
// from the code table (the details name the facts).

import (
	"errors"
	"fmt"
	"os"
)

// trashLockedError rewords, for a purge or a restore from the trash
// (op), the refusal of a kept trash folder that someone locked with a
// reason majlis did not write: the locked worktree is the trash folder,
// not the workspace's old path, and what waits for the unlock is the
// purge or the restore, not a reclaim. err is returned as it is when it
// is not such a refusal.
func trashLockedError(op string, rec *claimRecord, trash string, err error) error {
	var pe *Error
	if !errors.Is(err, ErrLocked) || !errors.As(err, &pe) {
		return err
	}
	reason, _ := pe.Details["lock_reason"].(string)
	why := fmt.Sprintf("its kept trash folder %s is locked by someone else (git's lock reason %q, not majlis's)", trash, reason)
	if reason == "" {
		why = fmt.Sprintf("its kept trash folder %s is locked by someone else (git's lock has no reason, so it is not majlis's)", trash)
	}
	hint := "whoever locked it hands it back with 'git worktree unlock " + trash + "' once it may go; until then it stays whole, and every purge leaves it"
	if op == "restore" {
		hint = "whoever locked it hands it back with 'git worktree unlock " + trash + "'; then restore it from its trash again"
	}
	return &Error{Op: op, Binding: rec.Claim.Binding, Path: trash, Err: ErrLocked,
		Reason: why + "; majlis never lifts a lock it did not set; nothing was changed", Hint: hint,
		Details: map[string]any{"lock_reason": reason, "admin_entry": pe.Details["admin_entry"], "trash_path": trash}}
}

// trashGoneError refuses a restore from the trash whose kept trash
// folder is gone (moved or deleted by hand): git's entry of it may still
// be there, and the salvage refs hold its work up to the reclaim (or its
// purge's salvage).
func trashGoneError(rec *claimRecord, mv *Event) error {
	c := rec.Claim
	d := map[string]any{"trash_gone": true, "trash_path": mv.TrashPath}
	where := "the salvage refs of " + c.Binding
	if refs := salvagesOf(rec); len(refs) > 0 {
		where = refs[len(refs)-1]
		d["salvage_ref"] = where
	}
	return &Error{Op: "restore", Binding: c.Binding, Path: mv.TrashPath, Err: ErrMissing,
		Reason: "its kept trash folder is gone from " + mv.TrashPath + " (moved or deleted by hand); nothing was changed",
		Hint: "if you moved it, move it back to " + mv.TrashPath + " and restore it from its trash again (or keep it where it is as a worktree: 'git worktree repair NEW_PATH'); " +
			"otherwise its work is on " + where + ", which a restore of the binding's salvage brings back",
		Details: d}
}

// keptEntryError refuses a restore from the trash of a binding whose
// reclaim kept only git's entry (the folder was already gone at the
// reclaim: moved or deleted by hand): there is no folder to give back,
// and what the entry held (HEAD, the index, per-worktree refs) is on its
// salvage.
func keptEntryError(rec *claimRecord, entry string) error {
	c := rec.Claim
	d := map[string]any{"kept_entry": entry}
	where := "the salvage refs of " + c.Binding
	if refs := salvagesOf(rec); len(refs) > 0 {
		where = refs[len(refs)-1]
		d["salvage_ref"] = where
	}
	return &Error{Op: "restore", Binding: c.Binding, Path: c.Path, Err: ErrNotFound,
		Reason:  "the workspace's folder was already gone when it was reclaimed (moved or deleted by hand): its reclaim kept only git's record of it (" + entry + "), and there is no folder to give back",
		Hint:    "what git's record held (HEAD, the index, the per-worktree refs) is on " + where + ": restore the binding's salvage instead",
		Details: d}
}

// trashFolderGone reports whether r's kept trash folder (not git's entry
// alone) is gone, while no purge of it began: moved or deleted by hand.
func trashFolderGone(r *claimRecord, k *KeptTrash) bool {
	if k.Entry || r.has(EventPurging) {
		return false
	}
	_, err := os.Lstat(k.Path)
	return errors.Is(err, os.ErrNotExist)
}

// restoreLiveError is liveBindingError for a restore: a restore makes
// the binding's workspace again, so a binding whose workspace is there
// (restored already, or allocated since) refuses, and the way on is that
// workspace, or its reclaim first, not another binding, which a restore
// cannot take.
func restoreLiveError(binding string, recs []*claimRecord) error {
	err := liveBindingError(binding, recs)
	var pe *Error
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	pe.Op = "restore"
	if last := recs[len(recs)-1]; last.has(EventCreated) {
		pe.Hint = "a restore makes the binding's workspace again, and it has one at " + last.Claim.Path +
			": work there, or reclaim it first (its work is salvaged, and every salvage ref stays), then restore again"
		pe.Details = map[string]any{"restore_live": true}
	}
	return pe
}
