package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP tools. Each one calls the same operation as its HTTP route
// (package server's api), so a tool and a route cannot disagree. A
// refusal is a tool error (isError) whose text says what was refused, why
// and what to do next, and whose structured content is the CLI's error
// object with its exit class: {"error": {"code", "message", "details",
// "exit_code"}}.

// ReclaimToolInput is workspace_reclaim's input: unlike the route, the
// tool takes no "yes": an agent reclaims only what it previewed.
type ReclaimToolInput struct {
	Binding           string `json:"binding" jsonschema:"the workspace's binding (task id)"`
	Confirm           string `json:"confirm" jsonschema:"the digest returned by workspace_reclaim_preview (sha256:...)"`
	SalvageSubmodules bool   `json:"salvage_submodules,omitempty" jsonschema:"salvage dirty submodules too, instead of refusing"`
	KeepTrash         string `json:"keep_trash,omitempty" jsonschema:"keep the moved workspace in its trash folder this long (a Go duration; 0 deletes it at once) instead of the policy's trash.keep (default 24h); until then workspace_restore with from_trash undoes the reclaim"`
	RequestID         string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// ToolNames lists the MCP tools, in the order they are added.
var ToolNames = []string{
	"begin_task", "end_task", "workspace_allocate", "workspace_list", "workspace_show", "workspace_salvage",
	"workspace_reclaim_preview", "workspace_reclaim", "workspace_restore", "workspace_recover",
	"workspace_reclaim_bulk_preview", "workspace_reclaim_bulk", "lease_acquire", "lease_renew",
	"lease_release", "lease_list", "lease_resolve", "check_edits", "heartbeat",
}

// toolAnnotations tell an MCP client how each tool acts, for its approval
// prompts: the read-only ones change nothing; the others only add, except
// workspace_reclaim, workspace_reclaim_bulk and end_task (with reclaim), which delete a
// workspace's directory after salvaging what it holds. All of them act on
// this repository and machine only (a closed world).
var toolAnnotations = func() map[string]*mcp.ToolAnnotations {
	no, yes := new(bool), new(bool)
	*yes = true
	m := map[string]*mcp.ToolAnnotations{}
	add := func(name, title string, readOnly, destructive, idempotent bool) {
		a := &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, IdempotentHint: idempotent || readOnly, OpenWorldHint: no, DestructiveHint: no}
		if destructive {
			a.DestructiveHint = yes
		}
		m[name] = a
	}
	add("begin_task", "Begin a task", false, false, false)
	add("end_task", "End a task", false, true, true)
	add("workspace_allocate", "Allocate a workspace", false, false, false)
	add("workspace_list", "List workspaces", true, false, true)
	add("workspace_show", "Show a workspace", true, false, true)
	add("workspace_salvage", "Salvage a workspace's work", false, false, false)
	add("workspace_reclaim_preview", "Preview a reclaim", true, false, true)
	add("workspace_reclaim", "Reclaim a workspace", false, true, true)
	add("workspace_restore", "Restore a workspace", false, false, false)
	add("workspace_recover", "Recover a dead reclaim's reservation", false, false, true)
	add("workspace_reclaim_bulk_preview", "Preview a bulk reclaim", true, false, true)
	add("workspace_reclaim_bulk", "Reclaim the released or dead workspaces", false, true, true)
	add("lease_acquire", "Acquire leases", false, false, false)
	add("lease_renew", "Renew leases", false, false, true)
	add("lease_release", "Release leases", false, false, true)
	add("lease_list", "List leases", true, false, true)
	add("lease_resolve", "Resolve a quarantined lease", false, false, true)
	add("check_edits", "Check edits against leases", true, false, true)
	add("heartbeat", "Keep leases renewed", false, false, true)
	return m
}()

const refusalNote = ` A refusal is a tool error: its structured content is {"error": {"code", "message", "details", "exit_code"}}, exit_code 3 meaning refused for safety, 4 held by someone else, 5 not found, 2 a bad argument; details.hint, when present, says what to do next, naming these tools and their arguments.`

