package provider

import (
	"cmp"
	"errors"
	"path/filepath"

	"github.com/majlis-dev/majlis/internal/durable"
)

// PublishClaim publishes claim, whose Seq is the binding's next
// (no-clobber: a claim already published under that number refuses), with
// its journal line. Its caller holds the publication lease.
func (br *bindingRecords) PublishClaim(claim Claim) (*claimRecord, error) {
	data, digest, err := seal("claim", &claim)
	if err != nil {
		return nil, err
	}
	dir := br.Dir(claim.Binding)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return nil, &Error{Op: "allocate", Binding: claim.Binding, Path: dir, Err: err}
	}
	// The journal names the claim before it exists (see records_journal.go): the
	// claim is written beside the journal's line, and named only once the
	// line is durable.
	type prepared struct {
		p   *durable.Prepared
		err error
	}
	ready := make(chan prepared, 1)
	go func() {
		pr, err := durable.Prepare(dir, claimName(claim.Seq, "claim"), data)
		ready <- prepared{pr, err}
	}()
	jerr := br.appendJournal(journalEntry{Kind: journalClaim, Binding: claim.Binding, Seq: claim.Seq, Digest: digest, Path: claim.Path}, true)
	pr := <-ready
	if jerr != nil || pr.err != nil {
		if pr.p != nil {
			pr.p.Discard()
		}
		return nil, cmp.Or(jerr, pr.err)
	}
	if err := pr.p.Commit(); err != nil {
		return nil, err
	}
	return &claimRecord{Claim: claim, Digest: digest, Events: map[string]*Event{}}, nil
}

// Publish publishes an event for a claim (no-clobber). Publishing an
// event that already exists is not an error: events are facts, and a
// retry may publish the same fact again.
func (br *bindingRecords) Publish(rec *claimRecord, ev Event) (*Event, error) {
	pe, err := br.Prepare(rec, ev)
	if err != nil {
		return nil, err
	}
	return pe.commit()
}

// A preparedEvent is an event written and synced, not yet named
// (durable.Prepare): commit publishes it as Publish does, discard
// drops it.
type preparedEvent struct {
	br  *bindingRecords
	rec *claimRecord
	ev  Event
	dir string
	w   *durable.Prepared
}

// Prepare is the first half of Publish, for an event whose
// content is known before the moment it may be published.
func (br *bindingRecords) Prepare(rec *claimRecord, ev Event) (*preparedEvent, error) {
	ev.Format, ev.Binding, ev.Seq, ev.ClaimDigest = formatEvent, rec.Claim.Binding, rec.Claim.Seq, rec.Digest
	if ev.At.IsZero() {
		ev.At = br.now().UTC()
	}
	data, _, err := seal("event", &ev)
	if err != nil {
		return nil, err
	}
	dir := br.Dir(rec.Claim.Binding)
	w, err := durable.Prepare(dir, claimName(rec.Claim.Seq, ev.Kind), data)
	if err != nil {
		return nil, err
	}
	return &preparedEvent{br: br, rec: rec, ev: ev, dir: dir, w: w}, nil
}

func (pe *preparedEvent) discard() { pe.w.Discard() }

func (pe *preparedEvent) commit() (*Event, error) {
	br, rec, ev, dir := pe.br, pe.rec, pe.ev, pe.dir
	err := pe.w.Commit()
	if errors.Is(err, durable.ErrExists) {
		var existing Event
		if _, err := readRecord(filepath.Join(dir, claimName(rec.Claim.Seq, ev.Kind)), "event", formatEvent, &existing); err != nil {
			return nil, err
		}
		rec.Events[ev.Kind] = &existing
		br.journalEvent(rec, ev.Kind)
		return &existing, nil
	}
	if err != nil {
		return nil, err
	}
	rec.Events[ev.Kind] = &ev
	br.journalEvent(rec, ev.Kind)
	return &ev, nil
}

// journalEvent appends the journal line of a failed or reclaimed event,
// after the event itself is published (see records_journal.go). A retry that
// finds the event published appends it again: repeated lines are harmless.
// A line that cannot be appended is left out: the journal then keeps the
// workspace as a possible peer, which only sends some checks to the full
// path, so the event's operation does not fail for it.
func (br *bindingRecords) journalEvent(rec *claimRecord, kind string) {
	e := journalEntry{Kind: kind, Binding: rec.Claim.Binding, Seq: rec.Claim.Seq, Digest: rec.Digest}
	switch kind {
	case EventFailed:
	case EventHanded: // the pooled worktree is now a workspace, under that claim
		e.Kind = journalFailed
	case EventReclaimed:
		if c := rec.Events[EventCreated]; c != nil {
			e.Dev, e.Ino = c.Dev, c.Ino
		}
	default:
		return
	}
	_ = br.appendJournal(e, false)
}
