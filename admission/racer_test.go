package admission

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// A racer is a helper process that takes part in cross-process races:
// it starts, opens what it needs, says "ready", and then does one job per
// line it reads on stdin, printing a childResult a line. The test starts
// every racer, waits until all are ready, and only then sends the round's
// jobs, so that the racers meet at the contested step, not at their
// process starts; further rounds reuse the same processes, whose start is
// not what the tests race.
type racer = fixtures.Helper

// A racerJob is one line a racer reads: open the repository ledger at
// Ledger (mode open), or acquire Resources for Holder in Checkout (mode
// acquire).
type racerJob struct {
	Ledger    string   `json:"ledger,omitempty"`
	Holder    string   `json:"holder,omitempty"`
	Checkout  string   `json:"checkout,omitempty"`
	Resources []string `json:"resources,omitempty"`
}

// startRacers starts n racers in mode ("open", or "acquire" with the
// state dir, host ledger and clock of e) and waits until all are ready.
func startRacers(t *testing.T, n int, mode string, e *env) []*racer {
	t.Helper()
	var env []string
	if e != nil {
		env = append(env, "MAJLIS_STATE="+e.state, "MAJLIS_HOST="+e.host, "MAJLIS_NOW="+e.clock.Now().Format(time.RFC3339Nano))
	}
	rs := make([]*racer, n)
	for i := range rs {
		rs[i] = fixtures.StartHelper(t, childEnv, "racer-"+mode, fixtures.HelperOptions{Env: env, Lines: true})
	}
	for _, r := range rs {
		r.Expect("ready")
	}
	return rs
}

// race sends every racer its job for the round (job(i) for racer i) and
// returns their results in order.
func race(t *testing.T, rs []*racer, job func(i int) racerJob) []childResult {
	t.Helper()
	lines := make([][]byte, len(rs))
	for i := range rs {
		b, err := json.Marshal(job(i))
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	for i, r := range rs { // all jobs written before any result is read
		r.Send(string(lines[i]))
	}
	results := make([]childResult, len(rs))
	for i, r := range rs {
		r.Recv(&results[i])
	}
	return results
}

// runRacer is the helper side of a racer (TestMain's childEnv
// "racer-open" or "racer-acquire").
func runRacer(mode string) int {
	ctx := context.Background()
	var s *Service
	if mode == "acquire" {
		opts := Options{HostLedger: os.Getenv("MAJLIS_HOST")}
		if now, err := time.Parse(time.RFC3339Nano, os.Getenv("MAJLIS_NOW")); err == nil {
			opts.Now = func() time.Time { return now }
		}
		var err error
		if s, err = Open(ctx, os.Getenv("MAJLIS_STATE"), opts); err != nil {
			fmt.Fprintln(os.Stderr, "racer:", err)
			return 1
		}
		defer s.Close()
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var job racerJob
		if err := json.Unmarshal(sc.Bytes(), &job); err != nil {
			fmt.Fprintln(os.Stderr, "racer:", err)
			return 1
		}
		var err error
		if mode == "open" {
			var l *ledger
			if l, err = openLedger(ctx, job.Ledger, kindRepository, 0); err == nil {
				err = l.close()
			}
		} else {
			_, err = s.Acquire(ctx, AcquireRequest{Token: tokenOf(job.Holder), Holder: job.Holder, Checkout: job.Checkout, Resources: job.Resources})
		}
		r := childResult{OK: err == nil}
		if err != nil {
			r.Code, r.Err = errCode(err), err.Error()
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	return 0
}

func isRacer(mode string) (string, bool) { return strings.CutPrefix(mode, "racer-") }
