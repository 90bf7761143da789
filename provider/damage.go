package provider

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// Damage stays local. A binding whose records cannot all be read is
// damaged: it refuses every operation of its own (reclaim, show, release,
// salvage, a new allocation of it), while operations on other workspaces
// go on, provided the places its workspaces may occupy are known from a
// source majlis can trust:
//
//   - its other claims, which are sealed and still verify;
//   - the claims journal, whose lines are checksummed and which names
//     every claim before it is published (records_journal.go);
//   - git's admin entries carrying majlis's lock reason for the binding,
//     which majlis writes at allocation and git keeps until the worktree
//     is removed.
//
// Each of those places is then a retained peer of every reclaim and is
// overlapped by no allocation, exactly as if the records were whole: never
// fewer peers. A damaged claim found in none of them may be a workspace
// anywhere, so it refuses allocations and reclaims (fail closed), naming
// the file.

// StateDamaged is the state list reports for a damaged binding.
const StateDamaged = "damaged"

// Where a damaged binding's workspace was located.
const (
	SourceClaim      = "claim"       // one of the binding's claims that still verifies
	SourceJournal    = "journal"     // the checksummed claims journal
	SourceAdminEntry = "admin_entry" // git's admin entry with majlis's lock reason
)

// A Damage reports a binding whose records cannot all be read: the
// wire.Damage that list and doctor show, and the refusal of the binding's
// own operations.
type Damage struct {
	wire.Damage
	err *Error // the refusal of the binding's own operations
}

// KnownPath is wire.KnownPath: the result type is defined once, in the wire contract.
type KnownPath = wire.KnownPath

// refusal is the error of an operation that cannot proceed past d.
func (d *Damage) refusal(op string) error {
	e := *d.err
	e.Op, e.Binding = op, ""
	e.Reason = "the records of workspace " + d.Binding + " are damaged: " + d.Reason
	e.Hint = "the place of the workspace it records is known from neither the claims journal nor git's admin entries, " +
		"so majlis cannot rule out an overlap"
	e.Details = map[string]any{"damaged_binding": d.Binding, "file": d.File, "unlocated": d.Unlocated}
	if len(d.Unlocated) > 0 && d.Unlocated[0] != d.File {
		e.Reason += "; the claim " + d.Unlocated[0] + " is found nowhere"
	}
	return &e
}

// An inventory is every binding's records, the damaged ones apart.
type inventory struct {
	good    [][]*claimRecord
	damaged []*Damage
}

// readInventory reads every binding like All, but a binding
// whose records are malformed is reported as damaged (and located) rather
// than refusing the whole inventory. Other failures (an unreadable
// folder) still refuse.
func (p *Provider) readInventory() (*inventory, error) {
	return p.inventoryOf(p.records.Each())
}

// readInventoryFromRecords is readInventory from the records alone, never
// the claims index.
func (p *Provider) readInventoryFromRecords() (*inventory, error) {
	return p.inventoryOf(p.records.EachFromRecords())
}

func (p *Provider) inventoryOf(bindings []string, recs [][]*claimRecord, errs []error, err error) (*inventory, error) {
	if err != nil {
		return nil, err
	}
	inv := &inventory{}
	var loc *locator
	for i, b := range bindings {
		if errs[i] == nil {
			inv.good = append(inv.good, recs[i])
			continue
		}
		var pe *Error
		if !errors.Is(errs[i], ErrMalformed) || !errors.As(errs[i], &pe) {
			return nil, errs[i]
		}
		if loc == nil {
			loc = p.newLocator()
		}
		inv.damaged = append(inv.damaged, loc.locate(b, pe))
	}
	return inv, nil
}

// peerRecords returns a stand-in claim record for every place a damaged
// binding's workspace may occupy, for the allocation checks, or the
// refusal of the first damaged binding that is not located.
func (inv *inventory) peerRecords(op string) ([]*claimRecord, error) {
	var out []*claimRecord
	for _, d := range inv.damaged {
		if !d.Located {
			return nil, d.refusal(op)
		}
		for _, kp := range d.Paths {
			phys, err := pathid.Physical(kp.Path)
			if err != nil {
				phys = kp.Path
			}
			out = append(out, &claimRecord{Claim: Claim{Binding: d.Binding, Path: kp.Path, PhysicalPath: phys},
				Events: map[string]*Event{}, damage: d})
		}
	}
	return out, nil
}

// A locator finds where damaged bindings' workspaces are. The journal and
// git's admin entries are read once.
type locator struct {
	p          *Provider
	journal    []*journalClaimState
	journalErr error
	entries    []gitops.AdminEntry
	entriesErr error
}

func (p *Provider) newLocator() *locator {
	l := &locator{p: p}
	l.journal, l.journalErr = p.records.Journal()
	l.entries, l.entriesErr = gitops.AdminEntries(p.reg.CommonDir)
	return l
}

// majlisLock matches the lock reasons majlis writes (lockReason, ownLock).
var majlisLock = regexp.MustCompile(`^majlis workspace (\S+) \((?:claim ([0-9a-f]{12})|reclaim interrupted)\)$`)

