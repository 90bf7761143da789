package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/internal/registration"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/reservation"
)

const (
	formatRepository = registration.Format
	formatClaim      = "majlis.claim/1"
	formatEvent      = "majlis.event/1"
	formatRequest    = "majlis.request/1"
)

// ValidBinding reports why binding is not a safe name, or nil.
func ValidBinding(binding string) error {
	if !reservation.ValidName(binding, 100, "_", "._-") {
		return &Error{Op: "validate", Binding: strconv.Quote(binding), Err: ErrInvalidBinding,
			Reason: "a binding is 1 to 100 letters, digits, '.', '_' or '-', not starting with '-' or '.'"}
	}
	return nil
}

// Registration is the repository's registration record, written once by
// init (internal/registration holds its format, so that a client can find
// the repository's server without the engine).
type Registration = registration.Registration

// registrationRecord is a Registration as readRecord reads and checks it.
type registrationRecord struct{ *Registration }

func (r registrationRecord) check() error { return r.Check() }

// A Claim is the immutable record published, under the publication lease,
// before a workspace is created. Its digest pins it.
type Claim struct {
	Format       string `json:"format"`
	Binding      string `json:"binding"`
	Seq          int    `json:"seq"` // 1 for the binding's first claim, then 2, ...
	RequestID    string `json:"request_id"`
	Path         string `json:"path"`          // lexical, absolute
	PhysicalPath string `json:"physical_path"` // symlinks resolved
	CommonDir    string `json:"common_dir"`
	RepositoryID string `json:"repository_id"`
	Base         string `json:"base"`     // commit id
	BaseRef      string `json:"base_ref"` // as the caller named it
	Branch       string `json:"branch"`
	// Checkout: Branch existed before the claim and is checked out as it
	// is (never moved or deleted by majlis); Detached: HEAD is detached at
	// Base and Branch is empty. Detached is set only by restore; Checkout
	// by restore and by allocate --checkout.
	Checkout bool `json:"checkout,omitempty"`
	Detached bool `json:"detached,omitempty"`
	// Restore is the salvage ref a restore fills the worktree from.
	Restore string `json:"restore,omitempty"`
	// FromTrash is the trash folder a restore --from-trash moved the
	// workspace back from; DetachedFrom, the branch its HEAD stayed
	// detached from because the branch had moved since the reclaim (the
	// claim is then Detached).
	FromTrash    string `json:"from_trash,omitempty"`
	DetachedFrom string `json:"detached_from,omitempty"`
	// Kind is empty for a workspace's claim; ClaimKindPool for a pooled
	// worktree's (pool.go). A claim with a kind is sealed with format
	// majlis.claim/2, which an older majlis refuses to read (poolformat.go).
	Kind        string       `json:"kind,omitempty"`
	Intent      []string     `json:"intent"`
	OwnerPID    int          `json:"owner_pid"`        // 0: none recorded
	OwnerStart  uint64       `json:"owner_start_time"` // start time of OwnerPID
	AllowNested bool         `json:"allow_nested"`
	Allocator   procid.Owner `json:"allocator"`
	CreatedAt   time.Time    `json:"created_at"`
}

func (c *Claim) check() error {
	switch {
	case ValidBinding(c.Binding) != nil:
		return fmt.Errorf("invalid binding %q", c.Binding)
	case c.Seq < 1:
		return fmt.Errorf("invalid seq %d", c.Seq)
	case c.RequestID == "" || c.Path == "" || c.PhysicalPath == "" || c.CommonDir == "" ||
		c.RepositoryID == "" || c.Base == "" || (c.Branch == "") != c.Detached || c.CreatedAt.IsZero():
		return errors.New("incomplete claim")
	case c.Checkout && c.Detached:
		return errors.New("a claim cannot both check out a branch and detach")
	case checkClaimKind(c) != nil:
		return checkClaimKind(c)
	case c.Detached && c.Restore == "" && c.FromTrash == "" && c.Kind != ClaimKindPool:
		return errors.New("only a restore detaches")
	case !filepath.IsAbs(c.Path) || !filepath.IsAbs(c.PhysicalPath):
		return errors.New("claim paths must be absolute")
	case c.Intent == nil:
		return errors.New(`missing "intent"`)
	}
	return nil
}

