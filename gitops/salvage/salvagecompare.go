package salvage

import (
	"bytes"
	"context"
	"fmt"

	"github.com/majlis-dev/majlis/gitops"
)

// Holds reports whether the salvage commit base (a ref or commit
// in the repository containing dir) already holds everything the snapshot
// snap would keep, so that storing snap keeps nothing new; when it does
// not, what says what differs first ("files", "HEAD", "index", "a commit
// only the worktree holds", "the worktree's git directory: PATH").
//
// Compared: the files' tree, HEAD, the index's tree, the commits only the
// worktree holds (each must be one of base's parents), and the files the
// meta commit keeps of the worktree's git directory (per-worktree refs and
// their reflogs, an operation's state, conflicts, settings, files outside
// the tree), except three that change without changing anything of the
// user's: HEAD and logs/HEAD (majlis detaches a kept trash's HEAD; where
// HEAD points is compared above, and a commit only a reflog holds is a
// pin), and the raw index file (its stat data changes with every git
// status; its entries are compared as a tree). A clean snapshot is held
// by anything; with base "" nothing else is.
func Holds(ctx context.Context, dir, base string, snap SnapshotResult) (holds bool, what string, err error) {
	if snap.Clean {
		return true, "", nil
	}
	if base == "" {
		return false, "no salvage before", nil
	}
	_, l, err := Read(ctx, dir, base)
	if err != nil {
		return false, "", err
	}
	tree, err := gitops.TreeOf(ctx, dir, base)
	if err != nil {
		return false, "", err
	}
	if tree != snap.Tree {
		return false, "files", nil
	}
	if l.Head != snap.Layout.Head {
		return false, "HEAD", nil
	}
	if l.Index == "" {
		return false, "index", nil // a layout before the index commit
	}
	if l.Index != snap.Index {
		a, err := gitops.TreeOf(ctx, dir, l.Index)
		if err != nil {
			return false, "", err
		}
		b, err := gitops.TreeOf(ctx, dir, snap.Index)
		if err != nil {
			return false, "", err
		}
		if a != b {
			return false, "index", nil
		}
	}
	held := map[string]bool{}
	for _, p := range l.Parents() {
		held[p] = true
	}
	for _, p := range snap.Layout.Pins {
		if !held[p.Commit] {
			return false, "a commit only the worktree holds (" + p.Source + ")", nil
		}
	}
	then, err := metaFiles(ctx, dir, l.Meta)
	if err != nil {
		return false, "", err
	}
	now, err := metaFiles(ctx, dir, snap.Meta)
	if err != nil {
		return false, "", err
	}
	for p, id := range now {
		if then[p] != id {
			return false, "the worktree's git directory: " + p, nil
		}
	}
	for p := range then {
		if _, ok := now[p]; !ok {
			return false, "the worktree's git directory: " + p, nil
		}
	}
	return true, "", nil
}

// metaFiles lists the files of a meta commit's tree (path: mode and
// object id), but HEAD, logs/HEAD and index; none for "".
func metaFiles(ctx context.Context, dir, meta string) (map[string]string, error) {
	out := map[string]string{}
	if meta == "" {
		return out, nil
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true}, "ls-tree", "-r", "-z", "--full-tree", meta)
	if err != nil {
		return nil, err
	}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		info, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			return nil, gitops.Unexpected("git ls-tree", "record %q", rec)
		}
		switch p := string(path); p {
		case "HEAD", "logs/HEAD", "index":
		default:
			f := bytes.Fields(info)
			if len(f) != 3 {
				return nil, gitops.Unexpected("git ls-tree", "record %q", rec)
			}
			out[p] = fmt.Sprintf("%s %s", f[0], f[2])
		}
	}
	return out, nil
}
