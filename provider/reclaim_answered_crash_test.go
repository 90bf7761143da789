package provider

import (
	"testing"

	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
)

// TestReclaimKilledAfterItAnswered: a reclaim killed once it recorded its
// result under its request id, before it released its reservation
// (failpoint reclaim/answered). The retry replayed the result and left
// the dead reclaimer's reservation (doctor: reservation_dead_owner) until
// it expired. Its work recorded done and its owner proven dead, the
// retry (or an allocation it is in the way of) retires it at once.
func TestReclaimKilledAfterItAnswered(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, retry := range []bool{true, false} {
		name := "allocate"
		if retry {
			name = "retry"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			ttl := []string{envvar.ReservationTTL + "=1h"} // never expires during the test
			args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json"}
			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"=reclaim/answered=crash"), args...)
			if !crash.killed {
				t.Fatalf("the reclaim was not killed at reclaim/answered\n%s", crash)
			}
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil || held.Owner.PID != crash.pid {
				t.Fatalf("the killed reclaim left no reservation of its own: %+v %v", held, err)
			}
			if retry {
				r := crashExec(t, bin, s.repo.Dir, ttl, args...)
				var res crashReclaimJSON
				if r.exit != 0 {
					t.Fatalf("the retry\n%s", r)
				}
				if r.decode(t, &res); res.Reclaim == nil || !res.Reclaim.Removed {
					t.Fatalf("the retry does not replay the result\n%s", r)
				}
			} else if r := crashExec(t, bin, s.repo.Dir, ttl, "workspace", "allocate", "T-1", "--branch", "again", "--json"); r.exit != 0 {
				t.Fatalf("allocating T-1 again in the way of the dead reclaimer's finished reclaim\n%s", r)
			}
			if _, err := s.p.leases.Inspect(reclaimPrefix + "T-1"); err == nil {
				t.Errorf("the dead reclaimer's reservation is still there")
			}
			rep, err := Doctor(t.Context(), s.repo.Dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Code == FindingReservationDead {
					t.Errorf("doctor still finds %+v", f)
				}
			}
		})
	}
}
