// Package wire is the contract between majlis and the programs that talk
// to it: the requests and results of the server's API (the same JSON
// objects the command line prints with --json), its routes, and the one
// table of error codes with their exit statuses and hints.
//
// It imports the standard library only, so that a program which speaks
// to a majlis server (package client) compiles the contract, not the
// engine. The library's packages return these types (or alias them), so
// that no copy is kept by hand; and they declare each error's code where
// the error is declared:
//
//	var ErrHeld = wire.Sentinel("held", "admission: held by another holder")
//
// An error type that carries facts implements Detailed (its facts become
// the refusal's details); one that stands for a code of its own
// implements Coded. Classify turns any error into the Refusal that the
// command line prints and the server returns.
package wire
