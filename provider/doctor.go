package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/reservation"
)

// Finding codes of `majlis doctor`. Scripts depend on them: add codes,
// never rename one.
const (
	FindingRegistrationDamaged  = "registration_damaged"     // repository.json cannot be read: every command refuses
	FindingRecordDamaged        = "record_damaged"           // a binding's records cannot all be read; its place is known
	FindingRecordUnlocated      = "record_damaged_unlocated" // ... and its place is not: allocation and reclaim refuse
	FindingStateUnexpected      = "state_unexpected_entry"   // something majlis did not write in the claims folder
	FindingRequestDamaged       = "request_damaged"          // a request record cannot be read
	FindingJournalMissing       = "journal_missing"          // no claims journal: peer rechecks read every claim
	FindingJournalUnusable      = "journal_unusable"         // torn, altered, or lacking a binding
	FindingJournalMismatch      = "journal_mismatch"         // a claim the journal does not name as it is
	FindingLedgerDamaged        = "ledger_damaged"           // a SQLite ledger fails to open, its schema or quick_check
	FindingLockOrphaned         = "lock_orphaned"            // git's entry carries majlis's lock, but no live claim has it
	FindingEntryMissing         = "entry_missing"            // a live workspace's git admin entry is not its own
	FindingEntryUnpinned        = "entry_unpinned"           // a live workspace's git admin entry lacks majlis's pin
	FindingWorkspaceMissing     = "workspace_missing"        // a live workspace's directory is gone
	FindingWorkspaceReplaced    = "workspace_replaced"       // another directory (or a symlink) is at a live workspace's path
	FindingReservationDead      = "reservation_dead_owner"   // a lease whose owner is proven dead and which expired
	FindingReservationDamaged   = "reservation_damaged"      // a lease file that cannot be read
	FindingCompactionUnfinished = "compaction_unfinished"    // a gc was interrupted while it compacted a binding's records
	FindingTrashHalfPurged      = "trash_half_purged"        // a purge of a kept trash folder began and did not finish
	FindingTrashMissing         = "trash_missing"            // a kept trash folder is gone from its path (moved or deleted by hand)
	FindingTrashUnreadable      = "trash_unreadable"         // the kept trash cannot be listed (its policy is damaged)
	// FindingTempStray (doctor_temp.go): a temporary file no process holds.
)

// allFindingCodes lists every finding code, for the test that keeps
// docs/doctor.md complete.
var allFindingCodes = []string{FindingRegistrationDamaged, FindingRecordDamaged, FindingRecordUnlocated,
	FindingStateUnexpected, FindingRequestDamaged, FindingJournalMissing, FindingJournalUnusable,
	FindingJournalMismatch, FindingLedgerDamaged, FindingLockOrphaned, FindingEntryMissing,
	FindingEntryUnpinned, FindingWorkspaceMissing, FindingWorkspaceReplaced, FindingReservationDead, FindingReservationDamaged,
	FindingCompactionUnfinished, FindingTrashHalfPurged, FindingTrashMissing, FindingTrashUnreadable, FindingReclaimInterrupted, FindingTempStray}

// Severities of findings.
const (
	SeverityError   = "error"   // majlis refuses something because of it
	SeverityWarning = "warning" // majlis works, more slowly or with something left over
)

// A Finding is one thing `majlis doctor` found wrong. Its JSON is part of
// the CLI contract.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
	Binding  string `json:"binding,omitempty"`
	Fix      string `json:"fix"`        // what to run or do
	Repair   bool   `json:"repairable"` // majlis doctor --repair would act on it
}

// A DoctorReport is what `majlis doctor` reports. Its JSON is part of the
// CLI contract.
type DoctorReport struct {
	CommonDir string    `json:"common_dir"`
	StateDir  string    `json:"state_dir"`
	OK        bool      `json:"ok"` // no finding at all
	Checked   []string  `json:"checked"`
	Findings  []Finding `json:"findings"`
	// Trash lists every kept trash folder (the undo window), with its age
	// and size: information, not a finding.
	Trash []KeptTrash `json:"trash"`
}

