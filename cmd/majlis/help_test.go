package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command's --help has a one-line summary, a paragraph and examples
// (docs/design.md, "Conventions").
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	root := newRootCmd(&globalOptions{Stdout: &out, Stderr: &out})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Hidden {
			return
		}
		name := c.CommandPath()
		switch {
		case c.Short == "" || strings.Contains(c.Short, "\n"):
			t.Errorf("%s: no one-line summary", name)
		case len(c.Long) < len(c.Short):
			t.Errorf("%s: no paragraph", name)
		case !strings.Contains(c.Example, "majlis "):
			t.Errorf("%s: no examples", name)
		}
	}
	walk(root)
}
