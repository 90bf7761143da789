package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A malformed line through 'majlis mcp' is answered -32700 and the bridge
// goes on: a valid call after it is served; JSON that is no JSON-RPC
// message gets -32600.
func TestBridgeMalformedLine(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	cmd := exec.Command(bin, "mcp", "--repo", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewScanner(stdout)
	out.Buffer(nil, 4<<20)
	next := func() map[string]any {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("majlis mcp ended: %v; stderr: %s", out.Err(), stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", out.Bytes())
		}
		return m
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	errCode := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	send(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"`) // cut short
	if m := next(); errCode(m) != -32700 || m["id"] != nil {
		t.Fatalf("a malformed line: %v", m)
	}
	send(`[{"jsonrpc": "2.0", "id": 7, "method": "ping"}]`)
	if m := next(); errCode(m) != -32600 {
		t.Fatalf("a batch: %v", m)
	}
	send(`{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`)
	if m := next(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("initialize after a malformed line: %v", m)
	}
	send(`{"jsonrpc": "2.0", "method": "notifications/initialized"}`)
	send(`not json at all`)
	if m := next(); errCode(m) != -32700 {
		t.Fatalf("a second malformed line: %v", m)
	}
	send(`{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "workspace_list", "arguments": {}}}`)
	m := next()
	res, _ := m["result"].(map[string]any)
	if m["id"] != float64(3) || res == nil || res["isError"] == true {
		t.Fatalf("a valid call after malformed lines: %v", m)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("majlis mcp: %v; stderr: %s", err, stderr.String())
	}
}

// A server that stops answering (SIGSTOP) behind 'majlis mcp': a call
// under way is answered by the bridge with a JSON-RPC error that says
// whether it may have taken effect and names its request_id, instead of
// hanging.
func TestBridgeStoppedServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--repo", dir, "--unresponsive-after", "300ms")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workspace_list", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("workspace_list: %v %+v", err, res)
	}
	pid := probePID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	waitStopped(t, pid)

	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "lease_acquire",
		Arguments: map[string]any{"holder": "h", "resources": []string{"host:h"}, "request_id": "rq-stopped"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "liveness route") {
		t.Fatalf("a call to a stopped server: %v", err)
	}
	var data struct {
		MayHaveTakenEffect bool   `json:"may_have_taken_effect"`
		RequestID          string `json:"request_id"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || data.RequestID != "rq-stopped" {
		t.Fatalf("error data %s: %v", je.Data, err)
	}
	if data.MayHaveTakenEffect != strings.Contains(je.Message, "may have taken effect") ||
		data.MayHaveTakenEffect && !strings.Contains(je.Message, "rq-stopped") {
		t.Fatalf("the error says %q, its data %+v", je.Message, data)
	}
}

// waitStopped waits until the kernel says pid is stopped (state T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	waitCond(t, "pid "+strconv.Itoa(pid)+" stopped", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'T'
	})
}

// waitCond polls cond, with a growing pause, until it holds or a minute
// has passed.
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for d := time.Millisecond; !cond(); d = min(2*d, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never", what)
		}
		time.Sleep(d) // a poll's pause, not an ordering: cond decides
	}
}
