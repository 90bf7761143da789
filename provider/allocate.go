package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

var (
	fpAllocateClaimed = failpoint.New("allocate/claimed")
	fpAllocateCreated = failpoint.New("allocate/created")
	// fpAllocateChecked fires after git's worktrees were checked for
	// nesting, before the publication lease.
	fpAllocateChecked = failpoint.New("allocate/checked")
	// fpAllocatePin fires before the new worktree's entry is pinned: with
	// many worktrees, while git checks its files out.
	fpAllocatePin = failpoint.New("allocate/pin")
)

// publicationTTL bounds how long a crashed publisher can block others
// before its lease may be recovered (it is released within milliseconds
// in normal operation).
const publicationTTL = 30 * time.Second

// AllocateOptions describe a workspace to allocate.
type AllocateOptions struct {
	Binding string
	Base    string // revision; default HEAD of the main worktree
	Branch  string // default majlis/<binding>
	// CheckoutBranch names an existing branch to check out as it is,
	// instead of creating Branch at Base: the workspace starts at its
	// tip. It must not be checked out in any worktree. majlis never
	// moves or deletes it (the claim records Checkout).
	CheckoutBranch string
	Path           string   // default <workspace root>/<binding>; relative to the working directory
	Intent         []string // repository paths the task will touch (literal or trailing /**)
	OwnerPID       int      // a process whose life marks the workspace as in use
	AllowNested    bool     // allow a path inside another worktree that does not ignore it
	RequestID      string   // retrying with the same id returns the recorded result
	// NoPool makes the workspace with git worktree add even when a
	// pooled worktree is ready (pool.md).
	NoPool bool

	// Set by restore only: how HEAD is set (a new branch, an existing
	// branch already at Base, or detached), and what fills the worktree,
	// which is then created without a checkout.
	mode     gitops.CheckoutMode
	populate func(ctx context.Context, path string) error
	restore  string // the salvage ref a restore fills the worktree from
}

// Allocate creates a linked worktree for a binding, after publishing its
// claim. See docs/design.md and docs/workspaces.md for the rules it enforces.
func (p *Provider) Allocate(ctx context.Context, o AllocateOptions) (*Workspace, error) {
	a, err := p.newAllocation(o)
	if err != nil {
		return nil, err
	}
	o = a.o
	// The claims index is read from here on, while git's refs and
	// worktrees are checked; the records are checked against it under the
	// lease (Prefetch).
	index := p.records.Prefetch()

	// A retry of an earlier request returns its result or finishes it.
	if rec, err := p.records.RequestClaim(o.Binding, o.RequestID); err != nil {
		return nil, err
	} else if rec != nil {
		if err := p.records.CheckRequest(o.RequestID, a.args); err != nil {
			return nil, err
		}
		ws, err := p.resumeAllocation(ctx, rec)
		if ws != nil && o.populate == nil {
			ws.Pool = p.replayedPoolUse(rec)
		}
		return ws, err
	}
	if err := p.records.CheckRequest(o.RequestID, a.args); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// A live binding is refused before anything else (and again under the
	// publication lease, which is what decides).
	if recs, err := p.records.Binding(o.Binding); err != nil {
		return nil, err
	} else if err := liveBindingError(o.Binding, recs); err != nil {
		return nil, err
	}
	// Facts that need git come before the publication lease, which is
	// never held across a git command.
	base, err := p.allocationBase(ctx, a)
	if err != nil {
		return nil, err
	}
	physical, err := p.checkAllocationPath(a)
	if err != nil {
		return nil, err
	}
	o = a.o
	claim := Claim{Format: formatClaim, Binding: o.Binding, RequestID: o.RequestID, Path: a.path,
		PhysicalPath: physical, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: base,
		BaseRef: o.Base, Branch: o.Branch, Intent: a.intent, OwnerPID: o.OwnerPID, OwnerStart: a.owner.StartTime,
		AllowNested: o.AllowNested, CreatedAt: p.now().UTC(),
		Checkout: o.mode == gitops.ExistingBranch, Detached: o.mode == gitops.Detached, Restore: o.restore}
	if claim.Allocator, err = procid.Of(os.Getpid()); err != nil {
		return nil, err
	}
	rec, err := p.publishAllocation(ctx, a, claim, physical, index)
	if err != nil {
		return nil, err
	}
	if err := fpAllocateClaimed.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	use := PoolUse{Reason: "disabled"}
	if !o.NoPool && o.populate == nil {
		var ws *Workspace
		if ws, use, err = p.allocateFromPool(ctx, rec); err != nil || ws != nil {
			if ws != nil {
				ws.Pool = &use
			}
			return ws, err
		}
	}
	p.progress(Progress{Op: "allocate", Binding: rec.Claim.Binding, Step: "checking out " + shortDigest(rec.Claim.Base) + " into " + rec.Claim.Path})
	ws, err := p.createWorktree(ctx, rec, o.populate)
	if ws != nil && o.populate == nil {
		ws.Pool = &use
	}
	return ws, err
}

