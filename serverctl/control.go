package serverctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
	"golang.org/x/sys/unix"
)

// StartOptions configure Start and Attach.
type StartOptions struct {
	// Command is the argv of a process that runs Serve for the target's
	// repository (majlis serve --repo DIR). Start appends "--ready-fd 3"
	// and gives it, as descriptor 3, a pipe on which it writes one line
	// once it is ready.
	Command []string
	Name    string        // the argv[0] it sees; "" means Command[0]
	Env     []string      // its environment; nil means this process's
	Log     string        // its stdout and stderr; "" means <state>/server.log
	Timeout time.Duration // for the whole start; zero means 15s
	Probe   ProbeOptions
}

// A StartResult says which server Start found or started.
type StartResult struct {
	Server    *Status       `json:"server"`
	Started   bool          `json:"started"`   // this call started it
	Recovered *RetiredLease `json:"recovered"` // the stale lease it retired first, or null
	Log       string        `json:"log"`
}

// Attach returns the running server, starting one when none runs. It
// probes first without the start lock, so that attaching to a running
// server costs one liveness request.
func Attach(ctx context.Context, t Target, o StartOptions) (*StartResult, error) {
	st, err := Probe(ctx, t, o.Probe)
	if err != nil {
		return nil, err
	}
	if st.State == Running {
		return &StartResult{Server: st, Log: logPath(t, o)}, nil
	}
	return Start(ctx, t, o)
}

func logPath(t Target, o StartOptions) string {
	if o.Log != "" {
		return o.Log
	}
	return filepath.Join(t.StateDir, "server.log")
}

