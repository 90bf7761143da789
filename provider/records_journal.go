package provider

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
)

// The claims journal, <state>/claims.journal, lets the peer rechecks that
// reclaim runs before every destructive step read one file instead of every
// binding's folder. It is durable state, never a cache, and it only ever
// errs on the side of more peers:
//
//   - A claim's line is appended and fsynced BEFORE the claim is
//     published (under the publication lease), so every published claim is
//     in the journal. A crash in between leaves a line without a claim.
//   - A failed or reclaimed line is appended AFTER its event is published,
//     so the journal never calls a workspace gone that its records do not.
//   - The journal is created only by the Init that registers the
//     repository, before any claim exists, and appends never create it: a
//     journal that is missing, torn or malformed, or that lacks a binding
//     the claims folder has, is not used.
//
// So the set of workspaces the journal names as possibly present is a
// superset of the set the claim records name. A check that finds no
// overlap among them has proven none exists; any overlap it finds, or any
// doubt about the journal, sends the caller to the full check, which
// decides from the claim records themselves.
const journalName = "claims.journal"

// Journal line kinds.
const (
	journalClaim     = "claim"
	journalFailed    = "failed"
	journalReclaimed = "reclaimed"
)

// journalMagic starts every line: the format and its version.
const journalMagic = "majlis-journal-1"

var errJournalUnusable = errors.New("claims journal unusable")

// errJournalTorn is a journal whose last line is not whole: a crashed
// appender's, or one being appended at this moment (a reader can see a
// write in progress).
var errJournalTorn = fmt.Errorf("%w: torn last line", errJournalUnusable)

// A journalEntry is one line of the journal.
type journalEntry struct {
	Kind    string
	Binding string
	Seq     int
	Digest  string // the claim's digest
	Path    string // journalClaim: the claimed path
	// journalReclaimed: the identity the workspace's directory had (from
	// its created event), for the absence attestation; zero if never created.
	Dev, Ino uint64
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// encode renders e as one line: tab-separated fields, the path quoted, and
// a CRC-32C of everything before it, so a torn or altered line is seen.
func (e journalEntry) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t", journalMagic, e.Kind, e.Binding, e.Seq, e.Digest, e.Dev, e.Ino, strconv.Quote(e.Path))
	fmt.Fprintf(&b, "%08x\n", crc32.Checksum(b.Bytes(), crcTable))
	return b.Bytes()
}

// decodeJournal parses a whole journal. Every line must be complete,
// checksummed and valid; anything else is errJournalUnusable, naming the
// line.
func decodeJournal(data []byte) ([]journalEntry, error) {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, errJournalTorn
	}
	var out []journalEntry
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		e, err := decodeJournalLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", errJournalUnusable, n, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func decodeJournalLine(line []byte) (journalEntry, error) {
	var e journalEntry
	k := bytes.LastIndexByte(line, '\t')
	if k < 0 || len(line)-k-1 != 8 {
		return e, errors.New("no checksum")
	}
	sum, err := strconv.ParseUint(string(line[k+1:]), 16, 32)
	if err != nil || uint32(sum) != crc32.Checksum(line[:k+1], crcTable) {
		return e, errors.New("checksum mismatch")
	}
	f := strings.Split(string(line[:k]), "\t")
	if len(f) != 8 || f[0] != journalMagic {
		return e, errors.New("unknown format")
	}
	e.Kind, e.Binding, e.Digest = f[1], f[2], f[4]
	if e.Seq, err = strconv.Atoi(f[3]); err != nil || e.Seq < 1 {
		return e, errors.New("bad seq")
	}
	if e.Dev, err = strconv.ParseUint(f[5], 10, 64); err != nil {
		return e, errors.New("bad dev")
	}
	if e.Ino, err = strconv.ParseUint(f[6], 10, 64); err != nil {
		return e, errors.New("bad ino")
	}
	if e.Path, err = strconv.Unquote(f[7]); err != nil {
		return e, errors.New("bad path")
	}
	switch {
	case ValidBinding(e.Binding) != nil:
		return e, errors.New("bad binding")
	case !strings.HasPrefix(e.Digest, "sha256:"):
		return e, errors.New("bad digest")
	case e.Kind == journalClaim && !filepath.IsAbs(e.Path):
		return e, errors.New("claim path not absolute")
	case e.Kind != journalClaim && e.Kind != journalFailed && e.Kind != journalReclaimed:
		return e, errors.New("unknown kind")
	}
	return e, nil
}

func (br *bindingRecords) JournalPath() string { return filepath.Join(br.state, journalName) }

