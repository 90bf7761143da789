package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// BenchmarkCompaction times what reads every binding's records before and
// after gc compacts them (and the claims journal): 200 bindings, each
// allocated and reclaimed five times (real allocations and reclaims;
// building it takes a minute or more; 5 bindings twice when the
// benchmarks run once each, fixtures.BenchSmoke), and one live workspace,
// the reclaim preview's target. Each command is the CLI's, with the
// claims index warm; "cold" removes the index first. Run it alone:
//
//	go test -run '^$' -bench BenchmarkCompaction -benchtime 10x ./provider
func BenchmarkCompaction(b *testing.B) {
	bindings, rounds := fixtures.Smaller(200, 5), fixtures.Smaller(5, 2)
	ctx := context.Background()
	bin := majlisBinary(b)
	parent, err := os.MkdirTemp(os.Getenv("HOME"), "compaction-")
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "repo")
	repo := fixtures.InitRepo(b, dir)
	repo.WriteFile("a.txt", "a\n")
	repo.Commit("one file")
	if _, err := Init(ctx, dir, InitOptions{}); err != nil {
		b.Fatal(err)
	}
	p, err := Open(ctx, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	t0 := time.Now()
	for i := range bindings {
		name := fmt.Sprintf("B-%03d", i)
		for r := range rounds {
			o := AllocateOptions{Binding: name}
			if r > 0 {
				o.CheckoutBranch = "majlis/" + name
			}
			if _, err := p.Allocate(ctx, o); err != nil {
				b.Fatal(err)
			}
			// The trash deleted, as a purge would have done long before
			// a history this size: the records are what is measured.
			if _, err := p.Reclaim(ctx, ReclaimOptions{Binding: name, Yes: true, DeleteTrash: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := p.Allocate(ctx, AllocateOptions{Binding: "target"}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d bindings reclaimed %d times each in %v", bindings, rounds, time.Since(t0))
	files := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(p.stateDir, "claims"), func(_ string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	index := filepath.Join(p.stateDir, claimsIndexName)
	target, err := p.records.Current("bench", "target")
	if err != nil {
		b.Fatal(err)
	}
	measure := func(state string) {
		b.Logf("%s: %d files under claims/", state, files())
		// The peer check reclaim runs before each destructive step (from
		// the claims journal), in this process.
		b.Run(state+"/peer-recheck", func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				n++
				t0 := time.Now()
				if _, err := p.retainedPeers(ctx, target); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms/op")
		})
		for _, m := range []struct {
			name string
			cold bool
			args []string
		}{
			{"list", false, []string{"workspace", "list"}},
			{"list-all", false, []string{"workspace", "list", "--all"}},
			{"list-all-cold", true, []string{"workspace", "list", "--all"}},
			{"reclaim-preview", false, []string{"workspace", "reclaim", "target", "--preview"}},
			{"gc-preview", false, []string{"gc", "--preview", "--record-age", "1ns"}},
		} {
			b.Run(state+"/"+m.name, func(b *testing.B) {
				run(b, dir, nil, bin, m.args...) // the index as the command leaves it
				var total time.Duration
				n := 0
				for b.Loop() {
					if m.cold {
						os.Remove(index)
					}
					n++
					total += timed(b, dir, nil, bin, m.args...)
				}
				b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/op")
			})
		}
	}
	// The branches gc deletes anyway go first, so that only compaction
	// differs between the two.
	gc := func(args ...string) {
		cmd := exec.Command(bin, append([]string{"gc", "--preview", "--json"}, args...)...)
		cmd.Dir = dir
		raw, err := cmd.Output()
		if err != nil {
			b.Fatalf("gc --preview: %v", err)
		}
		out := string(raw)
		i := strings.Index(out, `"digest": "`)
		digest := out[i+len(`"digest": "`):][:71]
		t0 := time.Now()
		run(b, dir, nil, bin, append([]string{"gc", "--confirm", digest}, args...)...)
		b.Logf("gc --confirm %s: %v", strings.Join(args, " "), time.Since(t0))
	}
	gc()
	measure("before")
	gc("--record-age", "1ns")
	measure("after")
}
