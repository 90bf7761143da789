package admission

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// A PolicyValue says what a conflict or an enforcement gap gets
// (wire.PolicyValue).
type PolicyValue = wire.PolicyValue

// Policy values.
const (
	Allow = wire.PolicyAllow // proceed silently
	Warn  = wire.PolicyWarn  // proceed, with a warning naming the policy key
	Block = wire.PolicyBlock // refuse
)

// Policy keys. Each response names the key that decided each warning or
// denial (see wire for what each decides).
const (
	PolicySameCheckoutConflict = wire.PolicySameCheckoutConflict
	PolicyCrossWorktreeOverlap = wire.PolicyCrossWorktreeOverlap
	PolicyEnforcementGap       = wire.PolicyEnforcementGap
	PolicyPortRange            = wire.PolicyPortRange
	PolicyHostSingleton        = wire.PolicyHostSingleton
)

// A PolicySet is the repository's trusted policy, stored in its state dir
// (never in a worktree). Keys not set explicitly have their defaults.
type PolicySet struct {
	SameCheckoutConflict PolicyValue `json:"same_checkout_conflict"`
	CrossWorktreeOverlap PolicyValue `json:"cross_worktree_overlap"`
	EnforcementGap       PolicyValue `json:"enforcement_gap"`
	// PortRange is where host:port:auto picks ports: "LO-HI", inclusive.
	PortRange string `json:"port_range"`
	// Coordination is where shared leases are kept (docs/multi-host.md);
	// empty: nowhere, every lease stays on this machine. These settings
	// are this clone's own, never shared.
	Coordination CoordinationPolicy `json:"coordination"`
}

// CoordinationPolicy is a clone's coordination settings: the policy keys
// coordination.repository_key and coordination.etcd.*.
type CoordinationPolicy struct {
	RepositoryKey string `json:"repository_key,omitempty"`
	EtcdEndpoints string `json:"etcd_endpoints,omitempty"` // comma-separated URLs
	EtcdCA        string `json:"etcd_ca,omitempty"`        // PEM file of the CA that signs the servers
	EtcdCert      string `json:"etcd_cert,omitempty"`      // PEM file of this client's certificate
	EtcdKey       string `json:"etcd_key,omitempty"`       // PEM file of its private key
	// EtcdClusterID is the id of the cluster the shared leases were last
	// kept in; another cluster's id refuses until an operator sets it.
	EtcdClusterID string `json:"etcd_cluster_id,omitempty"`
}

// Coordination policy keys.
const (
	PolicyRepositoryKey = "coordination.repository_key"
	PolicyEtcdEndpoints = "coordination.etcd.endpoints"
	PolicyEtcdCA        = "coordination.etcd.ca"
	PolicyEtcdCert      = "coordination.etcd.cert"
	PolicyEtcdKey       = "coordination.etcd.key"
	PolicyEtcdClusterID = "coordination.etcd.cluster_id"
)

// CoordinationPolicyKeys lists the coordination keys.
func CoordinationPolicyKeys() []string {
	return []string{PolicyRepositoryKey, PolicyEtcdEndpoints, PolicyEtcdCA, PolicyEtcdCert, PolicyEtcdKey, PolicyEtcdClusterID}
}

// field returns the setting of a coordination key, or nil.
func (c *CoordinationPolicy) field(key string) *string {
	switch key {
	case PolicyRepositoryKey:
		return &c.RepositoryKey
	case PolicyEtcdEndpoints:
		return &c.EtcdEndpoints
	case PolicyEtcdCA:
		return &c.EtcdCA
	case PolicyEtcdCert:
		return &c.EtcdCert
	case PolicyEtcdKey:
		return &c.EtcdKey
	case PolicyEtcdClusterID:
		return &c.EtcdClusterID
	}
	return nil
}

// DefaultPolicy is the policy of a repository where nothing was set.
func DefaultPolicy() PolicySet {
	return PolicySet{SameCheckoutConflict: Block, CrossWorktreeOverlap: Warn, EnforcementGap: Warn, PortRange: DefaultPortRange}
}

// PolicyKeys lists the settable policy keys: the conflict keys
// (ConflictPolicyKeys), valued allow, warn or block, and port_range.
func PolicyKeys() []string {
	return append(append(ConflictPolicyKeys(), PolicyPortRange), CoordinationPolicyKeys()...)
}

// ConflictPolicyKeys lists the keys whose values are allow, warn or block.
func ConflictPolicyKeys() []string {
	return []string{PolicySameCheckoutConflict, PolicyCrossWorktreeOverlap, PolicyEnforcementGap}
}

