package provider

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReplay drives the one replay every operation uses: a recorded
// result comes back for the same id and arguments, an id never recorded
// (or none) lets the operation run, and the same id with other arguments
// refuses.
func TestReplay(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	args := requestArgs{Op: "salvage", Binding: "T-1", Message: "m"}
	ref := "refs/majlis/salvage/T-1/1"
	want := SalvageResult{Binding: "T-1", Ref: &ref, Files: 3}

	for _, id := range []string{"", "never-recorded"} {
		if res, done, err := replay[SalvageResult](p.records, id, args); res != nil || done || err != nil {
			t.Fatalf("replay(%q) before any record = %v, %v, %v; want nothing", id, res, done, err)
		}
	}
	if err := p.records.RecordRequest("r-1", args, &want); err != nil {
		t.Fatal(err)
	}
	got, done, err := replay[SalvageResult](p.records, "r-1", args)
	if err != nil || !done {
		t.Fatalf("replay of a recorded request: done %v, %v", done, err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("replayed result (-recorded +replayed):\n%s", diff)
	}
	other := args
	other.Binding = "T-2"
	if res, done, err := replay[SalvageResult](p.records, "r-1", other); !errors.Is(err, ErrRequestConflict) || done || res != nil {
		t.Fatalf("replay with other arguments = %v, %v, %v; want ErrRequestConflict", res, done, err)
	}
	// Recording the same id again with other arguments refuses too, and
	// leaves the first record.
	if err := p.records.RecordRequest("r-1", other, &SalvageResult{}); !errors.Is(err, ErrRequestConflict) {
		t.Fatalf("recording r-1 again with other arguments: %v, want ErrRequestConflict", err)
	}
	if got, _, _ := replay[SalvageResult](p.records, "r-1", args); got == nil || got.Files != 3 {
		t.Fatalf("the first record changed: %+v", got)
	}
}
