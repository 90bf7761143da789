package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Command groups (majlis, workspace, lease, ...) do nothing by themselves.
// Cobra would print a group's help and exit 0 for `majlis workspace
// remove T`, telling a script that a typo succeeded. Here a group run with
// an unknown subcommand is a usage error, as an unknown top-level command
// is; run without one, it prints its help to stderr and is a usage error
// too (exit 2), since nothing was done. Asking for help (--help, `majlis
// help ...`) prints it on stdout and exits 0.

// strictGroups makes every group under root (root included) refuse
// unknown and missing subcommands, and installs a help command that
// refuses unknown topics. Call it once the tree is complete.
func strictGroups(g *globalOptions, root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = "  majlis completion bash > ~/.local/share/bash-completion/completions/majlis"
			for _, sh := range c.Commands() {
				sh.Example = completionExamples[sh.Name()]
			}
		}
	}
	root.SetHelpCommand(newHelpCmd())
	// A group is runnable only to refuse; its usage line stays "[command]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:{{if .Runnable}}",
		"Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error { return groupRun(g, cmd, args) }
		}
	}
	walk(root)
}

func groupRun(g *globalOptions, cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{unknownCommand(cmd, args[0])}
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			names = append(names, sub.Name())
		}
	}
	if !g.JSON {
		cmd.SetOut(g.Stderr)
		_ = cmd.Help()
		fmt.Fprintln(g.Stderr)
	}
	return &usageError{fmt.Errorf("%s needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, ", "))}
}

// unknownCommand words the error as cobra does for unknown top-level
// commands, with its suggestions.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only by its own lookup
	}
	// A word that means a command (its SuggestFor: "remove" for reclaim)
	// suggests that command alone, not those spelled alike ("recover").
	var s []string
	for _, sub := range cmd.Commands() {
		if slices.Contains(sub.SuggestFor, name) && sub.IsAvailableCommand() {
			s = append(s, sub.Name())
		}
	}
	if len(s) == 0 {
		s = cmd.SuggestionsFor(name)
	}
	if len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return errors.New(msg)
}

// newHelpCmd is `majlis help [COMMAND...]`: help for a command or topic
// on stdout, or a usage error for one that does not exist.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "Help about any command or topic",
		Long: `Print the help of a command (the same as COMMAND --help), or of a topic
such as exit-codes. An unknown command or topic is a usage error (exit 2).`,
		Example: `  majlis help workspace reclaim
  majlis help exit-codes`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return &usageError{fmt.Errorf("unknown help topic %q; run 'majlis help' for the commands and topics", strings.Join(args, " "))}
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

var completionExamples = map[string]string{
	"bash":       "  source <(majlis completion bash)",
	"zsh":        "  majlis completion zsh > \"${fpath[1]}/_majlis\"",
	"fish":       "  majlis completion fish | source",
	"powershell": "  majlis completion powershell | Out-String | Invoke-Expression",
}
