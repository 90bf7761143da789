package provider

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/majlis-dev/majlis/admission"
)

// Options configure Open. The zero value is what the majlis command uses
// when nothing in its environment says otherwise.
//
// The provider reads none of majlis's environment variables: a program
// that wants one to tune it (as the CLI does with MAJLIS_RESERVATION_TTL
// and MAJLIS_HOST_LEDGER) reads and validates it, and passes the value
// here.
type Options struct {
	// Clock tells the time written into the records the provider keeps
	// (claims, events, request records, preview summaries, how long a
	// kept trash folder stays) and the time of the admission ledgers it
	// opens. nil: time.Now. Lease files (package reservation) keep the
	// real time: their expiry is judged by other processes.
	Clock func() time.Time

	// ReservationTTL is the expiry of reclaim reservations. A reservation
	// is renewed every third of it while held, so it matters only when
	// its owner dies: how long the binding stays blocked before
	// RecoverReservation may retire it. Zero: DefaultReservationTTL.
	// Otherwise it must lie from MinReservationTTL to MaxReservationTTL.
	ReservationTTL time.Duration

	// HostLedger is the path of the host ledger, the admission ledger of
	// host singletons shared by every repository of the user
	// (admission.Options.HostLedger). Empty: the user's conventional one,
	// $XDG_STATE_HOME/majlis/host.db, else
	// $HOME/.local/state/majlis/host.db (admission.HostLedgerPath, without
	// MAJLIS_HOST_LEDGER, which the majlis command reads and passes here).
	HostLedger string

	// Logger receives what the provider does that its results do not
	// say: reclaim reservations taken, lost, or recovered from a dead
	// owner; a workspace moved into its trash; a reclaim finished. nil:
	// nothing is logged.
	Logger *slog.Logger

	// ServesOthers marks a provider that acts on other processes'
	// requests (the majlis server): its admission service grants no
	// authority over a lease to the process tree it runs in
	// (admission.Options.ServesOthers), so every renew or release needs
	// the lease's token.
	ServesOthers bool

	// Coordination opens the shared ledger (package coordination, on etcd)
	// of a repository whose policy names a coordination cluster, or that
	// EtcdEndpoints names; nil: every lease stays on this machine. The
	// majlis command passes coordination's.
	Coordination func(ctx context.Context, c admission.SharedConfig) (admission.SharedLedger, error)
	// EtcdEndpoints, when set, overrides the policy's
	// coordination.etcd.endpoints (the command reads it from
	// $MAJLIS_ETCD_ENDPOINTS): comma-separated URLs.
	EtcdEndpoints string
}

// The accepted reservation TTLs. A reservation is renewed every third of
// its TTL, so the minimum keeps renewal well above the cost of a renewal;
// the maximum bounds how long a crashed reclaim's reservation blocks its
// binding before it can be recovered.
const (
	MinReservationTTL     = time.Second
	MaxReservationTTL     = 24 * time.Hour
	DefaultReservationTTL = 2 * time.Minute
)

// CheckReservationTTL reports whether ttl is an accepted
// Options.ReservationTTL (zero included, meaning the default). The error
// wraps ErrInvalidArgument.
func CheckReservationTTL(ttl time.Duration) error {
	if ttl != 0 && (ttl < MinReservationTTL || ttl > MaxReservationTTL) {
		return &Error{Op: "open", Err: ErrInvalidArgument,
			Reason: fmt.Sprintf("reservation TTL %v is not from %v to %v", ttl, MinReservationTTL, MaxReservationTTL)}
	}
	return nil
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if err := CheckReservationTTL(o.ReservationTTL); err != nil {
		return o, err
	}
	if o.ReservationTTL == 0 {
		o.ReservationTTL = DefaultReservationTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
