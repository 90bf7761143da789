package provider

import (
	"context"
	"errors"
	"os"
	"sort"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// Workspace states (docs/cli.md).
const (
	StateActive     = "active"
	StateReleased   = "released"
	StateReclaiming = "reclaiming"
	StateReclaimed  = "reclaimed"
	StateMissing    = "missing"
	// StateDamaged (damage.go): the binding's records cannot all be read.
)

// Workspace is wire.Workspace: the result type is defined once, in the wire contract.
type Workspace = wire.Workspace

// view renders a claim as a Workspace; with status it also reads git
// status of the worktree.
func (p *Provider) view(ctx context.Context, rec *claimRecord, status bool) (*Workspace, error) {
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	reclaiming, err := p.reclaimingBindings()
	if err != nil {
		return nil, err
	}
	return p.render(ctx, reader, reclaiming, rec, status)
}

func (p *Provider) render(ctx context.Context, reader *gitops.Reader, reclaiming map[string]bool, rec *claimRecord, status bool) (*Workspace, error) {
	c := rec.Claim
	w := &Workspace{
		ID: shortDigest(rec.Digest), Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath,
		Branch: c.Branch, Base: c.Base, ClaimDigest: rec.Digest, CreatedAt: c.CreatedAt,
		Intent: c.Intent, RequestID: c.RequestID, OwnerPID: c.OwnerPID, State: StateActive, DetachedFrom: c.DetachedFrom,
		BlockedBy: []Blocker{}, Processes: []Process{}, DirtySubmodules: []string{},
	}
	if ev := rec.Events[EventReleased]; ev != nil {
		t := ev.At
		w.ReleasedAt, w.State, w.Released = &t, StateReleased, true
	}
	if ev := rec.Events[EventReclaimed]; ev != nil {
		t := ev.At
		w.ReclaimedAt, w.State, w.SalvageRef = &t, StateReclaimed, ev.SalvageRef
		if kept, ok := keptTrashOf(rec); ok {
			path, entry := keptPath(rec, kept)
			if entry {
				w.TrashEntry = path
			} else {
				w.TrashPath = path
			}
			w.TrashKeptUntil, w.TrashHalfPurged = ev.KeepUntil, rec.has(EventPurging)
			w.TrashMissing = trashFolderGone(rec, &KeptTrash{Path: path, Entry: entry})
			ts := p.loadTrashSizes()
			if n := p.cachedTrashSize(ts, c.Binding, c.Seq, path, true); n >= 0 && !w.TrashMissing {
				w.TrashSizeBytes = &n
			}
			p.saveTrashSizes(ts)
		}
		if pg := rec.Events[EventPurged]; pg != nil && (ev.TrashPath != "" || ev.AdminKept != "") {
			t := pg.At
			w.TrashPurgedAt, w.TrashPurged = &t, pg.Reason
		}
		for _, kind := range []string{EventPurging, EventPurged} {
			// The purge's salvage of what the trash held: the newest,
			// the one a restore of the binding brings back.
			if pg := rec.Events[kind]; pg != nil && pg.SalvageRef != "" {
				w.SalvageRef = pg.SalvageRef
			}
		}
		return w, nil
	}
	if reclaiming[c.Binding] {
		w.State = StateReclaiming
	}
	if mv := rec.Events[EventMoved]; mv != nil {
		// A reclaim recorded a move into the trash and did not finish:
		// reclaiming, until a retry does.
		if _, err := os.Lstat(mv.TrashPath); err == nil {
			w.State, w.TrashPath = StateReclaiming, mv.TrashPath
			return w, nil
		}
	}
	if ev := rec.Events[EventCreated]; ev != nil {
		id, err := pathid.Lstat(c.Path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && (id.Dev != ev.Dev || id.Ino != ev.Ino)) {
			if errors.Is(err, os.ErrNotExist) {
				w.State = StateMissing
			}
			return w, nil
		}
		if head, err := reader.WorktreeHead(ctx, c.Path); err == nil {
			w.Head = head
		}
	}
	if status && w.State != StateMissing && rec.has(EventCreated) {
		st, err := gitops.ReadStatus(ctx, c.Path, gitops.StatusOptions{Ignored: true})
		if err != nil {
			return nil, err
		}
		counts := st.Counts()
		dirty := counts.Total() > 0
		w.Dirty, w.Changes, w.DirtySubmodules = &dirty, &counts, nonNil(st.DirtySubmodules())
		if st.Head != "" {
			w.Head = st.Head
		}
	}
	return w, nil
}

// reclaimingBindings returns the bindings with a reclaim reservation.
func (p *Provider) reclaimingBindings() (map[string]bool, error) {
	names, err := p.leases.List(reclaimPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n[len(reclaimPrefix):]] = true
	}
	return out, nil
}

