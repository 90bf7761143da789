// Package reservation implements lease files: the crash-safe, no-clobber
// primitive on which all of majlis's coordination rests.
//
// A lease file grants one owner process one named resource until the owner
// releases it or is proven dead. The provider uses it for its brief
// publication lease and for per-binding reclaim reservations; the server
// uses it for its per-checkout lease.
//
// # Guarantees
//
//   - Acquire never overwrites: the complete, fsynced record is hard-linked
//     to the lease name, and link(2) fails when the name exists. A crash at
//     any instant leaves either no lease or a complete valid one, plus at
//     most a stray temporary file that later operations remove safely.
//   - The owner keeps the lease file open with an exclusive flock for as long
//     as it holds the lease. That lock is the liveness witness: the kernel
//     drops it when the owner (and every process that inherited the
//     descriptor) has exited.
//   - Every grant of a resource carries a generation (a fencing token) that
//     is strictly greater than every earlier grant's, across release and
//     recovery.
//   - Only the exact owner (same process, same token, same file) can renew,
//     release or verify a lease.
//   - An expired lease is recovered (moved to retired/) only when its owner
//     is proven dead on this same host: same machine id, and either another
//     boot, or the witness lock obtainable and no live process with the
//     owner's pid and start time. Owners on another host, in another pid
//     namespace, or whose liveness cannot be read stay blocking. Recovery
//     retires the lease file only. RecoverDead waives the expiry, for
//     leases that protect nothing once their owner is dead (the server
//     lease); a lease that protects files keeps both conditions, since
//     the children its dead owner started may still be at work on them.
//   - Every reader validates what it reads: an empty, truncated, unknown,
//     incomplete or checksum-failing record is malformed, and every
//     operation on it refuses with an error naming the file. Nothing ever
//     treats a malformed record as free.
//   - The lease directory must be on a local filesystem: NFS, SMB, FUSE and
//     similar are refused because their links and locks cannot be trusted.
//
// # Keeping a lease
//
// A Session keeps a lease alive while work goes on under it (as etcd's
// concurrency.Session keeps an etcd lease): it renews the lease every
// third of its TTL, and ends at the first renewal or Check that finds the
// lease no longer its owner's. Done is then closed, Err says why, and the
// context from Context is cancelled, so that the work stops instead of
// going on without the lease. The holder still calls Check immediately
// before every effect the lease protects.
//
// The on-disk format is specified in docs/leases.md so that other
// implementations can interoperate.
//
// reservation knows nothing of workspaces, claims or Git.
package reservation
