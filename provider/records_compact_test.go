package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/internal/envvar"
)

// recordFiles lists the record files of a folder (temporary files left
// out), or nil when it does not exist.
func recordFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// compactedFiles lists every file under the binding's compacted records,
// as <folder>/<file>.
func compactedFiles(t *testing.T, p *Provider, binding string) []string {
	t.Helper()
	var out []string
	dir := p.records.compactedDir(binding)
	for _, sub := range recordFiles(t, dir) {
		for _, f := range recordFiles(t, filepath.Join(dir, sub)) {
			out = append(out, sub+"/"+f)
		}
	}
	return out
}

func reclaimYes(t *testing.T, p *Provider, binding string, o ...ReclaimOptions) *ReclaimResult {
	t.Helper()
	ro := ReclaimOptions{Binding: binding, Yes: true}
	if len(o) > 0 {
		ro = o[0]
		ro.Binding, ro.Yes = binding, true
	}
	// The trash is deleted at once unless the test keeps it.
	ro.DeleteTrash = ro.KeepTrash == 0
	res, err := p.Reclaim(t.Context(), ro)
	if err != nil {
		t.Fatalf("reclaim %s: %v", binding, err)
	}
	return res
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGCCompactsRecords: gc compacts the old records of finished
// workspaces, and only those; everything that reads records answers as
// before for what stays, the next claim number follows on, and a retry of
// a request whose claim was compacted answers as it did before.
func TestGCCompactsRecords(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	ctx := t.Context()
	// T-1: #1 creates majlis/T-1, #2 to #5 check it out again; each
	// reclaimed but #5.
	mustAllocate(t, p, AllocateOptions{Binding: "T-1", RequestID: "t1-1"})
	reclaimYes(t, p, "T-1")
	for i := 2; i <= 5; i++ {
		mustAllocate(t, p, AllocateOptions{Binding: "T-1", CheckoutBranch: "majlis/T-1", RequestID: fmt.Sprintf("t1-%d", i)})
		if i < 5 {
			reclaimYes(t, p, "T-1")
		}
	}
	// T-2: one workspace, reclaimed (its only record stays).
	mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
	reclaimYes(t, p, "T-2")
	// T-3: #1 reclaimed with its trash kept (still a peer), #2 reclaimed.
	mustAllocate(t, p, AllocateOptions{Binding: "T-3"})
	kept := reclaimYes(t, p, "T-3", ReclaimOptions{KeepTrash: time.Hour})
	mustAllocate(t, p, AllocateOptions{Binding: "T-3", Branch: "t3-b"})
	reclaimYes(t, p, "T-3")

	age := GCOptions{RecordAge: time.Nanosecond}
	plan, err := p.PreviewGC(ctx, age)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Records) != 0 {
		t.Fatalf("records planned while T-1's newest workspace is live: %s", asJSON(t, plan.Records))
	}
	if plan, err = p.PreviewGC(ctx, GCOptions{}); err != nil || len(plan.Records) != 0 {
		t.Fatalf("records younger than the default age planned: %v %s", err, asJSON(t, plan))
	}

	reclaimYes(t, p, "T-1")
	// A retry of #3's allocation, before compaction: what it answers.
	retryBefore, err := p.Allocate(ctx, AllocateOptions{Binding: "T-1", CheckoutBranch: "majlis/T-1", RequestID: "t1-3"})
	if err != nil {
		t.Fatalf("retry of t1-3 before compaction: %v", err)
	}
	listBefore, err := p.List(ctx, ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan, err = p.PreviewGC(ctx, age); err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, r := range plan.Records {
		planned = append(planned, fmt.Sprintf("%s#%d %s", r.Binding, r.Seq, r.Outcome))
	}
	// T-1 #1 stays: gc judges majlis/T-1 by it. #5 is the newest. T-3 #1
	// has its trash kept.
	if diff := cmp.Diff([]string{"T-1#2 reclaimed", "T-1#3 reclaimed", "T-1#4 reclaimed"}, planned); diff != "" {
		t.Fatalf("planned records (-want +got):\n%s", diff)
	}
	claimsBefore := recordFiles(t, p.records.Dir("T-1"))

	if _, err := p.GC(ctx, GCOptions{RecordAge: time.Nanosecond, Confirm: "sha256:" + strings.Repeat("0", 64)}); !errors.Is(err, ErrPreviewStale) {
		t.Fatalf("gc with another digest: %v, want ErrPreviewStale", err)
	}
	if diff := cmp.Diff(claimsBefore, recordFiles(t, p.records.Dir("T-1"))); diff != "" {
		t.Fatalf("a refused gc changed the records (-before +after):\n%s", diff)
	}
	res, err := p.GC(ctx, GCOptions{RecordAge: time.Nanosecond, Confirm: plan.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plan.Records, res.Records); diff != "" || len(res.Skipped) != 0 {
		t.Fatalf("compacted (-planned +done):\n%s\nskipped %+v", diff, res.Skipped)
	}

	// The records moved, whole: none lost, none left twice.
	var stay, moved []string
	for _, f := range claimsBefore {
		if strings.HasPrefix(f, "000001.") || strings.HasPrefix(f, "000005.") {
			stay = append(stay, f)
		} else {
			moved = append(moved, "000002-000004/"+f)
		}
	}
	if diff := cmp.Diff(stay, recordFiles(t, p.records.Dir("T-1"))); diff != "" {
		t.Errorf("T-1's claims folder (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(moved, compactedFiles(t, p, "T-1")); diff != "" {
		t.Errorf("T-1's compacted records (-want +got):\n%s", diff)
	}
	archived, _, err := readClaimsFolder(filepath.Join(p.records.compactedDir("T-1"), "000002-000004"), "T-1")
	if err != nil || len(archived) != 3 || !archived[0].has(EventReclaimed) {
		t.Fatalf("the compacted records do not read back: %d, %v", len(archived), err)
	}
	// The journal names the claims that stay, and no longer the others.
	js, err := p.records.Journal()
	if err != nil {
		t.Fatalf("the journal after compaction: %v", err)
	}
	var named []string
	for _, j := range js {
		if j.Binding == "T-1" {
			named = append(named, fmt.Sprintf("#%d reclaimed=%v", j.Seq, j.Reclaimed))
		}
	}
	if diff := cmp.Diff([]string{"#1 reclaimed=true", "#5 reclaimed=true"}, named); diff != "" {
		t.Errorf("the journal's claims of T-1 (-want +got):\n%s", diff)
	}
	if got := compactedFiles(t, p, "T-3"); got != nil {
		t.Errorf("T-3's records were compacted though its kept trash %s is there: %v", kept.TrashPath, got)
	}

	// What reads records: list (without the compacted ones), doctor.
	listAfter, err := p.List(ctx, ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Workspace
	for _, w := range listBefore {
		if w.Binding == "T-1" && w.RequestID != "t1-1" && w.RequestID != "t1-5" {
			continue
		}
		want = append(want, w)
	}
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, listAfter)); diff != "" {
		t.Errorf("list --all after compaction (-want +got):\n%s", diff)
	}
	rep, err := p.Doctor(ctx)
	if err != nil || !rep.OK {
		t.Errorf("doctor after compaction: %v %s", err, asJSON(t, rep))
	}
	// A retry of a compacted request answers as before, and changes nothing.
	retryAfter, err := p.Allocate(ctx, AllocateOptions{Binding: "T-1", CheckoutBranch: "majlis/T-1", RequestID: "t1-3"})
	if err != nil {
		t.Fatalf("retry of t1-3 after compaction: %v", err)
	}
	if diff := cmp.Diff(asJSON(t, retryBefore), asJSON(t, retryAfter)); diff != "" {
		t.Errorf("the retry answers otherwise (-before +after):\n%s", diff)
	}
	// The next claim follows the newest. (gc deleted majlis/T-1, merged:
	// this claim creates it again.)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	recs, err := p.records.Binding("T-1")
	if err != nil || recs[len(recs)-1].Claim.Seq != 6 {
		t.Fatalf("the next claim: %v, %v", recs, err)
	}
	pv, err := p.PreviewReclaim(ctx, "T-1")
	if err != nil || pv.Path != ws.Path {
		t.Fatalf("the reclaim preview after compaction: %+v, %v", pv, err)
	}
	reclaimYes(t, p, "T-1")

	// Again: #1 (gc judges majlis/T-1 by #6 now) and #5 may go; #6 is
	// the newest.
	if plan, err = p.PreviewGC(ctx, age); err != nil {
		t.Fatal(err)
	}
	if len(plan.Records) != 2 || plan.Records[0].Seq != 1 || plan.Records[1].Seq != 5 {
		t.Fatalf("second plan: %s", asJSON(t, plan.Records))
	}
	if _, err := p.GC(ctx, GCOptions{RecordAge: time.Nanosecond, Confirm: plan.Digest}); err != nil {
		t.Fatal(err)
	}
	got := compactedFiles(t, p, "T-1")
	if len(got) != len(claimsBefore) || !slices.Contains(got, "000001-000005/000001.claim") || !slices.Contains(got, "000001-000005/000005.claim") {
		t.Errorf("compacted records after the second gc: %v", got)
	}
	if left := recordFiles(t, p.records.Dir("T-1")); len(left) == 0 || !strings.HasPrefix(left[0], "000006.") {
		t.Errorf("T-1's claims folder after the second gc: %v", left)
	}
}

// recordContents maps every record file of the binding, in its claims
// folder and among its compacted records (a staging folder included), by
// name, to the contents found under that name (several when it is in
// more than one place).
func recordContents(t *testing.T, p *Provider, binding string) (claims []string, all map[string][]string) {
	t.Helper()
	all = map[string][]string{}
	read := func(dir string) []string {
		names := recordFiles(t, dir)
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			all[n] = append(all[n], string(b))
		}
		return names
	}
	claims = read(p.records.Dir(binding))
	root := p.records.compactedDir(binding)
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		read(filepath.Join(root, e.Name()))
	}
	return claims, all
}

