package serverctl_test

import (
	"context"
	"fmt"

	"github.com/majlis-dev/majlis/serverctl"
)

// Find the repository's server, starting it if none runs, as
// 'majlis server attach' does.
func ExampleAttach() {
	ctx := context.Background()
	t, err := serverctl.Locate(".")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := serverctl.Attach(ctx, t, serverctl.StartOptions{Command: []string{"majlis", "serve", "--repo", "."}})
	if err != nil {
		fmt.Println(err) // server_unresponsive, server_foreign, ...: nothing was taken over
		return
	}
	fmt.Println(res.Server.State, res.Server.Address)
}

// Probe the server without starting or changing anything.
func ExampleProbe() {
	ctx := context.Background()
	t, err := serverctl.Locate(".")
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := serverctl.Probe(ctx, t, serverctl.ProbeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	switch st.State {
	case serverctl.Running:
		fmt.Println("running on", st.Address)
	case serverctl.Unresponsive:
		fmt.Println("alive but not answering: wait, never kill it implicitly")
	default:
		fmt.Println(st.State, st.Reason)
	}
}
