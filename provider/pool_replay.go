package provider

// replayedPoolUse says, for a retry of the allocation rec (its request
// id), whether the workspace was a pooled worktree, as the first answer
// did: the pooled worktree this allocation took and did not set aside.
// When it took none, why the first answer gave is not recorded: the
// reason is "replayed".
func (p *Provider) replayedPoolUse(rec *claimRecord) *PoolUse {
	bindings, err := p.records.Bindings()
	if err != nil {
		return &PoolUse{Reason: "unreadable"}
	}
	for _, b := range bindings {
		if !isPoolBinding(b) {
			continue
		}
		recs, err := p.records.Binding(b)
		if err != nil {
			return &PoolUse{Reason: "unreadable"}
		}
		for _, r := range recs {
			ev := r.Events[EventTaken]
			if r.isPool() && ev != nil && !r.has(EventAside) &&
				ev.Taker == rec.Claim.Binding && ev.RequestID == rec.Claim.RequestID {
				return &PoolUse{Used: true, Name: r.Claim.Binding}
			}
		}
	}
	return &PoolUse{Reason: "replayed"}
}
