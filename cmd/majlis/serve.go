package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/server"
	"github.com/spf13/cobra"
)

func newServeCmd(g *globalOptions) *cobra.Command {
	var opts server.Options
	var readyFD int
	cmd := &cobra.Command{
		Use:   "serve [--max-handlers N] [--busy-wait D]",
		Short: "Run the repository's server in the foreground",
		Long: `Run the repository's server in the foreground until it is stopped ('majlis
server stop', SIGTERM or SIGINT). It listens on 127.0.0.1 on a port the kernel
chooses, and holds the repository's server lease for its whole life: the
lease records its address, its pid and start time, and a random token that
is the bearer token of its API. At most one server runs per repository; a
second one refuses (exit 4, held).

The liveness route GET /api/v1/live and the readiness route GET /api/v1/ready
answer at once, however busy the server is; API requests run at most
--max-handlers (or $MAJLIS_MAX_HANDLERS, default 32) at a time, and one that
finds none free within --busy-wait is answered 503 busy. A request's body is
read whole, within --body-timeout, before it waits for a handler. Every
route needs a loopback peer and the Host 127.0.0.1:PORT or localhost:PORT;
API routes need the bearer token too.
The server exits at once if its lease stops being its own. Most callers want
'majlis server start' (detached) or 'majlis server attach' instead.`,
		Example: `  majlis serve
  MAJLIS_MAX_HANDLERS=8 majlis serve --repo ~/src/app`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, d := range []struct {
				name string
				v    time.Duration
			}{{"busy-wait", opts.BusyWait}, {"header-timeout", opts.HeaderTimeout}, {"body-timeout", opts.BodyTimeout}, {"idle-timeout", opts.IdleTimeout}} {
				if d.v <= 0 {
					return &usageError{fmt.Errorf("--%s %v is not a positive duration", d.name, d.v)}
				}
			}
			if opts.MaxConns < 0 {
				return &usageError{fmt.Errorf("--max-conns %d is negative", opts.MaxConns)}
			}
			if cmd.Flags().Changed("max-handlers") {
				if err := server.CheckMaxHandlers(opts.MaxHandlers); err != nil {
					return &usageError{err}
				}
			} else {
				n, err := server.MaxHandlers()
				if err != nil {
					return err
				}
				opts.MaxHandlers = n
			}
			popts, err := providerOptions()
			if err != nil {
				return err
			}
			opts.Dir, opts.Version, opts.Provider = g.Repo, version, popts
			opts.Logf = func(format string, args ...any) {
				fmt.Fprintf(g.Stderr, "%s majlis serve: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
			}
			if readyFD > 0 {
				f := os.NewFile(uintptr(readyFD), "ready")
				opts.Ready = func(addr string) {
					fmt.Fprintf(f, "ready %s\n", addr)
					f.Close()
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := server.Serve(ctx, opts); err != nil {
				return err
			}
			return g.emit(stoppedJSON{Stopped: true}, func(io.Writer) {})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.MaxHandlers, "max-handlers", server.DefaultMaxHandlers, "API requests served at once (default $"+server.MaxHandlersEnv+", else 32)")
	defaultInUsage(f, "max-handlers")
	f.IntVar(&readyFD, "ready-fd", 0, "write one line to this descriptor once ready")
	f.DurationVar(&opts.BusyWait, "busy-wait", server.DefaultBusyWait, "how long a request waits for a free handler before it is answered 503 busy")
	f.DurationVar(&opts.HeaderTimeout, "header-timeout", server.DefaultHeaderTimeout, "how long a client may take to send a request's headers")
	f.DurationVar(&opts.BodyTimeout, "body-timeout", server.DefaultBodyTimeout, "how long a client may take to send a request's body")
	f.DurationVar(&opts.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close a connection idle this long between requests")
	f.IntVar(&opts.MaxConns, "max-conns", 0, "open connections at most; at the cap the oldest unauthenticated one is closed (default half the descriptor limit, at most 1024)")
	f.BoolVar(&opts.DebugRoutes, "debug-routes", false, "enable the debug routes used by tests and benchmarks")
	_ = f.MarkHidden("ready-fd")
	_ = f.MarkHidden("debug-routes")
	return cmd
}
