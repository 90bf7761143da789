package server

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession connects an MCP client to the env's tools in memory.
func (e *apiEnv) mcpSession() *mcp.ClientSession {
	e.t.Helper()
	srv := newMCPServer(&api{s: e.s, surface: wire.SurfaceMCP}, "test")
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool; it returns its structured content and whether
// it is a tool error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("%s: structured content %s: %v (content %v)", name, b, err, res.Content)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no text content", name)
	}
	return m, res.IsError
}

func toolOK(t *testing.T, cs *mcp.ClientSession, name string, args any) map[string]any {
	t.Helper()
	m, isErr := callTool(t, cs, name, args)
	if isErr {
		t.Fatalf("%s refused: %v", name, m)
	}
	return m
}

func toolRefused(t *testing.T, cs *mcp.ClientSession, name string, args any, code string, exit int) map[string]any {
	t.Helper()
	m, isErr := callTool(t, cs, name, args)
	er := obj(m, "error")
	if !isErr || er["code"] != code || er["exit_code"] != float64(exit) {
		t.Fatalf("%s: error=%v %v; want code %s, exit %d", name, isErr, m, code, exit)
	}
	return er
}

func TestMCPToolsListed(t *testing.T) {
	e := newAPIEnv(t)
	cs := e.mcpSession()
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		if a := tl.Annotations; a == nil || a.Title == "" || a.DestructiveHint == nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v", tl.Name, a)
		} else if *a.DestructiveHint != (tl.Name == "workspace_reclaim" || tl.Name == "workspace_reclaim_bulk" || tl.Name == "end_task") {
			t.Errorf("%s: destructive %v", tl.Name, *a.DestructiveHint)
		}
		if tl.InputSchema == nil || tl.OutputSchema == nil {
			t.Errorf("%s: input or output schema missing", tl.Name)
		}
		if !strings.Contains(tl.Description, "exit_code") || len(tl.Description) < 200 {
			t.Errorf("%s: the description does not say what a refusal means: %q", tl.Name, tl.Description)
		}
	}
	want := slices.Clone(ToolNames)
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

func TestMCPTools(t *testing.T) {
	e := newAPIEnv(t)
	cs := e.mcpSession()

	b := toolOK(t, cs, "begin_task", map[string]any{"task": "T-3", "paths": []string{"src/**"}})
	token := b["token"].(string)
	path := obj(b, "workspace")["path"].(string)
	toolRefused(t, cs, "begin_task", map[string]any{"task": "T-3", "paths": []string{"src/**"}, "request_id": "other"}, "binding_live", 4)
	toolRefused(t, cs, "begin_task", map[string]any{"task": "T-3"}, "usage", 2) // paths missing: the input schema refuses

	if ws := toolOK(t, cs, "workspace_list", map[string]any{})["workspaces"].([]any); len(ws) != 1 {
		t.Fatalf("workspace_list: %v", ws)
	}
	writeFile(t, filepath.Join(path, "src", "f3.go"), "package src // edited by the agent\n")
	if sh := obj(toolOK(t, cs, "workspace_show", map[string]any{"binding": "T-3"}), "workspace"); sh["dirty"] != true {
		t.Fatalf("workspace_show: %v", sh)
	}
	if ck := toolOK(t, cs, "check_edits", map[string]any{"checkout": path}); len(ck["gaps"].([]any)) != 0 {
		t.Fatalf("check_edits: %v", ck)
	}
	if sv := obj(toolOK(t, cs, "workspace_salvage", map[string]any{"binding": "T-3"}), "salvage"); sv["clean"] != false {
		t.Fatalf("workspace_salvage: %v", sv)
	}

	acq := toolOK(t, cs, "lease_acquire", map[string]any{"holder": "T-3", "resources": []string{"host:port:auto"}, "token": token})
	if len(acq["ports"].([]any)) != 1 {
		t.Fatalf("lease_acquire: %v", acq)
	}
	held := toolRefused(t, cs, "lease_acquire", map[string]any{"holder": "T-4", "resources": []string{"intent:src/f3.go"}, "checkout": path}, "held", 4)
	_ = held
	toolOK(t, cs, "lease_renew", map[string]any{"holder": "T-3", "token": token, "ttl": "20m"})
	toolRefused(t, cs, "lease_renew", map[string]any{"holder": "T-3"}, "token_required", 3)
	if hb := obj(toolOK(t, cs, "heartbeat", map[string]any{"holder": "T-3", "token": token}), "heartbeat"); len(hb["leases"].([]any)) != 2 {
		t.Fatalf("heartbeat: %v", hb)
	}
	if ls := toolOK(t, cs, "lease_list", map[string]any{"holder": "T-3"})["leases"].([]any); len(ls) != 2 {
		t.Fatalf("lease_list: %v", ls)
	}
	toolRefused(t, cs, "workspace_reclaim_preview", map[string]any{"binding": "T-404"}, "not_found", 5)
	if rel := toolOK(t, cs, "lease_release", map[string]any{"holder": "T-3", "token": token, "ids": []string{acq["leases"].([]any)[0].(map[string]any)["id"].(string)}}); len(rel["leases"].([]any)) != 1 {
		t.Fatalf("lease_release: %v", rel)
	}
	end := obj(toolOK(t, cs, "end_task", map[string]any{"task": "T-3", "token": token}), "end")
	if obj(end, "workspace")["state"] != "released" {
		t.Fatalf("end_task: %v", end)
	}

	pv := obj(toolOK(t, cs, "workspace_reclaim_preview", map[string]any{"binding": "T-3"}), "preview")
	er := toolRefused(t, cs, "workspace_reclaim", map[string]any{"binding": "T-3", "confirm": "sha256:" + strings.Repeat("0", 64)}, "preview_stale", 3)
	if !strings.Contains(er["message"].(string), "preview") {
		t.Fatalf("preview_stale message: %v", er)
	}
	toolRefused(t, cs, "workspace_reclaim", map[string]any{"binding": "T-3", "confirm": ""}, "usage", 2)
	rc := obj(toolOK(t, cs, "workspace_reclaim", map[string]any{"binding": "T-3", "confirm": pv["digest"]}), "reclaim")
	if rc["removed"] != true {
		t.Fatalf("workspace_reclaim: %v", rc)
	}
	rs := obj(toolOK(t, cs, "workspace_restore", map[string]any{"binding": "T-3"}), "restore")
	if got := readFile(t, filepath.Join(path, "src", "f3.go")); got != "package src // edited by the agent\n" || rs == nil {
		t.Fatalf("restored f3.go: %q (%v)", got, rs)
	}
	toolOK(t, cs, "workspace_allocate", map[string]any{"binding": "T-5"})
}

