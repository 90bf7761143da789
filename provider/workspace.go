package provider

import (
	"context"
	"errors"
	"os"
	"sort"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/pathid"
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

// A Workspace is what list and show report. Its JSON is part of the CLI
// contract: fields may be added, never renamed or removed.
type Workspace struct {
	ID           string     `json:"id"`
	Binding      string     `json:"binding"`
	Path         string     `json:"path"`
	PhysicalPath string     `json:"physical_path"`
	Branch       string     `json:"branch"`
	Base         string     `json:"base"`
	Head         string     `json:"head"`
	State        string     `json:"state"`
	ClaimDigest  string     `json:"claim_digest"`
	CreatedAt    time.Time  `json:"created_at"`
	Intent       []string   `json:"intent"`
	RequestID    string     `json:"request_id"`
	OwnerPID     int        `json:"owner_pid,omitempty"`
	ReleasedAt   *time.Time `json:"released_at,omitempty"`
	ReclaimedAt  *time.Time `json:"reclaimed_at,omitempty"`
	SalvageRef   string     `json:"salvage_ref,omitempty"`
	// TrashPath and TrashKeptUntil name the trash folder a reclaim kept
	// (--keep-trash) while it is there: workspace restore --from-trash
	// puts it back.
	TrashPath      string     `json:"trash_path,omitempty"`
	TrashKeptUntil *time.Time `json:"trash_kept_until,omitempty"`
	// TrashEntry names git's entry of a workspace whose folder was gone
	// (moved or deleted by hand), kept aside in majlis's trash for the
	// undo window instead of a trash folder; TrashKeptUntil,
	// TrashSizeBytes and TrashHalfPurged then speak of it. Nothing of it
	// is restored (there is no folder): it holds what git's entry held
	// (HEAD, index, per-worktree refs, reflogs), all salvaged.
	TrashEntry string `json:"trash_entry,omitempty"`
	// TrashSizeBytes is the disk space the kept trash folder takes;
	// TrashHalfPurged, that a purge of it began and did not finish (it may
	// be half deleted; restore --from-trash refuses it).
	TrashSizeBytes  *int64 `json:"trash_size_bytes,omitempty"`
	TrashHalfPurged bool   `json:"trash_half_purged,omitempty"`
	// TrashPurgedAt and TrashPurged say when the kept trash folder went,
	// and why: expired, max_bytes or min_free (purged early for space),
	// or that restore --from-trash moved it back.
	TrashPurgedAt *time.Time     `json:"trash_purged_at,omitempty"`
	TrashPurged   string         `json:"trash_purged,omitempty"`
	DetachedFrom  string         `json:"detached_from,omitempty"`
	Dirty         *bool          `json:"dirty,omitempty"`   // show only
	Changes       *gitops.Counts `json:"changes,omitempty"` // show only
	// DirtySubmodules lists submodules with changes salvage cannot capture (show only).
	DirtySubmodules []string `json:"dirty_submodules"`
	// Damage, for state damaged only: which file, why, and where the
	// workspace may be (damage.go).
	Damage *Damage `json:"damage,omitempty"`
	// Released says whether its task handed it back (majlis workspace
	// release, majlis end): its owner process stops counting.
	Released bool `json:"released"`
	// The one look of list (list.go): the recorded owner's state (alive,
	// exited, unknown; absent when none is recorded), the leases that keep
	// it in use, and whether a reclaim would go ahead now, else what
	// blocks it.
	OwnerState  string        `json:"owner_state,omitempty"`
	OwnerAlive  *bool         `json:"owner_alive,omitempty"`
	Leases      *LeaseSummary `json:"leases,omitempty"`
	Reclaimable *bool         `json:"reclaimable,omitempty"`
	BlockedBy   []Blocker     `json:"blocked_by"`
	// Processes are the processes whose working directory or open files
	// are inside it (list): a dead owner does not prove they stopped.
	Processes []Process `json:"processes"`
}

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
			ts := p.loadTrashSizes()
			if n := p.cachedTrashSize(ts, c.Binding, c.Seq, path, true); n >= 0 {
				w.TrashSizeBytes = &n
			}
			p.saveTrashSizes(ts)
		}
		if pg := rec.Events[EventPurged]; pg != nil && (ev.TrashPath != "" || ev.AdminKept != "") {
			t := pg.At
			w.TrashPurgedAt, w.TrashPurged = &t, pg.Reason
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
			if r.has(EventFailed) || (r.has(EventReclaimed) && !o.All) {
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

// current returns the binding's latest live claim, or ErrNotFound.
func (p *Provider) current(op, binding string) (*claimRecord, error) {
	if err := ValidBinding(binding); err != nil {
		return nil, err
	}
	recs, err := p.readBinding(binding)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].live() && recs[i].has(EventCreated) {
			return recs[i], nil
		}
	}
	return nil, &Error{Op: op, Binding: binding, Err: ErrNotFound,
		Details: map[string]any{"not_found": "workspace"}}
}

// Show returns the binding's workspace with its git status.
func (p *Provider) Show(ctx context.Context, binding string) (*Workspace, error) {
	rec, err := p.current("show", binding)
	if err != nil {
		return nil, err
	}
	return p.view(ctx, rec, true)
}

// Release records that the binding's holder is done with its workspace.
// Its files stay until it is reclaimed. Releasing twice is harmless.
func (p *Provider) Release(ctx context.Context, binding, requestID string) (*Workspace, error) {
	rec, err := p.current("release", binding)
	if err != nil {
		return nil, err
	}
	if requestID != "" {
		if err := p.recordRequest(requestID, requestArgs{Op: "release", Binding: binding}); err != nil {
			return nil, err
		}
	}
	if _, err := p.publishEvent(rec, Event{Kind: EventReleased}); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}
