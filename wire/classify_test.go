package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Test errors shaped as the library's: a type with facts around a
// sentinel, a type that is a fallback code, an annotating wrapper.
var (
	errTestHeld     = Sentinel("held", "test: held by another holder")
	errTestNotFound = Sentinel("not_found", "test: no such thing")
	errTestGit      = Sentinel("git_failed", "test: git said no")
)

type testError struct {
	op, hint string
	fallback string // its own code, a fallback, or ""
	err      error
}

func (e *testError) Error() string {
	s := e.op + ": " + e.err.Error()
	if e.hint != "" {
		s += "; " + e.hint
	}
	return s
}
func (e *testError) Unwrap() error { return e.err }
func (e *testError) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.op}
	if e.hint != "" {
		d["hint"] = e.hint
	}
	return d
}

type fallbackError struct{ testError }

func (e *fallbackError) ErrorCode() string { return e.fallback }

type testBegun struct {
	task, requestID string
	ports           bool
}

func (b testBegun) Error() string { return "begin " + b.task }
func (b testBegun) BegunTask() (task, requestID string, ports bool) {
	return b.task, b.requestID, b.ports
}

type begunError struct {
	testBegun
	err error
}

func (e *begunError) Unwrap() error                    { return e.err }
func (e *begunError) AnnotateDetails(d map[string]any) { d["request_id"] = e.requestID }

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		err         error
		code        string
		exit        ExitCode
		details     map[string]any
		messageTail string
	}{
		{"a sentinel alone", errTestNotFound, "not_found", ExitNotFound, map[string]any{}, "test: no such thing"},
		{"a sentinel in a type with facts", &testError{op: "show", err: errTestNotFound}, "not_found", ExitNotFound, map[string]any{"op": "show"}, ""},
		{"wrapped by fmt.Errorf", fmt.Errorf("reading: %w", &testError{op: "show", err: errTestNotFound}), "not_found", ExitNotFound, map[string]any{"op": "show"}, ""},
		{"the outermost code decides", &testError{op: "outer", err: fmt.Errorf("%w: %w", errTestHeld, errTestNotFound)}, "held", ExitHeld,
			map[string]any{"op": "outer"}, ""},
		{"facts of the innermost type around the sentinel", &testError{op: "outer", err: &testError{op: "inner", err: errTestNotFound}}, "not_found", ExitNotFound, map[string]any{"op": "inner"}, ""},
		{"a code beneath a fallback type", &fallbackError{testError{op: "acquire", fallback: "admission_failed", err: errTestHeld}}, "held", ExitHeld,
			map[string]any{"op": "acquire"}, ""},
		{"a fallback type alone", &fallbackError{testError{op: "open", fallback: "admission_failed", err: errors.New("disk on fire")}}, "admission_failed", ExitError, map[string]any{"op": "open"}, ""},
		{"fallbacks in the table's order", &fallbackError{testError{op: "check", fallback: "admission_failed", err: &fallbackError{testError{op: "status", fallback: "git_failed", err: errTestGit}}}},
			"git_failed", ExitError, map[string]any{"op": "status"}, ""},
		{"nothing coded", errors.New("disk on fire"), "internal", ExitError, map[string]any{}, "disk on fire"},
		{"the table's hint replaces the library's", &testError{op: "show", hint: "list the workspaces", err: fmt.Errorf("%w: T-1", errTestNotFound)}, "not_found", ExitNotFound,
			map[string]any{"op": "show", "hint": "'majlis workspace list' shows the workspaces there are", "not_found": "workspace"}, "show: test: no such thing: T-1; 'majlis workspace list' shows the workspaces there are"},
		{"a begin's hint, and its annotations", &begunError{testBegun{"T-1", "begin-1", false}, &testError{op: "acquire", err: errTestHeld}}, "held", ExitHeld,
			map[string]any{"op": "acquire", "request_id": "begin-1", "hint": "the workspace is left in place: retry with --request-id begin-1 once the conflict is gone (it resumes), or take the workspace back: 'majlis workspace reclaim T-1 --preview', then --confirm DIGEST"}, ""},
	} {
		err := tc.err
		if tc.name == "the table's hint replaces the library's" {
			err = &detailsError{err: err, extra: map[string]any{"not_found": "workspace"}}
		}
		r := Classify(err, SurfaceCLI)
		if r.Code != tc.code || r.ExitCode != tc.exit {
			t.Errorf("%s: code %s exit %d, want %s %d", tc.name, r.Code, r.ExitCode, tc.code, tc.exit)
		}
		if d := cmp.Diff(tc.details, r.Details); d != "" {
			t.Errorf("%s: details (-want +got):\n%s", tc.name, d)
		}
		if tc.messageTail != "" && !strings.HasSuffix(r.Message, tc.messageTail) {
			t.Errorf("%s: message %q, want it to end %q", tc.name, r.Message, tc.messageTail)
		}
		if c := Of(err); c.Code != tc.code {
			t.Errorf("%s: Of is %s, want %s", tc.name, c.Code, tc.code)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", errTestHeld), errTestHeld) {
		t.Error("a sentinel is not found by errors.Is")
	}
}

// detailsError adds facts beneath a testError, as a library's Details do.
type detailsError struct {
	err   error
	extra map[string]any
}

func (e *detailsError) Error() string { return e.err.Error() }
func (e *detailsError) Unwrap() error { return e.err }
func (e *detailsError) AnnotateDetails(d map[string]any) {
	for k, v := range e.extra {
		d[k] = v
	}
}

// Over the server, a hint names request fields and operations, written
// as the surface names them.
func TestClassifyOnTheServer(t *testing.T) {
	t.Parallel()
	err := &testError{op: "reclaim", err: Sentinel("unconfirmed", "test: reclaim needs confirmation")}
	r := Classify(err, SurfaceHTTP)
	want := "preview it (POST /api/v1/workspaces/{binding}/reclaim/preview), check what it would do, and send its digest as confirm (POST /api/v1/workspaces/{binding}/reclaim)"
	if r.Hint() != want || !strings.HasSuffix(r.Message, "; "+want) {
		t.Errorf("over HTTP: %+v", r)
	}
	r = Classify(err, SurfaceMCP)
	want = "preview it (workspace_reclaim_preview), check what it would do, and send its digest as confirm (workspace_reclaim)"
	if r.Hint() != want || !strings.HasSuffix(r.Message, "; "+want) {
		t.Errorf("over MCP: %+v", r)
	}
}
