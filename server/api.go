package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// ErrUsage marks a request the API cannot parse: an unknown field, a bad
// duration, a relative path without cwd. Its exit status is 2.
var ErrUsage = wire.Sentinel("usage", "server: bad request")

// usage is a request error of the API itself.
func usage(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// refusal is err as the server's callers on surface s see it: the one
// table of codes (wire.Classify), its echoed text clipped.
func (s *srv) refusal(err error, surface wire.Surface) wire.Refusal {
	return clipped(wire.Classify(err, surface))
}

// httpStatus is the HTTP status of a refusal's exit class.
func httpStatus(exit wire.ExitCode) int {
	switch exit {
	case 2:
		return http.StatusBadRequest
	case 3:
		return http.StatusConflict
	case 4:
		return http.StatusLocked
	case 5:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// maxBody bounds a request body.
const maxBody = 1 << 20

// handle serves one API operation: decode the JSON body (or, for GET, the
// query) into a new Req, let fill copy the route's path values into it,
// run op, and write its result or its refusal.
func handle[Req, Res any](a *api, fill func(r *http.Request, req *Req) error, op func(context.Context, *Req) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := new(Req)
		err := decode(r, req)
		if err == nil && fill != nil {
			err = fill(r, req)
		}
		var res Res
		if err == nil {
			res, err = op(r.Context(), req)
		}
		if rf, ok := a.stopped(r.Context(), err); ok {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": rf})
			return
		}
		if err != nil {
			rf := a.refusal(err)
			writeJSON(w, httpStatus(rf.ExitCode), map[string]any{"error": rf})
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

// decode reads a JSON object; unknown fields refuse (a misspelled flag
// must not be ignored). An empty body is an empty object.
func decode(r *http.Request, v any) error {
	if r.Method == http.MethodGet {
		return decodeQuery(r, v)
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return usage("reading the body: %v", err)
	}
	if len(data) > maxBody {
		return usage("the body is larger than %d bytes", maxBody)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return usage("the body is not the route's JSON object: %v", err)
	}
	if dec.More() {
		return usage("the body holds more than one JSON value")
	}
	return nil
}

// decodeQuery turns ?key=value pairs into the request object: booleans
// "true"/"1"/"false"/"0", strings as they are.
func decodeQuery(r *http.Request, v any) error {
	q := r.URL.Query()
	if len(q) == 0 {
		return nil
	}
	m := map[string]any{}
	for k, vs := range q {
		if len(vs) != 1 {
			return usage("query parameter %s given %d times", k, len(vs))
		}
		switch vs[0] {
		case "true", "1":
			m[k] = true
		case "false", "0":
			m[k] = false
		default:
			m[k] = vs[0]
		}
	}
	data, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return usage("the query does not fit the route: %v", err)
	}
	return nil
}

// pathValue copies the route's path value name into *field; a body that
// names another value refuses.
func pathValue(r *http.Request, name string, field *string) error {
	v := r.PathValue(name)
	if *field != "" && *field != v {
		return usage("the body names %s %q, the route %q", name, *field, v)
	}
	*field = v
	return nil
}

// duration parses a Go duration string; "" is zero.
func duration(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usage("%s %q is not a non-negative Go duration (such as 90s or 10m)", name, v)
	}
	return d, nil
}

// absPath resolves a path given in a request: absolute as it is, relative
// from cwd, which must then be absolute.
func absPath(name, p, cwd string) (string, error) {
	if p == "" || filepath.IsAbs(p) {
		return p, nil
	}
	if !filepath.IsAbs(cwd) {
		return "", usage("%s %q is relative and no absolute cwd was given to take it from", name, p)
	}
	return filepath.Join(cwd, p), nil
}

// apiRoutes adds the API's routes to mux, each behind the guard and
// the handler pool.
func (s *srv) apiRoutes(mux *http.ServeMux) {
	route := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.guard(s.pooled(h))) }
	a := &api{s: s, surface: wire.SurfaceHTTP}
	binding := func(r *http.Request, b *string) error { return pathValue(r, "binding", b) }

	route(wire.RouteAllocate.Pattern(), handle(a, nil, a.allocate))
	route(wire.RouteList.Pattern(), handle(a, nil, a.list))
	route(wire.RouteShow.Pattern(), handle(a, func(r *http.Request, q *wire.BindingRequest) error { return binding(r, &q.Binding) }, a.show))
	route(wire.RouteSalvage.Pattern(), handle(a, func(r *http.Request, q *wire.SalvageRequest) error { return binding(r, &q.Binding) }, a.salvage))
	route(wire.RouteRelease.Pattern(), handle(a, func(r *http.Request, q *wire.ReleaseRequest) error { return binding(r, &q.Binding) }, a.release))
	route(wire.RouteReclaimPreview.Pattern(), handle(a, func(r *http.Request, q *wire.BindingRequest) error { return binding(r, &q.Binding) }, a.preview))
	route(wire.RouteReclaim.Pattern(), handle(a, func(r *http.Request, q *wire.ReclaimRequest) error { return binding(r, &q.Binding) }, a.reclaim))
	route(wire.RouteRestore.Pattern(), handle(a, func(r *http.Request, q *wire.RestoreRequest) error { return binding(r, &q.Binding) }, a.restore))
	route(wire.RouteRecover.Pattern(), handle(a, func(r *http.Request, q *wire.ReleaseRequest) error { return binding(r, &q.Binding) }, a.recoverReservation))
	route(wire.RouteBulkPreview.Pattern(), handle(a, nil, a.bulkPreview))
	route(wire.RouteBulkReclaim.Pattern(), handle(a, nil, a.bulkReclaim))

	route(wire.RouteAcquire.Pattern(), handle(a, nil, a.acquire))
	route(wire.RouteRenew.Pattern(), handle(a, nil, a.renew))
	route(wire.RouteReleaseLeases.Pattern(), handle(a, nil, a.releaseLeases))
	route(wire.RouteLeases.Pattern(), handle(a, nil, a.leases))
	route(wire.RouteResolve.Pattern(), handle(a, func(r *http.Request, q *wire.ResolveRequest) error { return pathValue(r, "id", &q.ID) }, a.resolve))

	route(wire.RouteBegin.Pattern(), handle(a, nil, a.begin))
	route(wire.RouteEnd.Pattern(), handle(a, nil, a.end))
	route(wire.RouteCheck.Pattern(), handle(a, nil, a.check))
	route(wire.RouteHeartbeat.Pattern(), handle(a, nil, a.heartbeat))

	// Anything else under /api/v1/ (an unknown route, or a known one with
	// another method) gets a JSON refusal, after the guard.
	mux.Handle(wire.APIPrefix+"/", s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": wire.Refusal{Code: "no_route", ExitCode: 2, Details: map[string]any{},
			Message: clip("no route "+r.Method+" "+r.URL.Path, maxDetail) + " (docs/MCP.md lists the routes)"}})
	})))
}

// api holds the operations behind the routes and the MCP tools: each
// calls the library function the CLI command calls, on the server's open
// provider and admission service. There is one for the routes and one
// for the tools: surface decides the words of their refusals' hints.
type api struct {
	s       *srv
	surface wire.Surface
}

// stopped is the refusal of an operation that failed because the server
// stopped it (its work context was cancelled by a stop): code stopping,
// 503. It stopped at a safe point, as on Ctrl-C at the command line, and
// released what it held (a reclaim its reservation), so retrying it with
// the same request id resumes it.
func (a *api) stopped(ctx context.Context, err error) (wire.Refusal, bool) {
	if err == nil || ctx.Err() == nil || !a.s.stopping.Load() {
		return wire.Refusal{}, false
	}
	return wire.Refusal{Code: "stopping", ExitCode: 4, Details: map[string]any{"reason": clip(err.Error(), maxDetail), "retry_after": retryAfter},
		Message: "the server stopped while this call ran: the call stopped at a safe point and released what it held " +
			"(nothing is lost); retry it with the same request_id once a server runs"}, true
}

// refusal is err's Refusal as a's callers see it.
func (a *api) refusal(err error) wire.Refusal { return a.s.refusal(err, a.surface) }
