package reservation

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// runChild is the body of a helper process. Environment:
// LEASE_DIR, LEASE_RES, LEASE_TTL, LEASE_SKEW (added to the clock),
// LEASE_OP and LEASE_STEP (crash mode).
func runChild(mode string) int {
	d, err := Open(os.Getenv("LEASE_DIR"))
	if err != nil {
		emit(replyErr(err))
		return 1
	}
	if skew := envDur("LEASE_SKEW", 0); skew != 0 {
		d.now = func() time.Time { return time.Now().Add(skew) }
	}
	res := os.Getenv("LEASE_RES")
	req := Request{Resource: res, Purpose: "test-" + mode, TTL: envDur("LEASE_TTL", time.Minute),
		Metadata: map[string]string{"pid": "child"}}
	ctx := context.Background()
	lines := readLines()

	switch mode {
	case "race":
		var held *Lease
		for line := range lines {
			switch line {
			case "go":
				l, err := d.Acquire(ctx, req)
				r := replyErr(err)
				if err == nil {
					held = l
					rec := l.Record()
					r.Record = &rec
				}
				emit(r)
			case "release":
				emit(replyErr(held.Release()))
				held = nil
			}
		}
		return 0

	case "hold", "hold-grandchild":
		req.Wait = 30 * time.Second
		l, err := d.Acquire(ctx, req)
		if err != nil {
			emit(replyErr(err))
			return 1
		}
		rec := l.Record()
		r := childReply{OK: true, Record: &rec, PID: os.Getpid()}
		if mode == "hold-grandchild" {
			gc := exec.Command(os.Args[0], "-test.run=^$")
			gc.Env = append(os.Environ(), childEnv+"=sleep")
			gc.ExtraFiles = []*os.File{l.f} // the grandchild inherits the witness
			if err := gc.Start(); err != nil {
				emit(replyErr(err))
				return 1
			}
			r.Grandkid = gc.Process.Pid
		}
		emit(r)
		for line := range lines {
			if line == "release" {
				emit(replyErr(l.Release()))
			}
		}
		return 0

	case "sleep":
		time.Sleep(2 * time.Minute) // killed by the test long before
		return 0

	case "crash":
		step := os.Getenv("LEASE_STEP")
		d.hook = func(s string) {
			if s == step {
				emit(childReply{Stepped: s})
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		switch os.Getenv("LEASE_OP") {
		case "acquire", "release", "renew":
			l, err := d.Acquire(ctx, req)
			if err != nil {
				emit(replyErr(err))
				return 1
			}
			switch os.Getenv("LEASE_OP") {
			case "release":
				err = l.Release()
			case "renew":
				err = l.Renew(2 * time.Minute)
			}
			emit(replyErr(err))
		case "recover":
			_, err := d.Recover(ctx, res)
			emit(replyErr(err))
		}
		return 0

	case "forked-release":
		// A process that inherited the owner's witness descriptor and knows
		// its record, as a forked child would: it is still not the owner.
		rec, err := d.Inspect(res)
		if err != nil {
			emit(replyErr(err))
			return 1
		}
		l := &Lease{dir: d, rec: *rec, f: os.NewFile(3, "witness"), pid: rec.Owner.PID}
		rel := l.Release()
		ren := l.Renew(time.Hour)
		emit(childReply{OK: rel == nil || ren == nil, Sentinel: sentinelName(rel) + "," + sentinelName(ren), Err: errString(rel)})
		return 0

	case "recover":
		<-lines // wait for the go
		rec, err := d.Recover(ctx, res)
		r := replyErr(err)
		r.Record = rec
		emit(r)
		return 0

	case "bench-acquire", "bench-floor":
		var stop atomic.Bool
		<-lines // start together
		go func() {
			for range lines {
			}
			stop.Store(true)
		}()
		req.Wait = time.Hour
		n := 0
		for !stop.Load() {
			if mode == "bench-acquire" {
				l, err := d.Acquire(ctx, req)
				if err != nil {
					emit(replyErr(err))
					return 1
				}
				if err := l.Release(); err != nil {
					emit(replyErr(err))
					return 1
				}
			} else if err := floorOnce(d.path, d.df, res, true); err != nil {
				emit(replyErr(err))
				return 1
			}
			n++
		}
		emit(childReply{OK: true, Count: n})
		return 0
	}
	emit(childReply{Err: "unknown child mode " + mode})
	return 2
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
