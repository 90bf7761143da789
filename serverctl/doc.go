// Package serverctl finds, starts and stops a repository's majlis server
// from outside it: the probe of its lease and liveness route, connecting
// with the lease's token, starting `majlis serve` as a process under the
// start lock, attaching, and stopping it by signals through a pidfd.
//
// It compiles no engine package (no git, SQLite, MCP or etcd library): it
// reads the repository's registration without running git (package
// internal/registration), the server lease through package reservation,
// and speaks the wire contract (package wire). Package server, which runs
// the server, and package client, which calls it, both use it. The
// server's contract (one server per repository, the probe's comparisons,
// fencing) is package server's documentation and docs/MCP.md.
package serverctl
