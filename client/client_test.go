package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/server"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusal asserts that err is a refusal with the CLI's code and exit
// status, as the real binary's table gives them.
func refusal(t *testing.T, err error, code string, exit int) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != code || int(ce.ExitCode) != exit {
		t.Fatalf("got %v (%#v), want a refusal %s with exit %d", err, ce, code, exit)
	}
	return ce
}

func TestNoServer(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	_, err := client.New(context.Background(), client.Options{Dir: dir})
	if !errors.Is(err, client.ErrNoServer) || !strings.Contains(err.Error(), "majlis server start") {
		t.Fatalf("without a server and without Start: %v", err)
	}
}

// TestEndToEndHTTP drives the built binary's server through the client:
// every route once, and the refusals with the CLI's own codes.
func TestEndToEndHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Started || c.Server.State != serverctl.Running {
		t.Fatalf("New: started=%v %+v", c.Started, c.Server)
	}
	// A second client attaches to the same server.
	c2, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil || c2.Started || c2.Server.PID != c.Server.PID {
		t.Fatalf("second client: %v started=%v pid %d", err, c2 != nil && c2.Started, c.Server.PID)
	}
	c2.Close()

	b, err := c.Begin(ctx, wire.BeginRequest{Task: "T-1", Paths: []string{"src/**"}})
	if err != nil {
		t.Fatal(err)
	}
	ws := b.Workspace
	_, err = c.Allocate(ctx, wire.AllocateRequest{Binding: "T-1"})
	refusal(t, err, "binding_live", 4)
	_, err = c.Allocate(ctx, wire.AllocateRequest{Binding: "bad binding"})
	refusal(t, err, "invalid_binding", 2)
	_, err = c.Show(ctx, "T-404")
	refusal(t, err, "not_found", 5)
	_, err = c.Acquire(ctx, wire.AcquireRequest{Holder: "T-2", Resources: []string{"intent:src/f1.go"}, Checkout: ws.Path})
	ce := refusal(t, err, "held", 4)
	if _, ok := ce.Details["conflicts"]; !ok {
		t.Fatalf("held without conflicts: %v", ce.Details)
	}
	_, err = c.Renew(ctx, wire.RenewRequest{Holder: "T-1"})
	refusal(t, err, "token_required", 3)
	if _, err := c.Renew(ctx, wire.RenewRequest{Holder: "T-1", Token: b.Token}); err != nil {
		t.Fatal(err)
	}
	if hb, err := c.Heartbeat(ctx, wire.HeartbeatRequest{Holder: "T-1", Token: b.Token}); err != nil || len(hb.Leases) != 1 {
		t.Fatalf("heartbeat: %v %+v", err, hb)
	}
	if ls, err := c.Leases(ctx, wire.LeaseListRequest{Holder: "T-1"}); err != nil || len(ls) != 1 {
		t.Fatalf("leases: %v %v", err, ls)
	}
	_, err = c.Resolve(ctx, wire.ResolveRequest{ID: b.Leases[0].ID, WriterStopped: true})
	refusal(t, err, "not_quarantined", 3)

	if err := os.WriteFile(filepath.Join(ws.Path, "src", "f1.go"), []byte("package src // work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ck, err := c.Check(ctx, wire.CheckRequest{Checkout: ws.Path}); err != nil || len(ck.Gaps) != 0 || ck.Holder != "T-1" {
		t.Fatalf("check: %v %+v", err, ck)
	}
	if ws, err := c.Show(ctx, "T-1"); err != nil || ws.Dirty == nil || !*ws.Dirty {
		t.Fatalf("show: %v %+v", err, ws)
	}
	if list, err := c.List(ctx, false); err != nil || len(list) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
	sv, err := c.Salvage(ctx, wire.SalvageRequest{Binding: "T-1", Message: "midway"})
	if err != nil || sv.Clean || sv.Ref == nil {
		t.Fatalf("salvage: %v %+v", err, sv)
	}
	_, err = c.PreviewReclaim(ctx, "T-1")
	refusal(t, err, "workspace_live", 4) // T-1 holds leases

	_, err = c.End(ctx, wire.EndRequest{Task: "T-1"})
	refusal(t, err, "token_required", 3)
	end, err := c.End(ctx, wire.EndRequest{Task: "T-1", Token: b.Token})
	if err != nil || len(end.Leases) != 1 || end.Workspace == nil || end.Workspace.State != "released" {
		t.Fatalf("end: %v %+v", err, end)
	}
	pv, err := c.PreviewReclaim(ctx, "T-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Reclaim(ctx, wire.ReclaimRequest{Binding: "T-1"})
	refusal(t, err, "unconfirmed", 3)
	_, err = c.Reclaim(ctx, wire.ReclaimRequest{Binding: "T-1", Confirm: "sha256:" + strings.Repeat("ab", 32)})
	refusal(t, err, "preview_stale", 3)
	rc, err := c.Reclaim(ctx, wire.ReclaimRequest{Binding: "T-1", Confirm: pv.Digest})
	if err != nil || !rc.Removed {
		t.Fatalf("reclaim: %v %+v", err, rc)
	}
	_, err = c.Recover(ctx, wire.ReleaseRequest{Binding: "T-1"})
	refusal(t, err, "not_found", 5)
	rs, err := c.Restore(ctx, wire.RestoreRequest{Binding: "T-1"})
	if err != nil || rs.Restore == nil {
		t.Fatalf("restore: %v %+v", err, rs)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Path, "src", "f1.go")); string(got) != "package src // work\n" {
		t.Fatalf("restored f1.go: %q", got)
	}
	if _, err := c.Release(ctx, wire.ReleaseRequest{Binding: "T-1"}); err != nil {
		t.Fatal(err)
	}
	acq, err := c.Acquire(ctx, wire.AcquireRequest{Holder: "a", Resources: []string{"file:README.md"}, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := c.ReleaseLeases(ctx, wire.LeaseReleaseRequest{Holder: "a", Token: acq.Token}); err != nil || len(rel.Leases) != 1 {
		t.Fatalf("release leases: %v %+v", err, rel)
	}
}

// TestGuard: the binary's server refuses a request without the token, with
// a wrong one, and with a Host that is not its own loopback address.
func TestGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.Server.Address
	_, port, _ := net.SplitHostPort(addr)
	send := func(hc *http.Client, host string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/workspaces", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := send(http.DefaultClient, ""); st != http.StatusUnauthorized {
		t.Errorf("no token: %d", st)
	}
	for _, host := range []string{"majlis.example.com:" + port, "evil.localhost:" + port, "127.0.0.2:" + port} {
		if st := send(c.HTTPClient(), host); st != http.StatusForbidden {
			t.Errorf("Host %s: %d", host, st)
		}
	}
	if st := send(c.HTTPClient(), ""); st != http.StatusOK {
		t.Errorf("with the token: %d", st)
	}
}

// TestEndToEndStdio runs 'majlis mcp' as an MCP client would and calls
// the tools through it.
func TestEndToEndStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	cmd := exec.Command(bin, "mcp", "--repo", dir)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	n := 0
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s has no output schema", tl.Name)
		}
		n++
	}
	if n != len(server.ToolNames) {
		t.Fatalf("%d tools, want %d", n, len(server.ToolNames))
	}
	call := func(name string, args any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &m)
		return m, res.IsError
	}
	b, isErr := call("begin_task", map[string]any{"task": "S-1", "paths": []string{"src/**"}})
	if isErr {
		t.Fatalf("begin_task: %v", b)
	}
	m, isErr := call("lease_acquire", map[string]any{"holder": "S-2", "resources": []string{"intent:src/**"},
		"checkout": b["workspace"].(map[string]any)["path"]})
	er, _ := m["error"].(map[string]any)
	if !isErr || er["code"] != "held" || er["exit_code"] != float64(4) {
		t.Fatalf("lease_acquire on S-1's intent: %v %v", isErr, m)
	}
	m, isErr = call("end_task", map[string]any{"task": "S-1", "token": b["token"]})
	if isErr {
		t.Fatalf("end_task: %v", m)
	}
	pv, _ := call("workspace_reclaim_preview", map[string]any{"binding": "S-1"})
	m, isErr = call("workspace_reclaim", map[string]any{"binding": "S-1", "confirm": pv["preview"].(map[string]any)["digest"]})
	if isErr || m["reclaim"].(map[string]any)["removed"] != true {
		t.Fatalf("workspace_reclaim: %v", m)
	}
}

