package coordination_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/admission/admissiontest"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
)

// openShared opens the admission ledgers of the repository at stateDir
// with the shared ledger on the test's embedded etcd, under a prefix of
// the test's own.
func openShared(t *testing.T, stateDir string, now func() time.Time, key string) *admission.Service {
	t.Helper()
	srv := etcdtest.Shared(t)
	l, err := coordination.Open(coordination.Options{Endpoints: []string{srv.Endpoint}, RepositoryKey: key,
		Clone: cloneOf(stateDir), StateDir: stateDir, Prefix: etcdtest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(filepath.Dir(stateDir), "test-host.db")
	s, err := admission.Open(t.Context(), stateDir, admission.Options{HostLedger: host, Now: now, Shared: l})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	return s
}

// The conformance suite, unchanged, on etcd: intents are shared through
// it (and kept in the repository ledger too).
func TestConformanceEtcd(t *testing.T) {
	admissiontest.Run(t, func(t *testing.T, stateDir string, now func() time.Time) admission.Backend {
		return openShared(t, stateDir, now, "example.com/conformance")
	})
}
