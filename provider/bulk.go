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
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// Bulk reclaim: every released workspace, or every workspace whose owner
// is proven dead, in one preview with one digest and one confirmation.
// Each workspace is reclaimed with all of Reclaim's checks, against its
// own preview as the bulk preview showed it.

// Selections of a bulk reclaim.
const (
	// SelectReleased: every released workspace (its task handed it back).
	SelectReleased = wire.SelectReleased
	// SelectDead: every workspace whose recorded owner process is proven
	// dead and whose task and checkout hold no live lease but those whose
	// own owner is proven dead too (which the reclaim retires as
	// recovered). A workspace with no recorded owner is not dead: nothing
	// proves its task stopped.
	SelectDead = wire.SelectDead
)

// A BulkItem is one workspace of a bulk preview: its reclaim preview, or
// the refusal a reclaim of it would meet now.
type BulkItem struct {
	Binding string   `json:"binding"`
	Preview *Preview `json:"preview,omitempty"`
	// Refused is the refusal, for a workspace that a reclaim would refuse:
	// it stays in the set, and the bulk reclaim leaves it alone.
	Refused error `json:"-"`
}

// A BulkPreview is what a bulk reclaim would do. Its digest covers the
// selection, every workspace's preview digest and every refusal.
type BulkPreview struct {
	Select     string     `json:"select"`
	Digest     string     `json:"digest"`
	Workspaces []BulkItem `json:"workspaces"`

	paths map[string]bool // of every workspace of the set
}

// BulkOptions describe a bulk reclaim.
type BulkOptions struct {
	Select            string // SelectReleased or SelectDead
	Confirm           string // the digest of the bulk preview the user saw
	SalvageSubmodules bool
	// KeepTrash and DeleteTrash are those of each reclaim (ReclaimOptions).
	KeepTrash   time.Duration
	DeleteTrash bool
	// RequestID makes the bulk reclaim resumable: a retry with it finishes
	// the set the first attempt confirmed (each workspace under
	// RequestID/<binding>), or returns the recorded result.
	RequestID string
}

// A BulkReclaimItem is the outcome for one workspace of a bulk reclaim.
type BulkReclaimItem struct {
	Binding string         `json:"binding"`
	Result  *ReclaimResult `json:"result,omitempty"`
	Err     error          `json:"-"` // its refusal or failure
	// Message is Err's message, kept in the recorded result.
	Message string `json:"message,omitempty"`
}

// A BulkResult reports a bulk reclaim: one line per workspace of the set.
type BulkResult struct {
	Select     string            `json:"select"`
	Digest     string            `json:"digest"`
	RequestID  string            `json:"request_id,omitempty"`
	Workspaces []BulkReclaimItem `json:"workspaces"`
	Reclaimed  int               `json:"reclaimed"`
	Failed     int               `json:"failed"`
}

// bulkPlan is the set a bulk reclaim confirmed, recorded under its request
// id before the first reclaim so that a retry finishes that set.
type bulkPlan struct {
	Select string            `json:"select"`
	Digest string            `json:"digest"`
	Items  map[string]string `json:"items"` // binding -> its preview digest without the set's peers ("" when refused)
	Paths  []string          `json:"paths"` // of every workspace of the set
}

func checkSelect(sel string) error {
	if sel != SelectReleased && sel != SelectDead {
		return &Error{Op: "reclaim", Err: ErrInvalidArgument, Reason: fmt.Sprintf("unknown selection %q", sel),
			Hint: "select the released workspaces or those whose owner is dead"}
	}
	return nil
}

