// Package coordination keeps the leases that clones of one repository on
// several machines share (repository intents, cluster:NAME singletons) in
// an etcd v3 cluster: a Ledger is an admission.SharedLedger.
//
// # Layout
//
// Under a prefix (default "/majlis/"), the repository key K (escaped):
//
//	repo/K/rec/ID     a lease's record, written without an etcd lease: it remembers the grant
//	repo/K/live/ID    its permission, attached to the grant's etcd lease
//	repo/K/policy     the shared policy (JSON)
//	repo/K/clones/C   the clones that share K (JSON: host, state folder)
//	repo/K/holders/C/H/S  the etcd lease that clone C's holder H's leases of TTL S seconds ride (empty)
//	cluster/rec/ID, cluster/live/ID   cluster singletons, shared by every repository
//	hosts/M/B         a host's registration (machine id M, boot id B), under an etcd lease of its own
//
// A record whose live key is gone lapsed: the resource is quarantined.
// Every admission reads the records at one revision and writes in one
// transaction that compares the modification revision of both record
// ranges with that revision, so it commits only if nothing it read
// changed. A record's generation is its creation revision.
//
// # Failure
//
// Every call is bounded by Options.Timeout (DefaultTimeout): past it, the
// call refuses with admission.ErrCoordinationUnavailable, naming the
// endpoints. A host refuses while another live host registered the same
// machine id (admission.ErrDuplicateMachineID), and while the cluster's id
// is not the one the clone knows (admission.ErrClusterChanged).
package coordination

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultTimeout bounds each call to the cluster: an unreachable cluster
// is refused within it (plus the time to connect, which it includes).
const DefaultTimeout = 5 * time.Second

// HostTTL is the lifetime of a host's registration, renewed by every
// command that reaches the cluster and by the server's heartbeat.
const HostTTL = 60 * time.Second

// Options configure Open.
type Options struct {
	// Endpoints are the cluster's client URLs (http:// or https://).
	Endpoints []string
	// CA, Cert and Key are PEM files: the CA that signs the servers, and
	// this client's certificate and key (all optional; https endpoints
	// without CA use the system's roots).
	CA, Cert, Key string
	// RepositoryKey names the repository every sharing clone names alike.
	RepositoryKey string
	// Clone identifies this clone (the repository's registration id).
	Clone string
	// StateDir is this clone's state folder, recorded with its clone entry.
	StateDir string
	// KnownCluster is the cluster id (hex) the clone used before; "" when
	// none. Another id refuses with admission.ErrClusterChanged.
	KnownCluster string
	// RecordCluster, when set, is called with the cluster's id the first
	// time a clone that knew none reaches it.
	RecordCluster func(id string) error
	// Prefix is where majlis's keys live; "" means "/majlis/".
	Prefix string
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Identity, when set, replaces this host's identity (machine id, boot
	// id): tests run two hosts in one machine.
	Identity *HostIdentity
}

// A HostIdentity is what a host registers: its machine id and boot id.
type HostIdentity struct {
	MachineID string `json:"machine_id"`
	BootID    string `json:"boot_id"`
	Hostname  string `json:"hostname"`
}

// A Ledger is the etcd-backed shared ledger of one repository key.
type Ledger struct {
	c       *clientv3.Client
	o       Options
	repo    string // prefix of the repository's keys
	cluster string // prefix of the cluster singletons
	hosts   string

	mu         sync.Mutex
	registered bool
	checked    bool // the cluster id was checked
	// holders are the etcd leases of this clone's holders as the last
	// View read them (holderKey -> lease), for Put to reuse.
	holders map[string]clientv3.LeaseID
	// written are the records Put wrote pending, by attempt, for Settle
	// to confirm or delete without reading them again.
	written map[string][]written
}

// A written record: its key and its value as Put wrote it, at revision.
type written struct {
	key, live string
	rec       admission.SharedRecord
	revision  int64
}

var _ admission.SharedLedger = (*Ledger)(nil)

// Open connects to the cluster lazily: Open itself sends nothing, the
// first call does.
func Open(o Options) (*Ledger, error) {
	if len(o.Endpoints) == 0 {
		return nil, &admission.Error{Op: "coordination", Err: admission.ErrInvalid, Reason: "no etcd endpoint given"}
	}
	if o.RepositoryKey == "" || o.Clone == "" {
		return nil, &admission.Error{Op: "coordination", Err: admission.ErrInvalid, Reason: "no repository key or clone given"}
	}
	if o.Prefix == "" {
		o.Prefix = "/majlis/"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	cfg := clientv3.Config{Endpoints: o.Endpoints, DialTimeout: o.Timeout, Logger: zap.NewNop(),
		DialKeepAliveTime: o.Timeout, DialKeepAliveTimeout: o.Timeout}
	if o.CA != "" || o.Cert != "" || o.Key != "" || hasTLS(o.Endpoints) {
		tc, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, unavailable(o, err)
	}
	l := &Ledger{c: c, o: o, repo: o.Prefix + "repo/" + url.PathEscape(o.RepositoryKey) + "/",
		cluster: o.Prefix + "cluster/", hosts: o.Prefix + "hosts/"}
	return l, nil
}

func hasTLS(eps []string) bool {
	for _, e := range eps {
		if strings.HasPrefix(e, "https://") {
			return true
		}
	}
	return false
}

func tlsConfig(o Options) (*tls.Config, error) {
	info := transport.TLSInfo{TrustedCAFile: o.CA, CertFile: o.Cert, KeyFile: o.Key}
	if o.Cert == "" && o.Key == "" {
		if o.CA == "" {
			return &tls.Config{MinVersion: tls.VersionTLS12}, nil
		}
		info.InsecureSkipVerify = false
	}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, &admission.Error{Op: "coordination", Err: admission.ErrInvalid,
			Reason: "the TLS files of the coordination cluster cannot be used: " + err.Error(),
			Hint:   "check the CA, certificate and key files the policy names"}
	}
	return tc, nil
}

// Describe names the cluster and the repository key.
func (l *Ledger) Describe() string {
	return fmt.Sprintf("the coordination cluster at %s (repository %s)", strings.Join(l.o.Endpoints, ","), l.o.RepositoryKey)
}

// Clone is this clone's identity.
func (l *Ledger) Clone() string { return l.o.Clone }

// Close closes the connection.
func (l *Ledger) Close() error { return l.c.Close() }

// ctx bounds a call by the timeout.
func (l *Ledger) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, l.o.Timeout)
}

// unavailable wraps a failure to reach the cluster.
func unavailable(o Options, err error) error {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &admission.Error{Op: "coordination", Err: admission.ErrCoordinationUnavailable,
		Reason: fmt.Sprintf("the coordination cluster at %s did not answer within %v (%v): no shared lease is granted, and none here in its place",
			strings.Join(o.Endpoints, ","), timeout, shortErr(err)),
		Hint:    "check that the etcd endpoints are up and reachable from this host; leases of files and host names keep working",
		Details: map[string]any{"endpoints": o.Endpoints, "timeout": timeout.String()}}
}

func shortErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// fail maps an etcd client error: this package's own *admission.Error
// values pass, anything else is the cluster being unavailable.
func (l *Ledger) fail(err error) error {
	var ae *admission.Error
	if errors.As(err, &ae) {
		return err
	}
	return unavailable(l.o, err)
}