// Start starts the repository's server unless one runs. It holds the
// start lock across probe, spawn and readiness, so that concurrent starts
// give one server. It retires at once the lease of a server whose owner
// is proven dead (expired or not: see retireDead), and refuses, touching
// nothing, when the leaseholder is alive but unresponsive, answers in
// another version, or the port answers as someone else.
func Start(ctx context.Context, t Target, o StartOptions) (*StartResult, error) {
	if len(o.Command) == 0 {
		return nil, &Error{Op: "start", Err: ErrInvalid, Reason: "no command to run the server"}
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	leases, err := OpenLeases(t.StateDir)
	if err != nil {
		return nil, err
	}
	defer leases.Close()
	unlock, err := startLock(ctx, leases)
	if err != nil {
		return nil, err
	}
	defer unlock()

	res := &StartResult{Log: logPath(t, o)}
	for {
		st, _, err := probe(ctx, leases, t, o.Probe)
		if err != nil {
			return nil, err
		}
		res.Server = st
		switch st.State {
		case Running:
			return res, nil
		case Starting:
			// A server is starting outside this lock (serve run by hand):
			// wait for it.
			if err := waitFor(ctx, func() bool {
				s, _, err := probe(ctx, leases, t, o.Probe)
				return err == nil && s.State != Starting
			}); err != nil {
				return nil, &Error{Op: "start", Status: st, Err: ErrStarting, Reason: "it did not become ready in time"}
			}
			continue
		case NotRunning:
		case StaleLease:
			if err := retireDead(ctx, leases, res); err != nil {
				return nil, err
			}
			continue
		case Foreign:
			if st.Owner == string(procid.Dead) {
				if err := retireDead(ctx, leases, res); err != nil {
					return nil, err
				}
				continue
			}
			return nil, &Error{Op: "start", Status: st, Err: ErrForeign, Reason: st.Reason,
				Hint: "majlis neither uses nor replaces it; find what listens on " + st.Address + ", or 'majlis server stop --force' after checking pid " + fmt.Sprint(st.PID)}
		case Unresponsive:
			return nil, &Error{Op: "start", Status: st, Err: ErrUnresponsive, Reason: st.Reason,
				Hint: fmt.Sprintf("majlis never takes over or kills a live leaseholder; wait, or check pid %d and run 'majlis server stop --force'", st.PID)}
		case VersionMismatch:
			return nil, &Error{Op: "start", Status: st, Err: ErrVersionMismatch, Reason: st.Reason,
				Hint: "stop it ('majlis server stop') to start this version"}
		}
		break
	}
	if err := spawn(ctx, t, o, res.Log); err != nil {
		// A server started by hand ('majlis serve', which takes no start
		// lock) may have won the lease meanwhile: that one is as good.
		if st, _, perr := probe(ctx, leases, t, o.Probe); perr == nil && st.State == Running {
			res.Server = st
			return res, nil
		}
		return nil, err
	}
	st, _, err := probe(ctx, leases, t, o.Probe)
	if err != nil {
		return nil, err
	}
	res.Server, res.Started = st, true
	if st.State != Running {
		return nil, &Error{Op: "start", Status: st, Err: ErrStartFailed, Reason: "the new server said it was ready, but the probe finds it " + string(st.State) + ": " + st.Reason}
	}
	return res, nil
}

// startLock takes the start lock, an flock that the kernel drops should
// its holder die, waiting for it until ctx ends.
func startLock(ctx context.Context, leases *reservation.Dir) (unlock func(), err error) {
	name := filepath.Join(leases.Path(), startLockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &Error{Op: "start", Path: name, Err: err}
	}
	if err := waitFor(ctx, func() bool { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil }); err != nil {
		f.Close()
		return nil, &Error{Op: "start", Path: name, Err: ErrStarting, Reason: "another 'majlis server start' held the start lock throughout",
			Hint: "retry; 'majlis server status' says what runs"}
	}
	return func() { f.Close() }, nil
}

// spawn starts the server detached (its own session, stdio to the log)
// and waits until it reports ready on descriptor 3, or exits.
func spawn(ctx context.Context, t Target, o StartOptions, logName string) error {
	logf, err := os.OpenFile(logName, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return &Error{Op: "start", Path: logName, Err: err}
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd)
	r, w, err := os.Pipe()
	if err != nil {
		return &Error{Op: "start", Err: err}
	}
	defer r.Close()
	args := append(append([]string{}, o.Command[1:]...), "--ready-fd", "3")
	cmd := exec.Command(o.Command[0], args...)
	if o.Name != "" {
		cmd.Args[0] = o.Name
	}
	cmd.Env = o.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return &Error{Op: "start", Err: ErrStartFailed, Reason: err.Error()}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it should it exit while we wait
	if d, ok := ctx.Deadline(); ok {
		_ = r.SetReadDeadline(d)
	}
	line, rerr := io.ReadAll(io.LimitReader(r, 256))
	if rerr == nil && bytes.HasPrefix(line, []byte("ready")) {
		return nil
	}
	why := "it exited before it was ready"
	select {
	case err := <-exited:
		if err != nil {
			why += " (" + err.Error() + ")"
		}
	default:
		why = "it did not become ready in time (pid " + fmt.Sprint(cmd.Process.Pid) + " is left running; see the log)"
	}
	return &Error{Op: "start", Path: logName, Err: ErrStartFailed, Reason: why + tail(logName, logStart)}
}

// tail returns the end of what the server logged from offset on.
func tail(name string, from int64) string {
	data, err := os.ReadFile(name)
	if err != nil || int64(len(data)) <= from {
		return ""
	}
	s := strings.TrimSpace(string(data[from:]))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return ": " + s
}

// waitFor polls cond with backoff until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	d := time.Millisecond
	for !cond() {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		d = min(2*d, 50*time.Millisecond)
	}
	return nil
}

// StopOptions configure Stop.
type StopOptions struct {
	// Force signals the leaseholder (TERM, then KILL after Grace) when it
	// cannot be stopped by request: only after its pid and start time are
	// verified, through a pidfd so that a reused pid is never hit.
	Force   bool
	Grace   time.Duration // between TERM and KILL; zero means 5s
	Timeout time.Duration // for the whole stop; zero means 15s
	Probe   ProbeOptions
}