// selectBulk returns the workspaces a selection matches, in order, and
// the paths of them all (lexical and physical).
func (p *Provider) selectBulk(ctx context.Context, sel string) ([]*Workspace, map[string]bool, error) {
	list, err := p.List(ctx, ListOptions{Look: true})
	if err != nil {
		return nil, nil, err
	}
	var out []*Workspace
	paths := map[string]bool{}
	for _, w := range list {
		if w.State == StateReclaimed || w.State == StateDamaged {
			continue
		}
		match := false
		switch sel {
		case SelectReleased:
			match = w.Released
		case SelectDead:
			match = w.OwnerState == "exited" && w.Leases != nil && !blockedBy(w, BlockLeases, BlockLeasesUnread)
		}
		if match {
			out = append(out, w)
			paths[w.Path], paths[w.PhysicalPath] = true, true
		}
	}
	return out, paths, nil
}

// PreviewBulkReclaim computes what a bulk reclaim of sel would do,
// changing nothing (but the kept preview summaries of PreviewReclaim).
func (p *Provider) PreviewBulkReclaim(ctx context.Context, sel string) (*BulkPreview, error) {
	if err := checkSelect(sel); err != nil {
		return nil, err
	}
	set, paths, err := p.selectBulk(ctx, sel)
	if err != nil {
		return nil, err
	}
	bp := &BulkPreview{Select: sel, Workspaces: []BulkItem{}, paths: paths}
	for i, w := range set {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.progress(Progress{Op: "reclaim", Binding: w.Binding, Step: "previewing " + w.Binding, Done: i, Total: len(set)})
		pv, err := p.PreviewReclaim(ctx, w.Binding)
		if err == nil {
			err = p.bulkInside(w.Binding, pv)
		}
		item := BulkItem{Binding: w.Binding, Preview: pv}
		if err != nil {
			if !refusal(err) {
				return nil, err
			}
			item.Preview, item.Refused = nil, err
		}
		bp.Workspaces = append(bp.Workspaces, item)
	}
	bp.Digest = bulkDigest(sel, bp.plan().Items, bp.Workspaces)
	return bp, nil
}

// refusal reports whether err is a reclaim's refusal of one workspace
// (which a bulk preview lists) rather than a failure of the whole.
func refusal(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && !errors.Is(err, ErrNotInitialized) && !errors.Is(err, ErrNotRepository)
}

func (bp *BulkPreview) plan() *bulkPlan {
	pl := &bulkPlan{Select: bp.Select, Digest: bp.Digest, Items: map[string]string{}, Paths: []string{}}
	for _, it := range bp.Workspaces {
		pl.Items[it.Binding] = ""
		if it.Preview != nil {
			pl.Items[it.Binding] = it.Preview.digestWithout(bp.paths)
		}
	}
	for path := range bp.paths {
		pl.Paths = append(pl.Paths, path)
	}
	sort.Strings(pl.Paths)
	return pl
}

