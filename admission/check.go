package admission

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// A CheckRequest asks whether a checkout's changes lie inside a holder's
// leases.
type CheckRequest struct {
	Checkout string // a directory inside the worktree; empty: the working directory
	Holder   string
	// Changed lists the checkout's changed paths relative to its top
	// level, slash-separated, as Git names them (git status: modified,
	// staged, untracked, both sides of renames; gitops.Status.ChangedPaths
	// gathers them). Admission does not run git: the caller says what
	// changed. Duplicates and a trailing slash are ignored.
	Changed []string
}

// CheckResult is wire.LeaseCheck: the result type is defined once, in the wire contract.
type CheckResult = wire.LeaseCheck

// Check compares the checkout's changes (req.Changed: git status,
// untracked files included, both sides of renames) with the active leases of req.Holder in
// that checkout: a path, as Git names it (a symlink is a change of the
// link, never of its target), is covered by a file lease on it or an
// intent covering it. A lease observed after an edit proves nothing, so Check
// never grants one: each uncovered path is recorded as an enforcement_gap
// event (one transaction), and the enforcement_gap policy decides: allow
// reports nothing, warn reports warnings, block refuses with
// ErrPolicyBlocked listing the gaps.
func (s *Service) Check(ctx context.Context, req CheckRequest) (*CheckResult, error) {
	const op = "check"
	if err := checkHolder(op, req.Holder); err != nil {
		return nil, err
	}
	co, err := s.checkout(ctx, op, req.Checkout, "")
	if err != nil {
		return nil, err
	}
	changed := map[string]bool{}
	for _, p := range req.Changed {
		p = strings.TrimSuffix(p, "/")
		if p == "" || p == "." || strings.HasPrefix(p, "/") {
			return nil, &Error{Op: op, Path: co.Root, Err: ErrInvalid,
				Reason: fmt.Sprintf("changed path %q is not relative to the checkout's top level", p)}
		}
		changed[p] = true
	}
	paths := make([]string, 0, len(changed))
	for p := range changed {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	res := &CheckResult{Checkout: co.Root, Holder: req.Holder, Changed: len(paths), Gaps: []string{}, Warnings: []Warning{},
		DecidedBy: []string{PolicyEnforcementGap}}
	var gaps []string
	err = s.repo.tx(ctx, op, func(c *sql.Conn) error {
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		pol, err := readPolicy(ctx, c)
		if err != nil {
			return err
		}
		res.Policy = pol.EnforcementGap
		leases, err := queryRows(ctx, c, `SELECT `+rowColumns+` FROM leases
			WHERE holder = ? AND checkout = ? AND scope IN ('file', 'intent') AND state = 'granted'`+liveClause,
			req.Holder, co.Root)
		if err != nil {
			return err
		}
		gaps = gaps[:0]
		for _, p := range paths {
			// The changed entry is the path Git names, as it names it:
			// Git never follows a symlink in the worktree, so a changed
			// symlink, or a path below a directory replaced by one, is a
			// change of that path, not of the file it points to (resolving
			// it would let a new link to a leased file pass). Keys are
			// physical, so a lease taken through an alias covers the
			// target's path, which is what Git reports when the target is
			// edited. Case is folded as keys are.
			key := p
			if co.Fold {
				key = strings.ToLower(key)
			}
			if !covered(leases, key, now) {
				gaps = append(gaps, p)
				if err := appendEvent(ctx, c, now, "enforcement_gap", req.Holder, "",
					map[string]string{"path": p, "checkout": co.Root, "why": "no active lease of the holder covers it", "policy": string(res.Policy)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch res.Policy {
	case Warn:
		res.Gaps = append(res.Gaps, gaps...)
		for _, p := range gaps {
			res.Warnings = append(res.Warnings, Warning{Code: "enforcement_gap", Policy: PolicyEnforcementGap, Resource: p,
				Message: fmt.Sprintf("%s changed outside the leases of %s; policy %s=warn", p, req.Holder, PolicyEnforcementGap)})
		}
	case Block:
		if len(gaps) > 0 {
			return nil, &Error{Op: op, Path: co.Root, Err: ErrPolicyBlocked, Gaps: gaps,
				Reason: fmt.Sprintf("%d changed path(s) outside the leases of %s, first %s (policy %s=block)", len(gaps), req.Holder, gaps[0], PolicyEnforcementGap),
				Hint:   "acquire leases for these paths before editing them, or revert the edits"}
		}
	}
	return res, nil
}

// covered reports whether an active lease among leases covers key.
func covered(leases []row, key string, now int64) bool {
	for i := range leases {
		r := &leases[i]
		if r.stateAt(now) == StateActive && overlaps(r.key, r.subtree, key, false) {
			return true
		}
	}
	return false
}
