package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// confirmed reports whether an answer to an interactive confirmation
// says yes: "y" or "yes", in any case, with surrounding spaces. Anything
// else, an empty line included, is no.
func confirmed(answer string) bool {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// onceValue refuses a second, different value for a single-value flag:
// with "--holder A --holder B" one of the two would be dropped silently.
// The same value again is no ambiguity, and cobra's completion parses the
// flags of the command line twice.
type onceValue struct {
	pflag.Value
	name  string
	set   bool
	first string
}

func (v *onceValue) Set(s string) error {
	if v.set {
		if s == v.first {
			return nil
		}
		return fmt.Errorf("--%s given twice (%q and %q): it takes one value", v.name, v.first, s)
	}
	v.set, v.first = true, s
	return v.Value.Set(s)
}

// onceFlags makes every single-value flag of the tree a usage error when
// repeated. Repeatable flags (slices, arrays, counts) and switches
// (booleans, where a repetition changes nothing) stay as they are.
func onceFlags(root *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*onceValue); done {
			return
		}
		if _, slice := f.Value.(pflag.SliceValue); slice {
			return
		}
		switch t := f.Value.Type(); {
		case t == "bool" || t == "count" || strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array"):
			return
		}
		f.Value = &onceValue{Value: f.Value, name: f.Name}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(wrap)
		c.PersistentFlags().VisitAll(wrap)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// askYes asks question on stderr and reads the answer from stdin.
func askYes(g *globalOptions, question string) bool {
	fmt.Fprintf(g.Stderr, "\n%s [y/N] ", question)
	answer, _ := bufio.NewReader(g.Stdin).ReadString('\n')
	return confirmed(answer)
}
