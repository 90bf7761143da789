package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/majlis-dev/majlis/admission"
)

// EndOptions describe the end of a task.
type EndOptions struct {
	Binding string
	// Token and Force are those of a lease release: the task's lease
	// token (leases granted with one are released only with it), or
	// release without it, recorded.
	Token string
	Force bool
	// Reclaim previews the workspace once released and reclaims it when
	// it is clean (nothing to salvage); otherwise it is left, and the
	// result says why.
	Reclaim   bool
	RequestID string
}

// An EndResult reports the end of a task.
type EndResult struct {
	Binding   string            `json:"binding"`
	Leases    []admission.Lease `json:"leases"`    // released now
	Workspace *Workspace        `json:"workspace"` // nil: the task has no workspace
	// Reclaimed is set by --reclaim when the workspace was reclaimed;
	// otherwise NotReclaimed says why it was left (with the preview, when
	// one could be made).
	Reclaimed    *ReclaimResult `json:"reclaimed,omitempty"`
	Preview      *Preview       `json:"preview,omitempty"`
	NotReclaimed error          `json:"-"`
	// Ignored says what became of the ignored files (and FIFOs, sockets,
	// devices) salvage does not keep, with --reclaim: IgnoredNone, or
	// IgnoredKept (reclaimed: they wait in the kept trash folder, which
	// restore --from-trash brings back), or IgnoredLeft (not reclaimed:
	// the policy keeps no trash, so a reclaim would delete them).
	Ignored string `json:"ignored,omitempty"`
}

// What end --reclaim did with ignored files (EndResult.Ignored).
const (
	IgnoredNone = "none"
	IgnoredKept = "kept_in_trash"
	IgnoredLeft = "not_reclaimed"
)

// End finishes the task of o.Binding in one call: it releases every lease
// the task holds (as lease release --holder BINDING does), then releases
// its workspace (its files stay). With o.Reclaim it then previews the
// workspace and reclaims it, confirmed with that preview's digest, when
// the preview finds nothing to salvage; a workspace with work in it, or
// one a reclaim refuses, is left and the result says why. Ending a task
// whose workspace is released already is harmless.
//
// A task without a workspace (begun Shared, or whose workspace was
// reclaimed) ends too: its leases are released and the result's
// Workspace is nil; o.Reclaim has nothing to do. Only a task that has
// neither a workspace nor any lease, active or past, is not found
// (ErrNotFound), and then nothing changes.
func (p *Provider) End(ctx context.Context, o EndOptions) (*EndResult, error) {
	res, noWorkspace, err := p.endLeases(ctx, o)
	if err != nil || noWorkspace {
		return res, err
	}
	if res.Workspace, err = p.Release(ctx, o.Binding, o.sub("release")); err != nil {
		return nil, err
	}
	if !o.Reclaim {
		return res, nil
	}
	return p.endReclaim(ctx, o, res)
}

// sub is the request id of a part of the end (its leases' release, its
// workspace's, its reclaim), or "" when the end has none.
func (o EndOptions) sub(part string) string {
	if o.RequestID == "" {
		return ""
	}
	return o.RequestID + "/" + part
}

// endLeases releases every lease the task holds. noWorkspace: the task
// has no workspace (then res is the whole result); a task with neither a
// workspace nor any lease, active or past, is not found.
func (p *Provider) endLeases(ctx context.Context, o EndOptions) (res *EndResult, noWorkspace bool, err error) {
	_, err = p.records.Current("end", o.Binding)
	noWorkspace = errors.Is(err, ErrNotFound)
	if err != nil && !noWorkspace {
		return nil, false, err
	}
	svc, aerr := p.admission(ctx)
	if aerr != nil {
		return nil, false, aerr
	}
	if noWorkspace {
		held, lerr := svc.List(ctx, admission.ListRequest{Holder: o.Binding, All: true})
		if lerr != nil {
			return nil, false, lerr
		}
		if len(held) == 0 {
			var pe *Error
			if errors.As(err, &pe) && pe.Reason == "" {
				pe.Reason = "the task has no workspace and has held no lease"
			}
			return nil, false, err
		}
	}
	rel, err := svc.Release(ctx, admission.ReleaseRequest{Holder: o.Binding, Token: o.Token, Force: o.Force, RequestID: o.sub("leases")})
	if err != nil {
		return nil, false, err
	}
	res = &EndResult{Binding: o.Binding, Leases: rel.Leases}
	if res.Leases == nil {
		res.Leases = []admission.Lease{}
	}
	return res, noWorkspace, nil
}

