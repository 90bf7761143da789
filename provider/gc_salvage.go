package provider

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
)

// salvageNumber returns n of refs/majlis/salvage/<binding>/<n>, or false
// for other refs there (submodule refs).
func salvageNumber(ref string) (binding string, n int, ok bool) {
	rest := strings.TrimPrefix(ref, SalvagePrefix)
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || strings.Contains(rest[:i], "/") {
		return "", 0, false
	}
	return rest[:i], n, true
}

// gcSalvage finds the salvage refs that may go: duplicates no record
// names, and old ones of gone workspaces but the newest of each.
func (p *Provider) gcSalvage(ctx context.Context, reader *gitops.Reader, all [][]*claimRecord, age time.Duration, plan *GCPlan) error {
	refs, err := reader.RefCommits(ctx, SalvagePrefix)
	if err != nil {
		return err
	}
	named, live := salvagesNamed(all)
	byBinding := map[string][]numberedSalvage{}
	for _, rc := range refs {
		if b, n, ok := salvageNumber(rc.Name); ok {
			byBinding[b] = append(byBinding[b], numberedSalvage{rc, n})
		}
	}
	bindings := make([]string, 0, len(byBinding))
	for b := range byBinding {
		bindings = append(bindings, b)
	}
	sort.Strings(bindings)
	identity, err := salvageIdentity(ctx, reader, refs)
	if err != nil {
		return err
	}
	now := p.now()
	for _, b := range bindings {
		list := byBinding[b]
		sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
		gone := duplicateSalvages(b, list, named, identity, plan)
		// Old ones of a gone workspace, but the newest.
		if live[b] {
			continue
		}
		for _, s := range list[:len(list)-1] {
			if gone[s.Name] || now.Sub(s.When) < age {
				continue
			}
			plan.SalvageRefs = append(plan.SalvageRefs, GCRef{Ref: s.Name, Commit: s.ID, Binding: b,
				Reason: fmt.Sprintf("older than %s, its workspace gone, not the newest (%s is kept)", age, list[len(list)-1].Name)})
		}
	}
	return nil
}

// A numberedSalvage is a salvage ref and its number.
type numberedSalvage struct {
	gitops.RefCommit
	n int
}

// salvagesNamed returns the salvage refs a record names (a restore's, an
// event's) and the bindings that are live.
func salvagesNamed(all [][]*claimRecord) (named, live map[string]bool) {
	named, live = map[string]bool{}, map[string]bool{}
	for _, recs := range all {
		for _, r := range recs {
			if r.Claim.Restore != "" {
				named[r.Claim.Restore] = true
			}
			for _, ev := range r.Events {
				if ev != nil && ev.SalvageRef != "" {
					named[ev.SalvageRef] = true
				}
			}
			if r.live() {
				live[r.Claim.Binding] = true
			}
		}
	}
	return named, live
}

// salvageIdentity returns what makes two salvages the same. Two salvages
// of the same state differ only in the dates of the commits the salvage
// made beside its own (the index commit, the meta commit): each parent is
// compared by its own tree and parents.
func salvageIdentity(ctx context.Context, reader *gitops.Reader, refs []gitops.RefCommit) (func(gitops.RefCommit) string, error) {
	var parents []string
	for _, rc := range refs {
		parents = append(parents, rc.Parents...)
	}
	shapes, err := reader.CommitShapes(ctx, parents)
	if err != nil {
		return nil, err
	}
	return func(rc gitops.RefCommit) string {
		key := rc.Tree
		for _, par := range rc.Parents {
			sh, ok := shapes[par]
			if !ok {
				return rc.ID // unknown: identical to nothing else
			}
			key += " " + sh.Tree + ":" + strings.Join(sh.Parents, ",")
		}
		return key
	}, nil
}

// duplicateSalvages plans the duplicates among binding b's salvages (the
// same tree and parents) but one of each, the one a record names or else
// the oldest, and returns them.
func duplicateSalvages(b string, list []numberedSalvage, named map[string]bool, identity func(gitops.RefCommit) string, plan *GCPlan) map[string]bool {
	gone := map[string]bool{}
	groups := map[string][]numberedSalvage{}
	var order []string
	for _, s := range list {
		key := identity(s.RefCommit)
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], s)
	}
	for _, key := range order {
		g := groups[key]
		if len(g) < 2 {
			continue
		}
		keeper := ""
		for _, s := range g {
			if named[s.Name] {
				keeper = s.Name
				break
			}
		}
		if keeper == "" {
			keeper = g[0].Name
		}
		for _, s := range g {
			if s.Name == keeper || named[s.Name] {
				continue
			}
			gone[s.Name] = true
			plan.SalvageRefs = append(plan.SalvageRefs, GCRef{Ref: s.Name, Commit: s.ID, Binding: b,
				Reason: "identical (tree and parents) to " + keeper})
		}
	}
	return gone
}

// gcDeleted finds the kept tips of deleted branches older than age.
func (p *Provider) gcDeleted(ctx context.Context, reader *gitops.Reader, age time.Duration, plan *GCPlan) error {
	refs, err := reader.Refs(ctx, DeletedPrefix)
	if err != nil {
		return err
	}
	now := p.now()
	for _, r := range refs {
		i := strings.LastIndexByte(r.Name, '/')
		sec, err := strconv.ParseInt(r.Name[i+1:], 10, 64)
		if err != nil {
			continue // not gc's
		}
		if at := time.Unix(sec, 0); now.Sub(at) >= age {
			plan.DeletedTips = append(plan.DeletedTips, GCRef{Ref: r.Name, Commit: r.ID,
				Reason: fmt.Sprintf("kept since %s, longer than %s", at.UTC().Format(time.RFC3339), age)})
		}
	}
	return nil
}