// TestMCPOverHTTP reaches the tools at /mcp through the guard, with the
// SDK's streamable client.
func TestMCPOverHTTP(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	hc := &http.Client{Transport: bearer{e.token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.hs.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ws := obj(toolOK(t, cs, "workspace_allocate", map[string]any{"binding": "H-1"}), "workspace")
	if ws["binding"] != "H-1" {
		t.Fatalf("workspace_allocate: %v", ws)
	}
	toolRefused(t, cs, "workspace_allocate", map[string]any{"binding": "H-1"}, "binding_live", 4)

	// Without the token the client cannot even connect.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.hs.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil); err == nil {
		t.Fatal("connected without the token")
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

var update = flag.Bool("update", false, "rewrite testdata/mcp_tools.json")

// TestMCPToolsGolden pins every tool's name, description, input schema
// and annotations: agents depend on them, so a change must be deliberate (go test
// -run TestMCPToolsGolden -update rewrites the file).
func TestMCPToolsGolden(t *testing.T) {
	e := newAPIEnv(t)
	cs := e.mcpSession()
	type pinned struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Input       any    `json:"input_schema"`
		Annotations any    `json:"annotations"`
	}
	var tools []pinned
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, pinned{tl.Name, tl.Description, tl.InputSchema, tl.Annotations})
	}
	slices.SortFunc(tools, func(a, b pinned) int { return strings.Compare(a.Name, b.Name) })
	got, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	name := filepath.Join("testdata", "mcp_tools.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("the MCP tools changed (-want +got); rerun with -update if that is deliberate:\n%s", diff)
	}
}

// lease_resolve lifts a quarantine on the caller's attestation, and
// refuses without it; workspace_recover finds no reservation to retire.
func TestMCPResolveRecover(t *testing.T) {
	e := newAPIEnv(t)
	cs := e.mcpSession()
	acq := toolOK(t, cs, "lease_acquire", map[string]any{"holder": "q", "resources": []string{"intent:docs/**"}, "ttl": "1ms"})
	id := acq["leases"].([]any)[0].(map[string]any)["id"].(string)
	toolRefused(t, cs, "lease_resolve", map[string]any{"id": id}, "usage", 2) // writer_stopped missing: the schema refuses
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls := toolOK(t, cs, "lease_list", map[string]any{"holder": "q"})["leases"].([]any)
		if len(ls) == 1 && ls[0].(map[string]any)["state"] == "quarantined" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease never expired: %v", ls)
		}
		runtime.Gosched()
	}
	toolRefused(t, cs, "lease_resolve", map[string]any{"id": id, "writer_stopped": false}, "invalid_argument", 2)
	l := obj(toolOK(t, cs, "lease_resolve", map[string]any{"id": id, "writer_stopped": true}), "lease")
	if l["id"] != id || l["state"] != "resolved" {
		t.Fatalf("lease_resolve: %v", l)
	}
	toolRefused(t, cs, "lease_resolve", map[string]any{"id": "L-0123456789abcdef", "writer_stopped": true}, "not_found", 5)
	toolRefused(t, cs, "workspace_recover", map[string]any{"binding": "T-1"}, "not_found", 5)
}
