package wire

import "slices"

// An ExitCode is the exit status of a majlis command; a refusal carries
// the one the command line would have given (docs/cli.md).
type ExitCode int

// The exit statuses. Scripts depend on them; never renumber.
const (
	ExitOK       ExitCode = 0 // done
	ExitError    ExitCode = 1 // unexpected failure
	ExitUsage    ExitCode = 2 // usage error
	ExitRefused  ExitCode = 3 // refused for safety
	ExitHeld     ExitCode = 4 // held by another live owner
	ExitNotFound ExitCode = 5 // not found
)

// A Code is one stable error code: its exit status, what it means and
// what helps, in the words of the command line and of the server. The
// table of them (Codes) is the one list: classification (Classify),
// 'majlis help exit-codes', the error-code sections of docs/cli.md and
// docs/MCP.md and the server's hints all come from it. A library error
// names its code itself (Sentinel, Coded), so the table names no package.
type Code struct {
	Code    string
	Exit    ExitCode
	Meaning string // one line, for the help and the docs
	// Hints say what to do, first match wins. Their text may hold
	// {placeholders} filled from the error's facts (details); one that is
	// missing reads as its upper-case name.
	Hints []Hint
	// Fallback marks the code of a library's own failure (git failing, a
	// ledger or a record that cannot be read or written, a bug): an error
	// gets it only when nothing in it has a code that is not a fallback.
	Fallback bool
}

// A Hint is what to do about a code when the error's facts match, in the
// words of each surface: Text on the command line, API over the server's
// HTTP API and MCP tools. One row serves both, so that the two cannot
// select different advice.
type Hint struct {
	When string // "" always; else conditions "KEY" (the facts hold KEY) or "KEY=VALUE", all of which must hold
	Text string // names the command line's commands and flags
	// API names the request fields (snake_case, as the routes and tools
	// take them) and the server's operations as {tool:NAME}, which the
	// server writes as the MCP tool's name or as its HTTP route; never a
	// flag, an environment variable or a command line of majlis. NoAPI
	// marks a row whose advice only the command line can follow (init,
	// doctor, gc, a bulk reclaim, the hook): when it matches, the server
	// shows the library's own hint, in words. A test requires one or the
	// other.
	API string
	// Adds: the hint adds to the library's hint instead of replacing it
	// (which then says something the command line does not).
	Adds bool
}

// NoAPI is the API text of a hint that only the command line can meet.
const NoAPI = "-"

// Codes is the table of codes, in its order: by kind, the more specific
// code first, the fallbacks last.
func Codes() []Code { return slices.Clone(codes) }

// Lookup is the code named code, and whether the table has it.
func Lookup(code string) (Code, bool) {
	c, ok := codeByName[code]
	if !ok {
		return Code{}, false
	}
	return *c, true
}

// codeByName is the table by code.
var codeByName = func() map[string]*Code {
	m := make(map[string]*Code, len(codes))
	for i := range codes {
		m[codes[i].Code] = &codes[i]
	}
	return m
}()

