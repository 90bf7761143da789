package admission

import (
	"context"
	"encoding/json"
	"os"

	"github.com/majlis-dev/majlis/internal/procid"
)

// A request that names cluster names alone (and no request id) has
// nothing on this machine to keep in step with the shared ledger: no
// local row, no attempt to record. It is decided in one transaction of
// the shared ledger, which writes its records granted (not pending), so
// there is no second phase to settle, and a crash leaves either every
// grant or none.

// clusterOnly reports whether p names cluster names alone and no request
// id (whose record lives in the repository ledger).
func clusterOnly(p *prepared) bool {
	if p.requestID != "" {
		return false
	}
	for _, t := range p.targets {
		if t.scope != ScopeCluster {
			return false
		}
	}
	return true
}

// admitClusterOnly admits a clusterOnly request in one transaction of the
// shared ledger.
func (s *Service) admitClusterOnly(ctx context.Context, p *prepared) (*AcquireResult, error) {
	self, err := procid.Of(os.Getpid())
	if err != nil {
		return nil, &Error{Op: "acquire", Err: err, Reason: "cannot establish this process's identity"}
	}
	adm, _ := json.Marshal(self)
	nanos, err := s.ledgerNow(ctx, s.repo.db)
	if err != nil {
		return nil, s.repo.fail("acquire", err)
	}
	sp := &sharedPhase{clone: s.shared.Clone(), now: fromNanos(nanos), final: true}
	if err := s.pendShared(ctx, p, sp, string(adm)); err != nil {
		return nil, err
	}
	res := &AcquireResult{Leases: []Lease{}, Warnings: sp.warnings, DecidedBy: sp.decided, Reused: []string{}, Ports: []int{}}
	if res.Warnings == nil {
		res.Warnings = []Warning{}
	}
	for i := range p.targets {
		if l, ok := sp.clusterLease(i); ok {
			res.Leases = append(res.Leases, l)
			if sp.reused[i] {
				res.Reused = append(res.Reused, l.ID)
			}
		}
	}
	return res, nil
}
