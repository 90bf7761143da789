package client_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession is an MCP client session over 'majlis mcp' in dir, and a call
// that returns a tool's structured content.
func mcpSession(t *testing.T, dir string) (*mcp.ClientSession, func(name string, args any) (map[string]any, bool)) {
	t.Helper()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "orchestrator", Version: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--repo", dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, func(name string, args any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
		return m, res.IsError
	}
}

// TestCrashedAgentThroughMCP is the crashed agent's story as an MCP
// client (the go-sdk's, over 'majlis mcp') lives it: the repository not
// initialized yet (the session says so and offers init), then begin_task
// with an owner process, kill -9, workspace_list shows it reclaimable,
// the bulk preview of the dead and its confirmation, the work on the
// salvage ref and the leases recorded as recovered.
func TestCrashedAgentThroughMCP(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("src/a.go", "package src\n")
	r.Commit("one file")
	t.Cleanup(func() { stopServer(r.Dir) })

	// Uninitialized: the session opens, says what to run, and offers init.
	cs, call := mcpSession(t, r.Dir)
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "not initialized") || !strings.Contains(ins, "init") {
		t.Fatalf("the instructions on an uninitialized repository: %q", ins)
	}
	var tools []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl.Name)
	}
	if len(tools) != 1 || tools[0] != "init" {
		t.Fatalf("tools on an uninitialized repository: %v, want init", tools)
	}
	m, isErr := call("init", map[string]any{})
	if repo, _ := m["repository"].(map[string]any); isErr || repo["id"] == "" || !strings.Contains(m["next"].(string), "reconnect") {
		t.Fatalf("init: %v", m)
	}
	cs.Close()

	_, call = mcpSession(t, r.Dir)
	ok := func(name string, args any) map[string]any {
		t.Helper()
		m, isErr := call(name, args)
		if isErr {
			t.Fatalf("%s refused: %v", name, m)
		}
		return m
	}
	agent := ownerProcess(t)
	b := ok("begin_task", map[string]any{"task": "T-1", "paths": []string{"src/**"}, "owner_pid": agent.Process.Pid})
	ws := b["workspace"].(map[string]any)
	if err := os.WriteFile(filepath.Join(ws["path"].(string), "work.txt"), []byte("unsaved work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	leaseID := b["leases"].([]any)[0].(map[string]any)["id"]
	killHard(t, agent)

	listed := ok("workspace_list", map[string]any{})["workspaces"].([]any)
	w := listed[0].(map[string]any)
	if len(listed) != 1 || w["owner_state"] != "exited" || w["reclaimable"] != true || len(w["blocked_by"].([]any)) != 0 {
		t.Fatalf("workspace_list after the crash: %v", w)
	}
	bp := ok("workspace_reclaim_bulk_preview", map[string]any{"select": "dead"})["bulk_preview"].(map[string]any)
	items := bp["workspaces"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["binding"] != "T-1" {
		t.Fatalf("the bulk preview of the dead: %v", bp)
	}
	if rl := items[0].(map[string]any)["preview"].(map[string]any)["recover_leases"].([]any); len(rl) != 1 {
		t.Fatalf("the preview's leases to recover: %v", rl)
	}
	if m, isErr := call("workspace_reclaim_bulk", map[string]any{"select": "dead", "confirm": "sha256:" + strings.Repeat("0", 64)}); !isErr ||
		m["error"].(map[string]any)["code"] != "preview_stale" {
		t.Fatalf("a bulk reclaim confirming another digest: %v", m)
	}
	br := ok("workspace_reclaim_bulk", map[string]any{"select": "dead", "confirm": bp["digest"]})["bulk_reclaim"].(map[string]any)
	line := br["workspaces"].([]any)[0].(map[string]any)
	res, _ := line["result"].(map[string]any)
	if br["reclaimed"] != float64(1) || line["status"] != "reclaimed" || res == nil {
		t.Fatalf("the bulk reclaim of the dead: %v", br)
	}
	if rec := res["recovered_leases"].([]any); len(rec) != 1 || rec[0].(map[string]any)["id"] != leaseID {
		t.Fatalf("recovered leases %v, want %v", rec, leaseID)
	}
	if got := salvagedFile(t, r.Dir, res["salvage_ref"].(string), "work.txt"); got != "unsaved work\n" {
		t.Fatalf("the salvage keeps %q", got)
	}
	leases := ok("lease_list", map[string]any{"holder": "T-1", "all": true})["leases"].([]any)
	if l := leases[0].(map[string]any); len(leases) != 1 || l["state"] != "released" || l["forced"] != nil {
		t.Fatalf("the crashed agent's lease: %v; want released as a recovery", leases)
	}
}
