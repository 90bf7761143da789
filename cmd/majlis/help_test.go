package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagLine is the usage line of flag name in usages.
func flagLine(usages, name string) string {
	for _, l := range strings.Split(usages, "\n") {
		if strings.Contains(l, "--"+name+" ") || strings.HasSuffix(l, "--"+name) {
			return l
		}
	}
	return ""
}

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
		// A flag's default is said once (issue 27: "(default 10m)
		// (default 0s)").
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if u := c.LocalFlags().FlagUsages(); strings.Count(flagLine(u, f.Name), "(default") > 1 {
				t.Errorf("%s --%s: its default is said twice: %q", name, f.Name, flagLine(u, f.Name))
			}
		})
	}
	walk(root)
}
