package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// envFlag is --env: print the allocated ports (and a generated lease
// token) as NAME=VALUE lines for eval or an env file, instead of the
// human text.
type envFlag bool

// check refuses --env with --json: stdout holds one or the other.
func (e envFlag) check(g *globalOptions) error {
	if bool(e) && g.JSON {
		return &usageError{errors.New("--env and --json both print on stdout: pass one of them")}
	}
	return nil
}

// portEnv returns the lines MAJLIS_PORT=P1 and MAJLIS_PORT_1=P1 ...
// MAJLIS_PORT_N=PN: MAJLIS_PORT is the first port, the numbered names
// count from 1, so a script asking for one port reads MAJLIS_PORT and one
// asking for several reads MAJLIS_PORT_1 to MAJLIS_PORT_N.
func portEnv(ports []int) []string {
	if len(ports) == 0 {
		return nil
	}
	out := []string{"MAJLIS_PORT=" + strconv.Itoa(ports[0])}
	for i, p := range ports {
		out = append(out, fmt.Sprintf("MAJLIS_PORT_%d=%d", i+1, p))
	}
	return out
}

// writeEnv prints the --env lines: the ports, and the lease token when
// majlis generated it (it is shown only once; its characters need no
// quoting).
func writeEnv(w io.Writer, ports []int, token string) {
	for _, l := range portEnv(ports) {
		fmt.Fprintln(w, l)
	}
	if token != "" {
		fmt.Fprintln(w, "MAJLIS_LEASE_TOKEN="+token)
	}
}
