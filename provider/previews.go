package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/envvar"
)

// Preview summaries: each preview of a reclaim leaves what it showed in
// <state>/previews/<binding>/<hex>.preview, so that a --confirm of a
// digest that no longer matches can say what changed since (files, peers,
// HEAD), not only that something did. They are kept for a while only
// (previewKeep per binding, none older than previewMaxAge) and forgotten
// when the binding is reclaimed.
//
// A summary is information, never authority: it is read only to word the
// refusal of a stale digest, after the digests were compared. A missing,
// damaged or foreign summary makes that message less precise and changes
// nothing else.

const (
	formatPreview = "majlis.preview/1"

	previewKeep       = 8              // summaries kept per binding, newest first
	previewMaxAge     = 24 * time.Hour // older ones are pruned
	previewMaxEntries = 2000           // files and peers listed by name; beyond, counts only
)

// A previewSummary is the sealed record of one preview.
type previewSummary struct {
	Format          string        `json:"format"`
	Digest          string        `json:"digest"`
	Binding         string        `json:"binding"`
	At              time.Time     `json:"at"`
	ClaimDigest     string        `json:"claim_digest"`
	Branch          string        `json:"branch"`
	Head            string        `json:"head"`
	Released        bool          `json:"released"`
	AdminEntry      string        `json:"admin_entry"` // git's administrative entry of the workspace
	Pinned          bool          `json:"pinned"`      // it carries majlis's pin
	DirtySubmodules []string      `json:"dirty_submodules"`
	Files           []summaryFile `json:"files"`       // sorted by path; at most previewMaxEntries
	FilesTotal      int           `json:"files_total"` // every status entry, ignored files included
	Peers           []Peer        `json:"peers"`       // at most previewMaxEntries
	PeersTotal      int           `json:"peers_total"`
}

// A summaryFile is one path of the workspace's status as the preview saw it.
type summaryFile struct {
	Path  string `json:"path"`
	State string `json:"state"` // untracked, ignored, conflicted, "tracked XY" (git status letters) or "special TYPE" (a FIFO, socket or device)
	From  string `json:"from,omitempty"`
}

func (s *previewSummary) check() error {
	switch {
	case CheckDigest(s.Digest) != nil:
		return errors.New("invalid digest")
	case ValidBinding(s.Binding) != nil:
		return errors.New("invalid binding")
	case s.At.IsZero():
		return errors.New("no time")
	case len(s.Files) > previewMaxEntries || len(s.Peers) > previewMaxEntries:
		return errors.New("too many entries")
	case s.FilesTotal < len(s.Files) || s.PeersTotal < len(s.Peers):
		return errors.New("totals smaller than the lists")
	}
	for _, f := range s.Files {
		if f.Path == "" || f.State == "" {
			return errors.New("a file without path or state")
		}
	}
	return nil
}

