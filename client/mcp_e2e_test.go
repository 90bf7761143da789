package client_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cliWords are the command line's words, which no refusal over the
// server may use: its flags, its command lines, its environment.
var cliWords = regexp.MustCompile(`--[a-z]|'majlis |MAJLIS_`)

// TestAgentWorkflowStdio is an agent's whole session through 'majlis mcp'
// (the built binary, which starts the server) with the SDK's client over
// stdio: allocate, work, salvage, preview, a stale confirm refused, the
// reclaim confirmed, the work kept on its salvage ref; a shared task
// begun and ended; and every refusal's hint in the tools' words.
func TestAgentWorkflowStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--repo", dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args any) (map[string]any, *mcp.CallToolResult) {
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
		return m, res
	}
	ok := func(name string, args any) map[string]any {
		t.Helper()
		m, res := call(name, args)
		if res.IsError {
			t.Fatalf("%s refused: %v", name, m)
		}
		return m
	}
	// refused checks the code and that the refusal speaks the tools'
	// words: in its hint, its message and the text an agent reads.
	refused := func(name string, args any, code string, exit int) (hint string) {
		t.Helper()
		m, res := call(name, args)
		er, _ := m["error"].(map[string]any)
		if !res.IsError || er["code"] != code || er["exit_code"] != float64(exit) {
			t.Fatalf("%s: %v; want %s, exit %d", name, m, code, exit)
		}
		hint, _ = er["details"].(map[string]any)["hint"].(string)
		text := res.Content[0].(*mcp.TextContent).Text
		for what, s := range map[string]string{"hint": hint, "text": text} {
			if w := cliWords.FindString(s); w != "" || strings.Contains(s, "{tool:") {
				t.Errorf("%s (%s): the %s names %q of the command line: %q", name, code, what, w, s)
			}
		}
		return hint
	}

	ws := ok("workspace_allocate", map[string]any{"binding": "W-1"})["workspace"].(map[string]any)
	path := ws["path"].(string)
	if err := os.WriteFile(filepath.Join(path, "src", "f1.go"), []byte("package src // the agent's work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "notes.txt"), []byte("untracked work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sv := ok("workspace_salvage", map[string]any{"binding": "W-1"})["salvage"].(map[string]any)
	if sv["clean"] != false || sv["ref"] == "" {
		t.Fatalf("workspace_salvage: %v", sv)
	}
	pv := ok("workspace_reclaim_preview", map[string]any{"binding": "W-1"})["preview"].(map[string]any)
	digest := pv["digest"].(string)

	// The work changes after the preview: its digest no longer confirms.
	if err := os.WriteFile(filepath.Join(path, "later.txt"), []byte("written after the preview\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h := refused("workspace_reclaim", map[string]any{"binding": "W-1", "confirm": digest}, "preview_stale", 3); !strings.Contains(h, "workspace_reclaim_preview") || !strings.Contains(h, "confirm") {
		t.Errorf("preview_stale hint: %q", h)
	}
	pv = ok("workspace_reclaim_preview", map[string]any{"binding": "W-1"})["preview"].(map[string]any)
	rc := ok("workspace_reclaim", map[string]any{"binding": "W-1", "confirm": pv["digest"]})["reclaim"].(map[string]any)
	ref, _ := rc["salvage_ref"].(string)
	if rc["removed"] != true || ref == "" {
		t.Fatalf("workspace_reclaim: %v", rc)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the workspace is still there: %v", err)
	}
	for file, want := range map[string]string{"src/f1.go": "package src // the agent's work\n", "notes.txt": "untracked work\n", "later.txt": "written after the preview\n"} {
		out, err := exec.Command("git", "-C", dir, "show", ref+":"+file).Output()
		if err != nil || string(out) != want {
			t.Errorf("%s on %s: %q, %v; want %q", file, ref, out, err, want)
		}
	}

	// Refusals name the tools' arguments and tools, never a flag.
	b := ok("begin_task", map[string]any{"task": "W-2", "paths": []string{"src/**"}})
	if h := refused("lease_renew", map[string]any{"holder": "W-2"}, "token_required", 3); !strings.Contains(h, "token") || strings.Contains(h, "force") {
		t.Errorf("token_required hint: %q", h)
	}
	if h := refused("workspace_reclaim_preview", map[string]any{"binding": "W-2"}, "workspace_live", 4); !strings.Contains(h, "lease_release") {
		t.Errorf("workspace_live hint: %q", h)
	}
	if h := refused("workspace_show", map[string]any{"binding": "W-404"}, "not_found", 5); !strings.Contains(h, "workspace_list") {
		t.Errorf("not_found hint: %q", h)
	}
	refused("lease_acquire", map[string]any{"holder": "W-3", "resources": []string{"intent:src/f2.go"},
		"checkout": b["workspace"].(map[string]any)["path"]}, "held", 4)
	ok("end_task", map[string]any{"task": "W-2", "token": b["token"]})

	// A shared task has no workspace; ending it releases its leases.
	sh := ok("begin_task", map[string]any{"task": "W-4", "paths": []string{"docs/**"}, "shared": true})
	end := ok("end_task", map[string]any{"task": "W-4", "token": sh["token"]})["end"].(map[string]any)
	if w, present := end["workspace"]; !present || w != nil || len(end["leases"].([]any)) != 1 {
		t.Fatalf("end_task of a shared task: %v", end)
	}
}

// Over HTTP, the Go client's refusals name the routes and fields.
func TestRefusalWordsHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	c, err := client.New(ctx, client.Options{Dir: dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Acquire(ctx, wire.AcquireRequest{Holder: "h", Resources: []string{"host:port:auto"}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Renew(ctx, wire.RenewRequest{Holder: "h"})
	ce := refusal(t, err, "token_required", 3)
	if h := ce.Hint(); cliWords.MatchString(h) || strings.Contains(h, "force") || !strings.Contains(h, "send the token") {
		t.Errorf("token_required hint over HTTP: %q", h)
	}
	if _, err := c.Allocate(ctx, wire.AllocateRequest{Binding: "H-1"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Reclaim(ctx, wire.ReclaimRequest{Binding: "H-1"})
	ce = refusal(t, err, "unconfirmed", 3)
	if h := ce.Hint(); cliWords.MatchString(h) || !strings.Contains(h, "POST /api/v1/workspaces/H-1/reclaim/preview") {
		t.Errorf("unconfirmed hint over HTTP: %q", h)
	}
}
