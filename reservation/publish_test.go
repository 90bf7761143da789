package reservation

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestPublishNeverOverwrites(t *testing.T) {
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
	for _, bad := range []string{"", "a/b", ".hidden", ".."} {
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