// ListOptions tune List.
type ListOptions struct {
	All bool // include reclaimed workspaces
	// Look adds each workspace's owner state, leases, reclaimable and
	// blocked_by (list.go): no git process, one read of the ledgers.
	Look bool
	// Status adds each workspace's change counts: one git status each.
	Status bool
}

// List returns the workspaces of the repository, by binding. Failed
// allocations are never listed; reclaimed ones only with All.
func (p *Provider) List(ctx context.Context, o ListOptions) (_ []*Workspace, err error) {
	var leases <-chan leaseRead
	if o.Look {
		leases = p.readLeases(ctx)
		defer func() {
			if err != nil {
				<-leases // the ledgers are not read after List returns
			}
		}()
	}
	inv, err := p.readInventory()
	if err != nil {
		return nil, err
	}
	all := inv.good
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	reclaiming, err := p.reclaimingBindings()
	if err != nil {
		return nil, err
	}
	var shown []*claimRecord
	for _, recs := range all {
		for _, r := range recs {
			if r.has(EventFailed) || (r.has(EventReclaimed) && !o.All) || (r.isPool() && !listPooled(r, o.All)) {
				continue
			}
			shown = append(shown, r)
		}
	}
	// Each workspace is a few small reads (its directory, its HEAD), and
	// with Status one git status: spread over the processors.
	out := make([]*Workspace, len(shown))
	errs := make([]error, len(shown))
	workers.Each(len(shown), 1, func(i int) {
		out[i], errs[i] = p.render(ctx, reader, reclaiming, shown[i], o.Status)
		if errs[i] == nil && shown[i].isPool() {
			out[i].State = StatePooled
		}
	})
	claims := map[*Workspace]*claimRecord{}
	for i, err := range errs {
		if err != nil {
			return nil, err // the first, in binding order
		}
		claims[out[i]] = shown[i]
	}
	for _, d := range inv.damaged {
		out = append(out, damagedView(d))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Binding != out[j].Binding {
			return out[i].Binding < out[j].Binding
		}
		return out[i].CreatedAt.Before(out[j].CreatedAt)
	})
	if o.Look {
		p.look(out, claims, leases)
	}
	return out, nil
}

// Show returns the binding's workspace with its git status.
func (p *Provider) Show(ctx context.Context, binding string) (*Workspace, error) {
	rec, err := p.records.Current("show", binding)
	if err != nil {
		return nil, err
	}
	return p.view(ctx, rec, true)
}

// Release records that the binding's holder is done with its workspace.
// Its files stay until it is reclaimed. Releasing twice is harmless.
func (p *Provider) Release(ctx context.Context, binding, requestID string) (*Workspace, error) {
	rec, err := p.records.Current("release", binding)
	if err != nil {
		return nil, err
	}
	if requestID != "" {
		if err := p.records.RecordRequest(requestID, requestArgs{Op: "release", Binding: binding}); err != nil {
			return nil, err
		}
	}
	if _, err := p.records.Publish(rec, Event{Kind: EventReleased}); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}
