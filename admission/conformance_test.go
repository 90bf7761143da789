package admission_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/admission/admissiontest"
	"github.com/majlis-dev/majlis/fixtures"
)

// The SQLite ledgers are the backend the conformance suite describes.
func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	admissiontest.Run(t, func(t *testing.T, stateDir string, now func() time.Time) admission.Backend {
		// One host ledger per repository (each test is a host of its
		// own), the same one when the suite opens the backend again.
		host := filepath.Join(filepath.Dir(stateDir), "test-host.db")
		s, err := admission.Open(t.Context(), stateDir, admission.Options{HostLedger: host, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The SQLite ledgers count each resource's generations one by one: 1, 2,
// 3, ... (the suite asks only that they grow).
func TestGenerationsCountByOne(t *testing.T) {
	r := fixtures.NewRepo(t)
	state := filepath.Join(r.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := admission.Open(t.Context(), state, admission.Options{HostLedger: filepath.Join(t.TempDir(), "host.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := int64(1); round <= 3; round++ {
		for _, h := range []string{"a", "b"} {
			res, err := s.Acquire(t.Context(), admission.AcquireRequest{Holder: h, Checkout: r.Dir, Resources: []string{"file:x", "intent:src/**", "host:port:1"}})
			if err != nil {
				t.Fatal(err)
			}
			want := 2*(round-1) + 1
			if h == "b" {
				want++
			}
			for _, l := range res.Leases {
				if l.Generation != want {
					t.Fatalf("%s generation %d, want %d", l.Resource, l.Generation, want)
				}
			}
			if _, err := s.Release(t.Context(), admission.ReleaseRequest{Holder: h, Token: res.Token}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