// lockedFor returns the binding and short claim digest ("" for the
// reclaim-interrupted form) of a majlis lock reason, or ok false.
func lockedFor(reason string) (binding, short string, ok bool) {
	m := majlisLock.FindStringSubmatch(reason)
	if m == nil || ValidBinding(m[1]) != nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// locate reads what still verifies of binding's folder and finds every
// place its workspaces may occupy: the claims that verify, the journal's
// lines of the others, and git's admin entries that majlis locked for
// the binding. A claim file that verifies nowhere leaves the binding
// unlocated, unless the journal names it or an unknown locked entry may
// be its workspace.
func (l *locator) locate(binding string, cause *Error) *Damage {
	d := &Damage{Damage: wire.Damage{Binding: binding, File: cause.Path, Reason: cause.Reason}, err: cause}
	if d.Reason == "" {
		d.Reason = strings.TrimPrefix(cause.Err.Error(), "provider: ")
	}
	ps := &places{d: d, seen: map[string]bool{}}
	claims, lost := l.p.records.Verifying(binding)
	digests := ps.fromClaims(claims)
	inJournal := l.fromJournal(ps, binding, claims)
	unknownEntry := l.fromEntries(ps, binding, digests)
	d.Located = true
	var seqs []int
	for seq := range lost {
		seqs = append(seqs, seq)
	}
	sort.Ints(seqs)
	for _, seq := range seqs {
		if inJournal[seq] || unknownEntry {
			continue
		}
		d.Located = false
		d.Unlocated = append(d.Unlocated, filepath.Join(l.p.records.Dir(binding), claimName(seq, "claim")))
	}
	if d.Paths == nil {
		d.Paths = []KnownPath{}
	}
	if d.Unlocated == nil {
		d.Unlocated = []string{}
	}
	return d
}

// places collects the places a damaged binding's workspaces may occupy,
// each once, with the source that names it.
type places struct {
	d    *Damage
	seen map[string]bool
}

func (ps *places) add(path, source string) {
	if path != "" && !ps.seen[path] {
		ps.seen[path] = true
		ps.d.Paths = append(ps.d.Paths, KnownPath{Path: path, Source: source})
	}
}

// fromClaims adds the workspace of every claim that verifies, unless it
// failed or was reclaimed and is attested absent. It returns the short
// digests of those claims.
func (ps *places) fromClaims(claims map[int]*claimRecord) map[string]bool {
	digests := map[string]bool{}
	for _, rec := range claims {
		digests[shortDigest(rec.Digest)] = true
		if rec.has(EventFailed) || rec.has(EventReclaimed) && attestedAbsent(rec) {
			continue
		}
		ps.add(rec.Claim.Path, SourceClaim)
	}
	return digests
}

// fromJournal adds the place of every claim of binding the journal names
// that did not verify, unless it failed or was reclaimed and is absent
// now. It returns the sequence numbers the journal names.
func (l *locator) fromJournal(ps *places, binding string, claims map[int]*claimRecord) map[int]bool {
	inJournal := map[int]bool{}
	if l.journalErr != nil {
		return inJournal
	}
	for _, c := range l.journal {
		if c.Binding != binding || claims[c.Seq] != nil {
			continue
		}
		inJournal[c.Seq] = true
		if c.Failed || c.Reclaimed && absentNow(c.Path, c.Dev, c.Ino, c.Digest) {
			continue
		}
		ps.add(c.Path, SourceJournal)
	}
	return inJournal
}

// fromEntries adds git's admin entries locked by majlis for binding,
// other than those of claims that verify (digests), and reports whether
// there was one.
func (l *locator) fromEntries(ps *places, binding string, digests map[string]bool) (unknownEntry bool) {
	if l.entriesErr != nil {
		return false
	}
	for _, e := range l.entries {
		b, short, ok := lockedFor(e.Lock.Reason)
		if !e.Lock.Locked || !ok || b != binding || (short != "" && digests[short]) || e.Path == "" {
			continue
		}
		if e.PinErr != nil || e.Pin != "" && short != "" && shortDigest(e.Pin) != short {
			continue // the lock and majlis's pin disagree: not majlis's exact lock
		}
		unknownEntry = true
		ps.add(e.Path, SourceAdminEntry)
	}
	return unknownEntry
}

// damagedView renders a damaged binding for list.
func damagedView(d *Damage) *Workspace {
	w := &Workspace{Binding: d.Binding, State: StateDamaged, Intent: []string{}, Damage: &d.Damage, BlockedBy: []Blocker{}, Processes: []Process{}, DirtySubmodules: []string{}}
	if len(d.Paths) > 0 {
		w.Path = d.Paths[len(d.Paths)-1].Path
	}
	return w
}

// damageHint is the hint of a malformed record in a binding's folder.
func damageHint(binding string) string {
	return fmt.Sprintf("majlis will not act on workspace %s until its records are whole; other workspaces are unaffected", binding)
}
