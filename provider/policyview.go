package provider

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/admission"
)

// A PolicyView is the repository's whole policy: admission's keys (what
// lease conflicts and enforcement gaps get, package admission) and the
// trash's (trashpolicy.go). Its JSON is part of the CLI contract.
type PolicyView struct {
	admission.PolicySet
	TrashKeep     string `json:"trash.keep"`
	TrashMaxBytes string `json:"trash.max_bytes"`
	TrashMinFree  string `json:"trash.min_free"`
	PoolSize      string `json:"pool.size"`
	PoolMaxBytes  string `json:"pool.max_bytes"`
	// PoolKeepIgnored lists pool.keep_ignored's paths (always present,
	// empty when off).
	PoolKeepIgnored []string `json:"pool.keep_ignored"`
	// Sources says where each key's value comes from: SourceDefault or
	// SourceRepository (set with majlis policy set).
	Sources map[string]string `json:"-"`
	// Shared names the coordination cluster and the repository key when
	// one is configured, and Clones the live clones that share the key.
	Shared string                  `json:"-"`
	Clones []admission.SharedClone `json:"-"`
}

// SourceShared: the value is the coordination cluster's, alike for every
// clone that shares the repository key (docs/multi-host.md).
const SourceShared = "shared"

// PolicyKeys lists every key of the repository's policy.
func PolicyKeys() []string {
	return append(append(admission.PolicyKeys(), TrashPolicyKeys()...), PoolPolicyKeys()...)
}

// Policy reads the repository's whole policy. An admission key whose
// value is its default is reported as coming from the default.
func (p *Provider) Policy(ctx context.Context) (*PolicyView, error) {
	svc, err := p.admission(ctx)
	if err != nil {
		return nil, err
	}
	set, err := svc.Policy(ctx)
	if err != nil {
		return nil, err
	}
	tp, err := p.TrashPolicy()
	if err != nil {
		return nil, err
	}
	v := &PolicyView{PolicySet: set, TrashKeep: tp.Values[PolicyTrashKeep], TrashMaxBytes: tp.Values[PolicyTrashMaxBytes],
		TrashMinFree: tp.Values[PolicyTrashMinFree], Sources: map[string]string{}}
	def := admission.DefaultPolicy()
	for _, k := range admission.PolicyKeys() {
		v.Sources[k] = SourceRepository
		if set.Setting(k) == def.Setting(k) {
			v.Sources[k] = SourceDefault
		}
	}
	for k, src := range tp.Sources {
		v.Sources[k] = src
	}
	if err := p.poolPolicyView(v); err != nil {
		return nil, err
	}
	v.Clones = []admission.SharedClone{}
	if svc.Shared() != nil {
		rep, err := svc.PolicyReport(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range admission.ConflictPolicyKeys() {
			if rep.Sources[k] == "shared" {
				v.Sources[k] = SourceShared
			}
		}
		v.Shared, v.Clones = rep.Shared, rep.Clones
	}
	return v, nil
}

// poolPolicyView fills in the pool's keys and their sources.
func (p *Provider) poolPolicyView(v *PolicyView) error {
	size, src, err := p.PoolSize()
	if err != nil {
		return err
	}
	v.PoolSize, v.Sources[PolicyPoolSize] = strconv.Itoa(size), src
	if _, v.PoolMaxBytes, v.Sources[PolicyPoolMaxBytes], err = p.PoolMaxBytes(); err != nil {
		return err
	}
	if v.PoolKeepIgnored, err = p.PoolKeepIgnored(); err != nil {
		return err
	}
	_, v.Sources[PolicyPoolKeepIgnored], err = p.poolPolicyValue(PolicyPoolKeepIgnored)
	return err
}

// Setting returns the value of any key as text ("" for an unknown key).
func (v *PolicyView) Setting(key string) string {
	switch key {
	case PolicyTrashKeep:
		return v.TrashKeep
	case PolicyTrashMaxBytes:
		return v.TrashMaxBytes
	case PolicyTrashMinFree:
		return v.TrashMinFree
	case PolicyPoolSize:
		return v.PoolSize
	case PolicyPoolMaxBytes:
		return v.PoolMaxBytes
	case PolicyPoolKeepIgnored:
		return strings.Join(v.PoolKeepIgnored, ",")
	}
	return v.PolicySet.Setting(key)
}

// SetPolicy sets key to value: a trash key in its own record, any other in
// the admission ledger (admission.Service.SetPolicy). An unknown key or a
// value it does not take refuses, naming every key.
func (p *Provider) SetPolicy(ctx context.Context, key, value string) (*PolicyView, error) {
	if isPoolKey(key) {
		if err := p.setPoolPolicy(key, value); err != nil {
			return nil, err
		}
		return p.Policy(ctx)
	}
	if isTrashKey(key) {
		if _, err := p.SetTrashPolicy(key, value); err != nil {
			return nil, err
		}
		return p.Policy(ctx)
	}
	svc, err := p.admission(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := svc.SetPolicy(ctx, key, value); err != nil {
		var ae *admission.Error
		if errors.As(err, &ae) && strings.HasPrefix(ae.Hint, "keys: ") {
			ae.Hint = "keys: " + strings.Join(PolicyKeys(), ", ")
		}
		return nil, err
	}
	return p.Policy(ctx)
}