// Event kinds, each published at most once per claim.
const (
	EventCreated   = "created"   // the worktree exists; carries its file identity
	EventFailed    = "failed"    // allocation failed and was undone
	EventReleased  = "released"  // the holder is done; files stay
	EventReclaimed = "reclaimed" // the workspace was removed (with attestation)
	EventSalvaged  = "salvaged"  // a reclaim salvaged the work (before any destructive step)
	// EventMoved is published before reclaim moves the workspace into its
	// trash folder; it names that folder and git's admin entry (trash.go).
	EventMoved = "moved"
	// EventChecked: the moved workspace was verified in the trash and
	// salvaged again (its salvage_ref names the second salvage, if any).
	EventChecked = "checked"
	// EventPurging: a purge of a kept trash folder salvaged what changed
	// in it (its salvage_ref, if anything did) and is about to delete it
	// (purge.go); its reason says why it goes.
	EventPurging = "purging"
	// EventPurged: a trash folder kept after the reclaim was deleted (or
	// moved back by restore --from-trash: its reason says so).
	EventPurged = "purged"
)

// An Event is an immutable fact about a claim.
type Event struct {
	Format      string    `json:"format"`
	Kind        string    `json:"kind"`
	Binding     string    `json:"binding"`
	Seq         int       `json:"seq"`
	ClaimDigest string    `json:"claim_digest"`
	At          time.Time `json:"at"`
	Dev         uint64    `json:"dev,omitempty"`
	Ino         uint64    `json:"ino,omitempty"`
	Head        string    `json:"head,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	SalvageRef  string    `json:"salvage_ref,omitempty"`
	// TrashPath (moved, and reclaimed when the trash is kept) is the
	// workspace's trash folder; AdminEntry (moved) is git's admin entry of
	// the workspace; KeepUntil (checked, reclaimed) is when kept trash may
	// go, absent when it is deleted at once.
	TrashPath  string     `json:"trash_path,omitempty"`
	AdminEntry string     `json:"admin_entry,omitempty"`
	KeepUntil  *time.Time `json:"keep_until,omitempty"`
	// Branch (checked, reclaimed) is the branch a kept trash's HEAD was
	// detached from, at Head, so that the trash does not hold it.
	Branch string `json:"branch,omitempty"`
	// AdminKept (reclaimed, of a workspace whose folder was gone) is
	// where git's admin entry of it was moved aside, kept until KeepUntil
	// (entryaside.go).
	AdminKept string `json:"admin_kept,omitempty"`
	// RequestID (salvaged, moved, reclaimed) is the request id of the
	// reclaim that published the event, so that a retry with it after a
	// crash finds its own work (reclaimretry.go).
	RequestID string `json:"request_id,omitempty"`
	// Taker (taken, of a pooled worktree's claim) is the binding whose
	// allocation took the pooled worktree; RequestID is its request id.
	Taker string `json:"taker,omitempty"`
}

func (e *Event) check() error {
	switch e.Kind {
	case EventCreated:
		if e.Ino == 0 {
			return errors.New("created event without file identity")
		}
	case EventMoved:
		if !filepath.IsAbs(e.TrashPath) || !filepath.IsAbs(e.AdminEntry) {
			return errors.New("moved event without its trash folder and admin entry")
		}
	case EventTaken:
		if ValidBinding(e.Taker) != nil || e.RequestID == "" {
			return errors.New("taken event without its taker")
		}
	case EventDraining:
		if !filepath.IsAbs(e.TrashPath) || !filepath.IsAbs(e.AdminEntry) || e.Ino == 0 {
			return errors.New("draining event without its aside folder, admin entry and identity")
		}
	case EventFailed, EventReleased, EventReclaimed, EventSalvaged, EventChecked, EventPurging, EventPurged, EventAside, EventHanded:
	default:
		return fmt.Errorf("unknown event kind %q", e.Kind)
	}
	if ValidBinding(e.Binding) != nil || e.Seq < 1 || e.ClaimDigest == "" || e.At.IsZero() {
		return errors.New("incomplete event")
	}
	return nil
}

// claimRecord is a claim with the events published for it.
type claimRecord struct {
	Claim  Claim
	Digest string
	Events map[string]*Event
	// damage is set on the stand-ins for a damaged binding's workspaces
	// (damage.go): only Binding, Path and PhysicalPath are known.
	damage *Damage
}

func (r *claimRecord) has(kind string) bool { return r.Events[kind] != nil }

// live reports whether the claim still stands for a workspace (or an
// allocation in progress): neither failed nor reclaimed.
func (r *claimRecord) live() bool {
	return !r.has(EventFailed) && !r.has(EventReclaimed) && !r.has(EventHanded)
}

func (br *bindingRecords) Dir(binding string) string {
	return filepath.Join(br.state, "claims", binding)
}

func claimName(seq int, suffix string) string { return fmt.Sprintf("%06d.%s", seq, suffix) }

// isClaimName reports whether name is claimName(seq, suffix), without
// making it: the claims index checks a few thousand names each time it
// is read.
func isClaimName(name string, seq int, suffix string) bool {
	if seq < 0 || seq > 999999 {
		return name == claimName(seq, suffix)
	}
	if len(name) != 7+len(suffix) || name[6] != '.' || name[7:] != suffix {
		return false
	}
	for i, d := 0, 100000; d > 0; i, d = i+1, d/10 {
		if name[i] != byte('0'+seq/d%10) {
			return false
		}
	}
	return true
}

// Current returns the binding's latest live claim, or ErrNotFound.
func (br *bindingRecords) Current(op, binding string) (*claimRecord, error) {
	if err := ValidBinding(binding); err != nil {
		return nil, err
	}
	recs, err := br.Binding(binding)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].live() && recs[i].has(EventCreated) && !recs[i].isPool() {
			return recs[i], nil
		}
	}
	return nil, &Error{Op: op, Binding: binding, Err: ErrNotFound,
		Details: map[string]any{"not_found": "workspace"}}
}

// Binding reads every claim of binding, oldest first. Files it does not
// recognise refuse: the inventory must be fully understood.
func (br *bindingRecords) Binding(binding string) ([]*claimRecord, error) {
	recs, err := br.readBindingRecords(binding)
	var pe *Error
	if errors.Is(err, ErrMalformed) && errors.As(err, &pe) && pe.Hint == "" {
		pe.Binding, pe.Hint = binding, damageHint(binding)
	}
	return recs, err
}

func (br *bindingRecords) readBindingRecords(binding string) ([]*claimRecord, error) {
	recs, _, err := br.readBindingFiles(binding)
	return recs, err
}

// readBindingFiles reads binding's records from their files and returns
// them with what the claims index records of them: the folder's and each
// file's identity, taken before it was read (nil when they cannot be
// taken, or the folder does not exist).
//
// A record listed in the folder but gone when it is read means the folder
// was swapped meanwhile (gc compacts a binding's records by exchanging its
// folder for one without the old records, compact.go): the folder is read
// again, as it is now.
func (br *bindingRecords) readBindingFiles(binding string) ([]*claimRecord, *indexBinding, error) {
	for attempt := 1; ; attempt++ {
		recs, ix, err := readClaimsFolder(br.Dir(binding), binding)
		if err != nil && errors.Is(err, os.ErrNotExist) && attempt < 4 {
			continue
		}
		return recs, ix, err
	}
}

// readClaimsFolder reads the records of binding in dir: its claims
// folder, or a folder of its compacted records.
func readClaimsFolder(dir, binding string) ([]*claimRecord, *indexBinding, error) {
	ix := &indexBinding{Binding: binding}
	var err error
	if ix.Dir, err = lstatKey(dir); err != nil {
		ix = nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &Error{Op: "read", Binding: binding, Path: dir, Err: err}
	}
	bySeq := map[int]*claimRecord{}
	var events []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			continue // a record being published (or a crashed writer's leftover)
		}
		seqStr, kind, ok := strings.Cut(name, ".")
		seq, err := strconv.Atoi(seqStr)
		if !ok || err != nil || seq < 1 || len(seqStr) != 6 {
			return nil, nil, &Error{Op: "read", Binding: binding, Path: filepath.Join(dir, name), Err: ErrMalformed,
				Reason: "unexpected file in the claims folder", Hint: "move it out of the majlis state folder"}
		}
		if kind != "claim" {
			events = append(events, name)
			continue
		}
		rec := &claimRecord{Events: map[string]*Event{}}
		path := filepath.Join(dir, name)
		var key statKey
		if rec.Digest, key, err = readRecordKeyed(path, "claim", formatClaim, &rec.Claim); err != nil {
			return nil, nil, err
		}
		if rec.Claim.Binding != binding || rec.Claim.Seq != seq {
			return nil, nil, &Error{Op: "read", Binding: binding, Path: path, Err: ErrMalformed,
				Reason: fmt.Sprintf("claim names %s #%d", rec.Claim.Binding, rec.Claim.Seq)}
		}
		bySeq[seq] = rec
		if key == (statKey{}) {
			ix = nil
		}
		if ix != nil {
			c := rec.Claim
			ix.Files = append(ix.Files, indexFile{Name: name, Key: key, Digest: rec.Digest, Claim: &c})
		}
	}
	for _, name := range events {
		path := filepath.Join(dir, name)
		seqStr, kind, _ := strings.Cut(name, ".")
		seq, _ := strconv.Atoi(seqStr)
		rec := bySeq[seq]
		var ev Event
		_, key, err := readRecordKeyed(path, "event", formatEvent, &ev)
		if err != nil {
			return nil, nil, err
		}
		if rec == nil || ev.Kind != kind || ev.Seq != seq || ev.Binding != binding || ev.ClaimDigest != rec.Digest {
			return nil, nil, &Error{Op: "read", Binding: binding, Path: path, Err: ErrMalformed,
				Reason: "event does not match its claim"}
		}
		rec.Events[kind] = &ev
		if key == (statKey{}) {
			ix = nil
		}
		if ix != nil {
			e := ev
			ix.Files = append(ix.Files, indexFile{Name: name, Key: key, Event: &e})
		}
	}
	return sortedRecords(bySeq), ix, nil
}

// sortedRecords returns a binding's records, oldest first.
func sortedRecords(bySeq map[int]*claimRecord) []*claimRecord {
	out := make([]*claimRecord, 0, len(bySeq))
	for _, r := range bySeq {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Claim.Seq < out[j].Claim.Seq })
	return out
}

// Bindings lists the bindings that have a claims folder.
func (br *bindingRecords) Bindings() ([]string, error) {
	dir := filepath.Join(br.state, "claims")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Op: "list", Path: dir, Err: err}
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || ValidBinding(e.Name()) != nil {
			return nil, &Error{Op: "list", Path: filepath.Join(dir, e.Name()), Err: ErrMalformed,
				Reason: "unexpected entry in the claims folder", Hint: "move it out of the majlis state folder"}
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// All reads every binding's claims, concurrently (the work is
// small file reads, which overlap well), and returns them in binding
// order. The first error, in binding order, wins: a malformed record
// anywhere refuses the whole inventory.
func (br *bindingRecords) All() ([][]*claimRecord, error) {
	_, out, errs, err := br.Each()
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Each reads every binding's claims, concurrently, and
// returns each binding's records or error, in binding order. A binding the
// claims index holds unchanged is taken from it (records_index.go); when any
// was read from its records, a new index is written.
func (br *bindingRecords) Each() ([]string, [][]*claimRecord, []error, error) {
	return br.EachThrough(br.Index)
}

// EachFromRecords is Each from the records alone, never
// the index: the answer when anything is in doubt.
func (br *bindingRecords) EachFromRecords() ([]string, [][]*claimRecord, []error, error) {
	return br.EachThrough(func() map[string]*indexBinding { return nil })
}

// indexSlack is how many bindings readers read from their records, the
// index not holding them as they are, before one writes a new index.
// Writing it costs about as much as reading thirty bindings from their
// records (each allocation, release or reclaim changes one binding), so a
// few changed bindings are read from their records until they are worth
// a new index. A missing or unreadable index is written by the first
// reader.
func indexSlack(bindings int) int { return 16 + bindings/64 }

// staleInIndex counts the bindings the index does not hold as they are:
// read from their records (or damaged), and gone since it was written.
func staleInIndex(index map[string]*indexBinding, bindings []string, fresh []*indexBinding) int {
	stale, held := 0, 0
	for i, b := range bindings {
		ix := index[b]
		if ix != nil {
			held++
		}
		if fresh[i] == nil || ix != fresh[i] {
			stale++
		}
	}
	return stale + len(index) - held
}

func (br *bindingRecords) EachThrough(loadIndex func() map[string]*indexBinding) ([]string, [][]*claimRecord, []error, error) {
	// A new index begins (its racy time is taken) before the first binding
	// is read from its records, and only then. One that began and is not
	// written is removed at once (defer): a listing leaves nothing behind.
	started, written := false, false
	start := sync.OnceValues(func() (*os.File, int64) {
		started = true
		return br.startClaimsIndex()
	})
	defer func() {
		if started && !written {
			if tmp, _ := start(); tmp != nil {
				discardClaimsIndex(tmp)
			}
		}
	}()
	bindings, err := br.Bindings()
	if err != nil {
		return nil, nil, nil, err
	}
	index := loadIndex()
	keys := openKeyReader(filepath.Join(br.state, "claims"))
	defer keys.close()
	out := make([][]*claimRecord, len(bindings))
	errs := make([]error, len(bindings))
	fresh := make([]*indexBinding, len(bindings))
	workers.Each(len(bindings), 2, func(i int) {
		b := bindings[i]
		if ix := index[b]; ix != nil {
			if recs, ok := ix.records(keys); ok {
				out[i], fresh[i] = recs, ix
				return
			}
		}
		start()
		out[i], fresh[i], errs[i] = br.readBindingFiles(b)
		if errs[i] != nil {
			fresh[i] = nil
			var pe *Error
			if errors.Is(errs[i], ErrMalformed) && errors.As(errs[i], &pe) && pe.Hint == "" {
				pe.Binding, pe.Hint = b, damageHint(b)
			}
		}
	})
	if stale := staleInIndex(index, bindings, fresh); stale > 0 && (br.eagerIndex || index == nil || stale > indexSlack(len(bindings))) {
		if tmp, racy := start(); tmp != nil {
			written = true                            // writeClaimsIndex removes it, whatever happens
			_ = br.writeClaimsIndex(tmp, racy, fresh) // derived state: a failure only costs the next reader time
		}
	}
	return bindings, out, errs, nil
}