// An allocation is an Allocate's options with its defaults filled in and
// checked, and what they give: the lexical path, the intent, the owner
// and the request's arguments.
type allocation struct {
	o      AllocateOptions
	path   string
	intent []string
	owner  procid.Owner
	args   requestArgs
}

// fail is the allocation's error for a refusal.
func (a *allocation) fail(err error, reason, path, hint string) error {
	return &Error{Op: "allocate", Binding: a.o.Binding, Path: path, Reason: reason, Hint: hint, Err: err}
}

// newAllocation checks o and fills in its defaults (branch, path, base,
// request id), before anything is read.
func (p *Provider) newAllocation(o AllocateOptions) (*allocation, error) {
	a := &allocation{o: o}
	if err := ValidBinding(o.Binding); err != nil {
		return nil, err
	}
	if isPoolBinding(o.Binding) {
		return nil, a.fail(ErrInvalidBinding, "names starting with "+poolBindingPrefix+" belong to the warm pool", "", "choose another name")
	}
	var err error
	if a.intent, err = normalizeIntent(o.Intent); err != nil {
		return nil, a.fail(ErrInvalidArgument, err.Error(), "", "")
	}
	if o.CheckoutBranch != "" {
		if o.Branch != "" || o.Base != "" || o.mode != gitops.NewBranch {
			return nil, a.fail(ErrInvalidArgument, "an existing branch to check out is its own base", "",
				"a new branch name and a base do not apply to an existing branch")
		}
		o.Branch, o.mode = o.CheckoutBranch, gitops.ExistingBranch
	}
	if o.mode == gitops.Detached {
		o.Branch = ""
	} else {
		if o.Branch == "" {
			o.Branch = "majlis/" + o.Binding
		}
		if err := gitops.CheckBranchName(o.Branch); err != nil {
			return nil, a.fail(ErrInvalidArgument, err.Error(), "", "")
		}
	}
	if o.Path == "" {
		o.Path = filepath.Join(p.reg.WorkspaceRoot, o.Binding)
	}
	if a.path, err = pathid.Lexical(o.Path); err != nil {
		return nil, a.fail(ErrInvalidArgument, err.Error(), o.Path, "")
	}
	if o.Base == "" {
		o.Base = "HEAD"
	}
	if o.OwnerPID != 0 {
		if o.OwnerPID < 0 {
			return nil, a.fail(ErrInvalidArgument, fmt.Sprintf("owner pid %d is not a process id", o.OwnerPID), "", "")
		}
		if a.owner, err = procid.Of(o.OwnerPID); err != nil {
			return nil, a.fail(ErrInvalidArgument, "the owner process is not running: "+err.Error(), "", "")
		}
	}
	if o.RequestID == "" {
		o.RequestID = autoRequestPrefix + newID()[:16]
	}
	a.o = o
	a.args = requestArgs{Op: "allocate", Binding: o.Binding, Base: o.Base, Branch: o.Branch, Path: a.path,
		Intent: a.intent, OwnerPID: o.OwnerPID, AllowNested: o.AllowNested, Checkout: o.CheckoutBranch != ""}
	return a, nil
}

