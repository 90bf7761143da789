package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/admission"
)

// leaseLiveness refuses (ErrWorkspaceLive) while the workspace's task is
// still at work by the ledger's account: the binding (the task's holder
// name, as `majlis begin` uses it) holds an active or quarantined lease,
// or some holder took one in the workspace's checkout. A repository whose
// ledger was never created has no leases; a ledger that cannot be read
// refuses, as any unreadable authority does.
func (p *Provider) leaseLiveness(ctx context.Context, rec *claimRecord) error {
	c := rec.Claim
	if _, err := os.Lstat(filepath.Join(p.StateDir, admission.RepositoryLedgerName)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	svc, err := p.admission(ctx)
	if err != nil {
		return err
	}
	live, err := svc.LiveLeases(ctx, c.Binding, c.PhysicalPath)
	if err != nil {
		return err
	}
	if len(live) == 0 {
		return nil
	}
	var names []string
	for i, l := range live {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(live)-3))
			break
		}
		names = append(names, fmt.Sprintf("%s %s (holder %s, %s until %s)", l.ID, l.Resource, l.Holder, l.State, l.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrWorkspaceLive,
		Reason: "leases keep it in use: " + strings.Join(names, "; "),
		Hint:   "let the holder release them (majlis lease release --holder H), or, for a quarantined one whose writer has stopped, majlis lease resolve ID --writer-stopped"}
}

// admission opens the repository's admission ledger once per Provider.
func (p *Provider) admission(ctx context.Context) (*admission.Service, error) {
	p.admMu.Lock()
	defer p.admMu.Unlock()
	if p.adm == nil {
		svc, err := admission.Open(ctx, p.StateDir, admission.Options{})
		if err != nil {
			return nil, err
		}
		p.adm = svc
	}
	return p.adm, nil
}