// TestConcurrentAllocate: 8 agents allocate at once through one server,
// each its own workspace.
func TestConcurrentAllocate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Allocate(ctx, wire.AllocateRequest{Binding: fmt.Sprintf("A-%d", i)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("agent %d: %v", i, err)
		}
	}
	list, err := c.List(ctx, false)
	if err != nil || len(list) != 8 {
		t.Fatalf("list: %v, %d workspaces", err, len(list))
	}
	seen := map[string]bool{}
	for _, ws := range list {
		if seen[ws.Path] {
			t.Fatalf("two workspaces at %s", ws.Path)
		}
		seen[ws.Path] = true
		if out, err := exec.Command("git", "-C", ws.Path, "status", "--porcelain").CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("%s: %v %s", ws.Path, err, out)
		}
	}
}

// TestPortRace: 16 agents race for one port, 8 through the server and 8
// as CLI processes beside it: exactly one wins, every other is refused
// with held (exit 4).
func TestPortRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const port = "host:port:3917"
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, held := 0, 0
	var other []string
	start := make(chan struct{})
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("racer-%d", i)
			<-start
			var won bool
			var code string
			if i%2 == 0 {
				_, err := c.Acquire(ctx, wire.AcquireRequest{Holder: holder, Resources: []string{port}})
				var ce *client.Error
				switch {
				case err == nil:
					won = true
				case errors.As(err, &ce) && ce.ExitCode == 4:
					code = ce.Code
				default:
					code = err.Error()
				}
			} else {
				out, err := exec.Command(bin, "lease", "acquire", "--repo", dir, "--json", "--holder", holder, port).Output()
				var ee *exec.ExitError
				switch {
				case err == nil:
					won = true
				case errors.As(err, &ee) && ee.ExitCode() == 4:
					var body struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.Unmarshal(out, &body)
					code = body.Error.Code
				default:
					code = fmt.Sprintf("%v: %s", err, out)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case won:
				wins++
			case code == "held":
				held++
			default:
				other = append(other, code)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || held != 15 || len(other) != 0 {
		t.Fatalf("wins %d, held %d, other %v", wins, held, other)
	}
}

// TestBindingRace: 8 agents allocate the same binding at once, 4 through
// the server and 4 as CLI processes: exactly one workspace, every other
// agent refused with binding_live (exit 4) and nothing left behind.
func TestBindingRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, live := 0, 0
	var other []string
	start := make(chan struct{})
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var won bool
			var code string
			if i%2 == 0 {
				_, err := c.Allocate(ctx, wire.AllocateRequest{Binding: "SAME"})
				var ce *client.Error
				switch {
				case err == nil:
					won = true
				case errors.As(err, &ce):
					code = ce.Code
				default:
					code = err.Error()
				}
			} else {
				out, err := exec.Command(bin, "workspace", "allocate", "--repo", dir, "--json", "SAME").Output()
				var ee *exec.ExitError
				switch {
				case err == nil:
					won = true
				case errors.As(err, &ee) && ee.ExitCode() == 4:
					var body struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.Unmarshal(out, &body)
					code = body.Error.Code
				default:
					code = fmt.Sprintf("%v: %s", err, out)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case won:
				wins++
			case code == "binding_live":
				live++
			default:
				other = append(other, code)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || live != 7 || len(other) != 0 {
		t.Fatalf("wins %d, binding_live %d, other %v", wins, live, other)
	}
	list, err := c.List(ctx, false)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %d", err, len(list))
	}
	out, err := exec.Command("git", "-C", dir, "worktree", "list", "--porcelain").Output()
	if err != nil || strings.Count(string(out), "worktree ") != 2 {
		t.Fatalf("git worktree list: %v\n%s", err, out)
	}
}

// TestSameJSONAsCLI: a route answers with the very object the CLI prints
// with --json for the same command; a refusal's hint alone (details.hint,
// and the end of the message) is in each one's words.
func TestSameJSONAsCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Allocate(ctx, wire.AllocateRequest{Binding: "J-1", Intent: []string{"src/**"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, wire.AcquireRequest{Holder: "J-1", Resources: []string{"file:README.md"}, Token: "mlt_0123456789abcdef0123"}); err != nil {
		t.Fatal(err)
	}
	api := func(method, path string) any {
		req, _ := http.NewRequest(method, "http://"+c.Server.Address+path, nil)
		resp, err := c.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	cli := func(args ...string) any {
		out, err := exec.Command(bin, append(args, "--repo", dir, "--json")...).Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("majlis %v: %v", args, err)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, cs := range []struct {
		method, path string
		args         []string
	}{
		{"GET", "/api/v1/workspaces", []string{"workspace", "list"}},
		{"GET", "/api/v1/workspaces/J-1", []string{"workspace", "show", "J-1"}},
		{"GET", "/api/v1/leases", []string{"lease", "list"}},
		{"POST", "/api/v1/workspaces/J-404/salvage", []string{"workspace", "salvage", "J-404"}},
	} {
		a, b := api(cs.method, cs.path), cli(cs.args...)
		if cs.method == "POST" { // a refusal: the same object, plus exit_code
			ea, eb := a.(map[string]any)["error"].(map[string]any), b.(map[string]any)["error"].(map[string]any)
			delete(ea, "exit_code")
			ha, hb := ea["details"].(map[string]any)["hint"].(string), eb["details"].(map[string]any)["hint"].(string)
			if ha == "" || hb == "" || ha == hb || cliWords.MatchString(ha) {
				t.Errorf("%s %s: hints %q (API) and %q (CLI): want each in its own words", cs.method, cs.path, ha, hb)
			}
			for _, e := range []map[string]any{ea, eb} {
				h := e["details"].(map[string]any)["hint"].(string)
				e["message"] = strings.TrimSuffix(e["message"].(string), "; "+h)
				delete(e["details"].(map[string]any), "hint")
			}
		}
		if cs.path == "/api/v1/leases" {
			a, b = withoutHostLeases(a), withoutHostLeases(b)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s %s:\n api %s\n cli %s", cs.method, cs.path, ja, jb)
		}
	}
}

// withoutHostLeases drops the host's leases from a lease list: the host
// ledger is this test binary's, shared by the tests running beside this
// one, which take and drop host singletons between the two reads.
func withoutHostLeases(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	leases, _ := m["leases"].([]any)
	kept := []any{}
	for _, l := range leases {
		if lm, ok := l.(map[string]any); !ok || lm["scope"] != "host" {
			kept = append(kept, l)
		}
	}
	m["leases"] = kept
	return m
}

// TestStdioSurvivesRestart: 'majlis mcp' finds the repository's server
// again (starting it) when the one it used was stopped.
func TestStdioSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--repo", dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list := func() {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workspace_list", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("workspace_list: %v %+v", err, res)
		}
	}
	list()
	before := probePID(t, dir)
	if out, err := exec.Command(bin, "server", "stop", "--repo", dir).CombinedOutput(); err != nil {
		t.Fatalf("server stop: %v\n%s", err, out)
	}
	list()
	if after := probePID(t, dir); after == before || after == 0 {
		t.Fatalf("server pid %d before the stop, %d after", before, after)
	}
}

func probePID(t *testing.T, dir string) int {
	t.Helper()
	tg, err := serverctl.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
	if err != nil || st.State != serverctl.Running {
		t.Fatalf("probe: %v %+v", err, st)
	}
	return st.PID
}
