package main

// A panic anywhere in a command is a bug, but scripts must still get one
// JSON error (code internal) and exit 1, and the deferred cleanups of the
// command must run. The failpoints build has a `panic` action.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// jsonError decodes the one JSON error object of a --json run.
func (r binRun) jsonError(t *testing.T) (code string, details map[string]any) {
	t.Helper()
	var out struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() || out.Error.Code == "" || out.Error.Message == "" {
		t.Fatalf("stdout is not one JSON error object (%v)\n%s", err, r)
	}
	return out.Error.Code, out.Error.Details
}

func TestPanicIsAnInternalError(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	repo := fixtures.NewRepo(t)
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
	for _, args := range [][]string{{"init"}, {"workspace", "allocate", "T-1", "--json"}} {
		if r := majlisRun(t, bin, repo.Dir, env, args...); r.exit != 0 {
			t.Fatal(r)
		}
	}
	ws := filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces", "T-1")
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The reclaim panics with its reservation held.
	panicking := append(env, "MAJLIS_FAILPOINTS=reclaim/reserved=panic")
	r := majlisRun(t, bin, repo.Dir, panicking, "workspace", "reclaim", "T-1", "--yes", "--json")
	if r.exit != int(ExitError) || r.killed {
		t.Fatalf("a panicking reclaim exited %d, want %d\n%s", r.exit, ExitError, r)
	}
	code, details := r.jsonError(t)
	if code != "internal" || !strings.Contains(details["panic"].(string), "injected panic at reclaim/reserved") {
		t.Errorf("a panicking reclaim reported %s %v, want internal with the panic\n%s", code, details, r)
	}
	if !strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("no stack trace on stderr\n%s", r)
	}
	// Without --json: the same exit, the message on stderr, nothing on stdout.
	r = majlisRun(t, bin, repo.Dir, panicking, "workspace", "reclaim", "T-1", "--yes")
	if r.exit != int(ExitError) || r.stdout != "" || !strings.Contains(r.stderr, "majlis: internal error") {
		t.Errorf("a panicking reclaim without --json: want exit 1, an error on stderr and nothing on stdout\n%s", r)
	}

	// Nothing was destroyed, and the reservation was released while the
	// panic unwound: there is nothing to recover, and a reclaim proceeds
	// at once.
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err != nil {
		t.Errorf("after the panic: %v", err)
	}
	if out := repo.Git("for-each-ref", "refs/majlis/salvage"); out != "" {
		t.Errorf("after the panic, salvage refs: %s", out)
	}
	r = majlisRun(t, bin, repo.Dir, env, "workspace", "recover", "T-1", "--json")
	if code, _ := r.jsonError(t); r.exit != int(ExitNotFound) || code != "not_found" {
		t.Errorf("after the panic, recover: want not_found, nothing to recover\n%s", r)
	}
	r = majlisRun(t, bin, repo.Dir, env, "workspace", "reclaim", "T-1", "--yes", "--json")
	if r.exit != 0 || !strings.Contains(r.stdout, `"removed": true`) {
		t.Errorf("reclaim after the panic\n%s", r)
	}
}

// A MAJLIS_FAILPOINTS that names no failpoint or no action is a usage
// error when the command starts, not a silent no-op or a failure half way.
func TestFailpointsVariableIsValidated(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	dir := t.TempDir()
	for _, spec := range []string{"no-such/point=crash", "reclaim/reserved=explode", "reclaim/reserved", "reclaim/reserved=sleep(soon)"} {
		r := majlisRun(t, bin, dir, []string{"MAJLIS_FAILPOINTS=" + spec}, "version", "--json")
		code, details := r.jsonError(t)
		if r.exit != int(ExitUsage) || code != "usage" || details["variable"] != "MAJLIS_FAILPOINTS" {
			t.Errorf("MAJLIS_FAILPOINTS=%s: want exit 2, usage naming the variable\n%s", spec, r)
		}
	}
}
