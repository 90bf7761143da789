//go:build !linux

package server

import (
	"context"
	"errors"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
)

func Terminate(context.Context, procid.Owner, time.Duration) ([]string, error) {
	return nil, errors.New("server: stop --force needs pidfd (Linux)")
}
