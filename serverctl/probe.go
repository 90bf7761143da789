package serverctl

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/internal/registration"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// State is what a probe found.
type State string

// The states of a probe.
const (
	NotRunning      State = "not-running"      // no server lease
	Starting        State = "starting"         // the leaseholder answers as itself but is not ready yet
	Running         State = "running"          // the leaseholder answers as itself and is ready
	Unresponsive    State = "unresponsive"     // the leaseholder is alive but does not answer
	StaleLease      State = "stale-lease"      // the lease's owner is proven dead
	Foreign         State = "foreign"          // the recorded port answers, but not as the leaseholder
	VersionMismatch State = "version-mismatch" // the leaseholder answers as itself, in another version
)

// A Status is the result of a probe. Its fields other than State and
// Reason come from the lease (and the server's answer, when it gave one).
type Status struct {
	State      State  `json:"status"`
	Reason     string `json:"reason"`
	Repository string `json:"repository"`
	Address    string `json:"address"`
	PID        int    `json:"pid"`
	StartTime  uint64 `json:"start_time"`
	Generation uint64 `json:"generation"`
	Version    string `json:"version"`
	API        string `json:"api"`
	Ready      bool   `json:"ready"`
	Busy       int    `json:"busy"`
	Owner      string `json:"owner"` // the lease owner's liveness: alive, dead or unknown
	Lease      string `json:"lease"` // the lease file's path
}

// A Target names the repository whose server to find.
type Target struct {
	StateDir   string // <git-common-dir>/majlis
	Repository string // the repository id
}

// Locate finds the registered repository whose worktree contains dir ("" is
// the working directory) without running git or opening the repository:
// from dir up to its .git, the repository's common git directory, and the
// registration there, which must name that directory
// (internal/registration). The command line, which opens the repository
// anyway, makes its Target from the provider it opened.
func Locate(dir string) (Target, error) {
	state, reg, err := registration.Find(dir)
	if err != nil {
		return Target{}, err
	}
	return Target{StateDir: state, Repository: reg.ID}, nil
}

// ProbeOptions configure Probe.
type ProbeOptions struct {
	Timeout time.Duration // of the liveness request; zero means 1s
	Version string        // the caller's majlis version; "" accepts any
}

// Probe reads the server lease and asks the liveness route of the address
// it records, on a fresh connection with a fresh nonce, whether the
// leaseholder answers there. Every comparison must hold for Running:
// repository id, pid, start time, holder, the token's digest and the
// nonce's HMAC (constant time), and a live process with that pid and start
// time. It changes nothing.
func Probe(ctx context.Context, t Target, o ProbeOptions) (*Status, error) {
	leases, err := OpenLeases(t.StateDir)
	if err != nil {
		return nil, err
	}
	defer leases.Close()
	st, _, err := probe(ctx, leases, t, o)
	if err == nil && (st.State == NotRunning || st.State == StaleLease) && startUnderWay(leases) {
		st.State, st.Reason = Starting, "a 'majlis server start' is under way (it holds the start lock); before it: "+st.Reason
	}
	return st, err
}

// startUnderWay reports whether a starter holds the start lock. The test
// takes the lock for an instant when it is free; a starter then retries.
func startUnderWay(leases *reservation.Dir) bool {
	f, err := os.OpenFile(filepath.Join(leases.Path(), startLockName), os.O_RDWR, 0)
	if err != nil {
		return false // no lock file: nobody ever started a server here
	}
	defer f.Close() // drops the lock, if this took it
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
}

