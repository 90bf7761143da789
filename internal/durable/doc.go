// Package durable is majlis's one protocol for writing files that must
// survive a crash or a power loss whole, and its sealed record format.
//
// # Writing
//
// Publish and Replace write a complete temporary file in the target's own
// folder (named ".<name>.<random>.tmp", locked with flock while in use so
// that a sweeper can tell a live writer's file from an abandoned one),
// fsync it, then hard-link it to the name (Publish: an existing name is
// never overwritten, ErrExists) or rename it over the name (Replace:
// readers see the old or the new content, never a mixture), and fsync the
// folder before returning. A crash at any instant leaves either the old
// state or the complete new file, plus at most a stray temporary file.
//
// SyncDir and MkdirAll make folder entries themselves durable.
//
// # Moving and deleting folders
//
// MoveDir moves a folder with one rename that never replaces anything and
// never crosses file systems (MountPoint tells a mount root ahead), and
// makes the move durable. DeleteTree deletes a folder by its identity,
// through descriptors, never following a link below it and stopping at a
// mount inside it. Neither runs git: a worktree's trash is moved and
// deleted here, and gitops only reads and repairs what git keeps of it.
//
// # Sealed records
//
// Seal and Unseal are the layout of every majlis record on disk (lease
// files, claims, events, previews; docs/leases.md): one JSON object
// {"<kind>": BODY, "sha256": HEX}, where HEX is the SHA-256 of BODY's
// exact bytes as they appear in the file, and BODY carries a "format"
// field naming its kind and version. A reader refuses anything else.
package durable
