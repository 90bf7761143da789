package provider

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// trashAtOnce says why the trash folder a reclaim of the workspace at
// path (size bytes on disk) would keep is purged as soon as the purge
// runs (which the majlis command that reclaims starts right after), and
// which policy key decides it, or "": its own size is over
// trash.max_bytes (the oldest kept trash goes first, and it is the
// newest), or the free space of its folder stays below trash.min_free
// even once every older kept trash beside it, and every ready pooled
// worktree on its disk, is gone. A reclaim then
// does not promise a trash it will not keep: it deletes it itself, and
// refuses to delete ignored files no confirmed preview named (reclaim.go,
// end.go). Sizes of older trash not yet measured count as nothing, which
// can only say "at once" more often. The free space is read first: the
// older trash is looked at only when it is below the floor.
func (p *Provider) trashAtOnce(path string, size int64) (why, key string, err error) {
	tp, err := p.TrashPolicy()
	if err != nil {
		return "", "", err
	}
	if size > tp.MaxBytes {
		return fmt.Sprintf("it takes %s, more than trash.max_bytes (%s)", ByteSize(size), tp.Values[PolicyTrashMaxBytes]), PolicyTrashMaxBytes, nil
	}
	parent := filepath.Dir(path)
	free, total, err := gitops.FreeSpace(parent)
	if err != nil {
		return "", "", err
	}
	floor := tp.floor(total)
	if free >= floor {
		return "", "", nil
	}
	all, err := p.records.All()
	if err != nil {
		return "", "", err
	}
	for _, k := range p.keptTrash(all, tp, sizesRemembered) {
		if filepath.Dir(k.Path) == parent {
			free += max(k.SizeBytes, 0)
		}
	}
	if spaceKey(path) == spaceKey(p.poolDirKey()) {
		free += p.poolReadyBytes(all) // the pool gives them back first (poolbudget.go)
	}
	if free < floor {
		return fmt.Sprintf("the free space on its disk (%s, with all older kept trash and the ready pooled worktrees gone) is below trash.min_free (%s, %s)",
			ByteSize(free), tp.Values[PolicyTrashMinFree], ByteSize(floor)), PolicyTrashMinFree, nil
	}
	return "", "", nil
}

// ByteSize renders a size for people: 1.5 GiB, 320.0 MiB, 80 B.
func ByteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// trashAtOnceError refuses to reclaim (op: reclaim, or end) a workspace
// holding files salvage does not keep, ignored or special, when the
// policy would purge its trash at once (pv.TrashGoesAtOnce) and no
// preview that says so was confirmed: with the trash kept they would
// wait there for the undo window; here they would simply be deleted.
func trashAtOnceError(op string, pv *Preview) error {
	n := pv.IgnoredFiles + pv.SpecialFiles
	return &Error{Op: op, Binding: pv.Binding, Path: pv.Path, Err: ErrUnconfirmed,
		Reason: fmt.Sprintf("it holds %s that salvage does not keep (%s), and the policy would purge its trash at once (%s): a reclaim would delete them, and no preview naming them as deleted was confirmed",
			nounCount(n, "ignored or special file", "ignored or special files"), strings.Join(firstIgnored(pv, 3), ", "), pv.TrashGoesAtOnce),
		Hint:    "move what you need out of it, or make room for its trash (free disk space, or change the policy's key " + pv.trashKey + "); or confirm its preview, which names them as deleted at once",
		Details: map[string]any{"trash_key": pv.trashKey, "trash_goes_at_once": pv.TrashGoesAtOnce, "ignored_files": pv.IgnoredFiles, "special_files": pv.SpecialFiles}}
}
