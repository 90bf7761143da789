// Command majlis gives every task its own Git workspace, lets tasks declare
// what they will touch, and takes workspaces back without destroying
// anyone's files. See README.md and docs/.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// A command lives for tens of milliseconds and allocates a few
	// megabytes: with Go's default the collector runs several times
	// while a list of a thousand workspaces decodes its records (about a
	// sixth of its time). Unless GOGC says otherwise, collect when the
	// heap has grown fivefold, as Go's own tools start with a larger heap.
	// The server (majlis serve) runs the same way: its heap stays small.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(int(Main()))
}
