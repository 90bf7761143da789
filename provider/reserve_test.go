package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/reservation"
)

// TestLostReservationStopsReclaim loses a reclaim's reservation at three
// points (as soon as it is registered, after the salvage, after the move
// into the trash): the lease file is removed and another owner (in this
// process, or another process) takes the binding's reservation. The reservation's session sees the loss at its
// next renewal and cancels the work's context; the reclaim stops before
// its next destructive effect, says why (not_owner), and leaves the other
// owner's reservation alone. Nothing is lost: the workspace is at its path
// (or, moved, in its trash folder, recorded), and once the other owner
// lets go, a retry finishes and every file is on a salvage ref.
func TestLostReservationStopsReclaim(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		point    string
		salvaged bool // the first salvage was made before the loss
		moved    bool // the workspace was in its trash folder at the loss
		process  bool // the other owner is another process
	}{
		{"reclaim/reserved", false, false, false},
		{"reclaim/salvaged", true, false, false},
		{"reclaim/moved", true, true, false},
		{"reclaim/salvaged", true, false, true},
		{"reclaim/moved", true, true, true},
	} {
		name := strings.ReplaceAll(tc.point, "/", "-")
		if tc.process {
			name += "-by-another-process"
		}
		t.Run(name, func(t *testing.T) {
			repo, _ := newProvider(t)
			var log bytes.Buffer
			p, err := Open(t.Context(), repo.Dir, Options{ReservationTTL: MinReservationTTL,
				Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			files := map[string]string{"README.md": "edited, not committed\n", "notes/new.txt": "untracked work\n"}
			for name, content := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(ws.Path, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws.Path, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			leases, err := reservation.Open(filepath.Join(p.stateDir, "leases"))
			if err != nil {
				t.Fatal(err)
			}
			defer leases.Close()

			var other *otherOwner
			var cause error
			p.hook = func(ctx context.Context, point string) {
				if point != tc.point || other != nil {
					return
				}
				// The reservation is lost: its file removed, and the
				// binding reserved by someone else. Removed under the
				// reservation's side lock, as its renewal takes it: a
				// renewal under way would put the file back otherwise.
				side := flock.New(filepath.Join(leases.Path(), reclaimPrefix+"T-1.lock"))
				if err := side.Lock(); err != nil {
					t.Error(err)
					return
				}
				err := os.Remove(filepath.Join(leases.Path(), reclaimPrefix+"T-1.lease"))
				side.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				other = takeReservation(t, leases, reclaimPrefix+"T-1", tc.process)
				// The work's context ends when the session finds the loss.
				select {
				case <-ctx.Done():
					cause = context.Cause(ctx)
				case <-time.After(30 * time.Second):
					t.Error("the reclaim's context was not cancelled after its reservation was lost")
				}
			}
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
			p.hook = nil
			if other == nil {
				t.Fatalf("the reclaim never reached %s: %v", tc.point, err)
			}
			if !errors.Is(err, reservation.ErrNotOwner) || !errors.Is(cause, reservation.ErrNotOwner) {
				t.Fatalf("reclaim after losing its reservation at %s: %v (context cause %v); want a refusal wrapping reservation.ErrNotOwner", tc.point, err, cause)
			}
			if err := other.check(); err != nil {
				t.Fatalf("the other owner's reservation was touched: %v", err)
			}
			if !strings.Contains(log.String(), "reclaim reservation lost") {
				t.Errorf("the loss was not logged (Options.Logger):\n%s", log.String())
			}

			// Nothing destructive happened after the loss.
			refs := strings.Fields(repo.Git("for-each-ref", "--format=%(refname)", SalvagePrefix+"T-1/"))
			if got := len(refs) > 0; got != tc.salvaged {
				t.Errorf("salvage refs after a loss at %s: %v, want salvaged %v (a loss before it cancels the salvage)", tc.point, refs, tc.salvaged)
			}
			dir := ws.Path
			if tc.moved {
				trash := trashLeft(t, p, filepath.Dir(ws.Path))
				if len(trash) != 1 {
					t.Fatalf("trash folders after a loss once moved: %v, want the workspace's one", trash)
				}
				dir = trash[0]
				if _, err := os.Lstat(ws.Path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the workspace was put back at its path without the reservation: %v", err)
				}
			} else if left := trashLeft(t, p, filepath.Dir(ws.Path)); len(left) != 0 {
				t.Errorf("a trash folder exists though the loss came before the move: %v", left)
			}
			for name, content := range files {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
					t.Errorf("%s in %s after the loss: %q, %v; want %q", name, dir, b, err, content)
				}
			}

			// The other owner lets go; a retry finishes the reclaim and
			// loses nothing.
			if err := other.release(); err != nil {
				t.Fatal(err)
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !res.Removed || res.SalvageRef == nil {
				t.Fatalf("retry result %+v, want removed with a salvage", res)
			}
			salvaged := salvagedFiles(t, repo, "T-1")
			for name, content := range files {
				found := false
				for _, id := range salvaged[name] {
					found = found || id == blobID(content)
				}
				if !found {
					t.Errorf("%s (%q) is on no salvage ref: %v", name, content, salvaged[name])
				}
			}
			if left := trashLeft(t, p, filepath.Dir(ws.Path)); len(left) != 0 {
				t.Errorf("trash left after the retry: %v", left)
			}
		})
	}
}

// An otherOwner holds a reservation that a reclaim lost.
type otherOwner struct {
	check   func() error // the reservation is still the other owner's, unchanged
	release func() error
}

// takeReservation takes resource in leases for another owner: a second
// grant in this process, or a child process (main_test.go,
// hold-reservation) that holds it until released.
func takeReservation(t *testing.T, leases *reservation.Dir, resource string, process bool) *otherOwner {
	t.Helper()
	if !process {
		l, err := leases.Acquire(t.Context(), reservation.Request{Resource: resource, Purpose: "reclaim", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return &otherOwner{check: l.Check, release: l.Release}
	}
	h := fixtures.StartHelper(t, childEnv, "hold-reservation", fixtures.HelperOptions{
		Env: []string{"MAJLIS_LEASES=" + leases.Path(), "MAJLIS_RESOURCE=" + resource}, Lines: true})
	h.Expect("held")
	held, err := leases.Inspect(resource)
	if err != nil {
		t.Fatal(err)
	}
	if held.Owner.PID != h.Pid() {
		t.Fatalf("the reservation is held by pid %d, not the other process %d", held.Owner.PID, h.Pid())
	}
	return &otherOwner{
		check: func() error {
			now, err := leases.Inspect(resource)
			if err != nil {
				return err
			}
			if now.Owner.PID != held.Owner.PID || now.Token != held.Token || now.Generation != held.Generation {
				return fmt.Errorf("the reservation changed: %+v, was %+v", now, held)
			}
			return nil
		},
		release: func() error {
			h.CloseStdin()
			var rest []string
			for line, ok := h.Line(); ok; line, ok = h.Line() {
				rest = append(rest, line)
			}
			if st := h.Wait(); !st.Success() {
				return fmt.Errorf("the other process: %v: %s", st, strings.Join(rest, "\n"))
			}
			return nil
		},
	}
}
