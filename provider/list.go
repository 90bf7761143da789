package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/openers"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/wire"
)

// One look (workspace list): for each workspace, whether its owner is
// alive, its leases, and whether a reclaim would go ahead now, with what
// blocks it. All of it is read without running git in the workspaces: the
// records, /proc, git's lock file of the worktree and one read of the
// admission ledgers. It is information, never authority: a reclaim judges
// everything again, and also what this does not (files, nested
// repositories, the preview).

// Kinds of Blocker.
const (
	BlockOwnerAlive   = "owner_alive"   // the recorded owner process runs (or cannot be proven dead)
	BlockLeases       = "leases"        // the task, or someone in the workspace, holds leases
	BlockNestedPeer   = "nested_peer"   // another workspace lies inside it, or it inside another
	BlockDamaged      = "damaged"       // its records cannot all be read
	BlockLocked       = "locked"        // git's lock on it is someone else's
	BlockReclaiming   = "reclaiming"    // a reclaim holds its reservation
	BlockLeasesUnread = "leases_unread" // the ledgers cannot be read: leases unknown
	BlockUnfinished   = "unfinished"    // its allocation has not finished: a retry with its request id does
	BlockProcesses    = "processes"     // processes work inside it (a bulk reclaim leaves it out)
)

// LeaseShown is how many leases of a workspace list names; it counts them all.
const LeaseShown = 3

// LeaseRef is wire.LeaseRef: the result type is defined once, in the wire contract.
type LeaseRef = wire.LeaseRef

// LeaseSummary is wire.LeaseSummary: the result type is defined once, in the wire contract.
type LeaseSummary = wire.LeaseSummary

// Blocker is wire.Blocker: the result type is defined once, in the wire contract.
type Blocker = wire.Blocker

// newBlocker returns a blocker with its arrays present.
func newBlocker(kind, detail, hint string) Blocker {
	return Blocker{Kind: kind, Detail: detail, Hint: hint, Leases: []LeaseRef{}, Processes: []Process{}}
}

// ownerState judges the recorded owner of c: "" when none is recorded,
// else alive, exited or unknown, with why.
func ownerState(c *Claim) (string, string) {
	if c.OwnerPID == 0 {
		return "", ""
	}
	self, err := procid.Of(os.Getpid())
	if err != nil {
		return string(procid.Unknown), err.Error()
	}
	owner := self
	owner.PID, owner.StartTime = c.OwnerPID, c.OwnerStart
	live, why := procid.Judge(owner)
	if live == procid.Dead {
		return "exited", why
	}
	return string(live), why
}

// leaseRefs converts leases for a look.
func leaseRefs(ls []admission.Lease) []LeaseRef {
	out := make([]LeaseRef, 0, len(ls))
	for _, l := range ls {
		out = append(out, leaseRef(l))
	}
	return out
}

func leaseRef(l admission.Lease) LeaseRef {
	return LeaseRef{ID: l.ID, Resource: l.Resource, Holder: l.Holder, State: string(l.State), ExpiresAt: l.ExpiresAt.UTC(),
		OwnerPID: l.OwnerPID, Recoverable: l.Recoverable}
}

// leaseRead is the result of reading the ledgers for a look.
type leaseRead struct {
	leases []admission.Lease
	err    error
}

// readLeases reads every live lease of the ledgers for a look, in the
// background: opening the ledgers costs milliseconds that overlap with
// reading the records (List). Leases are granted only through the
// repository ledger: where it was never created, no task of this
// repository holds one, and list does not create it (it writes nothing).
// A reclaim reads every ledger itself.
func (p *Provider) readLeases(ctx context.Context) <-chan leaseRead {
	ch := make(chan leaseRead, 1)
	go func() {
		if _, err := os.Lstat(filepath.Join(p.stateDir, admission.RepositoryLedgerName)); err != nil && os.IsNotExist(err) {
			ch <- leaseRead{}
			return
		}
		svc, err := p.admission(ctx)
		if err != nil {
			ch <- leaseRead{err: err}
			return
		}
		ls, err := svc.List(ctx, admission.ListRequest{})
		ch <- leaseRead{ls, err}
	}()
	return ch
}