// probe is Probe on an open lease folder; it also returns the lease record.
func probe(ctx context.Context, leases *reservation.Dir, t Target, o ProbeOptions) (*Status, *reservation.Record, error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	a, err := leases.Assess(Resource)
	if errors.Is(err, reservation.ErrNotFound) {
		return &Status{State: NotRunning, Reason: "no server lease", Repository: t.Repository,
			Lease: leaseDir(t.StateDir) + "/" + Resource + ".lease"}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	rec := a.Record
	st := &Status{Repository: rec.Metadata[metaRepository], Address: rec.Metadata[metaAddress],
		PID: rec.Owner.PID, StartTime: rec.Owner.StartTime, Generation: rec.Generation,
		Version: rec.Metadata[metaVersion], API: rec.Metadata[metaAPI], Owner: string(a.Liveness), Lease: a.Path}
	if rec.Purpose != Purpose || st.Repository != t.Repository {
		return nil, nil, &Error{Op: "probe", Path: a.Path, Err: reservation.ErrMalformed,
			Reason: fmt.Sprintf("the server lease names purpose %q and repository %q, not %q and %q", rec.Purpose, st.Repository, Purpose, t.Repository)}
	}
	host, _, err := net.SplitHostPort(st.Address)
	if err != nil || host != "127.0.0.1" {
		return nil, nil, &Error{Op: "probe", Path: a.Path, Err: reservation.ErrMalformed,
			Reason: fmt.Sprintf("the server lease records address %q, not 127.0.0.1:PORT", st.Address)}
	}
	live, err := askLive(ctx, st.Address, o.Timeout)
	var fe *foreignAnswer
	switch {
	case errors.As(err, &fe):
		st.State, st.Reason = Foreign, fe.why+" (the lease's owner: "+a.Reason+")"
		return st, rec, nil
	case err == nil:
		if why := compare(live.body, rec, t.Repository, live.nonce); why != "" {
			st.State, st.Reason = Foreign, why+" (the lease's owner: "+a.Reason+")"
			return st, rec, nil
		}
	case a.Liveness == procid.Dead:
		st.State, st.Reason = StaleLease, "the lease's owner is dead: "+a.Reason
		return st, rec, nil
	default:
		st.State, st.Reason = Unresponsive, fmt.Sprintf("the leaseholder (pid %d) does not answer on %s: %v; its owner: %s", rec.Owner.PID, st.Address, err, a.Reason)
		return st, rec, nil
	}
	// The answerer is the leaseholder; its process must still be the one
	// the lease names (the answer could have been sent just before it died).
	if l, why := procid.Judge(rec.Owner); l != procid.Alive {
		st.Owner = string(l)
		st.State, st.Reason = StaleLease, "the leaseholder answered, then: "+why
		if l == procid.Unknown {
			st.State = Unresponsive
		}
		return st, rec, nil
	}
	st.Ready, st.Busy, st.Version, st.API = live.body.Ready, live.body.Busy, live.body.Version, live.body.API
	switch {
	case live.body.API != APIVersion || o.Version != "" && live.body.Version != o.Version:
		st.State, st.Reason = VersionMismatch, fmt.Sprintf("the server runs majlis %s (API %s); this is majlis %s (API %s)", live.body.Version, live.body.API, o.Version, APIVersion)
	case !live.body.Ready:
		st.State, st.Reason = Starting, "the leaseholder answers but is not ready yet"
	default:
		st.State, st.Reason = Running, "the leaseholder answers on "+st.Address
	}
	return st, rec, nil
}

// compare returns why live is not the answer of the lease's holder, or "".
func compare(live *wire.Live, rec *reservation.Record, repo, nonce string) string {
	switch {
	case live.Repository != repo:
		return fmt.Sprintf("the answer names repository %q, not %q", live.Repository, repo)
	case live.PID != rec.Owner.PID || live.StartTime != rec.Owner.StartTime:
		return fmt.Sprintf("the answer comes from pid %d (start time %d), the lease names pid %d (start time %d)", live.PID, live.StartTime, rec.Owner.PID, rec.Owner.StartTime)
	case !live.Holder:
		return "the answerer says it does not hold the server lease"
	case !equal(live.TokenSHA256, wire.TokenDigest(rec.Token)):
		return "the answer carries the digest of another token than the lease's"
	case live.Nonce != nonce || !equal(live.HMAC, wire.TokenHMAC(rec.Token, nonce)):
		return "the answer's HMAC of the fresh nonce does not match the lease's token (a replayed or forged answer)"
	}
	return ""
}

// foreignAnswer: something answered, but not a liveness route.
type foreignAnswer struct{ why string }

func (f *foreignAnswer) Error() string { return f.why }

type liveAnswer struct {
	body  *wire.Live
	nonce string
}

// AskLive asks the liveness route at addr (127.0.0.1:PORT) on a fresh
// connection with a fresh nonce and returns its answer, which it does not
// compare with any lease (Probe does).
func AskLive(ctx context.Context, addr string, timeout time.Duration) (*wire.Live, error) {
	a, err := askLive(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	return a.body, nil
}

// askLive asks the liveness route at addr on a fresh connection.
func askLive(ctx context.Context, addr string, timeout time.Duration) (*liveAnswer, error) {
	lc, err := dialLive(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	defer lc.Close()
	return lc.live()
}

// A liveConn is one HTTP/1.1 connection to a server's address. Stop asks
// the liveness route and then sends the shutdown request, with the token,
// on the same connection: the token goes only to the peer that has just
// proven it holds it, never to whoever got the port a moment later.
type liveConn struct {
	net.Conn
	br   *bufio.Reader
	addr string
}

func dialLive(ctx context.Context, addr string, timeout time.Duration) (*liveConn, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c, err := (&net.Dialer{Deadline: deadline}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return nil, err
	}
	return &liveConn{Conn: c, br: bufio.NewReader(c), addr: addr}, nil
}

// do sends req on the connection and reads the whole response.
func (lc *liveConn) do(req *http.Request) (*http.Response, []byte, error) {
	if err := req.Write(lc.Conn); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(lc.br, req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp, data, err
}

// live asks the liveness route with a fresh nonce.
func (lc *liveConn) live() (*liveAnswer, error) {
	nonce := newNonce()
	req, err := http.NewRequest(http.MethodGet, "http://"+lc.addr+"/api/v1/live?nonce="+nonce, nil)
	if err != nil {
		return nil, err
	}
	resp, data, err := lc.do(req)
	if err != nil {
		if isProtocolError(err) {
			return nil, &foreignAnswer{"the port does not answer HTTP: " + err.Error()}
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &foreignAnswer{fmt.Sprintf("the liveness route answered %s", resp.Status)}
	}
	var l wire.Live
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, &foreignAnswer{"the answer is not a liveness document: " + err.Error()}
	}
	return &liveAnswer{body: &l, nonce: nonce}, nil
}

// isProtocolError tells an answer that is not HTTP (something else owns
// the port) from no answer at all (refused, timed out).
func isProtocolError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return false
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF)
}

func newNonce() string {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic("server: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// equal compares two secrets-derived strings in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
