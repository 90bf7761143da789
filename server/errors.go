package server

import (
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// Sentinels of a running server (the probe's, start's and stop's are
// package serverctl's).
var (
	ErrFenced  = wire.Sentinel("server_fenced", "server: the server lease is no longer this server's")
	ErrInvalid = wire.Sentinel("invalid_argument", "server: invalid argument")
)

// An Error reports a refused or failed server operation with its facts
// (serverctl.Error: a probe's, start's and stop's errors are the same).
type Error = serverctl.Error