// createWorktree runs git worktree add for a published claim and records
// the directory's identity. Any failure undoes what was made.
//
// populate, when set, fills the worktree, which git then creates without
// checking out any file (restore); a failure undoes the allocation, which
// removes only what populate wrote.
func (p *Provider) createWorktree(ctx context.Context, rec *claimRecord, populate func(context.Context, string) error) (*Workspace, error) {
	c := rec.Claim
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	reason := lockReason(rec)
	newBranch := !c.Checkout && !c.Detached
	var err error
	pinned := false
	var created *preparedEvent // written beside git's checkout, named after it
	switch {
	case populate == nil && c.Checkout && c.Restore == "":
		err = gitops.AddWorktree(p.withGitProgress(ctx), c.CommonDir, gitops.AddOptions{
			Path: c.Path, Mode: gitops.ExistingBranch, Branch: c.Branch, LockReason: reason,
		})
	case populate != nil || !newBranch:
		mode := gitops.NewBranch
		if c.Checkout {
			mode = gitops.ExistingBranch
		} else if c.Detached {
			mode = gitops.Detached
		}
		err = gitops.AddWorktree(ctx, c.CommonDir, gitops.AddOptions{
			Path: c.Path, Mode: mode, Branch: c.Branch, Commit: c.Base, LockReason: reason, NoCheckout: true,
		})
		if err == nil && populate != nil {
			if perr := populate(ctx, c.Path); perr != nil {
				return nil, p.undoAllocation(ctx, rec, perr, made{worktree: true, branch: newBranch})
			}
		}
	default:
		// The entry is pinned as soon as git has made it, and the created
		// event written (not yet named): with many worktrees, while git
		// checks the files out.
		err = gitops.AddWorktree(p.withGitProgress(ctx), c.CommonDir, gitops.AddOptions{
			Path: c.Path, Branch: c.Branch, Commit: c.Base, LockReason: reason,
			EntryMade: func() error {
				if err := pinEntry(rec); err != nil {
					return err
				}
				id, err := pathid.Lstat(c.Path)
				if err != nil {
					return err
				}
				created, err = p.records.Prepare(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base})
				return err
			},
		})
		pinned = err == nil
	}
	if err != nil && created != nil {
		created.discard()
	}
	if err != nil {
		// A branch or path git reports as existing is someone else's and
		// stays. Otherwise git may have got as far as creating the branch,
		// or even the worktree (a failing post-checkout hook): both are
		// this command's, since neither existed when the claim was made.
		m := made{worktree: true, branch: newBranch}
		if errors.Is(err, gitops.ErrBranchExists) || errors.Is(err, gitops.ErrPathExists) {
			m = made{}
		}
		return nil, p.undoAllocation(ctx, rec, err, m)
	}
	all := made{worktree: true, branch: newBranch}
	if pinned {
		// pinned with the add, the created event written
	} else if err := pinEntry(rec); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	} else if id, err := pathid.Lstat(c.Path); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	} else if created, err = p.records.Prepare(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if _, err := created.commit(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if err := fpAllocateCreated.Inject(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}

// pinEntry pins the admin entry of the worktree just created for rec with
// the claim digest (see adminentry.go), before the created event.
func pinEntry(rec *claimRecord) error {
	if err := fpAllocatePin.Inject(); err != nil {
		return err
	}
	dir, err := verifyRepository("allocate", rec)
	if err != nil {
		return err
	}
	return gitops.WriteEntryPin(dir, rec.Digest)
}

// normalizeIntent validates intent globs: repository-relative paths,
// literal or ending in /**, without . or .. components.
func normalizeIntent(in []string) ([]string, error) {
	out := []string{}
	for _, g := range in {
		lit, sub := strings.CutSuffix(g, "/**")
		if g == "**" {
			lit, sub = "", true
		}
		if lit != "" {
			if strings.HasPrefix(lit, "/") || strings.ContainsAny(lit, "*?[\\\x00") {
				return nil, fmt.Errorf("intent %q: use a repository-relative path, optionally ending in /**", g)
			}
			for _, part := range strings.Split(lit, "/") {
				if part == "" || part == "." || part == ".." {
					return nil, fmt.Errorf("intent %q: empty, '.' or '..' component", g)
				}
			}
		}
		if lit == "" && !sub {
			return nil, fmt.Errorf("intent %q is empty", g)
		}
		out = append(out, g)
	}
	return out, nil
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