// Doctor examines the repository containing dir, changing nothing. It
// works when the registration itself is damaged, which it then reports.
// opts are those of Open.
func Doctor(ctx context.Context, dir string, opts Options) (*DoctorReport, error) {
	repo, err := discover(ctx, "doctor", dir)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(repo.CommonDir, "majlis")
	rep := &DoctorReport{CommonDir: repo.CommonDir, StateDir: state, Checked: []string{"registration"}, Findings: []Finding{}, Trash: []KeptTrash{}}
	if _, err := readRegistration(state); err != nil {
		if !errors.Is(err, ErrMalformed) {
			return nil, err
		}
		rep.Findings = append(rep.Findings, Finding{Code: FindingRegistrationDamaged, Severity: SeverityError,
			Path: filepath.Join(state, "repository.json"), Message: err.Error(),
			Fix: "every majlis command refuses until it is whole again: restore repository.json from a backup. " +
				"majlis does not rewrite it, since the repository's id and workspace root are in it"})
		return rep, nil
	}
	p, err := Open(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Doctor(ctx)
}

// Doctor examines the repository p is open on, changing nothing.
func (p *Provider) Doctor(ctx context.Context) (*DoctorReport, error) {
	rep := &DoctorReport{CommonDir: p.reg.CommonDir, StateDir: p.stateDir, Checked: []string{"registration"}, Findings: []Finding{},
		Trash: []KeptTrash{}}
	add := func(f Finding) { rep.Findings = append(rep.Findings, f) }

	// The claims folder: every record decodes and validates.
	rep.Checked = append(rep.Checked, "claims")
	inv, err := p.readInventoryFromRecords()
	var live []*claimRecord
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
			return nil, err
		}
		add(Finding{Code: FindingStateUnexpected, Severity: SeverityError, Path: pe.Path, Message: err.Error(),
			Fix: "move " + pe.Path + " out of the majlis state folder (majlis did not write it); until then every listing refuses"})
	} else {
		for _, d := range inv.damaged {
			add(damageFinding(p, d))
		}
		for _, recs := range inv.good {
			for _, r := range recs {
				if r.live() {
					live = append(live, r)
				}
			}
		}
	}
	p.checkRequests(add)
	p.checkCompactions(add)
	if inv != nil {
		p.checkJournal(inv, add)
	}
	rep.Checked = append(rep.Checked, "requests", "journal", "ledgers")
	p.checkLedgers(ctx, add)
	rep.Checked = append(rep.Checked, "admin_entries")
	if err := p.checkEntries(inv, live, add); err != nil {
		return nil, err
	}
	rep.Checked = append(rep.Checked, "reservations")
	if err := p.checkReservations(add); err != nil {
		return nil, err
	}
	rep.Checked = append(rep.Checked, "trash")
	if inv != nil {
		rep.Trash = p.checkTrash(inv, add)
		p.checkPool(inv, add)
	}
	rep.Checked = append(rep.Checked, "temporary_files")
	p.checkTemps(add)
	rep.OK = len(rep.Findings) == 0
	return rep, nil
}

func damageFinding(p *Provider, d *Damage) Finding {
	var places []string
	for _, kp := range d.Paths {
		places = append(places, kp.Path+" (from the "+strings.ReplaceAll(kp.Source, "_", " ")+")")
	}
	if !d.Located {
		return Finding{Code: FindingRecordUnlocated, Severity: SeverityError, Binding: d.Binding, Path: d.File,
			Message: fmt.Sprintf("workspace %s: %s (%s); the place of claim %s is known from neither the claims journal nor git's admin entries, "+
				"so allocations and reclaims refuse", d.Binding, d.Reason, d.File, strings.Join(d.Unlocated, ", ")),
			Fix: "restore " + d.File + " from a backup; or, once you have found that workspace and kept its work, move the binding's folder " +
				p.records.Dir(d.Binding) + " out of the majlis state folder"}
	}
	msg := fmt.Sprintf("workspace %s: %s (%s); its operations refuse, others go on", d.Binding, d.Reason, d.File)
	if len(places) > 0 {
		msg += "; it may be at " + strings.Join(places, ", ")
	}
	return Finding{Code: FindingRecordDamaged, Severity: SeverityError, Binding: d.Binding, Path: d.File, Message: msg, Repair: true,
		Fix: "majlis doctor --repair --preview: salvages the workspace's work to " + SalvagePrefix + d.Binding +
			"/<n>, then moves the damaged records into " + filepath.Join(p.stateDir, "damaged") + "; or restore the file from a backup"}
}

