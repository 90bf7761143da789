package provider

import (
	"fmt"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
)

// trashGoesAtOnce says why the trash folder a reclaim of the workspace at
// path would keep is purged as soon as the purge runs (which the majlis
// command that reclaims starts right after), or "": its own size is over
// trash.max_bytes (the oldest kept trash goes first, and it is the
// newest), or the free space of its folder stays below trash.min_free
// even once every older kept trash beside it is gone. end --reclaim takes
// "the trash is kept" as the consent to reclaim ignored files: not when
// the policy would delete them at once. Sizes of older trash not yet
// measured count as nothing, which can only say "at once" more often.
func (p *Provider) trashGoesAtOnce(path string) (string, error) {
	tp, err := p.TrashPolicy()
	if err != nil {
		return "", err
	}
	size, err := p.trashSize(path)
	if err != nil {
		return "", err
	}
	if size > tp.MaxBytes {
		return fmt.Sprintf("it takes %d bytes, more than trash.max_bytes (%d)", size, tp.MaxBytes), nil
	}
	parent := filepath.Dir(path)
	free, total, err := gitops.FreeSpace(parent)
	if err != nil {
		return "", err
	}
	all, err := p.readAllBindings()
	if err != nil {
		return "", err
	}
	for _, k := range p.keptTrash(all, tp, sizesRemembered) {
		if filepath.Dir(k.Path) == parent {
			free += max(k.SizeBytes, 0)
		}
	}
	if floor := tp.floor(total); free < floor {
		return fmt.Sprintf("the free space there (%d bytes, with all older kept trash gone) is below trash.min_free (%d bytes)", free, floor), nil
	}
	return "", nil
}