// look fills the one-look fields of the listed workspaces ws: owner,
// leases, the processes inside, reclaimable and blocked_by.
func (p *Provider) look(ws []*Workspace, claims map[*Workspace]*claimRecord, read <-chan leaseRead) {
	procs := scanProcesses(ws)
	lr := <-read
	leases, leaseErr := lr.leases, lr.err
	byHolder, byCheckout := map[string][]admission.Lease{}, map[string][]admission.Lease{}
	for _, l := range leases {
		byHolder[l.Holder] = append(byHolder[l.Holder], l)
		if l.Checkout != "" && l.Holder != "" {
			byCheckout[l.Checkout] = append(byCheckout[l.Checkout], l)
		}
	}
	nested := nestedPairs(ws)
	foreign := foreignLocks(ws, claims)
	found := <-procs
	for _, w := range ws {
		if w.State == StateReclaimed || w.State == StatePooled {
			// Neither is a workspace a reclaim takes: a pooled worktree
			// goes with 'majlis pool drain' (reclaimable stays unset).
			continue
		}
		blocked := []Blocker{}
		if w.Damage != nil {
			b := newBlocker(BlockDamaged, "its record "+w.Damage.File+" cannot be read", "'majlis doctor' says what to do")
			b.Path = w.Damage.File
			blocked = append(blocked, b)
		}
		if rec := claims[w]; rec != nil {
			blocked = append(blocked, lookClaim(w, rec, byHolder, byCheckout, leaseErr)...)
			if w.State != StateMissing {
				if reason, locked := foreign[w]; locked {
					blocked = append(blocked, newBlocker(BlockLocked, fmt.Sprintf("git's lock on it is someone else's (reason %q); majlis never lifts it", reason),
						"whoever locked it unlocks it ('git worktree unlock'), once they are done with it"))
				}
				blocked = append(blocked, lookProcesses(w, found)...)
			}
		}
		for _, other := range nested[w] {
			b := newBlocker(BlockNestedPeer, "workspace "+other.Binding+" overlaps it ("+other.Path+")",
				"reclaim the workspace inside first")
			b.Peer, b.Path = other.Binding, other.Path
			blocked = append(blocked, b)
		}
		ok := len(blocked) == 0
		w.Reclaimable, w.BlockedBy = &ok, blocked
	}
}

// lookClaim judges a workspace's owner and leases, and an allocation or
// reclaim under way, for list.
func lookClaim(w *Workspace, rec *claimRecord, byHolder, byCheckout map[string][]admission.Lease, leaseErr error) []Blocker {
	c := &rec.Claim
	var blocked []Blocker
	if !rec.has(EventCreated) {
		// Nothing reclaims a workspace majlis never handed out: the
		// allocation is finished (or undone) by a retry of it.
		blocked = append(blocked, newBlocker(BlockUnfinished, "its allocation (request "+c.RequestID+") has not finished",
			"a retry with request id "+c.RequestID+" finishes it or says why not"))
	}
	if state, why := ownerState(c); state != "" {
		w.OwnerState = state
		alive := state == string(procid.Alive)
		w.OwnerAlive = &alive
		if state != "exited" && !w.Released {
			b := newBlocker(BlockOwnerAlive, fmt.Sprintf("owner pid %d is %s (%s)", c.OwnerPID, state, why),
				"wait for it to exit, or stop it; then 'majlis workspace reclaim --dead --preview'")
			b.OwnerPID = c.OwnerPID
			blocked = append(blocked, b)
		}
	}
	if leaseErr != nil {
		blocked = append(blocked, newBlocker(BlockLeasesUnread, "the leases cannot be read: "+leaseErr.Error(), "'majlis doctor' checks the ledgers"))
	} else {
		mine := workspaceLeases(c, byHolder, byCheckout)
		w.Leases = &LeaseSummary{Count: len(mine), First: leaseRefs(mine[:min(len(mine), LeaseShown)])}
		if keep, _ := splitRecoverable(mine); len(keep) > 0 {
			b := newBlocker(BlockLeases, describeLeases(keep), leasesHint(keep))
			b.Leases = leaseRefs(keep)
			blocked = append(blocked, b)
		}
	}
	if w.State == StateReclaiming {
		blocked = append(blocked, newBlocker(BlockReclaiming, "a reclaim of it is under way (or died)",
			"if it died: 'majlis workspace recover "+c.Binding+"' once its reservation has expired"))
	}
	return blocked
}

