// Command majlis gives every task its own Git workspace, lets tasks declare
// what they will touch, and takes workspaces back without destroying
// anyone's files. See README.md and docs/.
package main

import "os"

func main() { os.Exit(int(Main())) }
