package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/reservation"
)

// gc's step on records: which finished records to compact
// (records_compact.go says how and when a record may go), and the
// compaction of each binding under its reclaim reservation.

// DefaultRecordAge is how long gc leaves a finished workspace's records in
// place before it compacts them.
const DefaultRecordAge = 30 * 24 * time.Hour

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
	recs, err := p.records.Binding(binding)
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
	if err := p.records.FinishCompaction(binding); err != nil {
		return nil, "", err
	}
	if recs, err = p.records.Binding(binding); err != nil {
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
	ok, err := p.records.SwapOut(binding, want, func() (*reservation.Lease, error) {
		return p.publicationLease(ctx, "gc "+binding)
	})
	if err != nil || !ok {
		return nil, changed, err
	}
	sort.Ints(done)
	return done, "", nil
}

// compactJournal rewrites the claims journal from the claim records, once
// gc compacted some: the lines of compacted claims go, so that reclaim's
// re-checks, which read every line, read fewer. Under the publication
// lease no claim is being published, so every claim is in the records and
// the rewritten journal names it (records_journal.go). A failed or reclaimed line
// appended meanwhile to the old file may be lost: the journal then holds
// that workspace for possibly present, which only sends some checks to the
// full path. A journal that is missing or unusable is left to doctor.
func (p *Provider) compactJournal(ctx context.Context) error {
	lease, err := p.publicationLease(ctx, "gc journal")
	if err != nil {
		return err
	}
	defer lease.Release()
	if _, err := p.records.Journal(); err != nil {
		return nil
	}
	_, all, errs, err := p.records.EachFromRecords()
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
	return p.records.RewriteJournal(all, durable.Perm(0o644))
}

// finishCompactions finishes the compactions a crashed gc left, each
// under its binding's reclaim reservation; a binding whose reservation is
// held is left for the next gc.
func (p *Provider) finishCompactions(ctx context.Context) error {
	bindings, err := p.records.UnfinishedCompactions()
	if err != nil {
		return err
	}
	for _, b := range bindings {
		if ValidBinding(b) != nil {
			continue
		}
		recs, err := p.records.Binding(b)
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
		err = p.records.FinishCompaction(b)
		lease.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