// newMCPServer builds the MCP server whose tools act through a.
func newMCPServer(a *api, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "majlis", Version: version}, &mcp.ServerOptions{
		Instructions: "majlis gives each task its own git worktree (a workspace), grants leases on files, " +
			"repository paths and host names such as ports, and takes workspaces back without losing work. " +
			"Start a task with begin_task, work only inside the workspace path it returns, keep your leases " +
			"alive with heartbeat, and finish with end_task. Never delete a workspace by hand: " +
			"workspace_reclaim_preview then workspace_reclaim salvages every uncommitted change first.",
	})
	srv.AddReceivingMiddleware(structuredRefusals)

	tool(srv, a, "begin_task", `Start a task: allocate its own workspace (a git worktree on branch majlis/TASK) and declare the repository paths it will touch (intent leases held by TASK). Call this first, before editing anything; then work only inside result.workspace.path. Keep result.token: renewing and releasing the leases needs it (pass it to heartbeat and end_task). With shared, no workspace is allocated and the intents are declared in the checkout named by checkout. Retrying with the same request_id returns the recorded result or resumes. Refused with held (exit 4) when another task's intents conflict and the policy blocks, binding_live (exit 4) when TASK already has a workspace (use workspace_show to find it), invalid_argument (exit 2) for a path that is neither literal nor DIR/**. When the intents are refused after the workspace was made, the workspace stays: the refusal's details.workspace and details.request_id name it; retry with that request_id once the conflict is gone (it resumes), or take the workspace back with workspace_reclaim_preview and workspace_reclaim.`,
		a.begin)
	tool(srv, a, "end_task", `Finish a task: release all its leases (with the token begin_task returned) and release its workspace. The files stay until reclaimed: commit or salvage what you want kept, then reclaim with workspace_reclaim_preview and workspace_reclaim (or pass reclaim: true to have a clean workspace reclaimed now; a workspace with work in it is left, and result.end.not_reclaimed says why). A task begun with shared (or whose workspace was reclaimed) has no workspace: its leases are released and result.end.workspace is null. Ending a task twice is harmless. Stops the server renewing the task's leases on heartbeats. Refused with token_required (exit 3) when the token is missing or wrong, not_found (exit 5) when the task has neither a workspace nor any lease.`,
		a.end)
	tool(srv, a, "workspace_allocate", `Create a workspace (linked git worktree) for a binding on a new branch (default majlis/BINDING) at a base revision (default HEAD of the main worktree). Use begin_task instead to also declare intents. Refuses (exit 4, binding_live) a binding that already has a live workspace, (exit 3) a path that exists or lies inside another worktree, (exit 5) an unknown base. A refusal leaves nothing behind.`,
		a.allocate)
	tool(srv, a, "workspace_list", `List the repository's workspaces with their state (active, released, reclaiming, missing; with all also reclaimed). Read-only: call it to find a task's workspace or what can be reclaimed. To spot a crashed agent, read each workspace's owner_state (alive, exited or unknown: its recorded owner process), reclaimable (whether a reclaim would go ahead now) and blocked_by (each reason it would refuse, with a hint that says what resolves it; leases whose owner is proven dead are marked recoverable and block nothing). workspace_reclaim_bulk_preview with select dead takes back every workspace whose owner is proven dead.`,
		a.list)
	tool(srv, a, "workspace_show", `Show one workspace with whether it has uncommitted changes (dirty) and how many of each kind. Read-only. Not found (exit 5) when the binding has no workspace.`,
		a.show)
	tool(srv, a, "workspace_salvage", `Preserve the workspace's uncommitted work (files, index, commits only it holds) on a salvage ref refs/majlis/salvage/BINDING/N without touching the workspace. Call it before risky operations; a clean workspace gives clean: true and no ref. workspace_restore brings a salvage back. Refused with not_found (exit 5) when the binding has no workspace, workspace_missing (exit 3) when its directory is gone. The changes of dirty submodules and nested repositories are not captured: result.salvage.dirty_submodules and nested_repositories list them; commit their changes first. Special files (FIFOs, sockets, devices) hold no data and are not kept: special_files and special_paths name them.`,
		a.salvage)
	tool(srv, a, "workspace_reclaim_preview", `Preview a reclaim: what would be salvaged (with why), moved and deleted, which peers were checked, and a digest of it all. Changes nothing. Show it to whoever decides, then pass its digest as confirm to workspace_reclaim. Refused with workspace_live (exit 4) while the task's process runs or it holds leases (end_task first), peer_overlap (exit 3) when another workspace overlaps it, not_found (exit 5) when the binding has no workspace.`,
		a.preview)
	mcp.AddTool(srv, &mcp.Tool{Name: "workspace_reclaim", Annotations: toolAnnotations["workspace_reclaim"], Description: `Reclaim a workspace after previewing it: salvage everything its removal would lose and move it aside into its trash folder, kept for the undo window (the policy's trash.keep, default 24h; keep_trash overrides it) and purged afterwards; the branch is kept. confirm must be the digest workspace_reclaim_preview returned: if anything changed since, it refuses with preview_stale (exit 3, details say what changed) and nothing happens; preview again and decide again. The result names the salvage ref; workspace_restore brings the work back. Also refused with workspace_live (exit 4) while its task holds leases or its process runs (end_task first), peer_overlap (exit 3) when another workspace overlaps it; usage (exit 2) for a confirm that is not a digest.` + refusalNote},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ReclaimToolInput) (*mcp.CallToolResult, *wire.ReclaimResponse, error) {
			if in.Confirm == "" {
				return nil, nil, a.toolError(usage("confirm is required: the digest of workspace_reclaim_preview"))
			}
			ctx, cancel := a.s.workContext(ctx)
			defer cancel()
			res, err := a.reclaim(ctx, &wire.ReclaimRequest{Binding: in.Binding, Confirm: in.Confirm, SalvageSubmodules: in.SalvageSubmodules,
				KeepTrash: in.KeepTrash, RequestID: in.RequestID})
			if err != nil {
				return nil, nil, a.toolErrorIn(ctx, err)
			}
			return nil, res, nil
		})
	tool(srv, a, "workspace_restore", `Recreate a reclaimed workspace from its latest salvage (or salvage N) as a new workspace, with its files, index, HEAD and interrupted operation; with from_trash, move back the directory a reclaim with keep_trash kept. Refused with binding_live (exit 4) while the binding has a live workspace, branch_exists (exit 3) when its branch has moved (send branch: a new name), not_found (exit 5) when the binding has no salvage.`,
		a.restore)
	tool(srv, a, "workspace_recover", `Retire the reclaim reservation that a reclaim which died left on a binding, once it has expired and its owner process is proven dead (same machine and boot, no process with its pid and start time). It retires the reservation only, never a workspace, its files, its claim or a ref; then workspace_reclaim_preview and workspace_reclaim can run again. Call it when a refusal names a reclaim of that binding that is no longer running (reclaiming, exit 4). Refused with owner_alive (exit 4) while the owner runs (that reclaim is still working: wait), owner_unknown (exit 4) when its death cannot be proven from here, not_expired (exit 4) before it expires (retry later), not_found (exit 5) when the binding has no reservation.`,
		a.recoverReservation)
	tool(srv, a, "workspace_reclaim_bulk_preview", `Preview a bulk reclaim: every released workspace (select released: its task handed it back) or every workspace whose recorded owner process is proven dead (select dead: a crashed agent; its leases are recovered, recover_leases names them), each with its reclaim preview, and one digest over the whole set. A workspace a reclaim would refuse now (processes still work inside it, its leases are held by a live owner) is named with its refusal and left alone. Changes nothing. Show it to whoever decides, then pass its digest as confirm to workspace_reclaim_bulk. Refused with invalid_argument (exit 2) for another select.`,
		a.bulkPreview)
	tool(srv, a, "workspace_reclaim_bulk", `Reclaim the set a bulk preview showed (select released or dead, confirm its digest): each workspace is salvaged and moved into its trash folder as workspace_reclaim does, and the leases of a dead owner are released as recovered (result.workspaces[].result.recovered_leases). If the set or any preview changed since, it refuses with preview_stale (exit 3) and nothing happens: preview again. A workspace refused on its own is a line with status refused and its error; the others go ahead. Retrying with the same request_id finishes the confirmed set.`,
		a.bulkReclaim)
	tool(srv, a, "lease_acquire", `Acquire leases, all or none: file:PATH (an exact file in a checkout), intent:PATH or intent:DIR/** (paths you will touch, seen by every worktree), host:NAME (a machine-wide singleton such as host:port:3000; host:port:auto picks a free port). Call it before writing a shared file or binding a port. Pass checkout (or cwd) as your working directory. Keep result.token for renew and release. Refused with held (exit 4, details.conflicts names the holders) when someone else holds a conflicting lease: wait, or pick another resource; quarantined (exit 3) when an expired lease still blocks it; reclaiming (exit 4) when the checkout is being reclaimed; no_free_port (exit 4) when host:port:auto finds none; unsafe_path (exit 3) for a path outside the checkout or inside a git directory.`,
		a.acquire)
	tool(srv, a, "lease_renew", `Extend the holder's active leases (all, or ids) to now + ttl. Needs the lease token. Prefer heartbeat, which keeps them renewed for you. Refused with token_required (exit 3) without the right token, quarantined (exit 3) when a lease already expired: release it and acquire again.`,
		a.renew)
	tool(srv, a, "lease_release", `Release the holder's leases (all, or ids); this also lifts their quarantine. Needs the lease token. Releasing twice is harmless. Refused with token_required (exit 3) without the right token, unless the lease's owner process is proven dead (a crashed agent's leases need no token), not_holder (exit 3) for an id of another holder's lease.`,
		a.releaseLeases)
	tool(srv, a, "lease_list", `List the repository's leases and the machine's host leases with their holder, state (active, quarantined, pending) and expiry. Read-only: call it to see who holds what before acquiring.`,
		a.leases)
	tool(srv, a, "lease_resolve", `Lift the quarantine of an expired lease (state quarantined) on your attestation that its writer has stopped: writer_stopped must be true. Expiry alone never proves that a writer stopped, so a quarantined lease blocks others until it is released (lease_release, by its holder) or resolved here. Only attest what you know: the process that wrote under the lease has exited. Refused with not_quarantined (exit 3) for an active, released or pending lease, invalid_argument (exit 2) without writer_stopped, not_found (exit 5) for an unknown id (lease_list with all: true shows them).`,
		a.resolve)
	tool(srv, a, "check_edits", `Compare the changed files of a checkout (git status) with its holder's leases: every changed path outside them is an enforcement gap. Call it before committing. checkout must lie in a worktree of this repository (repository_mismatch, exit 3, otherwise). With the policy enforcement_gap=block it refuses (exit 3, policy_blocked, details.gaps lists the paths): acquire leases for them or undo the edits.`,
		a.check)
	tool(srv, a, "heartbeat", `Keep the holder's leases renewed: each heartbeat renews them now, and the server keeps renewing them until no heartbeat has come for the grace period (result.grace, result.renew_until); then they expire as usual. Send one well before renew_until, for as long as you work. Needs the lease token. Refused with token_required (exit 3) without the right token, not_found (exit 5) when the holder has no active lease.`,
		a.heartbeat)
	return srv
}

