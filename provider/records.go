package provider

import (
	"time"
)

// bindingRecords owns the durable records of the bindings: every claim
// and the events published for it (claims/<binding>/), the journal of
// claims (claims.journal), the claims index derived from them
// (claims.index), the request records (requests/) and the compacted
// records (compacted/). Its files are records_*.go; the rest of the
// package calls only its exported methods (records_owner_test.go), so
// that allocate, reclaim, restore, gc and doctor read as the steps of
// their own jobs:
//
//	Binding(b), Current(op, b)  a binding's claims with their events, oldest
//	                            first; its latest live created claim
//	Bindings                    the bindings that have a claims folder
//	All, Each, EachFromRecords  every binding's claims, through the claims
//	Index, Prefetch, EachThrough  index or from the records alone
//	PublishClaim                a new claim, beside its journal line
//	Publish, Prepare            an event of a claim (no-clobber)
//	Journal, JournalOf,         the journal as the fast peer check reads it,
//	RewriteJournal              as the claims imply it, rewritten whole
//	Request, CheckRequest,      the request-id store; replay returns a
//	RecordRequest, RequestClaim recorded result, RequestClaim the claim a
//	                            request published (compacted or not)
//	SwapOut, FinishCompaction,  compaction of a binding's old records
//	UnfinishedCompactions
//	Verifying, Damaged,         what still verifies of a damaged binding,
//	Quarantine, DamagedRequests what does not, moved aside by a repair
//	Dir, JournalPath, RequestPath, StagingDir  where the files are
//
// It takes no lock of its own: its callers hold the publication lease
// (PublishClaim, RewriteJournal) or the binding's reclaim reservation
// (SwapOut, FinishCompaction) as their job requires.
type bindingRecords struct {
	state string           // the state folder, <git-common-dir>/majlis
	now   func() time.Time // the provider's clock
	// eagerIndex, set only by tests of this package, makes every reader
	// that read a binding from its records write a new claims index,
	// instead of letting a few changed bindings accumulate.
	eagerIndex bool
}

func newBindingRecords(state string, now func() time.Time) *bindingRecords {
	return &bindingRecords{state: state, now: now}
}
