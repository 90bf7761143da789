package durable

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPublishNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := Publish(dir, "claim.json", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := Publish(dir, "claim.json", []byte("second"))
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second publish: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "claim.json")); string(b) != "first" {
		t.Fatalf("published file overwritten: %q", b)
	}
	if err := Replace(dir, "state.json", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := Replace(dir, "state.json", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "state.json")); string(b) != "b" {
		t.Fatalf("replace: %q", b)
	}
	for _, bad := range []string{"", "a/b", ".x.0123456789abcdef.tmp", ".x.tmp", ".", ".."} {
		if err := Publish(dir, bad, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Publish(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no temporaries)", len(entries))
	}
}

func TestPublishRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	wins := make(chan int, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if Publish(dir, "x", []byte{byte(i)}) == nil {
				wins <- i
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []int
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d winners", len(winners))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x")); len(b) != 1 || int(b[0]) != winners[0] {
		t.Fatalf("file holds %v, winner was %d", b, winners[0])
	}
}

// Messages users see are the ones the lease package wrote before.
func TestErrorText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := Publish(dir, "x", nil); err != nil {
		t.Fatal(err)
	}
	err := Publish(dir, "x", nil)
	want := "reservation: publish: file already published; file " + filepath.Join(dir, "x")
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	err = Replace(dir, "a/b", nil)
	want = "reservation: replace: invalid file name; file " + filepath.Join(dir, "a/b")
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestPermAndReplaceAreDurableFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := Publish(dir, "hook", []byte("#!/bin/sh\n"), Perm(0o755)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "hook"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	if err := Replace(dir, "hook", []byte("two")); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(filepath.Join(dir, "hook"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file's mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestMkdirAll(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", "c")
	if err := MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("not made: %v", err)
	}
	if err := MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("again: %v", err)
	}
	if err := os.WriteFile(filepath.Join(base, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(base, "f", "g"), 0o755); err == nil {
		t.Error("a folder below a file was made")
	}
	if err := SyncDir(filepath.Join(base, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SyncDir of a missing folder: %v", err)
	}
}

// WriteTemp leaves a complete, locked temporary file named for sweepers:
// .<name>.<16 hex digits>.tmp.
func TestWriteTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	called := false
	f, tmp, err := WriteTemp(dir, "res", []byte("data"), func() { called = true })
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !called {
		t.Error("created was not called")
	}
	base := filepath.Base(tmp)
	if filepath.Dir(tmp) != dir || !strings.HasPrefix(base, ".res.") || !strings.HasSuffix(base, TempSuffix) || len(base) != len(".res.")+16+len(TempSuffix) {
		t.Errorf("temporary name %s", tmp)
	}
	if b, _ := os.ReadFile(tmp); string(b) != "data" {
		t.Errorf("content %q", b)
	}
	g, err := os.Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		t.Error("the temporary file is not locked")
	}
	if _, _, err := WriteTemp(dir, ".res.0123456789abcdef.tmp", nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("a temporary-shaped name: %v", err)
	}
}

// TestPrepareThenCommitOrDiscard: a prepared write is only a temporary
// file until Commit names it (no-clobber, as Publish); Discard, or a
// Commit that meets the name, leaves nothing but what was there.
func TestPrepareThenCommitOrDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	p, err := Prepare(dir, "rec", []byte("one\n"), Perm(0o644))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || !strings.HasPrefix(got[0], ".rec.") || !strings.HasSuffix(got[0], TempSuffix) {
		t.Fatalf("prepared: %q, want one temporary file", got)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rec")); err != nil || string(b) != "one\n" {
		t.Fatalf("committed: %q, %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "rec")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	p.Discard() // after Commit: nothing
	again, err := Prepare(dir, "rec", []byte("two\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Commit(); !errors.Is(err, ErrExists) {
		t.Fatalf("commit over an existing name: %v, want ErrExists", err)
	}
	dropped, err := Prepare(dir, "other", []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	dropped.Discard()
	if got := names(); len(got) != 1 || got[0] != "rec" {
		t.Fatalf("left: %q, want only rec", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rec")); string(b) != "one\n" {
		t.Fatalf("rec overwritten: %q", b)
	}
	if _, err := Prepare(dir, ".x."+"1"+TempSuffix, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a temporary file's name: %v, want ErrInvalid", err)
	}
}