// tool adds a tool whose input is In and whose result is f's.
func tool[In, Out any](srv *mcp.Server, a *api, name, desc string, f func(context.Context, *In) (Out, error)) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc + refusalNote, Annotations: toolAnnotations[name]},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			ctx, cancel := a.s.workContext(ctx)
			defer cancel()
			out, err := f(ctx, &in)
			if err != nil {
				var zero Out
				return nil, zero, a.toolErrorIn(ctx, err)
			}
			return nil, out, nil
		})
}

// A toolError is a refusal returned by a tool.
type toolError struct{ r wire.Refusal }

func (e *toolError) Error() string {
	msg := fmt.Sprintf("refused (%s, exit %d): %s", e.r.Code, e.r.ExitCode, e.r.Message)
	if h := e.r.Hint(); h != "" && !strings.Contains(msg, h) {
		msg += "\nNext: " + h
	}
	return msg
}

func (a *api) toolError(err error) error { return &toolError{a.refusal(err)} }

// toolErrorIn is toolError of an operation run with ctx: one the server
// stopped is refused with the code stopping.
func (a *api) toolErrorIn(ctx context.Context, err error) error {
	if rf, ok := a.stopped(ctx, err); ok {
		return &toolError{rf}
	}
	return a.toolError(err)
}

// structuredRefusals gives a tool error its structured content: the
// refusal object, as the HTTP API returns it.
func structuredRefusals(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if tr, ok := res.(*mcp.CallToolResult); ok && err == nil && tr.IsError {
			// Tool handlers return only toolErrors; any other error is
			// the SDK's refusal of the arguments (the input schema).
			var te *toolError
			r := wire.Refusal{Code: "usage", ExitCode: 2, Details: map[string]any{}}
			if errors.As(tr.GetError(), &te) {
				r = te.r
			} else if err := tr.GetError(); err != nil {
				r.Message = clip(err.Error(), maxMessage)
			}
			if b, merr := json.Marshal(map[string]any{"error": r}); merr == nil {
				tr.StructuredContent = json.RawMessage(b)
			}
		}
		return res, err
	}
}

// mcpHandler serves the MCP tools over streamable HTTP, sessionless:
// every request stands alone, and nothing (heartbeats included) depends
// on a session.
func (s *srv) mcpHandler() http.Handler {
	srv := newMCPServer(&api{s: s, surface: wire.SurfaceMCP}, s.o.Version)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: maxBody})
}
