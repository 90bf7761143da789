package main

import (
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/provider"
)

// bindingOf returns the binding a command acts on: the one named, or,
// when none is, that of the workspace containing the working directory,
// said on stderr (and, with --json, as "binding_from" in the result).
func (g *globalOptions) bindingOf(p *provider.Provider, args []string) (string, bool, error) {
	if len(args) > 0 {
		return args[0], false, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false, err
	}
	b, err := p.BindingAt(wd)
	if err != nil {
		return "", false, err
	}
	fmt.Fprintf(g.Stderr, "majlis: workspace %s (the current directory is inside it)\n", b)
	return b, true, nil
}

// bindingFrom is the binding_from of a result: "current_directory" when
// the binding was taken from the working directory, else "" (omitted).
func bindingFrom(fromCwd bool) string {
	if fromCwd {
		return "current_directory"
	}
	return ""
}