// createJournal starts the journal of a freshly registered repository. It
// refuses to start one beside existing claims, which it would not name.
func createJournal(state string) error {
	if _, err := os.Lstat(filepath.Join(state, "claims")); !errors.Is(err, os.ErrNotExist) {
		return nil // claims exist (or cannot be ruled out): run without a journal
	}
	f, err := os.OpenFile(filepath.Join(state, journalName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return durable.SyncDir(state)
}

// appendJournal appends e in one write (O_APPEND, so concurrent appenders
// never interleave), and fsyncs it when sync is set. A repository without
// a journal gets no line: appends never create it.
func (br *bindingRecords) appendJournal(e journalEntry, sync bool) error {
	// O_NONBLOCK: a FIFO in the journal's place must fail the open, not
	// wait for a reader.
	f, err := os.OpenFile(br.JournalPath(), os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, syscall.ENXIO) {
		return &Error{Op: "journal", Path: br.JournalPath(), Reason: errNotRegular.Error(), Err: ErrMalformed}
	}
	if err != nil {
		return &Error{Op: "journal", Path: br.JournalPath(), Err: err}
	}
	if fi, serr := f.Stat(); serr != nil || !fi.Mode().IsRegular() {
		f.Close()
		if serr != nil {
			return &Error{Op: "journal", Path: br.JournalPath(), Err: serr}
		}
		return &Error{Op: "journal", Path: br.JournalPath(), Reason: errNotRegular.Error(), Err: ErrMalformed}
	}
	_, err = f.Write(e.encode())
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &Error{Op: "journal", Path: br.JournalPath(), Err: err}
	}
	return nil
}

// A journalClaimState is what the journal says of one claim.
type journalClaimState struct {
	journalEntry      // the claim line
	Failed, Reclaimed bool
	Dev, Ino          uint64 // from the reclaimed line
}

// Journal returns every claim the journal names, or errJournalUnusable
// when it cannot stand in for the claim records: missing, torn, malformed,
// or lacking a binding that has a record under claims/.
//
// An allocation makes the binding's folder, then appends the claim's
// line, then publishes the claim: a folder that holds no record yet
// names no workspace, and one whose record was published after the
// journal was read is named when it is read again.
func (br *bindingRecords) Journal() ([]*journalClaimState, error) {
	out, named, err := br.readJournalLines()
	if err != nil {
		return nil, err
	}
	bindings, err := br.Bindings()
	if err != nil {
		return nil, err
	}
	for again := false; ; again = true {
		missing := ""
		for _, b := range bindings {
			if !named[b] && br.holdsRecords(b) {
				missing = b
				break
			}
		}
		if missing == "" {
			return out, nil
		}
		if again {
			return nil, fmt.Errorf("%w: binding %s is not in it", errJournalUnusable, missing)
		}
		if out, named, err = br.readJournalLines(); err != nil {
			return nil, err
		}
	}
}

// holdsRecords reports whether binding's folder holds anything but the
// temporary files of records being published (or cannot be read).
func (br *bindingRecords) holdsRecords(binding string) bool {
	entries, err := os.ReadDir(br.Dir(binding))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".tmp") {
			return true
		}
	}
	return false
}

// JournalOf renders the journal the claims imply.
func (br *bindingRecords) JournalOf(all [][]*claimRecord) []byte {
	var b bytes.Buffer
	for _, recs := range all {
		for _, r := range recs {
			b.Write(journalEntry{Kind: journalClaim, Binding: r.Claim.Binding, Seq: r.Claim.Seq, Digest: r.Digest, Path: r.Claim.Path}.encode())
			if r.has(EventFailed) {
				b.Write(journalEntry{Kind: journalFailed, Binding: r.Claim.Binding, Seq: r.Claim.Seq, Digest: r.Digest}.encode())
			}
			if r.has(EventReclaimed) {
				e := journalEntry{Kind: journalReclaimed, Binding: r.Claim.Binding, Seq: r.Claim.Seq, Digest: r.Digest}
				if c := r.Events[EventCreated]; c != nil {
					e.Dev, e.Ino = c.Dev, c.Ino
				}
				b.Write(e.encode())
			}
		}
	}
	return b.Bytes()
}

// RewriteJournal replaces the journal, whole, with the one the claims
// imply. Its caller holds the publication lease, so no claim is being
// published meanwhile.
func (br *bindingRecords) RewriteJournal(all [][]*claimRecord, opts ...durable.Option) error {
	return durable.Replace(br.state, journalName, br.JournalOf(all), opts...)
}

// readJournalLines reads and decodes the journal: its claims, and the
// bindings it names. A line being appended is whole a moment later (a
// crashed appender's stays torn): a torn last line is read again a few
// times.
func (br *bindingRecords) readJournalLines() ([]*journalClaimState, map[string]bool, error) {
	out, named, err := br.readJournalLinesOnce()
	for i := 0; errors.Is(err, errJournalTorn) && i < 10; i++ {
		time.Sleep(time.Millisecond)
		out, named, err = br.readJournalLinesOnce()
	}
	return out, named, err
}

func (br *bindingRecords) readJournalLinesOnce() ([]*journalClaimState, map[string]bool, error) {
	data, err := readRegularFile(br.JournalPath())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errJournalUnusable, err)
	}
	entries, err := decodeJournal(data)
	if err != nil {
		return nil, nil, err
	}
	// A claim is known by its digest too: an allocation killed after
	// its line, before its claim was published, leaves a line whose
	// claim never existed, and its retry appends the line of the claim
	// it publishes, of the same seq (another digest: another time).
	// Both stay: a line without a claim only names one more possible
	// peer, which the full check then rules out from the records.
	type key struct {
		binding string
		seq     int
		digest  string
	}
	byKey := make(map[key]*journalClaimState, len(entries))
	named := map[string]bool{}
	var out []*journalClaimState
	for _, e := range entries {
		k := key{e.Binding, e.Seq, e.Digest}
		if e.Kind == journalClaim {
			if byKey[k] != nil {
				return nil, nil, fmt.Errorf("%w: %s #%d claimed twice", errJournalUnusable, e.Binding, e.Seq)
			}
			s := &journalClaimState{journalEntry: e}
			byKey[k] = s
			named[e.Binding] = true
			out = append(out, s)
			continue
		}
		s := byKey[k]
		if s == nil {
			return nil, nil, fmt.Errorf("%w: %s line for %s #%d without its claim", errJournalUnusable, e.Kind, e.Binding, e.Seq)
		}
		switch e.Kind {
		case journalFailed:
			s.Failed = true
		case journalReclaimed:
			s.Reclaimed, s.Dev, s.Ino = true, e.Dev, e.Ino
		}
	}
	return out, named, nil
}
