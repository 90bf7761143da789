package gitops

import (
	"context"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestCheckoutSize: the estimate of a checkout is at least what its
// files and folders take in blocks (as du counts them); anything but a
// commit id refuses.
func TestCheckoutSize(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("a.txt", strings.Repeat("a", 10000)) // 3 blocks
	r.WriteFile("d/b.txt", "b\n")                    // 1 block
	r.WriteFile("d/e/c.txt", "")                     // none
	head := r.Commit("three files")
	n, err := CheckoutSize(context.Background(), r.Dir, head)
	if err != nil {
		t.Fatal(err)
	}
	if min := int64(4*checkoutBlock + 2*checkoutBlock); n < min {
		t.Errorf("checkout size %d, want at least %d (4 file blocks, 2 folders)", n, min)
	}
	if _, err := CheckoutSize(context.Background(), r.Dir, "HEAD"); err == nil {
		t.Error("a revision name was taken for a commit id")
	}
}
