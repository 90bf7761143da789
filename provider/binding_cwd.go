package provider

import (
	"path/filepath"

	"github.com/majlis-dev/majlis/pathid"
)

// BindingAt returns the binding of the live workspace that contains dir
// (the workspace's top level or any folder inside it), lexically or once
// symlinks are resolved: what show, salvage, release, reclaim and end act
// on when run inside a workspace without naming one. ErrNotFound when dir
// is in no workspace of the repository. A workspace nested in another is
// preferred to the outer one (the deepest match wins).
func (p *Provider) BindingAt(dir string) (string, error) {
	dir = filepath.Clean(dir)
	phys := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		phys = r
	}
	_, recs, errs, err := p.records.Each()
	if err != nil {
		return "", err
	}
	best, depth := "", -1
	for i, rs := range recs {
		if errs[i] != nil {
			continue // a damaged binding is never guessed
		}
		for _, r := range rs {
			if !r.live() || !r.has(EventCreated) {
				continue
			}
			for _, root := range []string{r.Claim.Path, r.Claim.PhysicalPath} {
				if root == "" {
					continue
				}
				for _, d := range []string{dir, phys} {
					rel := pathid.Relate(d, root)
					if (rel == pathid.Equal || rel == pathid.BContainsA) && len(root) > depth {
						best, depth = r.Claim.Binding, len(root)
					}
				}
			}
		}
	}
	if best == "" {
		return "", &Error{Op: "find", Path: dir, Err: ErrNotFound,
			Reason:  "the current directory is in no workspace of this repository",
			Hint:    "name the workspace's binding",
			Details: map[string]any{"not_found": "workspace"}}
	}
	return best, nil
}
