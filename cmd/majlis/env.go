package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/server"
)

// checkEnvironment validates, when a command starts, every environment
// variable majlis reads (docs/cli.md "Environment"), so that a bad value is
// a usage error naming it, before anything is touched. The packages that
// read the variables decide what they accept.
func checkEnvironment() error {
	if _, err := reservationTTL(); err != nil {
		return err
	}
	if err := checkAdmissionEnvironment(); err != nil {
		return err
	}
	if _, err := server.MaxHandlers(); err != nil {
		return err
	}
	if err := failpoint.Check(); err != nil {
		return err
	}
	if err := checkBackgroundPurge(); err != nil {
		return err
	}
	if err := useIdentity(); err != nil {
		return err
	}
	if h := os.Getenv(holderEnv); h != "" {
		if err := admission.CheckHolder(h); err != nil {
			return &envvar.Error{Name: holderEnv, Value: h, Reason: "not a holder name",
				Accepted: "a holder name: printable characters, without leading or trailing spaces; unset or empty means none"}
		}
	}
	return nil
}

// useIdentity reads this host's machine id and boot id from the files
// MAJLIS_MACHINE_ID_FILE and MAJLIS_BOOT_ID_FILE name, when set, in place
// of the system's (procid.Use): tests run several hosts on one machine.
func useIdentity() error {
	src := procid.Source{MachineIDFile: os.Getenv(envvar.MachineIDFile), BootIDFile: os.Getenv(envvar.BootIDFile)}
	if src == (procid.Source{}) {
		return nil
	}
	accepted := "the absolute path of a file holding one id (letters, digits, - or _), for tests that run several hosts on one machine; unset or empty means the system's"
	for _, v := range [][2]string{{envvar.MachineIDFile, src.MachineIDFile}, {envvar.BootIDFile, src.BootIDFile}} {
		name, value := v[0], v[1]
		if value == "" {
			continue
		}
		if err := procid.CheckIDFile(value); err != nil {
			return &envvar.Error{Name: name, Value: value, Reason: err.Error(), Accepted: accepted}
		}
	}
	if err := procid.Use(src); err != nil {
		return &envvar.Error{Name: envvar.MachineIDFile, Value: src.MachineIDFile, Reason: err.Error(), Accepted: accepted}
	}
	return nil
}

// checkAdmissionEnvironment validates the variables whose values the CLI
// passes to admission: MAJLIS_LEASE_TOKEN, when set, must be a lease
// token; MAJLIS_HOST_LEDGER, when set, must name a file (a relative path
// is taken from the working directory), not a directory.
func checkAdmissionEnvironment() error {
	if tok := os.Getenv(admission.TokenEnv); tok != "" && admission.ValidToken("check", tok) != nil {
		// The value is a secret: it is not repeated in the error.
		return &envvar.Error{Name: admission.TokenEnv, Value: "(not shown)", Reason: "not a lease token",
			Accepted: fmt.Sprintf("a lease token: %d to %d printable characters without spaces; unset or empty means none (one is generated when a lease is acquired)", admission.MinToken, admission.MaxToken)}
	}
	if d := os.Getenv(TokenDirEnv); d != "" && !filepath.IsAbs(d) {
		return &envvar.Error{Name: TokenDirEnv, Value: d, Reason: "not an absolute path",
			Accepted: "the absolute path of a folder that holds a lease token file per task (made when missing, mode 0700); unset or empty means none"}
	}
	if _, err := coordinationTimeout(); err != nil {
		return err
	}
	if e := os.Getenv(etcdEndpointsEnv); e != "" {
		if why := admission.CheckCoordinationSetting(admission.PolicyEtcdEndpoints, e); why != "" {
			return &envvar.Error{Name: etcdEndpointsEnv, Value: e, Reason: why,
				Accepted: "comma-separated http:// or https:// URLs of the etcd cluster's members; unset or empty means the policy's coordination.etcd.endpoints"}
		}
	}
	p := os.Getenv(admission.HostLedgerEnv)
	if p == "" {
		return nil
	}
	if err := admission.CheckHostLedgerPath(p); err != nil {
		return &envvar.Error{Name: admission.HostLedgerEnv, Value: p, Reason: err.Error(),
			Accepted: "the path of the host ledger's SQLite file (a relative path is taken from the working directory); unset or empty means $XDG_STATE_HOME/majlis/host.db, else ~/.local/state/majlis/host.db"}
	}
	return nil
}

// reservationTTL returns the expiry of reclaim reservations in
// MAJLIS_RESERVATION_TTL, or provider.DefaultReservationTTL when it is
// unset or empty; a value that is not a Go duration the provider accepts
// is an *envvar.Error.
func reservationTTL() (time.Duration, error) {
	return envvar.Duration(envvar.ReservationTTL, provider.DefaultReservationTTL, provider.MinReservationTTL, provider.MaxReservationTTL)
}

// providerOptions are the options every provider the command opens gets:
// what the environment sets (validated by checkEnvironment when the
// command started).
func providerOptions() (provider.Options, error) {
	ttl, err := reservationTTL()
	if err != nil {
		return provider.Options{}, err
	}
	return provider.Options{ReservationTTL: ttl, HostLedger: os.Getenv(admission.HostLedgerEnv),
		Coordination: openCoordination, EtcdEndpoints: os.Getenv(etcdEndpointsEnv)}, nil
}

// etcdEndpointsEnv names the coordination cluster's endpoints, over the
// policy's coordination.etcd.endpoints.
const etcdEndpointsEnv = "MAJLIS_ETCD_ENDPOINTS"

// openCoordination opens the shared ledger on etcd (package coordination).
func openCoordination(_ context.Context, c admission.SharedConfig) (admission.SharedLedger, error) {
	timeout, err := coordinationTimeout()
	if err != nil {
		return nil, err
	}
	return coordination.Open(coordination.Options{Endpoints: c.Endpoints, CA: c.CA, Cert: c.Cert, Key: c.Key,
		RepositoryKey: c.RepositoryKey, Clone: c.Clone, StateDir: c.StateDir, KnownCluster: c.KnownCluster,
		RecordCluster: c.RecordCluster, Timeout: timeout})
}

// Bounds of MAJLIS_ETCD_TIMEOUT.
const (
	minCoordinationTimeout = 100 * time.Millisecond
	maxCoordinationTimeout = 5 * time.Minute
)

// coordinationTimeout bounds each call to the coordination cluster:
// MAJLIS_ETCD_TIMEOUT, else coordination.DefaultTimeout.
func coordinationTimeout() (time.Duration, error) {
	return envvar.Duration(envvar.EtcdTimeout, coordination.DefaultTimeout, minCoordinationTimeout, maxCoordinationTimeout)
}

// panicError is a panic recovered in run: a bug, reported as `internal`.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("internal error (a bug in majlis): panic: %v; please report it with the stack trace printed on stderr", e.value)
}

// ErrorCode is internal: a bug.
func (e *panicError) ErrorCode() string { return "internal" }

// ErrorDetails carry the panic's value.
func (e *panicError) ErrorDetails() map[string]any {
	return map[string]any{"panic": fmt.Sprint(e.value)}
}

func newPanicError(v any) *panicError { return &panicError{value: v, stack: debug.Stack()} }
