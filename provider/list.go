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
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/internal/workers"
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
)

// LeaseShown is how many leases of a workspace list names; it counts them all.
const LeaseShown = 3

// A LeaseRef names one lease a workspace's task (or someone working in it)
// holds.
type LeaseRef struct {
	ID        string    `json:"id"`
	Resource  string    `json:"resource"`
	Holder    string    `json:"holder"`
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expires_at"`
}

// LeaseSummary counts a workspace's leases and names the first few.
type LeaseSummary struct {
	Count int        `json:"count"`
	First []LeaseRef `json:"first"`
}

// A Blocker is one reason a reclaim of the workspace would refuse now.
type Blocker struct {
	Kind     string     `json:"kind"`
	Detail   string     `json:"detail"` // in words
	OwnerPID int        `json:"owner_pid,omitempty"`
	Leases   []LeaseRef `json:"leases,omitempty"`
	Peer     string     `json:"peer,omitempty"` // the nested workspace's binding
	Path     string     `json:"path,omitempty"`
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
		out = append(out, LeaseRef{ID: l.ID, Resource: l.Resource, Holder: l.Holder, State: string(l.State), ExpiresAt: l.ExpiresAt.UTC()})
	}
	return out
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
// leases, reclaimable and blocked_by.
func (p *Provider) look(ws []*Workspace, claims map[*Workspace]*claimRecord, read <-chan leaseRead) {
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
	for _, w := range ws {
		if w.State == StateReclaimed {
			continue
		}
		blocked := []Blocker{}
		if w.Damage != nil {
			blocked = append(blocked, Blocker{Kind: BlockDamaged, Path: w.Damage.File,
				Detail: "its record " + w.Damage.File + " cannot be read ('majlis doctor' says what to do)"})
		}
		rec := claims[w]
		if rec != nil && !rec.has(EventCreated) {
			// Nothing reclaims a workspace majlis never handed out: the
			// allocation is finished (or undone) by a retry of it.
			blocked = append(blocked, Blocker{Kind: BlockUnfinished, Detail: "its allocation (request " +
				rec.Claim.RequestID + ") has not finished; a retry with that request id finishes it or says why not"})
		}
		if rec != nil {
			c := &rec.Claim
			if state, why := ownerState(c); state != "" {
				w.OwnerState = state
				alive := state == string(procid.Alive)
				w.OwnerAlive = &alive
				if state != "exited" && !w.Released {
					blocked = append(blocked, Blocker{Kind: BlockOwnerAlive, OwnerPID: c.OwnerPID,
						Detail: fmt.Sprintf("owner pid %d is %s (%s)", c.OwnerPID, state, why)})
				}
			}
			if leaseErr != nil {
				blocked = append(blocked, Blocker{Kind: BlockLeasesUnread, Detail: "the leases cannot be read: " + leaseErr.Error()})
			} else {
				mine := workspaceLeases(c, byHolder, byCheckout)
				w.Leases = &LeaseSummary{Count: len(mine), First: leaseRefs(mine[:min(len(mine), LeaseShown)])}
				if len(mine) > 0 {
					b := Blocker{Kind: BlockLeases, Leases: leaseRefs(mine), Detail: describeLeases(mine)}
					blocked = append(blocked, b)
				}
			}
			if w.State == StateReclaiming {
				blocked = append(blocked, Blocker{Kind: BlockReclaiming, Detail: "a reclaim of it is under way (or died: 'majlis workspace recover " + c.Binding + "')"})
			}
			if w.State != StateMissing {
				if reason, locked := foreign[w]; locked {
					blocked = append(blocked, Blocker{Kind: BlockLocked, Detail: fmt.Sprintf("git's lock on it is someone else's (reason %q); majlis never lifts it", reason)})
				}
			}
		}
		for _, other := range nested[w] {
			blocked = append(blocked, Blocker{Kind: BlockNestedPeer, Peer: other.Binding, Path: other.Path,
				Detail: "workspace " + other.Binding + " overlaps it (" + other.Path + ")"})
		}
		ok := len(blocked) == 0
		w.Reclaimable, w.BlockedBy = &ok, blocked
	}
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
