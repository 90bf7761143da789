package gitops

import (
	"errors"
	"os"

	"github.com/majlis-dev/majlis/fixtures"
)

func removeAll(path string) error { return os.RemoveAll(path) }

func branchExists(r *fixtures.Repo, name string) bool {
	return r.Git("branch", "--list", name) != ""
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
