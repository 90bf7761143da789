package provider

import (
	"time"
)

// bindingRecords owns the durable records of the bindings: every claim
// and the events published for it (claims/<binding>/), the journal of
// claims (claims.journal), and the claims index derived from them
// (claims.index). Its files are records_*.go; the rest of the package
// calls only its exported methods, so that allocate, reclaim, restore,
// gc and doctor read as the steps of their own jobs:
//
//	Binding(b)       a binding's claims with their events, oldest first
//	Current(op, b)   a binding's latest live, created claim, or ErrNotFound
//	All, Each        every binding's claims (through the claims index)
//	EachFromRecords  the same from the records alone, never the index
//	Index, Prefetch  the claims index, now or read ahead on a goroutine;
//	EachThrough      every binding's claims through a given index
//	PublishClaim     write a new claim beside its journal line
//	Publish, Prepare publish an event of a claim (no-clobber)
//	Journal          the journal's claims, as the fast peer check reads them
//	Dir, JournalPath where a binding's records and the journal live
//
// It takes no lock itself: a claim is published under the publication
// lease, which its caller holds (allocate_checks.go).
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
