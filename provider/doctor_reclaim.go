package provider

import (
	"fmt"
	"os"
	"strings"

	"github.com/majlis-dev/majlis/pathid"
)

// FindingReclaimInterrupted: a live workspace is not at its path because
// a reclaim moved it into its trash folder (or deleted it there) and was
// interrupted; the same reclaim, retried, finishes it.
const FindingReclaimInterrupted = "reclaim_interrupted"

// interruptedReclaim reports, for a live claim whose reclaim recorded a
// move, where the workspace is and how to finish its reclaim, instead of
// calling its directory gone. ok is false when nothing says a reclaim was
// under way (no moved event), or the workspace is back at its path.
func (p *Provider) interruptedReclaim(r *claimRecord) (f Finding, ok bool) {
	mv := r.Events[EventMoved]
	if mv == nil {
		return Finding{}, false
	}
	c := r.Claim
	if _, err := os.Lstat(c.Path); err == nil {
		return Finding{}, false // never moved, or moved back: judged as any workspace
	}
	request := mv.RequestID
	if held, err := p.leases.Inspect(reclaimPrefix + c.Binding); err == nil && held.AuthorityDigest == r.Digest && held.Metadata["request_id"] != "" {
		request = held.Metadata["request_id"]
	}
	resume := "majlis workspace reclaim " + c.Binding + " --yes"
	if request != "" {
		resume += " --request-id " + request
	}
	f = Finding{Code: FindingReclaimInterrupted, Severity: SeverityWarning, Binding: c.Binding, Path: mv.TrashPath}
	want := createdIdentity(r)
	id, err := pathid.Lstat(mv.TrashPath)
	switch {
	case err == nil && id.Dev == want.Dev && id.Ino == want.Ino:
		f.Message = fmt.Sprintf("workspace %s is waiting in its trash folder %s: a reclaim (request %s) moved it there and was interrupted; its work is in it, and on the salvage refs it made",
			c.Binding, mv.TrashPath, orNone(request))
		f.Fix = resume + " finishes the reclaim (it checks the folder, salvages it again, then deletes it); the salvage refs are refs/majlis/salvage/" + c.Binding + "/*"
	case err == nil:
		f.Severity = SeverityError
		f.Message = fmt.Sprintf("a reclaim of workspace %s (request %s) recorded its move into %s, but another directory is there", c.Binding, orNone(request), mv.TrashPath)
		f.Fix = "the reclaim refuses (identity_drift); inspect " + mv.TrashPath + " and " + c.Path + ": majlis will not act on a directory it did not allocate"
	default:
		f.Message = fmt.Sprintf("a reclaim of workspace %s (request %s) deleted its trash folder %s and was interrupted before it recorded the end", c.Binding, orNone(request), mv.TrashPath)
		f.Fix = resume + " records the end of the reclaim"
	}
	f.Message = strings.TrimSpace(f.Message)
	return f, true
}

func orNone(s string) string {
	if s == "" {
		return "id unknown"
	}
	return s
}