// checkRequests reads every request record.
func (p *Provider) checkRequests(add func(Finding)) {
	p.records.DamagedRequests(func(path string, err error) {
		add(Finding{Code: FindingRequestDamaged, Severity: SeverityWarning, Path: path, Message: err.Error(),
			Fix: "only a retry with that request id reads it, and refuses; use a new request id, or move the file out of the state folder"})
	})
}

// checkCompactions reports the compactions a crashed gc left (records_compact.go):
// harmless (the claims folder is whole either way), finished by the next
// gc.
func (p *Provider) checkCompactions(add func(Finding)) {
	bindings, _ := p.records.UnfinishedCompactions()
	for _, b := range bindings {
		staging := p.records.StagingDir(b)
		add(Finding{Code: FindingCompactionUnfinished, Severity: SeverityWarning, Binding: b, Path: staging,
			Message: "a gc was interrupted while it compacted the old records of " + b + ": nothing is lost, and every command reads its records as before",
			Fix:     "majlis gc --preview, then --confirm: it finishes the compaction first"})
	}
}

// checkJournal compares the claims journal with the claims.
func (p *Provider) checkJournal(inv *inventory, add func(Finding)) {
	repairable := len(inv.damaged) == 0
	fix := "majlis doctor --repair rebuilds it from the claims"
	if !repairable {
		fix = "repair the damaged records first (see above), then majlis doctor --repair rebuilds it from the claims"
	}
	if _, err := os.Lstat(p.records.JournalPath()); errors.Is(err, os.ErrNotExist) {
		add(Finding{Code: FindingJournalMissing, Severity: SeverityWarning, Path: p.records.JournalPath(), Repair: repairable,
			Message: "there is no claims journal: the peer checks before each destructive step read every claim instead (slower, as safe)", Fix: fix})
		return
	}
	js, err := p.records.Journal()
	if err != nil {
		add(Finding{Code: FindingJournalUnusable, Severity: SeverityWarning, Path: p.records.JournalPath(), Repair: repairable,
			Message: err.Error() + ": the peer checks read every claim instead (slower, as safe)", Fix: fix})
		return
	}
	type key struct {
		b string
		s int
		d string
	}
	named := map[key]*journalClaimState{}
	for _, j := range js {
		named[key{j.Binding, j.Seq, j.Digest}] = j
	}
	for _, recs := range inv.good {
		for _, r := range recs {
			j := named[key{r.Claim.Binding, r.Claim.Seq, r.Digest}]
			if j != nil && j.Path == r.Claim.Path {
				continue
			}
			add(Finding{Code: FindingJournalMismatch, Severity: SeverityError, Binding: r.Claim.Binding, Path: p.records.JournalPath(), Repair: repairable,
				Message: fmt.Sprintf("the claims journal does not name claim %s #%d at %s as it is: a peer check from it could miss that workspace",
					r.Claim.Binding, r.Claim.Seq, r.Claim.Path), Fix: fix})
		}
	}
}

// checkLedgers opens the admission ledgers read-only in effect.
func (p *Provider) checkLedgers(ctx context.Context, add func(Finding)) {
	paths := [][2]string{{filepath.Join(p.stateDir, admission.RepositoryLedgerName), "repository"}}
	if host, err := p.hostLedger(); err == nil {
		paths = append(paths, [2]string{host, "host"})
	}
	for _, l := range paths {
		if _, err := admission.CheckLedger(ctx, l[0], l[1]); err != nil {
			add(Finding{Code: FindingLedgerDamaged, Severity: SeverityError, Path: l[0], Message: err.Error(),
				Fix: "lease commands and reclaims refuse while it cannot be read; restore it from a backup, or move it aside " +
					"to start an empty ledger (its leases are then forgotten: make sure their holders have stopped)"})
		}
	}
}