// endReclaim previews the released workspace and reclaims it, confirmed
// with that preview's digest, when it is clean; otherwise res says why
// it was left.
func (p *Provider) endReclaim(ctx context.Context, o EndOptions, res *EndResult) (*EndResult, error) {
	pv, err := p.PreviewReclaim(ctx, o.Binding)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res.NotReclaimed = err
		return res, nil
	}
	res.Preview = pv
	if !pv.Salvage.Clean {
		res.NotReclaimed = &Error{Op: "end", Binding: o.Binding, Path: pv.Path, Err: ErrHoldsWork,
			Reason:  fmt.Sprintf("%s, or what only it holds: only a clean workspace is reclaimed by end", nounCount(pv.Salvage.Files, "changed file", "changed files")),
			Hint:    "look at what its reclaim would salvage (its preview, digest " + pv.Digest + "), then confirm that digest",
			Details: map[string]any{"digest": pv.Digest, "files": pv.Salvage.Files}}
		return res, nil
	}
	if res.Ignored, res.NotReclaimed, err = p.endIgnored(o, pv); err != nil || res.NotReclaimed != nil {
		return res, err
	}
	r, err := p.Reclaim(ctx, ReclaimOptions{Binding: o.Binding, Confirm: pv.Digest, RequestID: o.sub("reclaim"), requireKeep: res.Ignored == IgnoredKept})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res.NotReclaimed = err
		return res, nil
	}
	res.Reclaimed = r
	return res, nil
}

// endIgnored decides what becomes of the files salvage does not keep
// (ignored, special) of a clean workspace: they make it clean for end
// only while its trash is kept, when they wait there for the undo
// window. Otherwise the workspace is left (IgnoredLeft, with why).
func (p *Provider) endIgnored(o EndOptions, pv *Preview) (ignored string, left error, err error) {
	n := pv.IgnoredFiles + pv.SpecialFiles
	if n == 0 {
		return IgnoredNone, nil, nil
	}
	keep, err := p.keepFor(ReclaimOptions{Binding: o.Binding})
	if err != nil {
		return "", nil, err
	}
	files := fmt.Sprintf("%s that salvage does not keep (%s)", nounCount(n, "ignored or special file", "ignored or special files"), strings.Join(firstIgnored(pv, 3), ", "))
	switch in := trashInside(pv.Path, pv.PhysicalPath, pv.Peers); {
	case in != "" && keep > 0:
		return IgnoredLeft, &Error{Op: "end", Binding: o.Binding, Path: pv.Path, Peer: in, Err: ErrUnconfirmed,
			Reason: "it holds " + files + ", and its trash folder would lie inside " + in + ", so it would not be kept: a reclaim would delete them",
			Hint:   "move what you need out of it, then reclaim it"}, nil
	case keep == 0:
		return IgnoredLeft, &Error{Op: "end", Binding: o.Binding, Path: pv.Path, Err: ErrUnconfirmed,
			Reason: "it holds " + files + ", and the policy keeps no trash (trash.keep 0): a reclaim would delete them",
			Hint:   "move what you need out of it, then reclaim it; or have the policy keep the trash (its key trash.keep)"}, nil
	case pv.TrashGoesAtOnce != "":
		return IgnoredLeft, trashAtOnceError("end", pv), nil
	}
	return IgnoredKept, nil, nil
}

// firstIgnored names up to n of the files a preview lists as not salvaged.
func firstIgnored(pv *Preview, n int) []string {
	var out []string
	for _, f := range pv.IgnoredPaths {
		if len(out) == n {
			break
		}
		out = append(out, f)
	}
	for _, f := range pv.SpecialPaths {
		if len(out) == n {
			break
		}
		out = append(out, f.Path)
	}
	return out
}
