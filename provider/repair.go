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
	"strings"

	"github.com/majlis-dev/majlis/reservation"
)

// `majlis doctor --repair` does only what is provably safe, and nothing
// before its preview is confirmed:
//
//   - rebuild_journal: rewrite the claims journal from the claims, when
//     every claim verifies (so the rebuilt journal names every workspace
//     the records do), under the publication lease (so no claim is
//     published meanwhile);
//   - retire_reservation: reservation.Recover of a lease that expired and
//     whose exact same-host owner is proven dead (the lease file only);
//   - quarantine_record: salvage every workspace directory the damaged
//     binding may have (the salvage of a reclaim, to
//     refs/majlis/salvage/<binding>/<n>; nothing in the workspace
//     changes), then move the damaged records into <state>/damaged/. The
//     workspace's files, git's entry and its lock stay; a binding whose
//     place is unknown, or whose place holds something majlis cannot
//     verify as its worktree, is left alone;
//   - remove_temp: remove a temporary file an interrupted write left in
//     the state folder, no process holding its lock (doctor_temp.go).
//
// Each action carries a fingerprint of the facts it rests on; the plan's
// digest covers them all, and each action's fingerprint is computed again
// immediately before it runs.

// Repair action kinds.
const (
	RepairRebuildJournal    = "rebuild_journal"
	RepairRetireReservation = "retire_reservation"
	RepairQuarantineRecord  = "quarantine_record"
)

// A RepairAction is one step of a repair. Its JSON is part of the CLI
// contract.
type RepairAction struct {
	Kind        string   `json:"kind"`
	Binding     string   `json:"binding,omitempty"`
	Path        string   `json:"path,omitempty"` // the file or lease concerned
	Files       []string `json:"files"`          // quarantine: the records moved
	Salvage     []string `json:"salvage"`        // quarantine: the directories salvaged first
	Detail      string   `json:"detail"`
	Fingerprint string   `json:"fingerprint"`
}

// A RepairResult reports a repair plan, and what was done when it ran.
type RepairResult struct {
	Digest  string         `json:"digest"`
	Actions []RepairAction `json:"actions"`
	Done    []RepairDone   `json:"done"`
	Preview bool           `json:"preview"`
}

// A RepairDone is an action carried out.
type RepairDone struct {
	Kind        string   `json:"kind"`
	Binding     string   `json:"binding,omitempty"`
	Path        string   `json:"path,omitempty"`
	MovedTo     string   `json:"moved_to,omitempty"`
	SalvageRefs []string `json:"salvage_refs"`
}

// RepairOptions: Preview only plans; otherwise Confirm (the plan's digest)
// or Yes is required.
type RepairOptions struct {
	Preview bool
	Confirm string
	Yes     bool
	// RequestID: a retry with the same id returns the recorded result
	// and does nothing again.
	RequestID string
}

