package reservation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errSessionClosed is Session.Err after its holder closed it: the lease
// was not lost, the work it protected is over. It never leaves the
// session's holder, who closed it; Lost tells it from a loss.
var errSessionClosed = errors.New("reservation: session closed")

// A Session keeps a lease alive while its holder works under it, and says
// when the lease is lost, as etcd's concurrency.Session does for an etcd
// lease: it renews the lease every third of its TTL, long before it
// expires, and ends at the first renewal that fails, or the first Check
// that finds the lease no longer this owner's: it fails closed. Done is then closed and Err
// says why; a context from Context is cancelled with that cause, so that
// work in progress stops (as restic cancels its context when its lock is
// lost) instead of going on without the lease.
//
// A lost lease is never taken back: whatever the holder was doing must
// stop, and every effect the lease protects must be preceded by Check.
// A Session is safe for concurrent use.
type Session struct {
	lease *Lease
	ttl   time.Duration

	stop     chan struct{} // closed by Close: the renewer returns
	done     chan struct{} // closed when the session ends, lost or closed
	wg       sync.WaitGroup
	stopOnce sync.Once
	endOnce  sync.Once
	relOnce  sync.Once

	mu  sync.Mutex
	err error // why the session ended
}

// minRenewInterval keeps the renewal interval positive whatever the TTL.
const minRenewInterval = 10 * time.Millisecond

// NewSession starts keeping l alive: it renews l to ttl from now every
// third of ttl until the session ends. The caller must hold l (Acquire)
// and must end the session with Close or Release.
func NewSession(l *Lease, ttl time.Duration) (*Session, error) {
	if ttl <= 0 {
		return nil, &Error{Op: "renew", Resource: l.rec.Resource, Err: fmt.Errorf("%w: TTL %v is not positive", ErrInvalid, ttl)}
	}
	s := &Session{lease: l, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{})}
	s.wg.Add(1)
	go s.renew()
	return s, nil
}

func (s *Session) renew() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.ttl/3, minRenewInterval))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.lease.Renew(s.ttl); err != nil {
				s.end(err)
				return
			}
		}
	}
}

// end ends the session once, with err as its cause.
func (s *Session) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

// Lease returns the lease the session keeps.
func (s *Session) Lease() *Lease { return s.lease }

// Done returns a channel that is closed when the session ends: the lease
// was lost (a renewal or a Check failed) or the session was closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session lasts; once Done is closed, why it
// ended: the error of the renewal or Check that found the lease lost
// (typically an *Error wrapping ErrNotOwner), or, after Close, an error
// saying the session was closed. Lost tells the two apart.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Lost returns the error that ended the session when the lease was lost,
// and nil while it lasts or after it was closed.
func (s *Session) Lost() error {
	if err := s.Err(); !errors.Is(err, errSessionClosed) {
		return err
	}
	return nil
}

// Check verifies, immediately before an effect the lease protects, that
// the lease is still this owner's (Lease.Check). A lease found lost ends
// the session, as a failed renewal does.
func (s *Session) Check() error {
	if err := s.Lost(); err != nil {
		return err
	}
	if err := s.lease.Check(); err != nil {
		if errors.Is(err, ErrNotOwner) {
			s.end(err)
		}
		return err
	}
	return nil
}

// Context returns a copy of parent that is cancelled, with the session's
// Err as its cause (context.Cause), when the session ends. Call the
// cancel function when the work is done.
func (s *Session) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-s.done:
			cancel(s.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Close stops renewing the lease and ends the session (Err then says it
// was closed, unless it had ended already). The lease stays held until
// it expires or is released; Release does both. Closing twice is
// harmless.
func (s *Session) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.end(errSessionClosed)
}

// Release closes the session and releases the lease (Lease.Release).
// Only the first call releases; later ones return nil.
func (s *Session) Release() error {
	s.Close()
	var err error
	s.relOnce.Do(func() { err = s.lease.Release() })
	return err
}
