package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

const childEnv = "MAJLIS_PROVIDER_TEST_CHILD"

func TestMain(m *testing.M) {
	fixtures.RunHelper(childEnv, runChild)
	fixtures.Main(m)
}

// childResult is what a helper process prints.
type childResult struct {
	OK   bool   `json:"ok"`
	Code string `json:"code,omitempty"`
	Err  string `json:"err,omitempty"`
	Path string `json:"path,omitempty"`
}

func errCode(err error) string {
	for _, s := range []struct {
		err  error
		code string
	}{{ErrBindingLive, "binding_live"}, {ErrNested, "nested"}, {ErrReserved, "reserved"}, {ErrPathExists, "path_exists"},
		{ErrBranchExists, "branch_exists"}, {ErrMalformed, "malformed"}, {ErrInterrupted, "interrupted"}} {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return "other"
}

// runChild: MAJLIS_REPO, MAJLIS_BINDING, MAJLIS_PATH.
func runChild(mode string) int {
	ctx := context.Background()
	if mode == "hold-reservation" {
		// Take the resource MAJLIS_RESOURCE in the lease folder
		// MAJLIS_LEASES, say so, and hold it until stdin closes; then
		// release it.
		return holdReservation(ctx, os.Getenv("MAJLIS_LEASES"), os.Getenv("MAJLIS_RESOURCE"))
	}
	p, err := Open(ctx, os.Getenv("MAJLIS_REPO"), Options{})
	if err != nil {
		fmt.Println(`{"err":` + fmt.Sprintf("%q", err.Error()) + `}`)
		return 1
	}
	opts := AllocateOptions{Binding: os.Getenv("MAJLIS_BINDING"), Path: os.Getenv("MAJLIS_PATH"),
		RequestID: os.Getenv("MAJLIS_REQUEST"), AllowNested: os.Getenv("MAJLIS_NESTED") != ""}
	switch mode {
	case "release":
		// Release MAJLIS_BINDING's workspace.
		if _, err := p.Release(ctx, opts.Binding, ""); err != nil {
			fmt.Println(err)
			return 1
		}
		return 0
	case "allocate":
		ws, err := p.Allocate(ctx, opts)
		r := childResult{OK: err == nil}
		if err != nil {
			r.Code, r.Err = errCode(err), err.Error()
		} else {
			r.Path = ws.Path
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return 0
	case "allocate-many":
		// MAJLIS_COUNT workspaces MAJLIS_BINDING-<i> at MAJLIS_PATH/<i>,
		// one after another; each binding is appended to MAJLIS_PROGRESS
		// once its allocation has returned.
		n, _ := strconv.Atoi(os.Getenv("MAJLIS_COUNT"))
		for i := range n {
			o := opts
			o.Binding = fmt.Sprintf("%s-%02d", opts.Binding, i)
			o.Path = filepath.Join(opts.Path, fmt.Sprintf("%02d", i))
			if _, err := p.Allocate(ctx, o); err != nil {
				fmt.Println(`{"err":` + fmt.Sprintf("%q", err.Error()) + `}`)
				return 1
			}
			f, err := os.OpenFile(os.Getenv("MAJLIS_PROGRESS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err == nil {
				_, err = f.WriteString(o.Binding + "\n")
				f.Close()
			}
			if err != nil {
				fmt.Println(`{"err":` + fmt.Sprintf("%q", err.Error()) + `}`)
				return 1
			}
		}
		fmt.Println(`{"ok":true}`)
		return 0
	case "claim-and-die":
		// Publish the claim as Allocate does, then die before git runs.
		path, _ := pathid.Lexical(opts.Path)
		c := Claim{Format: formatClaim, Binding: opts.Binding, RequestID: opts.RequestID, Path: path,
			PhysicalPath: path, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: os.Getenv("MAJLIS_BASE"),
			BaseRef: "HEAD", Branch: "majlis/" + opts.Binding, Intent: []string{}, CreatedAt: p.now().UTC()}
		c.Allocator, _ = procid.Of(os.Getpid())
		args := requestArgs{Op: "allocate", Binding: opts.Binding, Base: "HEAD", Branch: c.Branch, Path: path, Intent: []string{}}
		if b := os.Getenv("MAJLIS_CHECKOUT"); b != "" {
			// As allocate --checkout B publishes it.
			c.Branch, c.BaseRef, c.Checkout = b, "refs/heads/"+b, true
			args.Branch, args.Checkout = b, true
		}
		if _, err := p.publishClaim(ctx, c, args, nil, p.records.Index); err != nil {
			fmt.Println(err)
			return 1
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "restore-claim-and-die":
		// Publish the claim as a detached restore does, then die before
		// git runs.
		path, _ := pathid.Lexical(opts.Path)
		base := os.Getenv("MAJLIS_BASE")
		c := Claim{Format: formatClaim, Binding: opts.Binding, RequestID: opts.RequestID, Path: path,
			PhysicalPath: path, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: base,
			BaseRef: base, Detached: true, Restore: os.Getenv("MAJLIS_SALVAGE"), Intent: []string{}, CreatedAt: p.now().UTC()}
		c.Allocator, _ = procid.Of(os.Getpid())
		args := requestArgs{Op: "allocate", Binding: opts.Binding, Base: base, Path: path, Intent: []string{}}
		if _, err := p.publishClaim(ctx, c, args, nil, p.records.Index); err != nil {
			fmt.Println(err)
			return 1
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return 2
}

// startChild re-runs the test binary as a helper in mode (runChild).
func startChild(t *testing.T, mode string, env ...string) *fixtures.Helper {
	t.Helper()
	return fixtures.StartHelper(t, childEnv, mode, fixtures.HelperOptions{Env: env})
}

// result waits for an allocating helper and decodes what it printed.
func result(c *fixtures.Helper) childResult {
	var r childResult
	c.Result(&r, false)
	return r
}

func holdReservation(ctx context.Context, dir, resource string) int {
	leases, err := reservation.Open(dir)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer leases.Close()
	l, err := leases.Acquire(ctx, reservation.Request{Resource: resource, Purpose: "reclaim", TTL: time.Hour})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	if err := l.Release(); err != nil {
		fmt.Println(err)
		return 1
	}
	return 0
}
