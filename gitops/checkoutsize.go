package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
)

// checkoutBlock is the block a file of a checkout takes at least on
// disk (TreeSize counts blocks, as du does).
const checkoutBlock = 4096

// CheckoutSize estimates the disk space a checkout of commit takes: every
// file of its tree rounded up to a 4 KiB block, a block per folder, and
// git's index (about 100 bytes a file). It reads the tree only
// (`git ls-tree -r -t --long`), in the repository whose git directory is
// commonDir; submodules count as nothing.
func CheckoutSize(ctx context.Context, commonDir, commit string) (int64, error) {
	if !IsObjectID(commit) {
		return 0, fmt.Errorf("gitops: checkout size of %q: not an object id", commit)
	}
	res, err := Run(ctx, commonDir, Cmd{ReadOnly: true}, "ls-tree", "-r", "-t", "-z", "--long", "--full-tree", commit)
	if err != nil {
		return 0, err
	}
	var total, files int64
	for _, line := range bytes.Split(res.Stdout, []byte{0}) {
		// <mode> SP <type> SP <object> SP+ <size> TAB <path>
		meta, _, ok := bytes.Cut(line, []byte{'\t'})
		if !ok {
			continue
		}
		f := bytes.Fields(meta)
		if len(f) != 4 {
			continue
		}
		switch string(f[1]) {
		case "tree":
			total += checkoutBlock
		case "blob":
			n, err := strconv.ParseInt(string(f[3]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("gitops: checkout size of %s: %q is not a size", commit, f[3])
			}
			total += (n + checkoutBlock - 1) / checkoutBlock * checkoutBlock
			files++
		}
	}
	return total + files*100 + checkoutBlock, nil
}
