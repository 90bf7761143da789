package gitops

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// CheckBranchName reports whether name is a valid branch name by git's
// rules (git check-ref-format --branch), in process.
func CheckBranchName(name string) error {
	if name == "" || name[0] == '-' || name == "HEAD" {
		return fmt.Errorf("%q is not a valid branch name", name)
	}
	if err := plumbing.ReferenceName("refs/heads/" + name).Validate(); err != nil {
		return fmt.Errorf("%q is not a valid branch name: %v", name, err)
	}
	return nil
}