// decodePreviewSummary verifies and decodes a preview summary record.
func decodePreviewSummary(data []byte) (*previewSummary, error) {
	var s previewSummary
	if _, err := unseal(data, "preview", formatPreview, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func summarize(pv *Preview, at time.Time) *previewSummary {
	s := &previewSummary{Format: formatPreview, Digest: pv.Digest, Binding: pv.Binding, At: at.UTC(),
		ClaimDigest: pv.ClaimDigest, Branch: pv.Branch, Head: pv.Head, Released: pv.Released,
		AdminEntry: pv.AdminEntry.Path, Pinned: pv.AdminEntry.Pinned,
		DirtySubmodules: nonNil(pv.Salvage.DirtySubmodules), Files: []summaryFile{}, Peers: []Peer{}}
	if pv.status != nil {
		s.FilesTotal = len(pv.status.Entries)
		for _, e := range pv.status.Entries {
			s.Files = append(s.Files, summaryFile{Path: e.Path, State: entryState(e), From: e.OrigPath})
		}
		// Special files git does not report, which the reclaim deletes.
		s.FilesTotal += pv.SpecialFiles
		for _, f := range pv.SpecialPaths {
			s.Files = append(s.Files, summaryFile{Path: f.Path, State: "special " + f.Type})
		}
		sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
		if len(s.Files) > previewMaxEntries {
			s.Files = s.Files[:previewMaxEntries]
		}
	}
	s.PeersTotal = len(pv.Peers)
	s.Peers = append(s.Peers, pv.Peers[:min(len(pv.Peers), previewMaxEntries)]...)
	return s
}

func entryState(e gitops.StatusEntry) string {
	switch e.Kind {
	case gitops.Untracked:
		return "untracked"
	case gitops.Ignored:
		return "ignored"
	case gitops.Unmerged:
		return "conflicted"
	}
	return "tracked " + string([]byte{e.X, e.Y})
}

func (p *Provider) previewsDir(binding string) string {
	return filepath.Join(p.stateDir, "previews", binding)
}

// rememberPreview keeps pv's summary (temp file, fsync, rename) and prunes
// old ones. It is best effort: a preview that cannot be remembered is
// still a valid preview, only a later stale confirm of it is explained
// less precisely.
func (p *Provider) rememberPreview(pv *Preview) {
	dir := p.previewsDir(pv.Binding)
	data, _, err := seal("preview", summarize(pv, p.now()))
	if err != nil || durable.MkdirAll(dir, 0o755) != nil {
		return
	}
	_ = durable.Replace(dir, strings.TrimPrefix(pv.Digest, "sha256:")+".preview", data)
	prunePreviews(dir, p.now())
}

// prunePreviews keeps the previewKeep newest summaries of dir that are
// younger than previewMaxAge, and removes temporary files older than that.
func prunePreviews(dir string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		name string
		mod  time.Time
	}
	var summaries []kept
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		old := now.Sub(fi.ModTime()) > previewMaxAge
		switch {
		case strings.HasPrefix(e.Name(), "."): // an abandoned temporary file, once old
			if old {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		case strings.HasSuffix(e.Name(), ".preview"):
			if old {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			} else {
				summaries = append(summaries, kept{e.Name(), fi.ModTime()})
			}
		}
	}
	sort.Slice(summaries, func(i, j int) bool { return summaries[i].mod.After(summaries[j].mod) })
	for _, s := range summaries[min(len(summaries), previewKeep):] {
		_ = os.Remove(filepath.Join(dir, s.name))
	}
}

// forgetPreviews removes the binding's summaries once it is reclaimed.
func (p *Provider) forgetPreviews(binding string) { _ = os.RemoveAll(p.previewsDir(binding)) }

// A PreviewStaleError refuses a --confirm digest that is not the digest of
// the preview computed now. It wraps an *Error (ErrPreviewStale) and says,
// when the confirmed preview's summary is still kept, what changed since.
type PreviewStaleError struct {
	Err       *Error
	Confirmed string          // the digest given
	Digest    string          // the current preview's digest
	Preview   string          // the confirmed preview's summary: "known", "unknown" (not kept, or never made) or "unreadable"
	Changes   *PreviewChanges // when Preview is "known"
}

func (e *PreviewStaleError) Error() string { return e.Err.Error() }
func (e *PreviewStaleError) Unwrap() error { return e.Err }

// AnnotateDetails adds what changed since the confirmed preview to the
// details of the refusal: the digests and, when the confirmed preview is
// known, the changes.
func (e *PreviewStaleError) AnnotateDetails(d map[string]any) {
	d["confirmed"] = e.Confirmed
	d["digest"] = e.Digest
	d["preview"] = e.Preview
	if e.Changes != nil {
		d["changed"] = e.Changes
	}
}

// PreviewChanges are the differences between a confirmed preview and the
// current one. Lists name what changed; when a preview listed too many
// files (or peers) to name them all, only the counts are compared.
type PreviewChanges struct {
	FilesAdded   []string     `json:"files_added"`   // now to be salvaged or deleted, not then
	FilesRemoved []string     `json:"files_removed"` // then, not now
	FilesChanged []FileChange `json:"files_changed"` // in both, in another state
	FilesListed  bool         `json:"files_listed"`  // false: too many files to compare by name
	PeersAdded   []Peer       `json:"peers_added"`
	PeersRemoved []Peer       `json:"peers_removed"`
	PeersChanged []Peer       `json:"peers_changed"` // now, with the relation that changed
	Counts       struct {
		Files CountChange `json:"files"`
		Peers CountChange `json:"peers"`
	} `json:"counts"`
	Head     *ValueChange `json:"head,omitempty"`
	Branch   *ValueChange `json:"branch,omitempty"`
	Released *ValueChange `json:"released,omitempty"`
	Claim    *ValueChange `json:"claim,omitempty"`
	// AdminEntry is git's administrative entry of the workspace, and
	// Pinned whether majlis's pin is on it.
	AdminEntry *ValueChange `json:"admin_entry,omitempty"`
	Pinned     *ValueChange `json:"pinned,omitempty"`
}

// A FileChange is a path whose state differs between two previews.
type FileChange struct {
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
}

// A CountChange is a count in two previews.
type CountChange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// A ValueChange is a value in two previews.
type ValueChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func diffSummaries(old, cur *previewSummary) *PreviewChanges {
	c := &PreviewChanges{FilesAdded: []string{}, FilesRemoved: []string{}, FilesChanged: []FileChange{},
		PeersAdded: []Peer{}, PeersRemoved: []Peer{}, PeersChanged: []Peer{}}
	c.Counts.Files = CountChange{old.FilesTotal, cur.FilesTotal}
	c.Counts.Peers = CountChange{old.PeersTotal, cur.PeersTotal}
	c.FilesListed = old.FilesTotal == len(old.Files) && cur.FilesTotal == len(cur.Files)
	if c.FilesListed {
		then, now := map[string]summaryFile{}, map[string]summaryFile{}
		for _, f := range old.Files {
			if _, dup := then[f.Path]; !dup {
				then[f.Path] = f
			}
		}
		for _, f := range cur.Files {
			if _, dup := now[f.Path]; dup {
				continue
			}
			now[f.Path] = f
			was, ok := then[f.Path]
			switch {
			case !ok:
				c.FilesAdded = append(c.FilesAdded, f.Path)
			case was != f:
				c.FilesChanged = append(c.FilesChanged, FileChange{f.Path, describeState(was), describeState(f)})
			}
		}
		for _, f := range old.Files {
			if _, ok := now[f.Path]; !ok {
				c.FilesRemoved = append(c.FilesRemoved, f.Path)
				now[f.Path] = f // once
			}
		}
	}
	if old.PeersTotal == len(old.Peers) && cur.PeersTotal == len(cur.Peers) {
		key := func(p Peer) string { return p.Kind + "\x00" + p.Binding + "\x00" + p.Path }
		then, now := map[string]Peer{}, map[string]Peer{}
		for _, p := range old.Peers {
			if _, dup := then[key(p)]; !dup {
				then[key(p)] = p
			}
		}
		for _, p := range cur.Peers {
			if _, dup := now[key(p)]; dup {
				continue
			}
			now[key(p)] = p
			was, ok := then[key(p)]
			switch {
			case !ok:
				c.PeersAdded = append(c.PeersAdded, p)
			case was != p:
				c.PeersChanged = append(c.PeersChanged, p)
			}
		}
		for _, p := range old.Peers {
			if _, ok := now[key(p)]; !ok {
				c.PeersRemoved = append(c.PeersRemoved, p)
				now[key(p)] = p // once
			}
		}
	}
	value := func(from, to string) *ValueChange {
		if from == to {
			return nil
		}
		return &ValueChange{from, to}
	}
	c.Head = value(old.Head, cur.Head)
	c.Branch = value(old.Branch, cur.Branch)
	c.Released = value(fmt.Sprint(old.Released), fmt.Sprint(cur.Released))
	c.Claim = value(old.ClaimDigest, cur.ClaimDigest)
	c.AdminEntry = value(old.AdminEntry, cur.AdminEntry)
	c.Pinned = value(fmt.Sprint(old.Pinned), fmt.Sprint(cur.Pinned))
	return c
}

func describeState(f summaryFile) string {
	if f.From != "" {
		return f.State + " from " + f.From
	}
	return f.State
}

// String says what changed in a few words, naming a few paths and peers.
func (c *PreviewChanges) String() string {
	var parts []string
	names := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		shown := list[:min(len(list), 5)]
		s := fmt.Sprintf("%s %s (%s", nounCount(len(list), "file", "files"), what, strings.Join(shown, ", "))
		if len(list) > len(shown) {
			s += fmt.Sprintf(" and %d more", len(list)-len(shown))
		}
		parts = append(parts, s+")")
	}
	names("added", c.FilesAdded)
	names("no longer there", c.FilesRemoved)
	var changed []string
	for _, f := range c.FilesChanged {
		changed = append(changed, f.Path+": "+f.From+" → "+f.To)
	}
	names("changed", changed)
	if !c.FilesListed && c.Counts.Files.From != c.Counts.Files.To {
		parts = append(parts, fmt.Sprintf("%d files instead of %d", c.Counts.Files.To, c.Counts.Files.From))
	}
	peers := func(what string, list []Peer) {
		for i, p := range list {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("%d more peers %s", len(list)-3, what))
				break
			}
			name := p.Path
			if p.Binding != "" {
				name = p.Binding + " at " + p.Path
			}
			parts = append(parts, fmt.Sprintf("peer %s %s %s", p.Kind, name, what))
		}
	}
	peers("added", c.PeersAdded)
	peers("gone", c.PeersRemoved)
	peers("changed", c.PeersChanged)
	if c.Counts.Peers.From != c.Counts.Peers.To && len(c.PeersAdded)+len(c.PeersRemoved) == 0 {
		parts = append(parts, fmt.Sprintf("%d peers instead of %d", c.Counts.Peers.To, c.Counts.Peers.From))
	}
	if c.Head != nil {
		parts = append(parts, fmt.Sprintf("HEAD moved from %s to %s", shortDigest(c.Head.From), shortDigest(c.Head.To)))
	}
	if c.Branch != nil {
		parts = append(parts, fmt.Sprintf("branch %s instead of %s", c.Branch.To, c.Branch.From))
	}
	if c.Released != nil {
		parts = append(parts, "released: "+c.Released.To)
	}
	if c.Claim != nil {
		parts = append(parts, "the workspace's claim changed")
	}
	if c.AdminEntry != nil {
		parts = append(parts, fmt.Sprintf("git's entry of the workspace is %s instead of %s", c.AdminEntry.To, c.AdminEntry.From))
	}
	if c.Pinned != nil {
		parts = append(parts, "pinned: "+c.Pinned.To)
	}
	if len(parts) == 0 {
		return "nothing the preview lists by name differs (the workspace's records changed)"
	}
	return strings.Join(parts, "; ")
}

