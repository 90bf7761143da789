package server

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
)

// BenchmarkAPIAllocate splits the cost of an allocation through the
// server (BenchmarkServerAllocate in package client measures it against
// the binary's server): the same allocation through the in-process
// server's route (api-ns/op), by a direct call of the library function the
// route calls (lib-ns/op: claim, records, fsyncs, peers, git), and `git
// worktree add -b` of the same commit (git-ns/op), alternately in one
// 10-file repository. api - lib is the HTTP and JSON; lib - git is what
// majlis adds to git. x-git is api against git, lib-x-git lib against git.
func BenchmarkAPIAllocate(b *testing.B) {
	e := newAPIEnv(b)
	root := filepath.Join(filepath.Dir(e.repo.Dir), "plain")
	ctx := context.Background()
	var api, lib, git time.Duration
	n := 0
	viaAPI := func() time.Duration {
		t0 := time.Now()
		if st, m := e.call(http.MethodPost, "/api/v1/workspaces", wire.AllocateRequest{Binding: fmt.Sprintf("A-%d", n)}); st != http.StatusOK {
			b.Fatalf("allocate: %d %v", st, m)
		}
		return time.Since(t0)
	}
	direct := func() time.Duration {
		t0 := time.Now()
		if _, err := e.s.p.AllocateWithPorts(ctx, provider.AllocateOptions{Binding: fmt.Sprintf("L-%d", n)}, 0, ""); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		n++
		// Alternate which goes first, so that neither always follows git.
		if n%2 == 0 {
			api += viaAPI()
			lib += direct()
		} else {
			lib += direct()
			api += viaAPI()
		}
		t2 := time.Now()
		if out, err := exec.Command("git", "-C", e.repo.Dir, "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", n),
			filepath.Join(root, fmt.Sprintf("G-%d", n)), "HEAD").CombinedOutput(); err != nil {
			b.Fatalf("git worktree add: %v\n%s", err, out)
		}
		git += time.Since(t2)
	}
	f := float64(n)
	b.ReportMetric(float64(api.Nanoseconds())/f, "api-ns/op")
	b.ReportMetric(float64(lib.Nanoseconds())/f, "lib-ns/op")
	b.ReportMetric(float64(git.Nanoseconds())/f, "git-ns/op")
	b.ReportMetric(float64(api-lib)/f, "http-ns/op")
	b.ReportMetric(float64(api)/float64(git), "x-git")
	b.ReportMetric(float64(lib)/float64(git), "lib-x-git")
}
