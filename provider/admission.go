package provider

import (
	"context"
	"errors"
	"os"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// Admission opens the repository's admission ledgers (package admission):
// its repository ledger in the state dir, and the host ledger. The caller
// closes the service.
func (p *Provider) Admission(ctx context.Context) (*admission.Service, error) {
	opts, err := p.admissionOptions()
	if err != nil {
		return nil, err
	}
	svc, err := admission.Open(ctx, p.stateDir, opts)
	if err != nil {
		return nil, err
	}
	if err := p.share(ctx, svc); err != nil {
		svc.Close()
		return nil, err
	}
	return svc, nil
}

// hostLedger is the host ledger's path: Options.HostLedger, else the
// user's conventional one (see Options.HostLedger). It is found when a
// ledger is opened, so that a user without a home folder can still use
// everything that needs none.
func (p *Provider) hostLedger() (string, error) {
	if p.host != "" {
		return p.host, nil
	}
	return admission.HostLedgerPath(userStateEnv)
}

// userStateEnv reads the variables that locate the user's state folder
// (XDG_STATE_HOME, HOME), as os.UserHomeDir reads HOME, and no other:
// majlis's own variables are the caller's to read and pass as options.
func userStateEnv(name string) string {
	switch name {
	case "XDG_STATE_HOME", "HOME":
		return os.Getenv(name)
	}
	return ""
}

// Where Check found the holder it checked.
const (
	HolderGiven     = "given"     // CheckOptions.Holder
	HolderWorkspace = "workspace" // the binding of the workspace the checkout is
	HolderDefault   = "default"   // CheckOptions.DefaultHolder
)

// CheckOptions configure Check.
type CheckOptions struct {
	// Holder whose leases the changes are compared with. Empty: the
	// binding of the workspace the checkout is, else DefaultHolder.
	Holder string
	// DefaultHolder is the holder when the checkout is not a workspace
	// (the CLI passes $MAJLIS_HOLDER).
	DefaultHolder string
	// IfHolder makes a checkout without any holder a success that checks
	// nothing (Skipped), instead of an error: the pre-commit hook runs in
	// every worktree, including those no task holds.
	IfHolder bool
}

// CheckResult is wire.CheckResult: the result type is defined once, in the wire contract.
type CheckResult = wire.CheckResult

// Check compares the changed files of the checkout the provider was
// opened in with the leases of its holder (admission.Service.Check): the
// holder given, else the binding of the workspace that checkout is, else
// DefaultHolder. Without any, it refuses with ErrInvalidArgument (or, with
// IfHolder, reports Skipped). Refusals of the check itself are admission's
// (ErrPolicyBlocked when the policy enforcement_gap blocks).
func (p *Provider) Check(ctx context.Context, o CheckOptions) (*CheckResult, error) {
	holder, source := o.Holder, HolderGiven
	if holder == "" {
		ws, err := p.workspaceAt(p.repo.Toplevel)
		if err != nil {
			return nil, err
		}
		if ws != nil {
			holder, source = ws.Claim.Binding, HolderWorkspace
		}
	}
	if holder == "" {
		holder, source = o.DefaultHolder, HolderDefault
	}
	if holder == "" {
		if o.IfHolder {
			return skippedCheck(p.repo.Toplevel), nil
		}
		return nil, &Error{Op: "check", Path: p.repo.Toplevel, Err: ErrInvalidArgument,
			Reason: "no holder to check: " + p.repo.Toplevel + " is not a majlis workspace and no holder was named",
			Hint:   "name the holder", Details: map[string]any{"argument": "holder"}}
	}
	svc, err := p.Admission(ctx)
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	if err := admission.CheckHolder(holder); err != nil {
		return nil, err
	}
	// Admission judges the changes; finding them is git's (gitops).
	st, err := gitops.ReadStatus(ctx, p.repo.Toplevel, gitops.StatusOptions{})
	if err != nil {
		return nil, &admission.Error{Op: "check", Path: p.repo.Toplevel, Err: err, Reason: "reading git status"}
	}
	res, err := svc.Check(ctx, admission.CheckRequest{Checkout: p.repo.Toplevel, Holder: holder, Changed: st.ChangedPaths()})
	if err != nil {
		return nil, err
	}
	return &CheckResult{LeaseCheck: res, HolderSource: source}, nil
}

// CheckRepository opens the repository containing dir and runs Check in
// the checkout dir is in. With IfHolder, a repository that was never
// registered with `majlis init` has no leases and no holder to check, so
// it reports Skipped instead of refusing: the pre-commit hook may run in
// repositories majlis does not manage (a global core.hooksPath). opts are
// those of Open.
func CheckRepository(ctx context.Context, dir string, opts Options, o CheckOptions) (*CheckResult, error) {
	p, err := Open(ctx, dir, opts)
	if errors.Is(err, ErrNotInitialized) && o.IfHolder {
		top := dir
		if repo, derr := gitops.Discover(ctx, dir); derr == nil {
			top = repo.Toplevel
		}
		return skippedCheck(top), nil
	}
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Check(ctx, o)
}

func skippedCheck(checkout string) *CheckResult {
	return &CheckResult{Skipped: true, LeaseCheck: &admission.CheckResult{Checkout: checkout,
		Gaps: []string{}, Warnings: []admission.Warning{}, DecidedBy: []string{}}}
}

// workspaceAt returns the live, created workspace whose worktree has the
// top level dir, or nil when dir is not one.
func (p *Provider) workspaceAt(dir string) (*claimRecord, error) {
	phys, err := pathid.Physical(dir)
	if err != nil {
		return nil, err
	}
	recs, err := p.liveClaims()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.damage != nil && (r.Claim.Path == dir || r.Claim.PhysicalPath == phys) {
			return nil, r.damage.err // this very checkout's records are damaged
		}
		ev := r.Events[EventCreated]
		if ev == nil || (r.Claim.PhysicalPath != phys && r.Claim.Path != dir) {
			continue
		}
		// The directory is the one created for the claim, not another
		// that took its place.
		if id, err := pathid.Lstat(r.Claim.Path); err == nil && id.Dev == ev.Dev && id.Ino == ev.Ino {
			return r, nil
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, nil
}
