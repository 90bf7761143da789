package provider

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Verifying reads what still verifies of a damaged binding's folder: the
// claims that verify, each with those of its created, failed and
// reclaimed events that verify, and the sequence numbers that have a file
// but no claim that verifies (lost). Nothing in it refuses: doctor and
// the peer checks locate a damaged binding's workspaces from it
// (damage.go).
func (br *bindingRecords) Verifying(binding string) (claims map[int]*claimRecord, lost map[int]bool) {
	dir := br.Dir(binding)
	entries, _ := os.ReadDir(dir)
	claims = map[int]*claimRecord{}
	lost = map[int]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			continue
		}
		seqStr, kind, ok := strings.Cut(name, ".")
		seq, err := strconv.Atoi(seqStr)
		if !ok || err != nil || seq < 1 || len(seqStr) != 6 {
			continue // not a record: it names no workspace
		}
		if kind != "claim" {
			if _, ok := claims[seq]; !ok {
				lost[seq] = true // may be resolved by a claim read later
			}
			continue
		}
		rec := &claimRecord{Events: map[string]*Event{}}
		if rec.Digest, err = readRecord(filepath.Join(dir, name), "claim", formatClaim, &rec.Claim); err != nil ||
			rec.Claim.Binding != binding || rec.Claim.Seq != seq {
			lost[seq] = true
			continue
		}
		claims[seq] = rec
	}
	for seq, rec := range claims {
		delete(lost, seq)
		for _, kind := range []string{EventCreated, EventFailed, EventReclaimed} {
			var ev Event
			if _, err := readRecord(filepath.Join(dir, claimName(seq, kind)), "event", formatEvent, &ev); err == nil &&
				ev.Kind == kind && ev.Seq == seq && ev.Binding == binding && ev.ClaimDigest == rec.Digest {
				rec.Events[kind] = &ev
			}
		}
	}
	return claims, lost
}
