// Package server runs one majlis server per repository. Finding,
// starting and stopping it from outside is package serverctl's, which
// compiles no engine package (a client imports it, not this one).
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
//   - A server whose owner is proven dead by its exact identity protects
//     nothing: under the start lock its lease is retired at once, expired
//     or not, and one new server started (RecoverDead).
//   - A server that holds the lease but does not answer is unresponsive:
//     it is never taken over and never signalled implicitly. Stop with
//     force signals a process only after its pid and start time match the
//     lease, through a pidfd so that a reused pid cannot be hit.
//   - The server checks its lease periodically and exits at once when it
//     is proven no longer its own (fencing); a lease it cannot read now
//     (out of descriptors) is no such proof, and it stays up. Any other
//     stop releases the lease unless it is proven not its own; a stop
//     first lets the calls under way end at a safe point.
//   - Every route checks the loopback peer and the Host (against DNS
//     rebinding); all but liveness and readiness need the token.
//   - No client holds the server by being slow: bodies are read before a
//     handler is taken, under timeouts and a size limit; a request that
//     finds no handler within BusyWait gets 503 busy; connections are
//     capped below the descriptor limit by closing the oldest
//     unauthenticated one. Liveness and readiness are answered outside
//     the handler bound (MaxHandlers), so a busy server is still found
//     alive.
//
// The routes, the probe's comparisons and what a mismatch means are
// documented in docs/MCP.md.
package server