func nounCount(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// staleError refuses a confirmed digest that is not pv's, saying what
// changed since the confirmed preview when its summary is kept.
func (p *Provider) staleError(confirmed string, pv *Preview) error {
	e := &PreviewStaleError{Confirmed: confirmed, Digest: pv.Digest, Preview: "unknown",
		Err: &Error{Op: "reclaim", Binding: pv.Binding, Path: pv.Path, Err: ErrPreviewStale,
			Hint: "preview again and confirm the new digest"}}
	path := filepath.Join(p.previewsDir(pv.Binding), strings.TrimPrefix(confirmed, "sha256:")+".preview")
	data, err := readRegularFile(path)
	if errors.Is(err, os.ErrNotExist) {
		e.Err.Reason = fmt.Sprintf("the preview %s is unknown or expired (summaries are kept for %s, the last %d per workspace), so what changed cannot be said",
			shortDigest(confirmed), envvar.Format(previewMaxAge), previewKeep)
	} else {
		var old *previewSummary
		if err == nil {
			old, err = decodePreviewSummary(data)
		}
		if err == nil && (old.Digest != confirmed || old.Binding != pv.Binding) {
			err = errors.New("it is the summary of another preview")
		}
		if err != nil {
			e.Preview = "unreadable"
			e.Err.Reason = fmt.Sprintf("the preview %s is not the current one, and its kept summary %s is unreadable (%v), so what changed cannot be said",
				shortDigest(confirmed), path, err)
		} else {
			e.Preview = "known"
			e.Changes = diffSummaries(old, summarize(pv, p.now()))
			e.Err.Reason = fmt.Sprintf("compared with the preview %s of %s: %s", shortDigest(confirmed), old.At.Format(time.RFC3339), e.Changes)
		}
	}
	e.Err.Reason += "; the preview's digest is now " + pv.Digest
	return e
}
