package admission_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/admission/admissiontest"
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
