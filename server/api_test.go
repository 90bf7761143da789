package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An apiEnv is a server's routes served in process by httptest, on an
// open provider and admission service of a fresh repository, with a
// clock for the heartbeats that the test moves.
type apiEnv struct {
	t     testing.TB
	repo  *fixtures.Repo
	s     *srv
	hs    *httptest.Server
	token string

	mu  sync.Mutex
	now time.Time
}

func newAPIEnv(t testing.TB) *apiEnv {
	t.Helper()
	r := fixtures.NewRepo(t)
	for i := range 10 {
		r.WriteFile(filepath.Join("src", "f"+string(rune('0'+i))+".go"), "package src\n")
	}
	r.Commit("ten files")
	ctx := context.Background()
	if _, err := provider.Init(ctx, r.Dir, provider.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := provider.Open(ctx, r.Dir, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	adm, err := p.Admission(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	e := &apiEnv{t: t, repo: r, token: newNonce(), now: time.Now()}
	o, err := Options{Version: "test", Logf: t.Logf}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e.s = &srv{o: o, p: p, adm: adm, token: e.token, sem: make(chan struct{}, o.MaxHandlers), stop: make(chan struct{})}
	e.s.beats = newBeats(DefaultHeartbeatGrace, e.clock, adm, t.Logf)
	e.s.holder.Store(true)
	e.s.ready.Store(true)
	e.hs = httptest.NewUnstartedServer(nil)
	e.s.addr = e.hs.Listener.Addr().String()
	e.hs.Config.Handler = e.s.routes()
	e.hs.Start()
	t.Cleanup(e.hs.Close)
	return e
}

func (e *apiEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *apiEnv) advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

// call sends a request with the token and the server's own Host; it
// returns the status and the decoded body.
func (e *apiEnv) call(method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	return e.callAs(method, path, body, e.token, "")
}

func (e *apiEnv) callAs(method, path string, body any, token, host string) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		e.t.Fatalf("%s %s: %d, body not JSON: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

// ok calls and fails the test unless the answer is 200.
func (e *apiEnv) ok(method, path string, body any) map[string]any {
	e.t.Helper()
	st, m := e.call(method, path, body)
	if st != http.StatusOK {
		e.t.Fatalf("%s %s: %d %v", method, path, st, m)
	}
	return m
}

// refused calls and checks the refusal's status, code and exit class.
func (e *apiEnv) refused(method, path string, body any, status int, code string, exit int) map[string]any {
	e.t.Helper()
	st, m := e.call(method, path, body)
	er, _ := m["error"].(map[string]any)
	if st != status || er == nil || er["code"] != code || er["exit_code"] != float64(exit) {
		e.t.Fatalf("%s %s: got %d %v; want %d, code %s, exit %d", method, path, st, m, status, code, exit)
	}
	return er
}

func obj(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	return m
}

func TestAPIWorkspaceRoutes(t *testing.T) {
	e := newAPIEnv(t)
	ws := obj(e.ok("POST", "/api/v1/workspaces", wire.AllocateRequest{Binding: "T-1", Intent: []string{"src/**"}}), "workspace")
	if ws["binding"] != "T-1" || ws["state"] != "active" || ws["branch"] != "majlis/T-1" {
		t.Fatalf("allocate: %v", ws)
	}
	path := ws["path"].(string)
	e.refused("POST", "/api/v1/workspaces", wire.AllocateRequest{Binding: "T-1"}, http.StatusLocked, "binding_live", 4)
	e.refused("POST", "/api/v1/workspaces", wire.AllocateRequest{Binding: "T-9", Path: "rel/dir"}, http.StatusBadRequest, "usage", 2)

	list := e.ok("GET", "/api/v1/workspaces", nil)["workspaces"].([]any)
	if len(list) != 1 || obj(list[0].(map[string]any))["binding"] != "T-1" {
		t.Fatalf("list: %v", list)
	}
	e.ok("GET", "/api/v1/workspaces?all=true", nil)
	e.refused("GET", "/api/v1/workspaces?bogus=1", nil, http.StatusBadRequest, "usage", 2)

	fixtures.Git(t, path, "status") // the worktree is real
	writeFile(t, filepath.Join(path, "src", "new.go"), "package src // new\n")
	show := obj(e.ok("GET", "/api/v1/workspaces/T-1", nil), "workspace")
	if show["dirty"] != true {
		t.Fatalf("show: %v", show)
	}
	e.refused("GET", "/api/v1/workspaces/T-404", nil, http.StatusNotFound, "not_found", 5)

	sv := obj(e.ok("POST", "/api/v1/workspaces/T-1/salvage", wire.SalvageRequest{Message: "keep"}), "salvage")
	if sv["clean"] != false || sv["ref"] != "refs/majlis/salvage/T-1/1" {
		t.Fatalf("salvage: %v", sv)
	}
	e.refused("POST", "/api/v1/workspaces/T-1/salvage", map[string]any{"binding": "T-2"}, http.StatusBadRequest, "usage", 2)
	e.refused("POST", "/api/v1/workspaces/T-1/salvage", map[string]any{"mesage": "typo"}, http.StatusBadRequest, "usage", 2)

	rel := obj(e.ok("POST", "/api/v1/workspaces/T-1/release", nil), "workspace")
	if rel["state"] != "released" {
		t.Fatalf("release: %v", rel)
	}

	pv := obj(e.ok("POST", "/api/v1/workspaces/T-1/reclaim/preview", nil), "preview")
	digest, _ := pv["digest"].(string)
	if len(digest) != len("sha256:")+64 {
		t.Fatalf("preview: %v", pv)
	}
	e.refused("POST", "/api/v1/workspaces/T-1/reclaim", nil, http.StatusConflict, "unconfirmed", 3)
	e.refused("POST", "/api/v1/workspaces/T-1/reclaim", wire.ReclaimRequest{Confirm: "sha256:nothex"}, http.StatusBadRequest, "usage", 2)
	// Work written after the preview makes its digest stale.
	writeFile(t, filepath.Join(path, "later.txt"), "written after the preview\n")
	e.refused("POST", "/api/v1/workspaces/T-1/reclaim", wire.ReclaimRequest{Confirm: digest}, http.StatusConflict, "preview_stale", 3)
	pv = obj(e.ok("POST", "/api/v1/workspaces/T-1/reclaim/preview", nil), "preview")
	rc := obj(e.ok("POST", "/api/v1/workspaces/T-1/reclaim", wire.ReclaimRequest{Confirm: pv["digest"].(string)}), "reclaim")
	if rc["removed"] != true || rc["salvage_ref"] == nil {
		t.Fatalf("reclaim: %v", rc)
	}
	if fileExists(path) {
		t.Fatalf("%s still exists after the reclaim", path)
	}

	rs := obj(e.ok("POST", "/api/v1/workspaces/T-1/restore", nil), "restore")
	if obj(rs, "workspace")["binding"] != "T-1" {
		t.Fatalf("restore: %v", rs)
	}
	if got := readFile(t, filepath.Join(path, "later.txt")); got != "written after the preview\n" {
		t.Fatalf("restored later.txt: %q", got)
	}
	e.refused("POST", "/api/v1/workspaces/T-1/recover", nil, http.StatusNotFound, "not_found", 5)
}

func TestAPILeaseRoutes(t *testing.T) {
	e := newAPIEnv(t)
	acq := e.ok("POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "a1", Resources: []string{"file:src/f1.go", "intent:docs/**"}, TTL: "1m"})
	token, _ := acq["token"].(string)
	leases := acq["leases"].([]any)
	if token == "" || len(leases) != 2 {
		t.Fatalf("acquire: %v", acq)
	}
	id := leases[0].(map[string]any)["id"].(string)
	held := e.refused("POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "a2", Resources: []string{"file:src/f1.go"}}, http.StatusLocked, "held", 4)
	_ = held
	e.refused("POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "a2", Resources: []string{"file:x"}, TTL: "soon"}, http.StatusBadRequest, "usage", 2)

	e.refused("POST", "/api/v1/leases/renew", wire.RenewRequest{Holder: "a1"}, http.StatusConflict, "token_required", 3)
	ren := e.ok("POST", "/api/v1/leases/renew", wire.RenewRequest{Holder: "a1", Token: token, IDs: []string{id}, TTL: "5m"})
	if len(ren["leases"].([]any)) != 1 {
		t.Fatalf("renew: %v", ren)
	}
	ls := e.ok("GET", "/api/v1/leases?holder=a1", nil)["leases"].([]any)
	if len(ls) != 2 {
		t.Fatalf("list: %v", ls)
	}
	e.refused("POST", "/api/v1/leases/"+id+"/resolve", wire.ResolveRequest{WriterStopped: true}, http.StatusConflict, "not_quarantined", 3)
	rel := e.ok("POST", "/api/v1/leases/release", wire.LeaseReleaseRequest{Holder: "a1", Token: token})
	if len(rel["leases"].([]any)) != 2 {
		t.Fatalf("release: %v", rel)
	}
	if ls := e.ok("GET", "/api/v1/leases", nil)["leases"].([]any); len(ls) != 0 {
		t.Fatalf("after release: %v", ls)
	}
}

func TestAPIBeginCheckEnd(t *testing.T) {
	e := newAPIEnv(t)
	b := e.ok("POST", "/api/v1/begin", wire.BeginRequest{Task: "T-7", Paths: []string{"src/**"}})
	token, _ := b["token"].(string)
	ws := obj(b, "workspace")
	if token == "" || ws["binding"] != "T-7" || len(b["leases"].([]any)) != 1 {
		t.Fatalf("begin: %v", b)
	}
	path := ws["path"].(string)
	writeFile(t, filepath.Join(path, "src", "f2.go"), "package src // edited\n")
	writeFile(t, filepath.Join(path, "README.md"), "edited outside the intent\n")
	ck := e.ok("POST", "/api/v1/check", wire.CheckRequest{Checkout: path})
	if ck["holder"] != "T-7" || len(ck["gaps"].([]any)) != 1 || ck["gaps"].([]any)[0] != "README.md" {
		t.Fatalf("check: %v", ck)
	}
	e.refused("POST", "/api/v1/check", wire.CheckRequest{}, http.StatusBadRequest, "usage", 2)
	other := fixtures.NewRepo(t)
	if _, err := provider.Init(context.Background(), other.Dir, provider.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	e.refused("POST", "/api/v1/check", wire.CheckRequest{Checkout: other.Dir, Holder: "x"}, http.StatusConflict, "repository_mismatch", 3)

	e.refused("POST", "/api/v1/end", wire.EndRequest{Task: "T-7"}, http.StatusConflict, "token_required", 3)
	end := obj(e.ok("POST", "/api/v1/end", wire.EndRequest{Task: "T-7", Token: token}), "end")
	if len(end["leases"].([]any)) != 1 || obj(end, "workspace")["state"] != "released" {
		t.Fatalf("end: %v", end)
	}
	if !fileExists(path) {
		t.Fatal("end removed the workspace's files")
	}
}

func TestAPIHeartbeat(t *testing.T) {
	e := newAPIEnv(t)
	acq := e.ok("POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "hb", Resources: []string{"host:port:auto"}, TTL: "30s"})
	token := acq["token"].(string)
	first := expiry(t, acq["leases"].([]any)[0])

	e.refused("POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: "mlt_wrong_token_0123456789"}, http.StatusConflict, "token_required", 3)
	e.refused("POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "nobody", Token: token}, http.StatusNotFound, "not_found", 5)
	hb := obj(e.ok("POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: token, TTL: "30s"}), "heartbeat")
	if hb["grace"] != DefaultHeartbeatGrace.String() || len(hb["leases"].([]any)) != 1 {
		t.Fatalf("heartbeat: %v", hb)
	}
	renewed := expiry(t, hb["leases"].([]any)[0])
	if renewed.Before(first) {
		t.Fatalf("heartbeat moved the expiry back: %v < %v", renewed, first)
	}

	// Within the grace period, a sweep a third of the TTL later renews.
	e.advance(11 * time.Second)
	e.s.beats.sweep(context.Background())
	if hs := e.s.beats.holders(); len(hs) != 1 || hs[0] != "hb" {
		t.Fatalf("holders kept renewed: %v", hs)
	}
	// Past the grace period without a heartbeat, the holder is forgotten
	// and its lease no longer renewed.
	e.advance(DefaultHeartbeatGrace)
	before := leaseExpiry(t, e, "hb")
	e.s.beats.sweep(context.Background())
	if hs := e.s.beats.holders(); len(hs) != 0 {
		t.Fatalf("still renewing after the heartbeats stopped: %v", hs)
	}
	e.advance(time.Hour)
	e.s.beats.sweep(context.Background())
	if after := leaseExpiry(t, e, "hb"); !after.Equal(before) {
		t.Fatalf("the lease was renewed after the heartbeats stopped: %v -> %v", before, after)
	}
	// A heartbeat starts renewal again; a release stops it.
	e.ok("POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: token})
	e.ok("POST", "/api/v1/leases/release", wire.LeaseReleaseRequest{Holder: "hb", Token: token})
	if hs := e.s.beats.holders(); len(hs) != 0 {
		t.Fatalf("still renewing after release: %v", hs)
	}
}

func expiry(t *testing.T, l any) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, l.(map[string]any)["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func leaseExpiry(t *testing.T, e *apiEnv, holder string) time.Time {
	t.Helper()
	ls := e.ok("GET", "/api/v1/leases?holder="+holder, nil)["leases"].([]any)
	if len(ls) != 1 {
		t.Fatalf("leases of %s: %v", holder, ls)
	}
	return expiry(t, ls[0])
}

func TestAPIGuard(t *testing.T) {
	e := newAPIEnv(t)
	_, port, _ := net.SplitHostPort(e.s.addr)
	for _, c := range []struct {
		name, token, host string
		status            int
		code              string
	}{
		{"no token", "", "", http.StatusUnauthorized, "unauthorized"},
		{"wrong token", newNonce(), "", http.StatusUnauthorized, "unauthorized"},
		{"foreign host", e.token, "evil.example:" + port, http.StatusForbidden, "bad_host"},
		{"rebound name", e.token, "attacker.localhost:" + port, http.StatusForbidden, "bad_host"},
		{"other port", e.token, "127.0.0.1:1", http.StatusForbidden, "bad_host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct{ method, path string }{
				{"POST", "/api/v1/workspaces"}, {"GET", "/api/v1/workspaces"}, {"POST", "/api/v1/leases/acquire"},
				{"POST", "/api/v1/heartbeat"}, {"POST", "/mcp"},
			} {
				st, m := e.callAs(r.method, r.path, map[string]any{}, c.token, c.host)
				if st != c.status || obj(m, "error")["code"] != c.code {
					t.Errorf("%s %s: %d %v, want %d %s", r.method, r.path, st, m, c.status, c.code)
				}
			}
		})
	}
	e.refused("GET", "/api/v1/nothing", nil, http.StatusNotFound, "no_route", 2)
	e.refused("DELETE", "/api/v1/workspaces/T-1", nil, http.StatusNotFound, "no_route", 2)
	if st, _ := e.callAs("GET", "/api/v1/nothing", nil, "", ""); st != http.StatusUnauthorized {
		t.Fatalf("an unknown route without the token: %d", st)
	}
	if st, _ := e.callAs("GET", "/api/v1/workspaces", nil, e.token, "localhost:"+port); st != http.StatusOK {
		t.Fatalf("localhost:%s refused: %d", port, st)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// A task begun shared has no workspace: ending it releases its leases and
// answers a null workspace, over HTTP and as the end_task tool alike.
func TestAPIEndShared(t *testing.T) {
	e := newAPIEnv(t)
	b := e.ok("POST", "/api/v1/begin", wire.BeginRequest{Task: "S-1", Paths: []string{"docs/**"}, Shared: true})
	if b["workspace"] != nil || len(b["leases"].([]any)) != 1 {
		t.Fatalf("begin shared: %v", b)
	}
	e.refused("POST", "/api/v1/end", wire.EndRequest{Task: "S-1"}, http.StatusConflict, "token_required", 3)
	end := obj(e.ok("POST", "/api/v1/end", wire.EndRequest{Task: "S-1", Token: b["token"].(string), Reclaim: true}), "end")
	if ws, ok := end["workspace"]; !ok || ws != nil || len(end["leases"].([]any)) != 1 || end["not_reclaimed"] != nil || end["reclaimed"] != nil {
		t.Fatalf("end shared: %v", end)
	}
	e.refused("POST", "/api/v1/end", wire.EndRequest{Task: "S-404"}, http.StatusNotFound, "not_found", 5)

	cs := e.mcpSession()
	b = toolOK(t, cs, "begin_task", map[string]any{"task": "S-2", "paths": []string{"lib/**"}, "shared": true})
	end = obj(toolOK(t, cs, "end_task", map[string]any{"task": "S-2", "token": b["token"]}), "end")
	if ws, ok := end["workspace"]; !ok || ws != nil || len(end["leases"].([]any)) != 1 {
		t.Fatalf("end_task shared: %v", end)
	}
	if ls := e.ok("GET", "/api/v1/leases", nil)["leases"].([]any); len(ls) != 0 {
		t.Fatalf("leases left after ending the shared tasks: %v", ls)
	}
}

// A hint names operations as {tool:NAME}: an HTTP client reads the route
// (with the binding filled in), an agent the tool's name, in the hint and
// at the end of the message alike. The hints are the code table's
// (wire), as the command line's are.
func TestRefusalHintWords(t *testing.T) {
	e := newAPIEnv(t)
	e.ok("POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "h", Resources: []string{"host:port:auto"}})
	e.ok("POST", "/api/v1/workspaces", wire.AllocateRequest{Binding: "T-1"})
	cs := e.mcpSession()
	stale := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		route, tool    string
		body           any
		args           map[string]any
		code           string
		status, exit   int
		wantHTTP, want string
	}{
		{"/api/v1/leases/renew", "lease_renew", wire.RenewRequest{Holder: "h"}, map[string]any{"holder": "h"}, "token_required", http.StatusConflict, 3,
			"send the token returned when the leases were granted",
			"send the token returned when the leases were granted"},
		{"/api/v1/workspaces/T-1/reclaim", "workspace_reclaim", wire.ReclaimRequest{Confirm: stale}, map[string]any{"binding": "T-1", "confirm": stale}, "preview_stale", http.StatusConflict, 3,
			"preview it again (POST /api/v1/workspaces/T-1/reclaim/preview) and send the new digest as confirm (POST /api/v1/workspaces/T-1/reclaim)",
			"preview it again (workspace_reclaim_preview) and send the new digest as confirm (workspace_reclaim)"},
	} {
		er := e.refused("POST", tc.route, tc.body, tc.status, tc.code, tc.exit)
		if h := obj(er, "details")["hint"]; h != tc.wantHTTP || !strings.HasSuffix(er["message"].(string), tc.wantHTTP) {
			t.Errorf("%s over HTTP: hint %q, message %q; want %q", tc.route, h, er["message"], tc.wantHTTP)
		}
		er = toolRefused(t, cs, tc.tool, tc.args, tc.code, tc.exit)
		if h := obj(er, "details")["hint"]; h != tc.want || !strings.HasSuffix(er["message"].(string), tc.want) {
			t.Errorf("%s over MCP: hint %q, message %q; want %q", tc.tool, h, er["message"], tc.want)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "{tool:") || strings.Contains(text, "/api/v1/") || !strings.Contains(text, tc.want) {
			t.Errorf("the tool error's text: %q", text)
		}
	}
}

// Every tool has a route, and the hints' {tool:NAME} can name each.
func TestToolsHaveRoutes(t *testing.T) {
	tools := 0
	for _, r := range wire.Routes() {
		if r.Tool != "" {
			tools++
		}
	}
	if tools != len(ToolNames) {
		t.Errorf("%d routes for %d tools", tools, len(ToolNames))
	}
	for _, name := range ToolNames {
		if wire.ToolRoute(name) == "" {
			t.Errorf("tool %s has no route", name)
		}
	}
}
