package provider

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
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

// Damaged lists the files of binding's folder that do not verify, with
// every file of a claim that does not: what a repair moves aside.
func (br *bindingRecords) Damaged(binding string) []string {
	return damagedFiles(br.Dir(binding))
}

// damagedFiles is Damaged of the claims folder dir.
func damagedFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	claims := map[int]string{} // seq -> digest of a claim that verifies
	var names []string
	binding := filepath.Base(dir)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			continue
		}
		names = append(names, name)
		seqStr, kind, _ := strings.Cut(name, ".")
		seq, err := strconv.Atoi(seqStr)
		if kind != "claim" || err != nil || len(seqStr) != 6 {
			continue
		}
		var c Claim
		if digest, err := readRecord(filepath.Join(dir, name), "claim", formatClaim, &c); err == nil && c.Binding == binding && c.Seq == seq {
			claims[seq] = digest
		}
	}
	var out []string
	for _, name := range names {
		seqStr, kind, ok := strings.Cut(name, ".")
		seq, err := strconv.Atoi(seqStr)
		digest, claimOK := claims[seq]
		switch {
		case !ok || err != nil || seq < 1 || len(seqStr) != 6 || !claimOK:
			out = append(out, filepath.Join(dir, name))
		case kind == "claim":
		default:
			var ev Event
			if _, err := readRecord(filepath.Join(dir, name), "event", formatEvent, &ev); err != nil ||
				ev.Kind != kind || ev.Seq != seq || ev.Binding != binding || ev.ClaimDigest != digest {
				out = append(out, filepath.Join(dir, name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Quarantine moves the damaged files of binding (Damaged) into a new
// folder <state>/damaged/<binding>.<time>, and returns it. Its caller
// holds the publication lease and has salvaged the binding's workspaces.
func (br *bindingRecords) Quarantine(binding string, files []string, at time.Time) (string, error) {
	aside := filepath.Join(br.state, "damaged", binding+"."+at.UTC().Format("20060102T150405.000000000Z"))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", err
	}
	if err := durable.MkdirAll(aside, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		if err := os.Rename(f, filepath.Join(aside, filepath.Base(f))); err != nil {
			return "", &Error{Op: "repair", Binding: binding, Path: f, Err: err}
		}
	}
	if err := durable.SyncDir(aside); err != nil {
		return "", err
	}
	if err := durable.SyncDir(filepath.Dir(files[0])); err != nil {
		return "", err
	}
	return aside, nil
}

// DamagedRequests calls bad with the path of every request record that
// does not verify, and why.
func (br *bindingRecords) DamagedRequests(bad func(path string, err error)) {
	dir, _ := br.RequestPath("x")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".request") {
			continue
		}
		var r requestRecord
		if _, err := readRecord(filepath.Join(dir, name), "request", formatRequest, &r); err != nil {
			bad(filepath.Join(dir, name), err)
		}
	}
}
