package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	if _, err := fixtures.Isolate(); err != nil {
		panic(err)
	}
	testscript.Main(m, map[string]func(){
		"majlis": func() { os.Exit(int(Main())) },
	})
}

// TestScripts runs testdata/script/*.txtar against the real command line.
// Extra commands:
//
//	exits N PROG ARGS...   run PROG and require exit status N
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("LC_ALL", "C")
			gitconfig := "[user]\n\tname = majlis test\n\temail = test@majlis.invalid\n[init]\n\tdefaultBranch = main\n"
			return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N PROG ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
