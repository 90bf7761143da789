package gitops

import (
	"context"
	"errors"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// gitError asserts that err is an *Error wrapping want and returns it.
func gitError(t *testing.T, err, want error) *Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *gitops.Error", err, err)
	}
	return e
}

var ctx = context.Background()
