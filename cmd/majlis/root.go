package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/majlis-dev/majlis/wire"
	"github.com/spf13/cobra"
)

// globalOptions are the flags every command accepts (docs/cli.md).
type globalOptions struct {
	Repo string
	JSON bool
	// Progress shows the steps of long operations on stderr even with
	// --json or where stderr is no terminal (progress.go).
	Progress bool

	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader

	// interruption is the signal that stopped the run, if any.
	interruption *interruption
	// progressDone ends the progress display of the run, if any.
	progressDone func()
}

// Main runs the majlis command line with os.Args and returns the exit code.
func Main() ExitCode {
	ctx, in, stop := signalContext(context.Background(), os.Stderr)
	defer stop()
	g := &globalOptions{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, interruption: in}
	return runWith(ctx, g, os.Args[1:])
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code ExitCode) {
	return runWith(ctx, &globalOptions{Stdout: stdout, Stderr: stderr, Stdin: stdin}, args)
}

func runWith(ctx context.Context, g *globalOptions, args []string) (code ExitCode) {
	stdin, stdout, stderr := g.Stdin, g.Stdout, g.Stderr
	// A panic is a bug, but scripts still get one JSON error and exit 1;
	// deferred cleanups (a reservation's release) ran while it unwound.
	// Panics of other goroutines cannot be caught: code run in goroutines
	// must not panic.
	defer func() {
		if v := recover(); v != nil {
			pe := newPanicError(v)
			fmt.Fprintf(stderr, "majlis: panic: %v\n%s", v, pe.stack)
			if !g.JSON {
				g.JSON = jsonRequested(args)
			}
			code = g.fail(pe)
		}
	}()
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	if g.progressDone != nil {
		g.progressDone()
	}
	if err != nil {
		if g.interruption != nil {
			err = interrupted(g.interruption, err)
		}
		var re *resultError
		if errors.As(err, &re) {
			return re.code // the result is printed; its lines say what failed
		}
		if !g.JSON {
			// Cobra reports an unknown command before it parses flags, so
			// --json may not have been seen yet.
			g.JSON = jsonRequested(args)
		}
		return g.fail(err)
	}
	return ExitOK
}

func jsonRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "majlis",
		Short: "Give every task its own Git workspace, and take it back without losing work",
		Long: `majlis gives every task (a person, a script, a coding agent) its own Git
workspace on one machine, lets tasks declare what they will touch, and takes
workspaces back without ever destroying anyone's files.

Every command accepts --repo DIR (any worktree of the repository; default: the
one containing the working directory) and --json (stdout gets exactly one JSON
object, success or error). Exit codes are stable: see 'majlis help exit-codes'.`,
		Example: `  majlis init
  majlis begin T-14 --paths 'src/auth/**' --json
  majlis lease acquire --holder T-14 host:port:3000
  majlis help exit-codes
  majlis version --json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Name() == "help" {
				return nil // help on the environment variables must stay reachable
			}
			return checkEnvironment()
		},
	}
	root.PersistentFlags().StringVar(&g.Repo, "repo", "", "repository to act on (any of its worktrees; default: the one containing the working directory)")
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "print exactly one JSON object on stdout (result or error)")
	root.PersistentFlags().BoolVar(&g.Progress, "progress", false, "show the steps of long operations on stderr even with --json or without a terminal")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	root.AddCommand(
		newInitCmd(g),
		newWorkspaceCmd(g),
		newBeginCmd(g),
		newEndCmd(g),
		newGCCmd(g),
		newLeaseCmd(g),
		newCheckCmd(g),
		newPolicyCmd(g),
		newPoolCmd(g),
		newHookCmd(g),
		newDoctorCmd(g),
		newServeCmd(g),
		newServerCmd(g),
		newMCPCmd(g),
		newVersionCmd(g),
		newExitCodesTopic(),
		newDebugCmd(g),
	)
	strictGroups(g, root)
	completions(g, root)
	onceFlags(root)
	return root
}

// emit prints a successful result: the JSON object on stdout with --json,
// else the human rendering.
func (g *globalOptions) emit(obj any, human func(w io.Writer)) error {
	if g.progressDone != nil {
		g.progressDone() // the result is not drawn over a progress line
	}
	if g.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(obj)
	}
	// One write for the whole text (a listing of a thousand workspaces
	// would otherwise cost ten thousand), wrapped to fit humanWidth.
	writeFitted(g.Stdout, human)
	return nil
}

// fail renders err as docs/cli.md requires and returns its exit code.
func (g *globalOptions) fail(err error) ExitCode {
	body, exit := failure(err)
	if g.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(errorJSON{Error: body})
		return exit
	}
	fmt.Fprintf(g.Stderr, "majlis: %s\n", body.Message)
	if exit == ExitUsage {
		fmt.Fprintln(g.Stderr, "Run 'majlis --help' for usage.")
	}
	return exit
}

// failure is err as a script sees it: the error object of --json and the
// exit status. The server's API and MCP tools refuse with the same code
// and exit status (wire.Classify), with the server's hint.
func failure(err error) (errorBody, ExitCode) {
	r := classify(wire.SurfaceCLI, err)
	return errorBody{Code: r.Code, Message: r.Message, Details: r.Details}, r.ExitCode
}

// A resultError ends a command whose result, already printed, reports a
// failure on some of its lines (a bulk reclaim): the exit code says so,
// and nothing more is printed.
type resultError struct {
	code ExitCode
	err  error
}

func (e *resultError) Error() string { return e.err.Error() }
func (e *resultError) Unwrap() error { return e.err }
