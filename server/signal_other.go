//go:build !linux

package server

import (
	"context"
	"errors"
	"time"

	"github.com/majlis-dev/majlis/reservation"
)

func terminate(context.Context, reservation.Owner, time.Duration) ([]string, error) {
	return nil, errors.New("server: stop --force needs pidfd (Linux)")
}
