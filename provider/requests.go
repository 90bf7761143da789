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

func (p *Provider) requestPath(id string) (dir, name string) {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(p.stateDir, "requests"), hex.EncodeToString(sum[:16]) + ".request"
}

// readRequest returns the record of request id, or os.ErrNotExist.
func (p *Provider) readRequest(id string) (*requestRecord, error) {
	dir, name := p.requestPath(id)
	var r requestRecord
	if _, err := readRecord(filepath.Join(dir, name), "request", formatRequest, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkRequest compares a retry's arguments with the recorded ones. It
// returns os.ErrNotExist when id was never recorded.
func (p *Provider) checkRequest(id string, args requestArgs) error {
	r, err := p.readRequest(id)
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
// (findRequestClaim) and compare arguments with checkRequest.
func replay[T any](p *Provider, id string, args requestArgs) (res *T, done bool, err error) {
	if id == "" {
		return nil, false, nil
	}
	r, err := p.readRequest(id)
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
		dir, name := p.requestPath(id)
		return nil, false, &Error{Op: args.Op, Binding: args.Binding, Path: filepath.Join(dir, name), Err: ErrMalformed,
			Reason: "recorded result: " + err.Error()}
	}
	return res, true, nil
}

// recordRequest publishes a request record (no-clobber): the binding of a
// request id to its arguments, and its result when one is given.
func (p *Provider) recordRequest(id string, args requestArgs, result ...any) error {
	r := requestRecord{Format: formatRequest, RequestID: id, Args: args, At: p.now().UTC()}
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
	dir, name := p.requestPath(id)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err = durable.Publish(dir, name, data)
	if errors.Is(err, durable.ErrExists) {
		return p.checkRequest(id, args)
	}
	return err
}

// findRequestClaim returns the claim of binding published by request id,
// also when gc has compacted it (compact.go): a retry then answers as it
// did before.
func (p *Provider) findRequestClaim(binding, id string) (*claimRecord, error) {
	recs, err := p.readBinding(binding)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Claim.RequestID == id {
			return recs[i], nil
		}
	}
	return p.compactedRequestClaim(binding, id)
}
