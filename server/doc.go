// Package server runs one majlis server per repository and finds it again.
//
// The server holds the repository's server lease (a lease file of package
// reservation, resource "server") for its whole life. The lease record is
// the server's identity card: its owner (machine, boot, pid, process start
// time), its random 128-bit token, and in its metadata the repository id
// and the address 127.0.0.1:PORT on which it listens. The lease file is
// readable by its owner only (0600, in a 0700 folder owned by the same
// user), so the token doubles as the bearer token of the server's API.
//
// # Contract
//
//   - At most one usable server per repository: a server exists only
//     while it holds the lease, and starting is serialized by a start lock
//     held across probe, spawn and readiness.
//   - Probe never takes an answer on the recorded port for the server: the
//     liveness route must name the same repository, pid and start time,
//     say it holds the lease, carry the SHA-256 digest of the lease's token
//     and the HMAC-SHA256 of a fresh nonce under that token, and the
//     process with that pid and start time must be alive.
//   - A server that holds the lease but does not answer is unresponsive:
//     it is never taken over and never signalled implicitly. Stop with
//     force signals a process only after its pid and start time match the
//     lease, through a pidfd so that a reused pid cannot be hit.
//   - The server re-reads its lease periodically and exits at once when
//     the token there is no longer its own (fencing). It releases the
//     lease only while the token is still its own.
//   - Liveness and readiness are answered on their own goroutines, outside
//     the bound (MaxHandlers) that limits API handlers, so a busy server is
//     still found alive.
//
// The routes, the probe's comparisons and what a mismatch means are
// documented in docs/MCP.md.
package server
