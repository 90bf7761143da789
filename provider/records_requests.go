package provider

// The request-id store. Every mutating operation takes a request id: a
// retry with the same id and the same arguments returns the recorded
// result and does nothing again (replay), or resumes what an interrupted
// call left (allocate, begin and restore find the claim the id
// published); the same id with other arguments refuses. A record binds
// the id to its arguments and, once the operation finished, its result:
// <state>/requests/<hash of the id>.request, sealed and published with
// the no-clobber link, never overwritten.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
)

// autoRequestPrefix marks request ids majlis made up; they bind no
// arguments (nobody else knows them) but still let an interrupted
// allocation be resumed.
const autoRequestPrefix = "auto-"

// requestArgs is what a request id is bound to.
type requestArgs struct {
	Op          string   `json:"op"`
	Binding     string   `json:"binding"`
	Base        string   `json:"base,omitempty"`
	Branch      string   `json:"branch,omitempty"`
	Path        string   `json:"path,omitempty"`
	Intent      []string `json:"intent,omitempty"`
	OwnerPID    int      `json:"owner_pid,omitempty"`
	AllowNested bool     `json:"allow_nested,omitempty"`
	Message     string   `json:"message,omitempty"`
	Shared      bool     `json:"shared,omitempty"` // begin
	TTL         string   `json:"ttl,omitempty"`    // begin
	Checkout    bool     `json:"checkout,omitempty"`
	Ports       int      `json:"ports,omitempty"` // begin

	Confirm string `json:"confirm,omitempty"` // doctor --repair: the digest, or "yes"
}

type requestRecord struct {
	Format    string          `json:"format"`
	RequestID string          `json:"request_id"`
	Args      requestArgs     `json:"args"`
	Result    json.RawMessage `json:"result,omitempty"`
	At        time.Time       `json:"at"`
}

func (r *requestRecord) check() error {
	if r.RequestID == "" || r.Args.Op == "" || r.At.IsZero() {
		return errors.New("incomplete request record")
	}
	return nil
}

func (br *bindingRecords) RequestPath(id string) (dir, name string) {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(br.state, "requests"), hex.EncodeToString(sum[:16]) + ".request"
}

// Request returns the record of request id, or os.ErrNotExist.
func (br *bindingRecords) Request(id string) (*requestRecord, error) {
	dir, name := br.RequestPath(id)
	var r requestRecord
	if _, err := readRecord(filepath.Join(dir, name), "request", formatRequest, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CheckRequest compares a retry's arguments with the recorded ones. It
// returns os.ErrNotExist when id was never recorded.
func (br *bindingRecords) CheckRequest(id string, args requestArgs) error {
	r, err := br.Request(id)
	if err != nil {
		return err
	}
	return r.matches(id, args)
}

// matches refuses (ErrRequestConflict) a record of id bound to other
// arguments than args.
func (r *requestRecord) matches(id string, args requestArgs) error {
	a, _ := json.Marshal(r.Args)
	b, _ := json.Marshal(args)
	if r.RequestID != id || string(a) != string(b) {
		return &Error{Op: args.Op, Binding: args.Binding, Err: ErrRequestConflict,
			Reason: fmt.Sprintf("request id %q was used for %s", id, a), Hint: "use a new request id"}
	}
	return nil
}

// replay returns the recorded result of request id (done) when a call
// with the same arguments already finished, and nothing (not done) when
// id is empty or was never recorded. An id recorded with other arguments
// refuses (ErrRequestConflict), as does a record that cannot be read or
// decoded into a T (ErrMalformed). Operations that resume instead of
// replaying (allocate, begin, restore) find their claim by request id
// (RequestClaim) and compare arguments with CheckRequest.
func replay[T any](br *bindingRecords, id string, args requestArgs) (res *T, done bool, err error) {
	if id == "" {
		return nil, false, nil
	}
	r, err := br.Request(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := r.matches(id, args); err != nil {
		return nil, false, err
	}
	res = new(T)
	if err := json.Unmarshal(r.Result, res); err != nil {
		dir, name := br.RequestPath(id)
		return nil, false, &Error{Op: args.Op, Binding: args.Binding, Path: filepath.Join(dir, name), Err: ErrMalformed,
			Reason: "recorded result: " + err.Error()}
	}
	return res, true, nil
}

// RecordRequest publishes a request record (no-clobber): the binding of a
// request id to its arguments, and its result when one is given.
func (br *bindingRecords) RecordRequest(id string, args requestArgs, result ...any) error {
	r := requestRecord{Format: formatRequest, RequestID: id, Args: args, At: br.now().UTC()}
	if len(result) > 0 {
		raw, err := json.Marshal(result[0])
		if err != nil {
			return err
		}
		r.Result = raw
	}
	data, _, err := seal("request", &r)
	if err != nil {
		return err
	}
	dir, name := br.RequestPath(id)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err = durable.Publish(dir, name, data)
	if errors.Is(err, durable.ErrExists) {
		return br.CheckRequest(id, args)
	}
	return err
}

// RequestClaim returns the claim of binding published by request id,
// also when gc has compacted it (compact.go): a retry then answers as it
// did before.
func (br *bindingRecords) RequestClaim(binding, id string) (*claimRecord, error) {
	recs, err := br.Binding(binding)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Claim.RequestID == id {
			return recs[i], nil
		}
	}
	return br.compactedRequestClaim(binding, id)
}

// compactedRequestClaim returns the compacted claim of binding that
// request id published, or nil. A request id that majlis did not make up
// published a claim only if it was recorded (publishClaim records it
// first), so only those, and ids majlis made up, are looked for: a new
// allocation does not read the binding's compacted records.
func (br *bindingRecords) compactedRequestClaim(binding, id string) (*claimRecord, error) {
	dir := br.compactedDir(binding)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Op: "read", Binding: binding, Path: dir, Err: err}
	}
	if !strings.HasPrefix(id, autoRequestPrefix) {
		if _, err := br.Request(id); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if !entries[i].IsDir() {
			continue
		}
		folder := filepath.Join(dir, entries[i].Name())
		names, err := filepath.Glob(filepath.Join(folder, "[0-9]*.claim"))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			var c Claim
			if _, err := readRecord(name, "claim", formatClaim, &c); err != nil {
				return nil, err
			}
			if c.RequestID != id {
				continue
			}
			recs, _, err := readClaimsFolder(folder, binding)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if r.Claim.Seq == c.Seq {
					return r, nil
				}
			}
		}
	}
	return nil, nil
}