// checkEntries compares git's admin entries with the live claims.
func (p *Provider) checkEntries(inv *inventory, live []*claimRecord, add func(Finding)) error {
	entries, err := gitops.AdminEntries(p.reg.CommonDir)
	if err != nil {
		return &Error{Op: "doctor", Path: filepath.Join(p.reg.CommonDir, "worktrees"), Err: err}
	}
	damaged := map[string]bool{}
	if inv != nil {
		for _, d := range inv.damaged {
			damaged[d.Binding] = true
		}
	}
	owned := map[string]bool{} // "binding short" of live claims
	for _, r := range live {
		owned[r.Claim.Binding+" "+shortDigest(r.Digest)] = true
		owned[r.Claim.Binding+" "] = true
	}
	for _, e := range entries {
		if inv == nil {
			break // the claims could not be listed: no lock can be called orphaned
		}
		b, short, ok := lockedFor(e.Lock.Reason)
		if !e.Lock.Locked || !ok || damaged[b] || owned[b+" "+short] {
			continue
		}
		// A workspace in its trash folder (kept by reclaim --keep-trash, or
		// left by an interrupted reclaim that a retry finishes) is locked on
		// purpose: the next reclaim deletes it once its time is up.
		if strings.HasPrefix(filepath.Base(e.Path), trashPrefix) {
			continue
		}
		add(Finding{Code: FindingLockOrphaned, Severity: SeverityWarning, Binding: b, Path: e.Dir,
			Message: fmt.Sprintf("git's entry %s (worktree %s) carries majlis's lock %q, but no live claim of %s has it", e.Dir, e.Path, e.Lock.Reason, b),
			Fix: "majlis never lifts it by itself. Inspect " + e.Path + "; if nothing in it is needed any more (or after keeping it), " +
				"git worktree unlock " + e.Path + " and then git worktree remove " + e.Path})
	}
	for _, r := range live {
		ev := r.Events[EventCreated]
		if ev == nil {
			continue // an allocation in progress, or interrupted: allocate resumes it
		}
		c := r.Claim
		if r.isPool() && (r.has(EventDraining) || drainTook(r)) {
			continue // a drain moved it: checkPool says where it is
		}
		if f, ok := p.interruptedReclaim(r); ok {
			add(f)
			continue
		}
		if err := p.verifyIdentity("doctor", r); errors.Is(err, ErrMissing) && r.isPool() {
			add(poolMissingFinding(r))
			continue
		} else if errors.Is(err, ErrMissing) {
			add(Finding{Code: FindingWorkspaceMissing, Severity: SeverityWarning, Binding: c.Binding, Path: c.Path,
				Message: "the directory of workspace " + c.Binding + " is gone", Fix: "majlis workspace reclaim " + c.Binding + " retires its claim"})
			continue
		} else if err != nil {
			add(Finding{Code: FindingWorkspaceReplaced, Severity: SeverityError, Binding: c.Binding, Path: c.Path, Message: err.Error(),
				Fix: "majlis refuses to act on it (identity_drift); inspect the path: majlis will not touch a directory it did not allocate"})
			continue
		}
		dir, err := verifyRepository("doctor", r)
		if err != nil {
			add(Finding{Code: FindingEntryMissing, Severity: SeverityError, Binding: c.Binding, Path: c.Path, Message: err.Error(),
				Fix: "majlis refuses to reclaim it until its directory and git's entry point to each other again; inspect it (git worktree repair may help)"})
			continue
		}
		if pin, err := gitops.ReadEntryPin(dir); err != nil || pin != r.Digest {
			msg := "git's entry " + dir + " of workspace " + c.Binding + " has no majlis pin"
			if err == nil {
				msg = "git's entry " + dir + " of workspace " + c.Binding + " is pinned by another claim (" + shortDigest(pin) + ")"
			}
			add(Finding{Code: FindingEntryUnpinned, Severity: SeverityWarning, Binding: c.Binding, Path: dir, Message: msg,
				Fix: "a reclaim pins an entry that carries majlis's own lock, and refuses any other; see docs/doctor.md"})
		}
	}
	return nil
}

// checkReservations assesses every lease file of the repository.
func (p *Provider) checkReservations(add func(Finding)) error {
	names, err := p.leases.List("")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		a, err := p.leases.Assess(n)
		if errors.Is(err, reservation.ErrNotFound) {
			continue
		}
		if err != nil {
			if errors.Is(err, reservation.ErrMalformed) {
				add(Finding{Code: FindingReservationDamaged, Severity: SeverityError, Path: filepath.Join(p.leases.Path(), n+".lease"),
					Message: err.Error(), Fix: "whatever it reserves is refused while it cannot be read; once you know its holder has stopped, move it out of the state folder"})
				continue
			}
			return err
		}
		if a.Recoverable {
			add(Finding{Code: FindingReservationDead, Severity: SeverityWarning, Path: a.Path,
				Binding: a.Record.Metadata["binding"],
				Message: fmt.Sprintf("lease %s expired and its owner is proven dead (%s)", n, a.Reason), Repair: true,
				Fix: "majlis doctor --repair retires it (the lease file only, never what it protected)"})
		}
	}
	return nil
}