// leasesHint says how the leases that keep a workspace in use can be
// ended: by their holder with its token; a quarantined one that records
// no owner, once its writer has stopped, with no token at all.
func leasesHint(keep []admission.Lease) string {
	l := keep[0]
	switch {
	case l.State == admission.StateQuarantined && l.OwnerPID == 0:
		return fmt.Sprintf("lease %s expired without release and records no owner process, so nothing proves its writer stopped: "+
			"once it has, 'majlis lease resolve %s --writer-stopped' (no token needed); or its holder releases it "+
			"('majlis lease release --holder %s' with its lease token)", l.ID, l.ID, l.Holder)
	case l.State == admission.StateQuarantined:
		return fmt.Sprintf("lease %s expired without release while its owner process %d still runs: stop it, or, once its writer has stopped, "+
			"'majlis lease resolve %s --writer-stopped' (no token needed)", l.ID, l.OwnerPID, l.ID)
	case l.OwnerPID != 0:
		return fmt.Sprintf("its owner process %d still runs: it releases its leases ('majlis end %s', or 'majlis lease release --holder %s' with its lease token); "+
			"once the process is dead they need no token", l.OwnerPID, l.Holder, l.Holder)
	}
	return fmt.Sprintf("its holder releases them ('majlis end %s', or 'majlis lease release --holder %s' with its lease token); "+
		"they record no owner process, so nothing else proves the task stopped", l.Holder, l.Holder)
}

// lookProcesses is the blocker of processes working inside w.
func lookProcesses(w *Workspace, found map[string][]Process) []Blocker {
	ps := found[w.PhysicalPath]
	if w.PhysicalPath == "" || len(ps) == 0 {
		return nil
	}
	w.Processes = ps
	b := newBlocker(BlockProcesses, "processes work inside it: "+describeProcesses(ps),
		fmt.Sprintf("a bulk reclaim leaves it out: stop them, or reclaim it alone ('majlis workspace reclaim %s --preview', then --confirm DIGEST)", w.Binding))
	b.Processes = ps
	return []Blocker{b}
}

// scanProcesses finds, on another goroutine, the processes that use the
// listed workspaces that have files (one read of /proc for them all). A
// scan that fails (not Linux) finds none: list informs, the bulk reclaim
// judges again and refuses what it cannot see.
func scanProcesses(ws []*Workspace) <-chan map[string][]Process {
	ch := make(chan map[string][]Process, 1)
	var dirs []string
	for _, w := range ws {
		if w.State != StateReclaimed && w.State != StateMissing && w.PhysicalPath != "" {
			dirs = append(dirs, w.PhysicalPath)
		}
	}
	go func() {
		found, _ := openers.Scan(dirs)
		ch <- found
	}()
	return ch
}

// workspaceLeases returns the live leases that keep c's workspace in use,
// as a reclaim counts them: its task's (the binding as holder) and any
// taken in its checkout. Host leases are the holder's of any repository of
// the machine: a reclaim counts only this repository's, so a list may
// show more than a reclaim would refuse for.
func workspaceLeases(c *Claim, byHolder, byCheckout map[string][]admission.Lease) []admission.Lease {
	seen := map[string]bool{}
	var out []admission.Lease
	for _, l := range append(append([]admission.Lease{}, byHolder[c.Binding]...), byCheckout[c.PhysicalPath]...) {
		if !seen[l.ID] {
			seen[l.ID] = true
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AcquiredAt.Before(out[j].AcquiredAt) })
	return out
}

