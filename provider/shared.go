package provider

import (
	"context"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
)

// share gives svc the repository's shared ledger when a coordination
// cluster is configured (Options.EtcdEndpoints, else the policy's
// coordination.etcd.endpoints) and Options.Coordination can open it. The
// repository key is the policy's coordination.repository_key, else the
// origin remote's URL, normalized (admission.RepositoryKeyFromURL); with
// neither, shared leases are refused and local ones still granted.
func (p *Provider) share(ctx context.Context, svc *admission.Service) error {
	if p.coordination == nil {
		return nil
	}
	pol, err := svc.Policy(ctx)
	if err != nil {
		return err
	}
	c := pol.Coordination
	endpoints := p.etcdEndpoints
	if endpoints == "" {
		endpoints = c.EtcdEndpoints
	}
	if endpoints == "" {
		return nil
	}
	key, err := p.repositoryKey(ctx, c.RepositoryKey)
	if err != nil {
		svc.Share(admission.RefusingLedger(err))
		return nil
	}
	state := p.stateDir
	l, err := p.coordination(ctx, admission.SharedConfig{Endpoints: strings.Split(endpoints, ","), CA: c.EtcdCA, Cert: c.EtcdCert,
		Key: c.EtcdKey, RepositoryKey: key, Clone: p.reg.ID, StateDir: state, KnownCluster: c.EtcdClusterID,
		RecordCluster: func(id string) error {
			_, err := svc.SetPolicy(context.WithoutCancel(ctx), admission.PolicyEtcdClusterID, id)
			return err
		}})
	if err != nil {
		return err
	}
	svc.Share(l)
	return nil
}

// repositoryKey is the key the policy sets, else the origin's URL
// normalized.
func (p *Provider) repositoryKey(ctx context.Context, set string) (string, error) {
	if set != "" {
		return set, nil
	}
	url, ok, err := gitops.RemoteURL(ctx, p.repo.CommonDir, "origin")
	if err != nil {
		return "", err
	}
	refuse := func(why string) error {
		return &admission.Error{Op: "coordination", Err: admission.ErrInvalid,
			Reason: "shared leases need a repository key that every clone names alike, and " + why,
			Hint:   "set the policy's coordination.repository_key (the same in every clone), or give the repository an origin remote"}
	}
	if !ok {
		return "", refuse("this repository has no origin remote to derive it from")
	}
	key, err := admission.RepositoryKeyFromURL(url)
	if err != nil {
		return "", refuse("its origin remote cannot give one: " + err.Error())
	}
	return key, nil
}