// A StopResult says what Stop did.
type StopResult struct {
	Server  *Status  `json:"server"`  // what the probe found first
	Stopped bool     `json:"stopped"` // a server was running and is gone
	Signals []string `json:"signals"` // signals sent (with Force): TERM, KILL
}

// Stop stops the repository's server: by an authenticated shutdown request
// (the bearer token is the lease's token), after which the server releases
// its lease. An unresponsive leaseholder, or a port answering as someone
// else, is refused unless Force.
func Stop(ctx context.Context, t Target, o StopOptions) (*StopResult, error) {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	leases, err := OpenLeases(t.StateDir)
	if err != nil {
		return nil, err
	}
	defer leases.Close()
	st, rec, err := probe(ctx, leases, t, o.Probe)
	if err != nil {
		return nil, err
	}
	res := &StopResult{Server: st, Signals: []string{}}
	switch st.State {
	case NotRunning, StaleLease:
		return res, nil
	case Running, Starting, VersionMismatch:
		if err := requestShutdown(ctx, st.Address, rec, t.Repository); errors.Is(err, ErrForeign) {
			return nil, &Error{Op: "stop", Status: st, Err: ErrForeign, Reason: err.Error()}
		} else if err == nil {
			if err := waitFor(ctx, func() bool { return gone(leases, rec) }); err == nil {
				res.Stopped = true
				return res, nil
			}
		} else if !o.Force {
			return nil, &Error{Op: "stop", Status: st, Err: ErrUnresponsive, Reason: "the shutdown request failed: " + err.Error(),
				Hint: "retry, or 'majlis server stop --force' (TERM, then KILL, after checking pid and start time)"}
		}
		if !o.Force {
			return nil, &Error{Op: "stop", Status: st, Err: ErrUnresponsive, Reason: "the server accepted the shutdown request but did not exit in time",
				Hint: "'majlis server stop --force' signals it after checking pid and start time"}
		}
	case Unresponsive:
		if !o.Force {
			return nil, &Error{Op: "stop", Status: st, Err: ErrUnresponsive, Reason: st.Reason,
				Hint: fmt.Sprintf("majlis never signals a live leaseholder implicitly; check pid %d and run 'majlis server stop --force'", st.PID)}
		}
	case Foreign:
		if st.Owner == string(procid.Dead) {
			return res, nil // no server of ours: the lease is stale
		}
		if !o.Force {
			return nil, &Error{Op: "stop", Status: st, Err: ErrForeign, Reason: st.Reason,
				Hint: fmt.Sprintf("the token cannot be sent to whoever answers there; 'majlis server stop --force' signals the leaseholder (pid %d) after checking its start time", st.PID)}
		}
	}
	sigs, err := Terminate(ctx, rec.Owner, o.Grace)
	res.Signals = append(res.Signals, sigs...)
	if err != nil {
		return nil, &Error{Op: "stop", Status: st, Err: err}
	}
	res.Stopped = true
	return res, nil
}

// gone reports whether the server of rec has exited and its lease is no
// longer rec.
func gone(leases *reservation.Dir, rec *reservation.Record) bool {
	if l, _ := procid.Judge(rec.Owner); l == procid.Alive {
		return false
	}
	cur, err := leases.Inspect(Resource)
	return errors.Is(err, reservation.ErrNotFound) || err == nil && cur.Token != rec.Token
}

// requestShutdown asks the leaseholder to shut down. The liveness route
// is asked first on the same connection, and the token is sent only once
// the answer there proves the peer holds it.
func requestShutdown(ctx context.Context, addr string, rec *reservation.Record, repo string) error {
	lc, err := dialProven(ctx, addr, 2*time.Second, rec, repo)
	if err != nil {
		return err
	}
	defer lc.Close()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/shutdown", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+rec.Token)
	resp, _, err := lc.do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("the server answered %s", resp.Status)
	}
	return nil
}