// TestGCCompactCrash: a gc killed (SIGKILL) at every step of a compaction
// leaves the claims folder either as it was or compacted, never anything
// between; every command that reads it works meanwhile; no record is
// lost; and the next gc finishes the compaction.
func TestGCCompactCrash(t *testing.T) {
	bin := crashBinary(t)
	for _, point := range []string{"gc/compact-staged", "gc/compact-exchanged", "gc/compact-cleaned"} {
		t.Run(strings.ReplaceAll(point, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p := newProvider(t)
			mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			reclaimYes(t, p, "T-1")
			for range 3 {
				mustAllocate(t, p, AllocateOptions{Binding: "T-1", CheckoutBranch: "majlis/T-1"})
				reclaimYes(t, p, "T-1")
			}
			old, before := recordContents(t, p, "T-1")
			var stay []string
			for _, n := range old {
				if strings.HasPrefix(n, "000001.") || strings.HasPrefix(n, "000004.") {
					stay = append(stay, n)
				}
			}
			env := []string{envvar.ReservationTTL + "=2s"}
			gc := func(env []string, args ...string) crashRun {
				return crashExec(t, bin, repo.Dir, env, append([]string{"gc", "--record-age", "1ns", "--json"}, args...)...)
			}
			digest := func() string {
				pv := gc(env, "--preview")
				var out struct {
					Plan GCPlan `json:"gc_preview"`
				}
				pv.decode(t, &out)
				return out.Plan.Digest
			}
			crash := gc(append(env, "MAJLIS_FAILPOINTS="+point+"=crash"), "--confirm", digest())
			if !crash.killed {
				t.Fatalf("gc was not killed at %s\n%s", point, crash)
			}
			claims, after := recordContents(t, p, "T-1")
			if point == "gc/compact-staged" {
				if diff := cmp.Diff(old, claims); diff != "" {
					t.Errorf("claims folder before the exchange (-want +got):\n%s", diff)
				}
			} else if diff := cmp.Diff(stay, claims); diff != "" {
				t.Errorf("claims folder after the exchange (-want +got):\n%s", diff)
			}
			for n, c := range before {
				if !slices.Contains(after[n], c[0]) {
					t.Errorf("record %s lost", n)
				}
			}
			// Readers work on what the crash left.
			for _, args := range [][]string{{"workspace", "list", "--all", "--json"}, {"doctor", "--json"}, {"gc", "--preview", "--json"}} {
				if r := crashExec(t, bin, repo.Dir, env, args...); r.exit != 0 {
					t.Errorf("after the crash\n%s", r)
				}
			}

			if rep, err := p.Doctor(t.Context()); err != nil || !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
				return f.Code == FindingCompactionUnfinished && f.Binding == "T-1"
			}) {
				t.Errorf("doctor after the crash: %v %s", err, asJSON(t, rep))
			}
			held, err := p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatal(err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			if r := gc(env, "--confirm", digest()); r.exit != 0 || !strings.Contains(r.stdout, `"skipped": []`) {
				t.Fatalf("the next gc\n%s", r)
			}
			claims, after = recordContents(t, p, "T-1")
			// The crashed gc deleted majlis/T-1 (merged) before it
			// compacted: #1 goes too now.
			stay = slices.DeleteFunc(stay, func(n string) bool { return strings.HasPrefix(n, "000001.") })
			if diff := cmp.Diff(stay, claims); diff != "" {
				t.Errorf("claims folder after the next gc (-want +got):\n%s", diff)
			}
			for n, c := range before {
				if diff := cmp.Diff(c, after[n]); diff != "" {
					t.Errorf("record %s after the next gc (-before +after):\n%s", n, diff)
				}
			}
			if _, err := os.Lstat(filepath.Join(p.records.compactedDir("T-1"), stagingName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the staging folder is still there: %v", err)
			}
			want := []string{"000001-000001", "000002-000003"}
			if point == "gc/compact-staged" {
				want = []string{"000001-000003"}
			}
			if got := recordFiles(t, p.records.compactedDir("T-1")); !slices.Equal(got, want) {
				t.Errorf("compacted folders %v", got)
			}
			if rep, err := p.Doctor(t.Context()); err != nil || slices.ContainsFunc(rep.Findings, func(f Finding) bool {
				return f.Code == FindingCompactionUnfinished
			}) {
				t.Errorf("doctor after the next gc: %v %s", err, asJSON(t, rep))
			}
			mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			if recs, err := p.records.Binding("T-1"); err != nil || recs[len(recs)-1].Claim.Seq != 5 {
				t.Errorf("the next claim after the crash: %v", err)
			}
		})
	}
}

