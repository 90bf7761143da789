package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

// Completion: `majlis completion bash|zsh|fish` (cobra's) completes
// bindings, holders, lease ids, resources and policy keys from the
// repository named by --repo (default: the working directory's). A
// completion only reads: it never creates a ledger, and outside an
// initialized repository it offers nothing.

// completions wires the completion functions into the finished command
// tree, by command path.
func completions(g *globalOptions, root *cobra.Command) {
	args := map[string]cobra.CompletionFunc{
		"majlis workspace show":    completeBindings(g, false),
		"majlis workspace salvage": completeBindings(g, false),
		"majlis workspace release": completeBindings(g, false),
		"majlis workspace reclaim": completeBindings(g, false),
		"majlis workspace recover": completeBindings(g, false),
		"majlis workspace restore": completeBindings(g, true),
		"majlis end":               completeBindings(g, false),
		"majlis lease acquire":     completeResources(g),
		"majlis lease renew":       completeLeaseIDs(g),
		"majlis lease release":     completeLeaseIDs(g),
		"majlis lease resolve":     completeLeaseIDs(g),
		"majlis policy set":        completePolicy(g),
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f, ok := args[c.CommandPath()]; ok {
			c.ValidArgsFunction = f
		} else if c.Args != nil && c.ValidArgsFunction == nil && !c.HasSubCommands() {
			// Names of new things (a binding to allocate, a task to
			// begin) and nothing at all: no file names either.
			c.ValidArgsFunction = noCompletion
		}
		if c.Flags().Lookup("holder") != nil {
			_ = c.RegisterFlagCompletionFunc("holder", completeHolders(g))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func noCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completionProvider opens the repository for a completion, or returns
// nil (no repository, not initialized: nothing to offer).
func completionProvider(ctx context.Context, g *globalOptions) *provider.Provider {
	p, err := g.openProvider(ctx)
	if err != nil {
		return nil
	}
	return p
}

// completionLeases lists the live leases of the repository (and the
// machine's host leases), without creating a ledger that does not exist.
func completionLeases(ctx context.Context, g *globalOptions, holder string) []admission.Lease {
	p := completionProvider(ctx, g)
	if p == nil {
		return nil
	}
	defer p.Close()
	if _, err := os.Stat(filepath.Join(p.StateDir(), admission.RepositoryLedgerName)); err != nil {
		return nil
	}
	svc, err := p.Admission(ctx)
	if err != nil {
		return nil
	}
	defer svc.Close()
	ls, err := svc.List(ctx, admission.ListRequest{Holder: holder})
	if err != nil {
		return nil
	}
	return ls
}

// completeBindings offers the bindings of the repository's workspaces:
// live ones, or (reclaimed) also the reclaimed ones that restore takes.
func completeBindings(g *globalOptions, reclaimed bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return noCompletion(cmd, args, "")
		}
		p := completionProvider(cmd.Context(), g)
		if p == nil {
			return noCompletion(cmd, args, "")
		}
		defer p.Close()
		wss, err := p.List(cmd.Context(), provider.ListOptions{All: reclaimed})
		if err != nil {
			return noCompletion(cmd, args, "")
		}
		var out []cobra.Completion
		for _, ws := range wss {
			if !slices.Contains(out, ws.Binding) {
				out = append(out, cobra.CompletionWithDesc(ws.Binding, ws.State+" "+ws.Path))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeHolders offers the holders of live leases.
func completeHolders(g *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		seen := map[string]bool{}
		for _, l := range completionLeases(cmd.Context(), g, "") {
			if !seen[l.Holder] {
				seen[l.Holder] = true
				out = append(out, l.Holder)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeLeaseIDs offers the ids of live leases (of --holder when given),
// each described by its resource and holder.
func completeLeaseIDs(g *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		holder := ""
		if f := cmd.Flags().Lookup("holder"); f != nil {
			holder = f.Value.String()
		}
		var out []cobra.Completion
		for _, l := range completionLeases(cmd.Context(), g, holder) {
			if !slices.Contains(args, l.ID) {
				out = append(out, cobra.CompletionWithDesc(l.ID, l.Resource+" "+l.Holder+" "+string(l.State)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeResources offers the resource forms, host:port:auto, and the
// resources of live leases (to share an intent's wording, or see what is
// taken); after "file:" or "intent:", the paths of the checkout.
func completeResources(g *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		for _, scope := range []string{"file:", "intent:"} {
			if rest, ok := strings.CutPrefix(toComplete, scope); ok {
				return completePaths(scope, rest), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
			}
		}
		out := []cobra.Completion{"file:", "intent:", "host:", "host:port:auto"}
		for _, l := range completionLeases(cmd.Context(), g, "") {
			if !slices.Contains(out, l.Resource) && l.Resource != "host:port:auto" {
				out = append(out, l.Resource)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// completePaths lists the entries of the directory part of rest, prefixed
// with scope; directories end in "/".
func completePaths(scope, rest string) []cobra.Completion {
	dir, _ := filepath.Split(rest)
	entries, err := os.ReadDir(filepath.Join(".", dir))
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		name := scope + dir + e.Name()
		if e.IsDir() {
			name += "/"
		}
		out = append(out, name)
	}
	return out
}

// completePolicy offers the policy keys, then the values of the key.
func completePolicy(g *globalOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return admission.PolicyKeys(), cobra.ShellCompDirectiveNoFileComp
		case 1:
			if args[0] == admission.PolicyPortRange {
				return []cobra.Completion{admission.DefaultPortRange}, cobra.ShellCompDirectiveNoFileComp
			}
			if slices.Contains(admission.ConflictPolicyKeys(), args[0]) {
				return []cobra.Completion{string(admission.Allow), string(admission.Warn), string(admission.Block)}, cobra.ShellCompDirectiveNoFileComp
			}
		}
		return noCompletion(cmd, args, "")
	}
}
