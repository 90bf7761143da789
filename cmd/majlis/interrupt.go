package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Exit codes of a run stopped by a signal: 128 + the signal's number, as
// shells report them.
const (
	ExitInterrupted ExitCode = 130 // SIGINT (Ctrl-C)
	ExitTerminated  ExitCode = 143 // SIGTERM
)

// interruption is the signal that stopped a run, if any.
type interruption struct {
	mu  sync.Mutex
	sig os.Signal
}

func (i *interruption) signal() os.Signal {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sig
}

// signalContext returns a context cancelled by the first SIGINT or
// SIGTERM. After that first signal the default action is back: a second
// Ctrl-C ends majlis at once, as a crash would (which every operation
// survives). stop releases the signals.
func signalContext(parent context.Context, stderr io.Writer) (context.Context, *interruption, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interruption{}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			in.mu.Lock()
			in.sig = s
			in.mu.Unlock()
			signal.Stop(ch)
			fmt.Fprintln(stderr, "majlis: interrupted: stopping at a safe point (a second Ctrl-C stops at once)")
			cancel()
		case <-done:
		}
	}()
	return ctx, in, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// An interruptedError reports a run stopped by a signal: what was left
// and how to resume.
type interruptedError struct {
	sig       os.Signal
	err       error
	requestID string
}

func (e *interruptedError) Error() string {
	msg := "interrupted (Ctrl-C)"
	if e.sig == syscall.SIGTERM {
		msg = "interrupted (SIGTERM)"
	}
	if e.requestID != "" {
		msg += fmt.Sprintf("; nothing is lost: the same command with --request-id %s resumes it", e.requestID)
	} else {
		msg += "; what was under way was undone or left as a retry finds it"
	}
	return msg
}

func (e *interruptedError) Unwrap() error { return e.err }

func (e *interruptedError) exit() ExitCode {
	if e.sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

// requestIDError carries the request id of an operation that can be
// resumed with it, for the message of an interruption.
type requestIDError struct {
	err error
	id  string
}

func (e *requestIDError) Error() string { return e.err.Error() }
func (e *requestIDError) Unwrap() error { return e.err }

// withRequestID attaches the request id the failed operation resumes
// with, which an interruption's message names; generated says majlis
// made it up (the user has not seen it).
func withRequestID(err error, id string, generated bool) error {
	if err == nil || id == "" {
		return err
	}
	return &requestIDError{err: err, id: id}
}

// newRequestID makes up a request id: prefix and 8 random bytes in hex.
func newRequestID(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// interrupted turns the failure of a run that a signal stopped into an
// interruptedError (code interrupted, exit 130 or 143).
func interrupted(in *interruption, err error) error {
	sig := in.signal()
	if sig == nil {
		return err
	}
	ie := &interruptedError{sig: sig, err: err}
	var re *requestIDError
	if errors.As(err, &re) {
		ie.requestID = re.id
	}
	return ie
}