// TestGCCompactRacesAllocation: an allocation of the binding that
// publishes its claim while gc has staged the folder it will exchange
// (gc paused there) is never lost: gc finds the folder changed, undoes its
// staging and leaves the binding's records where they are.
func TestGCCompactRacesAllocation(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	reclaimYes(t, p, "T-1")
	for range 2 {
		mustAllocate(t, p, AllocateOptions{Binding: "T-1", CheckoutBranch: "majlis/T-1"})
		reclaimYes(t, p, "T-1")
	}
	pv := crashExec(t, bin, repo.Dir, nil, "gc", "--preview", "--record-age", "1ns", "--json")
	var out struct {
		Plan GCPlan `json:"gc_preview"`
	}
	pv.decode(t, &out)
	if len(out.Plan.Records) == 0 {
		t.Fatalf("nothing to compact\n%s", pv)
	}
	env, reached, release := crashPause(t, "gc/compact-staged")
	gc := crashStart(t, bin, repo.Dir, env, "gc", "--confirm", out.Plan.Digest, "--record-age", "1ns", "--json")
	reached()
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Branch: "t1-new", Path: filepath.Join(t.TempDir(), "T-1")})
	before := recordFiles(t, p.records.Dir("T-1"))
	release()
	res := gc.wait()
	if res.exit != 0 {
		t.Fatalf("gc\n%s", res)
	}
	var done struct {
		GC GCResult `json:"gc"`
	}
	res.decode(t, &done)
	if len(done.GC.Records) != 0 || len(done.GC.Skipped) != 1 || done.GC.Skipped[0].Binding != "T-1" {
		t.Errorf("gc compacted despite the new claim: %s", asJSON(t, done.GC))
	}
	if diff := cmp.Diff(before, recordFiles(t, p.records.Dir("T-1"))); diff != "" {
		t.Errorf("T-1's records (-before gc went on +after):\n%s", diff)
	}
	if got := recordFiles(t, p.records.compactedDir("T-1")); len(got) != 0 {
		t.Errorf("compacted folders left: %v", got)
	}
	if cur, err := p.records.Current("show", "T-1"); err != nil || cur.Claim.Path != ws.Path || cur.Claim.Seq != 4 {
		t.Errorf("T-1's live workspace after gc: %+v, %v", cur, err)
	}
}

