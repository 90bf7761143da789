package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/majlis-dev/majlis/reservation"
)

// run keeps the server lease (renewing it, and fencing: exiting at once
// once it is not the server's) until ctx ends, a shutdown is asked, or
// the listener fails.
func (s *srv) run(ctx context.Context, hs *http.Server, serveErr <-chan error) error {
	renew := time.NewTicker(s.o.LeaseTTL / 3)
	defer renew.Stop()
	fence := time.NewTicker(s.o.FenceInterval)
	defer fence.Stop()
	for {
		select {
		case <-ctx.Done():
			s.o.Logf("stopping: %v", context.Cause(ctx))
			return s.shutdown(hs)
		case <-s.stop:
			s.o.Logf("stopping: shutdown requested")
			return s.shutdown(hs)
		case err := <-serveErr:
			s.o.Logf("stopping: the listener failed: %v", err)
			if rerr := s.shutdown(hs); rerr != nil {
				s.o.Logf("%v", rerr)
			}
			return &Error{Op: "serve", Err: err}
		case <-renew.C:
			if err := s.keepLease(true); err != nil {
				return s.fenced(hs, err)
			}
		case <-fence.C:
			if err := s.keepLease(false); err != nil {
				return s.fenced(hs, err)
			}
		}
	}
}

// keepLease renews the server lease (renew) or checks that it is still
// the server's, and returns an error only when it is not: the lease file
// links to another grant's file, or to none. A lease that cannot be read
// or written now (out of descriptors, a full disk) is no proof of that:
// it is logged and tried again at the next tick, and the lease stays the
// server's meanwhile (its witness lock, held open since the start, keeps
// anyone from retiring it while the server lives).
func (s *srv) keepLease(renew bool) error {
	var err error
	if renew {
		err = s.lease.Renew(s.o.LeaseTTL)
	} else {
		err = s.lease.Check()
	}
	if err == nil || errors.Is(err, reservation.ErrNotOwner) {
		if err == nil && s.leaseTrouble.Swap(0) > 0 {
			s.o.Logf("the server lease can be read again")
		}
		return err
	}
	if n := s.leaseTrouble.Add(1); n&(n-1) == 0 {
		s.o.Logf("cannot read or renew the server lease now (%d times in a row; retrying, the server stays up): %v", n, err)
	}
	return nil
}

// fenced ends the server at once: the lease is not ours, so nothing of it
// is touched, and no request in flight is waited for.
func (s *srv) fenced(hs *http.Server, cause error) error {
	s.holder.Store(false)
	hs.Close()
	s.o.Logf("exiting: %v", cause)
	return &Error{Op: "serve", Err: ErrFenced, Reason: cause.Error()}
}

// shutdown stops the server: no new request is admitted (those waiting
// for a handler get 503 stopping), the work of the handlers under way is
// cancelled, which stops a reclaim at its next safe point (git is
// interrupted with SIGINT and waited for, and the reclaim releases its
// reservation, as on Ctrl-C at the command line), and every handler is
// waited for, however long that takes: each answers 503 stopping unless
// it finished. Then the connections are closed and the lease released if
// it is still the server's.
func (s *srv) shutdown(hs *http.Server) error {
	s.ready.Store(false)
	s.lifeMu.Lock()
	s.stopping.Store(true)
	s.lifeMu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	s.stopWork()
	if n := s.busy.Load(); n > 0 {
		s.o.Logf("waiting for %d requests to stop at a safe point", n)
	}
	s.inflight.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx) // lets the answers be written
	hs.Close()
	return s.release()
}

// release gives the lease up unless it is proven not the server's. When
// it cannot be read back now, Release decides: it verifies the owner by
// the lease file's identity, without reading it.
func (s *srv) release() error {
	s.holder.Store(false)
	err := s.lease.Check()
	if errors.Is(err, reservation.ErrNotOwner) {
		s.o.Logf("not releasing the lease: %v", err)
		return &Error{Op: "serve", Err: ErrFenced, Reason: err.Error()}
	}
	if err != nil {
		s.o.Logf("the server lease cannot be read back (%v); releasing it as its owner", err)
	}
	if err := s.lease.Release(); err != nil {
		return err
	}
	s.o.Logf("released the server lease")
	return nil
}
