// Package admission grants leases: permission for a resource, with a
// holder, a durable generation and an expiry, admitted all or nothing in
// SQLite transactions.
//
// # Scopes
//
//   - file:PATH — an exact file inside one checkout (main or linked
//     worktree). Conflicts with other holders' file leases on the same file
//     and intents covering it, in the same checkout only.
//   - intent:PATH, intent:PATH/**, intent:** — a repository intent: a
//     literal path or the subtree below it, advertised to every worktree.
//     Overlaps inside one checkout are decided by policy
//     same_checkout_conflict (default block), across worktrees by
//     cross_worktree_overlap (default warn).
//   - host:NAME — a machine-wide singleton (host:port:3000), unique across
//     every repository on the machine; always exclusive (host_singleton).
//     host:port:auto asks for a free port of the policy's port_range: one
//     no live lease names and nothing listens on (127.0.0.1 and ::1),
//     picked and granted as host:port:N inside the host ledger's
//     transaction (AcquireResult.Ports).
//
// # Contract
//
//   - Only committed durable state grants permission. Every admission runs
//     the conflict checks, inserts the leases, bumps their generations,
//     appends its events and records its request id in ONE transaction
//     (BEGIN IMMEDIATE on a pinned connection; WAL, synchronous=FULL,
//     foreign_keys=ON, busy timeout), and success is reported only after
//     COMMIT. A refused or failed admission leaves no grant.
//   - A set spanning host and repository scopes is admitted in two phases:
//     pending host rows (which block others but grant nothing), then the
//     repository transaction (which records the attempt), then the pending
//     rows are confirmed. A crash in between leaves pending rows that the
//     next admission meeting them settles once their admitting process is
//     proven dead: granted if the repository transaction committed,
//     deleted otherwise.
//   - The same holder never conflicts with its own active leases; asking
//     again for a resource it holds, active, in the same checkout returns
//     that lease unchanged.
//   - Expiry does not prove a writer stopped. A lease that expired without
//     release is quarantined: wherever the policy blocks, it keeps refusing
//     every holder (its own included) with ErrQuarantined, and where the
//     policy only warns the warning names it; it cannot be renewed, and lifts only when its holder releases
//     it, Resolve attests that the writer stopped, or the owner process
//     recorded with it is proven dead (same machine, and another boot, no
//     such pid, or another start time; see package reservation).
//   - A generation grows with every grant of a resource and is never
//     reused, across release and re-acquisition.
//   - File and intent paths are made canonical and checked for safety
//     (confinement, symlinks, hard links, case, worktrees or repositories
//     nested inside the checkout) before any ledger is touched; refusals
//     are ErrUnsafePath.
//   - A ledger is judged by its clock, never earlier than the last event
//     it recorded: a clock stepped back does not make an expired lease
//     active again.
//   - A request id makes a mutating call idempotent: a retry with the same
//     id and arguments returns the recorded result (evidence, not a new
//     grant); the same id with other arguments is ErrRequestConflict.
//   - A ledger that is not a SQLite database, or of an unknown schema
//     version or kind, refuses with ErrMalformed naming the file, and is
//     left untouched.
//   - Check never creates a lease from an observed edit: changes outside the
//     holder's leases are recorded as enforcement_gap events and policy
//     decides warn or block. Check is given the changed paths: admission
//     does not run git to find them.
//
// # Ledgers
//
// The repository ledger is <git-common-dir>/majlis/admission.db (the state
// dir must exist: `majlis init` creates it). The host ledger's path is
// an option (Options.HostLedger); HostLedgerPath gives the conventional one,
// $MAJLIS_HOST_LEDGER, else $XDG_STATE_HOME/majlis/host.db, else
// ~/.local/state/majlis/host.db, from an environment the caller reads:
// admission reads no environment variable. Policy lives in the repository
// ledger, never in a worktree.
//
// # Backends
//
// Backend is the set of ledger operations admission offers (acquire with
// its conflict lookup, renew, release, resolve, list, policy, check);
// Service, on the SQLite ledgers, is its one implementation. Package
// admissiontest is the conformance suite any other backend must pass.
//
// The package knows nothing of cobra or output formats; results carry
// snake_case JSON tags so the CLI can print them as they are.
package admission
