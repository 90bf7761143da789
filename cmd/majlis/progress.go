package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// progressDelay is how long an operation runs before progress shows.
const progressDelay = time.Second

// A progressLine shows the latest step of a long operation on one line of
// a terminal's stderr, rewritten in place, from progressDelay on; done
// clears it. It never writes to stdout.
type progressLine struct {
	w       io.Writer
	delay   time.Duration
	start   time.Time
	mu      sync.Mutex
	last    string
	shown   bool
	stopped bool
	timer   *time.Timer
}

func newProgressLine(w io.Writer, delay time.Duration) *progressLine {
	pl := &progressLine{w: w, delay: delay, start: time.Now()}
	pl.timer = time.AfterFunc(delay, func() {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if pl.last != "" && !pl.stopped && !pl.shown { // update draws once shown
			pl.draw()
		}
	})
	return pl
}

func (pl *progressLine) update(pr provider.Progress) {
	msg := pr.Step
	if pr.Total > 0 {
		msg = fmt.Sprintf("[%d/%d] %s", pr.Done+1, pr.Total, msg)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.last = msg
	if !pl.stopped && time.Since(pl.start) >= pl.delay {
		pl.draw()
	}
}

// draw rewrites the line; it holds mu.
func (pl *progressLine) draw() {
	line := "majlis: " + pl.last
	if len(line) > 99 {
		line = line[:96] + "..."
	}
	fmt.Fprintf(pl.w, "\r\033[K%s", line)
	pl.shown = true
}

// done stops the line and clears it.
func (pl *progressLine) done() {
	pl.timer.Stop()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.stopped = true
	if pl.shown {
		fmt.Fprint(pl.w, "\r\033[K")
	}
	pl.shown = false
}

// A gitMeter writes git's progress meter in place of the progress line:
// each state of the meter replaces the line, and done clears what is left.
type gitMeter struct{ pl *progressLine }

func (m gitMeter) Write(p []byte) (int, error) {
	m.pl.mu.Lock()
	defer m.pl.mu.Unlock()
	if m.pl.stopped {
		return len(p), nil
	}
	fmt.Fprintf(m.pl.w, "\r\033[K%s", p)
	// A meter line ending in \r stays to be cleared; "done.\n" ends it.
	m.pl.shown = len(p) > 0 && p[len(p)-1] == '\r'
	return len(p), nil
}

// A progressLog writes each step as a line (--progress on a stream that
// is no terminal, or with --json): for scripts that want to show them.
type progressLog struct {
	w  io.Writer
	mu sync.Mutex
}

func (pl *progressLog) update(pr provider.Progress) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pr.Total > 0 {
		fmt.Fprintf(pl.w, "majlis: progress: [%d/%d] %s\n", pr.Done+1, pr.Total, pr.Step)
		return
	}
	fmt.Fprintf(pl.w, "majlis: progress: %s\n", pr.Step)
}

// attachProgress shows p's progress on stderr: on a terminal, as one
// line from about a second on, unless --json; with --progress always (a
// line per step where stderr is no terminal). It returns what to call
// when the operation is over.
func (g *globalOptions) attachProgress(p *provider.Provider) func() {
	tty := isTerminal(g.Stderr)
	switch {
	case g.Progress && !tty:
		pl := &progressLog{w: g.Stderr}
		p.SetProgress(pl.update)
		return func() {}
	case tty && (!g.JSON || g.Progress):
		pl := newProgressLine(g.Stderr, progressDelay)
		p.SetProgress(pl.update)
		// git's own meter while a workspace is checked out, on the same
		// line (git shows it from two seconds on).
		p.SetGitProgress(gitMeter{pl})
		return pl.done
	}
	return func() {}
}
