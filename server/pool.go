package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/wire"
)

// The handler pool. At most MaxHandlers API requests run at once. A
// request's body is read whole, under BodyTimeout and within maxBody,
// before it asks for a slot: a client that sends its headers and then
// stalls holds a connection, never a slot. A request that finds no slot
// within BusyWait is answered 503 with Retry-After and the code busy,
// before anything of it runs. Liveness and readiness never enter the pool.

// fpHandler is reached by every pooled request once it holds its slot,
// before its handler runs: tests hold calls there to fill the pool.
var fpHandler = failpoint.New("server/handler")

// retryAfter is the Retry-After of a busy answer, in seconds.
const retryAfter = 1

// pooled runs h within the MaxHandlers bound.
func (s *srv) pooled(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.readBody(w, r) {
			return
		}
		if !s.takeSlot(w, r) {
			return
		}
		if !s.ready.Load() && !s.stopping.Load() {
			<-s.sem
			writeJSON(w, http.StatusServiceUnavailable, errorBody("starting", "the server is not ready yet; retry once GET /api/v1/ready answers 200"))
			return
		}
		if !s.enter() {
			<-s.sem
			writeJSON(w, http.StatusServiceUnavailable, errorBody("stopping", "the server is stopping; nothing of this request ran"))
			return
		}
		s.busy.Add(1)
		defer func() {
			s.busy.Add(-1)
			<-s.sem
			s.inflight.Done()
		}()
		ctx, cancel := s.workContext(r.Context())
		defer cancel()
		if err := fpHandler.Inject(); err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody("internal", err.Error()))
			return
		}
		h(w, r.WithContext(ctx))
	})
}

// takeSlot takes a handler slot, waiting at most BusyWait; it answers
// and returns false when none frees (503 busy), the request ends, or the
// server stops.
func (s *srv) takeSlot(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.sem <- struct{}{}:
		return true // a free slot: no timer
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	t := time.NewTimer(s.o.BusyWait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return true
	case <-t.C:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": wire.Refusal{Code: "busy", ExitCode: 4,
			Details: map[string]any{"max_handlers": s.o.MaxHandlers, "waited": s.o.BusyWait.String(), "retry_after": retryAfter},
			Message: fmt.Sprintf("the server is busy: all %d handlers stayed taken for %s; nothing of this request ran; retry in %d s",
				s.o.MaxHandlers, s.o.BusyWait, retryAfter)}})
	case <-r.Context().Done():
	case <-s.stop:
		writeJSON(w, http.StatusServiceUnavailable, errorBody("stopping", "the server is stopping; nothing of this request ran"))
	}
	return false
}

// enter admits a handler unless the server is stopping; the handler
// calls s.inflight.Done when it ends.
func (s *srv) enter() bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.stopping.Load() {
		return false
	}
	s.inflight.Add(1)
	return true
}

// workContext is ctx, also cancelled when the server stops (s.work).
func (s *srv) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if s.work == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(s.work, cancel)
	return ctx, func() { stop(); cancel() }
}

// readBody reads the request's body whole, under BodyTimeout and within
// maxBody, and puts it back as a bytes reader; it answers and returns
// false when the body is too large, too slow or broken.
func (s *srv) readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	s.reading.Add(1)
	defer s.reading.Add(-1)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.o.BodyTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	_ = rc.SetReadDeadline(time.Time{})
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": wire.Refusal{Code: "usage", ExitCode: 2, Details: map[string]any{},
			Message: fmt.Sprintf("the body is larger than %d bytes", maxBody)}})
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeJSON(w, http.StatusRequestTimeout, map[string]any{"error": wire.Refusal{Code: "usage", ExitCode: 2, Details: map[string]any{},
			Message: fmt.Sprintf("the body did not arrive within %s", s.o.BodyTimeout)}})
		return false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": wire.Refusal{Code: "usage", ExitCode: 2, Details: map[string]any{},
			Message: clip("reading the body: "+err.Error(), maxDetail)}})
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	return true
}