func bulkDigest(sel string, items map[string]string, ws []BulkItem) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(sel)
	for _, it := range ws {
		line := []string{it.Binding, items[it.Binding]}
		if it.Refused != nil {
			line = append(line, it.Refused.Error())
		}
		enc.Encode(line)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// BulkReclaim reclaims exactly the set whose bulk preview had the digest
// o.Confirm: each workspace with all of Reclaim's checks, confirmed with
// its own preview's digest. A workspace that refuses or fails is reported
// on its line; the others go ahead. A set that changed since the preview
// is refused whole (ErrPreviewStale), saying which workspaces differ.
func (p *Provider) BulkReclaim(ctx context.Context, o BulkOptions) (*BulkResult, error) {
	if err := checkSelect(o.Select); err != nil {
		return nil, err
	}
	if err := CheckDigest(o.Confirm); err != nil {
		return nil, err
	}
	args := requestArgs{Op: "reclaim-" + o.Select, Binding: "-"}
	planID := o.RequestID + "#plan"
	done, plan, err := p.recordedBulk(o, args, planID)
	if err != nil || done != nil {
		return done, err
	}
	refused := map[string]error{}
	if plan == nil {
		if plan, err = p.planBulk(ctx, o, args, planID, refused); err != nil {
			return nil, err
		}
	}
	res := &BulkResult{Select: o.Select, Digest: plan.Digest, RequestID: o.RequestID, Workspaces: []BulkReclaimItem{}}
	bindings := make([]string, 0, len(plan.Items))
	for b := range plan.Items {
		bindings = append(bindings, b)
	}
	sort.Strings(bindings)
	for i, b := range bindings {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.progress(Progress{Op: "reclaim", Binding: b, Step: "reclaiming " + b, Done: i, Total: len(bindings)})
		item := BulkReclaimItem{Binding: b}
		digest := plan.Items[b]
		if digest == "" {
			item.Err = refused[b]
			if item.Err == nil {
				item.Err = &Error{Op: "reclaim", Binding: b, Err: ErrRecorded, Reason: "the preview showed it refused; it was left alone",
					Hint: "its own preview says why"}
			}
		} else {
			r, err := p.bulkOne(ctx, o, plan, b, digest)
			if err != nil && ctx.Err() != nil {
				return nil, err
			}
			item.Result, item.Err = r, err
		}
		if item.Err != nil {
			item.Message = item.Err.Error()
			res.Failed++
		} else {
			res.Reclaimed++
		}
		res.Workspaces = append(res.Workspaces, item)
	}
	if o.RequestID != "" {
		if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// recordedBulk reads what a request id recorded: the result of a bulk
// reclaim that ended (done), or the plan of one that was interrupted.
func (p *Provider) recordedBulk(o BulkOptions, args requestArgs, planID string) (done *BulkResult, plan *bulkPlan, err error) {
	if o.RequestID == "" {
		return nil, nil, nil
	}
	if r, err := p.records.Request(o.RequestID); err == nil {
		if err := p.records.CheckRequest(o.RequestID, args); err != nil {
			return nil, nil, err
		}
		var res BulkResult
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, nil, &Error{Op: "reclaim", Err: ErrMalformed, Reason: "recorded result: " + err.Error()}
		}
		for i := range res.Workspaces {
			if m := res.Workspaces[i].Message; m != "" {
				res.Workspaces[i].Err = &Error{Op: "reclaim", Binding: res.Workspaces[i].Binding, Err: ErrRecorded, Reason: m}
			}
		}
		return &res, nil, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	if r, err := p.records.Request(planID); err == nil {
		if err := p.records.CheckRequest(planID, args); err != nil {
			return nil, nil, err
		}
		plan = &bulkPlan{}
		if err := json.Unmarshal(r.Result, plan); err != nil || plan.Digest != o.Confirm {
			return nil, nil, &Error{Op: "reclaim", Err: ErrRequestConflict,
				Reason: fmt.Sprintf("request id %q was used for another bulk reclaim", o.RequestID), Hint: "use a new request id"}
		}
		return nil, plan, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	return nil, nil, nil
}

// planBulk previews the set again, refuses it if its digest is not the
// one confirmed, notes the workspaces the preview refused (refused), and
// records the plan under the request id.
func (p *Provider) planBulk(ctx context.Context, o BulkOptions, args requestArgs, planID string, refused map[string]error) (*bulkPlan, error) {
	bp, err := p.PreviewBulkReclaim(ctx, o.Select)
	if err != nil {
		return nil, err
	}
	if bp.Digest != o.Confirm {
		return nil, &Error{Op: "reclaim", Err: ErrPreviewStale,
			Reason: fmt.Sprintf("the set of %s workspaces, or one of their previews, changed since the preview %s; it is now %s (%s)",
				o.Select, shortDigest(o.Confirm), bp.Digest, bp.describe()),
			Hint:    "preview the set again and confirm the new digest",
			Details: map[string]any{"confirmed": o.Confirm, "digest": bp.Digest, "select": o.Select}}
	}
	plan := bp.plan()
	plan.Digest = bp.Digest
	for _, it := range bp.Workspaces {
		if it.Refused != nil {
			refused[it.Binding] = it.Refused
		}
	}
	if o.RequestID != "" {
		if err := p.records.RecordRequest(planID, args, plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// describe names the workspaces of the preview, for a stale refusal.
func (bp *BulkPreview) describe() string {
	if len(bp.Workspaces) == 0 {
		return "none now"
	}
	var names []string
	for _, it := range bp.Workspaces {
		names = append(names, it.Binding)
	}
	return "now: " + strings.Join(names, ", ")
}

// bulkOne reclaims one workspace of a confirmed set: its preview now must
// be the one the bulk preview showed, but for the peers of the set (the
// others of the set, reclaimed meanwhile, are gone from it); then Reclaim
// confirms that preview's own digest, with all its checks.
func (p *Provider) bulkOne(ctx context.Context, o BulkOptions, plan *bulkPlan, b, digest string) (*ReclaimResult, error) {
	ro := ReclaimOptions{Binding: b, SalvageSubmodules: o.SalvageSubmodules, KeepTrash: o.KeepTrash, DeleteTrash: o.DeleteTrash}
	if o.RequestID != "" {
		ro.RequestID = o.RequestID + "/" + b
		if _, err := p.records.Request(ro.RequestID); err == nil {
			return p.Reclaim(ctx, ro) // done, or under way: its record answers or resumes it
		}
		if p.startedBy(b, ro.RequestID) {
			// This bulk reclaim's interrupted reclaim of it got under way
			// (salvaged it, moved it, or recorded its end): its preview
			// need not be the one confirmed any more. It is finished as a
			// retried reclaim is, with every check (reclaimretry.go).
			ro.Yes = true
			return p.Reclaim(ctx, ro)
		}
	}
	pv, err := p.PreviewReclaim(ctx, b)
	if err != nil {
		return nil, err
	}
	if err := p.bulkInside(b, pv); err != nil {
		return nil, err // a process came into it since the bulk preview
	}
	paths := map[string]bool{}
	for _, path := range plan.Paths {
		paths[path] = true
	}
	// The others of the set reclaimed meanwhile may wait in their kept
	// trash folders, beside their paths: those peers are theirs too.
	dirs := map[string]bool{}
	for _, path := range plan.Paths {
		dirs[filepath.Dir(path)] = true
	}
	for _, peer := range pv.Peers {
		if b := trashBinding(peer.Path); b != "" && dirs[filepath.Dir(peer.Path)] {
			if _, ok := plan.Items[b]; ok {
				paths[peer.Path] = true
			}
		}
	}
	if now := pv.digestWithout(paths); now != digest {
		return nil, &Error{Op: "reclaim", Binding: b, Path: pv.Path, Err: ErrPreviewStale,
			Reason:  "its preview changed since the bulk preview (beyond the other workspaces of the set being reclaimed)",
			Hint:    "preview the set again, or this workspace alone",
			Details: map[string]any{"select": o.Select}}
	}
	ro.Confirm = pv.Digest
	return p.Reclaim(ctx, ro)
}

// blockedBy reports whether w's look found a blocker of one of kinds.
func blockedBy(w *Workspace, kinds ...string) bool {
	for _, b := range w.BlockedBy {
		for _, k := range kinds {
			if b.Kind == k {
				return true
			}
		}
	}
	return false
}

// bulkInside refuses, for a bulk reclaim, a workspace that processes
// still use, or whose processes could not be seen: a dead owner does not
// prove the processes it started stopped. Its own preview's digest,
// confirmed, reclaims it alone.
func (p *Provider) bulkInside(binding string, pv *Preview) error {
	rec, err := p.records.Current("reclaim", binding)
	if err != nil {
		return err
	}
	if pv.procErr != nil {
		return &Error{Op: "reclaim", Binding: binding, Path: pv.Path, Err: ErrWorkspaceLive,
			Reason: "the processes that may work inside it cannot be listed: " + pv.procErr.Error(),
			Hint:   "a bulk reclaim leaves it out; reclaim this workspace alone (its preview, then its digest confirmed)"}
	}
	if len(pv.Processes) > 0 {
		state, _ := ownerState(&rec.Claim)
		return processesError(&rec.Claim, pv.Processes, state)
	}
	return nil
}
