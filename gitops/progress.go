package gitops

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"sync"
)

// Progress: git's own progress meter ("Updating files:  42% (420/1000)"),
// shown to a person while a worktree is checked out. It is asked for by a
// context value, since only a caller at the very top (the CLI, knowing
// that stderr is a terminal) can decide it, and only the commands that
// check files out honour it. Only the meter's lines are passed on: git's
// other messages stay in the captured stderr, as without progress.

type progressKey struct{}

// WithProgress returns ctx asking the commands that check out files
// (AddWorktree with a checkout) to show git's progress meter on w; a
// nil w asks for none.
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

// progressTo is the writer WithProgress put in ctx, or nil.
func progressTo(ctx context.Context) io.Writer {
	w, _ := ctx.Value(progressKey{}).(io.Writer)
	return w
}

// progressLine is one state of a git progress meter.
var progressLine = regexp.MustCompile(`^[A-Za-z][A-Za-z ]*: +[0-9]{1,3}% \([0-9]+/[0-9]+\)`)

// A progressSplit passes the lines of git's stderr that are progress
// meters (ending in \r or \n) to progress, and all the others to rest.
type progressSplit struct {
	mu       sync.Mutex
	progress io.Writer
	rest     io.Writer
	pending  []byte
}

func (s *progressSplit) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, p...)
	for {
		i := bytes.IndexAny(s.pending, "\r\n")
		if i < 0 {
			break
		}
		s.route(s.pending[:i+1])
		s.pending = s.pending[i+1:]
	}
	return len(p), nil
}

// route sends one line; a failed write of the meter is no failure of git.
func (s *progressSplit) route(line []byte) {
	if progressLine.Match(line) {
		_, _ = s.progress.Write(line)
		return
	}
	_, _ = s.rest.Write(line)
}

// flush sends what is left without an end of line.
func (s *progressSplit) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		s.route(s.pending)
		s.pending = nil
	}
}
