package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// A progress line is drawn in place on stderr once the delay has passed,
// cut to fit 100 columns, and cleared when the operation ends; nothing is
// drawn for an operation that ends before.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	pl := newProgressLine(&b, 0)
	pl.update(provider.Progress{Op: "reclaim", Binding: "T-1", Step: "salvaging 3 changed files"})
	pl.update(provider.Progress{Op: "reclaim", Binding: "T-2", Step: strings.Repeat("x", 200), Done: 1, Total: 2})
	pl.done()
	pl.update(provider.Progress{Step: "after the end"})
	got := b.String()
	want := "\r\033[Kmajlis: salvaging 3 changed files" +
		"\r\033[Kmajlis: [2/2] " + strings.Repeat("x", 99-3-len("majlis: [2/2] ")) + "..." +
		"\r\033[K"
	if got != want {
		t.Errorf("progress line wrote %q, want %q", got, want)
	}

	var quiet bytes.Buffer
	pl = newProgressLine(&quiet, time.Hour)
	pl.update(provider.Progress{Step: "quick"})
	pl.done()
	if quiet.Len() != 0 {
		t.Errorf("an operation shorter than the delay drew %q", quiet.String())
	}
}
