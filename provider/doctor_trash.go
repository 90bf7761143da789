package provider

import "fmt"

// checkTrash lists every kept trash folder for doctor, with its age and
// size, and reports a purge that began and did not finish: the folder
// may be half deleted (restore --from-trash refuses it), its work is
// salvaged, and a purge finishes it.
func (p *Provider) checkTrash(inv *inventory, add func(Finding)) []KeptTrash {
	tp, err := p.TrashPolicy()
	if err != nil {
		add(Finding{Code: FindingTrashUnreadable, Severity: SeverityError, Message: err.Error(),
			Fix: "reclaim and purge refuse until it is fixed: set the key again with majlis policy set (see docs/reclaim.md, \"The undo window\")"})
		return []KeptTrash{}
	}
	kept := p.keptTrash(inv.good, tp, sizesMeasured)
	for _, k := range kept {
		if k.Missing {
			add(trashMissingFinding(k))
		}
		if !k.HalfPurged {
			continue
		}
		where := "its work is on the salvage refs of " + k.Binding
		if n := len(k.SalvageRefs); n > 0 {
			where = fmt.Sprintf("its work is on %s", k.SalvageRefs[n-1])
		}
		msg := fmt.Sprintf("a purge of the kept trash folder %s of %s began and did not finish: the folder may be half deleted, and restore --from-trash refuses it", k.Path, k.Binding)
		if k.recycling != "" {
			msg = fmt.Sprintf("a purge of the kept trash folder %s of %s began recycling it into the pool (%s) and did not finish: "+
				"the folder is at its trash path or in the pool's folder, whole or cleaned, and restore --from-trash refuses it", k.Path, k.Binding, k.recycling)
		}
		if k.Entry {
			msg = fmt.Sprintf("a purge of git's record of %s kept in the trash (%s; its folder was gone) began and did not finish: it may be half deleted", k.Binding, k.Path)
		}
		add(Finding{Code: FindingTrashHalfPurged, Severity: SeverityWarning, Binding: k.Binding, Path: k.Path,
			Message: msg,
			Fix:     "majlis gc --purge-due finishes the purge (" + where + "; majlis workspace restore " + k.Binding + " restores the latest)"})
	}
	return kept
}

// trashMissingFinding reports a kept trash folder gone from its path
// (moved or deleted by hand) before its purge: git's entry of it still
// holds its HEAD, index and per-worktree refs, which the purge salvages
// before it deletes the entry.
func trashMissingFinding(k KeptTrash) Finding {
	where := "the salvage refs of " + k.Binding
	if n := len(k.SalvageRefs); n > 0 {
		where = k.SalvageRefs[n-1]
	}
	return Finding{Code: FindingTrashMissing, Severity: SeverityWarning, Binding: k.Binding, Path: k.Path,
		Message: fmt.Sprintf("the kept trash folder %s of %s is gone (moved or deleted by hand); git's entry of it remains until its purge, which salvages it first", k.Path, k.Binding),
		Fix: "if you moved it, move it back to " + k.Path + " (then majlis workspace restore " + k.Binding + " --from-trash can undo the reclaim); " +
			"to keep it where it is as a worktree, run git worktree repair NEW_PATH; otherwise its work is on " + where +
			" (majlis workspace restore " + k.Binding + " restores it), and majlis gc --purge-due salvages and drops git's entry once it is due"}
}