// Repair plans the safe repairs and, when confirmed, carries them out.
func (p *Provider) Repair(ctx context.Context, o RepairOptions) (*RepairResult, error) {
	args := requestArgs{Op: "repair", Confirm: o.Confirm}
	if o.Yes {
		args.Confirm = "yes"
	}
	if !o.Preview {
		if res, done, err := replay[RepairResult](p.records, o.RequestID, args); done || err != nil {
			return res, err
		}
	}
	res, err := p.repair(ctx, o)
	if err != nil || o.Preview || o.RequestID == "" {
		return res, err
	}
	if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (p *Provider) repair(ctx context.Context, o RepairOptions) (*RepairResult, error) {
	actions, err := p.planRepair()
	if err != nil {
		return nil, err
	}
	res := &RepairResult{Digest: planDigest(actions), Actions: actions, Done: []RepairDone{}, Preview: o.Preview}
	if o.Preview {
		return res, nil
	}
	if !o.Yes && o.Confirm == "" {
		return nil, &Error{Op: "repair", Err: ErrUnconfirmed, Reason: "a repair needs a confirmed digest",
			Hint: "preview the repair and confirm its digest"}
	}
	if o.Confirm != "" && o.Confirm != res.Digest {
		return nil, &Error{Op: "repair", Err: ErrPreviewStale,
			Reason:  fmt.Sprintf("the repair plan is now %s, not the confirmed %s", res.Digest, o.Confirm),
			Hint:    "preview the repair again and confirm the new digest",
			Details: map[string]any{"digest": res.Digest, "confirmed": o.Confirm}}
	}
	for _, a := range actions {
		done, err := p.runRepair(ctx, a)
		if err != nil {
			return res, err
		}
		res.Done = append(res.Done, *done)
	}
	return res, nil
}

func planDigest(actions []RepairAction) string {
	h := sha256.New()
	json.NewEncoder(h).Encode(actions)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// planRepair lists the actions that are provably safe now.
func (p *Provider) planRepair() ([]RepairAction, error) {
	actions := []RepairAction{}
	inv, invErr := p.readInventory()
	if invErr == nil {
		for _, d := range inv.damaged {
			if a, ok := p.planQuarantine(d); ok {
				actions = append(actions, a)
			}
		}
		if len(inv.damaged) == 0 {
			if fp, needed := p.journalFingerprint(); needed {
				actions = append(actions, RepairAction{Kind: RepairRebuildJournal, Path: p.records.JournalPath(), Fingerprint: fp,
					Detail: "rewrite the claims journal from the claims (they all verify)"})
			}
		}
	}
	names, err := p.leases.List("")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, n := range names {
		a, err := p.leases.Assess(n)
		if err != nil || !a.Recoverable {
			continue
		}
		actions = append(actions, RepairAction{Kind: RepairRetireReservation, Binding: a.Record.Metadata["binding"], Path: a.Path,
			Fingerprint: leaseFingerprint(a.Record),
			Detail:      "retire lease " + n + ": expired, its owner proven dead (" + a.Reason + "); the lease file only"})
	}
	actions = append(actions, p.planTemps()...)
	for i := range actions { // arrays always present
		if actions[i].Files == nil {
			actions[i].Files = []string{}
		}
		if actions[i].Salvage == nil {
			actions[i].Salvage = []string{}
		}
	}
	return actions, nil
}

func leaseFingerprint(r *reservation.Record) string {
	return fmt.Sprintf("%s %d %s", r.Resource, r.Generation, r.Token)
}

// journalFingerprint reports whether the journal needs rebuilding (missing,
// unusable, or not naming a claim as it is) and the facts that decide it.
func (p *Provider) journalFingerprint() (string, bool) {
	all, err := p.records.All()
	if err != nil {
		return "", false
	}
	want := p.records.JournalOf(all)
	have, err := readRegularFile(p.records.JournalPath())
	h := sha256.Sum256(have)
	fp := "sha256:" + hex.EncodeToString(h[:])
	if errors.Is(err, os.ErrNotExist) {
		fp = "absent"
	} else if err != nil {
		return "", false
	}
	needed := err != nil
	if !needed {
		js, jerr := p.records.Journal()
		needed = jerr != nil
		if !needed {
			named := map[string]bool{}
			for _, j := range js {
				named[fmt.Sprintf("%s %d %s %s", j.Binding, j.Seq, j.Digest, j.Path)] = true
			}
			for _, recs := range all {
				for _, r := range recs {
					needed = needed || !named[fmt.Sprintf("%s %d %s %s", r.Claim.Binding, r.Claim.Seq, r.Digest, r.Claim.Path)]
				}
			}
		}
	}
	w := sha256.Sum256(want)
	return fp + " -> sha256:" + hex.EncodeToString(w[:]), needed
}

// planQuarantine plans moving a located damaged binding's damaged records
// aside, after salvaging each existing directory where it may be.
func (p *Provider) planQuarantine(d *Damage) (RepairAction, bool) {
	if !d.Located {
		return RepairAction{}, false
	}
	files := p.records.Damaged(d.Binding)
	if len(files) == 0 {
		return RepairAction{}, false
	}
	a := RepairAction{Kind: RepairQuarantineRecord, Binding: d.Binding, Path: d.File, Files: files}
	for _, kp := range d.Paths {
		if _, err := os.Lstat(kp.Path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if _, err := verifyRepository("repair", p.standIn(d.Binding, kp.Path)); err != nil {
			return RepairAction{}, false // something majlis cannot verify is there: leave it to a person
		}
		a.Salvage = append(a.Salvage, kp.Path)
	}
	fp, err := filesFingerprint(files, a.Salvage)
	if err != nil {
		return RepairAction{}, false
	}
	a.Fingerprint = fp
	a.Detail = fmt.Sprintf("salvage the uncommitted work of %s to %s%s/<n> (nothing in it changes), then move %d damaged record(s) into %s",
		strings.Join(a.Salvage, ", "), SalvagePrefix, d.Binding, len(files), filepath.Join(p.stateDir, "damaged"))
	if len(a.Salvage) == 0 {
		a.Detail = fmt.Sprintf("no directory exists where the workspace may be; move %d damaged record(s) into %s",
			len(files), filepath.Join(p.stateDir, "damaged"))
	}
	return a, true
}

// standIn is a claim record for a damaged binding's workspace at path, for
// verifyRepository and salvage (which read only these fields).
func (p *Provider) standIn(binding, path string) *claimRecord {
	return &claimRecord{Claim: Claim{Binding: binding, Path: path, PhysicalPath: path, CommonDir: p.reg.CommonDir},
		Digest: "damaged", Events: map[string]*Event{}}
}

func filesFingerprint(files, dirs []string) (string, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := readRegularFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %x\n", f, sha256.Sum256(b))
	}
	for _, d := range dirs {
		fmt.Fprintf(h, "dir %s\n", d)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// runRepair re-checks one action's facts and carries it out.
func (p *Provider) runRepair(ctx context.Context, a RepairAction) (*RepairDone, error) {
	stale := func(why string) error {
		return &Error{Op: "repair", Binding: a.Binding, Path: a.Path, Err: ErrPreviewStale,
			Reason: a.Kind + ": " + why + " since the preview", Hint: "preview the repair again"}
	}
	done := &RepairDone{Kind: a.Kind, Binding: a.Binding, Path: a.Path, SalvageRefs: []string{}}
	switch a.Kind {
	case RepairRetireReservation:
		res := strings.TrimSuffix(filepath.Base(a.Path), ".lease")
		as, err := p.leases.Assess(res)
		if err != nil || !as.Recoverable || leaseFingerprint(as.Record) != a.Fingerprint {
			return nil, stale("the lease changed")
		}
		if _, err := p.leases.Recover(ctx, res); err != nil {
			return nil, err
		}
	case RepairRebuildJournal:
		lease, err := p.publicationLease(ctx, "doctor --repair")
		if err != nil {
			return nil, err
		}
		defer lease.Release()
		if fp, needed := p.journalFingerprint(); !needed || fp != a.Fingerprint {
			return nil, stale("the claims or the journal changed")
		}
		all, err := p.records.All()
		if err != nil {
			return nil, err
		}
		if err := p.records.RewriteJournal(all); err != nil {
			return nil, err
		}
		if err := lease.Check(); err != nil {
			return nil, err
		}
	case RepairQuarantineRecord:
		if fp, err := filesFingerprint(a.Files, a.Salvage); err != nil || fp != a.Fingerprint {
			return nil, stale("the damaged records changed")
		}
		for _, dir := range a.Salvage {
			rec := p.standIn(a.Binding, dir)
			if _, err := verifyRepository("repair", rec); err != nil {
				return nil, err
			}
			sv, err := p.salvage(ctx, rec, "majlis doctor --repair: salvage of damaged workspace "+a.Binding)
			if err != nil {
				return nil, err // nothing moved
			}
			if sv.Ref != nil {
				done.SalvageRefs = append(done.SalvageRefs, *sv.Ref)
			}
		}
		lease, err := p.publicationLease(ctx, "doctor --repair")
		if err != nil {
			return nil, err
		}
		defer lease.Release()
		if fp, err := filesFingerprint(a.Files, a.Salvage); err != nil || fp != a.Fingerprint {
			return nil, stale("the damaged records changed")
		}
		aside, err := p.records.Quarantine(a.Binding, a.Files, p.now())
		if err != nil {
			return nil, err
		}
		done.MovedTo = aside
	case RepairRemoveTemp:
		if err := p.removeTemp(a); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("repair: unknown action %q", a.Kind)
	}
	return done, nil
}