// TestGCCompactReaders: commands that read every binding's records, run
// while another process compacts them, never fail and never see a binding
// without the records that stay.
func TestGCCompactReaders(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	const bindings = 12
	for i := range bindings {
		b := fmt.Sprintf("T-%02d", i)
		mustAllocate(t, p, AllocateOptions{Binding: b})
		reclaimYes(t, p, b)
		for range 2 {
			mustAllocate(t, p, AllocateOptions{Binding: b, CheckoutBranch: "majlis/" + b})
			reclaimYes(t, p, b)
		}
	}
	// gc deletes the merged branches first: then #1 and #2 of each go.
	for range 2 {
		pv := crashExec(t, bin, repo.Dir, nil, "gc", "--preview", "--record-age", "1ns", "--json")
		var out struct {
			Plan GCPlan `json:"gc_preview"`
		}
		pv.decode(t, &out)
		gc := crashStart(t, bin, repo.Dir, nil, "gc", "--confirm", out.Plan.Digest, "--record-age", "1ns", "--json")
		reads := 0
		ended := waitProc(gc)
		for done := false; !done; {
			select {
			case <-ended:
				done = true
			default:
			}
			_, recs, errs, err := p.records.EachFromRecords()
			if err != nil {
				t.Fatalf("reading every binding during gc: %v", err)
			}
			for i, e := range errs {
				if e != nil {
					t.Fatalf("reading binding %d during gc: %v", i, e)
				}
				if n := len(recs[i]); n == 0 || recs[i][n-1].Claim.Seq != 3 || !recs[i][n-1].has(EventReclaimed) {
					t.Fatalf("binding %d read during gc without its newest record: %d records", i, n)
				}
			}
			if _, err := p.List(t.Context(), ListOptions{All: true}); err != nil {
				t.Fatalf("list during gc: %v", err)
			}
			reads++
		}
		if r := gc.wait(); r.exit != 0 {
			t.Fatalf("gc\n%s", r)
		}
		t.Logf("%d reads during the gc", reads)
	}
	for i := range bindings {
		if got := recordFiles(t, p.records.Dir(fmt.Sprintf("T-%02d", i))); len(got) == 0 || !strings.HasPrefix(got[0], "000003.") {
			t.Errorf("T-%02d's claims folder after gc: %v", i, got)
		}
	}
}

// waitProc returns a channel closed once the process has ended.
func waitProc(c *crashProc) <-chan struct{} {
	ch := make(chan struct{})
	go func() { c.wait(); close(ch) }()
	return ch
}
