package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// Sixteen `majlis lease acquire` processes, from two repositories, race for
// one host singleton: exactly one is granted (exit 0), fifteen are refused
// with exit 4 and code held, and the ledger holds one live lease, theirs.
func TestHostSingletonRaceCLI(t *testing.T) {
	bin := failpointsBinary(t) // any build of the binary does; this one is built already
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
	repos := []*fixtures.Repo{fixtures.NewRepo(t), fixtures.NewRepo(t)}
	for _, r := range repos {
		if run := majlisRun(t, bin, r.Dir, env, "init"); run.exit != 0 {
			t.Fatal(run)
		}
	}
	const n = 16
	runs := make([]binRun, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			runs[i] = majlisRun(t, bin, repos[i%2].Dir, env, "lease", "acquire", "--holder", fmt.Sprintf("agent-%02d", i), "--json", "host:port:3000")
		}()
	}
	close(start)
	wg.Wait()
	winner := ""
	for i, r := range runs {
		switch {
		case r.exit == 0:
			if winner != "" {
				t.Errorf("two winners: %s and agent-%02d", winner, i)
			}
			winner = fmt.Sprintf("agent-%02d", i)
		case r.exit != 4 || !jsonCode(r.stdout, "held"):
			t.Errorf("agent-%02d: want exit 4 held\n%s", i, r)
		}
	}
	if winner == "" {
		t.Fatal("nobody won the port")
	}
	live := majlisRun(t, bin, repos[0].Dir, env, "lease", "list", "--json").leases(t)
	if len(live) != 1 || live[0].Holder != winner || live[0].State != admission.StateActive || live[0].Generation != 1 {
		t.Errorf("after the race the ledger holds %+v, want one active lease of %s at generation 1", live, winner)
	}
}

// jsonCode reports whether stdout is one JSON error object with code.
func jsonCode(stdout, code string) bool {
	var out struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal([]byte(stdout), &out) == nil && out.Error.Code == code
}