// describeLeases says which leases keep a workspace in use, naming the
// first LeaseShown.
func describeLeases(ls []admission.Lease) string {
	var names []string
	for i, l := range ls {
		if i == LeaseShown {
			names = append(names, fmt.Sprintf("and %d more", len(ls)-LeaseShown))
			break
		}
		names = append(names, fmt.Sprintf("%s (holder %s, %s until %s)", l.Resource, l.Holder, l.State, l.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("%s held: %s", nounCount(len(ls), "lease", "leases"), strings.Join(names, "; "))
}

// foreignLocks reports, for each listed workspace whose directory is
// there, git's lock on its worktree when majlis did not set it (read by a
// few goroutines: two small files a workspace). The admin entry is found
// through the workspace's .git file; anything unreadable is left to the
// reclaim's own checks.
func foreignLocks(ws []*Workspace, claims map[*Workspace]*claimRecord) map[*Workspace]string {
	reasons := make([]string, len(ws))
	locked := make([]bool, len(ws))
	workers.Each(len(ws), 2, func(i int) {
		w, rec := ws[i], claims[ws[i]]
		if rec == nil || w.State == StateReclaimed || w.State == StateMissing {
			return
		}
		lock, err := gitops.WorktreeLockAt(rec.Claim.Path)
		if err == nil && lock.Locked && !ownLock(rec, lock.Reason) {
			reasons[i], locked[i] = lock.Reason, true
		}
	})
	out := map[*Workspace]string{}
	for i, w := range ws {
		if locked[i] {
			out[w] = reasons[i]
		}
	}
	return out
}

// nestedPairs finds, among the listed workspaces that still have files,
// those that lie inside one another (lexically or physically): a reclaim
// of either refuses while the other is there. Sorting makes it
// O(n log n) plus the pairs found.
func nestedPairs(ws []*Workspace) map[*Workspace][]*Workspace {
	type entry struct {
		path string
		w    *Workspace
	}
	var es []entry
	for _, w := range ws {
		if w.State == StateReclaimed || w.State == StateMissing || w.Path == "" {
			continue
		}
		es = append(es, entry{filepath.Clean(w.Path), w})
		if w.PhysicalPath != "" && filepath.Clean(w.PhysicalPath) != filepath.Clean(w.Path) {
			es = append(es, entry{filepath.Clean(w.PhysicalPath), w})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].path < es[j].path })
	out := map[*Workspace][]*Workspace{}
	add := func(a, b *Workspace) {
		for _, x := range out[a] {
			if x == b {
				return
			}
		}
		out[a] = append(out[a], b)
	}
	for i, e := range es {
		prefix := e.path + string(filepath.Separator)
		for j := i + 1; j < len(es); j++ {
			// Paths with prefix e.path sort right after it, possibly after
			// siblings such as "a-b" for "a" ('-' < '/'): skip those.
			if !strings.HasPrefix(es[j].path, e.path) {
				break
			}
			if !strings.HasPrefix(es[j].path, prefix) || es[j].w == e.w {
				continue
			}
			add(e.w, es[j].w)
			add(es[j].w, e.w)
		}
	}
	return out
}

// Summarize counts the totals of a list, as `majlis workspace list` and
// the server report them: by state (every state a key, zero included),
// and how many a reclaim would take now (reclaimable) or finds blocked.
func Summarize(list []*Workspace) map[string]int {
	c := map[string]int{"total": len(list), "reclaimable": 0, "blocked": 0}
	for _, s := range []string{StateActive, StateReleased, StateReclaiming, StateReclaimed, StateMissing, StateDamaged} {
		c[s] = 0
	}
	for _, w := range list {
		c[w.State]++
		if w.Reclaimable != nil {
			if *w.Reclaimable {
				c["reclaimable"]++
			} else {
				c["blocked"]++
			}
		}
	}
	return c
}