// codes lists every code once.
var codes = []Code{
	// Usage (2).
	{Code: "usage", Exit: ExitUsage,
		Meaning: "the command line, an environment variable or an API request is not one majlis accepts; nothing was changed"},
	{Code: "invalid_binding", Exit: ExitUsage,
		Meaning: "a binding that is not a valid name (letters, digits, '.', '_', '-')"},
	{Code: "invalid_argument", Exit: ExitUsage,
		Meaning: "an argument the operation cannot take; nothing was changed",
		Hints: []Hint{
			{When: "op=check argument=holder", Text: "pass --holder NAME, or set MAJLIS_HOLDER", API: "send holder: whose leases to compare the changes with"},
			{When: "argument=holder", Text: "pass --holder NAME", API: "send holder: who holds the leases"},
			{When: "argument=bare_repository", Text: "add a worktree to it ('git -C {path} worktree add PATH') and run majlis there (--repo PATH); 'majlis init' then needs --workspace-root DIR, since a bare repository has no main worktree", API: "name a directory inside a worktree of the server's repository, not the repository's git directory"},
			{When: "argument=main_worktree", Text: "run 'majlis init' inside the main worktree", API: NoAPI},
			{When: "argument=workspace_root", Text: "pass --workspace-root DIR", API: NoAPI},
			{When: "argument=digest", Text: "copy the digest that --preview printed into --confirm", API: "send the digest that {tool:workspace_reclaim_preview} returned as confirm"},
			{When: "argument=token", Text: "omit --token-file and MAJLIS_LEASE_TOKEN to have a token generated, or supply a longer random one", API: "omit token to have one generated (it is returned once), or send a longer random one"},
			{When: "argument=owner_pid", Text: "name a running process with --owner-pid", API: "send the owner_pid of a running process, or omit it"},
			{When: "argument=repository", Text: "run it inside a worktree of the repository, or pass --repo DIR", API: "name a directory inside a worktree of the server's repository (checkout, or cwd)"},
			{When: "argument=lease_id", Text: "lease ids look like L-0123456789abcdef; 'majlis lease list' shows them", API: "lease ids look like L-0123456789abcdef; {tool:lease_list} shows them"},
			{When: "argument=writer_stopped", Text: "check that the lease's writer is gone, then pass --writer-stopped", API: "check that the lease's writer is gone, then send writer_stopped: true"},
			{When: "argument=paths", Text: "name what the task will touch with --paths GLOB (a path, or DIR/**)", API: "name what the task will touch in paths (a path, or DIR/**)"},
		}},
	{Code: "invalid_request", Exit: ExitUsage,
		Meaning: "a reservation request that is not well formed"},

	// Not found (5).
	{Code: "not_a_repository", Exit: ExitNotFound,
		Meaning: "the directory is not inside a git repository",
		Hints:   []Hint{{Text: "run majlis inside a git repository, or pass --repo DIR", API: "name a directory inside a worktree of the server's repository (checkout, or cwd): the server acts on its own repository only"}}},
	{Code: "not_initialized", Exit: ExitNotFound,
		Meaning: "the repository has not been registered with majlis",
		Hints:   []Hint{{Text: "run 'majlis init' in the repository first", API: "name a directory inside a worktree of the server's repository (checkout, or cwd): the server acts on its own repository only"}}},
	{Code: "not_found", Exit: ExitNotFound,
		Meaning: "no such workspace, lease or reservation",
		Hints: []Hint{
			{When: "kept_entry", Text: "its folder was gone at the reclaim: 'majlis workspace restore {binding}' restores its salvage ({salvage_ref}): HEAD, the index, the per-worktree refs",
				API: "its folder was gone at the reclaim: restore its salvage ({tool:workspace_restore} without from_trash): HEAD, the index, the per-worktree refs"},
			{When: "not_found=lease", Text: "'majlis lease list --all' shows the leases", API: "{tool:lease_list} with all: true shows the leases"},
			{When: "not_found=workspace", Text: "'majlis workspace list' shows the workspaces there are", API: "{tool:workspace_list} shows the workspaces there are"},
			{When: "holder", Text: "acquire leases first ('majlis lease acquire --holder {holder} RESOURCE...')", API: "acquire leases first ({tool:lease_acquire} with holder {holder})"},
		}},
	{Code: "unknown_base", Exit: ExitNotFound,
		Meaning: "the base revision names no commit"},
	{Code: "binding_live", Exit: ExitHeld,
		Meaning: "the binding already has a workspace that is not reclaimed",
		Hints: []Hint{
			{When: "unfinished_request", Text: "an allocation of it has not finished: retry it with --request-id {unfinished_request}", API: "an allocation of it has not finished: retry it with request_id {unfinished_request}"},
			{When: "restore_live", Text: "work in that workspace, or reclaim it first ('majlis workspace reclaim {binding} --preview', then --confirm DIGEST), then restore again: every salvage ref stays",
				API: "work in that workspace, or reclaim it first ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim}), then restore again: every salvage ref stays"},
		}},
	{Code: "workspace_live", Exit: ExitHeld,
		Meaning: "the workspace is in use: a live owner process, leases, or processes working in it",
		Hints: []Hint{
			{When: "reclaim_alone", Text: "a bulk reclaim leaves it out: stop them, or reclaim it alone ('majlis workspace reclaim {binding} --preview', then --confirm DIGEST; no lease token is needed)", API: "a bulk reclaim leaves it out: stop them, or reclaim it alone ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim} with that digest as confirm; no lease token is needed)"},
			{When: "holder", Text: "its holder releases them with 'majlis lease release --holder {holder}' and the lease token printed when they were granted (--token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR); a quarantined one whose writer has stopped: 'majlis lease resolve {lease} --writer-stopped' (no token needed)", API: "its holder releases them ({tool:lease_release} with holder {holder}) with the token returned when they were granted; a quarantined one whose writer has stopped: {tool:lease_resolve} with id {lease} and writer_stopped: true"},
			{Text: "stop the owner process (or wait for it to exit), then reclaim", API: "stop the owner process (or wait for it to exit), then reclaim"},
		}},
	{Code: "peer_overlap", Exit: ExitRefused,
		Meaning: "a retained peer (workspace, worktree or reservation) overlaps the target"},
	{Code: "preview_stale", Exit: ExitRefused,
		Meaning: "what the operation would do changed since the confirmed preview; nothing was changed",
		Hints: []Hint{
			{When: "op=repair", Text: "run 'majlis doctor --repair --preview' again and confirm the new digest", API: NoAPI},
			{When: "op=gc", Text: "run 'majlis gc --preview' again and confirm the new digest (--confirm DIGEST)", API: NoAPI},
			{When: "select binding", Text: "run 'majlis workspace reclaim --{select} --preview' again, or 'majlis workspace reclaim {binding} --preview'", API: NoAPI},
			{When: "select", Text: "run 'majlis workspace reclaim --{select} --preview' again and confirm the new digest (--confirm DIGEST)", API: NoAPI},
			{Text: "run 'majlis workspace reclaim {binding} --preview' again and confirm the new digest (--confirm DIGEST)", API: "preview it again ({tool:workspace_reclaim_preview}) and send the new digest as confirm ({tool:workspace_reclaim})"},
		}},
	{Code: "unconfirmed", Exit: ExitRefused,
		Meaning: "a destructive operation without a confirmed preview; nothing was changed",
		Hints: []Hint{
			{When: "trash_key", Text: "move what you need out of the workspace, or make room for its trash: free disk space, or 'majlis policy set {trash_key} VALUE'; to delete those files, look at 'majlis workspace reclaim {binding} --preview' (it names them as deleted at once), then --confirm DIGEST",
				API: "move what you need out of the workspace, or make room for its trash (free disk space, or the repository's owner changes the policy key {trash_key}); to delete those files, preview it ({tool:workspace_reclaim_preview}: it names them as deleted at once) and send its digest as confirm ({tool:workspace_reclaim})"},
			{When: "op=repair", Text: "run 'majlis doctor --repair --preview', then --confirm DIGEST", API: NoAPI},
			{When: "op=gc", Text: "run 'majlis gc --preview', then --confirm DIGEST", API: NoAPI},
			{When: "op=end", Text: "look at it with 'majlis workspace reclaim {binding} --preview', then reclaim it with --confirm DIGEST", API: "look at it ({tool:workspace_reclaim_preview}), then reclaim it with that digest as confirm ({tool:workspace_reclaim})"},
			{Text: "run 'majlis workspace reclaim {binding} --preview', then --confirm DIGEST", API: "preview it ({tool:workspace_reclaim_preview}), check what it would do, and send its digest as confirm ({tool:workspace_reclaim})"},
		}},
	{Code: "holds_work", Exit: ExitRefused,
		Meaning: "ending a task with its reclaim left the workspace: it holds work a reclaim would salvage (details: its preview's digest)",
		Hints: []Hint{
			{When: "digest", Text: "look at what it holds with 'majlis workspace reclaim {binding} --preview', then reclaim it with 'majlis workspace reclaim {binding} --confirm {digest}'", API: "look at what it holds ({tool:workspace_reclaim_preview}), then reclaim it with confirm {digest} ({tool:workspace_reclaim})"},
		}},
	{Code: "dirty_submodule", Exit: ExitRefused,
		Meaning: "a submodule has changes that salvage cannot capture",
		Hints:   []Hint{{Text: "commit their changes, or pass --salvage-submodules to salvage them too", API: "commit their changes, or send salvage_submodules: true to salvage them too"}}},
	{Code: "repository_mismatch", Exit: ExitRefused,
		Meaning: "the workspace does not belong to the repository its claim names"},
	{Code: "worktree_config_mismatch", Exit: ExitRefused,
		Meaning: "the workspace's own git configuration aims git at another directory"},
	{Code: "locked", Exit: ExitRefused,
		Meaning: "a worktree lock majlis did not set; majlis never lifts it"},
	{Code: "cross_device", Exit: ExitRefused,
		Meaning: "a file system is mounted inside the workspace or its trash folder; what is mounted is untouched",
		Hints:   []Hint{{When: "resumable", Text: "unmount it (what is mounted there was not touched), then retry 'majlis workspace reclaim {binding}' with the same --request-id", API: "unmount it (what is mounted there was not touched), then retry the reclaim ({tool:workspace_reclaim}) with the same request_id"}}},
	{Code: "trash_failed", Exit: ExitError,
		Meaning: "the workspace could not be moved to or deleted from its trash folder",
		Hints:   []Hint{{When: "resumable", Text: "retry 'majlis workspace reclaim {binding}' with the same --request-id; it finishes the deletion", API: "retry the reclaim ({tool:workspace_reclaim}) with the same request_id; it finishes the deletion"}}},
	{Code: "already_initialized", Exit: ExitRefused,
		Meaning: "the repository is registered with another workspace root",
		Hints:   []Hint{{Text: "omit --workspace-root, or pass --path to each allocate", API: NoAPI}}},
	{Code: "branch_exists", Exit: ExitRefused,
		Meaning: "the new workspace's branch already exists; majlis never moves a branch",
		Hints: []Hint{
			{When: "op=restore kept_trash", Text: "restore it from its trash ('majlis workspace restore {binding} --from-trash'), or pass --branch NAME to restore the salvage onto a new branch",
				API: "restore it from its trash ({tool:workspace_restore} with from_trash), or send branch: a new branch to restore the salvage onto"},
			{When: "op=restore", Text: "pass --branch NAME to restore onto a new branch", API: "send branch: a new branch to restore onto"},
			{When: "branch", Text: "pass --branch NAME for a new branch, or --checkout {branch} to work on it as it is", API: "send branch: a new branch's name, or checkout: {branch} to work on it as it is", Adds: true},
			{Text: "pass --branch NAME for a new branch", API: "send branch: a new branch's name", Adds: true},
		}},
	{Code: "branch_checked_out", Exit: ExitRefused,
		Meaning: "the existing branch to work on (checkout) is checked out in another worktree"},
	{Code: "unknown_branch", Exit: ExitNotFound,
		Meaning: "no local branch of that name",
		Hints:   []Hint{{Text: "name an existing local branch (git branch --list), or drop --checkout to create a new one", API: "name an existing local branch (git branch lists them), or omit checkout to create a new one"}}},
	{Code: "path_exists", Exit: ExitRefused,
		Meaning: "something already exists at the workspace's path",
		Hints:   []Hint{{When: "op=allocate", Text: "--path DIR chooses another place", API: "path chooses another place", Adds: true}}},
	{Code: "nested_workspace", Exit: ExitRefused,
		Meaning: "the path lies inside another workspace or worktree, or holds one",
		Hints:   []Hint{{Text: "--path DIR chooses another place; --allow-nested places it inside", API: "path chooses another place; allow_nested: true places it inside", Adds: true}}},
	{Code: "unsafe_path", Exit: ExitRefused,
		Meaning: "a path majlis will not act on (traversal, a symlink out, a git directory, a hard link)"},
	{Code: "reserved_target", Exit: ExitRefused,
		Meaning: "the path overlaps the target of a reclaim in progress",
		Hints: []Hint{{Text: "wait for the reclaim to finish (if its process died: 'majlis workspace recover BINDING' once its reservation expires), or choose another --path",
			API: "wait for the reclaim to finish (if its process died: recover its reservation once it expires), or choose another path"}}},
	{Code: "request_conflict", Exit: ExitRefused,
		Meaning: "the request id was used before with other arguments",
		Hints:   []Hint{{Text: "use a new --request-id for a new request", API: "use a new request_id for a new request"}}},
	{Code: "malformed_record", Exit: ExitRefused,
		Meaning: "a record or ledger majlis cannot read (details.path names it)",
		Hints: []Hint{
			{When: "policy_key", Text: "set it again with 'majlis policy set {policy_key} VALUE'", API: "a person sets it again (majlis policy set {policy_key} VALUE)"},
			{When: "damaged_binding", Text: "'majlis doctor' explains what to do", API: "the repository's owner can run majlis doctor, which explains what to do", Adds: true},
			{When: "damaged=registration", Text: "'majlis doctor' explains", API: "the repository's owner can run majlis doctor, which explains", Adds: true},
			{When: "binding", Text: "'majlis doctor' says what is wrong and what to run", API: "the repository's owner can run majlis doctor, which says what is wrong and what to run", Adds: true},
		}},
	{Code: "workspace_missing", Exit: ExitRefused,
		Meaning: "the workspace's directory is gone",
		Hints: []Hint{
			{When: "trash_gone", Text: "if you moved it, move it back to {trash_path}, then run 'majlis workspace restore {binding} --from-trash' again; otherwise 'majlis workspace restore {binding}' restores its salvage ({salvage_ref}); 'majlis doctor' says more",
				API: "if it was moved, it must go back to {trash_path} before a restore from the trash; otherwise restore its salvage ({tool:workspace_restore} without from_trash)"},
		}},
	{Code: "identity_drift", Exit: ExitRefused,
		Meaning: "the directory or git's entry is no longer the workspace majlis made"},
	{Code: "interrupted", Exit: ExitRefused,
		Meaning: "an earlier operation on it was interrupted (exit 3); this one, by Ctrl-C or SIGTERM, exits 130 or 143 with the same code (details.signal, and details.request_id to resume it)",
		Hints: []Hint{
			{When: "half_purged", Text: "its work is salvaged: 'majlis workspace restore {binding}' restores the latest salvage; 'majlis gc --purge-due' finishes the purge",
				API: "its work is salvaged: restore the latest salvage ({tool:workspace_restore} without from_trash)"},
			{When: "op=restore", Text: "run 'majlis workspace restore {binding}' again with a new --request-id", API: "restore it again ({tool:workspace_restore}) with a new request_id"},
			{When: "resumable", Text: "retry with the same --request-id to see the result", API: "retry with the same request_id to see the result"},
		}},

	{Code: "recorded_failure", Exit: ExitRefused,
		Meaning: "a line of a bulk reclaim replayed from its request record: that workspace was not reclaimed (the message says why)",
		Hints:   []Hint{{Text: "'majlis workspace reclaim {binding} --preview' says why", API: NoAPI}}},

	// Leases and admission.
	{Code: "held", Exit: ExitHeld,
		Meaning: "held by another live owner (a lease or reservation conflict); details.conflicts names it",
		Hints: []Hint{
			{When: "pending", Text: "retry in a moment", API: "retry in a moment"},
			{When: "policy", Text: "wait for {holder} to release it and retry, or let the policy warn instead ('majlis policy set {policy} warn')", API: "wait for {holder} to release it and retry, or ask the repository's owner to let the policy {policy} warn instead"},
			{When: "holder", Text: "wait for {holder} to release it and retry", API: "wait for {holder} to release it and retry"},
		}},
	{Code: "reclaiming", Exit: ExitHeld,
		Meaning: "the checkout is being reclaimed: its files are about to be removed",
		Hints:   []Hint{{Text: "take the lease in another checkout; if that reclaim died, 'majlis workspace recover {reclaim_binding}' retires its reservation once it has expired", API: "take the lease in another checkout; if that reclaim died, {tool:workspace_recover} with binding {reclaim_binding} retires its reservation once it has expired"}}},
	{Code: "recoverable", Exit: ExitHeld,
		Meaning: "held by a lease whose owner process is proven dead: it can be released",
		Hints:   []Hint{{Text: "release it ('majlis lease release --holder {holder} {lease}': no token is needed once its owner is dead), then retry", API: "release it ({tool:lease_release} with holder {holder} and ids [{lease}]: no token is needed once its owner is dead), then retry"}}},
	{Code: "no_free_port", Exit: ExitHeld,
		Meaning: "host:port:auto found no free port in the policy's port_range",
		Hints:   []Hint{{Text: "release ports no longer needed ('majlis lease list' shows them), or widen the range ('majlis policy set port_range LO-HI')", API: "release ports no longer needed ({tool:lease_list} shows them), or ask the repository's owner to widen the policy's port_range"}}},
	{Code: "token_required", Exit: ExitRefused,
		Meaning: "renewing or releasing another process's lease needs its lease token",
		Hints: []Hint{
			{When: "token_of_holder", Text: "acquire with {holder}'s token, the one its leases were granted with: the same --token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR", API: "send {holder}'s token, the one its leases were granted with"},
			{When: "owner_dead", Text: "its owner process {owner_pid} is proven dead: release it, no token is needed ('majlis lease release --holder {holder} {lease}'), or reclaim its workspace ('majlis workspace reclaim --dead --preview')", API: "its owner process {owner_pid} is proven dead: release it, no token is needed ({tool:lease_release} with holder {holder} and ids [{lease}]), or reclaim its workspace ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim} with that digest)"},
			{When: "owner_pid", Text: "supply the token the leases were granted with (--token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR), or run it from the lease's owner process (pid {owner_pid}); once that process is dead, releasing needs no token", API: "send the token returned when the leases were granted; once the owner process (pid {owner_pid}) is dead, releasing needs no token (over the server, being that process does not stand in for the token)"},
			{Text: "supply the token the leases were granted with (--token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR), or run it from the lease's owner process", API: "send the token returned when the leases were granted"},
		}},
	{Code: "token_in_use", Exit: ExitRefused,
		Meaning: "the lease token given already guards another holder's leases: each task needs a token of its own",
		Hints:   []Hint{{Text: "give {holder} a token of its own: its own --token-file F (begin and lease acquire create a missing one), or MAJLIS_TOKEN_DIR (a file per task), or none (one is generated)", API: "send a token of {holder}'s own, or none (one is generated and returned once)"}}},
	{Code: "quarantined", Exit: ExitRefused,
		Meaning: "a lease expired without release and still blocks until released or resolved",
		Hints: []Hint{
			{When: "op=acquire", Text: "its holder can release it ('majlis lease release --holder {holder} {lease}'); once its writer has stopped, 'majlis lease resolve {lease} --writer-stopped' lifts the quarantine", API: "its holder can release it ({tool:lease_release} with holder {holder} and ids [{lease}]); once its writer has stopped, {tool:lease_resolve} with id {lease} and writer_stopped: true lifts the quarantine"},
			{When: "lease", Text: "release it ('majlis lease release --holder {holder} {lease}') and acquire again", API: "release it ({tool:lease_release} with holder {holder} and ids [{lease}]) and acquire again"},
			{Text: "release them ('majlis lease release --holder {holder}') and acquire again", API: "release them ({tool:lease_release} with holder {holder}) and acquire again"},
		}},
	{Code: "policy_blocked", Exit: ExitRefused,
		Meaning: "changed paths lie outside the holder's leases and the policy blocks them (details.gaps)"},
	{Code: "not_holder", Exit: ExitRefused,
		Meaning: "the lease belongs to another holder"},
	{Code: "not_quarantined", Exit: ExitRefused,
		Meaning: "only an expired, unreleased lease needs resolving"},
	{Code: "hook_exists", Exit: ExitRefused,
		Meaning: "a pre-commit hook majlis did not write is installed; it is left untouched",
		Hints: []Hint{
			{When: "backup", Text: "move {backup} aside (or merge the two hooks), then run 'majlis hook install' again", API: NoAPI},
			{Text: "pass --force to move it to pre-commit.majlis-backup (the majlis hook runs it first), or call 'majlis check --if-holder' from it yourself", API: NoAPI},
		}},

	{Code: "coordination_unavailable", Exit: ExitHeld,
		Meaning: "the coordination cluster (etcd) did not answer in time: no shared lease was granted, and none here in its place",
		Hints: []Hint{{Text: "check that the endpoints ({endpoints}) are up and reachable from this host, then retry; file and host leases keep working",
			API: "check that the coordination cluster's endpoints ({endpoints}) are up and reachable from the server's host, then retry; file and host leases keep working"}}},
	{Code: "duplicate_machine_id", Exit: ExitRefused,
		Meaning: "another live host of the coordination cluster has this machine's id, so their processes could not be told apart",
		Hints: []Hint{{Text: "give each host its own machine id (hosts cloned from one image share /etc/machine-id: regenerate it), or wait for the other host's registration to lapse if it is gone",
			API: "give each host its own machine id (hosts cloned from one image share it), or wait for the other host's registration to lapse if it is gone"}}},
	{Code: "cluster_changed", Exit: ExitRefused,
		Meaning: "the coordination cluster is not the one this repository used (restored from a backup, or another cluster): shared leases are refused until an operator confirms it",
		Hints: []Hint{{Text: "once the cluster is known to hold every shared lease it should, confirm it: 'majlis policy set coordination.etcd.cluster_id {cluster_id}'",
			API: "once the cluster is known to hold every shared lease it should, the repository's owner confirms it by setting the policy's coordination.etcd.cluster_id to {cluster_id}"}}},

	// The server.
	{Code: "server_not_running", Exit: ExitNotFound,
		Meaning: "no server runs for the repository"},
	{Code: "server_stale_lease", Exit: ExitNotFound,
		Meaning: "the server's lease names a dead owner"},
	{Code: "server_starting", Exit: ExitHeld,
		Meaning: "a server is starting"},
	{Code: "server_unresponsive", Exit: ExitHeld,
		Meaning: "a live server holds the lease but does not answer"},
	{Code: "busy", Exit: ExitHeld,
		Meaning: "every handler of the server stayed taken for its bounded wait (HTTP 503, Retry-After); nothing of the request ran: retry"},
	{Code: "stopping", Exit: ExitHeld,
		Meaning: "the server is stopping (HTTP 503): a call under way stopped at a safe point and released what it held; retry it with the same request id once a server runs"},
	{Code: "server_foreign", Exit: ExitRefused,
		Meaning: "the recorded port answers, but not as the leaseholder"},
	{Code: "server_version_mismatch", Exit: ExitRefused,
		Meaning: "the leaseholder runs another majlis version"},
	{Code: "unsafe_state", Exit: ExitRefused,
		Meaning: "the state folder or lease file is not private to this user"},
	{Code: "server_fenced", Exit: ExitError,
		Meaning: "the server's lease was replaced; it exits at once"},
	{Code: "server_start_failed", Exit: ExitError,
		Meaning: "the server did not start (details.reason has the end of its log)"},

	// Reservations (reclaim reservations and lease files).
	{Code: "owner_alive", Exit: ExitHeld,
		Meaning: "the reservation's owner process is alive"},
	{Code: "owner_unknown", Exit: ExitHeld,
		Meaning: "the reservation owner's death cannot be proven (another host or boot)"},
	{Code: "not_expired", Exit: ExitHeld,
		Meaning: "the reservation has not expired yet"},
	{Code: "unsupported_filesystem", Exit: ExitRefused,
		Meaning: "the state folder is not on a local file system"},
	{Code: "not_owner", Exit: ExitRefused,
		Meaning: "this process does not own the reservation"},
	{Code: "lease_changed", Exit: ExitRefused,
		Meaning: "the reservation changed during recovery"},
	{Code: "exists", Exit: ExitHeld,
		Meaning: "a record already published by someone else"},

	// Unexpected failures (1).
	{Code: "reservation_failed", Exit: ExitError, Fallback: true,
		Meaning: "a reservation could not be read or written"},
	{Code: "git_failed", Exit: ExitError, Fallback: true,
		Meaning: "git failed unexpectedly (details has its exit code and stderr)"},
	{Code: "admission_failed", Exit: ExitError, Fallback: true,
		Meaning: "a lease ledger could not be read or written"},
	{Code: "internal", Exit: ExitError, Fallback: true,
		Meaning: "a bug or an unexpected I/O error; a panic carries details.panic"},
}
