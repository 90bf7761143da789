package gitops

import (
	"fmt"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/majlis-dev/majlis/fixtures"
)

// BenchmarkStatus compares `git status --porcelain=v2 -z` through
// ReadStatus with go-git's Worktree.Status on a generated repository, to
// confirm the measurement gitops is designed on (the CLI is several times
// faster).
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{fixtures.Smaller(20000, 500)} {
		r := fixtures.GenerateLarge(b, n)
		for i := 0; i < n; i += n / 10 {
			r.WriteFile(fixtures.LargeFileName(i), "dirty\n")
		}
		r.WriteFile("untracked.txt", "new\n")
		b.Run(fmt.Sprintf("files=%d/git-cli", n), func(b *testing.B) {
			for b.Loop() {
				st, err := ReadStatus(ctx, r.Dir, StatusOptions{})
				if err != nil || len(st.Entries) != 11 {
					b.Fatalf("ReadStatus: %d entries, %v", len(st.Entries), err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/go-git", n), func(b *testing.B) {
			repo, err := gogit.PlainOpen(r.Dir)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				wt, err := repo.Worktree()
				if err != nil {
					b.Fatal(err)
				}
				st, err := wt.Status()
				if err != nil || len(st) != 11 {
					b.Fatalf("go-git Status: %d entries, %v", len(st), err)
				}
			}
		})
	}
}