// Setting returns the value of any settable key as text ("" for an
// unknown key).
func (p PolicySet) Setting(key string) string {
	if key == PolicyPortRange {
		return p.PortRange
	}
	if f := p.Coordination.field(key); f != nil {
		return *f
	}
	if !slices.Contains(ConflictPolicyKeys(), key) {
		return ""
	}
	return string(p.Value(key))
}

// Value returns the value of key; PolicyHostSingleton is always Block.
func (p PolicySet) Value(key string) PolicyValue {
	switch key {
	case PolicySameCheckoutConflict:
		return p.SameCheckoutConflict
	case PolicyCrossWorktreeOverlap:
		return p.CrossWorktreeOverlap
	case PolicyEnforcementGap:
		return p.EnforcementGap
	}
	return Block
}

// set sets key to value; it returns "" or why value is not one key takes.
// An unknown key is errUnknownKey.
func (p *PolicySet) set(key, value string) string {
	if key == PolicyPortRange {
		if _, _, err := ParsePortRange(value); err != nil {
			return err.Error()
		}
		p.PortRange = value
		return ""
	}
	if f := p.Coordination.field(key); f != nil {
		if why := CheckCoordinationSetting(key, value); why != "" {
			return why
		}
		*f = value
		return ""
	}
	v := PolicyValue(value)
	if !slices.Contains(ConflictPolicyKeys(), key) {
		return errUnknownKey
	}
	if !validValue(v) {
		return fmt.Sprintf("unknown policy value %q for %s (values: allow, warn, block)", value, key)
	}
	switch key {
	case PolicySameCheckoutConflict:
		p.SameCheckoutConflict = v
	case PolicyCrossWorktreeOverlap:
		p.CrossWorktreeOverlap = v
	case PolicyEnforcementGap:
		p.EnforcementGap = v
	}
	return ""
}

const errUnknownKey = "unknown key"

func validValue(v PolicyValue) bool { return v == Allow || v == Warn || v == Block }

// Policy returns the repository's policy.
func (s *Service) policyLocal(ctx context.Context) (PolicySet, error) {
	p, err := readPolicy(ctx, s.repo.db)
	if err != nil {
		return PolicySet{}, s.repo.fail("policy", err)
	}
	return p, nil
}

// SetPolicy sets key to value (allow, warn or block; for port_range,
// "LO-HI") in one transaction that also appends a policy event, and
// returns the resulting policy. An unknown key or value refuses with
// ErrInvalid.
func (s *Service) setPolicyLocal(ctx context.Context, key, value string) (PolicySet, error) {
	var p PolicySet
	switch why := p.set(key, value); why {
	case "":
	case errUnknownKey:
		return PolicySet{}, &Error{Op: "policy", Err: ErrInvalid, Reason: fmt.Sprintf("unknown policy key %q", key),
			Hint: "keys: " + strings.Join(PolicyKeys(), ", ")}
	default:
		return PolicySet{}, &Error{Op: "policy", Err: ErrInvalid, Reason: why}
	}
	err := s.repo.tx(ctx, "policy", func(c *sql.Conn) error {
		old, err := readPolicy(ctx, c)
		if err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO policy (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
			return err
		}
		p = old
		p.set(key, value)
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		return appendEvent(ctx, c, now, "policy", "", "",
			map[string]string{"key": key, "value": value, "old": old.Setting(key)})
	})
	if err != nil {
		return PolicySet{}, err
	}
	return p, nil
}

type rowQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readPolicy reads the policy table. A stored key or value this package
// does not know means the ledger cannot be trusted: ErrMalformed.
func readPolicy(ctx context.Context, q rowQuerier) (PolicySet, error) {
	p := DefaultPolicy()
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM policy`)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return p, err
		}
		if p.set(k, v) != "" {
			return p, &Error{Op: "policy", Err: ErrMalformed, Reason: fmt.Sprintf("policy table holds %s=%q, which this majlis does not know", k, v),
				Hint: "set it again", Details: map[string]any{"policy_key": k}}
		}
	}
	return p, rows.Err()
}

// setPolicyKeys returns the keys set explicitly in the repository ledger.
func (s *Service) setPolicyKeys(ctx context.Context) (map[string]bool, error) {
	rows, err := s.repo.db.QueryContext(ctx, `SELECT key FROM policy`)
	if err != nil {
		return nil, s.repo.fail("policy", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}
